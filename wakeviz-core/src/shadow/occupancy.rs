//! Each process's cache occupancy per CPU, and the LLC it prefers, as the cache-aware
//! scheduling patches account it (`account_mm_sched`, `task_cache_work` in the RFC v4 series,
//! patch 01/28, Peter Zijlstra's accounting): folded exactly from `sched_switch`
//! runtimes, decayed per 10 ms epoch as the patch decays it.
//!
//! - every CPU keeps the runtime of all tasks it ran and each process the runtime its threads
//!   ran there, both halved once per elapsed epoch (`__update_mm_sched`);
//! - a process's occupancy of a CPU is `1024 x its runtime / (the CPU's runtime + 1)`
//!   (`fraction_mm_sched`); an LLC's is the mean over its CPUs;
//! - the preferred CPU (`mm->mm_sched_cpu`) is the CPU of highest occupancy inside the LLC of
//!   highest mean occupancy, none when that mean is below `1024 >> EPOCH_OLD`, and none once the
//!   process has not run for more than `EPOCH_OLD` epochs.
//!
//! Modelled, not read: the kernel recomputes the preference in `task_cache_work` when a tick
//! lands on a thread of the process in a new epoch; here it is recomputed at the first wakeup
//! of the process in each epoch in which it ran (a tick is assumed to have hit it). Runtime is
//! credited at switch-out, in the epoch of the switch (the kernel credits at each tick too),
//! and kernel threads, which have no `mm`, are counted as processes of their own.
use crate::pidmap::PidMap;

use super::topo::ShadowTopo;

/// `EPOCH_PERIOD` (`HZ/100` jiffies: 10 ms whatever the HZ).
pub const EPOCH_NS: u64 = 10_000_000;
/// `EPOCH_OLD`: epochs without running after which a preference is dropped.
pub const EPOCH_OLD: u64 = 5;
const NICE_0_LOAD: u64 = 1024;
/// Processes followed at once: when full, those idle for more than `EPOCH_OLD` epochs (no
/// preference any more) are dropped, and a new process that still finds no room is counted in
/// [`Occupancy::untracked`]. A file can claim any number of processes.
pub const MAX_PROCESSES: usize = 4096;
/// CPUs remembered per process: past this, a new CPU replaces the one with the least decayed
/// runtime (whose occupancy is the smallest).
pub const MAX_CPUS_PER_PROCESS: usize = 128;

/// A runtime halved once per epoch since `epoch`.
#[derive(Clone, Copy, Debug, Default)]
struct Decayed {
    runtime: u64,
    epoch: u64,
}

impl Decayed {
    fn at(mut self, epoch: u64) -> Self {
        let n = epoch.saturating_sub(self.epoch);
        if n > 0 {
            self.runtime = if n >= 64 { 0 } else { self.runtime >> n };
            self.epoch = epoch;
        }
        self
    }

    fn add(&mut self, epoch: u64, ns: u64) {
        *self = self.at(epoch);
        self.runtime = self.runtime.saturating_add(ns);
    }
}

#[derive(Clone, Debug, Default)]
struct Proc {
    /// Per CPU it ran on: its runtime there.
    on: Vec<(u32, Decayed)>,
    last_run_epoch: u64,
    /// The preference as computed in `computed_epoch`.
    preferred: Option<u32>,
    computed_epoch: Option<u64>,
}

/// Per-CPU and per-process runtimes; see the module docs.
#[derive(Clone, Debug, Default)]
pub struct Occupancy {
    cpus: Vec<Decayed>,
    procs: PidMap<Proc>,
    /// Runtime credits dropped because no room was left for a new process.
    pub untracked: u64,
    /// The epoch of the last purge of idle processes (at most one per epoch).
    purged: Option<u64>,
}

impl Occupancy {
    pub fn new(t: &ShadowTopo) -> Self {
        Self {
            cpus: vec![Decayed::default(); t.bound],
            procs: PidMap::default(),
            untracked: 0,
            purged: None,
        }
    }

    /// Processes dropped over the budget (see [`crate::pidmap`]).
    pub fn evicted(&self) -> u64 {
        self.procs.evicted()
    }

    /// A thread of process `tgid` ran `ns` on `cpu` until `ts_ns` (`account_mm_sched`).
    pub fn account(&mut self, cpu: u32, tgid: u32, ns: u64, ts_ns: u64) {
        let Some(c) = self.cpus.get_mut(cpu as usize) else {
            return;
        };
        let epoch = ts_ns / EPOCH_NS;
        c.add(epoch, ns);
        if !self.procs.contains_key(&tgid) && self.procs.len() >= MAX_PROCESSES {
            if self.purged != Some(epoch) {
                self.purged = Some(epoch);
                self.procs
                    .retain(|_, p| epoch.saturating_sub(p.last_run_epoch) <= EPOCH_OLD);
            }
            if self.procs.len() >= MAX_PROCESSES {
                self.untracked += 1;
                return;
            }
        }
        let p = self.procs.entry(tgid).or_default();
        p.last_run_epoch = epoch;
        let fresh = Decayed { runtime: ns, epoch };
        if let Some((_, d)) = p.on.iter_mut().find(|(x, _)| *x == cpu) {
            d.add(epoch, ns);
        } else if p.on.len() < MAX_CPUS_PER_PROCESS {
            p.on.push((cpu, fresh));
        } else if let Some(least) = p.on.iter_mut().min_by_key(|(_, d)| d.at(epoch).runtime) {
            *least = (cpu, fresh);
        }
    }

    /// `mm->mm_sched_cpu` of process `tgid` as of `ts_ns`: the CPU whose LLC it prefers.
    pub fn preferred_cpu(&mut self, t: &ShadowTopo, tgid: u32, ts_ns: u64) -> Option<u32> {
        let epoch = ts_ns / EPOCH_NS;
        let cpus = &self.cpus;
        let p = self.procs.get_mut(&tgid)?;
        if epoch.saturating_sub(p.last_run_epoch) > EPOCH_OLD {
            p.preferred = None;
            p.computed_epoch = Some(epoch);
            return None;
        }
        if p.computed_epoch != Some(epoch) && p.last_run_epoch >= p.computed_epoch.unwrap_or(0) {
            p.preferred = task_cache_work(t, cpus, &p.on, epoch);
            p.computed_epoch = Some(epoch);
        }
        p.preferred
    }
}

/// `task_cache_work`: the highest-occupancy CPU of the LLC with the highest mean occupancy
/// (ties to the LLC, then the CPU, met first in CPU order, as the kernel's strict `>` does).
fn task_cache_work(
    t: &ShadowTopo,
    cpus: &[Decayed],
    on: &[(u32, Decayed)],
    epoch: u64,
) -> Option<u32> {
    let occ = |cpu: u32, d: &Decayed| {
        let mine = d.at(epoch).runtime;
        let all = cpus.get(cpu as usize).map_or(0, |c| c.at(epoch).runtime);
        (u128::from(NICE_0_LOAD) * u128::from(mine) / (u128::from(all) + 1)) as u64
    };
    let mut by_llc: Vec<(u32, u32, u64, u32, u64)> = Vec::new(); // (first cpu, llc, sum, m_cpu, m_occ)
    for (cpu, d) in on {
        if !t.valid(*cpu) {
            continue;
        }
        let o = occ(*cpu, d);
        let l = t.llc(*cpu);
        let first = t.llc_cpus(l).first().copied().unwrap_or(*cpu);
        match by_llc.iter_mut().find(|x| x.1 == l) {
            Some(x) => {
                x.2 += o;
                if o > x.4 || (o == x.4 && *cpu < x.3) {
                    (x.3, x.4) = (*cpu, o);
                }
            }
            None => by_llc.push((first, l, o, *cpu, o)),
        }
    }
    by_llc.sort_unstable_by_key(|x| x.0);
    let mut best: Option<(u64, u32)> = None;
    for (_, l, sum, m_cpu, m_occ) in by_llc {
        let n = u64::from(t.llc_size.get(l as usize).copied().unwrap_or(1).max(1));
        let a_occ = sum / n;
        if m_occ > 0 && a_occ > best.map_or(0, |b| b.0) {
            best = Some((a_occ, m_cpu));
        }
    }
    best.filter(|&(a, _)| a >= NICE_0_LOAD >> EPOCH_OLD)
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::fixture;

    fn topo() -> ShadowTopo {
        let t = fixture::named_topology("zen3-nps4").expect("fixture");
        ShadowTopo::new(&t, super::super::topo::NODE_RECLAIM_DISTANCE)
    }

    /// The LLC where the process ran most recently and most is preferred; it moves when the
    /// runtime moves, decays away, and is dropped after EPOCH_OLD idle epochs.
    #[test]
    fn the_preferred_llc_follows_the_decayed_runtime() {
        let t = topo();
        let mut o = Occupancy::new(&t);
        let (a, b) = (0, t.llc_cpus(1)[0]);
        assert_ne!(t.llc(a), t.llc(b));
        // Epoch 0: mostly on `a` (the only user of both CPUs).
        o.account(a, 7, 8_000_000, 1_000_000);
        o.account(b, 7, 1_000_000, 2_000_000);
        o.account(b, 9, 3_000_000, 2_500_000);
        assert_eq!(o.preferred_cpu(&t, 7, 3_000_000), Some(a));
        // Epochs 1-2: only on `b`; `a`'s share halves each epoch, but the CPU's total
        // halves with it: occupancy is a fraction of what ran there.
        o.account(b, 7, 9_000_000, 19_000_000);
        o.account(b, 7, 9_000_000, 29_000_000);
        // Another process takes `a` over: 7's fraction of `a` falls.
        o.account(a, 8, 9_000_000, 29_500_000);
        assert_eq!(o.preferred_cpu(&t, 7, 29_900_000), Some(b));
        // Not run for more than EPOCH_OLD epochs: no preference.
        assert_eq!(o.preferred_cpu(&t, 7, 29_000_000 + 6 * EPOCH_NS), None);
        assert_eq!(o.preferred_cpu(&t, 99, 1), None);
    }

    /// A file claiming more processes than followed, or a process on more CPUs than
    /// remembered, costs bounded memory; idle processes make room for new ones.
    #[test]
    fn processes_and_their_cpus_are_bounded() {
        let t = topo();
        let mut o = Occupancy::new(&t);
        for g in 0..MAX_PROCESSES as u32 + 10 {
            o.account(0, g, 1_000, 1_000);
        }
        assert_eq!((o.procs.len(), o.untracked), (MAX_PROCESSES, 10));
        // Ten epochs later the idle ones are dropped for a newcomer.
        o.account(0, 999_999, 1_000, 10 * EPOCH_NS);
        assert_eq!(o.procs.len(), 1);
        for c in 0..t.bound as u32 {
            o.account(c, 5, 1_000 + u64::from(c), 10 * EPOCH_NS);
        }
        let p = o.procs.get(&5).expect("tracked");
        assert_eq!(p.on.len(), MAX_CPUS_PER_PROCESS.min(t.bound));
    }

    /// A process with a tiny share of every CPU it touched has no preference
    /// (`m_a_occ < NICE_0_LOAD >> EPOCH_OLD`).
    #[test]
    fn a_small_occupancy_is_no_preference() {
        let t = topo();
        let mut o = Occupancy::new(&t);
        let llc0 = t.llc_cpus(0).to_vec();
        for &c in &llc0 {
            o.account(c, 1, 9_000_000, 1_000_000);
        }
        // 7 ran 1 % of one CPU of the LLC: its mean occupancy is far below 32.
        o.account(llc0[0], 7, 100_000, 1_100_000);
        assert_eq!(o.preferred_cpu(&t, 7, 2_000_000), None);
        // 1's highest occupancy is on the CPUs 7 did not share, the first of them in order.
        assert_eq!(o.preferred_cpu(&t, 1, 2_000_000), Some(llc0[1]));
    }
}
