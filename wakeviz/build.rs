//! Builds the probes from source on every build (never a committed object): the nightly
//! toolchain's cargo for `bpfel-unknown-none`, `-Z build-std=core`, linked by bpf-linker with BTF.
//! `scripts/setup.sh` installs both.
//!
//! This is the sub-build aya-build 0.2's `build_ebpf` runs (same command, flags and target
//! directory), run here because aya-build forwards every line of the sub-cargo's stderr as a
//! `cargo:warning`: a clean build printed about sixty `warning: wakeviz@0.1.0: Compiling ...`
//! lines, and it has no option to keep them back. Here that progress goes to this script's
//! stderr, which cargo shows only when the script fails or under `cargo build -vv`;
//! `WAKEVIZ_BUILD_VERBOSE=1` turns it into warnings again. Compiler diagnostics for the probes
//! are real findings and always surface as warnings.
use std::{
    env,
    io::{BufRead as _, BufReader},
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use anyhow::{Context as _, anyhow, bail};
use cargo_metadata::{Artifact, CompilerMessage, Message};

const PROBES: &str = "wakeviz-ebpf";
const VERBOSE: &str = "WAKEVIZ_BUILD_VERBOSE";

fn main() {
    // Printed by hand: anyhow's `main` report would add a backtrace of this script when
    // RUST_BACKTRACE is set, burying the sub-build's own error.
    if let Err(e) = build() {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn build() -> anyhow::Result<()> {
    println!("cargo:rerun-if-env-changed={VERBOSE}");
    let verbose = env::var_os(VERBOSE).is_some_and(|v| v == "1");
    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").context("CARGO_MANIFEST_DIR")?);
    let probes_dir = manifest_dir
        .parent()
        .ok_or_else(|| anyhow!("no workspace root above {}", manifest_dir.display()))?
        .join(PROBES);
    // The build-dependency on the probe crate covers its library and dependencies; this covers
    // the binary that actually becomes the object.
    println!("cargo:rerun-if-changed={}", probes_dir.display());
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").context("OUT_DIR")?);

    let mut cmd = sub_build(&out_dir, &nightly(&probes_dir)?)?;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| {
            format!("cannot run {cmd:?}; run scripts/setup.sh (rustup, the probes' nightly)")
        })?;
    let stderr = BufReader::new(child.stderr.take().context("sub-build stderr")?);
    let progress = std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if verbose {
                println!("cargo:warning={line}");
            } else {
                eprintln!("{line}");
            }
        }
    });
    let stdout = BufReader::new(child.stdout.take().context("sub-build stdout")?);
    let mut executables = Vec::new();
    for message in Message::parse_stream(stdout) {
        match message.context("the sub-build's cargo printed invalid JSON")? {
            Message::CompilerArtifact(Artifact {
                executable: Some(exe),
                target,
                ..
            }) => executables.push((target.name, exe.into_std_path_buf())),
            Message::CompilerMessage(CompilerMessage { message, .. }) => {
                for line in message.rendered.unwrap_or_default().lines() {
                    println!("cargo:warning={line}");
                }
            }
            Message::TextLine(line) => eprintln!("{line}"),
            _ => {}
        }
    }
    let status = child.wait().context("waiting for the probe sub-build")?;
    // The reader ends at EOF, which the exit guarantees; a panic there is only a lost line.
    let _ = progress.join();
    if !status.success() {
        bail!(
            "building the eBPF probes failed ({status}; its output is above); if the probes' nightly, its rust-src or bpf-linker is missing, run scripts/setup.sh"
        );
    }
    for (name, exe) in executables {
        let dst = out_dir.join(name);
        std::fs::copy(&exe, &dst)
            .with_context(|| format!("copying {} to {}", exe.display(), dst.display()))?;
    }
    Ok(())
}

/// Where the probe sub-build keeps its files: beside the profile's own (`target/release/probes`)
/// when `out_dir` has cargo's usual shape, so builds with and without the `export` feature (two
/// build-script directories) share one probe build; else inside `out_dir`.
fn probe_target_dir(out_dir: &Path) -> PathBuf {
    // OUT_DIR is PROFILE_DIR/build/wakeviz-HASH/out.
    match out_dir.ancestors().nth(3) {
        Some(profile)
            if out_dir
                .parent()
                .and_then(|p| p.parent())
                .is_some_and(|b| b.ends_with("build")) =>
        {
            profile.join("probes")
        }
        _ => out_dir.join("probes"),
    }
}

/// The probes' pinned nightly: the `channel` of their `rust-toolchain.toml`.
fn nightly(probes_dir: &Path) -> anyhow::Result<String> {
    let file = probes_dir.join("rust-toolchain.toml");
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    text.lines()
        .find_map(|l| {
            let v = l.trim().strip_prefix("channel")?.trim().strip_prefix('=')?;
            Some(v.trim().trim_matches('"').to_owned())
        })
        .with_context(|| format!("no `channel = \"...\"` line in {}", file.display()))
}

/// `rustup run NIGHTLY cargo build` of the probe binary, as aya-build sets it up.
fn sub_build(out_dir: &Path, nightly: &str) -> anyhow::Result<Command> {
    let endian = env::var("CARGO_CFG_TARGET_ENDIAN").context("CARGO_CFG_TARGET_ENDIAN")?;
    let target = match endian.as_str() {
        "little" => "bpfel-unknown-none",
        "big" => "bpfeb-unknown-none",
        e => bail!("unsupported endianness {e}"),
    };
    let arch = env::var("CARGO_CFG_TARGET_ARCH").context("CARGO_CFG_TARGET_ARCH")?;
    let mut cmd = Command::new("rustup");
    cmd.args([
        "run",
        nightly,
        "cargo",
        "build",
        "--package",
        PROBES,
        "--bins",
    ])
    .args(["--message-format=json", "--release", "--target", target])
    .args(["-Z", "build-std=core"])
    .arg("--target-dir")
    .arg(probe_target_dir(out_dir));
    // aya-ebpf's helpers are per architecture (`bpf_target_arch`); `--btf` makes bpf-linker
    // emit the BTF the loader and the verifier need.
    let flags = [
        format!("--cfg=bpf_target_arch=\"{arch}\""),
        "-Cdebuginfo=2".into(),
        "-Clink-arg=--btf".into(),
    ]
    .join("\x1f");
    cmd.env("CARGO_ENCODED_RUSTFLAGS", flags);
    // This build's (stable) compiler must not leak into the nightly sub-build.
    for key in ["RUSTC", "RUSTC_WORKSPACE_WRAPPER"] {
        cmd.env_remove(key);
    }
    Ok(cmd)
}
