//! sched_ext's built-in idle-CPU selection (`scx_select_cpu_dfl`, kernel/sched/ext_idle.c), the
//! policy behind `scx_bpf_select_cpu_dfl/and` and so behind every scheduler that calls them
//! (scx_bpfland by default, scx_simple, ...). With `sibling` on it includes commit 2197cecdb02c
//! (prev's idle SMT sibling before any other idle CPU in the LLC);
//! without it, the order before that commit. In order:
//! 1. `WF_SYNC`: prev if idle and sharing the waker's LLC; the waker's CPU if its local queue
//!    is empty and its node has an idle CPU;
//! 2. SMT: prev if its whole core is idle; an idle core in prev's LLC, then in prev's node, then
//!    anywhere;
//! 3. prev if idle; (`sibling`) an idle SMT sibling of prev;
//! 4. an idle CPU in prev's LLC, then in prev's node, then anywhere;
//! 5. none: prev (the scheduler queues the task there).
//!
//! The LLC and node steps run only where the kernel enables them (`scx_selcpu_topo_llc/numa`:
//! an LLC smaller than the machine, a node that is neither the machine nor one LLC).
use super::scx_pick::{Cursors, SCX_CAVEAT, Span, Spans, idle};
use crate::shadow::{
    policy::{Ctx, Decision, Policy, Rule, Scratch},
    state::State,
    topo::ShadowTopo,
};

pub struct ScxBuiltin {
    /// Whether prev's idle SMT sibling comes before the rest of the LLC.
    pub sibling: bool,
    cursors: Cursors,
    spans: Spans,
}

impl ScxBuiltin {
    pub fn new(t: &ShadowTopo, sibling: bool) -> Self {
        Self {
            sibling,
            cursors: Cursors::new(t),
            spans: Spans::new(t),
        }
    }
}

const SYNC_PREV: Rule = Rule::own(0);
const SYNC_WAKER: Rule = Rule::own(1);
const IDLE_CORE: Rule = Rule::own(2);
const IDLE_PREV: Rule = Rule::own(3);
const IDLE_CPU: Rule = Rule::own(4);

/// A decision of rule `rule` (the SMT-sibling step is counted with the idle prev's).
const fn pick(cpu: u32, probes: u32, rule: Rule) -> Decision {
    Decision::new(cpu, probes, rule)
}

impl Policy for ScxBuiltin {
    fn name(&self) -> &'static str {
        if self.sibling {
            "scx_builtin"
        } else {
            "scx_builtin_nosib"
        }
    }
    fn describe(&self) -> &'static str {
        if self.sibling {
            "sched_ext built-in idle policy (scx_select_cpu_dfl), prev's idle SMT sibling first"
        } else {
            "sched_ext built-in idle policy before the SMT-sibling preference (2197cecdb02c)"
        }
    }
    fn rules(&self) -> &'static [&'static str] {
        &[
            "sync_prev_idle",
            "sync_waker_cpu",
            "idle_core",
            "prev_or_sibling_idle",
            "idle_cpu",
        ]
    }
    fn approximations(&self) -> &'static [&'static str] {
        &[SCX_CAVEAT]
    }
    fn decide(&mut self, ctx: &Ctx, t: &ShadowTopo, st: &State, _s: &mut Scratch) -> Decision {
        let (p, w) = (ctx.p, ctx.w);
        let mut n = 0;
        let sp = &self.spans;
        let llc_len = t.llc_size.get(t.llc(p) as usize).copied().unwrap_or(0) as usize;
        let llc_on = llc_len < sp.all_len();
        let node_on = sp.n_nodes() > 1 && sp.node_len(t, p) != llc_len;
        if ctx.sync() {
            if t.share_llc(w, p) && idle(ctx, st, p, &mut n) {
                return pick(p, n, SYNC_PREV);
            }
            n += 1;
            if st.nr_running(w) <= 1 && sp.node_has_idle(t, st, w) && ctx.allows(w) {
                return pick(w, n, SYNC_WAKER);
            }
        }
        let spans = [
            (llc_on, Span::Llc(t.llc(p))),
            (node_on, Span::NodeOf(p)),
            (true, Span::All),
        ];
        let c = &mut self.cursors;
        if t.smt {
            n += 1;
            if ctx.allows(p) && st.core_idle(t, p) && st.is_idle(p) {
                return pick(p, n, IDLE_CORE);
            }
            for (on, span) in spans {
                if let Some(x) = on
                    .then(|| c.pick(ctx, t, st, sp, span, true, &mut n))
                    .flatten()
                {
                    return pick(x, n, IDLE_CORE);
                }
            }
        }
        if idle(ctx, st, p, &mut n) {
            return pick(p, n, IDLE_PREV);
        }
        if self.sibling && t.smt {
            for &sib in t.siblings(p).iter().filter(|&&x| x != p) {
                if idle(ctx, st, sib, &mut n) {
                    return pick(sib, n, IDLE_PREV);
                }
            }
        }
        for (on, span) in spans {
            if let Some(x) = on
                .then(|| c.pick(ctx, t, st, sp, span, false, &mut n))
                .flatten()
            {
                return pick(x, n, IDLE_CPU);
            }
        }
        pick(p, n, Rule::stage(crate::shadow::policy::Stage::Stacked))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{event::wf, shadow::topo::NODE_RECLAIM_DISTANCE, topology::fixture};

    /// From situations where `scx_select_cpu_dfl`'s answer is known: a fully idle core beats
    /// a half-idle prev; with no idle core, prev's idle sibling comes before the rest of the
    /// LLC only with the sibling step; a sync wakeup with prev idle in the waker's LLC stays.
    #[test]
    fn the_builtin_order_with_and_without_the_sibling_step() {
        let topo = fixture::named_topology("zen3-nps4").expect("fixture");
        let t = ShadowTopo::new(&topo, NODE_RECLAIM_DISTANCE);
        let mut st = State::new(&t);
        let l0 = t.llc_cpus(0).to_vec();
        let p = l0[0];
        let sib = *t.siblings(p).iter().find(|&&x| x != p).expect("SMT");
        let mut s = Scratch::new(&t);
        let ctx = |st: &State, flags: Option<u32>| {
            let mut c = Ctx::new(10, 5, 6, l0[2], p);
            c.wake_flags = flags;
            c.compute_front(&t, st, true);
            c
        };
        // prev busy, its sibling idle, other cores idle: an idle core elsewhere wins.
        st.run_on(&t, p, 1000 + p, 1);
        let mut with = ScxBuiltin::new(&t, true);
        let d = with.decide(&ctx(&st, None), &t, &st, &mut s);
        assert!(st.core_idle(&t, d.cpu) && t.share_llc(d.cpu, p), "{d:?}");
        // Every other CPU of the machine busy but the sibling and one CPU of another core of
        // prev's LLC: the sibling step takes the sibling, the older order the LLC's first idle.
        for c in 0..t.bound as u32 {
            if t.valid(c) && c != sib && c != l0[3] && c != p {
                st.run_on(&t, c, 1000 + c, 1);
            }
        }
        let d = ScxBuiltin::new(&t, true).decide(&ctx(&st, None), &t, &st, &mut s);
        assert_eq!(d.cpu, sib);
        let d = ScxBuiltin::new(&t, false).decide(&ctx(&st, None), &t, &st, &mut s);
        assert_eq!(
            d.cpu,
            sib.min(l0[3]),
            "first idle after the cursor (none yet: from CPU 0)"
        );
        // Sync, prev idle and sharing the waker's LLC: prev.
        let mut st2 = State::new(&t);
        st2.run_on(&t, l0[2], 1000 + l0[2], 1);
        let d = with.decide(&ctx(&st2, Some(wf::SYNC | wf::TTWU)), &t, &st2, &mut s);
        assert_eq!((d.cpu, d.rule), (p, SYNC_PREV));
    }
}
