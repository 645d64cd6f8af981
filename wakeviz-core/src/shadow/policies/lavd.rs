//! scx_lavd's idle-CPU selection (`pick_idle_cpu`, sched-ext/scx
//! `scheds/rust/scx_lavd/src/bpf/idle.bpf.c` at commit 5699c7f08582), with its defaults
//! (`--warm-cpu-us 0`: no warm-prev rule) on symmetric CPUs, compute domain = LLC:
//! 1. a pinned task: prev;
//! 2. sticky CPU and domain: prev; on a sync wakeup from another CPU, the waker's domain instead
//!    (and no sticky CPU) when prev's domain is the more loaded;
//! 3. no idle CPU at all: the sticky CPU (else the waker's);
//! 4. SMT: the sticky CPU if its whole core is idle, else an idle core of the sticky domain;
//! 5. the sticky CPU if idle; on a sync wakeup, the waker's CPU if nothing is queued there and
//!    it is in prev's domain;
//! 6. an idle CPU of the sticky domain; else prev (load balancing is left to fix imbalance).
//!
//! Not modelled: the active/overflow sets (every CPU active; lavd's power modes shrink them),
//! migration to a neighbour domain that is a "stealer" (load-balancing state), big/LITTLE task
//! and core types, the preemption-vulnerable repartition.
use super::scx_pick::{Cursors, SCX_CAVEAT, Span, Spans, idle};
use crate::shadow::{
    policy::{Ctx, Decision, Policy, Rule, Scratch, Stage},
    state::State,
    topo::ShadowTopo,
};

pub struct Lavd {
    cursors: Cursors,
    spans: Spans,
}

impl Lavd {
    pub fn new(t: &ShadowTopo) -> Self {
        Self {
            cursors: Cursors::new(t),
            spans: Spans::new(t),
        }
    }
}

const STICKY: Rule = Rule::own(0);
const IDLE_CORE: Rule = Rule::own(1);
const SYNC_WAKER: Rule = Rule::own(2);
const IDLE_CPU: Rule = Rule::own(3);

/// A domain's load as lavd compares it (`load_invr`): its busy fraction, from utilisation.
fn load(t: &ShadowTopo, st: &State, llc: u32) -> f64 {
    let (u, cap) = st.llc_util(t, llc);
    u as f64 / cap.max(1) as f64
}

impl Policy for Lavd {
    fn name(&self) -> &'static str {
        "lavd"
    }
    fn describe(&self) -> &'static str {
        "scx_lavd pick_idle_cpu: sticky prev or waker domain, idle core, then idle CPU there"
    }
    fn rules(&self) -> &'static [&'static str] {
        &[
            "sticky_cpu",
            "idle_core_in_domain",
            "sync_waker_cpu",
            "idle_cpu_in_domain",
        ]
    }
    fn approximations(&self) -> &'static [&'static str] {
        &[
            SCX_CAVEAT,
            "lavd: a domain's load is its LLC's utilisation estimate (lavd's load_invr is its own scaled load)",
        ]
    }
    fn decide(&mut self, ctx: &Ctx, t: &ShadowTopo, st: &State, _s: &mut Scratch) -> Decision {
        let (p, w) = (ctx.p, ctx.w);
        let mut n = 0;
        let done = Decision::new;
        if ctx.inputs.task_nr_cpus_allowed == Some(1) {
            return done(p, n, Rule::stage(Stage::Prev));
        }
        let sync_waker = (ctx.sync() && w != p && ctx.allows(w)).then_some(w);
        let (sticky, dom) = match (ctx.allows(p), sync_waker) {
            (true, Some(w)) if load(t, st, t.llc(p)) > load(t, st, t.llc(w)) => (None, t.llc(w)),
            (true, _) => (Some(p), t.llc(p)),
            (false, Some(w)) => (Some(w), t.llc(w)),
            (false, None) => (None, t.llc(p)),
        };
        let fallback = sticky.unwrap_or(w);
        n += 1;
        if st.idle.is_empty() {
            return done(fallback, n, STICKY);
        }
        if t.smt {
            n += 1;
            if let Some(c) = sticky.filter(|&c| st.core_idle(t, c))
                && idle(ctx, st, c, &mut n)
            {
                return done(c, n, STICKY);
            }
            let span = Span::Llc(dom);
            if let Some(c) = self
                .cursors
                .pick(ctx, t, st, &self.spans, span, true, &mut n)
            {
                return done(c, n, IDLE_CORE);
            }
        }
        if let Some(c) = sticky
            && idle(ctx, st, c, &mut n)
        {
            return done(c, n, STICKY);
        }
        if let Some(w) = sync_waker
            && st.nr_running(w) <= 1
            && t.share_llc(w, p)
        {
            return done(w, n, SYNC_WAKER);
        }
        let span = Span::Llc(dom);
        if let Some(c) = self
            .cursors
            .pick(ctx, t, st, &self.spans, span, false, &mut n)
        {
            return done(c, n, IDLE_CPU);
        }
        let cpu = if ctx.allows(p) { p } else { fallback };
        done(cpu, n, Rule::stage(Stage::Stacked))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{event::wf, shadow::topo::NODE_RECLAIM_DISTANCE, topology::fixture};

    /// lavd stays in the sticky domain: prev idle is kept even when a whole idle core exists
    /// elsewhere only if prev's core is idle too; with prev busy an idle core of prev's LLC is
    /// taken, never another LLC's; a sync wakeup with a free waker CPU in prev's LLC goes there
    /// when the domain has nothing idle.
    #[test]
    fn lavd_stays_in_the_sticky_domain() {
        let topo = fixture::named_topology("zen3-nps4").expect("fixture");
        let t = ShadowTopo::new(&topo, NODE_RECLAIM_DISTANCE);
        let mut st = State::new(&t);
        let mut s = Scratch::new(&t);
        let l0 = t.llc_cpus(0).to_vec();
        let (p, w) = (l0[0], l0[1]);
        let ctx = |st: &State, flags| {
            let mut c = Ctx::new(10, 5, 6, w, p);
            c.wake_flags = flags;
            c.compute_front(&t, st, true);
            c
        };
        let mut l = Lavd::new(&t);
        assert_eq!(l.decide(&ctx(&st, None), &t, &st, &mut s).cpu, p);
        st.run_on(&t, p, 1000 + p, 1);
        let d = l.decide(&ctx(&st, None), &t, &st, &mut s);
        assert_eq!((t.llc(d.cpu), d.rule), (0, IDLE_CORE));
        // The whole LLC busy but the waker's CPU runs only the waker: sync goes to the waker.
        for &c in &l0 {
            st.run_on(&t, c, 1000 + c, 1);
        }
        let d = l.decide(&ctx(&st, Some(wf::SYNC | wf::TTWU)), &t, &st, &mut s);
        assert_eq!((d.cpu, d.rule), (w, SYNC_WAKER));
        // Not sync: stay on prev although other LLCs are idle.
        let d = l.decide(&ctx(&st, None), &t, &st, &mut s);
        assert_eq!(d.cpu, p);
    }
}
