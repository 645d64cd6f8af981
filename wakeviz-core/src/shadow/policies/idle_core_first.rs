//! P6, idle-core first, with the true idle-core state from the reconstructed idle map
//! instead of the kernel's stale `has_idle_cores` hint.
//!
//! `idle_core_first` is variant P6b "pure" (the one the brief asks for): (1) prev's core fully
//! idle -> prev; (2) the target's core fully idle -> target; (3) the first fully idle core of
//! the target LLC in wrap order from target+1 -> its first sibling; (4) SIS_UTIL's idle-CPU
//! rules (target/prev/recent/SMT sibling of prev/bounded scan); (5) the target.
//! `sis_util_true_hint` is variant P6a: SIS_UTIL with `has_idle_cores` replaced by the truth
//! and no budget on the idle-core scan.
use crate::shadow::{
    policy::{
        Ctx, Decision, FrontRule, Policy, Rule, Scratch, Stage, select_idle_sibling,
        sis_util_budget,
    },
    state::State,
    topo::ShadowTopo,
};

/// Idle tests `select_idle_core` would spend on `cpu`'s core, and whether it is fully idle.
fn probe_core(t: &ShadowTopo, st: &State, cpu: u32) -> (bool, u32) {
    let mut n = 0;
    for &s in t.siblings(cpu) {
        n += 1;
        if !st.is_idle(s) {
            return (false, n);
        }
    }
    (n > 0, n)
}

/// Whether LLC `llc` holds a fully idle core, from the idle map (no kernel probe cost: this
/// is ground truth, kept incrementally by the state, not something the kernel reads).
pub fn true_idle_core(st: &State, llc: u32) -> bool {
    st.idle_cores(llc) > 0
}

pub struct IdleCoreFirst;

/// A fully idle core (prev's, the target's, or one from the LLC).
const IDLE_CORE: Rule = Rule::own(0);

impl Policy for IdleCoreFirst {
    fn name(&self) -> &'static str {
        "idle_core_first"
    }
    fn describe(&self) -> &'static str {
        "P6b idle-core first (pure), true idle cores from the idle map"
    }
    fn rules(&self) -> &'static [&'static str] {
        &["idle_core"]
    }
    fn approximations(&self) -> &'static [&'static str] {
        &["idle_core_first is P6b (pure)"]
    }
    fn decide(&mut self, ctx: &Ctx, t: &ShadowTopo, st: &State, s: &mut Scratch) -> Decision {
        let f = ctx.front();
        let mut d = Decision {
            cpu: f.target,
            probes: f.probes,
            rule: IDLE_CORE,
            clear_hint: None,
            behind_waker: false,
            scan: None,
        };
        if f.rule == FrontRule::CurrentCpu {
            d.rule = Rule::stage(Stage::CurrentCpu);
            return d;
        }
        let tg = f.target;
        let (idle, n) = probe_core(t, st, ctx.p);
        d.probes += n;
        if idle {
            d.cpu = ctx.p;
            return d;
        }
        if tg != ctx.p {
            let (idle, n) = probe_core(t, st, tg);
            d.probes += n;
            if idle {
                return d;
            }
        }
        let llc = t.llc(tg);
        let (core, _, n) = s.llc_core_scan(t, st, llc, tg.wrapping_add(1));
        d.probes += n;
        if let Some(c) = core {
            d.cpu = t.siblings(c).first().copied().unwrap_or(c);
            return d;
        }
        let (sis, _) = select_idle_sibling(ctx, t, st, s, tg, false, &mut sis_util_budget);
        d.cpu = sis.cpu;
        d.rule = sis.rule;
        d.probes += sis.probes;
        d.scan = sis.scan;
        d
    }
}

pub struct TrueHint;

impl Policy for TrueHint {
    fn name(&self) -> &'static str {
        "sis_util_true_hint"
    }
    fn describe(&self) -> &'static str {
        "P6a SIS_UTIL with the true idle-core state, unbounded core scan"
    }
    fn approximations(&self) -> &'static [&'static str] {
        &["sis_util_true_hint is P6a"]
    }
    fn decide(&mut self, ctx: &Ctx, t: &ShadowTopo, st: &State, s: &mut Scratch) -> Decision {
        let f = ctx.front();
        if let Some(d) = f.current_cpu() {
            return d;
        }
        let hic = t.smt && true_idle_core(st, t.llc(f.target));
        let (mut d, _) = select_idle_sibling(
            ctx,
            t,
            st,
            s,
            f.target,
            hic,
            &mut |c: &Ctx, t: &ShadowTopo, st: &State, llc, hic| {
                if hic {
                    None
                } else {
                    sis_util_budget(c, t, st, llc, hic)
                }
            },
        );
        d.probes += f.probes;
        d.clear_hint = None;
        d
    }
}
