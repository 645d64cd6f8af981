//! Cache-aware wake steering (`CONFIG_SCHED_CACHE` with `SCHED_CACHE_WAKE` on), as in the RFC
//! v4 series "Cache aware scheduling" (Chen Yu and Tim Chen, 28 patches: 01/28, Peter
//! Zijlstra's steering and `select_idle_sibling` retry, message id
//! `9157186cf9e3fd541f62c637579ff736b3704c51.1754712565.git.tim.c.chen@linux.intel.com`; the
//! keep-prev-in-the-preferred-LLC rule; 20/28, the migrate-forbid rule). The later non-RFC
//! series leaves the wakeup path out, so this is its last posted form; it was off by default
//! there because it stacked wakees of one process on one LLC. `select_cache_cpu(p, prev_cpu)`, then SIS_UTIL's `select_task_rq_fair`:
//! 1. the wakee's process unknown (no `mm`), the wakee pinned, or no preferred CPU: prev;
//! 2. prev in the preferred LLC: prev;
//! 3. `_get_migrate_hint(prev, preferred, task_util, to_pref)`: both LLCs at or above
//!    `sysctl_llc_aggr_cap` (50 %) utilisation -> ignore (steer anyway); the preferred LLC at or
//!    above it with the task added and busier than prev's by more than `sysctl_llc_aggr_imb`
//!    (20 %) -> forbid: prev;
//! 4. otherwise `prev_cpu` becomes the preferred CPU for the affine step and SIS, which skips
//!    `recent_used_cpu` (prev is not the task's own) and, when the scan of the preferred LLC
//!    finds nothing, starts again from the real previous CPU (`goto again`, no affine step).
use crate::shadow::{
    policy::{
        Ctx, Decision, Policy, Rule, ScanOut, Scratch, select_idle_sibling, sis_util,
        sis_util_budget,
    },
    state::State,
    topo::ShadowTopo,
};

pub struct CacheAware;

/// `sysctl_llc_aggr_cap` and `sysctl_llc_aggr_imb` (percent).
const AGGR_CAP_PCT: u64 = 50;
const AGGR_IMB_PCT: u64 = 20;

/// Steered to the preferred LLC and placed there.
const STEERED: Rule = Rule::own(0);
/// The migrate-forbid rule kept prev.
const FORBIDDEN: Rule = Rule::own(1);
/// Steered, nothing idle in the preferred LLC: placed from the real previous CPU.
const RETRIED: Rule = Rule::own(2);

/// `_get_migrate_hint(src, dst, tsk_util, to_pref = true)` is `mig_forbid`.
fn forbidden(t: &ShadowTopo, st: &State, src: u32, dst: u32, tsk_util: u64) -> bool {
    let (su, sc) = st.llc_util(t, t.llc(src));
    let (du, dc) = st.llc_util(t, t.llc(dst));
    let fits = |u: u64, cap: u64| u * 100 < cap * AGGR_CAP_PCT;
    if !fits(du, dc) && !fits(su, sc) {
        return false;
    }
    let (su, du) = (su.saturating_sub(tsk_util), du + tsk_util);
    !fits(du, dc) && du * 100 > su * (100 + AGGR_IMB_PCT)
}

/// `select_idle_sibling` from target `tg` for `ctx`, SIS_UTIL-bounded.
fn sis(ctx: &Ctx, t: &ShadowTopo, st: &State, s: &mut Scratch, tg: u32) -> (Decision, ScanOut) {
    let hic = ctx.has_idle_cores(t, st, t.llc(tg));
    select_idle_sibling(ctx, t, st, s, tg, hic, &mut sis_util_budget)
}

impl Policy for CacheAware {
    fn name(&self) -> &'static str {
        "cache_aware"
    }
    fn describe(&self) -> &'static str {
        "Cache-aware wake steering to the process's preferred LLC (RFC v4, Aug 2025) on SIS_UTIL"
    }
    fn rules(&self) -> &'static [&'static str] {
        &[
            "steered_to_preferred_llc",
            "migrate_forbidden",
            "retried_from_prev",
        ]
    }
    fn approximations(&self) -> &'static [&'static str] {
        &[
            "cache_aware: the preferred CPU comes from the modelled occupancy (shadow::occupancy: runtime folded from sched_switch, recomputed once per 10 ms epoch the process ran); task_util and LLC utilisation are PELT-like estimates from busy time, not the kernel's util_avg",
            "cache_aware: NUMA balancing's __migrate_degrades_locality veto is not modelled (assumed off); wake_affine against the steered CPU lacks its load (not read): an undecided wake_affine_idle keeps the steered CPU",
        ]
    }
    fn decide(&mut self, ctx: &Ctx, t: &ShadowTopo, st: &State, s: &mut Scratch) -> Decision {
        let f = ctx.front();
        if let Some(d) = f.current_cpu() {
            return d;
        }
        let pinned = ctx.inputs.task_nr_cpus_allowed == Some(1);
        let pref = match ctx.preferred_cpu {
            Some(c) if ctx.tgid.is_some() && !pinned && ctx.allows(c) => c,
            _ => return sis_util(ctx, t, st, s).0,
        };
        ctx.mark_inexact();
        if t.share_llc(pref, ctx.p) {
            return sis_util(ctx, t, st, s).0;
        }
        let util = ctx.task_util as u64;
        if forbidden(t, st, ctx.p, pref, util) {
            // Placed as without the patch; the rule counts how often the veto decided.
            let mut d = sis_util(ctx, t, st, s).0;
            d.rule = FORBIDDEN;
            return d;
        }
        let steered = ctx.with_prev(t, st, pref);
        let f2 = steered.front();
        if let Some(d) = f2.current_cpu() {
            return d;
        }
        let (mut d, scan) = sis(&steered, t, st, s, f2.target);
        d.probes += f2.probes;
        if scan.ran && scan.cpu.is_none() && !t.share_llc(f2.target, ctx.p) {
            let (again, _) = sis(ctx, t, st, s, ctx.p);
            return Decision {
                probes: d.probes + again.probes,
                rule: RETRIED,
                scan: Some(d.scan.unwrap_or(0) + again.scan.unwrap_or(0)),
                ..again
            };
        }
        if t.share_llc(d.cpu, pref) {
            d.rule = STEERED;
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        shadow::{policy::KernelRules, topo::NODE_RECLAIM_DISTANCE},
        topology::fixture,
    };

    fn setup() -> (ShadowTopo, State) {
        let topo = fixture::named_topology("zen3-nps4").expect("fixture");
        let t = ShadowTopo::new(&topo, NODE_RECLAIM_DISTANCE);
        let st = State::new(&t);
        (t, st)
    }

    fn ctx(t: &ShadowTopo, st: &State, w: u32, p: u32, pref: Option<u32>) -> Ctx {
        let mut c = Ctx::new(1_000, 100, 50, w, p);
        c.tgid = Some(100);
        c.preferred_cpu = pref;
        c.rules = KernelRules::default();
        c.compute_front(t, st, true);
        c
    }

    /// The rules of `select_cache_cpu`, each from a situation where the patch's answer is
    /// known: prev inside the preferred LLC is kept; a preferred LLC too busy to take the task
    /// forbids the move; otherwise the wakee is steered to an idle CPU of the preferred LLC,
    /// and with none idle there SIS starts again from the real previous CPU.
    #[test]
    fn select_cache_cpu_keeps_forbids_steers_and_retries() {
        let (t, mut st) = setup();
        let (l0, l1) = (t.llc_cpus(0).to_vec(), t.llc_cpus(1).to_vec());
        let mut s = Scratch::new(&t);
        let mut p = CacheAware;
        // Waker and prev busy in LLC 0, preferred CPU in LLC 1, everything else idle.
        st.run_on(&t, l0[0], 900, 10);
        st.run_on(&t, l0[1], 901, 10);
        let wide_ctx = |st: &State, pref| ctx(&t, st, l0[0], l0[1], pref);
        // No preference: SIS_UTIL from prev (an idle CPU of prev's LLC).
        let d = p.decide(&wide_ctx(&st, None), &t, &st, &mut s);
        assert_eq!(t.llc(d.cpu), 0);
        // Prev shares the preferred LLC: kept, as without the patch.
        s.reset();
        let d = p.decide(&wide_ctx(&st, Some(l0[5])), &t, &st, &mut s);
        assert_eq!(t.llc(d.cpu), 0);
        // Steered: an idle CPU of the preferred LLC.
        s.reset();
        let d = p.decide(&wide_ctx(&st, Some(l1[3])), &t, &st, &mut s);
        assert_eq!((d.cpu, d.rule), (l1[3], STEERED));
        // The preferred LLC full: nothing idle there, SIS again from the real prev.
        for (i, &c) in l1.iter().enumerate() {
            st.run_on(&t, c, 1000 + i as u32, 20);
        }
        s.reset();
        let d = p.decide(&wide_ctx(&st, Some(l1[3])), &t, &st, &mut s);
        assert_eq!(d.rule, RETRIED);
        assert_eq!(t.llc(d.cpu), 0);
        assert!(st.is_idle(d.cpu));
    }

    /// `_get_migrate_hint`: a destination LLC above the aggregation bound and busier than the
    /// source by more than the allowed imbalance forbids; both above the bound is "ignore"
    /// (steer anyway); a light destination allows.
    #[test]
    fn the_migrate_hint_forbids_only_an_overloaded_busier_destination() {
        let (t, mut st) = setup();
        let (l0, l1) = (t.llc_cpus(0).to_vec(), t.llc_cpus(1).to_vec());
        // Utilisation approaches 1024 on the busy CPUs over 10 half-lives.
        let run_for = |st: &mut State, cpus: &[u32], now: u64| {
            for &c in cpus {
                st.run_on(&t, c, 2000 + c, 1);
            }
            st.refresh_nr_idle_scan(&t, now);
        };
        run_for(&mut st, &l1[..12], 400_000_000);
        assert!(
            forbidden(&t, &st, l0[0], l1[0], 0),
            "{:?}",
            st.llc_util(&t, 1)
        );
        run_for(&mut st, &l0[..12], 800_000_000);
        assert!(
            !forbidden(&t, &st, l0[0], l1[0], 0),
            "both above the cap: ignore"
        );
        let (_, mut light) = setup();
        run_for(&mut light, &l1[..2], 400_000_000);
        assert!(!forbidden(&t, &light, l0[0], l1[0], 100));
    }
}
