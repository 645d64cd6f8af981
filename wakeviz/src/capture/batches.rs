//! Watching the probes' per-CPU batches (`wakeviz_common::batch`) from the consumer's thread:
//! at each of its turns (`pace`), read each CPU's oldest held stamp (`BATCH_PENDING`), ask a CPU that has held
//! a batch too long to send it, and tell the merge what the reading proves (see
//! `wakeviz_core::merge`): that is what keeps a held record from being overtaken.
use anyhow::Context as _;
use aya::maps::{MapData, PerCpuArray};
use wakeviz_common::names::map;
use wakeviz_core::{event::Event, merge::Merger};

use crate::probes::Probes;

/// A CPU whose oldest held record is older than this is asked to send its batch. A CPU that
/// makes events sends on its own within `batch::MAX_AGE_NS` (2 ms) of its next one; one older
/// than this has made none since, so it runs one task and the IPI costs it little.
const FLUSH_AFTER_NS: u64 = 5_000_000;

pub(super) struct BatchWatch {
    pending: PerCpuArray<MapData, u64>,
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
            flushed: 0,
            failure: None,
        })
    }

    /// Takes a reading. `probes` is `None` once the capture is stopping (the batches were all
    /// sent then). Appends what the merge can release to `out`.
    ///
    /// A CPU that held its batch too long (one task running, say a compiler) is no reason to
    /// read sooner: its flushed batch holds nothing back, and reading every 20 ms would send
    /// it an interrupt every 20 ms.
    pub fn read(&mut self, probes: Option<&Probes>, merger: &mut Merger, out: &mut Vec<Event>) {
        let at = super::drain::now_ns();
        // A failed read proves nothing: the merge then waits (or releases at its cap).
        let Ok(values) = self.pending.get(&0, 0) else {
            return;
        };
        let mut oldest: Option<u64> = None;
        for (cpu, &stamp) in values.iter().enumerate() {
            if stamp == 0 {
                continue;
            }
            if at.saturating_sub(stamp) > FLUSH_AFTER_NS
                && let Some(p) = probes
            {
                match p.flush_batch(cpu as u32) {
                    // Sent before `done`: in its ring by then, like a batch its CPU sent
                    // while the slots were read, so it holds nothing back.
                    Ok(true) => {
                        self.flushed += 1;
                        continue;
                    }
                    // Busy: it is being written right now, so it is not stale; next time.
                    Ok(false) => {}
                    Err(e) => {
                        self.failure.get_or_insert(e);
                    }
                }
            }
            oldest = Some(oldest.map_or(stamp, |o| o.min(stamp)));
        }
        // After the reads and the flushes: a batch its CPU sent while the slots were being
        // read shows as empty, and is only sure to be in its ring by now.
        let done = super::drain::now_ns();
        merger.note_batches(at, done, oldest, out);
    }
}
