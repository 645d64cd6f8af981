//! One consumer per ring buffer: a thread with its own single-threaded tokio runtime that drains
//! the ring through `AsyncFd` into batches for the consumer's channel.
//!
//! With several rings every hand-over carries the CLOCK_MONOTONIC reading taken before the last
//! drain pass whose records it completes, and an idle ring hands over an empty chunk every
//! [`HOLD`] anyway (an idle one backs off to [`IDLE_MAX`]): that reading is what moves the
//! merge's watermark (`wakeviz_core::merge`).
use std::{
    cell::RefCell,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
        mpsc::{SyncSender, TrySendError},
    },
    time::{Duration, Instant},
};

use aya::maps::{MapData, RingBuf};
use tokio::io::unix::AsyncFd;
use wakeviz_core::{
    decode::{decode_record, ring_records},
    event::{Event, TaskTable},
    source::Batch,
};

use super::Shared;

/// Most events per batch handed to the consumer.
const BATCH_EVENTS: usize = 8192;
/// Longest time a partial batch waits in the drain task.
pub(super) const HOLD: Duration = Duration::from_millis(10);
/// Longest poll interval of an idle ring. Every poll is a wakeup of a wakeviz thread on the
/// traced machine: one ring per LLC polled every 10 ms made half the wakeups of a mostly idle
/// 16-CPU guest (4078 of 8155 in the NPS2 demo) and would make 6400/s with 64 rings. A ring
/// that had little since the last poll (fewer records than [`QUIET_PER_S`] would bring, not
/// counting those about wakeviz's own threads) doubles its interval up to this, and a busier
/// poll brings it back to [`HOLD`]. The merge stays correct (a ring's clock reading just moves
/// less often, which delays the release, never reorders it).
const IDLE_MAX: Duration = Duration::from_millis(80);
/// Below this rate of records (other than wakeviz's own) a ring counts as quiet: the background
/// of an idle machine (timers, RCU, kworkers: about a hundred wakeups a second here) should not
/// keep its consumer polling a hundred times a second.
const QUIET_PER_S: u64 = 1000;
/// Records per second one ring must absorb between two polls at the longest interval, so a
/// burst on a ring that was idle is not lost while its consumer sleeps: small rings back off
/// less (at 48 bytes a record, 16 MiB holds 87 ms of this rate, 1 MiB 5 ms).
const BURST_RECORDS_PER_S: u64 = 4_000_000;

/// The idle poll interval's ceiling for a ring of `ring_bytes`.
pub(super) fn idle_max(ring_bytes: u64) -> Duration {
    let secs = (ring_bytes / 48) as f64 / BURST_RECORDS_PER_S as f64;
    Duration::from_secs_f64(secs).clamp(HOLD, IDLE_MAX)
}

/// What a ring's consumer hands over.
pub(super) struct Chunk {
    pub ring: usize,
    /// Every record of this ring stamped before this (minus the merge's grace) is in this
    /// chunk or an earlier one.
    pub clock_ns: u64,
    /// The ring's last chunk.
    pub last: bool,
    pub batch: Batch,
    /// When each of `batch.tasks` was seen: the time of the record it was learnt from.
    pub name_ts: Vec<u64>,
}

/// One ring's own counters.
#[derive(Default)]
pub(super) struct RingCounters {
    pub delivered: AtomicU64,
    pub user_drops: AtomicU64,
}

pub(super) struct Drain {
    pub ring: usize,
    /// Several rings: hand over clock-only chunks too, and the last one without dropping it.
    pub merged: bool,
    pub tx: SyncSender<Chunk>,
    pub sh: Arc<Shared>,
    /// [`idle_max`] of this ring's size.
    pub idle_max: Duration,
    /// Names handed on, and the times of those not handed on yet (one per `batch.tasks`).
    pub names: Names,
}

/// A ring's name facts: what it handed on, and when the pending ones were seen.
#[derive(Default)]
pub(super) struct Names {
    /// Bounded by the number of tasks that ever ran.
    sent: RefCell<TaskTable>,
    pending_ts: RefCell<Vec<u64>>,
    /// Each process's cgroup, read when this ring first names one of its threads: in the
    /// drain, while a short-lived process is likely still there to ask.
    cgroups: super::cgroup::Cgroups,
}

impl Names {
    pub fn with_cgroups() -> Self {
        Self {
            cgroups: super::cgroup::Cgroups::new(),
            ..Self::default()
        }
    }
}

pub(super) fn now_ns() -> u64 {
    u64::try_from(super::meta::clock_ns(libc::CLOCK_MONOTONIC)).unwrap_or(0)
}

impl Drain {
    fn counters(&self) -> &RingCounters {
        &self.sh.rings[self.ring]
    }

    /// The record is about one of wakeviz's own threads (as wakee, waker, or either side of
    /// a switch): it says nothing about whether the traced machine is busy.
    fn own(&self, ev: &Event) -> bool {
        let Some(own) = self.sh.own_tids.get() else {
            return false;
        };
        let has = |pid: u32| pid != 0 && own.binary_search(&pid).is_ok();
        match ev {
            Event::Waking(w) | Event::Wakeup(w) | Event::WakeupNew(w) => {
                has(w.pid) || has(w.waker_pid)
            }
            Event::Switch(s) => has(s.prev_pid) || has(s.next_pid),
            Event::Migrate(m) => has(m.pid),
            Event::Select(s) => has(s.pid) || has(s.waker_pid),
        }
    }

    /// Hands a batch to the consumer, or counts it as dropped when the channel is full.
    /// False when the consumer is gone.
    fn hand_over(&self, batch: &mut Batch, clock_ns: u64, last: bool) -> bool {
        if !self.merged && batch.events.is_empty() && batch.tasks.is_empty() {
            return true;
        }
        let n = batch.events.len() as u64;
        let chunk = Chunk {
            ring: self.ring,
            clock_ns,
            last,
            batch: std::mem::take(batch),
            name_ts: std::mem::take(&mut *self.names.pending_ts.borrow_mut()),
        };
        if last && self.merged {
            // The merge must learn that this ring is closed, or it waits for it until the end.
            let ok = self.tx.send(chunk).is_ok();
            if ok {
                self.counters().delivered.fetch_add(n, Ordering::Relaxed);
            }
            return ok;
        }
        match self.tx.try_send(chunk) {
            Ok(()) => {
                self.counters().delivered.fetch_add(n, Ordering::Relaxed);
                true
            }
            Err(TrySendError::Full(c)) => {
                // Its names are lost with it: learnt again from the task's next record.
                let mut sent = self.names.sent.borrow_mut();
                for t in &c.batch.tasks {
                    sent.forget(t.pid);
                }
                let n = c.batch.events.len() as u64;
                self.sh.user_drops.fetch_add(n, Ordering::Relaxed);
                self.counters().user_drops.fetch_add(n, Ordering::Relaxed);
                true
            }
            Err(TrySendError::Disconnected(_)) => false,
        }
    }

    /// Drains everything readable now into batches. `safe` is the clock reading that the
    /// records handed over so far are complete for; it becomes this pass's reading at the end.
    fn drain_ring(
        &self,
        ring: &mut RingBuf<MapData>,
        batch: &mut Batch,
        safe: &mut u64,
        read: &mut u64,
    ) -> bool {
        let pass = now_ns();
        while let Some(item) = ring.next() {
            // One record, or a CPU's batch of them.
            for rec in ring_records(&item) {
                match rec.and_then(decode_record) {
                    Ok((ev, name)) => {
                        if !self.own(&ev) {
                            *read += 1;
                        }
                        if let Some(mut n) = name
                            && n.comm.0[0] != 0
                            && self.names.sent.borrow_mut().learn(n)
                        {
                            n.cgroup = self.names.cgroups.of(n.pid, n.tgid);
                            batch.tasks.push(n);
                            self.names.pending_ts.borrow_mut().push(ev.ts_ns());
                        }
                        batch.events.push(ev);
                    }
                    Err(_) => {
                        self.sh.decode_errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            drop(item);
            // Mid-pass: the ring is not drained up to `pass` yet, so the chunk carries the
            // previous pass's reading.
            if batch.events.len() >= BATCH_EVENTS && !self.hand_over(batch, *safe, false) {
                return false;
            }
        }
        *safe = pass;
        true
    }

    pub(super) async fn run(self, ring: RingBuf<MapData>) {
        // SAFETY: the ring buffer owns its map fd for as long as the AsyncFd (which owns the
        // ring buffer) lives, and nothing else closes or re-registers that fd.
        let mut fd =
            match unsafe { AsyncFd::register_with_interest(ring, tokio::io::Interest::READABLE) } {
                Ok(fd) => fd,
                Err(e) => {
                    self.sh
                        .fail(format!("cannot poll ring buffer {}: {e}", self.ring));
                    return;
                }
            };
        let mut batch = Batch::default();
        let mut safe = 0u64;
        // Small batches are held back briefly: one channel slot per wakeup of this task would
        // let a busy machine fill the channel with tiny batches.
        let mut last_handover = Instant::now();
        let mut wait = HOLD;
        loop {
            if self.sh.stop.load(Ordering::SeqCst) {
                // The probes are detached by now, but a program already running on another CPU
                // (or an fexit trampoline) may still submit: drain, let them finish, drain
                // again.
                let mut n = 0;
                self.drain_ring(fd.get_mut(), &mut batch, &mut safe, &mut n);
                tokio::time::sleep(Duration::from_millis(30)).await;
                self.drain_ring(fd.get_mut(), &mut batch, &mut safe, &mut n);
                self.hand_over(&mut batch, safe, true);
                return;
            }
            if last_handover.elapsed() >= HOLD {
                if !self.hand_over(&mut batch, safe, false) {
                    return;
                }
                last_handover = Instant::now();
            }
            let ready = tokio::time::timeout(wait, fd.readable_mut()).await;
            let mut read = 0;
            match ready {
                Ok(Ok(mut guard)) => {
                    let ring = guard.get_inner_mut();
                    if !self.drain_ring(ring, &mut batch, &mut safe, &mut read) {
                        return;
                    }
                    guard.clear_ready();
                }
                Ok(Err(e)) => {
                    self.sh
                        .fail(format!("polling ring buffer {} failed: {e}", self.ring));
                    return;
                }
                // Timeout: the probes do not wake us for every record (see the eBPF `send`),
                // so read whatever accumulated.
                Err(_) => {
                    let ring = fd.get_mut();
                    if !self.drain_ring(ring, &mut batch, &mut safe, &mut read) {
                        return;
                    }
                }
            }
            wait = if read * 1000 < QUIET_PER_S * wait.as_millis().max(1) as u64 {
                (wait * 2).min(self.idle_max)
            } else {
                HOLD
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_backoff_is_bounded_by_what_the_ring_holds() {
        assert_eq!(idle_max(16 << 20), IDLE_MAX);
        // 1 MiB: 21845 records, 5.5 ms of 4 M/s: no back-off below HOLD.
        assert_eq!(idle_max(1 << 20), HOLD);
        let m = idle_max(8 << 20);
        assert!(m > HOLD && m < IDLE_MAX, "{m:?}");
    }
}
