//! The sched_ext idle-CPU primitives the scx policies share, on the reconstructed idle map:
//! `scx_bpf_test_and_clear_cpu_idle` (one probe), and `scx_pick_idle_cpu` over a CPU list,
//! which takes the first idle CPU (or, for `SCX_PICK_IDLE_CORE`, the first CPU whose whole core
//! is idle) after the calling CPU's `cpumask_any_and_distribute` cursor, wrapping, and moves the
//! cursor there. A mask search is one probe: the kernel tests a word of the idle mask at once.
use crate::shadow::{policy::Ctx, state::State, topo::ShadowTopo};

/// The caveat every scx policy shares, for its `approximations`.
pub const SCX_CAVEAT: &str = "scx policies: run on CFS recordings (the idle map of the kernel that ran, not of a sched_ext scheduler); the waker's local DSQ is taken as empty when nothing is queued on its CPU; SCX_OPS_BUILTIN_IDLE_PER_NODE off; a mask search is one probe; the distribute cursor is per waker CPU, moved by the policy's own answers";

/// Per calling CPU: the last CPU `cpumask_any_and_distribute` returned.
#[derive(Clone, Debug)]
pub struct Cursors(Vec<u32>);

impl Cursors {
    pub fn new(t: &ShadowTopo) -> Self {
        Self(vec![u32::MAX; t.bound])
    }

    /// `scx_pick_idle_cpu(cpus ∩ allowed, core ? SCX_PICK_IDLE_CORE : 0)` called on the
    /// waker's CPU (where `ops.select_cpu` runs).
    pub fn pick(
        &mut self,
        ctx: &Ctx,
        t: &ShadowTopo,
        st: &State,
        cpus: &[u32],
        core: bool,
        probes: &mut u32,
    ) -> Option<u32> {
        *probes += 1;
        let caller = ctx.w;
        let cur = self.0.get(caller as usize).copied().unwrap_or(u32::MAX);
        let start = if cur == u32::MAX {
            0
        } else {
            cpus.partition_point(|&c| c <= cur)
        };
        let found = cpus[start..]
            .iter()
            .chain(&cpus[..start])
            .copied()
            .find(|&c| ctx.allows(c) && st.is_idle(c) && (!core || st.core_idle(t, c)))?;
        if let Some(x) = self.0.get_mut(caller as usize) {
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

/// The online CPUs, ascending, by NUMA node and all together.
#[derive(Clone, Debug, Default)]
pub struct Spans {
    nodes: Vec<(u32, Vec<u32>)>,
    pub all: Vec<u32>,
}

impl Spans {
    pub fn new(t: &ShadowTopo) -> Self {
        let all: Vec<u32> = (0..t.bound as u32).filter(|&c| t.valid(c)).collect();
        let mut nodes: Vec<(u32, Vec<u32>)> = Vec::new();
        for &c in &all {
            let n = t.node(c);
            match nodes.iter_mut().find(|x| x.0 == n) {
                Some(x) => x.1.push(c),
                None => nodes.push((n, vec![c])),
            }
        }
        Self { nodes, all }
    }

    /// The CPUs of `cpu`'s node.
    pub fn node_of(&self, t: &ShadowTopo, cpu: u32) -> &[u32] {
        let n = t.node(cpu);
        self.nodes
            .iter()
            .find(|x| x.0 == n)
            .map_or(&[][..], |x| &x.1[..])
    }

    pub fn n_nodes(&self) -> usize {
        self.nodes.len()
    }
}
