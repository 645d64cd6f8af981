//! Parking of decisions between the decision point (select exit or `sched_waking`) and the
//! `sched_wakeup` that completes the [`crate::join::Placement`]: per wakee pid, each policy's
//! [`Outcome`], a copy of the idle map (the baseline's idle state is read from it) and what
//! the fidelity classifier needs. Slots are recycled, so steady state allocates nothing.
use super::{metrics::Outcome, policy::Front};
use crate::{horizons::PARKED_DECISION_NS, pidslab::PidSlab};

/// A parked decision.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Record {
    /// Parked (a released slot stays with its pid, vacant, for the task's next decision).
    pub live: bool,
    pub pid: u32,
    pub decided_ns: u64,
    pub w: u32,
    pub p: u32,
    pub has_select: bool,
    /// The kernel's choice when the select record gave it, with its queue length then.
    pub kernel_queue: Option<(u32, u32)>,
    /// Tracepoint-only: the wakee was still runnable at `sched_waking` (`ttwu_runnable`, no
    /// placement).
    pub no_placement: bool,
    pub front: Front,
    pub nr_running_w: u32,
    pub waker_pid: u32,
    /// The wakee's `recent_used_cpu` as known before this wakeup (for the fidelity buckets).
    pub recent_used: u32,
    /// The waker was read as a per-CPU kthread (`None`: not read).
    pub kthread: Option<bool>,
    /// The wakee may not run everywhere but its mask was not read (> 256 CPUs).
    pub mask_unknown: bool,
    /// `wake_wide()`'s flips came from the probe (ABI 3), not the replay.
    pub flips_read: bool,
    /// The LLC the wakee's process prefers, when it has one.
    pub pref_llc: Option<u32>,
    /// Tracepoint-only, with the select inputs read at `sched_waking`.
    pub at_waking: bool,
    /// The wake flags are known (a select record, or `WF_SYNC` from the waker's stack).
    pub flags_known: bool,
    /// What the running kernel's model scanned (SIS_UTIL kernels), for the scan comparison.
    pub model_scan: Option<super::scan_model::ModelScan>,
}

/// Parked decisions, one slot per wakee in flight: the record in a [`PidSlab`], and each
/// slot's outcomes and idle-map snapshot at the same index in two flat vectors. A released
/// decision only marks its record vacant (as the joiner does): the task's next decision takes
/// the slot back without relinking its pid; `purge` frees the vacant ones.
pub(super) struct Parking {
    /// Policies per slot (outcomes) and idle-map words per slot (snapshots).
    np: usize,
    nw: usize,
    pending: PidSlab<Record>,
    outcomes: Vec<Outcome>,
    snaps: Vec<u64>,
}

impl Parking {
    pub(super) fn evicted(&self) -> u64 {
        self.pending.evicted()
    }

    pub fn new(policies: usize, words: usize) -> Self {
        Self {
            np: policies,
            nw: words,
            pending: PidSlab::default(),
            outcomes: Vec::new(),
            snaps: Vec::new(),
        }
    }

    /// The slot parked for `pid`, or a fresh one; the caller writes its (live) record.
    #[inline]
    pub fn slot_for(&mut self, pid: u32) -> u32 {
        let s = self.pending.slot_or_default(pid);
        let n = s as usize + 1;
        if self.outcomes.len() < n * self.np {
            self.outcomes.resize(n * self.np, Outcome::default());
            self.snaps.resize(n * self.nw, 0);
        }
        s
    }

    /// The slot parked for `pid`, if any.
    #[inline]
    pub fn parked(&self, pid: u32) -> Option<u32> {
        self.pending.slot(pid).filter(|&s| self.pending.at(s).live)
    }

    #[inline]
    pub fn release(&mut self, pid: u32) {
        if let Some(s) = self.pending.slot(pid) {
            self.pending.at_mut(s).live = false;
        }
    }

    /// Drops decisions older than [`PARKED_DECISION_NS`] (their `sched_wakeup` was lost) and
    /// frees the vacant slots.
    pub fn purge(&mut self, now: u64) {
        self.pending
            .retain(|r| r.live && now.saturating_sub(r.decided_ns) < PARKED_DECISION_NS);
    }

    #[inline]
    pub fn record(&self, slot: u32) -> &Record {
        self.pending.at(slot)
    }

    #[inline]
    pub fn record_mut(&mut self, slot: u32) -> &mut Record {
        self.pending.at_mut(slot)
    }

    /// Each policy's outcome in `slot`, registry order.
    #[inline]
    pub fn outcomes(&self, slot: u32) -> &[Outcome] {
        let b = slot as usize * self.np;
        &self.outcomes[b..b + self.np]
    }

    #[inline]
    pub fn outcomes_mut(&mut self, slot: u32) -> &mut [Outcome] {
        let b = slot as usize * self.np;
        &mut self.outcomes[b..b + self.np]
    }

    /// The idle map as of the decision in `slot` (words of a [`crate::topology::CpuSet`]).
    #[inline]
    pub fn snap(&self, slot: u32) -> &[u64] {
        let b = slot as usize * self.nw;
        &self.snaps[b..b + self.nw]
    }

    #[inline]
    pub fn snap_mut(&mut self, slot: u32) -> &mut [u64] {
        let b = slot as usize * self.nw;
        &mut self.snaps[b..b + self.nw]
    }
}
