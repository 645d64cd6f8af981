//! How many ring buffers a capture uses and which CPU writes to which.
//!
//! Every `bpf_ringbuf_reserve` takes its ring's spinlock, so all CPUs of one ring serialise on
//! one lock and one consumer thread. The published evidence: systing dropped ~85 % of a capture
//! on 192 CPUs with 8 rings and moved to `min(ncpu, 64)` rings; scxtop uses `max(4, ncpu/16)`
//! rings grouped by topology. The rule here follows the topology: **one ring per LLC, an LLC of
//! more than [`CPUS_PER_RING`] CPUs split into chunks of at most that many, at most
//! [`MAX_RINGS`] rings** (past that, neighbouring groups merged pairwise). An LLC is the
//! natural unit: its CPUs already share a cache, so the ring's lock and cache lines stay inside
//! it, and the wakeups that cross rings are exactly the cross-LLC ones. 16 CPUs a ring is
//! scxtop's ratio; it gives 16 rings on the seeds' 2 x 64C/128T Zen3 (16 LLCs of 16 CPUs), one
//! on this 2-CPU machine (today's single ring), and never more than systing's 64.
use crate::topology::Topology;

/// Most CPUs that share one ring (scxtop's `ncpu/16`).
pub const CPUS_PER_RING: usize = 16;
/// Most rings (systing's `min(ncpu, 64)`): each costs a consumer thread and a buffer.
pub const MAX_RINGS: usize = 64;

/// Which ring each CPU writes to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RingPlan {
    /// Per ring, its CPUs, ascending.
    pub rings: Vec<Vec<u32>>,
}

impl RingPlan {
    /// The topology's rule (module docs), or `forced` rings: the CPUs in LLC order, cut into
    /// that many contiguous, nearly equal groups (at most one ring per CPU).
    pub fn new(topo: &Topology, forced: Option<usize>) -> Self {
        let ordered = llc_ordered(topo);
        let rings = match forced {
            Some(n) => chunks(&ordered.concat(), n.clamp(1, MAX_RINGS)),
            None => auto(&ordered),
        };
        Self { rings }
    }

    pub fn len(&self) -> usize {
        self.rings.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rings.is_empty()
    }

    /// Ring index per CPU number, for the probes' CPU -> ring array (0 for absent CPUs).
    pub fn ring_of_cpu(&self) -> Vec<u32> {
        let bound = self
            .rings
            .iter()
            .flatten()
            .max()
            .map_or(0, |&m| m as usize + 1);
        let mut v = vec![0; bound];
        for (r, cpus) in self.rings.iter().enumerate() {
            for &c in cpus {
                v[c as usize] = r as u32;
            }
        }
        v
    }
}

/// Each LLC's online CPUs, ascending, in LLC order.
fn llc_ordered(topo: &Topology) -> Vec<Vec<u32>> {
    let mut llcs: Vec<Vec<u32>> = vec![Vec::new(); topo.llcs.len().max(1)];
    for c in &topo.cpus {
        let i = (c.llc as usize).min(llcs.len() - 1);
        llcs[i].push(c.cpu);
    }
    llcs.retain(|l| !l.is_empty());
    llcs
}

fn auto(llcs: &[Vec<u32>]) -> Vec<Vec<u32>> {
    let mut groups: Vec<Vec<u32>> = Vec::new();
    for llc in llcs {
        let n = llc.len().div_ceil(CPUS_PER_RING);
        groups.extend(chunks(llc, n));
    }
    // Past the cap, merge neighbours (same LLC or the next one) pairwise until it fits.
    while groups.len() > MAX_RINGS {
        groups = groups.chunks(2).map(|p| p.concat()).collect();
    }
    groups
}

/// `cpus` cut into `n` contiguous groups whose sizes differ by at most one.
fn chunks(cpus: &[u32], n: usize) -> Vec<Vec<u32>> {
    let n = n.clamp(1, cpus.len().max(1));
    let (q, r) = (cpus.len() / n, cpus.len() % n);
    let mut out = Vec::with_capacity(n);
    let mut at = 0;
    for i in 0..n {
        let len = q + usize::from(i < r);
        out.push(cpus[at..at + len].to_vec());
        at += len;
    }
    out
}

#[cfg(test)]
mod tests;
