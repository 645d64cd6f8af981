//! Placement classification: where each placed wakeup landed relative to the waker CPU and to
//! the task's previous CPU, at the six [`Level`]s, plus affine pulls and migrations.
//!
//! **Affine**, as wakeviz counts it: `chosen_cpu != prev_cpu`, and the chosen CPU shares an LLC
//! with the waker CPU but not with `prev_cpu`. This is the observable footprint of the kernel's
//! `ttwu_move_affine` (incremented when `wake_affine()` picks the waker CPU as the target, after
//! which `select_idle_sibling()` only returns CPUs in the target's LLC). When waker and previous
//! CPU share an LLC an affine pick cannot be told apart from a non-affine one by the outcome, so
//! such wakeups are never counted as affine: wakeviz's affine count is a lower bound of the
//! kernel's, exact for the domains above the LLC.
use serde::Serialize;

use crate::topology::{Level, LevelMap};

pub use crate::topology::LevelCounts;

/// The relations of one placement, computed once and fed to every aggregate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Classified {
    pub vs_waker: Option<Level>,
    pub vs_prev: Option<Level>,
    /// Waker CPU to previous CPU: the kernel's `wake_affine()` runs in the lowest domain of the
    /// waker that spans the previous CPU, which is where `ttwu_move_affine` is counted.
    pub waker_prev: Option<Level>,
    pub affine: bool,
}

/// Classifies one placement; `None` levels mean a CPU outside the topology (hot-plugged
/// after the capture started, or a damaged event).
#[inline]
pub fn classify(m: &LevelMap, waker: u32, prev: u32, chosen: u32) -> Classified {
    let affine = chosen != prev && {
        let (lc, lw, lp) = (m.llc(chosen), m.llc(waker), m.llc(prev));
        lc.is_some() && lp.is_some() && lc == lw && lc != lp
    };
    Classified {
        vs_waker: m.level(waker, chosen),
        vs_prev: m.level(prev, chosen),
        waker_prev: m.level(waker, prev),
        affine,
    }
}

/// Counts over a set of placements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PlacementCounts {
    pub count: u64,
    /// Level of waker CPU -> chosen CPU.
    pub vs_waker: LevelCounts,
    /// Level of previous CPU -> chosen CPU.
    pub vs_prev: LevelCounts,
    pub affine: u64,
    /// Affine wakeups by the level of waker CPU -> previous CPU (the kernel's domain of
    /// `ttwu_move_affine`).
    pub affine_by_waker_prev: LevelCounts,
    /// `chosen_cpu != prev_cpu`, by level of previous -> chosen.
    pub migrations: u64,
    pub migrations_by_level: LevelCounts,
    /// Placements involving a CPU the topology does not know.
    pub unclassified: u64,
}

impl PlacementCounts {
    #[inline]
    pub fn add(&mut self, c: &Classified) {
        self.count += 1;
        match (c.vs_waker, c.vs_prev) {
            (Some(w), Some(p)) => {
                self.vs_waker.add(w);
                self.vs_prev.add(p);
                if p != Level::SameCpu {
                    self.migrations += 1;
                    self.migrations_by_level.add(p);
                }
            }
            _ => self.unclassified += 1,
        }
        if c.affine {
            self.affine += 1;
            if let Some(l) = c.waker_prev {
                self.affine_by_waker_prev.add(l);
            }
        }
    }

    pub fn merge(&mut self, o: &Self) {
        self.count += o.count;
        self.vs_waker.merge(&o.vs_waker);
        self.vs_prev.merge(&o.vs_prev);
        self.affine += o.affine;
        self.affine_by_waker_prev.merge(&o.affine_by_waker_prev);
        self.migrations += o.migrations;
        self.migrations_by_level.merge(&o.migrations_by_level);
        self.unclassified += o.unclassified;
    }
}

/// Whole-run placement aggregates under the current filter.
#[derive(Clone, Debug, Default)]
pub struct PlacementStats {
    /// Wakeups (`sched_wakeup`), not forks.
    pub wakeups: PlacementCounts,
    /// First placements of new tasks (`sched_wakeup_new`): fork balancing, a different path.
    pub new_tasks: PlacementCounts,
    /// Wakeups by the waker CPU's node (index into `Topology::nodes`).
    pub per_node: Vec<PlacementCounts>,
    /// Wakeups by the chosen CPU's LLC (index into `Topology::llcs`).
    pub per_llc: Vec<PlacementCounts>,
    /// Wakeups per CPU number (the topology map draws these).
    pub per_cpu: Vec<CpuCounts>,
}

/// Wakeups of one CPU: landed there (by its relation to the waker and to the previous CPU),
/// and woken from there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CpuCounts {
    /// Wakeups whose chosen CPU is this one.
    pub landed: u64,
    /// Of those, level of waker CPU -> this CPU.
    pub vs_waker: LevelCounts,
    /// Of those, level of previous CPU -> this CPU.
    pub vs_prev: LevelCounts,
    /// Wakeups whose waker ran on this CPU.
    pub woke: u64,
}

impl PlacementStats {
    pub fn new(t: &crate::topology::Topology) -> Self {
        Self {
            wakeups: PlacementCounts::default(),
            new_tasks: PlacementCounts::default(),
            per_node: vec![PlacementCounts::default(); t.nodes.len()],
            per_llc: vec![PlacementCounts::default(); t.llcs.len()],
            per_cpu: vec![CpuCounts::default(); t.cpu_bound()],
        }
    }

    #[inline]
    pub fn add(&mut self, m: &LevelMap, c: &Classified, waker: u32, chosen: u32, new_task: bool) {
        if new_task {
            self.new_tasks.add(c);
            return;
        }
        self.wakeups.add(c);
        if let Some(n) = m
            .node(waker)
            .and_then(|n| self.per_node.get_mut(n as usize))
        {
            n.add(c);
        }
        if let Some(l) = m.llc(chosen).and_then(|l| self.per_llc.get_mut(l as usize)) {
            l.add(c);
        }
        if let Some(cc) = self.per_cpu.get_mut(chosen as usize) {
            cc.landed += 1;
            if let Some(l) = c.vs_waker {
                cc.vs_waker.add(l);
            }
            if let Some(l) = c.vs_prev {
                cc.vs_prev.add(l);
            }
        }
        if let Some(cc) = self.per_cpu.get_mut(waker as usize) {
            cc.woke += 1;
        }
    }
}

/// Unfiltered per-waker-CPU counts in the shape of the kernel's schedstat counters, for the
/// `/proc/schedstat` cross-check (which sees every task, whatever the filter).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OurWakeCounts {
    /// `[waker cpu][level of waker -> chosen]`; `SameCpu` is the kernel's `ttwu_local`.
    pub by_waker: Vec<LevelCounts>,
    /// `[waker cpu][level of waker -> prev]` of affine wakeups.
    pub affine_by_waker: Vec<LevelCounts>,
}

impl OurWakeCounts {
    pub fn new(cpu_bound: usize) -> Self {
        Self {
            by_waker: vec![LevelCounts::default(); cpu_bound],
            affine_by_waker: vec![LevelCounts::default(); cpu_bound],
        }
    }

    /// Adds `other`'s counts to these and zeroes `other`.
    pub fn absorb(&mut self, other: &mut Self) {
        for (mine, theirs) in [
            (&mut self.by_waker, &mut other.by_waker),
            (&mut self.affine_by_waker, &mut other.affine_by_waker),
        ] {
            for (a, b) in mine.iter_mut().zip(theirs.iter_mut()) {
                a.merge(b);
                *b = LevelCounts::default();
            }
        }
    }

    #[inline]
    pub fn add(&mut self, waker: u32, c: &Classified) {
        let (Some(w), Some(slot)) = (c.vs_waker, self.by_waker.get_mut(waker as usize)) else {
            return;
        };
        slot.add(w);
        if c.affine
            && let (Some(l), Some(a)) = (c.waker_prev, self.affine_by_waker.get_mut(waker as usize))
        {
            a.add(l);
        }
    }
}

/// How many wakeups of the matching wakees the placement figures classify, and why the others
/// are not: one set of counts the Placement view, the Shadow view, the text report and the
/// JSON all read, so "how many wakeups" has one answer. A user saw the Placement view and the
/// Shadow view's `observed` row disagree because the shadow left 40 % of the wakeups out
/// without either view saying so.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Coverage {
    /// `sched_wakeup`s of matching wakees (forks, `sched_wakeup_new`, are apart).
    pub wakeups: u64,
    /// Joined with their `sched_waking`: the placement figures' `count`.
    pub placed: u64,
    /// Of those, every CPU known to the topology: counted at a level.
    pub classified: u64,
    /// Placed, with a CPU the topology does not know (hot-plugged, damaged event).
    pub unclassified: u64,
    /// Not placed: the wakee woke itself (running already, no placement).
    pub self_wakeups: u64,
    /// Not placed: its `sched_waking` was not seen (dropped, or before the capture started).
    pub no_sched_waking: u64,
    /// The placed wakeups the shadow policies were compared on, and why not the rest; `None`
    /// with the shadow evaluation off.
    pub shadow: Option<ShadowCoverage>,
}

/// The placed wakeups of [`Coverage`] split by what the shadow evaluation did with them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ShadowCoverage {
    /// Compared: the `observed` row and every policy row cover exactly these.
    pub compared: u64,
    /// No `select_task_rq_fair` record though the function probe was attached: the wakeup
    /// took no placement path (a pinned task, the wake-list of a task still on its CPU).
    pub no_select: u64,
    /// Tracepoint-only: still runnable at `sched_waking` (`ttwu_runnable`, no placement).
    pub runnable_at_waking: u64,
    /// Fork or exec flags on the select record (the slow path, not a wakeup placement).
    pub fork_exec: u64,
    /// A CPU number outside the recorded topology.
    pub invalid_cpu: u64,
}

impl ShadowCoverage {
    /// Counts one placed wakeup from the shadow's exclusion counters before and after it was
    /// scored (`scored`: it was compared).
    pub fn add(
        &mut self,
        scored: bool,
        before: &crate::shadow::Excluded,
        after: &crate::shadow::Excluded,
    ) {
        if scored {
            self.compared += 1;
        } else if after.no_select > before.no_select {
            self.no_select += 1;
        } else if after.runnable_at_waking > before.runnable_at_waking {
            self.runnable_at_waking += 1;
        } else if after.fork_exec > before.fork_exec {
            self.fork_exec += 1;
        } else if after.invalid_cpu > before.invalid_cpu {
            self.invalid_cpu += 1;
        }
    }

    /// Placed wakeups the shadow left out.
    pub fn excluded(&self) -> u64 {
        self.no_select + self.runnable_at_waking + self.fork_exec + self.invalid_cpu
    }

    /// The exclusion reasons with short names for narrow views, in report order.
    pub fn short_reasons(&self) -> [(&'static str, u64); 4] {
        [
            ("no select", self.no_select),
            ("runnable", self.runnable_at_waking),
            ("fork/exec", self.fork_exec),
            ("bad CPU", self.invalid_cpu),
        ]
    }

    /// The exclusion reasons with their names, in report order.
    pub fn reasons(&self) -> [(&'static str, u64); 4] {
        [
            ("no select_task_rq_fair (no placement path)", self.no_select),
            ("runnable at sched_waking", self.runnable_at_waking),
            ("fork/exec", self.fork_exec),
            ("CPU outside the topology", self.invalid_cpu),
        ]
    }
}
