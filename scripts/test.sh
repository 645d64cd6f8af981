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
# The build scripts/run.sh makes for everything but `export` (docs/dev/toolchain.md).
cargo clippy -p wakeviz --no-default-features -- -D warnings
# The probes too: their pinned nightly (wakeviz-ebpf/rust-toolchain.toml), their own target, core
# built from source (as wakeviz/build.rs builds them).
(cd wakeviz-ebpf && cargo clippy --target bpfel-unknown-none -Z build-std=core -- -D warnings)
# The fuzz targets: their own workspace, on the probes' nightly (cargo-fuzz needs one).
NIGHTLY="$(sed -n 's/^channel *= *"\(.*\)"/\1/p' wakeviz-ebpf/rust-toolchain.toml)"
(cd fuzz && cargo fmt -- --check && cargo +"$NIGHTLY" clippy --all-targets -- -D warnings)

step "unit, scenario, snapshot, format, live (root) and tmux UI tests"
cargo test --release

step "short fuzz pass on the decoders (cargo test above replays the byte-level targets' seeds and past crashes)"
# libFuzzer writes what it finds into the first corpus directory it is given: that one lives
# under target/ (kept between runs, so the corpus grows), the committed seeds and reproducers
# (fuzz/seeds, fuzz/regressions) are only read, and the run leaves the tree as it was.
# Crashes land in fuzz/artifacts/TARGET (ignored); minimise one with `cargo fuzz tmin` and
# commit it under fuzz/regressions/TARGET so `cargo test` replays it.
# cargo-fuzz runs on the probes' pinned nightly (NIGHTLY above). No sanitizer: the decoders
# have no `unsafe`, so AddressSanitizer would watch only dependencies, and its build costs
# minutes; the allocation limit that needs its hooks is the targets' own allocator
# (fuzz/src/alloc_limit.rs).
FUZZ_CORPUS="$(realpath -m "${WAKEVIZ_FUZZ_CORPUS:-target/fuzz-corpus}")"
(cd fuzz && for t in recording:30 events_codec:10 header_topology:20 sysfs_tree:10 ringbuf_record:10; do
  n="${t%%:*}"
  mkdir -p "$FUZZ_CORPUS/$n"
  dirs=("$FUZZ_CORPUS/$n" "seeds/$n")
  if [ -d "regressions/$n" ]; then dirs+=("regressions/$n"); fi
  cargo +"$NIGHTLY" fuzz run --sanitizer none "$n" "${dirs[@]}" -- -max_total_time="${t##*:}" -rss_limit_mb=512 || exit 1
done)

step "VM suite (Debian kernel under qemu: full probes, NUMA/SMT topologies)"
cargo build --release -p wakeviz
cargo xtask vm-test
echo "== [$(date -u +%T)] test.sh done in ${SECONDS} s" >&2
