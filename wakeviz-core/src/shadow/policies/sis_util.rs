//! P1, SIS_UTIL (the 6.0+ default): FRONT -> SHORTCUTS -> scan of the target LLC bounded by
//! its `nr_idle_scan` (zero: no scan at all; idle-core mode unbounded) -> found CPU or target.
//! This is the policy the fidelity figure checks against 6.x kernels.
use crate::shadow::{
    policy::{Ctx, Decision, KernelFlavour, Policy, Scratch, sis_util},
    state::State,
    topo::ShadowTopo,
};

pub struct SisUtil;

impl Policy for SisUtil {
    fn name(&self) -> &'static str {
        super::name::SIS_UTIL
    }
    fn describe(&self) -> &'static str {
        "P1 SIS_UTIL: scan depth from LLC utilisation (6.0+ default)"
    }
    fn kernel_flavour(&self) -> Option<KernelFlavour> {
        Some(KernelFlavour::SisUtil)
    }
    fn decide(&mut self, ctx: &Ctx, t: &ShadowTopo, st: &State, s: &mut Scratch) -> Decision {
        sis_util(ctx, t, st, s).0
    }
}
