//! Builds the probes from source on every build (never a committed object): aya-build runs the
//! nightly toolchain for `bpfel-unknown-none` with bpf-linker. `scripts/setup.sh` installs both.
use anyhow::{Context as _, anyhow};
use aya_build::{Package, Toolchain};

fn main() -> anyhow::Result<()> {
    let meta = cargo_metadata()?;
    let ebpf = Package {
        name: "wakeviz-ebpf",
        root_dir: &meta,
        ..Default::default()
    };
    aya_build::build_ebpf([ebpf], Toolchain::Nightly)
        .context("building the eBPF probes failed; run scripts/setup.sh to install nightly rust-src and bpf-linker")
}

fn cargo_metadata() -> anyhow::Result<String> {
    let dir = std::env::var("CARGO_MANIFEST_DIR").context("CARGO_MANIFEST_DIR")?;
    let root = std::path::Path::new(&dir)
        .parent()
        .ok_or_else(|| anyhow!("no workspace root above {dir}"))?;
    Ok(root.join("wakeviz-ebpf").display().to_string())
}
