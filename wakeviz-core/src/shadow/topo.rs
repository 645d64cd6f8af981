//! Dense, allocation-free view of the topology for the shadow hot path: per-CPU lookup
//! vectors and flat bitsets sized to the machine, so every policy decision is a handful of
//! word operations whatever the CPU count (256+ CPUs included).
use crate::topology::{Level, Topology};

/// Marks "no such CPU / group" in the dense per-CPU tables.
pub const NONE: u32 = u32::MAX;

/// The kernel's `node_reclaim_distance` as seen by the wake-affine test: a NUMA level whose
/// SLIT distance exceeds it loses `SD_WAKE_AFFINE` (spec §8.1). AMD Zen raises it to 32 from
/// the default 30; we use 32 because Intel SLITs report 21 for the remote socket, so the two
/// values only differ for distances 31-32, which only AMD machines report.
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

/// Topology reshaped for the shadow policies.
#[derive(Clone, Debug)]
pub struct ShadowTopo {
    /// One past the highest online CPU number.
    pub bound: usize,
    /// `u64` words per CPU bitset.
    pub nwords: usize,
    pub online: Vec<u64>,
    pub llc_of: Vec<u32>,
    pub core_of: Vec<u32>,
    pub node_of: Vec<u32>,
    pub pkg_of: Vec<u32>,
    /// `n_llc * nwords` words: LLC `l` is `llc_masks[l*nwords..(l+1)*nwords]`.
    llc_masks: Vec<u64>,
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
    /// Whether any core has more than one thread (`sched_smt_active()`).
    pub smt: bool,
    /// For each CPU `t`: the other LLCs of the SIS_NODE domain (parent of `sd_llc(t)`), in the
    /// order `select_idle_node` visits the parent's groups (CPU-id wrap order from `t`).
    node_llcs: Vec<u32>,
    node_llcs_off: Vec<u32>,
    /// `n_nodes * n_nodes`: whether a domain containing both nodes keeps `SD_WAKE_AFFINE`.
    affine_nodes: Vec<bool>,
    /// `n_nodes * n_nodes`: the SLIT distance lies between the default reclaim distance (30)
    /// and AMD Zen's (32), so whether the kernel keeps `SD_WAKE_AFFINE` depends on the vendor.
    affine_vendor_dependent: Vec<bool>,
    n_nodes: usize,
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
            online: vec![0; nwords],
            llc_of: vec![NONE; bound],
            core_of: vec![NONE; bound],
            node_of: vec![NONE; bound],
            pkg_of: vec![NONE; bound],
            llc_masks: vec![0; t.llcs.len() * nwords],
            llc_size: vec![0; t.llcs.len()],
            llc_first: vec![NONE; t.llcs.len()],
            llc_cpus: Vec::new(),
            llc_off: Vec::with_capacity(t.llcs.len() + 1),
            llc_cores: Vec::new(),
            llc_cores_off: Vec::with_capacity(t.llcs.len() + 1),
            core_cpus: Vec::new(),
            core_off: Vec::with_capacity(t.cores.len() + 1),
            smt: false,
            node_llcs: Vec::new(),
            node_llcs_off: Vec::with_capacity(bound + 1),
            affine_nodes: Vec::new(),
            affine_vendor_dependent: Vec::new(),
            n_nodes: t.nodes.len(),
        };
        for c in &t.cpus {
            let i = c.cpu as usize;
            if i >= bound {
                continue;
            }
            set_bit(&mut s.online, c.cpu, true);
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
                set_bit(&mut s.llc_masks[l * nwords..(l + 1) * nwords], cpu, true);
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
        let mut others: Vec<(u32, u32)> = Vec::new();
        for tcpu in 0..bound as u32 {
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

    /// Whether `cpu` is a known online CPU (events can carry anything).
    #[inline]
    pub fn valid(&self, cpu: u32) -> bool {
        test_bit(&self.online, cpu)
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
    pub fn llc_mask(&self, l: u32) -> &[u64] {
        let l = l as usize;
        self.llc_masks
            .get(l * self.nwords..(l + 1) * self.nwords)
            .unwrap_or(&[])
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
    pub fn node_llcs(&self, t: u32) -> &[u32] {
        let t = t as usize;
        match (self.node_llcs_off.get(t), self.node_llcs_off.get(t + 1)) {
            (Some(&a), Some(&b)) => &self.node_llcs[a as usize..b as usize],
            _ => &[],
        }
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

    /// Whether [`Self::affine_domain`] for these CPUs hinges on the vendor's reclaim distance
    /// (SLIT distance 31-32 between different packages).
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

    /// Same answer as [`Topology::level`], from the dense tables.
    #[inline]
    pub fn level(&self, a: u32, b: u32) -> Option<Level> {
        let (ia, ib) = (a as usize, b as usize);
        let (ca, cb) = (*self.core_of.get(ia)?, *self.core_of.get(ib)?);
        if ca == NONE || cb == NONE {
            return None;
        }
        Some(if a == b {
            Level::SameCpu
        } else if ca == cb {
            Level::SmtSibling
        } else if self.llc_of[ia] == self.llc_of[ib] {
            Level::SameLlc
        } else if self.node_of[ia] == self.node_of[ib] {
            Level::SameNode
        } else if self.pkg_of[ia] == self.pkg_of[ib] {
            Level::SamePackage
        } else {
            Level::CrossPackage
        })
    }
}

#[inline]
pub fn test_bit(bits: &[u64], cpu: u32) -> bool {
    bits.get((cpu >> 6) as usize)
        .is_some_and(|w| (w >> (cpu & 63)) & 1 != 0)
}

#[inline]
pub fn set_bit(bits: &mut [u64], cpu: u32, v: bool) {
    if let Some(w) = bits.get_mut((cpu >> 6) as usize) {
        let m = 1u64 << (cpu & 63);
        if v {
            *w |= m;
        } else {
            *w &= !m;
        }
    }
}

/// Population count of `a & b`.
#[inline]
pub fn count_and(a: &[u64], b: &[u64]) -> u32 {
    a.iter().zip(b).map(|(x, y)| (x & y).count_ones()).sum()
}

/// The `k`-th segment of a wrap-order walk starting at bit `start` over `nw` words: first the
/// start word from `start` up, then the following words, then the start word below `start`.
/// This is `for_each_cpu_wrap(cpu, mask, start)`'s order: ascending from `start`, wrapping.
#[inline]
pub fn wrap_segment(nw: usize, start: u32, k: usize) -> Option<(usize, u64)> {
    if nw == 0 {
        return None;
    }
    let start = (start as usize) % (nw * 64);
    let (sw, sb) = (start / 64, start % 64);
    if k == 0 {
        Some((sw, !0u64 << sb))
    } else if k < nw {
        Some(((sw + k) % nw, !0u64))
    } else if k == nw && sb > 0 {
        Some((sw, (1u64 << sb) - 1))
    } else {
        None
    }
}

/// Walks `cand` in wrap order from `start` and returns the first CPU also set in `want`, and
/// how many candidates were examined (the hit included). At most `limit` candidates are
/// examined: a hit beyond that is a miss with `limit` probes, like the kernel's `--nr <= 0`.
/// Bit-parallel: cost is per word, not per CPU.
#[inline]
pub fn wrap_first(cand: &[u64], want: &[u64], start: u32, limit: u32) -> (Option<u32>, u32) {
    let nw = cand.len().min(want.len());
    let mut probes = 0u32;
    let mut k = 0;
    while let Some((w, mask)) = wrap_segment(nw, start, k) {
        k += 1;
        let m = cand[w] & mask;
        let hit = m & want[w];
        if hit != 0 {
            let b = hit.trailing_zeros();
            let pos = probes + (m & ((1u64 << b) - 1)).count_ones() + 1;
            if pos > limit {
                return (None, limit);
            }
            return (Some(w as u32 * 64 + b), pos);
        }
        probes += m.count_ones();
        if probes >= limit {
            return (None, limit);
        }
    }
    (None, probes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_first_counts_probes_in_kernel_order() {
        // Candidates 0..8 and 128..136 (an AMD-style LLC), idle: 2 and 130.
        let mut cand = vec![0u64; 4];
        let mut idle = vec![0u64; 4];
        for c in (0..8).chain(128..136) {
            set_bit(&mut cand, c, true);
        }
        set_bit(&mut idle, 2, true);
        set_bit(&mut idle, 130, true);
        // From 4: 4,5,6,7,128,129,130 -> hit at the 7th probe.
        assert_eq!(wrap_first(&cand, &idle, 4, u32::MAX), (Some(130), 7));
        // Budget 3: miss after 3 probes.
        assert_eq!(wrap_first(&cand, &idle, 4, 3), (None, 3));
        // From 131: 131..135, then 0,1,2 -> hit at the 8th probe.
        assert_eq!(wrap_first(&cand, &idle, 131, u32::MAX), (Some(2), 8));
        // Nothing idle: every candidate examined once.
        assert_eq!(wrap_first(&cand, &[0; 4], 3, u32::MAX), (None, 16));
    }
}
