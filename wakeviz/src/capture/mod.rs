//! Live capture: each ring buffer read by the consumer's main thread while it is quiet and by
//! its own thread when it is busy (see [`drain`] and [`pace`]), in batches; the threads hand
//! theirs over through one bounded channel. [`LiveSource`] implements the same `EventSource`
//! as replay. With several
//! rings the batches go through `wakeviz_core::merge` first, so the analyses and the recording
//! see one stream in timestamp order, and what arrives behind the watermark is counted as late.
//!
//! With per-CPU batching the merge is used for one ring too (a CPU's batch reaches the ring
//! later than another CPU's newer records), and [`batches`] tells it what the CPUs still hold.
//!
//! Drops are counted where they happen: the probes count failed reserves per CPU (kernel
//! drops), the drain task counts batches it could not hand over because the channel was full
//! (user drops). The UI or recorder never slows the kernel side down: it just sees drops.
mod batches;
pub(crate) mod cgroup;
mod drain;
mod hold;
pub(crate) mod meta;
mod names;
pub(crate) mod pace;
mod proc_tgid;
pub(crate) mod schedstat;

use std::{
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicBool, AtomicU64, Ordering},
        mpsc::{Receiver, RecvTimeoutError},
    },
    thread::JoinHandle,
    time::{Duration, Instant},
};

use anyhow::Context as _;
use aya::maps::{MapData, PerCpuArray, RingBuf};
use batches::BatchWatch;
use drain::{Chunk, Drain, RingCounters, SharedRing};
use hold::Hold;
use pace::Pace;
use tokio::sync::Notify;
use wakeviz_common::{EventKind, names::map, stat};
use wakeviz_core::{
    event::{Event, PerKind},
    format::{BatchStats, CaptureStats, Header, RingStats},
    merge::{DEFAULT_CAP, Merger},
    rings::RingPlan,
    source::{Batch, EventSource, Poll, SourceError},
    topology::CpuSet,
};

use crate::probes::{Probes, RunStat};

/// Batches in flight per ring before its drain thread starts dropping: with 8192-event batches
/// about half a second of slack at 1 M events/s, and a memory bound of about 30 MB. Busy rings
/// all hand over through this channel, so the slack in time a starved consumer has shrinks
/// with the number of rings unless the channel grows with them (with 2 rings and a shared
/// 72-slot channel, `perf bench sched messaging -g 8` on 2 CPUs lost 2 % in userspace where one
/// ring lost nothing); hence slots per ring, up to [`MAX_CHANNEL`].
const CHANNEL_BATCHES: usize = 64;
/// Bound on the channel over all rings: 16 rings' worth (most chunks of a quiet ring are nearly
/// empty, so memory stays far below 1024 full batches in practice).
const MAX_CHANNEL: usize = 1024;

struct Shared {
    stop: AtomicBool,
    rings: Vec<RingCounters>,
    user_drops: AtomicU64,
    decode_errors: AtomicU64,
    /// Why the drain task gave up, when it did not end because it was asked to: the consumer
    /// turns it into an error instead of a normal end of stream.
    failure: Mutex<Option<String>>,
}

/// The main thread's hold on one ring.
struct Ring {
    side: SharedRing,
    /// Rings the ring's drain thread.
    wake: Arc<Notify>,
    /// The last turn read many records here: the next turns leave it to its drain thread.
    busy: bool,
}

impl Shared {
    fn fail(&self, why: String) {
        let mut f = self.failure.lock().unwrap_or_else(PoisonError::into_inner);
        f.get_or_insert(why);
    }
}

pub struct LiveSource {
    header: Header,
    rx: Receiver<Chunk>,
    shared: Arc<Shared>,
    drains: Vec<JoinHandle<()>>,
    rings: Vec<Ring>,
    /// When the main thread next reads the batches' stamps and the quiet rings.
    pace: Pace,
    /// Several rings, or batches: the streams merged by timestamp. `None` with one ring and no
    /// batching (its records are passed on in ring order).
    merger: Option<Merger>,
    /// The CPUs' held batches, when the probes batch.
    batch_watch: Option<BatchWatch>,
    plan: RingPlan,
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
    /// See [`CaptureStats::max_hold_ns`] and [`CaptureStats::startup_hold_ns`].
    hold: Hold,
    /// Task names in time order after the merge (several rings or batches).
    names: names::Timeline,
}

impl LiveSource {
    pub fn start(mut probes: Probes, mut header: Header) -> anyhow::Result<Self> {
        let events = probes
            .ebpf
            .take_map(map::EVENTS)
            .context("probe object has no EVENTS map")?;
        let ring0 = RingBuf::try_from(events).context("EVENTS is not a ring buffer")?;
        let mut rings = vec![ring0];
        rings.append(&mut probes.rings);
        let plan = probes.ring_plan.clone();
        let stats_map = probes
            .ebpf
            .take_map(map::STATS)
            .context("probe object has no STATS map")?;
        let stats_map: PerCpuArray<MapData, u64> =
            PerCpuArray::try_from(stats_map).context("STATS is not a per-CPU array")?;
        let batch_watch = if probes.batching {
            Some(BatchWatch::new(&mut probes)?)
        } else {
            None
        };
        let merged = rings.len() > 1 || batch_watch.is_some();
        let (tx, rx) =
            std::sync::mpsc::sync_channel((CHANNEL_BATCHES * rings.len()).min(MAX_CHANNEL));
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            rings: rings.iter().map(|_| RingCounters::default()).collect(),
            user_drops: AtomicU64::new(0),
            decode_errors: AtomicU64::new(0),
            failure: Mutex::new(None),
        });
        let mut drains = Vec::with_capacity(rings.len());
        let mut held = Vec::with_capacity(rings.len());
        for (i, ring) in rings.into_iter().enumerate() {
            let r = Ring {
                side: drain::shared_ring(ring),
                wake: Arc::new(Notify::new()),
                busy: false,
            };
            let d = Drain {
                ring: i,
                merged,
                tx: tx.clone(),
                sh: Arc::clone(&shared),
                side: Arc::clone(&r.side),
                wake: Arc::clone(&r.wake),
            };
            held.push(r);
            let h = std::thread::Builder::new()
                .name(format!("wakeviz-drain{i}"))
                .spawn(move || {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build();
                    match rt {
                        Ok(rt) => rt.block_on(d.run()),
                        Err(e) => d.sh.fail(format!("cannot start the capture runtime: {e}")),
                    }
                })
                .with_context(|| format!("spawning the drain thread of ring buffer {i}"))?;
            drains.push(h);
        }
        let merger = merged.then(|| {
            let m = Merger::new(plan.len(), DEFAULT_CAP);
            if batch_watch.is_some() {
                m.with_batches()
            } else {
                m
            }
        });
        pace::relax_timers();
        // The drain threads exist from their spawn: recorded with the others as wakeviz's own.
        header.run.own_tids = meta::own_tids();
        Ok(Self {
            header,
            rx,
            shared,
            drains,
            rings: held,
            pace: Pace::default(),
            merger,
            batch_watch,
            plan,
            stats_map,
            stats: CaptureStats::default(),
            delivered: 0,
            last_stats: Instant::now(),
            ended: false,
            warnings: Vec::new(),
            probes: Some(probes),
            run_stats: Vec::new(),
            probe_misses: 0,
            hold: Hold::default(),
            names: names::Timeline::default(),
        })
    }

    /// Sums the per-CPU kernel counters.
    fn refresh_stats(&mut self) {
        let mut s = CaptureStats {
            offered: PerKind::from_fn(|k| match EventKind::from_u16(k.abi()) {
                Some(ek) => sum(&self.stats_map, stat::offered(ek)),
                None => 0,
            }),
            ..CaptureStats::default()
        };
        s.kernel_drops = sum(&self.stats_map, stat::RINGBUF_DROPS);
        if let Some(m) = &self.merger {
            s.late_events = m.stats().late_events;
            if self.plan.len() > 1 {
                s.rings = self.ring_stats();
            }
        }
        if let Some(w) = &mut self.batch_watch {
            s.batches = Some(Box::new(BatchStats {
                sent: sum(&self.stats_map, stat::BATCHES),
                unbatched: sum(&self.stats_map, stat::UNBATCHED),
                flushed_by_wakeviz: w.flushed,
                dropped_records: sum(&self.stats_map, stat::BATCH_DROPS),
            }));
            if let Some(why) = w.failure.take() {
                self.warnings.push(format!(
                    "a CPU's batch could not be flushed ({why}): its records wait for its next event"
                ));
            }
        }
        s.select_unpaired = sum(&self.stats_map, stat::SELECT_UNPAIRED);
        s.user_drops = self.shared.user_drops.load(Ordering::Relaxed);
        s.delivered = self.delivered;
        s.decode_errors = self.shared.decode_errors.load(Ordering::Relaxed);
        s.max_hold_ns = self.hold.steady_ns;
        s.startup_hold_ns = self.hold.startup_ns;
        if let Some(p) = &self.probes {
            self.probe_misses = p.recursion_misses();
        }
        s.probe_misses = self.probe_misses;
        self.stats = s;
        self.last_stats = Instant::now();
    }

    /// Per ring: drops on its CPUs (the kernel counts them per CPU) and its consumer's counts.
    fn ring_stats(&self) -> Vec<RingStats> {
        let per_cpu = self.stats_map.get(&stat::RINGBUF_DROPS, 0).ok();
        self.plan
            .rings
            .iter()
            .zip(&self.shared.rings)
            .map(|(cpus, c)| RingStats {
                cpus: cpus.iter().copied().collect::<CpuSet>().to_list(),
                kernel_drops: per_cpu.as_ref().map_or(0, |v| {
                    cpus.iter().filter_map(|&cpu| v.get(cpu as usize)).sum()
                }),
                delivered: c.delivered.load(Ordering::Relaxed),
                user_drops: c.user_drops.load(Ordering::Relaxed),
            })
            .collect()
    }

    /// Takes chunks until one yields events, the timeout passes or the drains are gone. With
    /// several rings or batches the events go through the merge and then the names' timeline
    /// (see [`names`]), which may hand them on over several calls.
    fn receive(&mut self, timeout: Duration) -> Result<Batch, RecvTimeoutError> {
        if self.names.has_events() {
            return Ok(self.names.next(false));
        }
        let deadline = Instant::now() + timeout;
        let mut released = Vec::new();
        let mut direct = Batch::default();
        loop {
            if self.pace.next_in().is_zero() {
                self.turn(&mut released, &mut direct);
            }
            if !released.is_empty() || direct != Batch::default() {
                break;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let wait = left.min(self.pace.next_in());
            match self.rx.recv_timeout(wait) {
                Ok(c) => self.accept(c, &mut released, &mut direct),
                Err(RecvTimeoutError::Timeout) if wait < left => {}
                Err(e) => return Err(e),
            }
            if left.is_zero() && released.is_empty() && direct == Batch::default() {
                return Err(RecvTimeoutError::Timeout);
            }
        }
        if self.merger.is_some() {
            Ok(self.names.release(released, false))
        } else {
            Ok(direct)
        }
    }

    /// A chunk into the merge (its names into the timeline), or, without a merge, onto `direct`.
    fn accept(&mut self, chunk: Chunk, released: &mut Vec<Event>, direct: &mut Batch) {
        let Some(m) = self.merger.as_mut() else {
            direct.events.extend(chunk.batch.events);
            direct.tasks.extend(chunk.batch.tasks);
            return;
        };
        for (t, ts) in chunk.batch.tasks.iter().zip(&chunk.name_ts) {
            self.names.fact(*t, *ts);
        }
        m.push(chunk.ring, chunk.batch.events, chunk.clock_ns, released);
        if chunk.last {
            m.close(chunk.ring, released);
        }
    }

    /// The main thread's turn: read the batches' stamps, then every quiet ring itself (a busy
    /// one is its drain thread's), so an idle capture wakes no other thread. The chunks the
    /// drain threads handed over go first: a ring's chunks must reach the merge in ring order,
    /// and the ones in the channel were handed over before this thread took the ring's lock.
    fn turn(&mut self, released: &mut Vec<Event>, direct: &mut Batch) {
        if let (Some(w), Some(m)) = (self.batch_watch.as_mut(), self.merger.as_mut()) {
            w.read(self.probes.as_ref(), m, released);
        }
        // Once stopping, each drain thread reads its ring a last time and closes it.
        let stopping = self.shared.stop.load(Ordering::SeqCst);
        let rings = std::mem::take(&mut self.rings);
        let mut locked = Vec::new();
        for (i, r) in rings.iter().enumerate() {
            if stopping {
                continue;
            }
            if r.busy {
                r.wake.notify_one();
            } else if let Ok(g) = r.side.try_lock() {
                locked.push((i, g));
            }
        }
        while let Ok(c) = self.rx.try_recv() {
            self.accept(c, released, direct);
        }
        let mut read = vec![None; rings.len()];
        for (i, mut side) in locked {
            let mut chunks = Vec::new();
            let mut keep = |_: &mut drain::Carry, c: Chunk| {
                chunks.push(c);
                true
            };
            read[i] = side.pass(i, &self.shared, &mut keep);
            chunks.push(side.finish(i, false));
            drop(side);
            for c in chunks {
                let n = c.batch.events.len() as u64;
                self.shared.rings[i]
                    .delivered
                    .fetch_add(n, Ordering::Relaxed);
                self.accept(c, released, direct);
            }
        }
        self.rings = rings;
        for ((r, n), c) in self.rings.iter_mut().zip(read).zip(&self.shared.rings) {
            // A ring left to its thread stays there until its thread's pass finds it quiet.
            let n = n.unwrap_or_else(|| c.last_pass.load(Ordering::Relaxed));
            r.busy = n > pace::DIRECT_MAX;
        }
        let busy = self.rings.iter().any(|r| r.busy)
            || self
                .merger
                .as_ref()
                .is_some_and(|m| m.held() > pace::BUSY_HELD);
        self.pace.taken(busy);
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
        let r = self.receive(timeout);
        let stale = self.last_stats.elapsed() >= Duration::from_millis(250);
        match r {
            Ok(mut b) => {
                self.delivered += b.events.len() as u64;
                if !b.events.is_empty() {
                    self.hold.note(&b.events, drain::now_ns());
                }
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
                // The drain tasks finished their last pass: what the merge still holds, final
                // counters, then the end.
                for h in self.drains.drain(..) {
                    if h.join().is_err() {
                        self.shared
                            .fail("a ring-buffer drain thread panicked".into());
                    }
                }
                if let Some(m) = self.merger.as_mut() {
                    let mut rest = Vec::new();
                    m.finish(&mut rest);
                    let b = self.names.release(rest, true);
                    if !b.events.is_empty() || !b.tasks.is_empty() {
                        self.delivered += b.events.len() as u64;
                        return Ok(Poll::Batch(b));
                    }
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
        if let Some(mut p) = self.probes.take() {
            // Once, at the first stop, while every thread of the run still exists.
            if let Some(w) = unlisted_threads(&self.header.run.own_tids) {
                self.warnings.push(w);
            }
            self.run_stats = p.run_stats();
            self.probe_misses = p.recursion_misses();
            for (cpu, why) in p.detach_and_flush() {
                self.warnings.push(format!(
                    "CPU {cpu}'s last batch was not sent at the end ({why}): its records are lost"
                ));
            }
        }
        self.shared.stop.store(true, Ordering::SeqCst);
        for r in &self.rings {
            r.wake.notify_one();
        }
    }

    fn stats(&self) -> Option<&CaptureStats> {
        Some(&self.stats)
    }
}

/// Every thread wakeviz runs is started before the capture reads the list of its own threads:
/// one that is not on the list now had its wakeups counted as another task's. Says which.
fn unlisted_threads(listed: &[u32]) -> Option<String> {
    let names: Vec<String> = meta::own_tids()
        .into_iter()
        .filter(|t| !listed.contains(t))
        .map(|t| {
            let comm =
                std::fs::read_to_string(format!("/proc/self/task/{t}/comm")).unwrap_or_default();
            format!("{t} ({})", comm.trim())
        })
        .collect();
    (!names.is_empty()).then(|| {
        format!(
            "wakeviz threads started during the capture are not in its own-thread list, so their wakeups count as other tasks': {}",
            names.join(", ")
        )
    })
}
