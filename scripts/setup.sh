#!/usr/bin/env bash
# Installs what wakeviz needs on a fresh Debian 12 machine, saying what it installs. Idempotent:
# tools already present are left alone. Run as root (or with sudo).
#
#   scripts/setup.sh run    what building and running need (scripts/run.sh):
#     apt:    llvm-22-dev libpolly-22-dev libzstd-dev zlib1g-dev (bpf-linker's LLVM),
#             gcc libc6-dev when there is no `cc` (the linker rustc calls)
#     rustup: the probes' pinned nightly + rust-src (for -Z build-std=core on bpfel-unknown-none)
#     cargo:  bpf-linker 0.13.0 built against Debian's LLVM 22
#   scripts/setup.sh test   the above, and what only the tests need (scripts/test.sh):
#     apt:    qemu-system-x86 busybox-static cpio (VM tests), tmux (UI end-to-end test),
#             linux-perf rt-tests bpftrace (benchmarks: perf and bpftrace are the peers),
#             g++ when there is no `c++` (libFuzzer), prometheus python3-venv (export/metrics tests), systemd (systemd-analyze verify of the unit)
#     python: a venv at $WAKEVIZ_PYENV (default /opt/wakeviz-pyenv) with the independent readers
#             the export tests use: perfetto (upstream trace schema), duckdb, prometheus-client
#     cargo:  cargo-fuzz
# Without an argument: `test` (everything).
#
# The run command installs only the first part: a first run should not wait for qemu,
# Prometheus, a Python venv and a cargo-fuzz build that only the tests use.
set -euo pipefail
cd "$(dirname "$0")/.."

WHAT="${1:-test}"
case "$WHAT" in
  run | test) ;;
  *) echo "usage: $0 [run|test]" >&2; exit 2 ;;
esac

say() { echo "setup: $*" >&2; }
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

APT_PKGS=(llvm-22-dev libpolly-22-dev libzstd-dev zlib1g-dev)
# rustup's toolchain links with the system's C compiler, which a minimal image may not have.
if ! command -v cc >/dev/null; then APT_PKGS+=(gcc libc6-dev); fi
if [ "$WHAT" = test ]; then
  APT_PKGS+=(qemu-system-x86 busybox-static cpio tmux linux-perf rt-tests rt-app bpftrace prometheus python3-venv systemd)
  # cargo-fuzz builds libFuzzer, which is C++.
  if ! command -v c++ >/dev/null; then APT_PKGS+=(g++); fi
fi
missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  say "installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v rustup >/dev/null; then
  say "rustup is required (the machine's Rust toolchain comes from rustup)"; exit 1
fi
# The probes' nightly is pinned (its LLVM must be bpf-linker's): wakeviz-ebpf/rust-toolchain.toml.
NIGHTLY="$(sed -n 's/^channel *= *"\(.*\)"/\1/p' wakeviz-ebpf/rust-toolchain.toml)"
if ! rustup component list --toolchain "$NIGHTLY" --installed 2>/dev/null | grep -q '^rust-src'; then
  say "installing the probes' toolchain $NIGHTLY with rust-src (eBPF probes need -Z build-std)"
  rustup toolchain install "$NIGHTLY" --profile minimal --component rust-src --component clippy
fi

if ! command -v bpf-linker >/dev/null || ! bpf-linker --version 2>/dev/null | grep -q '0\.13\.0'; then
  say "building bpf-linker 0.13.0 against LLVM 22 (1-2 minutes)"
  LLVM_PREFIX=/usr/lib/llvm-22 cargo install --locked bpf-linker --version 0.13.0 \
    --no-default-features --features llvm-22 >/dev/null 2>&1 \
    || LLVM_PREFIX=/usr/lib/llvm-22 cargo install bpf-linker --version 0.13.0 \
      --no-default-features --features llvm-22
fi

if [ "$WHAT" = run ]; then
  say "ready to build and run"
  exit 0
fi

if ! command -v cargo-fuzz >/dev/null; then
  say "installing cargo-fuzz (fuzzing the recording decoder)"
  cargo install --locked cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz
fi
# The independent readers of wakeviz's exports, at pinned versions so a reader's upgrade cannot
# turn the tests red on its own.
PYENV="${WAKEVIZ_PYENV:-/opt/wakeviz-pyenv}"
PY_PKGS=(perfetto==0.16.0 duckdb==1.1.3 prometheus-client==0.21.1 protobuf==5.29.3)
if ! "$PYENV/bin/python" -c 'import perfetto.protos.perfetto.trace.perfetto_trace_pb2, duckdb, prometheus_client' 2>/dev/null; then
  say "installing the Python readers (${PY_PKGS[*]}) into $PYENV"
  /usr/bin/python3 -m venv "$PYENV"
  "$PYENV/bin/pip" install -q "${PY_PKGS[@]}"
fi
say "toolchain ready"
