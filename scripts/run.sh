#!/usr/bin/env bash
# Build wakeviz (installing the toolchain first if needed) and run it with the given arguments.
#   scripts/run.sh                      live dashboard (needs root)
#   scripts/run.sh --record t.wvz --duration 10s --headless
#   scripts/run.sh --replay t.wvz --report text
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh run
cargo build --release -p wakeviz
exec target/release/wakeviz "$@"
