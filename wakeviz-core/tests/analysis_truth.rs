//! One truth per figure: what the placement figures cover and why the rest is not,
//! the same percentiles for the same samples, n/a / `null` for what does not exist, one figure
//! equal in the snapshot, the text report and the JSON, and wakeviz's own threads left out.
mod analysis_support;

use analysis_support::{W, batch, header, names};
use serde_json::Value;
use wakeviz_core::{
    analysis::{Analysis, Filter, report},
    event::{Event, Wake},
    format::{Recorder, RecorderConfig, ScanSource},
    source::{EventSource, Poll, ReplaySource},
    topology::Level,
};

/// A deterministic spread of latencies over four decades (µs to ms), as a busy machine gives.
fn spread(i: u64) -> u64 {
    let x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17);
    1_000 + (x % 9_000_000) * (1 + (x >> 60))
}

#[test]
fn the_same_samples_give_the_same_percentiles_in_all_and_in_a_level() {
    // zen3-nps1: CPU 0 -> 64 is cross_package. With a pid filter, `all` and `cross_package`
    // hold exactly the same wakeups (seen by a user: 2539 of them, two different p99.9s).
    let mut a = Analysis::new(&header("zen3-nps1", ScanSource::SelectTaskRqFair));
    a.set_filter(Some(Filter::Pid(77)));
    let ws: Vec<W> = (0..2539u64)
        .map(|i| {
            W::new(1_000_000 + i * 20_000_000, 0, 77, 64, 64)
                .select(200 + spread(i) % 50_000)
                .runs_after(spread(i))
        })
        .collect();
    a.on_batch(&batch(&ws));
    let s = a.snapshot();
    let wl = &s.wakeup_latency;
    let level = wl
        .by_level
        .0
        .iter()
        .find(|(l, _)| *l == Level::CrossPackage)
        .map(|(_, q)| q.quantiles)
        .unwrap();
    assert_eq!(wl.overall.quantiles.count, 2539);
    assert_eq!(level, wl.overall.quantiles, "all vs cross_package");
    // The scan side: every chosen CPU in one LLC, so that LLC holds every sample.
    let sc = &s.scan_latency;
    let llc = s
        .placement
        .per_llc
        .iter()
        .position(|g| g.counts.count > 0)
        .unwrap();
    assert_eq!(
        sc.per_llc[llc].latency.quantiles, sc.overall.quantiles,
        "all vs llc{llc}"
    );
}

#[test]
fn coverage_names_every_reason_and_the_shadow_covers_the_placed_subset() {
    let mut a = Analysis::new(&header("xeon-e5-2690v3", ScanSource::SelectTaskRqFair));
    let mut evs = batch(&[
        W::new(1_000, 0, 10, 1, 2).select(500),
        W::new(2_000, 0, 11, 1, 3).select(500),
        // No select record although the function probe is attached: no placement path.
        W::new(3_000, 0, 12, 4, 4),
    ]);
    let wake = |ts, pid, waker_pid| Wake {
        ts_ns: ts,
        cpu: 5,
        pid,
        target_cpu: 5,
        waker_pid,
        prio: 120,
    };
    // A task waking itself, and a sched_wakeup whose sched_waking was lost.
    evs.events.push(Event::Waking(wake(4_000, 13, 13)));
    evs.events.push(Event::Wakeup(wake(4_100, 13, 13)));
    evs.events.push(Event::Wakeup(wake(5_000, 14, 0)));
    a.on_batch(&evs);
    let s = a.snapshot();
    let c = s.placement.coverage;
    assert_eq!(
        (c.wakeups, c.placed, c.classified, c.unclassified),
        (5, 3, 3, 0)
    );
    assert_eq!((c.self_wakeups, c.no_sched_waking), (1, 1));
    assert_eq!(c.placed, s.placement.wakeups.count);
    let sc = c.shadow.expect("the shadow is on by default");
    assert_eq!((sc.compared, sc.no_select), (2, 1));
    assert_eq!(sc.compared + sc.excluded(), c.placed);
    let sh = s.shadow.as_ref().unwrap();
    assert_eq!(sh.policies[0].name, "observed");
    assert_eq!(
        sh.policies[0].evaluated, sc.compared,
        "the observed row covers `compared`"
    );
    let text = report::text(&s);
    assert!(
        text.contains(
            "classified 3 of 5 wakeups (60.0%); not classified: 1 no sched_waking, 1 self-wakeups"
        ),
        "{text}"
    );
    assert!(
        text.contains("left out: 1 no select_task_rq_fair (no placement path)"),
        "{text}"
    );
    assert!(
        text.contains("Covers the placed subset: 2 of 3 placed wakeups"),
        "{text}"
    );
    let j = report::json(&s);
    assert_eq!(j["placement"]["coverage"]["shadow"]["no_select"], 1);
    assert_eq!(j["placement"]["coverage"]["no_sched_waking"], 1);
}

#[test]
fn not_available_is_null_in_json_and_na_in_text_never_zero() {
    // Xeon E5: one LLC per node, one node per package: no same_node, no same_package pair.
    let mut a = Analysis::new(&header("xeon-e5-2690v3", ScanSource::None));
    a.on_batch(&batch(&[W::new(1_000, 0, 10, 0, 1).runs_after(5_000)]));
    let s = a.snapshot();
    assert!(!s.topology.level_exists(Level::SameNode));
    assert!(s.topology.level_exists(Level::SmtSibling));
    let j = report::json(&s);
    let wl = &j["wakeup_latency"];
    assert_eq!(wl["by_level"]["same_node"], Value::Null);
    assert_eq!(wl["by_level"]["same_package"], Value::Null);
    // An existing level without samples: count 0, every figure null.
    let xp = &wl["by_level"]["cross_package"];
    assert_eq!(xp["count"], 0);
    for k in ["min", "p50", "p90", "p99", "p999", "max", "mean"] {
        assert_eq!(xp[k], Value::Null, "cross_package {k}");
        assert_eq!(j["scan_latency"]["overall"][k], Value::Null, "scan {k}");
    }
    assert_eq!(wl["by_level"]["same_llc"]["p50"], 5_000);
    let vw = &j["placement"]["wakeups"]["vs_waker"];
    assert_eq!(vw["same_node"], Value::Null);
    assert_eq!(vw["cross_package"], 0, "possible and none: a real 0");
    assert_eq!(j["topology"]["levels"]["same_node"], false);
    assert_eq!(
        j["shadow"]["policies"]["observed"]["placement"]["vs_waker"]["same_package"],
        Value::Null
    );
    let text = report::text(&s);
    assert!(!text.contains("p50=0 "), "{text}");
    assert!(
        text.contains("same_node              n/a (no such CPU pair on this topology)"),
        "{text}"
    );
    assert!(
        text.contains("cross_package          n=0         n/a (no samples)"),
        "{text}"
    );
    assert!(text.contains("same_node n/a"), "{text}");
    assert!(!text.contains("same_node 0.0%"), "{text}");
}

#[test]
fn one_figure_is_equal_in_the_snapshot_the_text_and_the_json() {
    let mut a = Analysis::new(&header("zen3-nps1", ScanSource::SelectTaskRqFair));
    let ws: Vec<W> = (0..400u64)
        .map(|i| {
            let chosen = [0, 128, 5, 16, 64][i as usize % 5];
            W::new(1_000 + i * 1_000_000, 0, 100 + (i % 7) as u32, 0, chosen)
                .select(300 + i)
                .runs_after(spread(i))
        })
        .collect();
    a.on_batch(&batch(&ws));
    let s = a.snapshot();
    let j = report::json(&s);
    let text = report::text(&s);
    // Placed wakeups.
    let placed = s.placement.coverage.placed;
    assert_eq!(placed, 400);
    assert_eq!(j["placement"]["coverage"]["placed"], placed);
    assert_eq!(j["placement"]["wakeups"]["count"], placed);
    assert!(
        text.contains(&format!("== placement: {placed} wakeups")),
        "{text}"
    );
    // A level share.
    let w = &s.placement.wakeups.vs_waker;
    let llc = w.get(Level::SameLlc);
    assert_eq!(j["placement"]["wakeups"]["vs_waker"]["same_llc"], llc);
    let share = format!("{:.1}%", llc as f64 * 100.0 / w.total() as f64);
    let row = format!("  {:<14} {:>12} {:>8}", "same_llc", llc, share);
    assert!(text.contains(&row), "{row:?} in {text}");
    // The wakeup-to-run p99.
    let p99 = s.wakeup_latency.overall.quantiles.p99;
    assert_eq!(j["wakeup_latency"]["overall"]["p99"], p99);
    let line = text
        .lines()
        .skip_while(|l| !l.starts_with("== wakeup-to-run latency"))
        .find(|l| l.trim_start().starts_with("overall"))
        .unwrap();
    assert!(
        line.contains(&format!("p99={:<9}", report::human_ns(p99))),
        "{line}"
    );
}

#[test]
fn humanised_units() {
    assert_eq!(report::human_ns(850), "850ns");
    assert_eq!(report::human_ns(1_573_887), "1.57ms");
    assert_eq!(report::human_ns(12_345), "12.3µs");
    assert_eq!(report::human_ns(233_046_015), "233ms");
    assert_eq!(report::human_ns(2_330_000_000), "2.33s");
}

/// pid 500 is wakeviz's main thread, 501 its drain thread.
fn own_stream(a: &mut Analysis) {
    let mut b = batch(&[
        W::new(1_000, 0, 10, 1, 2).select(400).runs_after(1_000),
        W::new(2_000, 0, 501, 1, 3).select(400).runs_after(1_000),
        W {
            waker_pid: 500,
            ..W::new(3_000, 0, 11, 1, 4).select(400).runs_after(1_000)
        },
    ]);
    b.tasks = names(&[
        (10, "app"),
        (11, "app"),
        (500, "wakeviz"),
        (501, "wakeviz-drain"),
    ]);
    a.on_batch(&b);
}

#[test]
fn own_threads_are_left_out_unless_included() {
    let mut h = header("xeon-e5-2690v3", ScanSource::SelectTaskRqFair);
    h.run.own_tids = vec![500, 501];
    let mut a = Analysis::new(&h);
    own_stream(&mut a);
    let s = a.snapshot();
    assert_eq!(s.placement.wakeups.count, 1, "only pid 10's wakeup");
    assert_eq!(s.wakeup_latency.overall.quantiles.count, 1);
    assert_eq!(s.scan_latency.overall.quantiles.count, 1);
    let o = &s.own_threads;
    assert!(o.left_out);
    // Two wakeups, each a sched_waking, a select and a sched_wakeup.
    assert_eq!((o.wakeups, o.events), (2, 6));
    assert_eq!(s.events.total(), 3 * 4, "event counts keep everything");
    let sh = s.shadow.as_ref().unwrap();
    assert_eq!(
        sh.policies[0].evaluated, 1,
        "the shadow rows leave them out too"
    );
    assert!(
        report::text(&s).contains("own threads (2 tids) left out: 6 events, 2 wakeups"),
        "{}",
        report::text(&s)
    );

    h.run.include_own = true;
    let mut all = Analysis::new(&h);
    own_stream(&mut all);
    let s = all.snapshot();
    assert_eq!(s.placement.wakeups.count, 3);
    assert!(!s.own_threads.left_out);
    assert_eq!(s.own_threads.wakeups, 0);
}

#[test]
fn own_threads_survive_a_recording_and_old_recordings_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("own.wvz");
    let mut h = header("xeon-e5-2690v3", ScanSource::SelectTaskRqFair);
    h.run.own_tids = vec![500, 501];
    h.run.include_own = true; // never recorded: the reader decides
    let f = std::fs::File::create(&path).unwrap();
    let mut r = Recorder::new(f, &h, RecorderConfig::default()).unwrap();
    let mut b = batch(&[W::new(2_000, 0, 501, 1, 3).select(400)]);
    b.events
        .extend(batch(&[W::new(1_000, 0, 10, 1, 2).select(400)]).events);
    for e in &b.events {
        r.push(e).unwrap();
    }
    r.finish(&Default::default()).unwrap();
    let mut src = ReplaySource::open(&path).unwrap();
    assert_eq!(src.header().run.own_tids, [500, 501]);
    assert!(!src.header().run.include_own);
    let mut a = Analysis::new(src.header());
    while let Ok(Poll::Batch(b)) = src.poll(std::time::Duration::ZERO) {
        a.on_batch(&b);
    }
    let s = a.snapshot();
    assert_eq!(s.placement.wakeups.count, 1);
    assert_eq!(s.own_threads.wakeups, 1);
    // A header written before the field existed.
    let old: wakeviz_core::run::RunMeta = serde_json::from_str(r#"{"label":"tip"}"#).unwrap();
    assert!(old.own_tids.is_empty());
}
