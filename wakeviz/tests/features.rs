//! `--sched-feature NAME`: set for the run (read by CMD while it runs), recorded in the
//! metadata, restored after the run and after a SIGTERM; a bad name or a missing file changes
//! nothing and runs nothing. On a plain file standing in for debugfs `sched/features`
//! (`--sched-features-file`; the real file is exercised in the VM suite). Needs root (BPF, and
//! the features need it); without root each test prints SKIPPED, and fails under CI=true.
mod support;

use std::{
    path::Path,
    process::{Command, Output, Stdio},
    sync::Mutex,
    time::{Duration, Instant},
};

const BIN: &str = env!("CARGO_BIN_EXE_wakeviz");
static SERIAL: Mutex<()> = Mutex::new(());

/// The order and the values of a 6.12 kernel; another kernel lists others, in another order.
const LIST: &str = "PLACE_LAG RUN_TO_PARITY WAKEUP_PREEMPTION NO_HRTICK_DL TTWU_QUEUE SIS_UTIL \
    WA_IDLE WA_WEIGHT WA_BIAS UTIL_EST \n";

fn features_file(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("features");
    std::fs::write(&p, LIST).unwrap();
    p
}

fn wakeviz(args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args).stdin(Stdio::null());
    c
}

fn lines(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn set_for_the_run_recorded_and_restored() {
    if !support::root() {
        return;
    }
    let _g = SERIAL.lock();
    let d = tempfile::tempdir().unwrap();
    let feats = features_file(d.path());
    let (rec, seen) = (d.path().join("r.wvz"), d.path().join("seen"));
    let script = format!("cat {} > {}", feats.display(), seen.display());
    let out = wakeviz(&[
        "--record",
        rec.to_str().unwrap(),
        "--headless",
        "--sched-features-file",
        feats.to_str().unwrap(),
        "--sched-feature",
        "NO_SIS_UTIL",
        "--sched-feature",
        "NO_WA_BIAS",
        "--sched-feature",
        "TTWU_QUEUE",
        "--",
        "sh",
        "-c",
        &script,
    ])
    .output()
    .unwrap();
    let err = lines(&out).join("\n");
    assert!(out.status.success(), "{err}");
    // During: CMD saw both off, and nothing else touched (TTWU_QUEUE was on already).
    let during = std::fs::read_to_string(&seen).unwrap();
    assert_eq!(
        during.split_whitespace().collect::<Vec<_>>(),
        LIST.replace("SIS_UTIL", "NO_SIS_UTIL")
            .replace("WA_BIAS", "NO_WA_BIAS")
            .split_whitespace()
            .collect::<Vec<_>>()
    );
    // After: exactly as before.
    assert_eq!(std::fs::read_to_string(&feats).unwrap(), LIST);
    assert!(
        err.contains("restored: WA_BIAS SIS_UTIL"),
        "only the two changed are restored: {err}"
    );
    // The metadata: the features as read during the run, and what was asked.
    let j = Command::new(BIN)
        .args(["--replay", rec.to_str().unwrap(), "--report", "json"])
        .output()
        .unwrap();
    assert!(j.status.success());
    let j: serde_json::Value = serde_json::from_slice(&j.stdout).unwrap();
    let run = &j["recording"]["run"];
    let f: Vec<&str> = run["sched_features"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert_eq!(f, during.split_whitespace().collect::<Vec<_>>());
    assert_eq!(
        run["sched_feature_overrides"],
        serde_json::json!(["NO_SIS_UTIL", "NO_WA_BIAS", "TTWU_QUEUE"])
    );
    let t = Command::new(BIN)
        .args(["--replay", rec.to_str().unwrap(), "--report", "text"])
        .output()
        .unwrap();
    let t = String::from_utf8_lossy(&t.stdout);
    assert!(
        t.contains("sched features set for the run NO_SIS_UTIL NO_WA_BIAS TTWU_QUEUE"),
        "{t}"
    );
}

#[test]
fn sigterm_mid_run_restores() {
    if !support::root() {
        return;
    }
    let _g = SERIAL.lock();
    let d = tempfile::tempdir().unwrap();
    let feats = features_file(d.path());
    let (rec, seen) = (d.path().join("r.wvz"), d.path().join("seen"));
    let script = format!("cat {} > {}; sleep 30", feats.display(), seen.display());
    let child = wakeviz(&[
        "--record",
        rec.to_str().unwrap(),
        "--headless",
        "--sched-features-file",
        feats.to_str().unwrap(),
        "--sched-feature",
        "NO_SIS_UTIL",
        "--",
        "sh",
        "-c",
        &script,
    ])
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let t0 = Instant::now();
    while std::fs::metadata(&seen).map_or(true, |m| m.len() == 0) {
        assert!(t0.elapsed() < Duration::from_secs(30), "CMD never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        std::fs::read_to_string(&feats)
            .unwrap()
            .contains("NO_SIS_UTIL")
    );
    // SAFETY: kill has no memory preconditions; the pid is our child's.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    assert!(
        t0.elapsed() < Duration::from_secs(15),
        "a SIGTERM ends the run"
    );
    let err = lines(&out).join("\n");
    assert_eq!(std::fs::read_to_string(&feats).unwrap(), LIST, "{err}");
    assert!(err.contains("restored: SIS_UTIL"), "{err}");
    // The recording was finalised too.
    let r = Command::new(BIN)
        .args(["--replay", rec.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
}

/// A bad name, a missing file, no root: one line each, exit 1, nothing written, CMD not run,
/// no recording left.
#[test]
fn refusals_change_nothing_and_run_nothing() {
    if !support::root() {
        return;
    }
    let _g = SERIAL.lock();
    let d = tempfile::tempdir().unwrap();
    let feats = features_file(d.path());
    let (rec, marker) = (d.path().join("r.wvz"), d.path().join("ran"));
    let touch = format!("touch {}", marker.display());
    let missing = d.path().join("no-such-features");
    let bad = |file: &Path, feature: &str| {
        wakeviz(&[
            "--record",
            rec.to_str().unwrap(),
            "--headless",
            "--sched-features-file",
            file.to_str().unwrap(),
            "--sched-feature",
            "NO_WA_BIAS",
            "--sched-feature",
            feature,
            "--",
            "sh",
            "-c",
            &touch,
        ])
    };
    let (_copy, not_root) = support::as_nobody(&bad(&feats, "NO_SIS_UTIL"));
    let cases: Vec<(&str, Command, &str)> = vec![
        (
            "bad name",
            bad(&feats, "NO_SIS_UTL"),
            "unknown scheduler feature \"NO_SIS_UTL\" (did you mean NO_SIS_UTIL?)",
        ),
        (
            "contradiction",
            bad(&feats, "WA_BIAS"),
            "NO_WA_BIAS and WA_BIAS contradict",
        ),
        (
            "missing file",
            bad(&missing, "NO_SIS_UTIL"),
            "does not exist",
        ),
        ("not root", not_root, "needs root"),
    ];
    for (what, mut c, says) in cases {
        let out = c.output().unwrap();
        let l = lines(&out);
        assert_eq!(out.status.code(), Some(1), "{what}: {l:?}");
        assert_eq!(l.len(), 1, "{what}: one line: {l:?}");
        assert!(l[0].contains(says), "{what}: {l:?}");
        assert_eq!(std::fs::read_to_string(&feats).unwrap(), LIST, "{what}");
        assert!(!marker.exists(), "{what}: CMD must not run");
        assert!(!rec.exists(), "{what}: no recording");
    }
}

/// The kernel's own file, with a name no kernel has: refused before anything is written,
/// whatever this machine's debugfs allows (a name error where it is readable, else one line
/// saying why it is not).
#[test]
fn the_real_file_with_a_bad_name_is_one_line() {
    if !support::root() {
        return;
    }
    let _g = SERIAL.lock();
    let d = tempfile::tempdir().unwrap();
    let marker = d.path().join("ran");
    let out = wakeviz(&[
        "--headless",
        "--sched-feature",
        "NO_SURELY_NOT_A_FEATURE",
        "--",
        "touch",
        marker.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    let l = lines(&out);
    assert_eq!(out.status.code(), Some(1), "{l:?}");
    assert_eq!(l.len(), 1, "{l:?}");
    assert!(l[0].contains("/sys/kernel/debug/sched/features") || l[0].contains("unknown"));
    assert!(!marker.exists());
}

/// A restore that cannot be done (here the file is gone when the run ends) says which feature
/// and the exact command that restores it by hand.
#[test]
fn a_failed_restore_gives_the_command_to_run() {
    if !support::root() {
        return;
    }
    let _g = SERIAL.lock();
    let d = tempfile::tempdir().unwrap();
    let feats = features_file(d.path());
    let script = format!("rm {}", feats.display());
    let out = wakeviz(&[
        "--headless",
        "--sched-features-file",
        feats.to_str().unwrap(),
        "--sched-feature",
        "NO_SIS_UTIL",
        "--",
        "sh",
        "-c",
        &script,
    ])
    .output()
    .unwrap();
    let l = lines(&out);
    let failed: Vec<&String> = l
        .iter()
        .filter(|x| x.contains("could not restore"))
        .collect();
    assert_eq!(failed.len(), 1, "{l:?}");
    assert!(
        failed[0].contains(&format!("SIS_UTIL ({} does not exist)", feats.display()))
            && failed[0].ends_with(&format!(
                "restore it by hand: echo SIS_UTIL > {}",
                feats.display()
            )),
        "{l:?}"
    );
    assert!(!l.iter().any(|x| x.contains("features restored")), "{l:?}");
}

#[test]
fn a_feature_needs_a_command() {
    let out = wakeviz(&["--headless", "--sched-feature", "NO_SIS_UTIL"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "a usage error");
}

/// A features file on a read-only mount: one line saying so, nothing changed, CMD not run.
#[test]
fn a_read_only_file_is_one_line() {
    if !support::root() {
        return;
    }
    let _g = SERIAL.lock();
    let d = tempfile::tempdir().unwrap();
    let mnt = d.path().join("ro");
    std::fs::create_dir(&mnt).unwrap();
    let sh = |cmd: &str| {
        Command::new("sh")
            .args(["-c", cmd])
            .status()
            .is_ok_and(|s| s.success())
    };
    let m = mnt.display();
    if !sh(&format!("mount -t tmpfs -o size=64k none {m}")) {
        eprintln!("SKIPPED: cannot mount a tmpfs here");
        return;
    }
    let feats = mnt.join("features");
    std::fs::write(&feats, LIST).unwrap();
    if !sh(&format!("mount -o remount,ro {m}")) {
        sh(&format!("umount {m}"));
        panic!("cannot remount {m} read-only");
    }
    let marker = d.path().join("ran");
    let out = wakeviz(&[
        "--headless",
        "--sched-features-file",
        feats.to_str().unwrap(),
        "--sched-feature",
        "NO_SIS_UTIL",
        "--",
        "touch",
        marker.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    let l = lines(&out);
    let content = std::fs::read_to_string(&feats).unwrap();
    assert!(sh(&format!("umount {m}")));
    assert_eq!(out.status.code(), Some(1), "{l:?}");
    assert_eq!(l.len(), 1, "{l:?}");
    assert!(l[0].contains("is read-only"), "{l:?}");
    assert_eq!(content, LIST);
    assert!(!marker.exists());
}
