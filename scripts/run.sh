#!/usr/bin/env bash
# Build wakeviz (installing the toolchain first if needed) and run it with the given arguments.
#   scripts/run.sh                      live dashboard (needs root)
#   scripts/run.sh --record t.wvz --duration 10s --headless
#   scripts/run.sh --replay t.wvz --report text
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh run
# The exporters (Perfetto, Parquet) take over half the build: built only for `export`. Each
# feature set is built once (docs/dev/toolchain.md), so switching back rebuilds nothing.
if [ "${1:-}" = export ]; then
  cargo build --release -p wakeviz
else
  cargo build --release -p wakeviz --no-default-features
fi
exec target/release/wakeviz "$@"
