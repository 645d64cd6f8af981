//! `wakeviz workload extract --rt-app`: a recorded workload, replayed by Debian's rt-app on the
//! same kernel, places its wakeups as the original did. Needs root (BPF) and rt-app (the test
//! set-up installs it); without root each test prints SKIPPED.
mod support;

use std::{
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
    sync::Mutex,
};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_wakeviz");
static SERIAL: Mutex<()> = Mutex::new(());

fn run(args: &[&str]) -> Output {
    let out = Command::new(args[0])
        .args(&args[1..])
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", args[0]));
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn record(path: &Path, cmd: &[&str]) {
    let p = path.to_str().unwrap();
    let mut a = vec![BIN, "--record", p, "--headless", "--"];
    a.extend_from_slice(cmd);
    run(&a);
}

fn report(path: &Path) -> Value {
    let out = run(&[BIN, "--replay", path.to_str().unwrap(), "--report", "json"]);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Level -> share of the placed wakeups, in percent, relative to the waker or prev CPU.
fn shares(r: &Value, rel: &str) -> Vec<(String, f64)> {
    let w = &r["placement"]["wakeups"];
    let n = w["count"].as_f64().unwrap();
    w[rel]
        .as_object()
        .unwrap()
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), 100.0 * v.as_f64()? / n)))
        .collect()
}

/// `wakeviz workload extract ORIG --rt-app FILE`: its summary.
fn extract_rt_app(orig: &Path, file: &Path) -> String {
    let out = run(&[
        BIN,
        "workload",
        "extract",
        orig.to_str().unwrap(),
        "--rt-app",
        file.to_str().unwrap(),
    ]);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A recording of wakeviz's own `workload ARGS`, in a temporary directory with the paths of its
/// replay's recording and of the rt-app file extracted from it.
struct Original {
    _dir: tempfile::TempDir,
    orig: PathBuf,
    replay: PathBuf,
    file: PathBuf,
    /// `wakeviz workload extract`'s summary.
    summary: String,
}

fn original(workload: &[&str]) -> Original {
    let d = tempfile::tempdir().unwrap();
    let (orig, replay) = (d.path().join("orig.wvz"), d.path().join("replay.wvz"));
    let file = d.path().join("w.json");
    let mut cmd = vec![BIN, "workload"];
    cmd.extend_from_slice(workload);
    record(&orig, &cmd);
    let summary = extract_rt_app(&orig, &file);
    Original {
        _dir: d,
        orig,
        replay,
        file,
        summary,
    }
}

fn rt_app() -> bool {
    let found = Command::new("rt-app").arg("--help").output().is_ok();
    assert!(
        found || std::env::var("CI").as_deref() != Ok("true"),
        "rt-app is missing: scripts/setup.sh test installs it"
    );
    if !found {
        eprintln!("SKIPPED: rt-app is not installed (scripts/setup.sh test installs it)");
    }
    found
}

/// A pair pinned to two CPUs: the affinity comes from the probes' reading of each task's
/// CPU mask, and rt-app sets it again, so the replay's wakeups cross between the same CPUs.
/// (An unpinned pipe ping-pong settles on one CPU or on two from run to run, by where its
/// threads start: no replay can be held to one run's shares of that.)
#[test]
fn a_replayed_pinned_ping_pong_places_its_wakeups_as_the_original() {
    if !support::root() || !support::cpus(2) || !rt_app() {
        return;
    }
    let _g = SERIAL.lock();
    let Original {
        orig,
        replay,
        file,
        summary: text,
        ..
    } = &original(&[
        "pingpong",
        "--iterations",
        "5000",
        "--waker-cpu",
        "0",
        "--wakee-cpu",
        "1",
    ]);
    assert!(text.contains("2 threads, 1 stars"), "{text}");
    let rt: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    let mut cpus: Vec<String> = rt["tasks"]
        .as_object()
        .unwrap()
        .values()
        .map(|t| t["cpus"].to_string())
        .collect();
    cpus.sort();
    assert_eq!(cpus, ["[0]", "[1]"], "{rt}");
    record(replay, &["rt-app", file.to_str().unwrap()]);
    let (a, b) = (report(orig), report(replay));
    let n = |r: &Value| r["placement"]["wakeups"]["count"].as_f64().unwrap();
    // rt-app's start (its main thread, the thread creation) adds a few wakeups; a round is
    // a wakeup only when its waiter got to sleep first, on both sides.
    assert!(
        (n(&b) - n(&a)).abs() <= 0.1 * n(&a),
        "{} vs {} wakeups",
        n(&a),
        n(&b)
    );
    for rel in ["vs_waker", "vs_prev"] {
        let (sa, sb) = (shares(&a, rel), shares(&b, rel));
        for ((level, x), (_, y)) in sa.iter().zip(&sb) {
            assert!(
                (x - y).abs() <= 3.0,
                "{rel} {level}: {x:.2} % recorded, {y:.2} % replayed ({sa:?} vs {sb:?})"
            );
        }
    }
}

/// A fan-out star runs for the recording's length and stops by itself; it is not held to
/// the original's shares (see the rt-app module's notes on mutex hand-offs).
#[test]
fn a_replayed_fan_out_runs_and_ends() {
    if !support::root() || !rt_app() {
        return;
    }
    let _g = SERIAL.lock();
    let Original { replay, file, .. } = &original(&[
        "fanout",
        "--ack",
        "--groups",
        "1",
        "--receivers",
        "3",
        "--loops",
        "2000",
    ]);
    record(replay, &["timeout", "60", "rt-app", file.to_str().unwrap()]);
    let b = report(replay);
    let placed = b["placement"]["wakeups"]["count"].as_u64().unwrap();
    assert!(placed > 1000, "{placed} wakeups replayed");
    let shape = run(&[BIN, "workload", "extract", replay.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&shape.stdout);
    assert!(text.matches("wvz_fanou-").count() >= 4, "{text}");
}

const PINGPONG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../wakeviz-core/tests/fixtures/recordings/vm-nps1-smt-pingpong.wvz"
);

/// A recording's workload under `prev_only`, closed loop: every simulated wakeup returns to its
/// previous CPU, whatever the workload does; the recorded kernel's own choice is no policy.
#[test]
fn a_simulation_under_prev_only_keeps_every_wakeup_on_prev() {
    let out = run(&[
        BIN,
        "workload",
        "simulate",
        PINGPONG,
        "--policy",
        "prev_only",
        "--report",
        "json",
    ]);
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let w = &r["placement"]["wakeups"];
    let n = w["count"].as_u64().unwrap();
    assert!(n > 900, "{n} simulated wakeups");
    assert_eq!(w["vs_prev"]["same_cpu"].as_u64(), Some(n));
    let note = r["recording"]["notes"].to_string();
    assert!(note.contains("closed-loop simulation"), "{note}");
    let bad = Command::new(BIN)
        .args(["workload", "simulate", PINGPONG, "--policy", "observed"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("observed"), "{err}");
}

/// The shape as JSON, and an existing output is not overwritten.
#[test]
fn the_extracted_shape_is_json_and_existing_files_are_kept() {
    let d = tempfile::tempdir().unwrap();
    let json = d.path().join("shape.json");
    run(&[
        BIN,
        "workload",
        "extract",
        PINGPONG,
        "--json",
        json.to_str().unwrap(),
    ]);
    let s: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(s["schema"], 1);
    let pair: Vec<&Value> = s["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["comm"] == "wvz-diff")
        .collect();
    assert_eq!(pair.len(), 2, "{s}");
    for t in &pair {
        assert_eq!(t["woken_by"][0]["waker"]["kind"], "task");
    }
    let again = Command::new(BIN)
        .args([
            "workload",
            "extract",
            PINGPONG,
            "--json",
            json.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("refusing to overwrite"));
}
