//! The analysis on synthetic recordings (`synth`) of every fixture topology, against an
//! independent count from the generator's own record of what it placed where, classified with
//! `Topology::level` and LLC membership directly.
mod analysis_support;

use analysis_support::topology;
use wakeviz_core::{
    analysis::{Analysis, placement::LevelCounts},
    source::Batch,
    synth::{self, SynthConfig},
};

fn check(name: &str, events: u64) {
    let t = topology(name);
    let cfg = SynthConfig::new(events, 7);
    let mut s = synth::events(&t, &cfg).unwrap();
    s.record_truth();
    let h = synth::header(&t, &cfg, &s);
    let tasks = s.tasks().to_vec();
    let evs: Vec<_> = s.by_ref().collect();
    let mut truth = s.take_truth();
    let mut a = Analysis::new(&h);
    a.set_shadow(None);
    a.on_batch(&Batch {
        tasks,
        events: evs,
        ..Batch::default()
    });
    let snap = a.snapshot();
    let w = &snap.placement.wakeups;

    // The stream stops at exactly `events`: the last step's wakeups may be recorded in the
    // truth but cut from the stream. Truth is in sched_wakeup order, so they are its tail.
    assert_eq!(snap.drops.unmatched_wakeups, 0, "{name}");
    let cut = truth.len() as u64 - w.count;
    assert!(cut < 64, "{name}: {cut} wakeups missing");
    truth.truncate(w.count as usize);
    let (mut vw, mut vp) = (LevelCounts::default(), LevelCounts::default());
    let mut affine = 0;
    let llc = |c: u32| t.cpu(c).unwrap().llc;
    for p in &truth {
        vw.add(t.level(p.waker_cpu, p.chosen_cpu).unwrap());
        vp.add(t.level(p.prev_cpu, p.chosen_cpu).unwrap());
        affine += u64::from(
            p.chosen_cpu != p.prev_cpu
                && llc(p.chosen_cpu) == llc(p.waker_cpu)
                && llc(p.chosen_cpu) != llc(p.prev_cpu),
        );
    }
    assert!(truth.len() > 1000, "{name}: only {} wakeups", truth.len());
    assert_eq!(w.count, truth.len() as u64, "{name}: wakeups");
    assert_eq!(w.vs_waker, vw, "{name}: vs_waker");
    assert_eq!(w.vs_prev, vp, "{name}: vs_prev");
    assert_eq!(w.affine, affine, "{name}: affine");
    assert_eq!(w.unclassified, 0);
    assert_eq!(
        snap.placement
            .per_node
            .iter()
            .map(|g| g.counts.count)
            .sum::<u64>(),
        w.count
    );
    assert_eq!(
        snap.placement
            .per_llc
            .iter()
            .map(|g| g.counts.count)
            .sum::<u64>(),
        w.count
    );
    assert!(snap.scan_latency.available);
    assert!(snap.wakeup_latency.overall.quantiles.count > 0);
}

#[test]
fn zen3_all_nps_modes() {
    for name in ["zen3-nps1", "zen3-nps2", "zen3-nps4"] {
        check(name, 200_000);
    }
}

#[test]
fn xeon_irregular_and_vm() {
    for name in ["xeon-e5-2690v3", "irregular", "vm-2cpu"] {
        check(name, 100_000);
    }
}
