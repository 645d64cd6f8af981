//! The kernel's SIS_UTIL placement with one `wake_affine` feature, `WA_IDLE` or `WA_WEIGHT`,
//! set the other way from the recorded kernel's: "what if I flip it?". Every other kernel-like
//! policy keeps the recording's own setting of these features, so these two are what
//! `wakeviz experiment` and `wakeviz diff` replay to predict a flip of them.
//!
//! Only FRONT (`wake_affine`) changes: `WA_IDLE` off goes straight to `WA_WEIGHT`; `WA_WEIGHT`
//! off leaves an undecided `wake_affine_idle` on `prev_cpu`. `WA_WEIGHT` needs the loads the
//! select probe reads; where they are missing the weight step keeps `prev_cpu`, as the kernel
//! model does.
use crate::{
    sched_feature::SchedFeature,
    shadow::{
        policy::{Ctx, Decision, FrontRule, KernelRules, Policy, Scratch, sis_util},
        state::State,
        topo::ShadowTopo,
    },
};

/// `SIS_UTIL` with the recording's `WA_IDLE` or `WA_WEIGHT` flipped.
pub struct WaFlip {
    feature: SchedFeature,
}

impl WaFlip {
    pub const IDLE: Self = Self {
        feature: SchedFeature::WaIdle,
    };
    pub const WEIGHT: Self = Self {
        feature: SchedFeature::WaWeight,
    };

    /// Whether FRONT got as far as this policy's feature: before it (`WF_CURRENT_CPU`, a wide
    /// or non-affine wakeup, waker on prev) the flip changes nothing.
    fn reached(&self, rule: FrontRule) -> bool {
        match self.feature {
            SchedFeature::WaIdle => !matches!(
                rule,
                FrontRule::CurrentCpu | FrontRule::NotAffine | FrontRule::SameCpu
            ),
            _ => matches!(
                rule,
                FrontRule::Undecided | FrontRule::WeightWaker | FrontRule::WeightPrev
            ),
        }
    }

    /// The recorded rules with this policy's feature flipped.
    pub fn flipped(&self, r: KernelRules) -> KernelRules {
        match self.feature {
            SchedFeature::WaIdle => KernelRules {
                wa_idle: !r.wa_idle,
                ..r
            },
            _ => KernelRules {
                wa_weight: !r.wa_weight,
                ..r
            },
        }
    }
}

impl Policy for WaFlip {
    fn name(&self) -> &'static str {
        match self.feature {
            SchedFeature::WaIdle => super::name::FLIP_WA_IDLE,
            _ => super::name::FLIP_WA_WEIGHT,
        }
    }
    fn describe(&self) -> &'static str {
        match self.feature {
            SchedFeature::WaIdle => "F1 SIS_UTIL with the recorded WA_IDLE flipped",
            _ => "F2 SIS_UTIL with the recorded WA_WEIGHT flipped",
        }
    }
    fn needs_select_records(&self) -> Option<&'static str> {
        match self.feature {
            SchedFeature::WaWeight => Some(
                "WA_WEIGHT compares loads that only select records carry: without them it is unknown",
            ),
            _ => None,
        }
    }
    fn decide(&mut self, ctx: &Ctx, t: &ShadowTopo, st: &State, s: &mut Scratch) -> Decision {
        let f = ctx.front;
        if !self.reached(f.rule) {
            return sis_util(ctx, t, st, s).0;
        }
        let rules = self.flipped(ctx.rules);
        let nf = ctx.front_under(t, st, rules);
        // Everything after FRONT depends on its target alone: the recorded setting's answer
        // (memoised for the other policies) stands, with this FRONT's probes.
        if nf.target == f.target && nf.inexact == f.inexact {
            let mut d = sis_util(ctx, t, st, s).0;
            d.probes = d.probes.saturating_sub(f.probes) + nf.probes;
            return d;
        }
        let c = ctx.with_front(rules, nf);
        let d = sis_util(&c, t, st, s).0;
        if !c.was_exact() {
            ctx.mark_inexact();
        }
        d
    }
}
