//! P5, previous CPU only: the wakee goes back where it ran, no idle test at all. (The
//! kernel's `select_fallback_rq` for a disallowed or offline prev never applies: affinity is not
//! captured and the select record's `prev_cpu` is always online.)
use crate::shadow::{
    policy::{Ctx, Decision, Policy, Rule, Scratch},
    state::State,
    topo::ShadowTopo,
};

pub struct PrevOnly;

const PREV_ONLY: Rule = Rule::own(0);

impl Policy for PrevOnly {
    fn name(&self) -> &'static str {
        "prev_only"
    }
    fn describe(&self) -> &'static str {
        "P5 previous CPU only, no search"
    }
    fn rules(&self) -> &'static [&'static str] {
        &["prev_only"]
    }
    fn decide(&mut self, ctx: &Ctx, _t: &ShadowTopo, _st: &State, _s: &mut Scratch) -> Decision {
        // Reads only prev_cpu, which the select record carries exactly.
        Decision {
            cpu: ctx.p,
            probes: 0,
            rule: PREV_ONLY,
            clear_hint: None,
            behind_waker: false,
            scan: None,
        }
    }
}
