//! Watching the probes' per-CPU batches (`wakeviz_common::batch`) from the consumer's thread:
//! every few ms, read each CPU's oldest held stamp (`BATCH_PENDING`), ask a CPU that has held
//! a batch too long to send it, and tell the merge what the reading proves (see
//! `wakeviz_core::merge`): that is what keeps a held record from being overtaken.
use std::time::{Duration, Instant};

use anyhow::Context as _;
use aya::maps::{MapData, PerCpuArray};
use wakeviz_common::names::map;
use wakeviz_core::{event::Event, merge::Merger};

use crate::probes::Probes;

/// Readings are taken at most this often: the merge's grace is 20 ms, so a few readings fall in
/// each grace.
const EVERY: Duration = Duration::from_millis(5);

/// The longest pause between two readings. The pause doubles from [`EVERY`] after each reading
/// that asked no CPU to send its batch while the merge holds few events, and drops back when a
/// CPU had held one too long or the merge holds many: a machine that makes a few hundred
/// events a second is not woken 200 times a second for them. The merge releases only what a
/// reading proves, so a longer pause delays events, never reorders them; a quiet CPU's last
/// records reach the merge within this plus [`FLUSH_AFTER_NS`].
const IDLE_EVERY: Duration = Duration::from_millis(100);

/// Held events past which readings are taken at the full rate, to keep the merge's memory
/// and the stream's delay small under load (a 5 ms reading at a million events a second).
const BUSY_HELD: usize = 4096;

/// A CPU whose oldest held record is older than this is asked to send its batch. A CPU that
/// makes events sends on its own within `batch::MAX_AGE_NS` (2 ms) of its next one; one older
/// than this has made none since, so it runs one task and the IPI costs it little.
const FLUSH_AFTER_NS: u64 = 5_000_000;

pub(super) struct BatchWatch {
    pending: PerCpuArray<MapData, u64>,
    last: Option<Instant>,
    /// The pause before the next reading: [`EVERY`], or longer while idle.
    every: Duration,
    /// Batches sent because wakeviz asked.
    pub flushed: u64,
    /// Why asking a CPU failed, the first time it did (then a warning).
    pub failure: Option<String>,
}

impl BatchWatch {
    pub fn new(probes: &mut Probes) -> anyhow::Result<Self> {
        let m = probes
            .ebpf
            .take_map(map::BATCH_PENDING)
            .context("probe object has no BATCH_PENDING map")?;
        let pending = PerCpuArray::try_from(m).context("BATCH_PENDING is not a per-CPU array")?;
        Ok(Self {
            pending,
            last: None,
            every: EVERY,
            flushed: 0,
            failure: None,
        })
    }

    /// How long until the next reading is due.
    pub fn next_in(&self) -> Duration {
        self.last
            .map_or(Duration::ZERO, |t| self.every.saturating_sub(t.elapsed()))
    }

    /// Takes a reading when one is due. `probes` is `None` once the capture is stopping (the
    /// batches were all sent then). Appends what the merge can release to `out`.
    pub fn tick(&mut self, probes: Option<&Probes>, merger: &mut Merger, out: &mut Vec<Event>) {
        if self.last.is_some_and(|t| t.elapsed() < self.every) {
            return;
        }
        self.last = Some(Instant::now());
        let at = super::drain::now_ns();
        // A failed read proves nothing: the merge then waits (or releases at its cap).
        let Ok(values) = self.pending.get(&0, 0) else {
            return;
        };
        let mut oldest: Option<u64> = None;
        let mut stale = false;
        for (cpu, &stamp) in values.iter().enumerate() {
            if stamp == 0 {
                continue;
            }
            oldest = Some(oldest.map_or(stamp, |o| o.min(stamp)));
            if at.saturating_sub(stamp) > FLUSH_AFTER_NS
                && let Some(p) = probes
            {
                stale = true;
                match p.flush_batch(cpu as u32) {
                    Ok(true) => self.flushed += 1,
                    // Busy: it is being written right now, so it is not stale; next time.
                    Ok(false) => {}
                    Err(e) => {
                        self.failure.get_or_insert(e);
                    }
                }
            }
        }
        // After the reads and the flushes: a batch its CPU sent while the slots were being
        // read shows as empty, and is only sure to be in its ring by now.
        let done = super::drain::now_ns();
        merger.note_batches(at, done, oldest, out);
        self.every = if stale || merger.held() > BUSY_HELD {
            EVERY
        } else {
            (self.every * 2).min(IDLE_EVERY)
        };
    }
}
