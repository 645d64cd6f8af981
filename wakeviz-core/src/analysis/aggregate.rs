//! The in-kernel aggregate mode's counters (`wakeviz_common::agg`, summed over the CPUs'
//! copies by the reader) turned into the same [`Snapshot`] the streaming analysis produces,
//! so the metrics endpoint and the reports serve either unchanged.
//!
//! What the aggregate cannot know is said, never shown as 0: scan latency (no per-call
//! probe), rolling windows (counters since the start only), shadow policies and schedstat
//! (they need the event stream). Latency percentiles come from log2 buckets: each is the upper
//! bound of its bucket, kept within the exact min and max (count, sum, min and max are exact).
use wakeviz_common::agg::{self, CpuCounts, CpuPlace, LogHist, PlaceCounts, hist, stat};

use super::{
    Analysis, Snapshot,
    events::EventTally,
    latency::{LatencySummary, Log2Bucket, Quantiles},
    part::{Ctx, Part},
    placement::{Coverage, LevelCounts, PlacementCounts, PlacementStats},
    snapshot::WAKE_UNIT_NS,
    wakeups::PlacementPart,
    window::RollingWindows,
};
use crate::{
    event::{Kind, TaskTable},
    format::Header,
    topology::{Level, LevelMap, Topology},
};

/// The `AGG_TOPO` map's contents: one entry per CPU number up to the topology's bound, CPUs
/// it does not know (offline) marked unknown, so the kernel classifies exactly as
/// [`crate::topology::LevelMap`] does.
pub fn cpu_places(t: &Topology) -> Vec<CpuPlace> {
    let mut v = vec![CpuPlace::UNKNOWN; t.cpu_bound()];
    for c in &t.cpus {
        if let Some(slot) = v.get_mut(c.cpu as usize) {
            *slot = CpuPlace {
                core: c.core,
                llc: c.llc,
                node: c.node,
                package: c.package,
            };
        }
    }
    v
}

/// Status of the scan-latency section in aggregate mode.
pub const SCAN_STATUS: &str =
    "unavailable: in-kernel aggregate mode (no select_task_rq_fair probe in this mode)";

/// The note every aggregate snapshot carries in `recording.notes`.
pub const NOTE: &str = "in-kernel aggregate mode: counters since the start, no event stream (no rolling windows, shadow or schedstat); latency percentiles at log2-bucket resolution";

/// The kernel's counters, each summed over the CPUs' per-CPU copies.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelCounters {
    /// `AGG_CPU`, indexed by CPU number.
    pub per_cpu: Vec<CpuCounts>,
    /// `AGG_TOTALS[NEW_TASKS]`.
    pub new_tasks: PlaceCounts,
    /// `AGG_TOTALS[BEYOND]`: wakeups to a CPU beyond `per_cpu`.
    pub beyond: PlaceCounts,
    /// `AGG_HIST`, indexed by `agg::hist` slot.
    pub hists: Vec<LogHist>,
    /// `AGG_STATS`, indexed by `agg::stat` slot.
    pub stats: Vec<u64>,
    /// Program runs the kernel skipped (BPF programs do not nest on a CPU).
    pub probe_misses: u64,
}

impl KernelCounters {
    fn stat(&self, i: u32) -> u64 {
        self.stats.get(i as usize).copied().unwrap_or(0)
    }

    fn hist(&self, i: u32) -> LogHist {
        self.hists.get(i as usize).copied().unwrap_or_default()
    }
}

fn levels(a: &[u64; agg::LEVELS]) -> LevelCounts {
    LevelCounts(*a)
}

/// The streaming fold's [`PlacementCounts`] from one kernel slot (affine and migrations are
/// derived exactly: an affine placement always has a waker -> previous level, a migration is
/// a classified placement whose previous CPU is not the chosen one).
pub fn placement_counts(k: &PlaceCounts) -> PlacementCounts {
    let mut migrations_by_level = levels(&k.vs_prev);
    migrations_by_level.0[Level::SameCpu.index()] = 0;
    PlacementCounts {
        count: k.count,
        vs_waker: levels(&k.vs_waker),
        vs_prev: levels(&k.vs_prev),
        affine: k.affine_by_waker_prev.iter().sum(),
        affine_by_waker_prev: levels(&k.affine_by_waker_prev),
        migrations: migrations_by_level.total(),
        migrations_by_level,
        unclassified: k.unclassified,
    }
}

/// A latency summary from a kernel log2 histogram bucketed in `unit_ns` units.
pub fn latency_summary(h: &LogHist, unit_ns: u64) -> LatencySummary {
    let Some(min) = h.min_ns() else {
        return LatencySummary::default();
    };
    let max = h.max_ns;
    let bound = |i: usize| -> (u64, u64) {
        if i == 0 {
            (0, 1)
        } else {
            (
                1u64 << (i - 1),
                1u64.checked_shl(i as u32).unwrap_or(u64::MAX),
            )
        }
    };
    let q = |x: f64| -> u64 {
        let want = ((h.count as f64) * x).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, &c) in h.buckets.iter().enumerate() {
            seen += c;
            if seen >= want {
                return bound(i)
                    .1
                    .saturating_mul(unit_ns)
                    .saturating_sub(1)
                    .clamp(min, max);
            }
        }
        max
    };
    let (first, last) = (
        h.buckets.iter().position(|&c| c > 0),
        h.buckets.iter().rposition(|&c| c > 0),
    );
    let log2 = match (first, last) {
        (Some(f), Some(l)) => (f..=l)
            .map(|i| Log2Bucket {
                lo: bound(i).0,
                hi: bound(i).1,
                count: h.buckets[i],
            })
            .collect(),
        _ => Vec::new(),
    };
    LatencySummary {
        quantiles: Quantiles {
            count: h.count,
            min,
            p50: q(0.5),
            p90: q(0.9),
            p99: q(0.99),
            p999: q(0.999),
            max,
            mean: ((h.sum_ns as f64 / h.count as f64) * 10.0).round() / 10.0,
        },
        log2,
    }
}

/// The snapshot of a live aggregate-mode run at monotonic time `now_ns`.
pub fn snapshot(header: &Header, k: &KernelCounters, now_ns: u64) -> Snapshot {
    let mut header = header.clone();
    if !header.notes.iter().any(|n| n == NOTE) {
        header.notes.push(NOTE.into());
    }
    let mut a = Analysis::new(&header);
    a.set_shadow(None);
    let mut s = a.snapshot();
    let t = &header.topology;
    let empty = CpuCounts::default();
    let slot = |cpu: u32| k.per_cpu.get(cpu as usize).unwrap_or(&empty);
    let mut p = PlacementStats::new(t);
    let mut landed_all = k.beyond;
    for c in &k.per_cpu {
        landed_all.merge(&c.landed);
    }
    p.wakeups = placement_counts(&landed_all);
    p.new_tasks = placement_counts(&k.new_tasks);
    // The kernel counts joined placements only: those are the coverage's wakeups.
    let w = p.wakeups;
    let coverage = Coverage {
        wakeups: w.count,
        placed: w.count,
        classified: w.count - w.unclassified,
        unclassified: w.unclassified,
        ..Default::default()
    };
    for c in &t.cpus {
        let s = slot(c.cpu);
        if let Some(n) = p.per_node.get_mut(c.node as usize) {
            n.merge(&placement_counts(&s.woke));
        }
        if let Some(l) = p.per_llc.get_mut(c.llc as usize) {
            l.merge(&placement_counts(&s.landed));
        }
    }
    for (cpu, cc) in p.per_cpu.iter_mut().enumerate() {
        let s = k.per_cpu.get(cpu).unwrap_or(&empty);
        cc.landed = s.landed.count;
        cc.vs_waker = levels(&s.landed.vs_waker);
        cc.vs_prev = levels(&s.landed.vs_prev);
        cc.woke = s.woke.count;
    }
    let mut events = EventTally::default();
    for kind in Kind::ALL {
        // The ABI numbers kinds from 1 (`EventKind`), the core's index from 0.
        events.counts[kind] = k.stat(stat::EVENTS_BASE + kind.index() as u32 + 1);
    }
    // The kernel's counters are shown through the parts that show the stream's own.
    let (levels, tasks) = (LevelMap::new(t), TaskTable::default());
    let cx = Ctx {
        topology: t,
        levels: &levels,
        tasks: &tasks,
        subset: false,
        first_ts: Some(header.start_ts_ns),
        last_ts: now_ns,
        shadow: None,
    };
    PlacementPart::loaded(p, coverage).fill(&cx, &mut s);
    events.fill(&cx, &mut s);
    RollingWindows::new(&header).fill(&cx, &mut s);
    s.drops.unmatched_wakeups = k.stat(stat::UNMATCHED_WAKEUPS) + k.stat(stat::STALE_WAKINGS);
    s.drops.probe_misses = k.probe_misses;
    s.scan_latency.available = false;
    s.scan_latency.status = Some(SCAN_STATUS);
    let w = &mut s.wakeup_latency;
    w.overall = latency_summary(&k.hist(hist::OVERALL), WAKE_UNIT_NS);
    for (i, (_, v)) in w.by_level.0.iter_mut().enumerate() {
        *v = latency_summary(&k.hist(hist::BY_LEVEL + i as u32), WAKE_UNIT_NS);
    }
    w.new_task = latency_summary(&k.hist(hist::NEW_TASK), WAKE_UNIT_NS);
    s.refresh_figures();
    s
}

#[cfg(test)]
mod tests;
