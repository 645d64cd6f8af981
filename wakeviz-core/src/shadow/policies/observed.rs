//! Baseline: the kernel's own choice (`select_task_rq_fair`'s return value, else the CPU of
//! `sched_wakeup`). The evaluator fills in the CPU at placement time, because without function
//! probes the choice is only known at `sched_wakeup`; its idle state is read from the snapshot
//! taken at the decision, and its probe count is the kernel-flavour shadow's (modelled).
use crate::shadow::{
    policy::{Ctx, Decision, Policy, Rule, Scratch, Stage},
    state::State,
    topo::ShadowTopo,
};

pub struct Observed;

impl Policy for Observed {
    fn name(&self) -> &'static str {
        super::name::OBSERVED
    }
    fn describe(&self) -> &'static str {
        "baseline: the running kernel's choice"
    }
    fn is_observed(&self) -> bool {
        true
    }
    fn decide(&mut self, ctx: &Ctx, _t: &ShadowTopo, _st: &State, _s: &mut Scratch) -> Decision {
        Decision {
            cpu: ctx.p,
            probes: 0,
            rule: Rule::stage(Stage::Observed),
            clear_hint: None,
            behind_waker: false,
            scan: None,
        }
    }
}
