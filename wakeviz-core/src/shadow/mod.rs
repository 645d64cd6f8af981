//! Shadow evaluation: for every placed wakeup, what would each placement policy have chosen
//! from the state at that instant, and how does that compare with what the kernel did.
//!
//! # Decision time
//! The kernel decides inside `select_task_rq_fair`. With function probes the evaluator
//! re-decides when it sees that select record (its exit; the state then includes everything
//! before it) and reads the kernel inputs the probe captured. In tracepoint-only mode it
//! re-decides at `sched_waking` (`prev_cpu` = the waking record's `target_cpu`, the waker's
//! CPU = the CPU the probe ran on; no wake flags). The [`Placement`](crate::join::Placement) for that wakeup only
//! arrives at `sched_wakeup`, after the state has moved on, so each policy's answer (and a copy
//! of the idle map, for the baseline) is parked per pid between the two; [`ShadowEval::on_placement`]
//! scores the parked answers against the kernel's choice. A placement without a parked
//! decision (the caller skipped `on_event`) is decided late from the current state and counted.
//!
//! # Open loop
//! Replay is open loop: the real system followed the kernel's choices, so a policy's choice
//! changes nothing that follows (its own private state, like SIS_PROP's scan-cost average, is
//! the only exception). The report and the JSON say so.
//!
//! # Calling order
//! Call [`ShadowEval::on_event`] for every event, in stream order, and [`ShadowEval::on_placement`]
//! for each `join::Joiner` output, after `on_event` of the event that completed it. What comes
//! out is [`ShadowEval::report`], a typed [`ShadowReport`] (over everything, or over the subset a
//! [`Tally`] of [`Scored`] placements kept).
//!
//! # Layout
//! - [`eval`]: the driver (state, policies, scoring); [`flavour`]: which policy the recorded
//!   kernel runs; `park`: decisions parked until their placement; `watch`: the WF_SYNC check;
//!   [`tally`]: subsets; [`report`]: the typed report;
//! - [`policy`]: the `Policy` trait and the shared kernel stages; [`rule`]: decision rules;
//!   [`policies`]: one file per policy and the registry;
//! - [`state`]: the reconstructed scheduler state; [`occupancy`]: each process's cache
//!   occupancy and preferred LLC; [`budget`]: the kernel's budget formulas;
//!   `hz`: the kernel's HZ from jiffies; [`topo`]: the dense topology;
//!   [`metrics`], [`fidelity`]: per-policy counters and the fidelity classifier; [`spread`]: the
//!   LLCs each process ran on and each policy placed it in.
pub mod budget;
pub mod eval;
pub mod fidelity;
pub mod flavour;
mod hz;
pub mod metrics;
pub mod occupancy;
mod park;
pub mod policies;
pub mod policy;
pub mod report;
pub mod rule;
pub mod scan_model;
pub mod spread;
pub mod state;
pub mod tally;
pub mod topo;
mod watch;

use serde::Serialize;

pub use self::{
    eval::{PolicyId, ShadowEval, evaluators_built},
    flavour::{flavour_of_features, kernel_flavour, kernel_policy, wake_wide},
    report::{DEFAULT_PROBE_NS, DecisionTime, PolicyRow, ProbeCostSource, ShadowReport},
    tally::{Scored, Tally},
};

/// Placements seen but not compared, by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Excluded {
    /// Fork/exec placements (slow path) and `sched_wakeup_new`.
    pub fork_exec: u64,
    /// Wakeups that took no placement path (still runnable, wake-list on the old CPU, pinned):
    /// no select record although the probe was attached, or runnable at `sched_waking`.
    pub no_placement: u64,
    /// Of `no_placement`: no select record although the function probe was attached.
    pub no_select: u64,
    /// Of `no_placement`: tracepoint-only, the wakee was runnable at `sched_waking`.
    pub runnable_at_waking: u64,
    /// CPU numbers outside the recorded topology.
    pub invalid_cpu: u64,
}
