//! Per-wakeup records (`Analysis::keep_records`) against what the same analysis aggregates:
//! every placement comes out once, with the levels, latencies and shadow choices the reports
//! count, on hand-built streams and on synthetic recordings.
mod analysis_support;

use analysis_support::{W, batch, header, topology};
use wakeviz_core::{
    analysis::{Analysis, PlacementRecord, placement::LevelCounts},
    event::{Event, Switch},
    format::ScanSource,
    source::Batch,
    synth::{self, SynthConfig},
    topology::Level,
};

fn drain(a: &mut Analysis) -> Vec<PlacementRecord> {
    a.drain_records().collect()
}

#[test]
fn off_by_default_and_nothing_kept() {
    let h = header("zen3-nps1", ScanSource::SelectTaskRqFair);
    let mut a = Analysis::new(&h);
    a.on_batch(&batch(&[W::new(1_000, 0, 10, 1, 2).runs_after(500)]));
    a.flush_records();
    assert!(drain(&mut a).is_empty());
    assert_eq!(a.open_records(), 0);
}

#[test]
fn latency_known_given_up_and_flushed() {
    let h = header("zen3-nps1", ScanSource::SelectTaskRqFair);
    let mut a = Analysis::new(&h);
    a.keep_records(true);
    // pid 10 runs 500 ns after its wakeup; pid 11 never runs (flushed at the end); pid 12 is
    // switched out before any switch-in (it was running): given up at once.
    a.on_batch(&batch(&[
        W::new(1_000, 0, 10, 1, 2).select(300).runs_after(500),
        W::new(5_000, 0, 11, 1, 1),
        W::new(9_000, 3, 12, 3, 3),
    ]));
    a.on_event(&Event::Switch(Switch {
        ts_ns: 20_000,
        cpu: 3,
        prev_pid: 12,
        next_pid: 0,
        prev_state: 1,
        prev_prio: 120,
        next_prio: 120,
    }));
    let got = drain(&mut a);
    assert_eq!(got.len(), 2, "{got:?}");
    let r10 = &got[0];
    assert_eq!(r10.placement.pid, 10);
    assert_eq!(r10.wakeup_to_run_ns, Some(500));
    assert_eq!(r10.select_ns, Some(300));
    assert_eq!(r10.scan_ns, None);
    assert_eq!(r10.vs_waker, h.topology.level(0, 2));
    assert_eq!(r10.vs_prev, h.topology.level(1, 2));
    assert_eq!((got[1].placement.pid, got[1].wakeup_to_run_ns), (12, None));
    assert_eq!(got[1].vs_waker, Some(Level::SameCpu));
    // The shadow scored pid 10: one CPU per policy, the baseline's is the kernel's.
    let names = a.record_policies();
    assert_eq!(names[0], "observed");
    assert_eq!(r10.shadow.len(), names.len());
    assert_eq!(r10.shadow[0], Some(2));
    assert!(r10.shadow.iter().all(Option::is_some));

    assert_eq!(a.open_records(), 1);
    a.flush_records();
    let rest = drain(&mut a);
    assert_eq!(rest.len(), 1);
    assert_eq!(
        (rest[0].placement.pid, rest[0].wakeup_to_run_ns),
        (11, None)
    );
    assert_eq!(a.open_records(), 0);
}

#[test]
fn a_newer_wakeup_gives_up_the_older_record() {
    let h = header("zen3-nps1", ScanSource::None);
    let mut a = Analysis::new(&h);
    a.set_shadow(None);
    a.keep_records(true);
    a.on_batch(&batch(&[
        W::new(1_000, 0, 10, 1, 2),
        W::new(2_000, 0, 10, 2, 3).runs_after(70),
    ]));
    let got = drain(&mut a);
    let pairs: Vec<_> = got
        .iter()
        .map(|r| (r.placement.chosen_cpu, r.wakeup_to_run_ns, r.shadow.len()))
        .collect();
    assert_eq!(pairs, [(2, None, 0), (3, Some(70), 0)]);
}

/// Counts of the records by level and by latency equal the aggregates the report prints.
fn against_snapshot(name: &str, shadow: bool) {
    let t = topology(name);
    let cfg = SynthConfig::new(150_000, 11);
    let s = synth::events(&t, &cfg).unwrap();
    let h = synth::header(&t, &cfg, &s);
    let tasks = s.tasks().to_vec();
    let evs: Vec<_> = s.collect();
    let mut a = Analysis::new(&h);
    if !shadow {
        a.set_shadow(None);
    }
    a.keep_records(true);
    let mut recs = Vec::new();
    let mut first = true;
    for chunk in evs.chunks(4096) {
        a.on_batch(&Batch {
            tasks: if first { tasks.clone() } else { vec![] },
            events: chunk.to_vec(),
            ..Batch::default()
        });
        first = false;
        recs.extend(a.drain_records());
    }
    a.flush_records();
    recs.extend(a.drain_records());
    let snap = a.snapshot();
    let w = &snap.placement.wakeups;
    let (mut vw, mut vp, mut new_tasks, mut ran, mut run_sum) =
        (LevelCounts::default(), LevelCounts::default(), 0, 0, 0u64);
    let mut seen = std::collections::HashSet::new();
    for r in &recs {
        // Each placement exactly once.
        assert!(seen.insert((r.placement.pid, r.placement.wakeup_ts_ns)));
        if r.placement.new_task {
            new_tasks += 1;
            continue;
        }
        vw.add(r.vs_waker.unwrap());
        vp.add(r.vs_prev.unwrap());
        if let Some(v) = r.wakeup_to_run_ns {
            ran += 1;
            run_sum += v;
        }
    }
    assert!(w.count > 1000, "{name}: {}", w.count);
    assert_eq!(recs.len() as u64 - new_tasks, w.count, "{name}");
    assert_eq!(new_tasks, snap.placement.new_tasks.count, "{name}");
    assert_eq!(vw, w.vs_waker, "{name}");
    assert_eq!(vp, w.vs_prev, "{name}");
    let lat = &snap.wakeup_latency.overall.quantiles;
    assert_eq!(ran, lat.count, "{name}");
    let mean = run_sum as f64 / ran as f64;
    assert!(
        (mean - lat.mean).abs() <= lat.mean * 0.01,
        "{name}: {mean} vs {}",
        lat.mean
    );
    if shadow {
        let sh = snap.shadow.as_ref().unwrap();
        let scored: Vec<_> = recs.iter().filter(|r| r.shadow[0].is_some()).collect();
        assert_eq!(scored.len() as u64, sh.evaluated, "{name}");
        // The baseline is the kernel's choice; some other policy disagrees somewhere.
        assert!(scored.iter().all(|r| {
            r.shadow[0]
                == Some(
                    r.placement
                        .select
                        .map_or(r.placement.chosen_cpu, |s| s.chosen_cpu),
                )
        }));
        assert!(
            scored
                .iter()
                .any(|r| r.shadow.iter().any(|c| *c != r.shadow[0]))
        );
    }
}

#[test]
fn synth_records_match_the_report() {
    against_snapshot("zen3-nps2", true);
    against_snapshot("xeon-e5-2690v3", false);
}
