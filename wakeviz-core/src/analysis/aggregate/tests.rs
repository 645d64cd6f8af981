use std::collections::HashMap;

use wakeviz_common::agg::{self, level_index, totals};

/// The two halves of the kernel's `agg::TaskState` (its `WAKING` and `RUN` flags as presence
/// in two maps).
struct PendingWaking {
    ts_ns: u64,
    waker_cpu: u32,
    prev_cpu: u32,
    self_wake: u32,
}

struct PendingRun {
    wakeup_ts_ns: u64,
    slot: u32,
}

use super::*;
use crate::{
    event::Event,
    horizons,
    synth::{self, SynthConfig},
    topology::{
        LevelMap,
        fixture::{self, SysfsSpec},
    },
};

fn topo(name: &str) -> Topology {
    fixture::named_topology(name).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

/// The kernel's classification (`agg::level_index` over the `AGG_TOPO` entries userspace
/// writes) equals the core's on every pair of CPUs of every fixture machine.
#[test]
fn kernel_levels_equal_the_cores_on_every_fixture() {
    for name in SysfsSpec::NAMES {
        let t = topo(name);
        let places = cpu_places(&t);
        let m = LevelMap::new(&t);
        let mut seen = [0u64; agg::LEVELS];
        for a in 0..t.cpu_bound() as u32 {
            for b in 0..t.cpu_bound() as u32 {
                let (pa, pb) = (places[a as usize], places[b as usize]);
                let kernel = (pa.known() && pb.known()).then(|| level_index(a == b, &pa, &pb));
                let core = m.level(a, b).map(Level::index);
                assert_eq!(kernel, core, "{name}: CPUs {a} and {b}");
                if let Some(l) = core {
                    seen[l] += 1;
                }
            }
        }
        assert!(seen[Level::SameCpu.index()] > 0, "{name}");
    }
    // Across the fixtures, every level occurs (the test would be weak otherwise).
    let any: Vec<bool> = Level::ALL
        .iter()
        .map(|l| {
            SysfsSpec::NAMES.iter().any(|n| {
                let t = topo(n);
                let m = LevelMap::new(&t);
                t.cpus
                    .iter()
                    .any(|a| t.cpus.iter().any(|b| m.level(a.cpu, b.cpu) == Some(*l)))
            })
        })
        .collect();
    assert!(any.iter().all(|&x| x), "{any:?}");
}

#[test]
fn constants_agree_with_the_core() {
    assert_eq!(agg::JOIN_WAKING_NS, horizons::JOIN_WAKING_NS);
    assert_eq!(agg::WAKE_TO_RUN_NS, horizons::WAKE_TO_RUN_NS);
    assert_eq!(agg::hist::UNIT_NS, WAKE_UNIT_NS);
    assert_eq!(agg::LEVELS, Level::ALL.len());
    assert_eq!(
        agg::hist::NEW_TASK,
        agg::hist::BY_LEVEL + agg::LEVELS as u32
    );
}

/// A model of the kernel programs (wakeviz-ebpf/src/aggregate.rs), statement for statement,
/// so the conversion can be checked against the streaming fold on the same events; the live
/// test checks the real programs against the streaming fold on the real kernel.
#[derive(Default)]
struct Model {
    places: Vec<agg::CpuPlace>,
    k: KernelCounters,
    waking: HashMap<u32, PendingWaking>,
    run: HashMap<u32, PendingRun>,
}

impl Model {
    fn new(t: &Topology) -> Self {
        let places = cpu_places(t);
        Self {
            k: KernelCounters {
                per_cpu: vec![CpuCounts::default(); places.len()],
                hists: vec![LogHist::default(); agg::hist::LEN as usize],
                stats: vec![0; agg::stat::LEN as usize],
                ..KernelCounters::default()
            },
            places,
            ..Self::default()
        }
    }

    fn place(&self, cpu: u32) -> agg::CpuPlace {
        self.places
            .get(cpu as usize)
            .copied()
            .unwrap_or(agg::CpuPlace::UNKNOWN)
    }

    fn add(pc: &mut PlaceCounts, cl: bool, vw: usize, vp: usize, aff: bool, wp: usize) {
        pc.count += 1;
        if cl {
            pc.vs_waker[vw] += 1;
            pc.vs_prev[vp] += 1;
        } else {
            pc.unclassified += 1;
        }
        if aff {
            pc.affine_by_waker_prev[wp] += 1;
        }
    }

    /// Returns (classified, has_vs_waker, vs_waker, vs_prev, waker_prev, affine).
    fn classify(
        &self,
        waker: u32,
        prev: u32,
        chosen: u32,
    ) -> (bool, bool, usize, usize, usize, bool) {
        let (w, p, c) = (self.place(waker), self.place(prev), self.place(chosen));
        (
            w.known() && p.known() && c.known(),
            w.known() && c.known(),
            level_index(waker == chosen, &w, &c),
            level_index(prev == chosen, &p, &c),
            level_index(waker == prev, &w, &p),
            chosen != prev && c.known() && p.known() && c.llc == w.llc && c.llc != p.llc,
        )
    }

    fn record(&mut self, slot: u32, v: u64) {
        let h = &mut self.k.hists[slot as usize];
        h.buckets[LogHist::bucket(v / agg::hist::UNIT_NS)] += 1;
        h.count += 1;
        h.sum_ns += v;
        h.max_ns = h.max_ns.max(v);
        h.min_inv_ns = h.min_inv_ns.max(!v);
    }

    fn on_event(&mut self, e: &Event) {
        let kind = e.kind().index() + 1;
        self.k.stats[kind] += 1;
        match e {
            Event::Waking(w) => {
                self.waking.insert(
                    w.pid,
                    PendingWaking {
                        ts_ns: w.ts_ns,
                        waker_cpu: w.cpu,
                        prev_cpu: w.target_cpu,
                        self_wake: u32::from(w.pid == w.waker_pid),
                    },
                );
            }
            Event::Wakeup(w) => {
                let slot = match self.waking.remove(&w.pid) {
                    None => {
                        self.k.stats[agg::stat::UNMATCHED_WAKEUPS as usize] += 1;
                        agg::hist::OVERALL
                    }
                    Some(p) if p.self_wake != 0 => {
                        self.k.stats[agg::stat::SELF_WAKEUPS as usize] += 1;
                        agg::hist::OVERALL
                    }
                    Some(p) if w.ts_ns.saturating_sub(p.ts_ns) >= agg::JOIN_WAKING_NS => {
                        self.k.stats[agg::stat::STALE_WAKINGS as usize] += 1;
                        agg::hist::OVERALL
                    }
                    Some(p) => {
                        let (cl, hw, vw, vp, wp, aff) =
                            self.classify(p.waker_cpu, p.prev_cpu, w.target_cpu);
                        match self.k.per_cpu.get_mut(w.target_cpu as usize) {
                            Some(c) => Self::add(&mut c.landed, cl, vw, vp, aff, wp),
                            None => Self::add(&mut self.k.beyond, cl, vw, vp, aff, wp),
                        }
                        if let Some(c) = self.k.per_cpu.get_mut(p.waker_cpu as usize) {
                            Self::add(&mut c.woke, cl, vw, vp, aff, wp);
                        }
                        if hw {
                            agg::hist::BY_LEVEL + vw as u32
                        } else {
                            agg::hist::OVERALL
                        }
                    }
                };
                self.run.insert(
                    w.pid,
                    PendingRun {
                        wakeup_ts_ns: w.ts_ns,
                        slot,
                    },
                );
            }
            Event::WakeupNew(w) => {
                let (cl, _, vw, vp, wp, aff) = self.classify(w.cpu, w.cpu, w.target_cpu);
                Self::add(&mut self.k.new_tasks, cl, vw, vp, aff, wp);
                let _ = totals::NEW_TASKS;
                self.run.insert(
                    w.pid,
                    PendingRun {
                        wakeup_ts_ns: w.ts_ns,
                        slot: agg::hist::NEW_TASK,
                    },
                );
            }
            Event::Switch(s) => {
                if s.prev_pid != 0 {
                    self.run.remove(&s.prev_pid);
                }
                if s.next_pid != 0
                    && let Some(r) = self.run.remove(&s.next_pid)
                {
                    let v = s.ts_ns.saturating_sub(r.wakeup_ts_ns);
                    self.record(r.slot, v);
                    if r.slot != agg::hist::OVERALL && r.slot != agg::hist::NEW_TASK {
                        self.record(agg::hist::OVERALL, v);
                    }
                }
            }
            _ => {}
        }
    }
}

fn both(name: &str, events: u64, seed: u64) -> (Snapshot, Snapshot) {
    let t = topo(name);
    let cfg = SynthConfig::new(events, seed);
    let s = synth::events(&t, &cfg).expect("synth");
    let hdr = synth::header(&t, &cfg, &s);
    let mut a = Analysis::new(&hdr);
    a.set_shadow(None);
    let mut m = Model::new(&t);
    // The aggregate has no select probe: both sides see the tracepoints only.
    let mut last = 0;
    for e in s.filter(|e| !matches!(e, Event::Select(_))) {
        last = e.ts_ns();
        a.on_event(&e);
        m.on_event(&e);
    }
    (a.snapshot(), snapshot(&hdr, &m.k, last))
}

#[test]
fn aggregate_snapshot_equals_the_streaming_fold() {
    for (name, seed) in [("zen3-nps4", 3), ("xeon-e5-2690v3", 7), ("irregular", 11)] {
        let (st, ag) = both(name, 200_000, seed);
        let (ps, pa) = (&st.placement, &ag.placement);
        assert!(ps.wakeups.count > 10_000, "{name}: {}", ps.wakeups.count);
        assert_eq!(ps.wakeups, pa.wakeups, "{name}: wakeups");
        assert_eq!(ps.new_tasks, pa.new_tasks, "{name}: new tasks");
        assert_eq!(ps.per_node, pa.per_node, "{name}: per node");
        assert_eq!(ps.per_llc, pa.per_llc, "{name}: per LLC");
        assert_eq!(ps.per_cpu, pa.per_cpu, "{name}: per CPU");
        assert_eq!(ps.domain_table, pa.domain_table, "{name}: domain table");
        for k in [
            Kind::Waking,
            Kind::Wakeup,
            Kind::WakeupNew,
            Kind::Switch,
            Kind::Migrate,
        ] {
            assert_eq!(st.events.0[k], ag.events.0[k], "{name}: {k:?}");
        }
        assert_eq!(ag.events.0[Kind::Select], 0);
        assert_eq!(
            st.drops.unmatched_wakeups, ag.drops.unmatched_wakeups,
            "{name}"
        );
        let (ls, la) = (&st.wakeup_latency, &ag.wakeup_latency);
        let pairs = std::iter::once((&ls.overall, &la.overall))
            .chain(std::iter::once((&ls.new_task, &la.new_task)))
            .chain(
                ls.by_level
                    .0
                    .iter()
                    .zip(&la.by_level.0)
                    .map(|(a, b)| (&a.1, &b.1)),
            );
        for (s, g) in pairs {
            let (qs, qa) = (&s.quantiles, &g.quantiles);
            assert_eq!(
                (qs.count, qs.min, qs.max),
                (qa.count, qa.min, qa.max),
                "{name}"
            );
            // hdrhistogram's mean is over its sub-bucket values (0.1-1 %), the kernel's exact.
            assert!(
                (qs.mean - qa.mean).abs() <= 0.1 + qs.mean * 0.01,
                "{name}: {} vs {}",
                qs.mean,
                qa.mean
            );
            // Same buckets within 1 % (hdrhistogram's sub-buckets may put a value a few ns
            // below a power-of-two µs boundary), and each percentile within its log2 bucket.
            let total = |v: &[Log2Bucket]| v.iter().map(|b| b.count).sum::<u64>();
            assert_eq!(total(&s.log2), total(&g.log2), "{name}");
            for b in &g.log2 {
                let sb = s.log2.iter().find(|x| x.lo == b.lo).map_or(0, |x| x.count);
                let tol = (qs.count / 100).max(2);
                assert!(
                    sb.abs_diff(b.count) <= tol,
                    "{name}: bucket {} {sb} vs {}",
                    b.lo,
                    b.count
                );
            }
            for (a, b) in [(qs.p50, qa.p50), (qs.p99, qa.p99)] {
                assert!(
                    b + 1 >= a && b < a.max(1) * 2 + 1000,
                    "{name}: percentile {a} vs {b}"
                );
            }
        }
        assert!(!ag.scan_latency.available);
        assert_eq!(ag.scan_latency.status, Some(SCAN_STATUS));
        assert!(ag.recording.notes.iter().any(|n| n == NOTE));
        assert!(ag.shadow.is_none() && ag.schedstat.is_none());
    }
}

#[test]
fn empty_counters_give_empty_not_zero_latency() {
    let t = topo("vm-2cpu");
    let cfg = SynthConfig::new(10, 1);
    let s = synth::events(&t, &cfg).expect("synth");
    let hdr = synth::header(&t, &cfg, &s);
    let snap = snapshot(&hdr, &KernelCounters::default(), 0);
    assert_eq!(snap.placement.wakeups.count, 0);
    assert!(snap.wakeup_latency.overall.log2.is_empty());
    assert_eq!(snap.wakeup_latency.overall.quantiles.count, 0);
    assert_eq!(snap.placement.per_cpu.len(), t.nr_cpus());
    let j = serde_json::to_value(&snap).expect("json");
    assert_eq!(j["scan_latency"]["available"], false);
}

#[test]
fn percentiles_from_buckets() {
    let mut h = LogHist::default();
    // 90 values of 3 µs (bucket [2, 4) µs), 10 of 100 µs ([64, 128)).
    for (v, n) in [(3_000u64, 90), (100_000, 10)] {
        for _ in 0..n {
            h.buckets[LogHist::bucket(v / 1000)] += 1;
            h.count += 1;
            h.sum_ns += v;
            h.max_ns = h.max_ns.max(v);
            h.min_inv_ns = h.min_inv_ns.max(!v);
        }
    }
    let s = latency_summary(&h, 1000);
    let q = s.quantiles;
    assert_eq!((q.count, q.min, q.max), (100, 3_000, 100_000));
    assert_eq!(q.p50, 3_999, "upper bound of [2, 4) µs");
    assert_eq!(q.p90, 3_999);
    assert_eq!(q.p99, 100_000, "[64, 128) µs clamped to the max");
    assert_eq!(q.mean, 12_700.0);
    assert_eq!(
        s.log2.first().map(|b| (b.lo, b.hi, b.count)),
        Some((2, 4, 90))
    );
    assert_eq!(s.log2.last().map(|b| (b.lo, b.count)), Some((64, 10)));
    assert_eq!(s.log2.len(), 6);
}
