//! The WF_SYNC check (Mel Gorman's objection to the WF_SYNC patch: "the waker does not
//! necessarily go to sleep"): after each sync wakeup, did the waker block right after, on its
//! CPU? Every sync wakeup counts in [`SyncWatch::all`]; the ones a policy queued behind the
//! waker also count in that policy's `PolicyMetrics::slept`.
use super::metrics::{PolicyMetrics, SleptHist};

/// Sync wakeups remembered per waker CPU until the waker switches out.
const WATCH_SLOTS: usize = 8;
const _: () = assert!(WATCH_SLOTS <= u8::MAX as usize);

/// Sync wakeups waiting for their waker's next switch-out.
#[derive(Clone, Copy, Debug, Default)]
struct Watch {
    waker: u32,
    /// (wakeup time, bitmask of policies that queued the wakee behind the waker).
    entries: [(u64, u64); WATCH_SLOTS],
}

/// Per-CPU watches of sync wakeups.
pub(super) struct SyncWatch {
    /// How many entries each CPU's watch holds, apart from the watches: every switch reads
    /// its CPU's count, and 256 one-byte counts take 4 cache lines where the watches take 576.
    n: Vec<u8>,
    watches: Vec<Watch>,
    /// Every sync wakeup, whichever policy.
    pub all: SleptHist,
}

/// Counts `h` for every policy whose bit is set in `mask` (bit `i` = registry index `i`).
fn charge(metrics: &mut [PolicyMetrics], mask: u64, h: &SleptHist) {
    let mut bits = mask;
    while bits != 0 {
        let i = bits.trailing_zeros() as usize;
        bits &= bits - 1;
        if let Some(m) = metrics.get_mut(i) {
            m.slept.merge(h);
        }
    }
}

impl SyncWatch {
    pub fn new(cpus: usize) -> Self {
        Self {
            n: vec![0; cpus],
            watches: vec![Watch::default(); cpus],
            all: SleptHist::default(),
        }
    }

    /// A sync wakeup by `waker` on `cpu` at `ts`; `fired` = the policies that queued the
    /// wakee behind the waker.
    pub fn watch(
        &mut self,
        metrics: &mut [PolicyMetrics],
        cpu: u32,
        waker: u32,
        ts: u64,
        fired: u64,
    ) {
        let (Some(n), Some(w)) = (
            self.n.get_mut(cpu as usize),
            self.watches.get_mut(cpu as usize),
        ) else {
            return;
        };
        if *n > 0 && w.waker != waker {
            // A different waker on that CPU: the earlier one was not running any more.
            let unresolved = SleptHist {
                unresolved: 1,
                ..SleptHist::default()
            };
            for &(_, mask) in &w.entries[..usize::from(*n)] {
                self.all.merge(&unresolved);
                charge(metrics, mask, &unresolved);
            }
            *n = 0;
        }
        w.waker = waker;
        if usize::from(*n) < WATCH_SLOTS {
            w.entries[usize::from(*n)] = (ts, fired);
            *n += 1;
        } else {
            self.all.unresolved += 1;
        }
    }

    /// `cpu` switched `prev_pid` out at `ts` with `prev_state`: resolves its watches.
    #[inline]
    pub fn resolve(
        &mut self,
        metrics: &mut [PolicyMetrics],
        cpu: u32,
        prev_pid: u32,
        prev_state: u32,
        ts: u64,
    ) {
        let Some(n) = self.n.get_mut(cpu as usize).filter(|n| **n > 0) else {
            return;
        };
        let n = usize::from(std::mem::take(n));
        let Some(w) = self.watches.get(cpu as usize) else {
            return;
        };
        let matched = w.waker == prev_pid;
        for &(t0, mask) in &w.entries[..n] {
            let mut h = SleptHist::default();
            if !matched {
                h.unresolved = 1;
            } else if prev_state == 0 {
                h.preempted = 1;
            } else {
                h.add_slept(ts.saturating_sub(t0));
            }
            self.all.merge(&h);
            charge(metrics, mask, &h);
        }
    }
}
