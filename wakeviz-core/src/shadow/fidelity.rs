//! Fidelity: how often the shadow of the running kernel's own policy (SIS_UTIL on 6.x,
//! SIS_PROP before) reproduces the kernel's actual choice, and why it did not (spec §9.6).
//!
//! Disagreements are put in the first bucket whose condition holds:
//! 1. `tracepoint_only_no_select_inputs`: no select record, so no wake flags (WF_SYNC), no
//!    kernel inputs, and a decision time approximated by `sched_waking`;
//! 2. `unknown_in_task_kthread_rule`: waker CPU = prev CPU, the kernel kept the task there and
//!    the waker CPU ran at most one task — exactly what the per-CPU-kthread stacking rule does,
//!    which needs the waker's `PF_KTHREAD`/`in_task()` (not captured). Not when the waker is an
//!    idle task (pid 0): its wakeups come from interrupts, where `in_task()` is false and the
//!    rule cannot fire;
//! 3. `numa_affine_reclaim_distance`: waker and prev CPU sit in different packages at a SLIT
//!    distance of 31-32, where the kernel keeps `SD_WAKE_AFFINE` only on AMD Zen
//!    (`node_reclaim_distance` 32, else 30); the shadow assumes 32 and the header has no vendor;
//! 4. `wake_affine_weight_not_modelled`: `wake_affine_idle` was undecided (so `WA_WEIGHT`, which
//!    needs loads, decided in the kernel) and the two choices sit in different LLCs;
//! 5. `recent_used_cpu_unknown`: the kernel chose an idle CPU of the SIS target's LLC other
//!    than the target and `prev_cpu`, and the shadow did not know the wakee's
//!    `recent_used_cpu` (no SIS pass or fork of that task since the capture started, and the
//!    probe does not read the field), which is what SIS's `recent_used_cpu` rule returns;
//! 6. `snapshot_skew_or_claimed_cpu_race`: the kernel's CPU was busy in the reconstructed state
//!    at decision time although it was not the SIS target (so the kernel saw it idle): our idle
//!    map lags or leads the kernel's by the events in flight (concurrent wakers, IPIs);
//! 7. `stale_or_emulated_has_idle_cores_or_nr_idle_scan`: the shadow used an emulated hint or
//!    budget (not read by the probe) and both choices were otherwise plausible;
//! 8. `unknown`: everything was exact and the kernel's CPU looked idle (affinity masks, which
//!    are not captured, SCHED_IDLE or core-scheduling predicates, or out-of-tree features).
use serde_json::{Value, json};

use super::{
    policy::{Front, FrontRule},
    topo::{NONE, ShadowTopo},
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bucket {
    TracepointOnly,
    KthreadRule,
    NumaAffine,
    WakeAffineWeight,
    RecentUnknown,
    SnapshotSkew,
    HintOrBudget,
    Unknown,
}

impl Bucket {
    pub const ALL: [Self; 8] = [
        Self::TracepointOnly,
        Self::KthreadRule,
        Self::NumaAffine,
        Self::WakeAffineWeight,
        Self::RecentUnknown,
        Self::SnapshotSkew,
        Self::HintOrBudget,
        Self::Unknown,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            Self::TracepointOnly => "tracepoint_only_no_select_inputs",
            Self::KthreadRule => "unknown_in_task_kthread_rule",
            Self::NumaAffine => "numa_affine_reclaim_distance",
            Self::WakeAffineWeight => "wake_affine_weight_not_modelled",
            Self::RecentUnknown => "recent_used_cpu_unknown",
            Self::SnapshotSkew => "snapshot_skew_or_claimed_cpu_race",
            Self::HintOrBudget => "stale_or_emulated_has_idle_cores_or_nr_idle_scan",
            Self::Unknown => "unknown",
        }
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
}

pub fn classify(t: &ShadowTopo, d: &Disagreement) -> Bucket {
    if !d.has_select {
        Bucket::TracepointOnly
    } else if d.w == d.p && d.kernel == d.p && d.nr_running_w <= 1 && d.waker_pid != 0 {
        Bucket::KthreadRule
    } else if t.affine_vendor_dependent(d.w, d.p) {
        Bucket::NumaAffine
    } else if d.front.rule == FrontRule::Undecided && t.llc(d.kernel) != t.llc(d.shadow) {
        Bucket::WakeAffineWeight
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

#[derive(Clone, Debug)]
pub struct Fidelity {
    pub policy: &'static str,
    pub evaluated: u64,
    pub agree: u64,
    pub buckets: [u64; Bucket::ALL.len()],
    /// Evaluated with a select record and every kernel input the policy read exact.
    pub exact_evaluated: u64,
    pub exact_agree: u64,
}

impl Fidelity {
    pub fn new(policy: &'static str) -> Self {
        Self {
            policy,
            evaluated: 0,
            agree: 0,
            buckets: [0; Bucket::ALL.len()],
            exact_evaluated: 0,
            exact_agree: 0,
        }
    }

    pub fn record(&mut self, t: &ShadowTopo, d: &Disagreement) {
        self.evaluated += 1;
        let ok = d.kernel == d.shadow;
        if d.has_select && d.shadow_exact {
            self.exact_evaluated += 1;
            self.exact_agree += u64::from(ok);
        }
        if ok {
            self.agree += 1;
        } else {
            let b = classify(t, d);
            if let Some(i) = Bucket::ALL.iter().position(|&x| x == b) {
                self.buckets[i] += 1;
            }
        }
    }

    pub fn agreement(&self) -> Option<f64> {
        (self.evaluated > 0).then(|| self.agree as f64 / self.evaluated as f64)
    }

    pub fn to_json(&self) -> Value {
        let mut m = serde_json::Map::new();
        for (b, n) in Bucket::ALL.iter().zip(self.buckets) {
            m.insert(b.name().into(), n.into());
        }
        json!({
            "policy": self.policy,
            "agreement": self.agreement(),
            "evaluated": self.evaluated,
            "exact_inputs_evaluated": self.exact_evaluated,
            "exact_inputs_agreement": (self.exact_evaluated > 0)
                .then(|| self.exact_agree as f64 / self.exact_evaluated as f64),
            "disagreements": m,
        })
    }
}
