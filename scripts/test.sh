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
# The probes too: nightly, their own target, core built from source (as wakeviz/build.rs builds them).
(cd wakeviz-ebpf && cargo +nightly clippy --target bpfel-unknown-none -Z build-std=core -- -D warnings)

step "unit, scenario, snapshot, format, live (root) and tmux UI tests"
cargo test --release

step "short fuzz pass on the decoders (the long run's corpus and crashes are replayed above)"
(cd fuzz && cargo +nightly fuzz run recording -- -max_total_time=45 -rss_limit_mb=1024 \
  && cargo +nightly fuzz run ringbuf_record -- -max_total_time=15 -rss_limit_mb=1024)

step "VM suite (Debian kernel under qemu: full probes, NUMA/SMT topologies)"
cargo build --release -p wakeviz
cargo xtask vm-test
