//! scx_bpfland's own idle scan (`pick_idle_cpu_scan`, `--preferred-idle-scan`), as in
//! sched-ext/scx `scheds/rust/scx_bpfland/src/bpf/main.bpf.c` at commit 34b791da0886.
//! bpfland's default mode calls the built-in policy (the `scx_builtin` row); this mode walks
//! the CPUs in its preferred order (capacity, highest first; CPU number on symmetric machines)
//! with no regard for LLCs, which is what the row shows:
//! 1. a pinned task: prev if idle;
//! 2. SMT: prev if its whole core is idle, else the first CPU in preferred order whose whole core
//!    is idle;
//! 3. prev if idle, else the first idle CPU in preferred order;
//! 4. none: prev (`bpfland_select_cpu` returns it and the task is queued there).
//!
//! A previous CPU the wakee may no longer use is replaced first by the waker's CPU, else by its
//! first allowed CPU (`bpfland_select_cpu`). The primary domain is taken as every CPU (its
//! default); the hybrid-core "move towards a faster waker" rule does not apply to symmetric CPUs.
use super::scx_pick::{SCX_CAVEAT, first_idle, idle};
use crate::shadow::{
    policy::{Ctx, Decision, Policy, Rule, Scratch, Stage},
    state::State,
    topo::ShadowTopo,
};

pub struct Bpfland;

const IDLE_CORE: Rule = Rule::own(0);
const IDLE_CPU: Rule = Rule::own(1);

impl Policy for Bpfland {
    fn name(&self) -> &'static str {
        "bpfland_scan"
    }
    fn describe(&self) -> &'static str {
        "scx_bpfland --preferred-idle-scan: prev or the first idle core/CPU in CPU order"
    }
    fn rules(&self) -> &'static [&'static str] {
        &["idle_core", "idle_cpu"]
    }
    fn approximations(&self) -> &'static [&'static str] {
        &[SCX_CAVEAT]
    }
    fn decide(&mut self, ctx: &Ctx, t: &ShadowTopo, st: &State, _s: &mut Scratch) -> Decision {
        let mut p = ctx.p;
        if !ctx.allows(p) {
            p = if ctx.allows(ctx.w) {
                ctx.w
            } else {
                ctx.allowed.as_ref().and_then(|m| m.first()).unwrap_or(p)
            };
        }
        let mut n = 0;
        let done = Decision::new;
        if ctx.inputs.task_nr_cpus_allowed == Some(1) && idle(ctx, st, p, &mut n) {
            return done(p, n, Rule::stage(Stage::Prev));
        }
        // The preferred order is ascending CPU numbers on symmetric CPUs.
        if t.smt {
            n += 1;
            if st.core_idle(t, p) && idle(ctx, st, p, &mut n) {
                return done(p, n, IDLE_CORE);
            }
            n += 1;
            if let Some(c) = first_idle(ctx, t, st, &t.online, 0, true) {
                return done(c, n, IDLE_CORE);
            }
        }
        if idle(ctx, st, p, &mut n) {
            return done(p, n, Rule::stage(Stage::Prev));
        }
        n += 1;
        match first_idle(ctx, t, st, &t.online, 0, false) {
            Some(c) => done(c, n, IDLE_CPU),
            None => done(p, n, Rule::stage(Stage::Stacked)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{shadow::topo::NODE_RECLAIM_DISTANCE, topology::fixture};

    /// bpfland's scan ignores LLCs: with prev busy, the lowest-numbered idle core anywhere
    /// wins over an idle core next to prev; with no idle core, prev if idle.
    #[test]
    fn the_scan_takes_the_first_idle_core_in_cpu_order() {
        let topo = fixture::named_topology("zen3-nps4").expect("fixture");
        let t = ShadowTopo::new(&topo, NODE_RECLAIM_DISTANCE);
        let mut st = State::new(&t);
        let mut s = Scratch::new(&t);
        let p = t.llc_cpus(3)[0];
        st.run_on(&t, p, 1000 + p, 1);
        let mut b = Bpfland;
        let mut ctx = Ctx::new(10, 5, 6, p, p);
        ctx.compute_front(&t, &st, true);
        let d = b.decide(&ctx, &t, &st, &mut s);
        assert_eq!((d.cpu, d.rule), (0, IDLE_CORE));
        assert_ne!(t.llc(d.cpu), t.llc(p));
        // Every core half busy, prev idle: prev.
        let mut st = State::new(&t);
        for c in 0..t.bound as u32 {
            if t.valid(c) && t.siblings(c).first() == Some(&c) && c != p {
                st.run_on(&t, c, 1000 + c, 1);
            }
        }
        let sib = *t.siblings(p).iter().find(|&&x| x != p).expect("SMT");
        st.run_on(&t, sib, 1000 + sib, 1);
        let d = b.decide(&ctx, &t, &st, &mut s);
        assert_eq!(d.cpu, p);
    }
}
