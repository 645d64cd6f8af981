//! The format's compatibility rule (docs/reference/recording-format.md, "Compatibility"):
//! recordings written by earlier builds, of every format version still read, replay with
//! unchanged figures. Each committed recording below is replayed into the analysis with every
//! shadow policy and its whole `--report json` value compared with a golden written when the
//! rule was set; a format change that alters one figure of an old file fails here.
//! `WAKEVIZ_BLESS=1` rewrites the goldens: only for an intended change of the figures
//! themselves, never for a format change (review the diff).
mod analysis_support;

use std::path::{Path, PathBuf};

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

/// The file's format version and its whole `--report json`.
fn report(path: &Path) -> (u32, serde_json::Value) {
    let version = wakeviz_core::format::Reader::open(path)
        .expect("open")
        .header()
        .format_version;
    (version, analysis_support::replay_report(path))
}

fn check(rel: &str, version: u32) {
    let path = repo(rel);
    let (found, got) = report(&path);
    assert_eq!(found, version, "{rel}: format version");
    let got = serde_json::to_string_pretty(&got).expect("json") + "\n";
    let name = Path::new(rel)
        .file_stem()
        .and_then(|s| s.to_str())
        .expect("name");
    let gp = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/golden")
        .join(format!("compat-{name}.json"));
    if std::env::var_os("WAKEVIZ_BLESS").is_some() {
        std::fs::write(&gp, &got).expect("write golden");
        return;
    }
    let want = std::fs::read_to_string(&gp)
        .unwrap_or_else(|e| panic!("{}: {e} (WAKEVIZ_BLESS=1 writes it)", gp.display()));
    if got != want {
        let line = got
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        let (g, w): (Vec<_>, Vec<_>) = (got.lines().collect(), want.lines().collect());
        panic!(
            "{rel}: figures differ from {} from line {}:\n  golden: {}\n  now:    {}",
            gp.display(),
            line + 1,
            w.get(line).unwrap_or(&""),
            g.get(line).unwrap_or(&"")
        );
    }
}

/// The demo: a live capture in the NPS2-like VM guest, format 1, probe ABI 3.
#[test]
fn the_format_1_demo_replays_with_its_figures() {
    check("wakeviz/assets/demo.wvz", 1);
}

/// A live tracepoint-only capture, format 1.
#[test]
fn a_format_1_live_tracepoint_only_recording_replays_with_its_figures() {
    check("fuzz/seeds/recording/seed-live-tp-only.wvz", 1);
}

/// Synthetic recordings with select records and their inputs, format 2 (columns).
#[test]
fn format_2_columns_recordings_replay_with_their_figures() {
    check("fuzz/seeds/recording/seed-synth-vm2-columns.wvz", 2);
    check("fuzz/seeds/recording/seed-select-inputs-columns.wvz", 2);
}

/// A live `-- CMD` capture in the NPS1-like VM guest (a ping-pong pair on SMT siblings),
/// format 3 with `/proc/schedstat` samples: the kernel's counters replay with it.
#[test]
fn a_format_3_recording_replays_with_its_kernel_counters() {
    let rel = "wakeviz-core/tests/fixtures/recordings/vm-nps1-smt-pingpong.wvz";
    check(rel, 3);
    let (_, r) = report(&repo(rel));
    let row = |domain: &str, counter: &str| {
        r["schedstat"]["rows"]
            .as_array()
            .and_then(|rows| {
                rows.iter()
                    .find(|x| x["domain"] == domain && x["counter"] == counter)
            })
            .map(|x| (x["kernel"].as_u64(), x["wakeviz"].as_u64()))
    };
    // The pair's wakeups cross the SMT domain: the kernel's count and wakeviz's agree.
    assert_eq!(
        row("SMT", "ttwu_wake_remote"),
        Some((Some(1006), Some(1006)))
    );
    assert_eq!(row("cpu", "ttwu_count"), Some((Some(1123), Some(1126))));
}

/// A live tracepoint-only capture on a kernel that refuses fentry, format 6: the `sched_waking`
/// probe read the select inputs (a pinned `perf bench sched pipe`, then an unpinned
/// `perf bench sched messaging`). Without those records the same stream places the pinned
/// tasks where they may not run.
#[test]
fn a_format_6_recording_with_inputs_read_at_sched_waking_replays_with_its_figures() {
    let rel = "wakeviz-core/tests/fixtures/recordings/live-tp-waking-inputs.wvz";
    check(rel, 6);
    let path = repo(rel);
    let with = analysis_support::replay_report(&path);
    let without = analysis_support::replay_report_keeping(
        &path,
        |e| !matches!(e, wakeviz_core::event::Event::Select(s) if s.at_waking()),
    );
    let agreement = |r: &serde_json::Value| {
        r["shadow"]["fidelity"]["agreement"]
            .as_f64()
            .expect("agreement")
    };
    assert_eq!(with["shadow"]["decision_time"], "sched_waking_with_inputs");
    assert!(with["shadow"]["decisions_with_waking_inputs"].as_u64() > Some(2000));
    assert_eq!(without["shadow"]["decision_time"], "sched_waking");
    let (a, b) = (agreement(&with), agreement(&without));
    assert!(a >= 0.99, "with the inputs read at sched_waking: {a}");
    assert!(a - b >= 0.05, "with {a}, without {b}");
    // They are no select calls: no scan is measured from them.
    assert_eq!(with["scan_latency"]["available"], false);
    assert_eq!(
        with["shadow"]["evaluated"], without["shadow"]["evaluated"],
        "the same placements are scored"
    );
}

/// A live capture in the NPS1-like VM guest (Debian 6.12.118, `select_idle_cpu` inlined) with
/// the idle-scan kprobes placed from that kernel's debug info, format 7: four unpinned
/// ping-pong pairs beside six CPU hogs on two LLCs, so SIS_UTIL mostly cuts the scan before its
/// first test. The measured scan and the shadow's comparison with it replay.
#[test]
fn a_format_7_recording_with_the_measured_scan_replays_with_its_figures() {
    let rel = "wakeviz-core/tests/fixtures/recordings/vm-nps1-scan-probes.wvz";
    check(rel, 7);
    let r = analysis_support::replay_report(&repo(rel));
    let src = r["scan_latency"]["source"].as_str().expect("source");
    assert!(src.contains("measured, debug-info probes"), "{src}");
    let m = &r["scan_latency"]["measured"];
    assert_eq!(m["calls"], 964);
    assert_eq!(m["scans"], 685);
    assert_eq!(
        m["by_cpus_tested"][0], 670,
        "scans cut before their first test"
    );
    // Only scans are timed.
    assert_eq!(r["scan_latency"]["overall"]["count"], 685);
    let sm = &r["shadow"]["scan_model"];
    assert_eq!(sm["model"], "sis_util");
    // Scoped like the measured section: every in-scope scan the probes saw was decided by the
    // model too.
    assert_eq!(sm["both_scanned"], 685);
    assert_eq!(sm["kernel_only"], 0);
    assert_eq!(sm["kernel_by_depth"], sm["model_by_depth"]);
}

/// Recordings made by the build `ba4be9f` or replayed by it, each beside the `--report json`
/// that build printed for it (`fixtures/golden/ba4be9f-*.report.json`): every value that
/// report has, this build replays the same (a fraction to within its last bits). Three kinds
/// of entry changed on purpose since, and only those are passed over: the schema's version,
/// the shadow's list of approximations (prose, which grew with the policies) and the rows of
/// zero count that later schemas leave out.
fn replays_as_ba4be9f_reported(rel: &str, name: &str, version: u32) {
    let (found, now) = report(&repo(rel));
    assert_eq!(found, version, "{rel}: format version");
    let golden = format!("wakeviz-core/tests/fixtures/golden/ba4be9f-{name}.report.json");
    let then: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo(&golden)).expect("ba4be9f's report"))
            .expect("json");
    let mut leaves = Vec::new();
    flatten(&then, String::new(), &mut leaves);
    assert!(leaves.len() > 1000, "{rel}: {} values", leaves.len());
    let mut differ = Vec::new();
    for (path, want) in &leaves {
        if path == "/schema_version" || path.starts_with("/shadow/approximations") {
            continue;
        }
        let got = now.pointer(path);
        if got.is_none() && empty_row(&then, path) {
            continue;
        }
        if !same(got, want) {
            differ.push(format!("{path}: ba4be9f {want}, now {got:?}"));
        }
    }
    assert!(
        differ.is_empty(),
        "{rel}: {} of {} values differ:\n{}",
        differ.len(),
        leaves.len(),
        differ.join("\n")
    );
}

/// An unpinned `perf bench sched pipe` that `ba4be9f` captured live on a kernel that refuses
/// fentry (format 2).
#[test]
fn a_recording_by_ba4be9f_replays_with_the_figures_ba4be9f_reported() {
    replays_as_ba4be9f_reported(
        "wakeviz-core/tests/fixtures/recordings/ba4be9f-pipe.wvz",
        "pipe",
        2,
    );
}

/// The VM suite's main recording as `ba4be9f`'s `cargo xtask vm-test --topology nps1` made it
/// (format 2, fentry select records, 4 rings, the NPS1-like guest on Debian's 6.12 kernel).
#[test]
fn a_vm_suite_recording_by_ba4be9f_replays_with_the_figures_ba4be9f_reported() {
    replays_as_ba4be9f_reported(
        "wakeviz-core/tests/fixtures/recordings/ba4be9f-vm-nps1.wvz",
        "vm-nps1",
        2,
    );
}

/// The demo (format 1), as `ba4be9f` replayed it.
#[test]
fn the_demo_replays_with_the_figures_ba4be9f_reported() {
    replays_as_ba4be9f_reported("wakeviz/assets/demo.wvz", "demo", 1);
}

/// Equal, a number to within its last bits (a mean summed in another order).
fn same(got: Option<&serde_json::Value>, want: &serde_json::Value) -> bool {
    match (got.and_then(serde_json::Value::as_f64), want.as_f64()) {
        (Some(g), Some(w)) if want.is_f64() => (g - w).abs() <= 1e-12 * w.abs().max(1.0),
        _ => got == Some(want),
    }
}

/// Every leaf of `v` with its JSON pointer.
fn flatten(v: &serde_json::Value, at: String, out: &mut Vec<(String, serde_json::Value)>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                flatten(
                    x,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        serde_json::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                flatten(x, format!("{at}/{i}"), out);
            }
        }
        _ => out.push((at, v.clone())),
    }
}

/// Whether `path` lies in an array row whose `count` was 0 in `report`.
fn empty_row(report: &serde_json::Value, path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    (1..parts.len()).any(|n| {
        parts[n].parse::<usize>().is_ok()
            && report
                .pointer(&parts[..=n].join("/"))
                .is_some_and(|row| row.get("count") == Some(&serde_json::json!(0)))
    })
}
