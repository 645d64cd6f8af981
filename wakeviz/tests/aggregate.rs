//! The in-kernel aggregate mode on the running kernel (needs root; CI runs as root): its
//! programs attached beside the streaming ones in one wakeviz process (`--aggregate-beside`),
//! so both count the same tracepoint hits, under a ping-pong pinned across CPUs 0 and 1, on
//! three topologies that put those two CPUs at three different levels (the kernel's
//! classification must equal the core's on each). The standalone mode runs too.
mod support;

use std::{path::Path, process::Command};

use serde_json::Value;
use wakeviz_core::topology::{
    Level, LevelMap,
    fixture::{CacheSpec, NodeSpec, SysfsSpec},
    from_sysfs,
};

const BIN: &str = env!("CARGO_BIN_EXE_wakeviz");

/// One live run at a time: the other test's workload would land in the few milliseconds
/// between the streaming and the aggregate attach and count on one side only.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn skip(why: &str) -> bool {
    if std::env::var_os("CI").is_some_and(|v| v == "true") {
        panic!("aggregate live test cannot run in CI: {why}");
    }
    eprintln!("SKIPPED aggregate live test: {why}");
    true
}

/// CPUs 0 and 1 as SMT siblings, as two cores of one LLC (this VM), or in two packages.
fn spec(kind: &str) -> SysfsSpec {
    let mut s = SysfsSpec::vm_2cpu();
    match kind {
        "smt" => {
            for c in &mut s.cpus {
                c.core_id = 0;
                c.siblings = (0..2).collect();
                for cache in &mut c.caches {
                    if cache.level < 3 {
                        cache.id = 0;
                        cache.shared = (0..2).collect();
                    }
                }
            }
        }
        "xpkg" => {
            for c in &mut s.cpus {
                c.package = c.cpu;
                c.core_id = 0;
                c.caches.retain(|k| k.level < 3);
                c.caches.push(CacheSpec {
                    level: 3,
                    kind: "Unified",
                    id: c.cpu,
                    shared: std::iter::once(c.cpu).collect(),
                });
            }
            s.nodes = (0..2)
                .map(|n| NodeSpec {
                    id: n,
                    cpus: std::iter::once(n).collect(),
                    distance: if n == 0 { vec![10, 32] } else { vec![32, 10] },
                })
                .collect();
        }
        _ => {}
    }
    s
}

fn run_json(args: &[&str], aggregate_out: &Path) -> (Value, Value, String) {
    let out = Command::new(BIN)
        .arg("--aggregate-beside")
        .arg(aggregate_out)
        // The in-kernel aggregates cannot leave wakeviz's own threads out; the streaming fold
        // must count them too for the two to be comparable.
        .arg("--include-self")
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "wakeviz failed:\n{stderr}");
    let streaming: Value = serde_json::from_slice(&out.stdout).unwrap();
    let aggregate: Value =
        serde_json::from_str(&std::fs::read_to_string(aggregate_out).unwrap()).unwrap();
    (streaming, aggregate, stderr)
}

/// `scale`: the run's wakeups and the events the stream reported dropped (ring buffer full on
/// a loaded machine), which the in-kernel aggregate counts and the stream cannot.
fn close(what: &str, s: u64, a: u64, scale: (u64, u64)) {
    // 1 % of the figure, or of the run's wakeups for small figures (a handful of background
    // wakeups fall into the few milliseconds between the two attaches).
    let (wakeups, dropped) = scale;
    let tol = (s.max(a) / 100).max(wakeups / 100).max(2) + dropped;
    assert!(
        s.abs_diff(a) <= tol,
        "{what}: streaming {s}, aggregate {a} (tolerance {tol}, {dropped} dropped by the stream)"
    );
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn aggregate_counts_equal_the_streaming_analysis() {
    if !support::root() {
        return;
    }
    if std::thread::available_parallelism().map_or(1, usize::from) < 2 {
        skip("needs two CPUs");
        return;
    }
    let _guard = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for kind in ["smt", "llc", "xpkg"] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("system");
        spec(kind).write(&root).unwrap();
        let topo = from_sysfs(&root).unwrap();
        let want = LevelMap::new(&topo).level(0, 1).unwrap();
        let expect = match kind {
            "smt" => Level::SmtSibling,
            "llc" => Level::SameLlc,
            _ => Level::CrossPackage,
        };
        assert_eq!(want, expect, "{kind}: the fixture is what it says");
        let out = dir.path().join("agg.json");
        let (s, a, stderr) = run_json(
            &[
                "--headless",
                "--no-function-probes",
                "--report",
                "json",
                "--topology",
                root.to_str().unwrap(),
                "--",
                BIN,
                "workload",
                "pingpong",
                "--waker-cpu",
                "0",
                "--wakee-cpu",
                "1",
                "--iterations",
                "100000",
            ],
            &out,
        );
        assert!(
            stderr.contains("aggregate programs beside the stream"),
            "{stderr}"
        );
        let wakeups = n(&s["placement"]["wakeups"]["count"]);
        assert!(wakeups >= 100_000, "{kind}: {wakeups} wakeups");
        let scale = (wakeups, n(&s["drops"]["total"]));
        for k in [
            "sched_waking",
            "sched_wakeup",
            "sched_wakeup_new",
            "sched_switch",
            "sched_migrate_task",
        ] {
            close(
                &format!("{kind} {k}"),
                n(&s["events"][k]),
                n(&a["events"][k]),
                scale,
            );
        }
        close(
            &format!("{kind} wakeups"),
            wakeups,
            n(&a["placement"]["wakeups"]["count"]),
            scale,
        );
        for rel in ["vs_waker", "vs_prev"] {
            for l in Level::ALL {
                let (sv, av) = (
                    &s["placement"]["wakeups"][rel][l.name()],
                    &a["placement"]["wakeups"][rel][l.name()],
                );
                // A level the fixture cannot have is null (not 0) in both reports.
                if sv.is_null() || av.is_null() {
                    assert_eq!(sv, av, "{kind} {rel} {}: null on one side only", l.name());
                    continue;
                }
                let (x, y) = (n(sv), n(av));
                close(&format!("{kind} {rel} {}", l.name()), x, y, scale);
            }
        }
        // The ping-pong's cross-CPU wakeups land at the fixture's level for both.
        let at = |v: &Value| n(&v["placement"]["wakeups"]["vs_waker"][want.name()]);
        assert!(
            at(&s) > wakeups / 2 && at(&a) > wakeups / 2,
            "{kind}: {} {}",
            at(&s),
            at(&a)
        );
        close(
            &format!("{kind} affine"),
            n(&s["placement"]["wakeups"]["affine"]),
            n(&a["placement"]["wakeups"]["affine"]),
            scale,
        );
        close(
            &format!("{kind} wakeup-to-run samples"),
            n(&s["wakeup_latency"]["overall"]["count"]),
            n(&a["wakeup_latency"]["overall"]["count"]),
            scale,
        );
        assert_eq!(a["scan_latency"]["available"], false);
        assert_eq!(a["drops"]["offered"]["total"], 0, "no ring-buffer traffic");
    }
}

#[test]
fn standalone_aggregate_mode_reports() {
    if !support::root() {
        return;
    }
    // Not beside the equality test: with this run's pinned workload competing on the same two
    // CPUs, that test's aggregate programs counted 2.6 % fewer events than its streaming ones
    // (cause not found yet; alone they agree within 0.15 %).
    let _guard = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let out = Command::new(BIN)
        .args([
            "--aggregate",
            "--report",
            "json",
            "--bpf-stats",
            "--",
            BIN,
            "workload",
            "pingpong",
        ])
        .args(["--iterations", "5000"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    support::assert_verifier_cost(&stderr, "agg_btf_sched_wakeup");
    assert!(stderr.contains("no ring-buffer traffic"), "{stderr}");
    assert!(
        !stderr.contains("FAILED"),
        "every aggregate program attaches here: {stderr}"
    );
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    // 5000 round trips: at least one wakeup each.
    assert!(n(&j["placement"]["wakeups"]["count"]) >= 5_000, "{j}");
    assert!(n(&j["wakeup_latency"]["overall"]["count"]) >= 5_000);
    assert_eq!(j["drops"]["delivered"], 0);
    assert_eq!(j["scan_latency"]["available"], false);
    assert!(
        j["recording"]["notes"].as_array().is_some_and(|v| v
            .iter()
            .any(|n| n.as_str().is_some_and(|s| s.contains("aggregate")))),
        "{j}"
    );
}
