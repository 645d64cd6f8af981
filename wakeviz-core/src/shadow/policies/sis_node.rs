//! P3, SIS_NODE (Peter Zijlstra, tip `c5214e13ad60`, May 2023, pulled): SIS_UTIL, and when its
//! scan found nothing, `select_idle_node()`: the other LLCs of the parent domain of the target
//! LLC, in group order from the target, each scanned like `select_idle_cpu` with its own
//! `nr_idle_scan` and idle-core hint, starting after its first CPU. The parent is the package
//! (NPS1) or the node (NPS2/4); a NUMA parent makes it a no-op, so it never leaves the node.
use crate::shadow::{
    policy::{Ctx, Decision, Policy, Rule, Scratch, select_idle_cpu, sis_util, sis_util_budget},
    state::State,
    topo::ShadowTopo,
};

pub struct SisNode;

/// An idle CPU in another LLC of the node.
const NODE_SCAN: Rule = Rule::own(0);

impl Policy for SisNode {
    fn name(&self) -> &'static str {
        super::name::SIS_NODE
    }
    fn describe(&self) -> &'static str {
        "P3 SIS_NODE: SIS_UTIL, then the node's other LLCs"
    }
    fn rules(&self) -> &'static [&'static str] {
        &["node_scan"]
    }
    fn decide(&mut self, ctx: &Ctx, t: &ShadowTopo, st: &State, s: &mut Scratch) -> Decision {
        let (mut d, scan) = sis_util(ctx, t, st, s);
        if !scan.ran || scan.cpu.is_some() {
            return d;
        }
        let tg = d.cpu;
        for llc in t.node_llcs(tg) {
            let first = t.llc_first[llc as usize];
            let hic = ctx.has_idle_cores(t, st, llc);
            let limit = sis_util_budget(ctx, t, st, llc, hic);
            let o = select_idle_cpu(t, st, s, llc, first, hic, limit);
            d.probes += o.probes;
            d.scan = Some(d.scan.unwrap_or(0) + o.tests().unwrap_or(0));
            if let Some(c) = o.cpu {
                d.cpu = c;
                d.rule = NODE_SCAN;
                return d;
            }
        }
        d
    }
}
