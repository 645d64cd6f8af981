//! The report: the JSON schema is pinned key by key (docs/reference/report-json.md describes it), and the
//! text report of a small hand-built stream is compared with a committed golden file
//! (`WAKEVIZ_BLESS=1` rewrites it after an intended change).
mod analysis_support;

use std::collections::BTreeSet;

use analysis_support::{W, batch, header, names};
use serde_json::Value;
use wakeviz_core::{
    analysis::{Analysis, report},
    format::{CaptureStats, ScanSource},
    topology::Level,
};

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .cloned()
        .collect()
}

fn set(k: &[&str]) -> BTreeSet<String> {
    k.iter().map(|s| (*s).to_string()).collect()
}

fn levels() -> BTreeSet<String> {
    Level::ALL.iter().map(|l| l.name().to_string()).collect()
}

/// A few seconds of a small Xeon workload: ping-pong on SMT siblings, an affine pull across
/// sockets, a migration within the LLC, a fork, and one wakeup whose sched_waking was lost.
fn small_stream(a: &mut Analysis) {
    let mut b = batch(&[
        W::new(1_000_000, 0, 100, 24, 24)
            .select(900)
            .runs_after(3_000),
        W::new(1_010_000, 24, 101, 0, 0)
            .select(1_100)
            .runs_after(2_500),
        W::new(1_020_000, 0, 100, 24, 24)
            .select(950)
            .runs_after(4_100),
        W::new(1_500_000_000, 0, 102, 12, 1)
            .select(5_200)
            .runs_after(40_000),
        W::new(1_600_000_000, 5, 103, 5, 7)
            .select(2_000)
            .runs_after(9_000),
        W::new(2_700_000_000, 13, 104, 13, 13).runs_after(700),
    ]);
    b.tasks = names(&[
        (100, "pinger"),
        (101, "ponger"),
        (102, "kworker/u96:1"),
        (103, "nginx"),
        (104, "sshd"),
    ]);
    b.stats = Some(CaptureStats {
        offered: wakeviz_core::event::PerKind::from_fn(|k| {
            [7, 7, 1, 6, 0, 5].get(k.index()).copied().unwrap_or(0)
        }),
        kernel_drops: 1,
        user_drops: 0,
        delivered: 26,
        select_unpaired: 0,
        ..Default::default()
    });
    a.on_batch(&b);
    let fork = wakeviz_core::event::Wake {
        ts_ns: 2_800_000_000,
        cpu: 3,
        pid: 105,
        target_cpu: 40,
        waker_pid: 104,
        prio: 120,
    };
    let lost = wakeviz_core::event::Wake {
        ts_ns: 2_900_000_000,
        cpu: 8,
        pid: 106,
        target_cpu: 8,
        waker_pid: 0,
        prio: 120,
    };
    a.on_batch(&wakeviz_core::source::Batch {
        tasks: vec![],
        events: vec![
            wakeviz_core::event::Event::WakeupNew(fork),
            wakeviz_core::event::Event::Wakeup(lost),
        ],
        ..Default::default()
    });
}

#[test]
fn json_schema_is_pinned() {
    let mut a = Analysis::new(&header("xeon-e5-2690v3", ScanSource::SelectTaskRqFair));
    small_stream(&mut a);
    let j = a.report_json();
    assert_eq!(keys(&j), set(&report::JSON_KEYS));
    assert_eq!(j["schema_version"], wakeviz_core::analysis::SCHEMA_VERSION);
    assert_eq!(
        keys(&j["recording"]),
        set(&[
            "format_version",
            "abi_version",
            "tool_version",
            "kernel_release",
            "hostname",
            "cpu_vendor",
            "start_ts_ns",
            "realtime_offset_ns",
            "ringbuf_bytes",
            "comm_redacted",
            "notes",
            "run",
            "workload",
            "capture_duration_ns"
        ])
    );
    assert_eq!(
        keys(&j["events"]),
        set(&[
            "sched_waking",
            "sched_wakeup",
            "sched_wakeup_new",
            "sched_switch",
            "sched_migrate_task",
            "select_task_rq_fair",
            "total"
        ])
    );
    assert_eq!(j["events"]["total"], 6 + 7 + 1 + 6 + 5);
    assert_eq!(
        keys(&j["drops"]),
        set(&[
            "kernel_drops",
            "user_drops",
            "total",
            "offered",
            "delivered",
            "select_unpaired",
            "decode_errors",
            "unmatched_wakeups",
            "probe_misses",
            "switch_gaps",
            "late_events",
            "evicted_task_entries"
        ])
    );
    assert_eq!(j["drops"]["unmatched_wakeups"], 1);
    assert!(
        j["probes"]
            .as_array()
            .is_some_and(|p| p.len() == 4 && p[0]["name"] == "sched_waking")
    );
    assert_eq!(
        keys(&j["topology"]),
        set(&[
            "summary",
            "nr_cpus",
            "packages",
            "nps_mode",
            "smt",
            "llc_level",
            "offline",
            "nodes",
            "memory_only_nodes",
            "llcs",
            "distances",
            "domain_rows",
            "levels"
        ])
    );
    assert_eq!(keys(&j["topology"]["levels"]), levels());
    assert_eq!(j["topology"]["levels"]["same_package"], false);
    assert_eq!(
        keys(&j["own_threads"]),
        set(&["tids", "left_out", "events", "wakeups"])
    );
    assert_eq!(j["topology"]["nps_mode"], "NPS1");
    assert_eq!(j["topology"]["nodes"][1]["cpus"], "12-23,36-47");
    assert_eq!(j["topology"]["distances"][0][1], 21);

    let p = &j["placement"];
    assert_eq!(
        keys(p),
        set(&[
            "filter",
            "affine_definition",
            "first_ts_ns",
            "last_ts_ns",
            "coverage",
            "wakeups",
            "new_tasks",
            "per_node",
            "per_llc",
            "per_cpu",
            "domain_table",
            "windows"
        ])
    );
    assert_eq!(
        keys(&p["per_cpu"][0]),
        set(&["cpu", "landed", "vs_waker", "vs_prev", "woke"])
    );
    let landed: u64 = p["per_cpu"]
        .as_array()
        .map(|a| a.iter().filter_map(|c| c["landed"].as_u64()).sum())
        .unwrap_or(0);
    assert_eq!(landed, 6, "every wakeup landed on a CPU of the topology");
    let counts = set(&[
        "count",
        "vs_waker",
        "vs_prev",
        "affine",
        "affine_by_waker_prev",
        "migrations",
        "migrations_by_level",
        "unclassified",
    ]);
    assert_eq!(
        keys(&p["coverage"]),
        set(&[
            "wakeups",
            "placed",
            "classified",
            "unclassified",
            "self_wakeups",
            "no_sched_waking",
            "shadow"
        ])
    );
    assert_eq!(
        keys(&p["coverage"]["shadow"]),
        set(&[
            "compared",
            "no_select",
            "runnable_at_waking",
            "fork_exec",
            "invalid_cpu"
        ])
    );
    assert_eq!(
        (
            p["coverage"]["wakeups"].as_u64(),
            p["coverage"]["placed"].as_u64()
        ),
        (Some(7), Some(6)),
        "one sched_wakeup lost its sched_waking"
    );
    assert_eq!(p["coverage"]["no_sched_waking"], 1);
    assert_eq!(keys(&p["wakeups"]), counts);
    assert_eq!(keys(&p["new_tasks"]), counts);
    for k in [
        "vs_waker",
        "vs_prev",
        "affine_by_waker_prev",
        "migrations_by_level",
    ] {
        assert_eq!(keys(&p["wakeups"][k]), levels(), "{k}");
    }
    assert_eq!(p["wakeups"]["count"], 6);
    assert_eq!(p["wakeups"]["vs_waker"]["smt_sibling"], 3);
    assert_eq!(p["wakeups"]["affine"], 1);
    assert_eq!(p["new_tasks"]["vs_waker"]["cross_package"], 1);
    let mut group = counts.clone();
    group.extend(set(&["id", "cpus"]));
    assert_eq!(keys(&p["per_node"][0]), group);
    assert_eq!(keys(&p["per_llc"][1]), group);
    assert_eq!(
        keys(&p["domain_table"][0]),
        set(&["name", "levels", "wakeups", "affine", "affine_observable"])
    );
    assert_eq!(keys(&p["windows"]), set(&["1s", "10s"]));
    assert_eq!(
        keys(&p["windows"]["1s"]),
        set(&["span_ns", "from_ns", "to_ns", "events", "placement"])
    );

    let summary = set(&[
        "count", "min", "p50", "p90", "p99", "p999", "max", "mean", "log2",
    ]);
    let s = &j["scan_latency"];
    assert_eq!(
        keys(s),
        set(&[
            "source",
            "available",
            "status",
            "log2_unit",
            "overall",
            "per_llc",
            "windows"
        ])
    );
    assert_eq!(keys(&s["overall"]), summary);
    assert_eq!(
        (s["log2_unit"].as_str(), s["available"].as_bool()),
        (Some("ns"), Some(true))
    );
    assert_eq!(keys(&s["per_llc"][0]), {
        let mut k = summary.clone();
        k.extend(set(&["id", "cpus"]));
        k
    });
    assert_eq!(keys(&s["windows"]), set(&["1s", "10s"]));
    assert_eq!(keys(&s["overall"]["log2"][0]), set(&["lo", "hi", "count"]));
    let w = &j["wakeup_latency"];
    assert_eq!(
        keys(w),
        set(&[
            "relation",
            "log2_unit",
            "overall",
            "by_level",
            "new_task",
            "windows"
        ])
    );
    assert_eq!(keys(&w["by_level"]), levels());
    assert_eq!(keys(&w["by_level"]["same_cpu"]), summary);
    assert_eq!(j["schedstat"], Value::Null);
    assert!(
        j["shadow"].is_object(),
        "the shadow evaluation is on by default"
    );

    a.set_shadow(None);
    assert_eq!(a.report_json()["shadow"], Value::Null);
}

/// The whole text report of a small stream, the shadow section included (insta snapshot:
/// `cargo insta review`, or `INSTA_UPDATE=always` and read the diff).
#[test]
fn golden_text_report() {
    let mut a = Analysis::new(&header("xeon-e5-2690v3", ScanSource::SelectTaskRqFair));
    small_stream(&mut a);
    let text = a.report_text();
    assert!(text.contains("== shadow policies"), "{text}");
    insta::assert_snapshot!("analysis_report_xeon", text);
}
