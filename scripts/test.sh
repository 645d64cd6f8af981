#!/usr/bin/env bash
# The whole test suite: toolchain set-up, lint, unit/scenario/snapshot tests, live probe tests
# (as root), the UI end-to-end test, and the VM suite on a real Debian kernel.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test
# Each step says when it started and how long the run has taken: CI must stay under 45 minutes.
step() { echo; echo "== [$(date -u +%T), ${SECONDS} s in] $*" >&2; }

step "format and lints"
cargo fmt --all -- --check
# Default members: the eBPF crate only builds for bpfel-unknown-none (through build.rs).
cargo clippy --all-targets -- -D warnings
# The probes too: nightly, their own target, core built from source (as wakeviz/build.rs builds them).
(cd wakeviz-ebpf && cargo +nightly clippy --target bpfel-unknown-none -Z build-std=core -- -D warnings)

step "unit, scenario, snapshot, format, live (root) and tmux UI tests"
cargo test --release

step "short fuzz pass on the decoders (the long run's corpus and crashes are replayed above)"
(cd fuzz && for t in recording:30 events_codec:10 header_topology:20 sysfs_tree:10 ringbuf_record:10; do cargo +nightly fuzz run "${t%%:*}" -- -max_total_time="${t##*:}" -rss_limit_mb=512 -malloc_limit_mb=512 || exit 1; done)

step "VM suite (Debian kernel under qemu: full probes, NUMA/SMT topologies)"
cargo build --release -p wakeviz
cargo xtask vm-test
echo "== [$(date -u +%T)] test.sh done in ${SECONDS} s" >&2
