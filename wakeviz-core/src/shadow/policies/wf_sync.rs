//! P2, Andrei Vagin's WF_SYNC wake-local patch (Oct 2022, not merged) on top of SIS_UTIL:
//! when the wakeup is sync, the affine step settled on the waker's CPU and the waker runs
//! alone there, skip SIS and queue the wakee behind the waker.
//!
//! The delayed-dequeue variant (`wf_sync_delayed`) counts "alone" as `nr_running - delayed`
//! (6.12+ kernels keep sleeping "sched_delayed" tasks on the queue), from the waker rq's
//! `cfs_h_nr_delayed()` the select probe reads (ABI 2). Recordings without the count (older
//! ones, or kernels without the field) make it equal the plain policy.
use crate::shadow::{
    policy::{Ctx, Decision, Policy, Rule, Scratch, sis_util, wf_sync_wake_local},
    state::State,
    topo::ShadowTopo,
};

pub struct WfSync {
    /// Subtract delayed-dequeue tasks from the waker CPU's count.
    pub delayed_variant: bool,
}

/// WF_SYNC wake-local: queued behind the waker.
const SYNC_WAKE_LOCAL: Rule = Rule::own(0);

impl Policy for WfSync {
    fn name(&self) -> &'static str {
        if self.delayed_variant {
            "wf_sync_delayed"
        } else {
            "wf_sync"
        }
    }
    fn describe(&self) -> &'static str {
        if self.delayed_variant {
            "P2b WF_SYNC wake-local, nr_running minus the waker rq's delayed tasks"
        } else {
            "P2 WF_SYNC wake-local (Vagin 2022) on SIS_UTIL"
        }
    }
    fn rules(&self) -> &'static [&'static str] {
        &["sync_wake_local"]
    }
    fn approximations(&self) -> &'static [&'static str] {
        if self.delayed_variant {
            &["wf_sync_delayed counts no delayed task where the recording lacks the count"]
        } else {
            &[]
        }
    }
    fn needs_select_records(&self) -> Option<&'static str> {
        Some("WF_SYNC is a select_task_rq_fair flag: without select records it is unknown")
    }
    fn decide(&mut self, ctx: &Ctx, t: &ShadowTopo, st: &State, s: &mut Scratch) -> Decision {
        let f = ctx.front();
        if f.sync {
            let delayed = if self.delayed_variant {
                ctx.inputs.waker_h_nr_delayed.unwrap_or_else(|| {
                    ctx.mark_inexact();
                    0
                })
            } else {
                0
            };
            let nr = ctx.nr_running_w(st).saturating_sub(delayed);
            if wf_sync_wake_local(f.sync, f.target, ctx.w, nr) {
                return Decision {
                    cpu: ctx.w,
                    probes: f.probes,
                    rule: SYNC_WAKE_LOCAL,
                    clear_hint: None,
                    behind_waker: true,
                    scan: None,
                };
            }
        }
        sis_util(ctx, t, st, s).0
    }
}
