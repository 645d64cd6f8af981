//! How long per-task state waiting for an event that may never come is kept: every horizon
//! of the crate, in one place, each with the reason for its value. Lost events (ring-buffer
//! drops, a capture that started mid-wakeup, a task that exited) would otherwise leave entries
//! behind forever; each horizon is far longer than the normal wait it bounds, so it only ever
//! drops what is really lost.

/// `join::Joiner`: a `sched_waking` (and its select record) waiting for the `sched_wakeup`
/// that completes the placement. Normally microseconds; 10 s keeps a wakeup whose IPI was
/// delayed by a stalled or heavily emulated CPU, and bounds the map by the tasks that woke in
/// the last 10 s.
pub const JOIN_WAKING_NS: u64 = 10_000_000_000;

/// `analysis`: a placed wakeup waiting for the wakee's switch-in (wakeup-to-run latency).
/// A wakee can legitimately wait seconds behind CPU hogs or a throttled cgroup; 10 s keeps
/// those in the latency histogram and forgets only switch-ins that were dropped.
pub const WAKE_TO_RUN_NS: u64 = 10_000_000_000;

/// `shadow`: the policies' answers parked between the decision and `sched_wakeup`. The
/// shadow needs them only for that wakeup, which follows within microseconds; 1 s is plenty
/// and keeps the slot pool small (each slot holds every policy's outcome and an idle map).
pub const PARKED_DECISION_NS: u64 = 1_000_000_000;

/// `shadow::state`: a wakeup's claim on its CPU (`ttwu_pending`) normally lasts microseconds,
/// but the wake-list IPI to an idle CPU can take far longer under emulation (27 ms seen under
/// qemu TCG, during which the kernel rightly saw that CPU as not idle). Claims whose
/// `sched_wakeup` was lost usually end earlier, at the task's next switch-in; only what
/// remains is dropped at this age. Shorter than the others because a stuck claim does harm
/// (it marks an idle CPU busy for every later decision), not just memory.
pub const CLAIM_MAX_NS: u64 = 100_000_000;
