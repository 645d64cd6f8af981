//! Fidelity: how often the shadow of the running kernel's own policy (SIS_UTIL on 6.x,
//! SIS_PROP before) reproduces the kernel's actual choice, and why it did not.
//!
//! Disagreements are put in the first bucket whose condition holds:
//! 1. `tracepoint_only_no_select_inputs`: no select record, so no wake flags (WF_SYNC), no
//!    kernel inputs, and a decision time approximated by `sched_waking`;
//!    `tracepoint_only_no_wake_flags` when the `sched_waking` probe read the kernel inputs (the
//!    wakee's affinity, loads, flips, run-queue state): still no wake flags, and the inputs and
//!    the decision time are those of `sched_waking`, a little before the kernel's. Where the
//!    probe read `WF_SYNC` from the waker's stack, such a decision goes through the buckets
//!    below like a select record's;
//! 2. `unknown_in_task_kthread_rule`: waker CPU = prev CPU and the waker CPU ran at most one
//!    task, and either the kernel kept the task there while the waker's `PF_KTHREAD` was not
//!    read (older recordings), or the waker was read as a per-CPU kthread, the shadow applied
//!    the stacking rule and the kernel did not: `in_task()` (not readable) was false. Not when
//!    the waker is an idle task (pid 0): its wakeups come from interrupts;
//! 3. `affinity_mask_unknown`: the wakee may not run on every CPU but its mask was not read
//!    (CPUs beyond 255);
//! 4. `delayed_dequeue_sync`: a sync wakeup where `nr_running == 1` and
//!    `nr_running - h_nr_delayed == 1` disagree and the kernel followed the rule the shadow did
//!    not (the recorded kernel lacks the wake_up_sync fix, or has it without `DELAY_DEQUEUE`);
//! 5. `wake_wide_flips_unknown`: `wake_wide()`'s flips were replayed, not read (older
//!    recordings, tracepoint-only), and the kernel's CPU sits on the other side of the
//!    waker/prev LLC split from the shadow's target, as the other `wake_wide()` answer gives: a
//!    thread inherits its parent's `wakee_flips` at fork and keeps them while it wakes nobody,
//!    which no event shows;
//! 6. `numa_affine_reclaim_distance`: waker and prev CPU sit in different packages at a SLIT
//!    distance of 31-32, where the kernel keeps `SD_WAKE_AFFINE` only on AMD Zen
//!    (`node_reclaim_distance` 32, else 30), and the header has no vendor (the shadow assumes 32);
//! 7. `wake_affine_weight_not_modelled`: `wake_affine_idle` was undecided (so `WA_WEIGHT`, which
//!    needs loads, decided in the kernel) and the two choices sit in different LLCs;
//! 8. `wake_affine_weight_h_load`: `WA_WEIGHT` was computed from the probe's loads and the
//!    kernel took the other side (its CPU is the other candidate, or in the other candidate's
//!    LLC): `task_h_load` uses a group `h_load` the kernel refreshes once a jiffy, and the loads
//!    were read at entry, a few hundred ns before the kernel's own reads;
//! 9. `recent_used_cpu_unknown`: the kernel chose an idle CPU of the SIS target's LLC other
//!    than the target and `prev_cpu`, and the shadow did not know the wakee's
//!    `recent_used_cpu` (no SIS pass or fork of that task since the capture started, and the
//!    probe does not read the field), which is what SIS's `recent_used_cpu` rule returns;
//! 10. `snapshot_skew_or_claimed_cpu_race`: the kernel's CPU was busy in the reconstructed state
//!     at decision time although it was not the SIS target (so the kernel saw it idle): our idle
//!     map lags or leads the kernel's by the events in flight (concurrent wakers, IPIs);
//! 11. `stale_or_emulated_has_idle_cores_or_nr_idle_scan`: the shadow used an emulated hint or
//!     budget (not read by the probe) and both choices were otherwise plausible;
//! 12. `unknown`: everything was exact and the kernel's CPU looked idle (SCHED_IDLE or
//!     core-scheduling predicates, vCPU preemption, or out-of-tree features).
use strum::{EnumCount, EnumIter, IntoStaticStr};

use super::{
    policy::{Front, FrontRule},
    topo::{NONE, ShadowTopo},
};

/// Why the shadow disagreed with the kernel; the strum names are the report's and the JSON's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, EnumCount, EnumIter, IntoStaticStr)]
pub enum Bucket {
    #[strum(serialize = "tracepoint_only_no_select_inputs")]
    TracepointOnly,
    #[strum(serialize = "tracepoint_only_no_wake_flags")]
    TracepointWaking,
    #[strum(serialize = "unknown_in_task_kthread_rule")]
    KthreadRule,
    #[strum(serialize = "affinity_mask_unknown")]
    AffinityUnknown,
    #[strum(serialize = "delayed_dequeue_sync")]
    DelayedSync,
    #[strum(serialize = "wake_wide_flips_unknown")]
    WakeWideUnknown,
    #[strum(serialize = "numa_affine_reclaim_distance")]
    NumaAffine,
    #[strum(serialize = "wake_affine_weight_not_modelled")]
    WakeAffineWeight,
    #[strum(serialize = "wake_affine_weight_h_load")]
    WakeAffineWeightLoad,
    #[strum(serialize = "recent_used_cpu_unknown")]
    RecentUnknown,
    #[strum(serialize = "snapshot_skew_or_claimed_cpu_race")]
    SnapshotSkew,
    #[strum(serialize = "stale_or_emulated_has_idle_cores_or_nr_idle_scan")]
    HintOrBudget,
    #[strum(serialize = "unknown")]
    Unknown,
}

impl Bucket {
    pub fn name(self) -> &'static str {
        self.into()
    }
}
/// What the classifier looks at for one disagreement.
#[derive(Clone, Copy, Debug)]
pub struct Disagreement {
    pub has_select: bool,
    pub kernel: u32,
    pub shadow: u32,
    pub w: u32,
    pub p: u32,
    pub front: Front,
    /// The kernel's CPU was idle in the reconstructed state at decision time.
    pub kernel_idle: bool,
    /// The shadow used only probe-read inputs.
    pub shadow_exact: bool,
    pub nr_running_w: u32,
    /// The waker's pid (0: an idle task, so an interrupt-context wakeup).
    pub waker_pid: u32,
    /// The wakee's `recent_used_cpu` as the shadow knew it before this wakeup ([`NONE`] when
    /// unknown).
    pub recent_used: u32,
    /// The waker was read as a per-CPU kthread (`None`: not read).
    pub kthread: Option<bool>,
    /// The wakee may not run everywhere but its mask was not read.
    pub mask_unknown: bool,
    /// `wake_wide()`'s flips were read by the probe.
    pub flips_read: bool,
    /// Tracepoint-only with the inputs read at `sched_waking`.
    pub at_waking: bool,
    /// The wake flags are known (a select record, or `WF_SYNC` from the waker's stack).
    pub flags_known: bool,
}

/// The wake-wide bucket's condition (module docs, bucket 5): the other `wake_wide()` answer
/// explains the kernel's LLC. Not wide: the shadow targeted the waker's side and the kernel
/// stayed in prev's LLC. Wide: the shadow kept prev and the kernel went to the waker's LLC.
fn wide_other_answer(t: &ShadowTopo, d: &Disagreement) -> bool {
    if d.flips_read || t.share_llc(d.w, d.p) {
        return false;
    }
    let (kl, tl) = (t.llc(d.kernel), t.llc(d.front.target));
    if d.front.wide {
        kl == t.llc(d.w) && tl == t.llc(d.p)
    } else {
        kl == t.llc(d.p) && tl == t.llc(d.w)
    }
}

/// The kthread-rule bucket's condition (see the module docs, bucket 2).
fn kthread_rule(d: &Disagreement) -> bool {
    if d.w != d.p || d.nr_running_w > 1 || d.waker_pid == 0 {
        return false;
    }
    match d.kthread {
        None => d.kernel == d.p,
        Some(true) => d.shadow == d.p,
        Some(false) => false,
    }
}

/// `WA_WEIGHT` decided and the kernel took the other side.
fn weight_other_side(t: &ShadowTopo, d: &Disagreement) -> bool {
    let other = match d.front.rule {
        FrontRule::WeightWaker => d.p,
        FrontRule::WeightPrev => d.w,
        _ => return false,
    };
    d.kernel == other || (t.llc(d.kernel) == t.llc(other) && t.llc(d.kernel) != t.llc(d.shadow))
}

pub fn classify(t: &ShadowTopo, d: &Disagreement) -> Bucket {
    if !d.has_select && !d.at_waking {
        Bucket::TracepointOnly
    } else if !d.has_select && !d.flags_known {
        Bucket::TracepointWaking
    } else if kthread_rule(d) {
        Bucket::KthreadRule
    } else if d.mask_unknown {
        Bucket::AffinityUnknown
    } else if d.front.delayed_split && (d.kernel == d.w) != (d.front.target == d.w) {
        Bucket::DelayedSync
    } else if wide_other_answer(t, d) {
        Bucket::WakeWideUnknown
    } else if t.affine_vendor_dependent(d.w, d.p) {
        Bucket::NumaAffine
    } else if d.front.rule == FrontRule::Undecided && t.llc(d.kernel) != t.llc(d.shadow) {
        Bucket::WakeAffineWeight
    } else if weight_other_side(t, d) {
        Bucket::WakeAffineWeightLoad
    } else if d.recent_used == NONE
        && d.kernel_idle
        && d.kernel != d.front.target
        && d.kernel != d.p
        && t.share_llc(d.kernel, d.front.target)
    {
        Bucket::RecentUnknown
    } else if !d.kernel_idle && d.kernel != d.front.target {
        Bucket::SnapshotSkew
    } else if !d.shadow_exact {
        Bucket::HintOrBudget
    } else {
        Bucket::Unknown
    }
}

/// The fidelity verdict on one scored placement, so a subset can be tallied without
/// classifying again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// The shadow chose the kernel's CPU.
    pub agree: bool,
    /// Decided from a select record with every kernel input the policy read exact.
    pub exact: bool,
    /// Why not, when it disagreed.
    pub bucket: Option<Bucket>,
}

impl Verdict {
    pub fn of(t: &ShadowTopo, d: &Disagreement) -> Self {
        let agree = d.kernel == d.shadow;
        Self {
            agree,
            exact: d.has_select && d.shadow_exact,
            bucket: (!agree).then(|| classify(t, d)),
        }
    }
}

/// Agreement counts of the policy standing for the running kernel.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fidelity {
    pub evaluated: u64,
    pub agree: u64,
    pub buckets: [u64; Bucket::COUNT],
    /// Evaluated with a select record and every kernel input the policy read exact.
    pub exact_evaluated: u64,
    pub exact_agree: u64,
}

impl Fidelity {
    pub fn add(&mut self, v: &Verdict) {
        self.evaluated += 1;
        if v.exact {
            self.exact_evaluated += 1;
            self.exact_agree += u64::from(v.agree);
        }
        if v.agree {
            self.agree += 1;
        }
        if let Some(b) = v.bucket {
            self.buckets[b as usize] += 1;
        }
    }

    pub fn agreement(&self) -> Option<f64> {
        (self.evaluated > 0).then(|| self.agree as f64 / self.evaluated as f64)
    }

    pub fn exact_agreement(&self) -> Option<f64> {
        (self.exact_evaluated > 0).then(|| self.exact_agree as f64 / self.exact_evaluated as f64)
    }
}
