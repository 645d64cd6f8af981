//! Dense, allocation-free view of the topology for the shadow hot path: per-CPU lookup
//! vectors and dense [`CpuSet`]s sized to the machine, so every policy decision is a handful
//! of word operations whatever the CPU count (256+ CPUs included). CPU relations come from
//! the crate's one rule, [`LevelMap`].
use crate::topology::{CpuSet, Level, LevelMap, Topology};

/// Marks "no such CPU / group" in the dense per-CPU tables.
pub const NONE: u32 = u32::MAX;

/// The kernel's `node_reclaim_distance` as seen by the wake-affine test: a NUMA level whose SLIT
/// distance exceeds it loses `SD_WAKE_AFFINE` (`sd_init` in kernel/sched/topology.c). AMD Zen
/// raises it to 32 from the default 30; we use 32 because Intel SLITs report 21 for the remote
/// socket, so the two values only differ for distances 31-32, which only AMD machines report.
pub const NODE_RECLAIM_DISTANCE: u32 = 32;
/// The kernel's default `node_reclaim_distance` (non-AMD).
pub const DEFAULT_RECLAIM_DISTANCE: u32 = 30;

/// `node_reclaim_distance` for a CPU vendor as the header records it (`/proc/cpuinfo`
/// `vendor_id`): 32 on AMD and Hygon (`init_amd_zen_common`), the default 30 on others. An
/// unknown vendor (recordings from before the field existed) keeps the AMD value, which only
/// differs for SLIT distances 31-32, reported in practice only by AMD machines.
pub fn reclaim_distance_for(vendor: Option<&str>) -> u32 {
    match vendor {
        None => NODE_RECLAIM_DISTANCE,
        Some(v) if v == "AuthenticAMD" || v == "HygonGenuine" => NODE_RECLAIM_DISTANCE,
        Some(_) => DEFAULT_RECLAIM_DISTANCE,
    }
}

/// Most entries of the idle-core scan's visiting-order table (12 bytes each, so 12 MiB: 8192
/// CPUs in LLCs of 64 cores take 512 Ki entries, in LLCs of 128 cores 1 Mi).
pub const CORE_WALK_MAX: usize = 1 << 20;
/// Largest per-CPU SIS_NODE visiting table, in entries (16 MiB); see `ShadowTopo::node_llcs`.
pub const NODE_LLCS_MAX: usize = 1 << 22;

/// One core of an idle-core scan's visiting order: the CPU the scan meets it at, and where its
/// SMT siblings are (so the scan does no per-CPU core lookup).
#[derive(Clone, Copy, Debug)]
pub struct WalkStep {
    pub cpu: u32,
    sibs: (u32, u32),
}

/// Topology reshaped for the shadow policies.
#[derive(Clone, Debug)]
pub struct ShadowTopo {
    /// One past the highest online CPU number.
    pub bound: usize,
    /// `u64` words per CPU set (every set here is dense: [`CpuSet::with_bound`]).
    pub nwords: usize,
    pub online: CpuSet,
    pub llc_of: Vec<u32>,
    pub core_of: Vec<u32>,
    pub node_of: Vec<u32>,
    pub pkg_of: Vec<u32>,
    llc_masks: Vec<CpuSet>,
    pub llc_size: Vec<u32>,
    /// Lowest CPU of each LLC (`cpumask_first` of the sched group).
    pub llc_first: Vec<u32>,
    llc_cpus: Vec<u32>,
    llc_off: Vec<u32>,
    /// First SMT sibling of every core of each LLC (one entry per core).
    llc_cores: Vec<u32>,
    llc_cores_off: Vec<u32>,
    /// SMT siblings of each core, ascending (`cpu_smt_mask`).
    core_cpus: Vec<u32>,
    core_off: Vec<u32>,
    /// For each CPU `x` of each LLC (entry `llc_off[l] + i` for `llc_cpus[i]`): the CPUs an
    /// idle-core scan of the whole LLC starting at `x` visits, one per core, in visiting order
    /// (wrap order from `x`, a core at the first of its CPUs met). The scan of every idle-core
    /// policy walks this list instead of re-deriving it bit by bit on every wakeup.
    core_walk: Vec<WalkStep>,
    core_walk_off: Vec<u32>,
    /// Whether any core has more than one thread (`sched_smt_active()`).
    pub smt: bool,
    /// For each CPU `t`: the other LLCs of the SIS_NODE domain (parent of `sd_llc(t)`), in the
    /// order `select_idle_node` visits the parent's groups (CPU-id wrap order from `t`).
    /// Empty when that table would exceed [`NODE_LLCS_MAX`] entries (it grows with CPUs times
    /// LLCs per domain, and a header can claim 8192 of each): [`Self::node_llcs`] then takes
    /// the domain's LLCs in wrap order of their first CPUs, the same order whenever each LLC is
    /// a contiguous range of CPUs.
    node_llcs: Vec<u32>,
    node_llcs_off: Vec<u32>,
    /// Per CPU: its SIS_NODE domain (`NONE`: no LLC); per domain, its LLCs ascending by first
    /// CPU, with those first CPUs beside them.
    dom_of: Vec<u32>,
    dom_llcs: Vec<u32>,
    dom_firsts: Vec<u32>,
    dom_off: Vec<u32>,
    /// `n_nodes * n_nodes`: whether a domain containing both nodes keeps `SD_WAKE_AFFINE`.
    affine_nodes: Vec<bool>,
    /// `n_nodes * n_nodes`: the SLIT distance lies between the default reclaim distance (30)
    /// and AMD Zen's (32), so whether the kernel keeps `SD_WAKE_AFFINE` depends on the vendor.
    affine_vendor_dependent: Vec<bool>,
    n_nodes: usize,
    /// The one CPU relation rule (`topology::LevelMap`), for the report's locality counts.
    levels: LevelMap,
}

impl ShadowTopo {
    /// `reclaim_distance`: the kernel's `node_reclaim_distance` on the traced machine (see
    /// [`reclaim_distance_for`]).
    pub fn new(t: &Topology, reclaim_distance: u32) -> Self {
        let bound = t.cpu_bound().max(1);
        let nwords = bound.div_ceil(64);
        let mut s = Self {
            bound,
            nwords,
            online: CpuSet::with_bound(bound),
            llc_of: vec![NONE; bound],
            core_of: vec![NONE; bound],
            node_of: vec![NONE; bound],
            pkg_of: vec![NONE; bound],
            llc_masks: vec![CpuSet::with_bound(bound); t.llcs.len()],
            llc_size: vec![0; t.llcs.len()],
            llc_first: vec![NONE; t.llcs.len()],
            llc_cpus: Vec::new(),
            llc_off: Vec::with_capacity(t.llcs.len() + 1),
            llc_cores: Vec::new(),
            llc_cores_off: Vec::with_capacity(t.llcs.len() + 1),
            core_cpus: Vec::new(),
            core_off: Vec::with_capacity(t.cores.len() + 1),
            core_walk: Vec::new(),
            core_walk_off: Vec::new(),
            smt: false,
            node_llcs: Vec::new(),
            node_llcs_off: Vec::new(),
            dom_of: vec![NONE; bound],
            dom_llcs: Vec::new(),
            dom_firsts: Vec::new(),
            dom_off: vec![0],
            affine_nodes: Vec::new(),
            affine_vendor_dependent: Vec::new(),
            n_nodes: t.nodes.len(),
            levels: LevelMap::new(t),
        };
        for c in &t.cpus {
            let i = c.cpu as usize;
            if i >= bound {
                continue;
            }
            s.online.set(c.cpu, true);
            s.llc_of[i] = c.llc;
            s.core_of[i] = c.core;
            s.node_of[i] = c.node;
            s.pkg_of[i] = c.package;
        }
        // Group membership is taken from the per-CPU records (not the group lists), so the
        // two can never disagree about which LLC a CPU is in.
        // Each pass below walks the CPUs once (ascending, so every list stays sorted): scanning
        // all CPUs per group was quadratic, and a header of 8192 CPUs took 30 s here.
        let mut per_llc: Vec<Vec<u32>> = vec![Vec::new(); t.llcs.len()];
        let mut per_core: Vec<Vec<u32>> = vec![Vec::new(); t.cores.len()];
        for cpu in 0..bound as u32 {
            if let Some(v) = per_llc.get_mut(s.llc_of[cpu as usize] as usize) {
                v.push(cpu);
            }
            if let Some(v) = per_core.get_mut(s.core_of[cpu as usize] as usize) {
                v.push(cpu);
            }
        }
        s.llc_off.push(0);
        for (l, cpus) in per_llc.iter().enumerate() {
            for &cpu in cpus {
                s.llc_masks[l].set(cpu, true);
            }
            s.llc_size[l] = cpus.len() as u32;
            s.llc_first[l] = cpus.first().copied().unwrap_or(NONE);
            s.llc_cpus.extend_from_slice(cpus);
            s.llc_off.push(s.llc_cpus.len() as u32);
        }
        s.core_off.push(0);
        for cpus in &per_core {
            s.smt |= cpus.len() > 1;
            s.core_cpus.extend_from_slice(cpus);
            s.core_off.push(s.core_cpus.len() as u32);
        }
        s.llc_cores_off.push(0);
        for l in 0..t.llcs.len() {
            for i in s.llc_off[l]..s.llc_off[l + 1] {
                let c = s.llc_cpus[i as usize];
                if s.siblings(c).first() == Some(&c) {
                    s.llc_cores.push(c);
                }
            }
            s.llc_cores_off.push(s.llc_cores.len() as u32);
        }
        s.build_core_walks();
        // SIS_NODE's domain is the parent of the LLC domain unless that parent is NUMA: the
        // package when it holds one node (PKG level), the node when a package holds several
        // (PKG dropped, NODE on top of MC), the package when a node spans packages. All three
        // are "same node and same package", which also guarantees it never crosses a node.
        // The other LLCs of that domain are visited in wrap distance from the target of the
        // first of their CPUs met walking from it: (node, package) -> LLC -> its CPUs there,
        // ascending, so that first CPU is a binary search away.
        let mut domain: std::collections::BTreeMap<
            (u32, u32),
            std::collections::BTreeMap<u32, Vec<u32>>,
        > = std::collections::BTreeMap::new();
        for cpu in 0..bound as u32 {
            let i = cpu as usize;
            if s.llc_of[i] != NONE {
                domain
                    .entry((s.node_of[i], s.pkg_of[i]))
                    .or_default()
                    .entry(s.llc_of[i])
                    .or_default()
                    .push(cpu);
            }
        }
        let mut dom_index = std::collections::BTreeMap::new();
        for (d, (key, llcs)) in domain.iter().enumerate() {
            dom_index.insert(*key, d as u32);
            let mut by_first: Vec<(u32, u32)> = llcs.iter().map(|(&l, c)| (c[0], l)).collect();
            by_first.sort_unstable();
            s.dom_firsts.extend(by_first.iter().map(|&(f, _)| f));
            s.dom_llcs.extend(by_first.iter().map(|&(_, l)| l));
            s.dom_off.push(s.dom_llcs.len() as u32);
        }
        let mut table: u64 = 0;
        for cpu in 0..bound {
            if s.llc_of[cpu] != NONE
                && let Some(&d) = dom_index.get(&(s.node_of[cpu], s.pkg_of[cpu]))
            {
                s.dom_of[cpu] = d;
                table += domain
                    .get(&(s.node_of[cpu], s.pkg_of[cpu]))
                    .map_or(0, |l| l.len().saturating_sub(1)) as u64;
            }
        }
        let mut others: Vec<(u32, u32)> = Vec::new();
        let exact = table <= NODE_LLCS_MAX as u64;
        if exact {
            // CPU `t`'s entries are `node_llcs[off[t]..off[t + 1]]`.
            s.node_llcs_off.reserve(bound + 1);
            s.node_llcs_off.push(0);
        }
        for tcpu in (0..bound as u32).filter(|_| exact) {
            let ti = tcpu as usize;
            let tl = s.llc_of[ti];
            if tl != NONE
                && let Some(llcs) = domain.get(&(s.node_of[ti], s.pkg_of[ti]))
            {
                others.clear();
                for (&l, cpus) in llcs {
                    if l == tl {
                        continue;
                    }
                    let at = cpus.partition_point(|&c| c < tcpu);
                    let first = cpus.get(at).copied().unwrap_or(cpus[0]);
                    others.push((l, (first + bound as u32 - tcpu) % bound as u32));
                }
                others.sort_by_key(|&(_, d)| d);
                s.node_llcs.extend(others.iter().map(|&(l, _)| l));
            }
            s.node_llcs_off.push(s.node_llcs.len() as u32);
        }
        let n = t.nodes.len();
        s.affine_nodes = vec![true; n * n];
        s.affine_vendor_dependent = vec![false; n * n];
        for a in 0..n {
            for b in 0..n {
                let d = t.distance(a, b).unwrap_or(10);
                s.affine_nodes[a * n + b] = d <= reclaim_distance;
                s.affine_vendor_dependent[a * n + b] =
                    d > DEFAULT_RECLAIM_DISTANCE && d <= NODE_RECLAIM_DISTANCE;
            }
        }
        s
    }

    /// Fills [`Self::core_walk`]: per LLC and start CPU, the cores in the order the scan meets
    /// them. A CPU without a core (its siblings list is empty) stands alone. Skipped (the scan
    /// then derives the order itself) when the table would exceed [`CORE_WALK_MAX`] entries:
    /// it grows with the square of the LLC size, and a header can claim anything.
    fn build_core_walks(&mut self) {
        let n_llcs = self.llc_size.len();
        let total: u64 = (0..n_llcs as u32)
            .map(|l| self.llc_cpus(l).len() as u64 * self.llc_cores(l).len().max(1) as u64)
            .sum();
        if total > CORE_WALK_MAX as u64 {
            return;
        }
        self.core_walk_off.push(0);
        // Per core, the start position that last visited it.
        let mut stamp = vec![u32::MAX; self.n_cores()];
        let mut pass = 0u32;
        for l in 0..n_llcs {
            let cpus = self.llc_cpus(l as u32).to_vec();
            for i in 0..cpus.len() {
                for &c in cpus[i..].iter().chain(&cpus[..i]) {
                    if let Some(st) = stamp.get_mut(self.core_of[c as usize] as usize) {
                        if *st == pass {
                            continue;
                        }
                        *st = pass;
                    }
                    let k = self.core_of[c as usize] as usize;
                    let sibs = match (self.core_off.get(k), self.core_off.get(k + 1)) {
                        (Some(&a), Some(&b)) => (a, b),
                        _ => (0, 0),
                    };
                    self.core_walk.push(WalkStep { cpu: c, sibs });
                }
                pass += 1;
                self.core_walk_off.push(self.core_walk.len() as u32);
            }
        }
    }

    /// The CPUs a scan of all of LLC `l` in wrap order from `start` visits, one per core (see
    /// the field's docs); `None` when the table was not built. `start` wraps at the sets'
    /// width, as [`CpuSet::wrap_segment`] does.
    #[inline]
    pub fn core_walk(&self, l: u32, start: u32) -> Option<&[WalkStep]> {
        if self.core_walk_off.is_empty() {
            return None;
        }
        let cpus = self.llc_cpus(l);
        if cpus.is_empty() {
            return Some(&[]);
        }
        let s = (start as usize % (self.nwords * 64)) as u32;
        let mut i = cpus.partition_point(|&c| c < s);
        if i == cpus.len() {
            i = 0;
        }
        let at = self.llc_off[l as usize] as usize + i;
        match (self.core_walk_off.get(at), self.core_walk_off.get(at + 1)) {
            (Some(&a), Some(&b)) => Some(&self.core_walk[a as usize..b as usize]),
            _ => None,
        }
    }

    /// The SMT siblings of a walk step's core: [`Self::siblings`] of its CPU.
    #[inline]
    pub fn step_siblings(&self, step: &WalkStep) -> &[u32] {
        self.core_cpus
            .get(step.sibs.0 as usize..step.sibs.1 as usize)
            .unwrap_or(&[])
    }

    /// Whether `cpu` is a known online CPU (events can carry anything).
    #[inline]
    pub fn valid(&self, cpu: u32) -> bool {
        self.online.contains(cpu)
    }

    #[inline]
    pub fn n_cores(&self) -> usize {
        self.core_off.len().saturating_sub(1)
    }

    #[inline]
    pub fn n_llcs(&self) -> usize {
        self.llc_size.len()
    }

    #[inline]
    pub fn llc(&self, cpu: u32) -> u32 {
        self.llc_of.get(cpu as usize).copied().unwrap_or(NONE)
    }

    #[inline]
    pub fn llc_mask(&self, l: u32) -> &CpuSet {
        static EMPTY: CpuSet = CpuSet::EMPTY;
        self.llc_masks.get(l as usize).unwrap_or(&EMPTY)
    }

    #[inline]
    pub fn llc_cpus(&self, l: u32) -> &[u32] {
        let l = l as usize;
        match (self.llc_off.get(l), self.llc_off.get(l + 1)) {
            (Some(&a), Some(&b)) => &self.llc_cpus[a as usize..b as usize],
            _ => &[],
        }
    }

    /// The first SMT sibling of each core of LLC `l`, ascending.
    #[inline]
    pub fn llc_cores(&self, l: u32) -> &[u32] {
        let l = l as usize;
        match (self.llc_cores_off.get(l), self.llc_cores_off.get(l + 1)) {
            (Some(&a), Some(&b)) => &self.llc_cores[a as usize..b as usize],
            _ => &[],
        }
    }

    /// `cpus_share_cache()`.
    #[inline]
    pub fn share_llc(&self, a: u32, b: u32) -> bool {
        let la = self.llc(a);
        la != NONE && la == self.llc(b)
    }

    /// The SMT siblings of `cpu` (including itself), ascending.
    #[inline]
    pub fn siblings(&self, cpu: u32) -> &[u32] {
        let k = self.core_of.get(cpu as usize).copied().unwrap_or(NONE) as usize;
        match (self.core_off.get(k), self.core_off.get(k + 1)) {
            (Some(&a), Some(&b)) => &self.core_cpus[a as usize..b as usize],
            _ => &[],
        }
    }

    /// Other LLCs SIS_NODE visits from target `t`, in visiting order.
    #[inline]
    pub fn node_llcs(&self, t: u32) -> impl Iterator<Item = u32> + '_ {
        let ti = t as usize;
        let (exact, wrap): (&[u32], (&[u32], &[u32])) = if self.node_llcs_off.is_empty() {
            // The table was too large: the domain's LLCs from the first one whose first CPU
            // is at or after `t`, wrapping, the target's own left out.
            let d = self.dom_of.get(ti).copied().unwrap_or(NONE) as usize;
            match (self.dom_off.get(d), self.dom_off.get(d + 1)) {
                (Some(&a), Some(&b)) => {
                    let (a, b) = (a as usize, b as usize);
                    let at = a + self.dom_firsts[a..b].partition_point(|&f| f < t);
                    (&[], (&self.dom_llcs[at..b], &self.dom_llcs[a..at]))
                }
                _ => (&[], (&[], &[])),
            }
        } else {
            match (self.node_llcs_off.get(ti), self.node_llcs_off.get(ti + 1)) {
                (Some(&a), Some(&b)) => (&self.node_llcs[a as usize..b as usize], (&[], &[])),
                _ => (&[], (&[], &[])),
            }
        };
        let own = self.llc_of.get(ti).copied().unwrap_or(NONE);
        let rotated = wrap
            .0
            .iter()
            .chain(wrap.1)
            .copied()
            .filter(move |&l| l != own);
        exact.iter().copied().chain(rotated)
    }

    /// Whether the lowest domain of `w` spanning `p` has `SD_WAKE_AFFINE` (so `wake_affine`
    /// runs). Every level below NUMA has it; NUMA levels lose it beyond the reclaim distance.
    #[inline]
    pub fn affine_domain(&self, w: u32, p: u32) -> bool {
        let (a, b) = (
            self.node_of.get(w as usize).copied().unwrap_or(NONE),
            self.node_of.get(p as usize).copied().unwrap_or(NONE),
        );
        if a == NONE || b == NONE {
            return false;
        }
        if a == b || self.pkg_of[w as usize] == self.pkg_of[p as usize] {
            return true;
        }
        self.affine_nodes
            .get(a as usize * self.n_nodes + b as usize)
            .copied()
            .unwrap_or(false)
    }

    /// The recording names its CPU vendor, so `node_reclaim_distance` is known: no NUMA
    /// level's `SD_WAKE_AFFINE` is in doubt any more.
    pub fn vendor_known(&mut self) {
        self.affine_vendor_dependent.fill(false);
    }

    /// Whether [`Self::affine_domain`] for these CPUs hinges on the vendor's reclaim distance
    /// (SLIT distance 31-32 between different packages) that the recording does not name.
    pub fn affine_vendor_dependent(&self, w: u32, p: u32) -> bool {
        let (a, b) = (
            self.node_of.get(w as usize).copied().unwrap_or(NONE),
            self.node_of.get(p as usize).copied().unwrap_or(NONE),
        );
        if a == NONE || b == NONE || a == b || self.pkg_of[w as usize] == self.pkg_of[p as usize] {
            return false;
        }
        self.affine_vendor_dependent
            .get(a as usize * self.n_nodes + b as usize)
            .copied()
            .unwrap_or(false)
    }

    /// The NUMA node of `cpu` ([`NONE`] when unknown).
    #[inline]
    pub fn node(&self, cpu: u32) -> u32 {
        self.node_of.get(cpu as usize).copied().unwrap_or(NONE)
    }

    /// `imbalance_pct` of the lowest domain of `w` spanning `p` (`sd_init()`): 110 for SMT
    /// siblings, 117 for every other level.
    pub fn imbalance_pct(&self, w: u32, p: u32) -> u32 {
        if self.smt && self.siblings(w).contains(&p) {
            110
        } else {
            117
        }
    }

    /// Same answer as [`Topology::level`]: the one rule, [`LevelMap::level`].
    #[inline]
    pub fn level(&self, a: u32, b: u32) -> Option<Level> {
        self.levels.level(a, b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fallback for oversized tables visits the LLCs in the order the table holds, on
    /// every real layout (each LLC a contiguous range of CPUs, or not: Zen's SMT halves).
    #[test]
    fn node_llcs_without_the_table_visit_in_the_same_order() {
        for name in [
            "zen3-nps1",
            "zen3-nps2",
            "zen3-nps4",
            "xeon-e5-2690v3",
            "irregular",
        ] {
            let t = crate::topology::fixture::named_topology(name)
                .unwrap_or_else(|e| panic!("fixture {name}: {e}"));
            let exact = ShadowTopo::new(&t, DEFAULT_RECLAIM_DISTANCE);
            let mut rotated = exact.clone();
            rotated.node_llcs_off.clear();
            for c in &t.cpus {
                let a: Vec<u32> = exact.node_llcs(c.cpu).collect();
                let b: Vec<u32> = rotated.node_llcs(c.cpu).collect();
                assert!(
                    !a.contains(&exact.llc_of[c.cpu as usize]),
                    "{name} cpu {}: its own LLC is not among the others",
                    c.cpu
                );
                let mut sa = a.clone();
                let mut sb = b.clone();
                sa.sort_unstable();
                sb.sort_unstable();
                assert_eq!(sa, sb, "{name} cpu {}: the same LLCs", c.cpu);
                if t.llcs.iter().all(|l| contiguous(&l.cpus.to_list())) {
                    assert_eq!(a, b, "{name} cpu {}: the same order", c.cpu);
                }
            }
        }
    }

    fn contiguous(list: &str) -> bool {
        !list.contains(',')
    }
}
