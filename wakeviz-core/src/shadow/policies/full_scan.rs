//! P4, no scan limit: FRONT -> SHORTCUTS -> the whole target LLC (idle-core mode when hinted)
//! -> first idle or target. What 6.7+ kernels do with `NO_SIS_UTIL`.
use crate::shadow::{
    policy::{Ctx, Decision, KernelFlavour, Policy, Scratch, select_idle_sibling},
    state::State,
    topo::ShadowTopo,
};

pub struct FullScan;

impl Policy for FullScan {
    fn name(&self) -> &'static str {
        super::name::FULL_SCAN
    }
    fn describe(&self) -> &'static str {
        "P4 full LLC scan without a limit (NO_SIS_UTIL on 6.7+)"
    }
    fn kernel_flavour(&self) -> Option<KernelFlavour> {
        Some(KernelFlavour::FullScan)
    }

    fn decide(&mut self, ctx: &Ctx, t: &ShadowTopo, st: &State, s: &mut Scratch) -> Decision {
        let f = ctx.front();
        if let Some(d) = f.current_cpu() {
            return d;
        }
        let hic = ctx.has_idle_cores(t, st, t.llc(f.target));
        let (mut d, _) =
            select_idle_sibling(ctx, t, st, s, f.target, hic, &mut |_, _, _, _, _| None);
        d.probes += f.probes;
        d
    }
}
