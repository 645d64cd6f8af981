//! Scenario tests: hand-built streams on every fixture topology, each wakeup's right levels
//! written down by hand from the machine's layout (not computed with `Topology::level`).
mod analysis_support;

use analysis_support::{W, batch, header, names};
use wakeviz_core::{
    analysis::{Analysis, Filter, placement::LevelCounts},
    event::{Event, SchedstatSample, Wake},
    format::ScanSource,
    source::Batch,
    topology::Level::{self, *},
};

/// (waker, prev, chosen, vs_waker, vs_prev, affine)
type Case = (u32, u32, u32, Level, Level, bool);

fn run_cases(topo: &str, cases: &[Case]) -> Analysis {
    let h = header(topo, ScanSource::SelectTaskRqFair);
    let mut a = Analysis::new(&h);
    let ws: Vec<W> = cases
        .iter()
        .enumerate()
        .map(|(i, &(w, p, c, ..))| W::new(1_000 * (i as u64 + 1), w, 100 + i as u32, p, c))
        .collect();
    a.on_batch(&batch(&ws));
    let s = a.snapshot();
    let mut vw = LevelCounts::default();
    let mut vp = LevelCounts::default();
    let mut mig = LevelCounts::default();
    for &(_, p, c, lw, lp, _) in cases {
        vw.add(lw);
        vp.add(lp);
        if p != c {
            mig.add(lp);
        }
    }
    let aff = cases.iter().filter(|c| c.5).count() as u64;
    let got = &s.placement.wakeups;
    assert_eq!(got.count, cases.len() as u64, "{topo}");
    assert_eq!(got.vs_waker, vw, "{topo}: vs_waker");
    assert_eq!(got.vs_prev, vp, "{topo}: vs_prev");
    assert_eq!(got.migrations_by_level, mig, "{topo}: migrations");
    assert_eq!(got.affine, aff, "{topo}: affine");
    assert_eq!(got.unclassified, 0);
    // One at a time too, so a compensating pair of errors cannot hide.
    for (i, &(w, p, c, lw, lp, af)) in cases.iter().enumerate() {
        let mut one = Analysis::new(&h);
        one.on_batch(&batch(&[W::new(10, w, 7, p, c)]));
        let s = one.snapshot();
        let g = &s.placement.wakeups;
        assert_eq!(
            (g.vs_waker.get(lw), g.vs_prev.get(lp), g.affine == 1),
            (1, 1, af),
            "{topo} case {i}: {w}->{c} prev {p}"
        );
    }
    a
}

#[test]
fn zen3_nps1() {
    run_cases(
        "zen3-nps1",
        &[
            (0, 0, 0, SameCpu, SameCpu, false),
            (0, 128, 128, SmtSibling, SameCpu, false),
            (0, 64, 5, SameLlc, CrossPackage, true),
            (0, 8, 16, SameNode, SameNode, false),
            (0, 32, 64, CrossPackage, CrossPackage, false),
            (3, 40, 131, SmtSibling, SameNode, true),
            (100, 255, 254, SameNode, SameLlc, false),
        ],
    );
}

#[test]
fn zen3_nps2_same_node_and_same_package_differ() {
    let a = run_cases(
        "zen3-nps2",
        &[
            (0, 40, 8, SameNode, SamePackage, false),
            (0, 40, 1, SameLlc, SamePackage, true),
            (0, 100, 2, SameLlc, CrossPackage, true),
            (32, 0, 160, SmtSibling, SamePackage, true),
            (0, 159, 31, SameNode, SmtSibling, false),
            (64, 96, 193, SameLlc, SamePackage, true),
        ],
    );
    let s = a.snapshot();
    let names: Vec<&str> = s.placement.domain_table.iter().map(|r| r.name).collect();
    assert_eq!(
        names,
        [
            "SMT",
            "LLC",
            "NODE",
            "NUMA-in-package",
            "NUMA-cross-package"
        ]
    );
    let row = |n: &str| {
        s.placement
            .domain_table
            .iter()
            .find(|r| r.name == n)
            .map(|r| (r.wakeups, r.affine))
            .unwrap()
    };
    // Affine wakeups are listed under the waker -> prev relation (the kernel's wake_affine domain).
    assert_eq!(row("SMT"), (1, 0));
    assert_eq!(row("LLC"), (3, 0));
    assert_eq!(row("NODE"), (2, 0));
    assert_eq!(row("NUMA-in-package"), (0, 3));
    assert_eq!(row("NUMA-cross-package"), (0, 1));
    assert_eq!(s.topology.nps_mode, "NPS2");
}

#[test]
fn zen3_nps4_per_node_and_per_llc() {
    let a = run_cases(
        "zen3-nps4",
        &[
            (0, 16, 8, SameNode, SamePackage, false),
            (0, 16, 143, SameNode, SamePackage, false),
            (20, 5, 17, SameLlc, SamePackage, true),
            (0, 200, 200, CrossPackage, SameCpu, false),
            (0, 39, 32, SamePackage, SameLlc, false),
            (16, 0, 144, SmtSibling, SamePackage, true),
        ],
    );
    let s = a.snapshot();
    let per_node: Vec<(u32, u64)> = s
        .placement
        .per_node
        .iter()
        .map(|g| (g.id, g.counts.count))
        .collect();
    assert_eq!(
        per_node,
        [
            (0, 4),
            (1, 2),
            (2, 0),
            (3, 0),
            (4, 0),
            (5, 0),
            (6, 0),
            (7, 0)
        ]
    );
    let llc = |cpu: u32| {
        s.placement
            .per_llc
            .iter()
            .find(|g| {
                s.topology
                    .llcs
                    .iter()
                    .any(|l| l.id == g.id && l.cpus.contains(cpu))
            })
            .unwrap()
    };
    assert_eq!(llc(8).counts.count, 2); // chosen 8 and 143 share LLC 1
    assert_eq!(llc(17).counts.count, 2); // 17 and 144
    assert_eq!(llc(17).counts.affine, 2);
    assert_eq!(llc(72).counts.count, 1); // 200 = sibling of 72
    assert_eq!(
        s.placement
            .per_llc
            .iter()
            .map(|g| g.counts.count)
            .sum::<u64>(),
        6
    );
}

#[test]
fn xeon() {
    let a = run_cases(
        "xeon-e5-2690v3",
        &[
            (0, 24, 24, SmtSibling, SameCpu, false),
            (0, 12, 11, SameLlc, CrossPackage, true),
            (0, 5, 36, CrossPackage, CrossPackage, false),
            (13, 13, 37, SmtSibling, SmtSibling, false),
            (47, 0, 23, SmtSibling, CrossPackage, true),
        ],
    );
    let s = a.snapshot();
    let names: Vec<&str> = s.placement.domain_table.iter().map(|r| r.name).collect();
    assert_eq!(names, ["SMT", "LLC(MC)", "NUMA"]);
}

#[test]
fn irregular() {
    let a = run_cases(
        "irregular",
        &[
            (0, 1, 8, SmtSibling, SameNode, true),
            (16, 19, 17, SameLlc, SamePackage, true),
            (0, 41, 40, CrossPackage, SmtSibling, false),
            (2, 3, 9, SameLlc, SameLlc, false),
            (41, 16, 19, SameLlc, SamePackage, true),
        ],
    );
    // The offline CPU 10 and the absent CPU 5 classify as nothing, never as a wrong level.
    let mut b = Analysis::new(&header("irregular", ScanSource::None));
    b.on_batch(&batch(&[W::new(10, 0, 5, 10, 0), W::new(20, 5, 6, 0, 1)]));
    let s = b.snapshot();
    assert_eq!(
        (s.placement.wakeups.count, s.placement.wakeups.unclassified),
        (2, 2)
    );
    assert_eq!(s.placement.wakeups.vs_waker.total(), 0);
    drop(a);
}

#[test]
fn vm_2cpu() {
    run_cases(
        "vm-2cpu",
        &[
            (0, 1, 0, SameCpu, SameLlc, false),
            (0, 1, 1, SameLlc, SameCpu, false),
            (1, 1, 0, SameLlc, SameLlc, false),
        ],
    );
}

#[test]
fn new_tasks_are_reported_apart_from_wakeups() {
    let mut a = Analysis::new(&header("zen3-nps1", ScanSource::None));
    let new = Wake {
        ts_ns: 50,
        cpu: 3,
        pid: 900,
        target_cpu: 70,
        waker_pid: 1,
        prio: 120,
    };
    a.on_batch(&Batch {
        events: vec![Event::WakeupNew(new)],
        ..Batch::default()
    });
    a.on_batch(&batch(&[W::new(100, 0, 5, 0, 1)]));
    let s = a.snapshot();
    assert_eq!(s.placement.wakeups.count, 1);
    assert_eq!(s.placement.new_tasks.count, 1);
    assert_eq!(s.placement.new_tasks.vs_waker.get(CrossPackage), 1);
    assert_eq!(
        s.placement
            .domain_table
            .iter()
            .map(|r| r.wakeups)
            .sum::<u64>(),
        1
    );
}

#[test]
fn wakeup_latency_by_waker_level() {
    let mut a = Analysis::new(&header("zen3-nps1", ScanSource::None));
    a.on_batch(&batch(&[
        W::new(1_000, 0, 10, 0, 0).runs_after(2_000),
        W::new(2_000, 0, 11, 5, 128).runs_after(4_000),
        W::new(3_000, 0, 12, 5, 64).runs_after(1_000_000),
        W::new(4_000, 0, 13, 5, 64), // never runs within the stream
    ]));
    let s = a.snapshot();
    let wl = &s.wakeup_latency;
    assert_eq!(wl.overall.quantiles.count, 3);
    let q = |l: Level| {
        wl.by_level
            .0
            .iter()
            .find(|(x, _)| *x == l)
            .unwrap()
            .1
            .quantiles
    };
    assert_eq!((q(SameCpu).count, q(SameCpu).min), (1, 2_000));
    assert_eq!((q(SmtSibling).count, q(SmtSibling).min), (1, 4_000));
    assert_eq!(q(CrossPackage).count, 1);
    assert!(
        (990_000..=1_010_000).contains(&q(CrossPackage).max),
        "per-level histograms are 1% precise"
    );
    assert_eq!(a.pending_wakeups(), 1);
    // Log2 buckets in µs: 2 µs, 4 µs, ~1 ms.
    let b: Vec<(u64, u64)> = wl
        .overall
        .log2
        .iter()
        .filter(|b| b.count > 0)
        .map(|b| (b.lo, b.count))
        .collect();
    assert_eq!(b, [(2, 1), (4, 1), (512, 1)]);
}

#[test]
fn scan_latency_overall_per_llc_and_unavailable() {
    let mut a = Analysis::new(&header("xeon-e5-2690v3", ScanSource::SelectTaskRqFair));
    a.on_batch(&batch(&[
        W::new(1_000, 0, 10, 0, 1).select(800),
        W::new(2_000, 0, 11, 0, 2).select(1_600),
        W::new(3_000, 0, 12, 0, 13).select(3_200),
    ]));
    let s = a.snapshot();
    let sc = &s.scan_latency;
    assert!(sc.available && sc.status.is_none());
    assert!(sc.source.starts_with("select_task_rq_fair duration"));
    assert_eq!(
        (sc.overall.quantiles.count, sc.overall.quantiles.min),
        (3, 800)
    );
    let per: Vec<u64> = sc
        .per_llc
        .iter()
        .map(|l| l.latency.quantiles.count)
        .collect();
    assert_eq!(per, [2, 1]);
    assert_eq!(sc.windows.w1s.quantiles.count, 3);
    let text = wakeviz_core::analysis::report::text(&s);
    assert!(text.contains("[512, 1K)"), "{text}");

    let mut t = Analysis::new(&header("xeon-e5-2690v3", ScanSource::None));
    t.on_batch(&batch(&[W::new(1_000, 0, 10, 0, 1)]));
    let s = t.snapshot();
    assert!(!s.scan_latency.available);
    assert_eq!(
        s.scan_latency.status,
        Some("unavailable: tracepoint-only mode")
    );
    assert!(wakeviz_core::analysis::report::text(&s).contains("unavailable: tracepoint-only mode"));
}

#[test]
fn filter_by_comm_and_pid() {
    let mut a = Analysis::new(&header("zen3-nps1", ScanSource::SelectTaskRqFair));
    a.set_filter(Some("nginx".parse::<Filter>().unwrap()));
    let mut b = batch(&[
        W::new(1_000, 0, 10, 0, 1).select(500).runs_after(100),
        W::new(2_000, 0, 11, 0, 64).select(700).runs_after(100),
        W::new(3_000, 0, 12, 0, 2),
    ]);
    b.tasks = names(&[(10, "nginx: worker"), (11, "postgres"), (12, "nginx")]);
    a.on_batch(&b);
    let s = a.snapshot();
    assert_eq!(s.placement.filter.as_deref(), Some("comm:nginx"));
    assert_eq!(s.placement.wakeups.count, 2);
    assert_eq!(s.placement.wakeups.vs_waker.get(CrossPackage), 0);
    assert_eq!(s.scan_latency.overall.quantiles.count, 1);
    assert_eq!(s.wakeup_latency.overall.quantiles.count, 1);
    // Event counts ignore the filter.
    assert_eq!(s.events.total(), 3 + 3 + 2 + 2);

    a.set_filter(Some(Filter::Pid(11)));
    a.on_batch(&batch(&[
        W::new(4_000, 0, 11, 0, 64),
        W::new(5_000, 0, 10, 0, 1),
    ]));
    let s = a.snapshot();
    assert_eq!(s.placement.wakeups.count, 1);
    assert_eq!(s.placement.wakeups.vs_waker.get(CrossPackage), 1);
}

#[test]
fn rolling_windows_follow_stream_time() {
    let mut a = Analysis::new(&header("vm-2cpu", ScanSource::None));
    // One wakeup every 100 ms for 20 s.
    let ws: Vec<W> = (0..200)
        .map(|i| W::new(i * 100_000_000, 0, 10 + (i % 5) as u32, 1, 0))
        .collect();
    a.on_batch(&batch(&ws));
    let s = a.snapshot();
    assert_eq!(s.placement.wakeups.count, 200);
    let w = &s.placement.windows;
    assert_eq!(w.w1s.span_ns, 1_000_000_000);
    assert_eq!(w.w1s.placement.count, 10);
    assert_eq!(w.w10s.placement.count, 100);
    assert!(w.w10s.to_ns >= 19_900_000_000);
}

#[test]
fn memory_is_bounded_by_tasks_not_events() {
    let mut a = Analysis::new(&header("vm-2cpu", ScanSource::None));
    for round in 0..20u64 {
        let ws: Vec<W> = (0..5_000u64)
            .map(|i| {
                W::new(
                    round * 1_000_000_000 + i * 1_000,
                    0,
                    10 + (i % 50) as u32,
                    1,
                    (i % 2) as u32,
                )
                .runs_after(500)
            })
            .collect();
        a.on_batch(&batch(&ws));
    }
    assert_eq!(a.snapshot().placement.wakeups.count, 100_000);
    assert_eq!(a.pending_wakeups(), 0);
}

/// A version-15 `/proc/schedstat` of `cpus` CPUs without domains, CPU 0 having counted
/// `count` wakeups of which `local` stayed on it.
fn schedstat_text(cpus: u32, count: u64, local: u64) -> String {
    let mut t = String::from("version 15\ntimestamp 100\n");
    for c in 0..cpus {
        let (n, l) = if c == 0 { (count, local) } else { (0, 0) };
        t.push_str(&format!("cpu{c} 0 0 0 0 {n} {l} 0 0 0\n"));
    }
    t
}

fn sampled(ts_ns: u64, count: u64, local: u64, ws: &[W]) -> Batch {
    Batch {
        schedstat: vec![SchedstatSample {
            ts_ns,
            text: schedstat_text(2, count, local),
        }],
        ..batch(ws)
    }
}

/// wakeviz's side of the kernel counters: (ttwu_count, ttwu_local) of CPU 0 as wakeviz
/// counted them between the first and the latest sample.
fn ours(a: &Analysis) -> Option<(u64, u64, u64, u64)> {
    let c = a.snapshot().schedstat?;
    let r = c.per_cpu.iter().find(|r| r.cpu == 0)?;
    Some((r.wakeviz_count, r.ttwu_count, r.wakeviz_local, r.ttwu_local))
}

#[test]
fn schedstat_samples_in_the_stream_bound_the_counted_wakeups_by_time() {
    let mut a = Analysis::new(&header("vm-2cpu", ScanSource::None));
    // Before the first sample: the kernel was not counting yet (each sched_wakeup comes 100 ns
    // after its sched_waking; the placement's time is the sched_wakeup's).
    a.on_batch(&batch(&[W::new(1_000, 0, 10, 0, 0)]));
    a.on_batch(&sampled(
        2_000,
        100,
        50,
        &[
            // Read from a ring after the sample but timed before it: not counted.
            W::new(1_500, 0, 11, 0, 0),
            W::new(2_000, 0, 12, 0, 0),
            W::new(3_000, 0, 13, 0, 1),
        ],
    ));
    assert_eq!(ours(&a), None, "one sample compares nothing");
    a.on_batch(&batch(&[
        W::new(4_000, 0, 14, 0, 0),
        W::new(4_001, 0, 15, 0, 0),
    ]));
    // The second sample: everything delivered before it happened before it; what comes after
    // it is counted by its time.
    a.on_batch(&sampled(4_150, 104, 53, &[W::new(5_000, 0, 16, 0, 0)]));
    assert_eq!(ours(&a), Some((4, 4, 3, 3)));
    a.on_batch(&batch(&[W::new(4_020, 0, 17, 0, 1)]));
    assert_eq!(
        ours(&a),
        Some((5, 4, 3, 3)),
        "late but timed before the sample"
    );
    a.on_batch(&sampled(6_000, 106, 54, &[]));
    assert_eq!(
        ours(&a),
        Some((6, 6, 4, 4)),
        "the wakeup after the second sample joins"
    );
    let s = a.snapshot();
    assert_eq!(s.schedstat.as_ref().map(|c| c.flagged), Some(0));
    // The placement figures still cover the whole capture.
    assert_eq!(s.placement.wakeups.count, 8);
}

#[test]
fn a_schedstat_sample_that_does_not_parse_is_named_not_compared() {
    let mut a = Analysis::new(&header("vm-2cpu", ScanSource::None));
    a.on_batch(&sampled(1_000, 1, 1, &[]));
    a.on_batch(&Batch {
        schedstat: vec![SchedstatSample {
            ts_ns: 2_000,
            text: "version 99\n".into(),
        }],
        ..Batch::default()
    });
    let s = a.snapshot();
    assert_eq!(s.schedstat, None);
    assert_eq!(
        s.schedstat_error.as_deref(),
        Some("schedstat version 99 is not supported (15, 16 and 17 are)")
    );
}
