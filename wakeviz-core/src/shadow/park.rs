//! Parking of decisions between the decision point (select exit or `sched_waking`) and the
//! `sched_wakeup` that completes the [`crate::join::Placement`]: per wakee pid, each policy's
//! [`Outcome`], a copy of the idle map (the baseline's idle state is read from it) and what
//! the fidelity classifier needs. Slots are recycled, so steady state allocates nothing.
use super::{metrics::Outcome, policy::Front};
use std::collections::hash_map::Entry;

use crate::{horizons::PARKED_DECISION_NS, pidmap::PidMap};

/// A parked decision.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Record {
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
}

/// A free slot from the pool, or a new one (`np` outcomes and `nw` snapshot words each).
fn take_slot(
    free: &mut Vec<u32>,
    slots: &mut Vec<Record>,
    outcomes: &mut Vec<Outcome>,
    snaps: &mut Vec<u64>,
    np: usize,
    nw: usize,
) -> u32 {
    match free.pop() {
        Some(s) => s,
        None => {
            slots.push(Record::default());
            outcomes.resize(outcomes.len() + np, Outcome::default());
            snaps.resize(snaps.len() + nw, 0);
            (slots.len() - 1) as u32
        }
    }
}

/// Parked decisions, one slot per wakee in flight.
pub(super) struct Parking {
    /// Policies per slot (outcomes) and idle-map words per slot (snapshots).
    np: usize,
    nw: usize,
    pending: PidMap<u32>,
    slots: Vec<Record>,
    outcomes: Vec<Outcome>,
    snaps: Vec<u64>,
    free: Vec<u32>,
}

impl Parking {
    pub fn new(policies: usize, words: usize) -> Self {
        Self {
            np: policies,
            nw: words,
            pending: PidMap::default(),
            slots: Vec::new(),
            outcomes: Vec::new(),
            snaps: Vec::new(),
            free: Vec::new(),
        }
    }

    /// The slot parked for `pid`, or a fresh one.
    pub fn slot_for(&mut self, pid: u32) -> u32 {
        // One lookup while the map is small (the general path below costs two).
        if let Some(e) = self.pending.entry_if_no_eviction(pid) {
            return match e {
                Entry::Occupied(o) => *o.get(),
                Entry::Vacant(v) => {
                    let s = take_slot(
                        &mut self.free,
                        &mut self.slots,
                        &mut self.outcomes,
                        &mut self.snaps,
                        self.np,
                        self.nw,
                    );
                    v.insert(s);
                    s
                }
            };
        }
        if let Some(&s) = self.pending.get(&pid) {
            return s;
        }
        let s = take_slot(
            &mut self.free,
            &mut self.slots,
            &mut self.outcomes,
            &mut self.snaps,
            self.np,
            self.nw,
        );
        // Slots of pids dropped from the (bounded) map go back to the pool.
        let free = &mut self.free;
        self.pending
            .insert_evicting(pid, s, |_, old| free.push(old));
        s
    }

    /// The slot parked for `pid`, if any.
    #[inline]
    pub fn parked(&self, pid: u32) -> Option<u32> {
        self.pending.get(&pid).copied()
    }

    pub fn release(&mut self, pid: u32) {
        if let Some(s) = self.pending.remove(&pid) {
            self.free.push(s);
        }
    }

    /// Drops decisions older than [`PARKED_DECISION_NS`] (their `sched_wakeup` was lost).
    pub fn purge(&mut self, now: u64) {
        let slots = &self.slots;
        let free = &mut self.free;
        self.pending.retain(|_, s| {
            let keep = now.saturating_sub(slots[*s as usize].decided_ns) < PARKED_DECISION_NS;
            if !keep {
                free.push(*s);
            }
            keep
        });
    }

    #[inline]
    pub fn record(&self, slot: u32) -> &Record {
        &self.slots[slot as usize]
    }

    #[inline]
    pub fn record_mut(&mut self, slot: u32) -> &mut Record {
        &mut self.slots[slot as usize]
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
