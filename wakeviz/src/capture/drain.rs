//! Reading a ring buffer. A ring's state ([`RingSide`]: the ring, the batch being filled, the
//! names it handed on) is behind a lock that two readers take turns at:
//! - the consumer's main thread, on its own schedule (`capture::pace`): a ring that is quiet is
//!   read there, so it costs no thread of its own a wakeup;
//! - the ring's drain thread, which sleeps until the probes wake it (the ring is a quarter
//!   full, see the eBPF `wake_flags`) or the main thread asks it to (a busy ring, the end).
//!
//! Every hand-over carries the CLOCK_MONOTONIC reading taken before the last pass whose records
//! it completes: that reading is what moves the merge's watermark (`wakeviz_core::merge`).
//! Chunks of one ring reach the merge in ring order because a reader hands a chunk on while it
//! holds the ring's lock, and the main thread empties the channel after taking the locks and
//! before it reads a ring itself.
use std::{
    os::fd::{AsRawFd, RawFd},
    sync::{
        Arc, Mutex, MutexGuard, PoisonError,
        atomic::{AtomicU64, Ordering},
        mpsc::{SyncSender, TrySendError},
    },
    time::Duration,
};

use aya::maps::{MapData, RingBuf};
use tokio::{io::unix::AsyncFd, sync::Notify};
use wakeviz_core::{
    decode::{decode_record, ring_records},
    event::TaskTable,
    source::Batch,
};

use super::Shared;

/// Most events per batch handed to the consumer.
const BATCH_EVENTS: usize = 8192;

/// What a ring's reader hands over.
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
    /// Records the drain thread's last pass read: whether the ring is still busy.
    pub last_pass: AtomicU64,
}

/// A ring and what its readers carry from one pass to the next.
pub(super) struct RingSide {
    ring: RingBuf<MapData>,
    st: Carry,
}

/// What a ring's readers carry from one pass to the next.
pub(super) struct Carry {
    batch: Batch,
    /// The clock reading the records handed on so far are complete for.
    safe: u64,
    /// Names handed on (bounded by the number of tasks that ever ran).
    sent: TaskTable,
    /// When each of `batch.tasks` was seen.
    pending_ts: Vec<u64>,
    /// Each process's cgroup, read when this ring first names one of its threads: while a
    /// short-lived process is likely still there to ask.
    cgroups: super::cgroup::Cgroups,
}

/// The lock of a ring, shared by its drain thread and the main thread.
pub(super) type SharedRing = Arc<Mutex<RingSide>>;

pub(super) fn shared_ring(ring: RingBuf<MapData>) -> SharedRing {
    Arc::new(Mutex::new(RingSide {
        ring,
        st: Carry {
            batch: Batch::default(),
            safe: 0,
            sent: TaskTable::default(),
            pending_ts: Vec::new(),
            cgroups: super::cgroup::Cgroups::new(),
        },
    }))
}

pub(super) fn lock(r: &SharedRing) -> MutexGuard<'_, RingSide> {
    r.lock().unwrap_or_else(PoisonError::into_inner)
}

pub(super) fn now_ns() -> u64 {
    u64::try_from(super::meta::clock_ns(libc::CLOCK_MONOTONIC)).unwrap_or(0)
}

impl Carry {
    /// What is batched so far, as a chunk complete up to `clock_ns`.
    fn chunk(&mut self, ring: usize, clock_ns: u64, last: bool) -> Chunk {
        Chunk {
            ring,
            clock_ns,
            last,
            batch: std::mem::take(&mut self.batch),
            name_ts: std::mem::take(&mut self.pending_ts),
        }
    }

    /// The pass's chunk: what is batched, complete up to the last pass's clock reading.
    pub fn finish(&mut self, ring: usize, last: bool) -> Chunk {
        let clock = self.safe;
        self.chunk(ring, clock, last)
    }

    /// A chunk the channel had no room for: its names are lost with it, learnt again from
    /// the task's next record.
    fn forget_names(&mut self, c: &Chunk) {
        for t in &c.batch.tasks {
            self.sent.forget(t.pid);
        }
    }
}

impl RingSide {
    /// Drains everything readable now, handing full batches to `emit` as it goes (false from
    /// `emit`: stop). Ends with what is left batched and the pass's clock reading kept for
    /// [`Carry::finish`]. Returns the records read, `None` when `emit` refused.
    pub fn pass(
        &mut self,
        ring: usize,
        sh: &Shared,
        emit: &mut dyn FnMut(&mut Carry, Chunk) -> bool,
    ) -> Option<u64> {
        let Self { ring: rb, st } = self;
        let pass = now_ns();
        let mut read = 0;
        while let Some(item) = rb.next() {
            // One record, or a CPU's batch of them.
            for rec in ring_records(&item) {
                match rec.and_then(decode_record) {
                    Ok((ev, name)) => {
                        read += 1;
                        if let Some(mut n) = name
                            && n.comm.0[0] != 0
                            && st.sent.learn(n)
                        {
                            if n.tgid == 0 {
                                n.tgid = super::proc_tgid::of(n.pid);
                            }
                            n.cgroup = st.cgroups.of(n.pid, n.tgid);
                            st.batch.tasks.push(n);
                            st.pending_ts.push(ev.ts_ns());
                        }
                        st.batch.events.push(ev);
                    }
                    Err(_) => {
                        sh.decode_errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            drop(item);
            // Mid-pass: the ring is not drained up to `pass` yet, so the chunk carries the
            // previous pass's reading.
            if st.batch.events.len() >= BATCH_EVENTS {
                let c = st.chunk(ring, st.safe, false);
                if !emit(st, c) {
                    return None;
                }
            }
        }
        st.safe = pass;
        Some(read)
    }

    /// The pass's chunk (see [`Carry::finish`]).
    pub fn finish(&mut self, ring: usize, last: bool) -> Chunk {
        self.st.finish(ring, last)
    }
}

/// The ring's map fd for the poller; the ring (and so the fd) lives in [`SharedRing`], which
/// the drain thread holds for as long as the poller exists.
struct RingFd(RawFd);

impl AsRawFd for RingFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

pub(super) struct Drain {
    pub ring: usize,
    /// Several rings or batches: hand over clock-only chunks too, and the last one without
    /// dropping it.
    pub merged: bool,
    pub tx: SyncSender<Chunk>,
    pub sh: Arc<Shared>,
    pub side: SharedRing,
    /// Rung by the main thread: a busy ring to read, or the end.
    pub wake: Arc<Notify>,
}

impl Drain {
    fn counters(&self) -> &RingCounters {
        &self.sh.rings[self.ring]
    }

    /// Hands a chunk to the consumer, or counts it as dropped when the channel is full.
    /// False when the consumer is gone.
    fn hand_over(&self, side: &mut Carry, chunk: Chunk) -> bool {
        if !self.merged && chunk.batch.events.is_empty() && chunk.batch.tasks.is_empty() {
            return true;
        }
        let n = chunk.batch.events.len() as u64;
        if chunk.last && self.merged {
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
                side.forget_names(&c);
                self.sh.user_drops.fetch_add(n, Ordering::Relaxed);
                self.counters().user_drops.fetch_add(n, Ordering::Relaxed);
                true
            }
            Err(TrySendError::Disconnected(_)) => false,
        }
    }

    /// One pass under the ring's lock, its chunks handed over. False when the consumer is gone.
    fn pass(&self, last: bool) -> bool {
        let mut side = lock(&self.side);
        let mut emit = |s: &mut Carry, c: Chunk| self.hand_over(s, c);
        let Some(read) = side.pass(self.ring, &self.sh, &mut emit) else {
            return false;
        };
        self.counters().last_pass.store(read, Ordering::Relaxed);
        let c = side.finish(self.ring, last);
        self.hand_over(&mut side.st, c)
    }

    pub(super) async fn run(self) {
        let fd = lock(&self.side).ring.as_raw_fd();
        // SAFETY: the fd is the ring's map fd; the ring lives in `self.side`, which this thread
        // holds until after the AsyncFd is dropped, and nothing closes or re-registers it.
        let afd = match unsafe {
            AsyncFd::register_with_interest(RingFd(fd), tokio::io::Interest::READABLE)
        } {
            Ok(fd) => fd,
            Err(e) => {
                self.sh
                    .fail(format!("cannot poll ring buffer {}: {e}", self.ring));
                return;
            }
        };
        loop {
            if self.sh.stop.load(Ordering::SeqCst) {
                // The probes are detached by now, but a program already running on another CPU
                // (or an fexit trampoline) may still submit: drain, let them finish, drain
                // again.
                let ok = self.pass(false);
                tokio::time::sleep(Duration::from_millis(30)).await;
                if ok {
                    self.pass(true);
                }
                return;
            }
            tokio::select! {
                r = afd.readable() => match r {
                    // Edge-triggered: the next wait is for the probes' next wakeup.
                    Ok(mut g) => g.clear_ready(),
                    Err(e) => {
                        self.sh
                            .fail(format!("polling ring buffer {} failed: {e}", self.ring));
                        return;
                    }
                },
                () = self.wake.notified() => {}
            }
            if self.sh.stop.load(Ordering::SeqCst) {
                continue;
            }
            if !self.pass(false) {
                return;
            }
        }
    }
}
