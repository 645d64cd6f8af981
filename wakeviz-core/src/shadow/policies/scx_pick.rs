//! The sched_ext idle-CPU primitives the scx policies share, on the reconstructed idle map:
//! `scx_bpf_test_and_clear_cpu_idle` (one probe), and `scx_pick_idle_cpu` over a span, which
//! takes the first idle CPU (or, for `SCX_PICK_IDLE_CORE`, the first CPU whose whole core is
//! idle) after the calling CPU's `cpumask_any_and_distribute` cursor, wrapping, and moves the
//! cursor there. A mask search is one probe: the kernel tests a word of the idle mask at once.
use crate::{
    shadow::{policy::Ctx, state::State, topo::ShadowTopo},
    topology::CpuSet,
};

/// The caveat every scx policy shares, for its `approximations`.
pub const SCX_CAVEAT: &str = "scx policies: run on CFS recordings (the idle map of the kernel that ran, not of a sched_ext scheduler); the waker's local DSQ is taken as empty when nothing is queued on its CPU; SCX_OPS_BUILTIN_IDLE_PER_NODE off; a mask search is one probe; the distribute cursor is per waker CPU, moved by the policy's own answers";

/// A set of CPUs to search: one LLC, one NUMA node, or every online CPU.
#[derive(Clone, Copy, Debug)]
pub enum Span {
    Llc(u32),
    /// The node of this CPU.
    NodeOf(u32),
    All,
}

/// The online CPUs by NUMA node (with their LLCs) and all together, as masks.
#[derive(Clone, Debug)]
pub struct Spans {
    nodes: Vec<(u32, CpuSet, Vec<u32>)>,
    all: CpuSet,
    all_llcs: Vec<u32>,
}

impl Spans {
    pub fn new(t: &ShadowTopo) -> Self {
        let mut nodes: Vec<(u32, CpuSet, Vec<u32>)> = Vec::new();
        for c in (0..t.bound as u32).filter(|&c| t.valid(c)) {
            let (n, l) = (t.node(c), t.llc(c));
            let i = match nodes.iter().position(|x| x.0 == n) {
                Some(i) => i,
                None => {
                    nodes.push((n, CpuSet::with_bound(t.bound), Vec::new()));
                    nodes.len() - 1
                }
            };
            nodes[i].1.insert(c);
            if !nodes[i].2.contains(&l) {
                nodes[i].2.push(l);
            }
        }
        Self {
            nodes,
            all: t.online.clone(),
            all_llcs: (0..t.n_llcs() as u32).collect(),
        }
    }

    fn node(&self, t: &ShadowTopo, cpu: u32) -> Option<&(u32, CpuSet, Vec<u32>)> {
        let n = t.node(cpu);
        self.nodes.iter().find(|x| x.0 == n)
    }

    /// The span's mask, and whether one of its LLCs has a fully idle core.
    fn of<'a>(&'a self, t: &'a ShadowTopo, st: &State, s: Span) -> (Option<&'a CpuSet>, bool) {
        let any_core = |llcs: &[u32]| llcs.iter().any(|&l| st.idle_cores(l) > 0);
        match s {
            Span::Llc(l) => (Some(t.llc_mask(l)), st.idle_cores(l) > 0),
            Span::NodeOf(c) => self
                .node(t, c)
                .map_or((None, false), |n| (Some(&n.1), any_core(&n.2))),
            Span::All => (Some(&self.all), any_core(&self.all_llcs)),
        }
    }

    /// Whether `cpu`'s node has an idle CPU.
    pub fn node_has_idle(&self, t: &ShadowTopo, st: &State, cpu: u32) -> bool {
        self.node(t, cpu)
            .is_some_and(|n| n.1.count_and(&st.idle) > 0)
    }

    /// The number of CPUs in `cpu`'s node.
    pub fn node_len(&self, t: &ShadowTopo, cpu: u32) -> usize {
        self.node(t, cpu).map_or(0, |n| n.1.len())
    }

    /// The number of online CPUs.
    pub fn all_len(&self) -> usize {
        self.all.len()
    }

    pub fn n_nodes(&self) -> usize {
        self.nodes.len()
    }
}

/// The first CPU of `mask` at or after `start` in wrap order that is idle, the wakee may use,
/// and (with `core`) has every SMT sibling idle. Each idle candidate is looked at once.
pub fn first_idle(
    ctx: &Ctx,
    t: &ShadowTopo,
    st: &State,
    mask: &CpuSet,
    start: u32,
    core: bool,
) -> Option<u32> {
    let n = mask.count_and(&st.idle);
    let mut s = start;
    for _ in 0..n {
        let (hit, _) = mask.wrap_first(&st.idle, s, u32::MAX);
        let c = hit?;
        if ctx.allows(c) && (!core || st.core_idle(t, c)) {
            return Some(c);
        }
        s = c + 1;
    }
    None
}

/// Per calling CPU: the last CPU `cpumask_any_and_distribute` returned.
#[derive(Clone, Debug)]
pub struct Cursors(Vec<u32>);

impl Cursors {
    pub fn new(t: &ShadowTopo) -> Self {
        Self(vec![u32::MAX; t.bound])
    }

    /// `scx_pick_idle_cpu(span ∩ allowed, core ? SCX_PICK_IDLE_CORE : 0)` called on the
    /// waker's CPU (where `ops.select_cpu` runs).
    #[allow(clippy::too_many_arguments)]
    pub fn pick(
        &mut self,
        ctx: &Ctx,
        t: &ShadowTopo,
        st: &State,
        spans: &Spans,
        span: Span,
        core: bool,
        probes: &mut u32,
    ) -> Option<u32> {
        *probes += 1;
        let (mask, any_core) = spans.of(t, st, span);
        let mask = mask?;
        if core && !any_core {
            return None;
        }
        let cur = self.0.get(ctx.w as usize).copied().unwrap_or(u32::MAX);
        let start = cur.wrapping_add(1);
        let found = first_idle(ctx, t, st, mask, start, core)?;
        if let Some(x) = self.0.get_mut(ctx.w as usize) {
            *x = found;
        }
        Some(found)
    }
}

/// `scx_bpf_test_and_clear_cpu_idle(cpu)` for a CPU the wakee may use.
pub fn idle(ctx: &Ctx, st: &State, cpu: u32, probes: &mut u32) -> bool {
    *probes += 1;
    ctx.allows(cpu) && st.is_idle(cpu)
}
