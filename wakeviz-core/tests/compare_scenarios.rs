//! `compare` on synthetic recordings whose difference is known: the generator's
//! `cross_package_ppm` knob moves a set share of the wakeups placed in the waker's LLC to
//! another package, `scan_scale_pct` scales the scan latency. Each recording is written and
//! read back through the recording format, as `wakeviz diff` does.
mod analysis_support;

use analysis_support::topology;
use wakeviz_core::{
    analysis::{Analysis, Snapshot},
    compare::{self, Group, Section, gate},
    format::Reader,
    source::{EventSource, Poll, ReplaySource},
    synth::{self, SynthConfig},
    topology::Topology,
};

const EVENTS: u64 = 400_000;
/// Short busy/idle phases, so that one run averages over many of them (the default 40 ms gives
/// a 0.1 s run three phases, and runs of one family differ by several points).
const PHASE_NS: u64 = 4_000_000;

fn run(t: &Topology, seed: u64, ppm: u32, scan_pct: u32) -> Snapshot {
    let mut cfg = SynthConfig::new(EVENTS, seed);
    cfg.phase_ns = PHASE_NS;
    cfg.cross_package_ppm = ppm;
    cfg.scan_scale_pct = scan_pct;
    let mut buf = Vec::new();
    synth::generate(t, &cfg, &mut buf).unwrap();
    let r = Reader::new(std::io::Cursor::new(buf), std::path::Path::new("synth.wvz")).unwrap();
    let mut src = ReplaySource::new(r);
    let mut a = Analysis::new(src.header());
    a.set_shadow(None);
    loop {
        match src.poll(std::time::Duration::ZERO).unwrap() {
            Poll::Batch(b) => a.on_batch(&b),
            Poll::Pending => {}
            Poll::End => break,
        }
    }
    a.snapshot()
}

fn group(name: &str, t: &Topology, seeds: &[u64], ppm: u32, scan_pct: u32) -> Group {
    Group {
        name: name.into(),
        files: seeds.iter().map(|s| format!("seed{s}")).collect(),
        runs: seeds.iter().map(|&s| run(t, s, ppm, scan_pct)).collect(),
    }
}

fn share(s: &Snapshot, level: usize) -> f64 {
    let w = &s.placement.wakeups.vs_waker;
    w.0[level] as f64 * 100.0 / w.total() as f64
}

/// Share of wakeups the generator moved across packages, from its ground truth (the same seed
/// gives the same stream; the stream is cut at `EVENTS`, its truth at the analysed count).
fn moved_share(t: &Topology, seed: u64, ppm: u32) -> f64 {
    let mut cfg = SynthConfig::new(EVENTS, seed);
    cfg.phase_ns = PHASE_NS;
    cfg.cross_package_ppm = ppm;
    let mut s = synth::events(t, &cfg).unwrap();
    s.record_truth();
    let n = s
        .by_ref()
        .filter(|e| matches!(e, wakeviz_core::event::Event::Wakeup(_)))
        .count();
    let truth = s.take_truth();
    let truth = &truth[..n.min(truth.len())];
    truth.iter().filter(|p| p.moved_cross_package).count() as f64 * 100.0 / truth.len() as f64
}

fn holds(r: &compare::DiffReport, c: &str) -> bool {
    gate::evaluate(r, &gate::parse(c).unwrap()).unwrap().holds()
}

const CROSS: &str = "placement.vs_waker.cross_package.share";

#[test]
fn a_known_move_across_packages_is_reported_and_marked() {
    let t = topology("xeon-e5-2690v3");
    let base = group("base", &t, &[1, 2, 3], 0, 100);
    let new = group("new", &t, &[4, 5, 6], 100_000, 100);
    let r = compare::diff(&[base.clone(), new.clone()], &[]);
    println!("{}", compare::text::render(&r));
    let row = r.row(CROSS).unwrap();
    // The report's means are the runs' own shares, averaged.
    let mean = |g: &Group| g.runs.iter().map(|s| share(s, 5)).sum::<f64>() / g.runs.len() as f64;
    let (b, n) = (row.groups[0].mean.unwrap(), row.groups[1].mean.unwrap());
    assert!((b - mean(&base)).abs() < 1e-9 && (n - mean(&new)).abs() < 1e-9);
    // The knob's own moves (the generator's record), as a share of the new runs' wakeups: the
    // cross-package share grows by at least that, and not by much more (a task moved away is
    // then woken from there, so some of its partner's wakeups follow it across).
    let moved = [4u64, 5, 6]
        .iter()
        .map(|&seed| moved_share(&t, seed, 100_000))
        .sum::<f64>()
        / 3.0;
    let got = row.groups[1].change.unwrap();
    assert!(moved > 5.0, "the knob moved {moved:.2} % of the wakeups");
    assert!(
        got > moved * 0.9 && got < moved * 2.5,
        "cross-package share moved {got:.2} pt; the knob itself moved {moved:.2} % of wakeups"
    );
    assert!(row.groups[1].significant, "{row:?}");
    assert!(holds(&r, &format!("{CROSS} > +2pt")));
    assert!(!holds(&r, &format!("{CROSS} > +{}pt", got * 2.0)));
    assert!(
        holds(&r, "placement.vs_waker.same_llc.share < -1pt")
            || holds(&r, "placement.vs_waker.same_cpu.share < -1pt")
    );
}

#[test]
fn groups_of_one_family_mark_nothing() {
    let t = topology("xeon-e5-2690v3");
    let base = group("base", &t, &[1, 2, 3], 0, 100);
    let new = group("new", &t, &[4, 5, 6], 0, 100);
    let r = compare::diff(&[base, new], &[]);
    let text = compare::text::render(&r);
    println!("{text}");
    assert!(r.test.performed && r.test.comparisons > 50);
    let marked: Vec<&str> = r
        .rows
        .iter()
        .filter(|row| row.groups.iter().any(|c| c.significant))
        .map(|row| row.name.as_str())
        .collect();
    assert!(marked.is_empty(), "noise marked as a change: {marked:?}");
    assert!(!text.contains(" *"), "{text}");
    assert!(!holds(&r, &format!("{CROSS} > +2pt")));
}

#[test]
fn scaled_scan_latency_moves_the_percentiles() {
    let t = topology("xeon-e5-2690v3");
    let base = group("base", &t, &[1, 2, 3], 0, 100);
    let slow = group("slow", &t, &[4, 5, 6], 0, 150);
    let r = compare::diff(&[base, slow], &[Section::Scan]);
    assert!(r.rows.iter().all(|row| row.section == Section::Scan));
    let p99 = r.row("scan.p99").unwrap();
    let pct = p99.groups[1].change_pct.unwrap();
    assert!((pct - 50.0).abs() < 5.0, "p99 moved {pct:.1} %");
    assert!(p99.groups[1].significant);
    assert!(holds(&r, "scan.p99 > +10%"));
    assert!(!holds(&r, "scan.p99 > +60%"));
    assert!(r.row(CROSS).is_none(), "--only scan leaves placement out");
}

#[test]
fn different_topologies_compare_shares_only_and_say_so() {
    let (x, v) = (topology("xeon-e5-2690v3"), topology("vm-2cpu"));
    let a = Group {
        name: "xeon".into(),
        files: vec![],
        runs: vec![run(&x, 1, 0, 100)],
    };
    let b = Group {
        name: "vm".into(),
        files: vec![],
        runs: vec![run(&v, 1, 0, 100)],
    };
    let r = compare::diff(&[a, b], &[]);
    assert!(!r.same_topology);
    assert!(
        r.notes.iter().any(|n| n.contains("different topologies")),
        "{:?}",
        r.notes
    );
    assert!(r.row("placement.vs_waker.same_llc.share").is_some());
    assert!(r.row("placement.wakeups.count").is_none());
    assert!(
        r.rows
            .iter()
            .all(|row| !row.name.ends_with(".count") && !row.name.starts_with("scan.llc"))
    );
    let topo = r.metadata.iter().find(|m| m.field == "topology").unwrap();
    assert!(topo.differs);
    let text = compare::text::render(&r);
    assert!(
        text.contains("Conditions that differ") && text.contains("different topologies"),
        "{text}"
    );
}

#[test]
fn conditions_and_workload_metrics_are_compared() {
    use wakeviz_core::run::{Metric, WorkloadOutcome};
    let t = topology("xeon-e5-2690v3");
    let with = |seed: u64, usecs: f64, feature: &str| {
        let mut s = run(&t, seed, 0, 100);
        s.recording.run.sched_features = Some(vec![feature.into(), "WAKEUP_PREEMPTION".into()]);
        s.recording.run.sysctls = vec![("kernel.sched_base_slice_ns".into(), "3000000".into())];
        s.recording.workload = Some(WorkloadOutcome {
            exit_code: Some(0),
            signal: None,
            duration_ns: 1_000_000_000,
            metrics: vec![Metric {
                name: "pipe.usecs_per_op".into(),
                value: usecs,
                unit: "us".into(),
                higher_is_better: false,
            }],
        });
        s.refresh_figures();
        s
    };
    let base = Group {
        name: "tip".into(),
        files: vec![],
        runs: vec![
            with(1, 8.80, "TTWU_QUEUE"),
            with(2, 8.82, "TTWU_QUEUE"),
            with(3, 8.79, "TTWU_QUEUE"),
        ],
    };
    let new = Group {
        name: "sync".into(),
        files: vec![],
        runs: vec![
            with(4, 3.71, "NO_TTWU_QUEUE"),
            with(5, 3.74, "NO_TTWU_QUEUE"),
            with(6, 3.75, "NO_TTWU_QUEUE"),
        ],
    };
    let r = compare::diff(&[base, new], &[Section::Workload]);
    let m = r.row("workload.pipe.usecs_per_op").unwrap();
    let c = &m.groups[1];
    assert!(
        c.significant && c.regression == Some(false),
        "lower usecs/op is better: {c:?}"
    );
    assert!((c.change_pct.unwrap() - (3.7333 - 8.8033) / 8.8033 * 100.0).abs() < 0.01);
    let feat = r
        .metadata
        .iter()
        .find(|m| m.field == "sched_features.TTWU_QUEUE")
        .unwrap();
    assert!(feat.differs);
    assert_eq!(
        feat.values,
        vec![vec!["on".to_string()], vec!["off".to_string()]]
    );
    let slice = r
        .metadata
        .iter()
        .find(|m| m.field == "sysctl.kernel.sched_base_slice_ns")
        .unwrap();
    assert!(!slice.differs);
    let text = compare::text::render(&r);
    assert!(text.contains("* better"), "{text}");
    assert!(
        text.find("sched_features.TTWU_QUEUE").unwrap() < text.find("Workload results").unwrap()
    );
    // The gate on a metric, relative.
    assert!(holds(&r, "workload.pipe.usecs_per_op < -50%"));
    assert!(!holds(&r, "workload.pipe.usecs_per_op > +5%"));
}

fn verdict(r: &compare::DiffReport, c: &str) -> gate::Verdict {
    gate::evaluate(r, &gate::parse(c).unwrap()).unwrap()
}

fn cannot(v: &gate::Verdict, says: &str) {
    match &v.outcome {
        gate::Outcome::CannotEvaluate(why) => assert!(why.contains(says), "{v}"),
        o => panic!("{o:?}, expected cannot-evaluate ({says}): {v}"),
    }
    assert!(v.fails(false), "fails closed by default: {v}");
    assert!(!v.fails(true), "skipped on request: {v}");
}

/// Every verdict shows base, new, change and p; a condition that holds only by noise does not
/// hold with `significant`; what cannot be evaluated fails unless skipped, and says why.
#[test]
fn gates_need_significance_when_asked_and_fail_closed_on_what_they_cannot_judge() {
    let t = topology("xeon-e5-2690v3");
    let same = compare::diff(
        &[
            group("base", &t, &[1, 2, 3], 0, 100),
            group("new", &t, &[4, 5, 6], 0, 100),
        ],
        &[],
    );
    let moved = compare::diff(
        &[
            group("base", &t, &[1, 2, 3], 0, 100),
            group("new", &t, &[4, 5, 6], 100_000, 100),
        ],
        &[],
    );
    // Noise: any change at all "grows by more than -100 pt", but it is not significant.
    let loose = format!("{CROSS} > -100pt");
    let v = verdict(&same, &loose);
    assert!(v.holds(), "{v}");
    let text = v.to_string();
    for part in ["HOLDS", "base ", "new ", "change ", "p="] {
        assert!(text.contains(part), "{part:?} in {text}");
    }
    let v = verdict(&same, &format!("{loose} significant"));
    assert_eq!(v.outcome, gate::Outcome::DoesNotHold, "{v}");
    assert!(v.p_value.is_some() && !v.significant, "{v}");
    assert!(v.to_string().contains("not significant"), "{v}");
    // A real move holds either way.
    let v = verdict(&moved, &format!("{CROSS} > +2pt significant"));
    assert!(v.holds() && v.significant, "{v}");
    // A condition that does not hold says so, with its numbers.
    let v = verdict(&moved, &format!("{CROSS} < -2pt"));
    assert_eq!(v.outcome, gate::Outcome::DoesNotHold);
    assert!(v.to_string().contains("does not hold"), "{v}");

    // A zero base for a relative change, a mean that overflowed, a NaN: not evaluated.
    let mut r = moved.clone();
    let row = r.rows.iter_mut().find(|x| x.name == CROSS).unwrap();
    row.groups[0].mean = Some(0.0);
    row.groups[1].mean = Some(1e6);
    cannot(&verdict(&r, &format!("{CROSS} > +10%")), "base is 0");
    let row = r.rows.iter_mut().find(|x| x.name == CROSS).unwrap();
    row.groups[0].mean = Some(1.0);
    row.groups[1].mean = Some(f64::INFINITY);
    cannot(
        &verdict(&r, &format!("{CROSS} > +2pt")),
        "not a finite number",
    );
    let row = r.rows.iter_mut().find(|x| x.name == CROSS).unwrap();
    row.groups[1].mean = Some(5.0);
    row.groups[1].p_value = Some(f64::NAN);
    row.groups[1].significant = true;
    cannot(
        &verdict(&r, &format!("{CROSS} > +2pt significant")),
        "needs a test",
    );
    // A figure no run has (the rows leave it out), and a side without a value.
    r.rows.retain(|x| x.name != CROSS);
    cannot(
        &verdict(&r, &format!("{CROSS} > +2pt")),
        "no run has this figure",
    );
    let mut r = moved.clone();
    r.rows.iter_mut().find(|x| x.name == CROSS).unwrap().groups[0].mean = None;
    cannot(&verdict(&r, &format!("{CROSS} > +2pt")), "n/a in base");
    // One run a side: `significant` cannot be judged.
    let one = compare::diff(
        &[
            group("base", &t, &[1], 0, 100),
            group("new", &t, &[4], 100_000, 100),
        ],
        &[],
    );
    cannot(
        &verdict(&one, &format!("{CROSS} > +2pt significant")),
        "needs a test",
    );
}

/// A mean that overflows to infinity gives no change and no significance in the diff itself.
#[test]
fn an_infinite_mean_is_never_a_significant_change() {
    let t = topology("xeon-e5-2690v3");
    let mut base = group("base", &t, &[1, 2], 0, 100);
    let mut new = group("new", &t, &[4, 5], 0, 100);
    for (g, v) in [(&mut base, 1.0), (&mut new, f64::MAX)] {
        for s in &mut g.runs {
            s.recording.workload = Some(wakeviz_core::run::WorkloadOutcome {
                exit_code: Some(0),
                signal: None,
                duration_ns: 1,
                metrics: vec![wakeviz_core::run::Metric {
                    name: "ops".into(),
                    value: v,
                    unit: "ops/s".into(),
                    higher_is_better: true,
                }],
            });
            s.refresh_figures();
        }
    }
    let r = compare::diff(&[base, new], &[]);
    let row = r
        .rows
        .iter()
        .find(|x| x.name.contains("ops"))
        .expect("the workload row");
    let c = &row.groups[1];
    assert!(
        !c.significant && c.change.is_none() && c.p_value.is_none(),
        "{row:?}"
    );
    let v = verdict(&r, &format!("{} > +1%", row.name));
    cannot(&v, "not a finite number");
}
