//! Live capture: the ring buffer drained by a tokio task through `AsyncFd`, in batches, into a
//! bounded channel; [`LiveSource`] implements the same `EventSource` as replay.
//!
//! Drops are counted where they happen: the probes count failed reserves per CPU (kernel
//! drops), the drain task counts batches it could not hand over because the channel was full
//! (user drops). The UI or recorder never slows the kernel side down: it just sees drops.
use std::{
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicBool, AtomicU64, Ordering},
        mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError},
    },
    thread::JoinHandle,
    time::{Duration, Instant},
};

use anyhow::Context as _;
use aya::maps::{MapData, PerCpuArray, RingBuf};
use tokio::io::unix::AsyncFd;
use wakeviz_common::{names::map, stat};
use wakeviz_core::{
    decode::decode_record,
    event::TaskTable,
    format::{CaptureStats, Header},
    source::{Batch, EventSource, Poll, SourceError},
};

use crate::probes::{Probes, RunStat};

/// Most events per batch handed to the consumer.
const BATCH_EVENTS: usize = 8192;
/// Batches in flight before the drain task starts dropping: with 8192-event batches about half
/// a second of slack at 1 M events/s, and a memory bound of about 30 MB.
const CHANNEL_BATCHES: usize = 64;
/// Longest time a partial batch waits in the drain task.
const HOLD: Duration = Duration::from_millis(10);

struct Shared {
    stop: AtomicBool,
    user_drops: AtomicU64,
    decode_errors: AtomicU64,
    /// Why the drain task gave up, when it did not end because it was asked to: the consumer
    /// turns it into an error instead of a normal end of stream.
    failure: Mutex<Option<String>>,
}

impl Shared {
    fn fail(&self, why: String) {
        let mut f = self.failure.lock().unwrap_or_else(PoisonError::into_inner);
        f.get_or_insert(why);
    }
}

pub struct LiveSource {
    header: Header,
    rx: Receiver<Batch>,
    shared: Arc<Shared>,
    drain: Option<JoinHandle<()>>,
    stats_map: PerCpuArray<MapData, u64>,
    stats: CaptureStats,
    delivered: u64,
    last_stats: Instant,
    ended: bool,
    warnings: Vec<String>,
    /// Keeps programs and links alive for as long as we capture; dropped by `stop`.
    probes: Option<Probes>,
    run_stats: Vec<RunStat>,
    probe_misses: u64,
}

impl LiveSource {
    pub fn start(mut probes: Probes, mut header: Header) -> anyhow::Result<Self> {
        let events = probes
            .ebpf
            .take_map(map::EVENTS)
            .context("probe object has no EVENTS map")?;
        let ring = RingBuf::try_from(events).context("EVENTS is not a ring buffer")?;
        let stats_map = probes
            .ebpf
            .take_map(map::STATS)
            .context("probe object has no STATS map")?;
        let stats_map: PerCpuArray<MapData, u64> =
            PerCpuArray::try_from(stats_map).context("STATS is not a per-CPU array")?;
        let (tx, rx) = std::sync::mpsc::sync_channel(CHANNEL_BATCHES);
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            user_drops: AtomicU64::new(0),
            decode_errors: AtomicU64::new(0),
            failure: Mutex::new(None),
        });
        let sh = Arc::clone(&shared);
        let drain = std::thread::Builder::new()
            .name("wakeviz-drain".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build();
                match rt {
                    Ok(rt) => rt.block_on(drain_task(ring, tx, sh)),
                    Err(e) => sh.fail(format!("cannot start the capture runtime: {e}")),
                }
            })
            .context("spawning the ring-buffer drain thread")?;
        // The drain thread exists from its spawn: recorded with the others as wakeviz's own.
        header.run.own_tids = crate::meta::own_tids();
        Ok(Self {
            header,
            rx,
            shared,
            drain: Some(drain),
            stats_map,
            stats: CaptureStats::default(),
            delivered: 0,
            last_stats: Instant::now(),
            ended: false,
            warnings: Vec::new(),
            probes: Some(probes),
            run_stats: Vec::new(),
            probe_misses: 0,
        })
    }

    /// Sums the per-CPU kernel counters.
    fn refresh_stats(&mut self) {
        let mut s = CaptureStats::default();
        for (k, slot) in s.offered.iter_mut().enumerate() {
            *slot = sum(&self.stats_map, stat::OFFERED_BASE + k as u32 + 1);
        }
        s.kernel_drops = sum(&self.stats_map, stat::RINGBUF_DROPS);
        s.select_unpaired = sum(&self.stats_map, stat::SELECT_UNPAIRED);
        s.user_drops = self.shared.user_drops.load(Ordering::Relaxed);
        s.delivered = self.delivered;
        s.decode_errors = self.shared.decode_errors.load(Ordering::Relaxed);
        if let Some(p) = &self.probes {
            self.probe_misses = p.recursion_misses();
        }
        s.probe_misses = self.probe_misses;
        self.stats = s;
        self.last_stats = Instant::now();
    }

    /// Per-program BPF cost, taken when the probes were detached.
    pub fn run_stats(&self) -> &[RunStat] {
        &self.run_stats
    }
}

fn sum(map: &PerCpuArray<MapData, u64>, idx: u32) -> u64 {
    map.get(&idx, 0).map_or(0, |v| v.iter().sum())
}

impl EventSource for LiveSource {
    fn header(&self) -> &Header {
        &self.header
    }

    fn poll(&mut self, timeout: Duration) -> Result<Poll, SourceError> {
        if self.ended {
            return Ok(Poll::End);
        }
        let r = self.rx.recv_timeout(timeout);
        let stale = self.last_stats.elapsed() >= Duration::from_millis(250);
        match r {
            Ok(mut b) => {
                self.delivered += b.events.len() as u64;
                if stale {
                    self.refresh_stats();
                    b.stats = Some(self.stats.clone());
                }
                Ok(Poll::Batch(b))
            }
            Err(RecvTimeoutError::Timeout) => {
                if stale {
                    self.refresh_stats();
                    return Ok(Poll::Batch(Batch {
                        stats: Some(self.stats.clone()),
                        ..Batch::default()
                    }));
                }
                Ok(Poll::Pending)
            }
            Err(RecvTimeoutError::Disconnected) => {
                // The drain task finished its last pass: final counters, then the end.
                if let Some(h) = self.drain.take()
                    && h.join().is_err()
                {
                    self.shared
                        .fail("the ring-buffer drain thread panicked".into());
                }
                self.ended = true;
                let failure = self
                    .shared
                    .failure
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take();
                if let Some(why) = failure {
                    // Detach now: nothing reads the ring buffer any more.
                    self.stop();
                    return Err(SourceError::Capture(why));
                }
                self.refresh_stats();
                Ok(Poll::Batch(Batch {
                    stats: Some(self.stats.clone()),
                    ..Batch::default()
                }))
            }
        }
    }

    fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Detaches the probes, then asks the drain task to empty the ring buffer one last time
    /// and stop. Detaching first makes the accounting exact: every event the probes offered is
    /// then either delivered or counted as a drop.
    fn stop(&mut self) {
        if let Some(p) = self.probes.take() {
            self.run_stats = p.run_stats();
            self.probe_misses = p.recursion_misses();
        }
        self.shared.stop.store(true, Ordering::SeqCst);
    }

    fn stats(&self) -> Option<&CaptureStats> {
        Some(&self.stats)
    }
}

/// Hands a batch to the consumer, or counts it as dropped when the channel is full.
fn hand_over(tx: &SyncSender<Batch>, batch: &mut Batch, sh: &Shared) -> bool {
    if batch.events.is_empty() && batch.tasks.is_empty() {
        return true;
    }
    let b = std::mem::take(batch);
    match tx.try_send(b) {
        Ok(()) => true,
        Err(TrySendError::Full(b)) => {
            sh.user_drops
                .fetch_add(b.events.len() as u64, Ordering::Relaxed);
            true
        }
        Err(TrySendError::Disconnected(_)) => false,
    }
}

/// Drains everything readable now into batches.
fn drain_ring(
    ring: &mut RingBuf<MapData>,
    tx: &SyncSender<Batch>,
    sh: &Shared,
    names: &mut TaskTable,
    batch: &mut Batch,
) -> bool {
    while let Some(item) = ring.next() {
        match decode_record(&item) {
            Ok((ev, name)) => {
                if let Some(n) = name
                    && n.comm.0[0] != 0
                    && names.learn(n)
                {
                    batch.tasks.push(n);
                }
                batch.events.push(ev);
            }
            Err(_) => {
                sh.decode_errors.fetch_add(1, Ordering::Relaxed);
            }
        }
        drop(item);
        if batch.events.len() >= BATCH_EVENTS && !hand_over(tx, batch, sh) {
            return false;
        }
    }
    true
}

async fn drain_task(ring: RingBuf<MapData>, tx: SyncSender<Batch>, sh: Arc<Shared>) {
    // SAFETY: the ring buffer owns its map fd for as long as the AsyncFd (which owns the ring
    // buffer) lives, and nothing else closes or re-registers that fd.
    let mut fd =
        match unsafe { AsyncFd::register_with_interest(ring, tokio::io::Interest::READABLE) } {
            Ok(fd) => fd,
            Err(e) => {
                sh.fail(format!("cannot poll the ring buffer: {e}"));
                return;
            }
        };
    // Names already sent: the table is bounded by the number of tasks that ever ran.
    let mut names = TaskTable::default();
    let mut batch = Batch::default();
    // Small batches are held back briefly: one channel slot per wakeup of this task would let a
    // busy machine fill the channel with tiny batches.
    let mut last_handover = Instant::now();
    loop {
        if sh.stop.load(Ordering::SeqCst) {
            // The probes are detached by now, but a program already running on another CPU
            // (or an fexit trampoline) may still submit: drain, let them finish, drain again.
            drain_ring(fd.get_mut(), &tx, &sh, &mut names, &mut batch);
            tokio::time::sleep(Duration::from_millis(30)).await;
            drain_ring(fd.get_mut(), &tx, &sh, &mut names, &mut batch);
            hand_over(&tx, &mut batch, &sh);
            return;
        }
        if last_handover.elapsed() >= HOLD {
            if !hand_over(&tx, &mut batch, &sh) {
                return;
            }
            last_handover = Instant::now();
        }
        let ready = tokio::time::timeout(HOLD, fd.readable_mut()).await;
        match ready {
            Ok(Ok(mut guard)) => {
                let ring = guard.get_inner_mut();
                if !drain_ring(ring, &tx, &sh, &mut names, &mut batch) {
                    return;
                }
                guard.clear_ready();
            }
            Ok(Err(e)) => {
                sh.fail(format!("polling the ring buffer failed: {e}"));
                return;
            }
            // Timeout: the probes do not wake us for every record (see the eBPF `send`), so
            // read whatever accumulated.
            Err(_) => {
                if !drain_ring(fd.get_mut(), &tx, &sh, &mut names, &mut batch) {
                    return;
                }
            }
        }
    }
}
