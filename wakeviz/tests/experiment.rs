//! `wakeviz experiment`: settings run in alternation, each run recorded with its features set
//! and restored before the next, the comparison printed and written to DIR; a failed run stops
//! the experiment and keeps what was recorded; refusals run nothing. On a plain file standing
//! in for debugfs `sched/features` (`--sched-features-file`). Needs root (BPF); without it each
//! test prints SKIPPED, and fails under CI=true.
mod support;

use std::{
    path::Path,
    process::{Command, Output, Stdio},
    sync::Mutex,
};

const BIN: &str = env!("CARGO_BIN_EXE_wakeviz");
static SERIAL: Mutex<()> = Mutex::new(());

const LIST: &str = "PLACE_LAG TTWU_QUEUE SIS_UTIL WA_IDLE WA_BIAS NO_HRTICK \n";

/// `wakeviz experiment ARGS --sched-features-file F --no-shadow -- sh -c SCRIPT`.
fn experiment(feats: &Path, args: &[&str], script: &str) -> Command {
    let mut c = Command::new(BIN);
    c.arg("experiment")
        .args(args)
        .arg("--sched-features-file")
        .arg(feats)
        .args(["--no-shadow", "--", "sh", "-c", script])
        .stdin(Stdio::null());
    c
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn settings_alternate_restore_and_compare() {
    if !support::root() {
        return;
    }
    let _g = SERIAL.lock();
    let d = tempfile::tempdir().unwrap();
    let feats = d.path().join("features");
    std::fs::write(&feats, LIST).unwrap();
    let (out_dir, log) = (d.path().join("exp"), d.path().join("log"));
    // Each run appends the features it ran under: the order of the runs, and each setting's
    // features in force during its run only.
    let script = format!(
        "echo $(cat {}) >> {}; echo 'took: 42.5'",
        feats.display(),
        log.display()
    );
    let out = experiment(
        &feats,
        &[
            "--setting",
            "default",
            "--setting",
            "NO_SIS_UTIL",
            "--setting",
            "NO_SIS_UTIL,NO_WA_BIAS",
            "--runs",
            "2",
            "--out",
            out_dir.to_str().unwrap(),
            "--metric",
            "took=took: ([0-9.]+)",
            "--report",
            "json",
        ],
        &script,
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", err(&out));
    let base = LIST.trim().to_string();
    let no_sis = base.replace("SIS_UTIL", "NO_SIS_UTIL");
    let both = no_sis.replace("WA_BIAS", "NO_WA_BIAS");
    let runs: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(
        runs,
        [&base, &no_sis, &both, &base, &no_sis, &both].map(String::as_str),
        "alternated, and restored between runs"
    );
    assert_eq!(std::fs::read_to_string(&feats).unwrap(), LIST);

    // stdout is the JSON alone (the runs' own output went to stderr), and DIR keeps it.
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("experiment.json")).unwrap())
            .unwrap();
    assert_eq!(j, saved);
    assert_eq!(j["schema_version"], 1);
    assert_eq!(j["runs_per_setting"], 2);
    assert_eq!(j["settings"][2]["name"], "NO_SIS_UTIL+NO_WA_BIAS");
    assert_eq!(
        j["settings"][2]["features"],
        serde_json::json!(["NO_SIS_UTIL", "NO_WA_BIAS"])
    );
    let order: Vec<(u64, String, u64, String)> = j["order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert_eq!(r["exit_code"], 0);
            (
                r["seq"].as_u64().unwrap(),
                r["setting"].as_str().unwrap().to_string(),
                r["run"].as_u64().unwrap(),
                r["file"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let names = ["default", "NO_SIS_UTIL", "NO_SIS_UTIL+NO_WA_BIAS"];
    for (i, (seq, setting, run, file)) in order.iter().enumerate() {
        assert_eq!(*seq as usize, i + 1);
        assert_eq!(setting, names[i % 3]);
        assert_eq!(*run as usize, i / 3 + 1);
        let want = out_dir.join(format!("{setting}-{run}.wvz"));
        assert_eq!(Path::new(file), want);
        assert!(want.is_file());
    }
    // The diff: one group per setting, the first the base, each with its runs' files.
    let groups = j["diff"]["groups"].as_array().unwrap();
    let gnames: Vec<&str> = groups.iter().map(|g| g["name"].as_str().unwrap()).collect();
    assert_eq!(gnames, names);
    assert_eq!(groups[1]["runs"], 2);
    let overrides = j["diff"]["metadata"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["field"] == "sched_feature_overrides")
        .expect("the overrides are a condition of the diff");
    assert_eq!(
        overrides["values"],
        serde_json::json!([["none"], ["NO_SIS_UTIL"], ["NO_SIS_UTIL NO_WA_BIAS"]])
    );
    assert_eq!(overrides["differs"], true);
    let sis = j["diff"]["metadata"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["field"] == "sched_features.SIS_UTIL")
        .unwrap();
    assert_eq!(sis["values"], serde_json::json!([["on"], ["off"], ["off"]]));
    let took = j["diff"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "workload.took")
        .expect("the workload's metric");
    assert_eq!(took["groups"][0]["mean"], 42.5);

    // The text: the runs in order, then the diff, the workload's figures before placement.
    let t = std::fs::read_to_string(out_dir.join("experiment.txt")).unwrap();
    let pos = |s: &str| t.find(s).unwrap_or_else(|| panic!("{s:?} in\n{t}"));
    assert!(pos("Runs in execution order") < pos("NO_SIS_UTIL+NO_WA_BIAS-2.wvz"));
    assert!(pos("NO_SIS_UTIL-1.wvz") < pos("default-2.wvz"));
    assert!(pos("sched_feature_overrides") < pos("Workload results"));
    assert!(pos("Workload results") < pos("Wakeup placement"));

    // Again into the same DIR: refused, nothing run; with --force, the old files kept.
    std::fs::remove_file(&log).unwrap();
    let again = |force: bool| {
        let mut a = vec![
            "--setting",
            "default",
            "--setting",
            "NO_WA_IDLE",
            "--runs",
            "1",
            "--out",
            out_dir.to_str().unwrap(),
        ];
        if force {
            a.push("--force");
        }
        experiment(&feats, &a, &script).output().unwrap()
    };
    let o = again(false);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("default-1.wvz exists"), "{}", err(&o));
    assert_eq!(err(&o).lines().count(), 1, "{}", err(&o));
    assert!(!log.exists(), "refused: nothing ran");
    let o = again(true);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out_dir.join("default-1.wvz.old").is_file());
    assert!(out_dir.join("experiment.json.old").is_file());
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("Runs in execution order"),
        "text by default"
    );
}

#[test]
fn a_failed_run_stops_and_keeps_the_recordings() {
    if !support::root() {
        return;
    }
    let _g = SERIAL.lock();
    let d = tempfile::tempdir().unwrap();
    let feats = d.path().join("features");
    std::fs::write(&feats, LIST).unwrap();
    let out_dir = d.path().join("exp");
    // The workload fails under NO_SIS_UTIL only.
    let script = format!("grep -q NO_SIS_UTIL {} && exit 3; true", feats.display());
    let o = experiment(
        &feats,
        &two_settings("default", "NO_SIS_UTIL", out_dir.to_str().unwrap()),
        &script,
    )
    .output()
    .unwrap();
    let e = err(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    let last = e.lines().last().unwrap();
    assert!(
        last.contains("run 2/6 (NO_SIS_UTIL run 1) failed: exited 3"),
        "{last}"
    );
    assert!(last.contains("default-1.wvz"), "{last}");
    assert!(out_dir.join("default-1.wvz").is_file());
    assert!(out_dir.join("NO_SIS_UTIL-1.wvz").is_file());
    assert!(!out_dir.join("default-2.wvz").exists(), "stopped");
    assert!(!out_dir.join("experiment.json").exists());
    assert_eq!(std::fs::read_to_string(&feats).unwrap(), LIST);
}

/// `--setting A --setting B --out DIR`.
fn two_settings<'a>(a: &'a str, b: &'a str, out: &'a str) -> [&'a str; 6] {
    ["--setting", a, "--setting", b, "--out", out]
}

/// Refused before any run, one line each: a bad feature, a missing features file, not root,
/// fewer than two settings (usage, 2).
#[test]
fn refusals_run_nothing() {
    if !support::root() {
        return;
    }
    let _g = SERIAL.lock();
    let d = tempfile::tempdir().unwrap();
    let feats = d.path().join("features");
    std::fs::write(&feats, LIST).unwrap();
    let out_dir = d.path().join("exp");
    let marker = d.path().join("ran");
    let script = format!("touch {}", marker.display());
    let o = out_dir.to_str().unwrap();
    let (_copy, not_root) = support::as_nobody(&experiment(
        &feats,
        &two_settings("default", "NO_SIS_UTIL", o),
        &script,
    ));
    let cases: Vec<(&str, Command, i32, &str)> = vec![
        (
            "bad feature",
            experiment(&feats, &two_settings("default", "NO_SIS_UTL", o), &script),
            1,
            "did you mean NO_SIS_UTIL",
        ),
        (
            "missing file",
            experiment(
                &d.path().join("nope"),
                &two_settings("default", "NO_SIS_UTIL", o),
                &script,
            ),
            1,
            "does not exist",
        ),
        ("not root", not_root, 1, "needs root"),
        (
            "one setting",
            experiment(&feats, &["--setting", "NO_SIS_UTIL", "--out", o], &script),
            2,
            "at least two",
        ),
        (
            "twice",
            experiment(
                &feats,
                &["--setting", "default", "--setting", "default", "--out", o],
                &script,
            ),
            2,
            "given twice",
        ),
    ];
    for (what, mut c, code, says) in cases {
        let out = c.output().unwrap();
        let e = err(&out);
        assert_eq!(out.status.code(), Some(code), "{what}: {e}");
        assert_eq!(e.lines().count(), 1, "{what}: {e}");
        assert!(e.contains(says), "{what}: {e}");
        assert!(!marker.exists(), "{what}: nothing runs");
        assert!(!out_dir.exists(), "{what}: nothing created");
        assert_eq!(std::fs::read_to_string(&feats).unwrap(), LIST);
    }
}

/// `--out` through a symbolic link is refused (as `export` refuses one), `--force` or not: a
/// root run must not be steered into a directory someone else chose.
#[test]
fn an_out_symlink_is_refused() {
    if !support::root() {
        return;
    }
    let _g = SERIAL.lock();
    let d = tempfile::tempdir().unwrap();
    let feats = d.path().join("features");
    std::fs::write(&feats, LIST).unwrap();
    let real = d.path().join("elsewhere");
    std::fs::create_dir(&real).unwrap();
    let link = d.path().join("exp");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let marker = d.path().join("ran");
    let script = format!("touch {}", marker.display());
    for force in [false, true] {
        let mut args = vec![
            "--setting",
            "default",
            "--setting",
            "NO_SIS_UTIL",
            "--out",
            link.to_str().unwrap(),
        ];
        if force {
            args.push("--force");
        }
        let out = experiment(&feats, &args, &script).output().unwrap();
        let e = err(&out);
        assert_eq!(out.status.code(), Some(1), "force {force}: {e}");
        assert_eq!(e.lines().count(), 1, "force {force}: {e}");
        assert!(e.contains("symbolic link"), "force {force}: {e}");
        assert!(!marker.exists(), "force {force}: nothing runs");
        assert_eq!(
            std::fs::read_dir(&real).unwrap().count(),
            0,
            "force {force}"
        );
    }
}

/// A SIGTERM to the experiment alone reaches the run in progress, which restores its features
/// and finalises its recording; no further run starts.
#[test]
fn sigterm_stops_after_restoring() {
    if !support::root() {
        return;
    }
    let _g = SERIAL.lock();
    let d = tempfile::tempdir().unwrap();
    let feats = d.path().join("features");
    std::fs::write(&feats, LIST).unwrap();
    let (out_dir, started) = (d.path().join("exp"), d.path().join("started"));
    // Only the NO_SIS_UTIL run waits, so the signal comes while its feature is set.
    let script = format!(
        "if grep -q NO_SIS_UTIL {f}; then touch {s}; sleep 30; fi",
        f = feats.display(),
        s = started.display()
    );
    let child = experiment(
        &feats,
        &[
            "--setting",
            "default",
            "--setting",
            "NO_SIS_UTIL",
            "--runs",
            "2",
            "--out",
            out_dir.to_str().unwrap(),
        ],
        &script,
    )
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let t0 = std::time::Instant::now();
    while !started.exists() {
        assert!(t0.elapsed().as_secs() < 60, "the second run never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_ne!(std::fs::read_to_string(&feats).unwrap(), LIST);
    // SAFETY: kill has no memory preconditions; the pid is our child's.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let o = child.wait_with_output().unwrap();
    assert!(t0.elapsed().as_secs() < 20, "a SIGTERM ends the experiment");
    let e = err(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.lines()
            .last()
            .unwrap()
            .contains("stopped by a signal during run 2/4"),
        "{e}"
    );
    assert_eq!(std::fs::read_to_string(&feats).unwrap(), LIST, "{e}");
    assert!(!out_dir.join("default-2.wvz").exists(), "no further run");
    let r = Command::new(BIN)
        .arg("--replay")
        .arg(out_dir.join("NO_SIS_UTIL-1.wvz"))
        .output()
        .unwrap();
    assert_eq!(
        r.status.code(),
        Some(0),
        "the interrupted run's recording is whole"
    );
}
