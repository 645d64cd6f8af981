//! The WF_SYNC check (Mel Gorman's objection to the WF_SYNC patch: "the waker does not
//! necessarily go to sleep"): after each sync wakeup, did the waker block right after, on its
//! CPU? Every sync wakeup counts in [`SyncWatch::all`]; the ones a policy queued behind the
//! waker also count in that policy's `PolicyMetrics::slept`.
use super::metrics::{PolicyMetrics, SleptHist};

/// Sync wakeups remembered per waker CPU until the waker switches out.
const WATCH_SLOTS: usize = 8;

/// Sync wakeups waiting for their waker's next switch-out.
#[derive(Clone, Copy, Debug, Default)]
struct Watch {
    waker: u32,
    n: usize,
    /// (wakeup time, bitmask of policies that queued the wakee behind the waker).
    entries: [(u64, u64); WATCH_SLOTS],
}

/// Per-CPU watches of sync wakeups.
pub(super) struct SyncWatch {
    watches: Vec<Watch>,
    /// Every sync wakeup, whichever policy.
    pub all: SleptHist,
}

/// Counts `h` for every policy whose bit is set in `mask` (bit `i` = registry index `i`).
fn charge(metrics: &mut [PolicyMetrics], mask: u64, h: &SleptHist) {
    if mask == 0 {
        return;
    }
    for (i, m) in metrics.iter_mut().enumerate().take(64) {
        if mask & (1 << i) != 0 {
            m.slept.merge(h);
        }
    }
}

impl SyncWatch {
    pub fn new(cpus: usize) -> Self {
        Self {
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
        let Some(w) = self.watches.get_mut(cpu as usize) else {
            return;
        };
        if w.n > 0 && w.waker != waker {
            // A different waker on that CPU: the earlier one was not running any more.
            let unresolved = SleptHist {
                unresolved: 1,
                ..SleptHist::default()
            };
            for &(_, mask) in &w.entries[..w.n] {
                self.all.merge(&unresolved);
                charge(metrics, mask, &unresolved);
            }
            w.n = 0;
        }
        w.waker = waker;
        if w.n < WATCH_SLOTS {
            w.entries[w.n] = (ts, fired);
            w.n += 1;
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
        let Some(w) = self.watches.get_mut(cpu as usize) else {
            return;
        };
        if w.n == 0 {
            return;
        }
        let matched = w.waker == prev_pid;
        let n = std::mem::take(&mut w.n);
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
