//! P8, Srikar Dronamraju's idler-LLC wake_affine (v2, May 2021, not merged):
//! waker and prev in different LLCs -> `pref, try = (W, P)` if sync else `(P, W)`; pref idle ->
//! pref; an idle core of LLC(pref) -> it; try idle -> try; an idle core of LLC(try) -> it;
//! else the side whose LLC has the smaller busy fraction; both LLCs fully busy -> prev with no
//! scan (patch 8/8). Same LLC: prev idle -> prev, waker idle -> waker, sync with the waker
//! alone -> waker, else prev. Then SIS_UTIL's `select_idle_sibling` from that target.
//!
//! Srikar tracked the idle core's id per LLC (`idle_core`); we take it from the true idle
//! map, i.e. model that id as always up to date, and charge one probe per lookup (reading the
//! shared field), not a scan.
use crate::shadow::{
    policy::{
        Ctx, Decision, FrontRule, Policy, Rule, Scratch, Stage, select_idle_sibling,
        sis_util_budget,
    },
    state::State,
    topo::ShadowTopo,
};

pub struct IdlerLlc;

/// Both LLCs fully busy: the target without any scan.
const BOTH_LLCS_BUSY: Rule = Rule::own(0);

/// `wake_affine_idler_llc(pref, try)`: the new target, or `None` when both LLCs are fully
/// busy (then the patch skips the scan and keeps prev).
fn idler(t: &ShadowTopo, st: &State, pref: u32, tr: u32, probes: &mut u32) -> Option<u32> {
    *probes += 1;
    if st.is_idle(pref) {
        return Some(pref);
    }
    *probes += 1;
    if let Some(c) = idle_core_of(t, st, t.llc(pref)) {
        return Some(c);
    }
    *probes += 1;
    if st.is_idle(tr) {
        return Some(tr);
    }
    *probes += 1;
    if let Some(c) = idle_core_of(t, st, t.llc(tr)) {
        return Some(c);
    }
    let (lp, lt) = (t.llc(pref), t.llc(tr));
    let size = |l: u32| u64::from(t.llc_size.get(l as usize).copied().unwrap_or(0));
    let busy = |l: u32| size(l).saturating_sub(u64::from(t.llc_mask(l).count_and(&st.idle)));
    let (bp, bt) = (busy(lp), busy(lt));
    if bp == size(lp) && bt == size(lt) {
        return None;
    }
    // Cross-multiplied busy fractions, ties to the preferred side.
    Some(if bp * size(lt) <= bt * size(lp) {
        pref
    } else {
        tr
    })
}

/// First fully idle core of `llc`, as its first SMT sibling (Srikar's `smt_id`).
fn idle_core_of(t: &ShadowTopo, st: &State, llc: u32) -> Option<u32> {
    if st.idle_cores(llc) == 0 {
        return None;
    }
    t.llc_cores(llc)
        .iter()
        .copied()
        .find(|&c| st.core_idle(t, c))
}

impl Policy for IdlerLlc {
    fn name(&self) -> &'static str {
        "idler_llc"
    }
    fn describe(&self) -> &'static str {
        "P8 idler-LLC wake_affine (Srikar 2021) on SIS_UTIL"
    }
    fn rules(&self) -> &'static [&'static str] {
        &["both_llcs_busy"]
    }
    fn approximations(&self) -> &'static [&'static str] {
        &[
            "idler_llc takes Srikar's idle-core id from the true idle map (a hint that is always right, one probe per lookup), not his per-LLC idle_core field",
            "idler_llc ties on equal busy fractions go to the preferred side (waker if sync, else prev)",
        ]
    }
    fn decide(&mut self, ctx: &Ctx, t: &ShadowTopo, st: &State, s: &mut Scratch) -> Decision {
        let f = ctx.front();
        let (w, p) = (ctx.w, ctx.p);
        let mut probes = 0;
        if f.rule == FrontRule::CurrentCpu {
            return Decision {
                cpu: w,
                probes,
                rule: Rule::stage(Stage::CurrentCpu),
                clear_hint: None,
                behind_waker: false,
                scan: None,
            };
        }
        let tg = if matches!(f.rule, FrontRule::NotAffine | FrontRule::SameCpu) {
            f.target
        } else if t.share_llc(w, p) {
            probes += 1;
            if st.is_idle(p) {
                p
            } else {
                probes += 1;
                if st.is_idle(w) || (f.sync && ctx.nr_running_w(st) <= 1) {
                    w
                } else {
                    p
                }
            }
        } else {
            let (pref, tr) = if f.sync { (w, p) } else { (p, w) };
            match idler(t, st, pref, tr, &mut probes) {
                Some(c) => c,
                None => {
                    return Decision {
                        cpu: p,
                        probes,
                        rule: BOTH_LLCS_BUSY,
                        clear_hint: None,
                        behind_waker: false,
                        scan: None,
                    };
                }
            }
        };
        let hic = ctx.has_idle_cores(t, st, t.llc(tg));
        let (mut d, _) = select_idle_sibling(ctx, t, st, s, tg, hic, &mut sis_util_budget);
        d.probes += probes;
        d
    }
}
