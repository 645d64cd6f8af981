//! The extracted workload: what [`super::Extractor`] produces and `--json` writes.
use serde::{Deserialize, Serialize};

use crate::analysis::latency::Hist;

/// Schema of the JSON form; bumped when a field changes meaning.
pub const SCHEMA: u32 = 1;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Shape {
    pub schema: u32,
    /// `uname -r` and CPU count of the recorded machine.
    pub kernel_release: String,
    pub cpus: u32,
    /// From the first to the last event.
    pub duration_ns: u64,
    /// The tasks it covers, in words (the recording's scope or `--scope`).
    pub scope: String,
    /// Busiest first (most wakeups received).
    pub tasks: Vec<TaskShape>,
    pub processes: Vec<ProcessShape>,
    /// In-scope tasks seen after [`super::extract::MAX_TASKS`] were followed: not described.
    pub tasks_not_followed: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProcessShape {
    /// `None`: the recording carries no tgid (classic tracepoints without /proc): every task
    /// is its own group.
    pub tgid: Option<u32>,
    pub comm: String,
    pub tasks: Vec<u32>,
    pub wakeups: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskShape {
    pub pid: u32,
    pub tgid: Option<u32>,
    pub comm: String,
    /// Nice value from the kernel priority the wakeups carried (`prio - 120` for normal tasks).
    pub nice: Option<i32>,
    /// CPU time from a switch-in after a wakeup to the block that ended it (preemptions
    /// inside a burst are summed, not split).
    pub run: Dist,
    /// From a block to the `sched_waking` that ended it.
    pub sleep: Dist,
    /// Wakeups received (`sched_waking`).
    pub woken: u64,
    /// Who woke it, most first; at most [`super::extract::MAX_WAKERS`] entries, the rest in
    /// one `other` entry.
    pub woken_by: Vec<WakerShare>,
    /// CPUs it may run on, when the probes read a mask narrower than the machine.
    pub allowed_cpus: Option<Vec<u32>>,
    /// Distinct CPUs it ran on.
    pub cpus_used: u32,
    /// The CPU it was switched in on most often (among the first 16 it ran on).
    #[serde(default)]
    pub home_cpu: Option<u32>,
    /// Its time on a CPU, in microseconds (run bursts plus a burst still open at the end).
    pub cpu_us: f64,
    /// From its first to its last event.
    pub span_us: f64,
}

/// Who issued a wakeup.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "pid")]
pub enum Waker {
    /// An in-scope task.
    Task(u32),
    /// The idle task was running: an interrupt or timer on an idle CPU.
    Interrupt,
    /// A task outside the scope (a kernel thread, another program).
    Outside,
    /// The wakers past the per-task limit, together.
    Other,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WakerShare {
    pub waker: Waker,
    pub count: u64,
    /// Of `count`, the wakeups whose `select_task_rq_fair` call carried `WF_SYNC`; `None`
    /// where no call was seen (tracepoint-only capture).
    pub sync: Option<u64>,
}

/// A distribution of durations, in microseconds (1 significant digit in the quantiles: about
/// 6 % between bucket bounds; mean and max exact).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Dist {
    pub n: u64,
    pub total_us: f64,
    pub mean_us: f64,
    pub p10_us: f64,
    pub p25_us: f64,
    pub p50_us: f64,
    pub p75_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

impl Dist {
    pub fn of(h: &Hist) -> Self {
        if h.is_empty() {
            return Self::default();
        }
        let q = |x: f64| h.histogram().value_at_quantile(x) as f64 / 1e3;
        let mean = h.mean().unwrap_or(0.0);
        Self {
            n: h.len(),
            total_us: mean * h.len() as f64 / 1e3,
            mean_us: mean / 1e3,
            p10_us: q(0.10),
            p25_us: q(0.25),
            p50_us: q(0.50),
            p75_us: q(0.75),
            p90_us: q(0.90),
            p99_us: q(0.99),
            max_us: h.extremes().map_or(0.0, |(_, m)| m as f64 / 1e3),
        }
    }
}

impl TaskShape {
    /// On a CPU at least half the time it was seen, and rarely woken: a CPU-bound task (a
    /// hog), whose placement matters through the load it adds.
    pub fn cpu_bound(&self) -> bool {
        self.span_us > 0.0 && self.cpu_us >= 0.5 * self.span_us
    }

    /// The waker with the most wakeups, and its share of them.
    pub fn principal(&self) -> Option<(Waker, f64)> {
        let w = self.woken_by.first()?;
        (self.woken > 0).then(|| (w.waker, w.count as f64 / self.woken as f64))
    }

    /// Wakeups by `pid`.
    pub fn woken_by_task(&self, pid: u32) -> u64 {
        self.woken_by
            .iter()
            .find(|w| w.waker == Waker::Task(pid))
            .map_or(0, |w| w.count)
    }
}
