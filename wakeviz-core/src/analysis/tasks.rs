//! Per task: as a wakee (wakeups received, how many crossed an LLC, migrations, p99 of
//! wakeup-to-run latency) and as a waker (wakeups issued, how many crossed an LLC). A
//! placement problem is usually one program's (a pipeline stage woken across sockets); the
//! machine-wide figures hide which.
//!
//! Bounded: at most [`MAX_TASKS`] pids are followed. When a new one would exceed it, the half
//! with the fewest wakeups (received + issued) is folded into one "other" row, so every count
//! is still in some row and the totals stay exact; only the attribution of the small tasks is
//! given up. Each followed task costs one small histogram ([`Hist::tiny`], about 4 KB).
use std::collections::HashMap;

use serde::Serialize;

use super::part::{Ctx, Part, Placed, Ran};
use super::{
    latency::{Hist, Quantiles},
    placement::Classified,
};
use crate::format::Header;
use crate::{event::TaskTable, pidmap::PidBuild, topology::Level};

/// Most tasks followed one by one.
pub const MAX_TASKS: usize = 512;

#[derive(Clone, Debug)]
struct Acc {
    wakeups: u64,
    cross_llc: u64,
    migrations: u64,
    latency: Hist,
    wakes: u64,
    wakes_cross_llc: u64,
}

impl Acc {
    fn new() -> Self {
        Self {
            wakeups: 0,
            cross_llc: 0,
            migrations: 0,
            latency: Hist::tiny(),
            wakes: 0,
            wakes_cross_llc: 0,
        }
    }

    fn score(&self) -> u64 {
        self.wakeups + self.wakes
    }

    fn merge(&mut self, o: &Self) {
        self.wakeups += o.wakeups;
        self.cross_llc += o.cross_llc;
        self.migrations += o.migrations;
        self.latency.merge(&o.latency);
        self.wakes += o.wakes;
        self.wakes_cross_llc += o.wakes_cross_llc;
    }

    fn row(&self, pid: Option<u32>, comm: String, tasks: u64) -> TaskRow {
        let q = Quantiles::of(&self.latency);
        TaskRow {
            pid,
            comm,
            tasks,
            wakeups: self.wakeups,
            cross_llc: self.cross_llc,
            migrations: self.migrations,
            wakeup_latency_n: q.count,
            wakeup_latency_p99_ns: (q.count > 0).then_some(q.p99),
            wakes: self.wakes,
            wakes_cross_llc: self.wakes_cross_llc,
        }
    }
}

fn crosses_llc(c: &Classified) -> bool {
    c.vs_waker.is_some_and(|l| l > Level::SameLlc)
}

/// The fold.
#[derive(Clone, Debug)]
pub struct TaskStats {
    map: HashMap<u32, Acc, PidBuild>,
    other: Acc,
    /// Tasks folded into `other`.
    other_tasks: u64,
    cap: usize,
}

impl Default for TaskStats {
    fn default() -> Self {
        Self::with_cap(MAX_TASKS)
    }
}

impl TaskStats {
    pub fn with_cap(cap: usize) -> Self {
        Self {
            map: HashMap::default(),
            other: Acc::new(),
            other_tasks: 0,
            cap: cap.max(2),
        }
    }

    fn entry(&mut self, pid: u32) -> &mut Acc {
        if !self.map.contains_key(&pid) && self.map.len() >= self.cap {
            self.evict();
        }
        self.map.entry(pid).or_insert_with(Acc::new)
    }

    /// Folds the less busy half into `other`: amortised O(log cap) per new task.
    #[cold]
    fn evict(&mut self) {
        let mut v: Vec<(u64, u32)> = self.map.iter().map(|(p, a)| (a.score(), *p)).collect();
        v.sort_unstable();
        for (_, pid) in v.iter().take(self.map.len() / 2) {
            if let Some(a) = self.map.remove(pid) {
                self.other.merge(&a);
                self.other_tasks += 1;
            }
        }
    }

    /// A placed wakeup (not a fork) of `wakee` by `waker`.
    #[inline]
    pub fn placement(&mut self, waker: u32, wakee: u32, c: &Classified) {
        let cross = crosses_llc(c);
        let migrated = c.vs_prev.is_some_and(|l| l != Level::SameCpu);
        let e = self.entry(wakee);
        e.wakeups += 1;
        e.cross_llc += u64::from(cross);
        e.migrations += u64::from(migrated);
        let w = self.entry(waker);
        w.wakes += 1;
        w.wakes_cross_llc += u64::from(cross);
    }

    /// A wakeup-to-run latency of `pid` (after a placed wakeup). A task folded into `other`
    /// since its wakeup counts there.
    #[inline]
    pub fn wakeup_latency(&mut self, pid: u32, v: u64) {
        self.map
            .get_mut(&pid)
            .map_or(&mut self.other, |a| a)
            .latency
            .record(v);
    }

    /// Display rows; names from `names` as they are now.
    pub fn section(&self, names: &TaskTable) -> TaskSection {
        let mut rows: Vec<TaskRow> = self
            .map
            .iter()
            .map(|(pid, a)| a.row(Some(*pid), names.comm(*pid).into_owned(), 1))
            .collect();
        rows.sort_by(|a, b| TaskSort::Wakeups.cmp(a, b));
        let mut by: HashMap<String, (Acc, u64), PidBuild> = HashMap::default();
        for (pid, a) in &self.map {
            let (acc, n) = by
                .entry(names.comm(*pid).into_owned())
                .or_insert_with(|| (Acc::new(), 0));
            acc.merge(a);
            *n += 1;
        }
        let mut by_comm: Vec<TaskRow> = by
            .into_iter()
            .map(|(comm, (a, n))| a.row(None, comm, n))
            .collect();
        by_comm.sort_by(|a, b| TaskSort::Wakeups.cmp(a, b));
        TaskSection {
            max_tasks: self.cap,
            rows,
            by_comm,
            other: self.other.row(None, "other".into(), self.other_tasks),
        }
    }
}

/// One task (`pid` set) or a group of them (by comm, or the "other" bucket).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TaskRow {
    pub pid: Option<u32>,
    pub comm: String,
    /// Tasks in the row (1 for a pid).
    pub tasks: u64,
    /// As the wakee: placed wakeups (not forks) received.
    pub wakeups: u64,
    /// Of those, landed outside the waker's LLC.
    pub cross_llc: u64,
    /// Of those, not on the task's previous CPU.
    pub migrations: u64,
    pub wakeup_latency_n: u64,
    /// Within about 6 % (one significant digit); `null` without a sample.
    pub wakeup_latency_p99_ns: Option<u64>,
    /// As the waker: wakeups issued (of wakees that pass the filter).
    pub wakes: u64,
    pub wakes_cross_llc: u64,
}

impl TaskRow {
    /// Share of received wakeups that crossed an LLC, `None` without any.
    pub fn cross_llc_share(&self) -> Option<f64> {
        (self.wakeups > 0).then(|| self.cross_llc as f64 / self.wakeups as f64)
    }
}

/// Cumulative (since the start or the last filter change / reset).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TaskSection {
    pub max_tasks: usize,
    /// Every followed task, most wakeups first.
    pub rows: Vec<TaskRow>,
    /// The same tasks grouped by comm, most wakeups first.
    pub by_comm: Vec<TaskRow>,
    /// Tasks no longer followed one by one (`tasks` of them).
    pub other: TaskRow,
}

/// The columns the task table sorts by, all descending (the most notable first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TaskSort {
    #[default]
    Wakeups,
    CrossLlc,
    P99,
    Migrations,
    Wakes,
}

impl TaskSort {
    pub const ALL: [Self; 5] = [
        Self::Wakeups,
        Self::CrossLlc,
        Self::P99,
        Self::Migrations,
        Self::Wakes,
    ];

    pub const fn label(self) -> &'static str {
        match self {
            Self::Wakeups => "wakeups",
            Self::CrossLlc => "xLLC%",
            Self::P99 => "p99",
            Self::Migrations => "migr",
            Self::Wakes => "wakes",
        }
    }

    pub fn next(self) -> Self {
        let i = Self::ALL.iter().position(|&s| s == self).unwrap_or(0);
        Self::ALL[(i + 1) % Self::ALL.len()]
    }

    /// Descending by the column; ties (and rows without a value, which go last) by wakeups,
    /// then by pid, so the order is total and stable across frames.
    pub fn cmp(self, a: &TaskRow, b: &TaskRow) -> std::cmp::Ordering {
        let key = |r: &TaskRow| -> (Option<u64>, u64) {
            let v = match self {
                Self::Wakeups => Some(r.wakeups),
                // Parts per million: exact enough to order, and total (no NaN).
                Self::CrossLlc => r.cross_llc_share().map(|s| (s * 1e6) as u64),
                Self::P99 => r.wakeup_latency_p99_ns,
                Self::Migrations => Some(r.migrations),
                Self::Wakes => Some(r.wakes),
            };
            (v, r.wakeups)
        };
        key(b)
            .cmp(&key(a))
            .then_with(|| a.pid.cmp(&b.pid))
            .then_with(|| a.comm.cmp(&b.comm))
    }
}

impl TaskSection {
    /// The rows in `sort` order: what the table shows and what Enter picks from.
    pub fn sorted(&self, sort: TaskSort) -> Vec<&TaskRow> {
        let mut v: Vec<&TaskRow> = self.rows.iter().collect();
        v.sort_by(|a, b| sort.cmp(a, b));
        v
    }
}

impl Part for TaskStats {
    fn new(_: &Header) -> Self {
        Self::default()
    }

    #[inline]
    fn on_placement(&mut self, _: &Ctx, pl: &Placed) {
        self.placement(pl.p.waker_pid, pl.p.pid, pl.class);
    }

    #[inline]
    fn on_ran(&mut self, _: &Ctx, r: &Ran) {
        self.wakeup_latency(r.pid, r.latency_ns);
    }

    fn rescope(&mut self, _: &Ctx) {
        *self = Self::default();
    }

    fn fill(&self, cx: &Ctx, s: &mut super::Snapshot) {
        s.tasks = self.section(cx.tasks);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Comm, TaskName};

    fn c(w: Level, p: Level) -> Classified {
        Classified {
            vs_waker: Some(w),
            vs_prev: Some(p),
            waker_prev: None,
            affine: false,
        }
    }

    fn names() -> TaskTable {
        let mut t = TaskTable::default();
        for (pid, comm) in [(10, "server"), (20, "client"), (21, "client"), (30, "cron")] {
            t.learn(TaskName {
                pid,
                comm: Comm::new(comm),
                tgid: 0,
                cgroup: 0,
            });
        }
        t
    }

    #[test]
    fn wakee_and_waker_sides() {
        let mut s = TaskStats::default();
        use Level::*;
        // server (10) wakes client 20 twice across packages, once in its LLC; 21 once locally.
        s.placement(10, 20, &c(CrossPackage, SameCpu));
        s.placement(10, 20, &c(CrossPackage, SameLlc));
        s.placement(10, 20, &c(SameLlc, SameCpu));
        s.placement(10, 21, &c(SameCpu, SameCpu));
        s.placement(20, 10, &c(SameNode, SameNode));
        for v in [1_000, 2_000, 3_000] {
            s.wakeup_latency(20, v);
        }
        let sec = s.section(&names());
        let row = |pid| sec.rows.iter().find(|r| r.pid == Some(pid)).expect("row");
        let r20 = row(20);
        assert_eq!((r20.wakeups, r20.cross_llc, r20.migrations), (3, 2, 1));
        assert_eq!(r20.comm, "client");
        assert_eq!(r20.wakeup_latency_p99_ns, Some(3_000));
        assert_eq!((r20.wakes, r20.wakes_cross_llc), (1, 1));
        let r10 = row(10);
        assert_eq!((r10.wakes, r10.wakes_cross_llc), (4, 2));
        assert_eq!((r10.wakeups, r10.cross_llc, r10.migrations), (1, 1, 1));
        assert_eq!(row(21).wakeup_latency_p99_ns, None);
        assert_eq!(sec.rows[0].pid, Some(20), "most wakeups first");
        let client = &sec.by_comm[0];
        assert_eq!((client.comm.as_str(), client.tasks), ("client", 2));
        assert_eq!((client.wakeups, client.wakes), (4, 1));
        assert_eq!(sec.other.tasks, 0);
    }

    #[test]
    fn sort_columns_order_descending_and_none_last() {
        let mut s = TaskStats::default();
        use Level::*;
        s.placement(1, 20, &c(SameCpu, SameCpu));
        s.placement(1, 20, &c(SameCpu, SameCpu));
        s.placement(1, 20, &c(SameCpu, SameCpu));
        s.placement(1, 21, &c(CrossPackage, SameLlc));
        s.wakeup_latency(21, 9_000);
        s.wakeup_latency(20, 10);
        let sec = s.section(&names());
        let pids = |k| sec.sorted(k).iter().map(|r| r.pid).collect::<Vec<_>>();
        assert_eq!(pids(TaskSort::Wakeups), [Some(20), Some(21), Some(1)]);
        assert_eq!(pids(TaskSort::CrossLlc), [Some(21), Some(20), Some(1)]);
        assert_eq!(pids(TaskSort::P99), [Some(21), Some(20), Some(1)]);
        assert_eq!(pids(TaskSort::Migrations), [Some(21), Some(20), Some(1)]);
        assert_eq!(pids(TaskSort::Wakes), [Some(1), Some(20), Some(21)]);
        let mut k = TaskSort::default();
        for _ in 0..TaskSort::ALL.len() {
            k = k.next();
        }
        assert_eq!(k, TaskSort::Wakeups, "o cycles through every column");
    }

    #[test]
    fn bounded_with_an_exact_other_bucket() {
        let mut s = TaskStats::with_cap(8);
        // pid 1 wakes 100 distinct short-lived tasks; pid 2 is woken 50 times.
        for p in 0..50 {
            s.placement(1, 2, &c(Level::SameCpu, Level::SameCpu));
            s.placement(1, 1_000 + p, &c(Level::SameNode, Level::SameCpu));
            s.placement(1, 2_000 + p, &c(Level::SameCpu, Level::SameCpu));
        }
        let sec = s.section(&TaskTable::default());
        assert!(sec.rows.len() <= 8, "{}", sec.rows.len());
        let total: u64 = sec.rows.iter().map(|r| r.wakeups).sum::<u64>() + sec.other.wakeups;
        assert_eq!(total, 150, "no wakeup is lost by folding tasks away");
        let cross: u64 = sec.rows.iter().map(|r| r.cross_llc).sum::<u64>() + sec.other.cross_llc;
        assert_eq!(cross, 50);
        assert!(sec.other.tasks > 90, "{}", sec.other.tasks);
        let busy = |pid| sec.rows.iter().find(|r| r.pid == Some(pid)).cloned();
        assert_eq!(busy(2).map(|r| r.wakeups), Some(50), "the busy wakee stays");
        assert_eq!(busy(1).map(|r| r.wakes), Some(150), "the busy waker stays");
    }
}
