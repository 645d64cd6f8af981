//! The exposition of a synthetic run: its series agree with the snapshot they came from.
use std::{collections::BTreeMap, sync::Arc};

use wakeviz_core::{
    analysis::{Analysis, Snapshot},
    synth::{self, SynthConfig},
    topology::{
        Level,
        fixture::{Symmetric, SysfsSpec},
    },
};

use super::{Published, encode};

/// 2 packages x 2 nodes x 2 LLCs x 2 cores x 2 threads: every level occurs.
pub(crate) fn snapshot(events: u64) -> Snapshot {
    snapshot_on(2, 2, 2, events)
}

/// `packages` x `nodes` x 2-core LLCs of `threads`-thread cores, 8 cores a package.
fn snapshot_on(packages: u32, threads: u32, nodes: u32, events: u64) -> Snapshot {
    let spec = SysfsSpec::symmetric(Symmetric {
        packages,
        cores_per_package: 8,
        threads_per_core: threads,
        cores_per_llc: 2,
        nodes_per_package: nodes,
        local: 10,
        same_package: 12,
        remote: 32,
    });
    let topo = spec.read_back().expect("topology");
    let cfg = SynthConfig::new(events, 11);
    let s = synth::events(&topo, &cfg).expect("synth");
    let mut a = Analysis::new(&synth::header(&topo, &cfg, &s));
    for t in s.tasks().to_vec() {
        a.on_batch(&wakeviz_core::source::Batch {
            tasks: vec![t],
            ..Default::default()
        });
    }
    for e in s {
        a.on_event(&e);
    }
    a.snapshot()
}

/// `name{labels} value` lines (no comments), keyed by the whole `name{labels}`.
fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').expect("a sample line");
            (k.to_string(), v.parse().expect("a number"))
        })
        .collect()
}

fn text_of(s: &Snapshot, seq: u64) -> String {
    encode(&Published {
        seq,
        snap: Arc::new(s.clone()),
    })
    .expect("encodes")
}

#[test]
fn counters_equal_the_snapshot() {
    let s = snapshot(60_000);
    let text = text_of(&s, 7);
    assert!(text.ends_with("# EOF\n"), "{text}");
    let m = samples(&text);
    let p = &s.placement;
    assert!(p.wakeups.count > 1000, "the run placed wakeups");
    assert_eq!(m["wakeviz_wakeups_total"], p.wakeups.count as f64);
    assert_eq!(m["wakeviz_snapshots_published_total"], 7.0);
    // The (level, LLC, node) split sums back to the snapshot's per-level totals and to its
    // per-LLC rows (the chosen CPU's LLC).
    let sum = |pred: &dyn Fn(&str) -> bool| -> f64 {
        m.iter()
            .filter(|(k, _)| k.starts_with("wakeviz_wakeup_placements_total{") && pred(k))
            .map(|(_, v)| v)
            .sum()
    };
    for l in Level::ALL {
        let lv = format!("level=\"{}\"", l.name());
        let waker = sum(&|k| k.contains("relation=\"vs_waker\"") && k.contains(&lv));
        let prev = sum(&|k| k.contains("relation=\"vs_prev\"") && k.contains(&lv));
        assert_eq!(waker, p.wakeups.vs_waker.get(l) as f64, "{lv}");
        assert_eq!(prev, p.wakeups.vs_prev.get(l) as f64, "{lv}");
        for g in &p.per_llc {
            let llc = format!("llc=\"{}\"", g.id);
            let got = sum(&|k| k.contains("vs_waker") && k.contains(&lv) && k.contains(&llc));
            assert_eq!(got, g.counts.vs_waker.get(l) as f64, "{lv} {llc}");
        }
    }
    for l in &Level::ALL[1..] {
        let key = format!("wakeviz_migrations_total{{level=\"{}\"}}", l.name());
        assert_eq!(
            m[&key],
            p.wakeups.migrations_by_level.get(*l) as f64,
            "{key}"
        );
    }
    assert!(
        !m.contains_key("wakeviz_migrations_total{level=\"same_cpu\"}"),
        "a migration never stays on its CPU"
    );
    for (k, n) in [
        ("kernel", s.drops.kernel_drops),
        ("user", s.drops.user_drops),
    ] {
        assert_eq!(
            m[&format!("wakeviz_dropped_events_total{{where=\"{k}\"}}")],
            n as f64
        );
    }
    assert_eq!(m["wakeviz_late_events_total"], s.drops.late_events as f64);
    assert_eq!(
        m["wakeviz_events_total{kind=\"sched_waking\"}"],
        s.events.0[wakeviz_core::event::Kind::Waking] as f64
    );
}

#[test]
fn histograms_are_cumulative_in_seconds() {
    let s = snapshot(60_000);
    let m = samples(&text_of(&s, 1));
    let q = &s.scan_latency.overall.quantiles;
    assert!(q.count > 0);
    assert_eq!(m["wakeviz_scan_latency_seconds_count"], q.count as f64);
    assert_eq!(
        m["wakeviz_scan_latency_seconds_bucket{le=\"+Inf\"}"],
        q.count as f64
    );
    // Each log2 bucket [lo, hi) ns of the snapshot is the step of the cumulative series at
    // le = hi ns.
    let scan = buckets(&m, "wakeviz_scan_latency_seconds_bucket{");
    for b in &s.scan_latency.overall.log2 {
        let below = if b.lo == 0 {
            0.0
        } else {
            at(&scan, b.lo as f64 / 1e9)
        };
        let step = at(&scan, b.hi as f64 / 1e9) - below;
        assert_eq!(step, b.count as f64, "[{}, {})", b.lo, b.hi);
    }
    assert!(scan.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
    let sum = m["wakeviz_scan_latency_seconds_sum"];
    assert!((sum / q.count as f64 * 1e9 - q.mean).abs() < 0.5, "{sum}");
    // Wakeup-to-run buckets are in µs in the snapshot, seconds here.
    let w = &s.wakeup_latency.overall;
    let top = w.log2.last().expect("wakeup latencies");
    let wake = buckets(&m, "wakeviz_wakeup_to_run_seconds_bucket{");
    assert_eq!(at(&wake, top.hi as f64 * 1e-6), w.quantiles.count as f64);
    assert!(at(&wake, top.lo as f64 * 1e-6) < w.quantiles.count as f64);
    for l in Level::ALL {
        let key = format!(
            "wakeviz_wakeup_to_run_by_level_seconds_count{{level=\"{}\"}}",
            l.name()
        );
        assert_eq!(
            m[&key],
            s.wakeup_latency.by_level.0[l.index()].1.quantiles.count as f64
        );
    }
}

/// `(le, cumulative count)` of the finite buckets of the series starting with `prefix`.
fn buckets(m: &BTreeMap<String, f64>, prefix: &str) -> Vec<(f64, f64)> {
    let mut v: Vec<(f64, f64)> = m
        .iter()
        .filter_map(|(k, n)| {
            let le = k.strip_prefix(prefix)?.strip_prefix("le=\"")?;
            let le = le.split('"').next()?.parse::<f64>().ok()?;
            le.is_finite().then_some((le, *n))
        })
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

/// The cumulative count at bound `le` (seconds, equal within float printing).
fn at(b: &[(f64, f64)], le: f64) -> f64 {
    b.iter()
        .find(|(x, _)| (x - le).abs() <= le * 1e-12)
        .unwrap_or_else(|| panic!("no bucket le={le}"))
        .1
}

#[test]
fn shadow_and_info_series() {
    let s = snapshot(60_000);
    let text = text_of(&s, 1);
    let m = samples(&text);
    let sh = s.shadow.as_ref().expect("shadow on");
    for r in &sh.policies {
        let a = r.agreement.expect("evaluated");
        let key = format!("wakeviz_shadow_agreement_ratio{{policy=\"{}\"}}", r.name);
        assert!((m[&key] - a).abs() < 1e-12, "{key}");
        let key = format!("wakeviz_shadow_idle_hit_ratio{{policy=\"{}\"}}", r.name);
        assert!((m[&key] - r.idle_pct.expect("idle") / 100.0).abs() < 1e-12);
    }
    assert!(
        text.contains(
            "wakeviz_probe_info{probe=\"sched_waking\",mode=\"synthetic\",attached=\"true\"} 1"
        ),
        "{text}"
    );
    assert!(text.contains("# TYPE wakeviz_build info\n"), "{text}");
    assert!(!text.contains("pid"), "no per-task labels");
}

#[test]
fn an_empty_capture_has_no_ratios_and_no_unavailable_histograms() {
    let mut s = snapshot(0);
    s.scan_latency.available = false;
    let text = text_of(&s, 1);
    let m = samples(&text);
    assert_eq!(m["wakeviz_wakeups_total"], 0.0);
    assert!(!text.contains("wakeviz_shadow_agreement_ratio{"), "{text}");
    assert!(
        !text.contains("wakeviz_scan_latency_seconds_count"),
        "{text}"
    );
    assert_eq!(m["wakeviz_wakeup_to_run_seconds_bucket{le=\"+Inf\"}"], 0.0);
}

#[test]
fn rings_have_their_own_series() {
    let mut s = snapshot(20_000);
    s.drops.rings = vec![
        wakeviz_core::format::RingStats {
            cpus: "0-7".into(),
            kernel_drops: 3,
            delivered: 1000,
            user_drops: 0,
        },
        wakeviz_core::format::RingStats {
            cpus: "8-15".into(),
            kernel_drops: 0,
            delivered: 2000,
            user_drops: 5,
        },
    ];
    let m = samples(&text_of(&s, 1));
    assert_eq!(
        m["wakeviz_ring_events_total{ring=\"1\",cpus=\"8-15\"}"],
        2000.0
    );
    assert_eq!(
        m["wakeviz_ring_dropped_events_total{ring=\"0\",cpus=\"0-7\",where=\"kernel\"}"],
        3.0
    );
    assert_eq!(
        m["wakeviz_ring_dropped_events_total{ring=\"1\",cpus=\"8-15\",where=\"user\"}"],
        5.0
    );
    // One ring: its figures are the totals, no per-ring series.
    s.drops.rings.clear();
    let m = samples(&text_of(&s, 1));
    assert!(!m.keys().any(|k| k.starts_with("wakeviz_ring_")), "{m:?}");
}

/// Every registered figure with a value is a series under its registry name, in its unit; a
/// figure added in one place (the test family) is one too; an n/a figure has no series.
#[test]
fn every_figure_is_served_under_its_registry_name() {
    use wakeviz_core::figures::{self, Family, Unit, testing::TestFamily};
    let mut s = snapshot(30_000);
    let fams: Vec<&dyn Family> = figures::FAMILIES
        .iter()
        .copied()
        .chain([&TestFamily as &dyn Family])
        .collect();
    s.figures = figures::Figures(figures::evaluate_with(&s, &fams));
    let m = samples(&text_of(&s, 1));
    let mut served = 0;
    for f in &s.figures.0 {
        let label = format!("{{figure=\"{}\"", f.name);
        let hits: Vec<(&String, &f64)> = m
            .iter()
            .filter(|(k, _)| k.starts_with("wakeviz_figure_") && k.contains(&label))
            .collect();
        let Some(v) = f.value else {
            assert!(hits.is_empty(), "{} is n/a but served: {hits:?}", f.name);
            continue;
        };
        assert_eq!(hits.len(), 1, "{}: {hits:?}", f.name);
        let want = match f.unit {
            Unit::Share => v / 100.0,
            Unit::Ns => v / 1e9,
            Unit::Us => v / 1e6,
            Unit::Count => v.trunc(),
            _ => v,
        };
        let got = *hits[0].1;
        assert!(
            (got - want).abs() <= want.abs() * 1e-9 + 1e-12,
            "{}: {got} != {want}",
            f.name
        );
        served += 1;
    }
    assert!(served > 100, "{served} figures served");
    let test = "wakeviz_figure_count_total{figure=\"placement.test_doubled.count\"}";
    assert_eq!(m[test], s.placement.wakeups.count as f64 * 2.0);
}

/// Without SMT, on one package of one node: no series for a level the machine cannot have.
#[test]
fn a_level_the_topology_cannot_have_has_no_series() {
    let s = snapshot_on(1, 1, 1, 20_000);
    let text = text_of(&s, 1);
    for l in ["smt_sibling", "same_package", "cross_package"] {
        assert!(
            !s.topology.level_exists(
                Level::ALL
                    .into_iter()
                    .find(|x| x.name() == l)
                    .expect("level")
            )
        );
        for line in text.lines().filter(|x| !x.starts_with('#')) {
            assert!(
                !line.contains(&format!("level=\"{l}\"")) && !line.contains(&format!(".{l}.")),
                "{line}"
            );
        }
    }
    assert!(
        text.contains("level=\"same_llc\""),
        "the levels that exist are served"
    );
}
