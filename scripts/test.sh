#!/usr/bin/env bash
# The whole test suite: toolchain set-up, lint, unit/scenario/snapshot tests, live probe tests
# (as root), the UI end-to-end test, and the VM suite on a real Debian kernel.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
step() { echo; echo "== $*" >&2; }

step "format and lints"
cargo fmt --all -- --check
# Default members: the eBPF crate only builds for bpfel-unknown-none (through build.rs).
cargo clippy --all-targets -- -D warnings

step "unit, scenario, snapshot and live tests"
cargo test --workspace --release

step "VM suite (Debian kernel under qemu: full probes, NUMA/SMT topologies)"
cargo build --release -p wakeviz
cargo xtask vm-test
