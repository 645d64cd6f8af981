//! How far each process spreads over LLCs: the LLCs its threads ran on (`sched_switch`) and,
//! per policy, the LLCs it placed the process's wakees in. The cache-aware proposals want one
//! process's threads in one LLC; this says how many each rule would have used.
use serde::Serialize;

use crate::pidmap::PidMap;

/// Processes followed; past this, new ones are counted in [`Spread::untracked`] only (each
/// costs a few words per policy, and a file can claim any number of them).
pub const MAX_PROCESSES: usize = 4096;
/// Threads remembered per process (enough to tell a multi-threaded one).
const MAX_THREADS: usize = 64;
/// Rows of the report's process table.
pub const TOP_PROCESSES: usize = 10;

#[derive(Clone, Debug, Default)]
struct Proc {
    threads: Vec<u32>,
    wakeups: u64,
    /// `words` words per set: the LLCs it ran on, then one set per policy.
    sets: Vec<u64>,
}

/// Per-process LLC sets; see the module docs.
#[derive(Clone, Debug, Default)]
pub struct Spread {
    words: usize,
    policies: usize,
    procs: PidMap<Proc>,
    /// Processes not followed (over [`MAX_PROCESSES`]).
    pub untracked: u64,
}

/// One process of the report's table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProcessRow {
    pub tgid: u32,
    /// Its name, where the stream said it (filled in by the analysis, which has the names).
    pub comm: Option<String>,
    /// Threads seen woken (at most 64 counted).
    pub threads: usize,
    pub wakeups: u64,
    /// LLCs its threads ran on during the capture.
    pub llcs_ran_on: u32,
    /// LLCs the kernel placed its wakees in.
    pub llcs_placed: u32,
}

impl Spread {
    pub fn new(n_llcs: usize, policies: usize) -> Self {
        Self {
            words: n_llcs.div_ceil(64).max(1),
            policies,
            procs: PidMap::default(),
            untracked: 0,
        }
    }

    /// Whether it was sized ([`Spread::new`]; a default one records nothing).
    pub const fn is_sized(&self) -> bool {
        self.words > 0
    }

    fn get(&mut self, tgid: u32) -> Option<&mut Proc> {
        if self.procs.get(&tgid).is_none() {
            if self.procs.len() >= MAX_PROCESSES {
                self.untracked += 1;
                return None;
            }
            let sets = vec![0; self.words * (1 + self.policies)];
            self.procs.insert(
                tgid,
                Proc {
                    sets,
                    ..Proc::default()
                },
            );
        }
        self.procs.get_mut(&tgid)
    }

    fn set(sets: &mut [u64], words: usize, which: usize, llc: u32) {
        let (w, b) = (llc as usize / 64, llc % 64);
        if let Some(x) = sets.get_mut(which * words + w) {
            *x |= 1 << b;
        }
    }

    /// A thread of `tgid` ran in LLC `llc`.
    pub fn on_ran(&mut self, tgid: u32, llc: u32) {
        let words = self.words;
        if let Some(p) = self.get(tgid) {
            Self::set(&mut p.sets, words, 0, llc);
        }
    }

    /// A wakeup of thread `pid` of `tgid`, placed by each policy in `llcs` (registry order).
    pub fn on_placed(&mut self, tgid: u32, pid: u32, llcs: impl Iterator<Item = u32>) {
        let words = self.words;
        let Some(p) = self.get(tgid) else {
            return;
        };
        p.wakeups += 1;
        if p.threads.len() < MAX_THREADS && !p.threads.contains(&pid) {
            p.threads.push(pid);
        }
        for (i, l) in llcs.enumerate() {
            Self::set(&mut p.sets, words, 1 + i, l);
        }
    }

    fn count(p: &Proc, words: usize, which: usize) -> u32 {
        let s = &p.sets[which * words..(which + 1) * words];
        s.iter().map(|w| w.count_ones()).sum()
    }

    /// Per policy: mean LLCs it placed a multi-threaded process's wakees in (`None`: no such
    /// process).
    pub fn llcs_per_process(&self) -> Vec<Option<f64>> {
        let multi: Vec<&Proc> = self
            .procs
            .iter()
            .map(|(_, p)| p)
            .filter(|p| p.threads.len() >= 2)
            .collect();
        (0..self.policies)
            .map(|i| {
                let sum: u64 = multi
                    .iter()
                    .map(|p| u64::from(Self::count(p, self.words, 1 + i)))
                    .sum();
                (!multi.is_empty()).then(|| sum as f64 / multi.len() as f64)
            })
            .collect()
    }

    /// The processes with the most wakeups, with the kernel's spread (policy 0 = observed).
    pub fn top(&self) -> Vec<ProcessRow> {
        let mut v: Vec<(u32, &Proc)> = self.procs.iter().map(|(&g, p)| (g, p)).collect();
        v.sort_unstable_by(|a, b| b.1.wakeups.cmp(&a.1.wakeups).then(a.0.cmp(&b.0)));
        v.into_iter()
            .filter(|(_, p)| p.wakeups > 0)
            .take(TOP_PROCESSES)
            .map(|(tgid, p)| ProcessRow {
                tgid,
                comm: None,
                threads: p.threads.len(),
                wakeups: p.wakeups,
                llcs_ran_on: Self::count(p, self.words, 0),
                llcs_placed: Self::count(p, self.words, 1),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_counts_the_llcs_each_policy_used() {
        let mut s = Spread::new(70, 2);
        s.on_ran(5, 69);
        s.on_placed(5, 50, [3, 3].into_iter());
        s.on_placed(5, 51, [4, 3].into_iter());
        s.on_placed(9, 90, [1, 1].into_iter());
        assert_eq!(s.llcs_per_process(), vec![Some(2.0), Some(1.0)]);
        let top = s.top();
        assert_eq!(
            (
                top[0].tgid,
                top[0].threads,
                top[0].llcs_ran_on,
                top[0].llcs_placed
            ),
            (5, 2, 1, 2)
        );
        let mut full = Spread::new(1, 1);
        for g in 0..MAX_PROCESSES as u32 + 3 {
            full.on_ran(g, 0);
        }
        assert_eq!(full.untracked, 3);
    }
}
