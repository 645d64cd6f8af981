#!/usr/bin/env bash
# Installs what building and testing wakeviz needs on a fresh Debian 12 machine, saying what it
# installs. Idempotent: tools already present are left alone. Run as root (or with sudo).
#
#   apt:    llvm-22-dev libpolly-22-dev libzstd-dev zlib1g-dev (bpf-linker's LLVM),
#           qemu-system-x86 busybox-static cpio (VM tests), tmux (UI end-to-end test),
#           linux-perf rt-tests (benchmarks)
#   rustup: nightly toolchain + rust-src (for -Z build-std=core on bpfel-unknown-none)
#   cargo:  bpf-linker 0.13.0 built against Debian's LLVM 22, cargo-fuzz
set -euo pipefail

say() { echo "setup: $*" >&2; }
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

APT_PKGS=(llvm-22-dev libpolly-22-dev libzstd-dev zlib1g-dev qemu-system-x86 busybox-static cpio tmux linux-perf rt-tests)
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
if ! rustup toolchain list | grep -q '^nightly'; then
  say "installing the nightly toolchain (eBPF probes need -Z build-std)"
  rustup toolchain install nightly --profile minimal
fi
if ! rustup component list --toolchain nightly --installed 2>/dev/null | grep -q '^rust-src'; then
  say "installing rust-src for nightly"
  rustup component add rust-src --toolchain nightly
fi

if ! command -v bpf-linker >/dev/null || ! bpf-linker --version 2>/dev/null | grep -q '0\.13\.0'; then
  say "building bpf-linker 0.13.0 against LLVM 22 (1-2 minutes)"
  LLVM_PREFIX=/usr/lib/llvm-22 cargo install --locked bpf-linker --version 0.13.0 \
    --no-default-features --features llvm-22 >/dev/null 2>&1 \
    || LLVM_PREFIX=/usr/lib/llvm-22 cargo install bpf-linker --version 0.13.0 \
      --no-default-features --features llvm-22
fi
if ! command -v cargo-fuzz >/dev/null; then
  say "installing cargo-fuzz (fuzzing the recording decoder)"
  cargo install --locked cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz
fi
say "toolchain ready"
