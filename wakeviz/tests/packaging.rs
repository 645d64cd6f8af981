//! The distribution files: the systemd unit of the exporter passes `systemd-analyze verify`
//! (where systemd's tools are installed), and `scripts/install.sh` stages every file and never
//! writes through a symbolic link.
use std::{
    path::{Path, PathBuf},
    process::Command,
};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate is in the workspace")
        .to_path_buf()
}

fn unit_text() -> String {
    let p = repo().join("packaging/wakeviz-serve.service");
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// `key=value` lines of the unit, in order.
fn settings(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#') && !l.starts_with('['))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

#[test]
fn the_unit_is_hardened_and_listens_on_loopback_by_default() {
    let s = settings(&unit_text());
    let get = |k: &str| {
        s.iter()
            .filter(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
            .collect::<Vec<_>>()
    };
    assert_eq!(get("Environment"), ["WAKEVIZ_LISTEN=127.0.0.1:9345"]);
    let exec = get("ExecStart");
    assert_eq!(exec.len(), 1);
    assert!(
        exec[0].contains("--serve ${WAKEVIZ_LISTEN}") && exec[0].contains("--headless"),
        "{exec:?}: the exporter runs headless on the configured address"
    );
    let mut caps: Vec<&str> = get("CapabilityBoundingSet")
        .iter()
        .flat_map(|v| v.split_whitespace())
        .collect();
    caps.sort_unstable();
    assert_eq!(caps, ["CAP_BPF", "CAP_PERFMON", "CAP_SYS_RESOURCE"]);
    for (k, v) in [
        ("NoNewPrivileges", "yes"),
        ("ProtectSystem", "strict"),
        ("ProtectHome", "yes"),
        ("PrivateTmp", "yes"),
        ("RestrictAddressFamilies", "AF_INET AF_INET6 AF_UNIX"),
    ] {
        assert_eq!(get(k), [v], "{k}");
    }
}

#[test]
fn systemd_analyze_verifies_the_unit() {
    if Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: systemd-analyze not installed (Debian package `systemd`)");
        return;
    }
    // verify checks that ExecStart's binary exists, so the unit points at this build's.
    let dir = tempfile::tempdir().expect("tempdir");
    let unit = dir.path().join("wakeviz-serve.service");
    let text = unit_text().replace(
        "ExecStart=/usr/local/bin/wakeviz ",
        &format!("ExecStart={} ", env!("CARGO_BIN_EXE_wakeviz")),
    );
    assert!(text.contains(env!("CARGO_BIN_EXE_wakeviz")));
    std::fs::write(&unit, text).expect("write unit");
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&unit)
        .output()
        .expect("systemd-analyze runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Unknown or misspelt keys are only warnings: any line naming the unit fails the test.
    assert!(
        out.status.success() && !stderr.contains("wakeviz-serve.service"),
        "systemd-analyze verify: {}\n{stderr}",
        out.status
    );
}

fn install(destdir: &Path) -> std::process::Output {
    Command::new("bash")
        .arg(repo().join("scripts/install.sh"))
        .env("DESTDIR", destdir)
        .env("PREFIX", "/usr")
        .env("WAKEVIZ_BIN", env!("CARGO_BIN_EXE_wakeviz"))
        .output()
        .expect("install.sh runs")
}

#[test]
fn install_script_stages_everything_and_refuses_symlinks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = install(dir.path());
    assert!(
        out.status.success(),
        "install.sh: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let root = dir.path().join("usr");
    for f in [
        "bin/wakeviz",
        "share/man/man1/wakeviz.1",
        "share/bash-completion/completions/wakeviz",
        "share/zsh/site-functions/_wakeviz",
        "share/fish/vendor_completions.d/wakeviz.fish",
        "lib/systemd/system/wakeviz-serve.service",
    ] {
        let p = root.join(f);
        let meta = std::fs::symlink_metadata(&p).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert!(
            meta.is_file() && meta.len() > 0,
            "{f} is an empty or odd file"
        );
    }
    let man = std::fs::read_to_string(root.join("share/man/man1/wakeviz.1")).expect("man page");
    assert!(
        man.contains("\n.TH wakeviz 1 ") && man.contains("\\-\\-replay"),
        "not the man page: {}",
        &man[..man.len().min(200)]
    );
    let unit = std::fs::read_to_string(root.join("lib/systemd/system/wakeviz-serve.service"))
        .expect("unit");
    assert!(unit.contains("ExecStart=/usr/bin/wakeviz --serve"));

    // A link planted at the target is refused and its destination left alone.
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "keep").expect("victim");
    let bin = root.join("bin/wakeviz");
    std::fs::remove_file(&bin).expect("rm");
    std::os::unix::fs::symlink(&victim, &bin).expect("symlink");
    let out = install(dir.path());
    assert!(!out.status.success(), "installed through a symbolic link");
    assert!(String::from_utf8_lossy(&out.stderr).contains("symbolic link"));
    assert_eq!(std::fs::read_to_string(&victim).expect("victim"), "keep");

    // So is a linked directory on the way.
    std::fs::remove_file(&bin).expect("rm");
    let man1 = root.join("share/man/man1");
    std::fs::remove_dir_all(&man1).expect("rm man1");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("mkdir");
    std::os::unix::fs::symlink(&elsewhere, &man1).expect("symlink");
    let out = install(dir.path());
    assert!(
        !out.status.success(),
        "installed through a linked directory"
    );
    assert!(!elsewhere.join("wakeviz.1").exists());
}
