//! `wakeviz export --perfetto` checked by an independent reader: `tests/perfetto_check.py`
//! parses the trace with the upstream Trace proto (the `perfetto` package's generated
//! perfetto_trace_pb2, in the venv `scripts/setup.sh` makes) and compares per-CPU event counts,
//! times and names with `wakeviz --replay F --dump jsonl`. On the demo (a VM recording), on a
//! synthetic recording cut into parts, and on a live recording of this machine (as root).
mod support;

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_wakeviz");

fn demo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demo.wvz")
}

/// The venv's python, or `None` (with the reason printed) outside CI; in CI a missing venv is
/// a failure, never a skip.
fn python() -> Option<PathBuf> {
    let env = std::env::var("WAKEVIZ_PYENV").unwrap_or_else(|_| "/opt/wakeviz-pyenv".into());
    let py = Path::new(&env).join("bin/python");
    let ok = Command::new(&py)
        .args([
            "-c",
            "from perfetto.protos.perfetto.trace import perfetto_trace_pb2",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some(py);
    }
    let why = format!(
        "{} cannot import perfetto_trace_pb2 (run scripts/setup.sh)",
        py.display()
    );
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
    eprintln!("SKIPPED: {why}");
    None
}

fn dump(rec: &Path, to: &Path) {
    let out = Command::new(BIN)
        .arg("--replay")
        .arg(rec)
        .args(["--dump", "jsonl"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(to, out.stdout).unwrap();
}

fn export(rec: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .args(["export", "--perfetto"])
        .arg(out)
        .args(extra)
        .arg(rec)
        .output()
        .unwrap()
}

/// Runs the checker; returns its JSON summary, failing the test on any mismatch it found.
fn check(py: &Path, dump: &Path, parts: &[PathBuf]) -> Value {
    let out = Command::new(py)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/perfetto_check.py"))
        .arg(dump)
        .args(parts)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "perfetto_check.py failed:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&text).unwrap()
}

/// Events of `kind` over all CPUs, as the checker counted them in the trace.
fn total(summary: &Value, kind: &str) -> u64 {
    summary["counts"][kind].as_object().map_or(0, |m| {
        m.values().map(|v| v["trace"].as_u64().unwrap()).sum()
    })
}

#[test]
fn demo_recording_exports_with_every_event_on_its_cpu() {
    let Some(py) = python() else { return };
    let d = tempfile::tempdir().unwrap();
    let (jsonl, trace) = (d.path().join("demo.jsonl"), d.path().join("demo.pftrace"));
    dump(&demo(), &jsonl);
    let out = export(&demo(), &trace, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The demo (2026-12-01) carries its clock snapshot: nothing is derived.
    assert!(!stderr.contains("no clock snapshot"), "{stderr}");
    let s = check(&py, &jsonl, &[trace]);
    for kind in ["switch", "waking", "migrate", "new_task"] {
        assert!(total(&s, kind) > 0, "no {kind} events: {s}");
    }
    assert!(s["counts"]["switch"].as_object().unwrap().len() > 1, "{s}");
    // The exported snapshot is the recorded one (the guest never suspended: the gap is the
    // back-to-back reads' own spacing and the boot-time offset the VM started with).
    let bytes = std::fs::read(demo()).unwrap();
    let r = wakeviz_core::format::Reader::new(&bytes[..], &demo()).unwrap();
    let clocks = r
        .header()
        .clocks
        .clone()
        .expect("the demo has a clock snapshot");
    assert_eq!(s["boot_minus_mono_ns"], clocks.boot_minus_probe_ns());
    assert!(s["named_pids"].as_u64().unwrap() > 10, "{s}");
    tracks_match_report(&demo(), &s);
}

#[test]
fn existing_output_is_refused_unless_forced() {
    let d = tempfile::tempdir().unwrap();
    let trace = d.path().join("t.pftrace");
    std::fs::write(&trace, b"keep me").unwrap();
    let out = export(&demo(), &trace, &[]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("exists"), "{stderr}");
    assert_eq!(std::fs::read(&trace).unwrap(), b"keep me");
    let out = export(&demo(), &trace, &["--force"]);
    assert!(out.status.success());
    assert_eq!(
        std::fs::read(d.path().join("t.pftrace.old")).unwrap(),
        b"keep me"
    );
    assert!(std::fs::metadata(&trace).unwrap().len() > 1000);
    // Never through a symbolic link, even with --force.
    let link = d.path().join("link.pftrace");
    std::os::unix::fs::symlink(d.path().join("elsewhere"), &link).unwrap();
    let out = export(&demo(), &link, &["--force"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!d.path().join("elsewhere").exists());
}

#[test]
fn split_parts_each_stand_alone_and_add_up() {
    let Some(py) = python() else { return };
    let d = tempfile::tempdir().unwrap();
    let rec = d.path().join("synth.wvz");
    let topo = wakeviz_core::topology::fixture::named_topology("zen3-nps4").unwrap();
    let cfg = wakeviz_core::synth::SynthConfig::new(300_000, 7);
    wakeviz_core::synth::generate(&topo, &cfg, std::fs::File::create(&rec).unwrap()).unwrap();
    let jsonl = d.path().join("synth.jsonl");
    dump(&rec, &jsonl);
    let base = d.path().join("s.pftrace");
    let out = export(&rec, &base, &["--split-mb", "1"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !base.exists(),
        "with --split-mb only numbered parts are written"
    );
    let parts: Vec<PathBuf> = (1..)
        .map(|n| d.path().join(format!("s.{n}.pftrace")))
        .take_while(|p| p.exists())
        .collect();
    assert!(parts.len() >= 2, "{stderr}");
    for p in &parts {
        let len = std::fs::metadata(p).unwrap().len();
        assert!(len <= 1 << 20, "{} is {len} bytes", p.display());
    }
    // Each part on its own: clock snapshot first, names from its own ProcessTree.
    for p in &parts {
        let s = check_part(&py, p);
        assert_eq!(s["parts"][0]["path"], p.to_str().unwrap());
    }
    // All parts together: the recording's counts and times, per CPU.
    let s = check(&py, &jsonl, &parts);
    assert!(total(&s, "switch") > 10_000, "{s}");
    tracks_match_report(&rec, &s);
    assert_eq!(s["parts"].as_array().unwrap().len(), parts.len());
    // Kernel data and wakeviz tracks are interleaved by time: every part but the last (the
    // tail of records and counters) carries kernel events.
    let with_events = s["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["events"].as_u64().unwrap() > 0)
        .count();
    assert!(with_events + 1 >= parts.len(), "{s}");
}

/// One part checked alone: only the checks that do not need every event (the dump is empty).
fn check_part(py: &Path, part: &Path) -> Value {
    let d = tempfile::tempdir().unwrap();
    let empty = d.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let out = Command::new(py)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/perfetto_check.py"))
        .arg("--structure-only")
        .arg(&empty)
        .arg(part)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    serde_json::from_str(&text).unwrap()
}

/// wakeviz's tracks against `--report json` of the same recording: one instant per placement,
/// named by its level vs the waker (`fork: ` for new tasks), counters that sum to the report's
/// level counts, one flow per wakee seen switching in.
fn tracks_match_report(rec: &Path, s: &Value) {
    let out = Command::new(BIN)
        .arg("--replay")
        .arg(rec)
        .args(["--report", "json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let (wakeups, forks) = (
        &report["placement"]["wakeups"],
        &report["placement"]["new_tasks"],
    );
    let te = &s["track_events"];
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let mut placed = 0;
    for level in wakeviz_core::topology::Level::ALL {
        let l = level.name();
        assert_eq!(
            n(&te["instants"][l]),
            n(&wakeups["vs_waker"][l]),
            "{l}: {te}"
        );
        let fork = format!("fork: {l}");
        assert_eq!(
            n(&te["instants"][&fork]),
            n(&forks["vs_waker"][l]),
            "{fork}: {te}"
        );
        for (mix, key) in [("vs waker", "vs_waker"), ("vs prev", "vs_prev")] {
            let track = format!("wakeups/10ms {mix}: {l}");
            let want = n(&wakeups[key][l]) + n(&forks[key][l]);
            assert_eq!(n(&te["counters"][&track]), want, "{track}: {te}");
        }
        placed += n(&wakeups["vs_waker"][l]) + n(&forks["vs_waker"][l]);
    }
    assert!(placed > 0, "{te}");
    assert_eq!(
        n(&te["instants"]["unclassified"]),
        n(&wakeups["unclassified"])
    );
    let runs = n(&te["instants"]["run"]);
    assert!(runs > 0 && runs <= placed, "{te}");
    assert_eq!(n(&te["flows"]), runs);
    assert_eq!(n(&te["terminating"]), runs);
}

/// The kernel's own word on which process each thread of `comm` belongs to: a tracefs instance
/// with `record-tgid` on, whose `sched_switch` lines name the switching-out task as
/// `comm-pid (tgid)`.
struct TgidTrace(support::TraceInstance);

impl TgidTrace {
    fn start(comm: &str) -> Self {
        let mut t = support::TraceInstance::new(&format!("wvz-tgid-{comm}"));
        t.option("record-tgid");
        t.enable("sched_switch", &format!("prev_comm == \"{comm}\""));
        t.on();
        Self(t)
    }

    /// tid -> tgid of every thread the trace saw switch out.
    fn tgids(&self) -> std::collections::BTreeMap<u32, u32> {
        let text = self.0.text();
        let mut out = std::collections::BTreeMap::new();
        for l in text.lines().filter(|l| l.contains(" sched_switch: ")) {
            // `           pf-ping-4242    (   4240) [001] ...`
            let Some((task, rest)) = l.split_once('(') else {
                continue;
            };
            let tid = task.trim().rsplit('-').next().and_then(|t| t.parse().ok());
            let tgid = rest.split(')').next().and_then(|t| t.trim().parse().ok());
            if let (Some(tid), Some(tgid)) = (tid, tgid) {
                out.insert(tid, tgid);
            }
        }
        out
    }
}

#[test]
fn live_recording_exports_on_boottime() {
    live_export(&[], "pf-ping", "3000", &[]);
}

/// The classic tracepoints carry no tgid: the drain reads each new task's process from
/// `/proc`, so the threads are grouped as in the other modes. The workload pauses between
/// round trips, so its threads live seconds and cost little CPU: a task gone before its ring
/// is drained stays unknown, and a saturated test machine can delay the drain.
#[test]
fn a_classic_tracepoint_recording_groups_threads_by_process() {
    let paced = ["--pause-us", "1000"];
    live_export(
        &["--tracepoint-mode", "tracepoint"],
        "pf-classic",
        "3000",
        &paced,
    );
}

fn live_export(mode: &[&str], comm: &str, iterations: &str, workload: &[&str]) {
    let Some(py) = python() else { return };
    if !support::root() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let rec = d.path().join("live.wvz");
    let truth = TgidTrace::start(comm);
    let out = Command::new(BIN)
        .arg("--record")
        .arg(&rec)
        .args(["--headless", "--duration", "60s"])
        .args(mode)
        .arg("--")
        .arg(BIN)
        .args(["workload", "pingpong", "--iterations", iterations])
        .args(["--comm", comm])
        .args(workload)
        .output()
        .unwrap();
    let kernel_tgids = truth.tgids();
    drop(truth);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let header = wakeviz_core::format::Reader::open(&rec)
        .unwrap()
        .header()
        .clone();
    let clocks = header.clocks.expect("a live recording stores its clocks");
    let jsonl = d.path().join("live.jsonl");
    dump(&rec, &jsonl);
    let trace = d.path().join("live.pftrace");
    let out = export(&rec, &trace, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("no clock snapshot"), "{stderr}");
    let s = check(&py, &jsonl, &[trace]);
    assert_eq!(
        s["boot_minus_mono_ns"].as_i64().unwrap(),
        clocks.boot_minus_probe_ns()
    );
    assert!(total(&s, "switch") >= 3000, "{s}");
    assert!(total(&s, "waking") >= 3000, "{s}");
    // The workload's threads are named in the trace's ProcessTree.
    let names = s["thread_names"].as_array().unwrap();
    assert!(names.iter().any(|n| n == comm), "{s}");
    // Its two threads are one process, in the dump and in the ProcessTree (the checker fails on
    // any thread whose group differs from the dump's), as the kernel's ftrace says.
    assert!(
        kernel_tgids.len() >= 2,
        "ftrace saw both threads: {kernel_tgids:?}"
    );
    let groups = &s["thread_tgids"];
    for (tid, tgid) in &kernel_tgids {
        assert_eq!(
            groups[tid.to_string()].as_u64(),
            Some(u64::from(*tgid)),
            "thread {tid}: ftrace says process {tgid}; the trace's groups: {groups}"
        );
    }
    let processes: std::collections::BTreeSet<u32> = kernel_tgids.values().copied().collect();
    assert_eq!(processes.len(), 1, "one process: {kernel_tgids:?}");
    // wakeviz forked it, and the recording saw the fork: the process has its parent.
    let tgid = processes.first().copied().unwrap_or_default();
    let ppid = s["process_ppids"][tgid.to_string()].as_u64().unwrap_or(0);
    assert!(
        ppid != 0 && ppid != u64::from(tgid),
        "parent of {tgid}: {s}"
    );
    tracks_match_report(&rec, &s);
}

/// The debug-info scan probes' counts on each placement's instant add up to the report's
/// measured scan (the report counts wakeups only; forks are placed by the same call and carry
/// the args too).
#[test]
fn measured_scan_args_add_up_to_the_report() {
    let Some(py) = python() else { return };
    let rec = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../wakeviz-core/tests/fixtures/recordings/vm-nps1-scan-probes.wvz");
    let d = tempfile::tempdir().unwrap();
    let (jsonl, trace) = (d.path().join("d.jsonl"), d.path().join("t.pftrace"));
    dump(&rec, &jsonl);
    let out = export(&rec, &trace, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = check(&py, &jsonl, &[trace]);
    let args = &s["track_events"]["args"];
    let arg = |k: &str| args[k].as_u64().unwrap_or(0);
    let out = Command::new(BIN)
        .arg("--replay")
        .arg(&rec)
        .args(["--report", "json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let m = &report["scan_latency"]["measured"];
    let n = |k: &str| m[k].as_u64().unwrap();
    assert!(n("scans") > 100, "{m}");
    assert_eq!(arg("scan_ran.true"), n("scans"), "{args}");
    assert_eq!(arg("scan_idle_tests.sum"), n("cpus_tested"), "{args}");
    assert_eq!(arg("scan_idle_core.true"), n("core_scans"), "{args}");
    assert_eq!(arg("scan_smt.true"), n("smt_calls"), "{args}");
    assert!(arg("scan_ran.n") >= n("calls"), "{args} {m}");
    // Only timed where a scan ran.
    assert_eq!(arg("scan_ns.n"), n("scans"), "{args}");
}
