//! Timestamp merge of several ring buffers' streams, with a watermark.
//!
//! A wakeup's `sched_waking` is written on the waker's CPU and its `sched_wakeup` on the target
//! CPU, so with one ring per CPU group they arrive through different rings, in any order
//! relative to each other (a join that trusts arrival order inflates wakeup latencies this way).
//! The join must see them in time order. Each ring's consumer reports, with every batch, a
//! CLOCK_MONOTONIC reading taken *before* it drained the ring: every event the ring will still
//! deliver was stamped after that reading, except one that a probe was between its clock read
//! and its submit at that moment. The watermark is the minimum of those readings over the open
//! rings minus [`GRACE_NS`] (that in-flight window, widened by intra-ring reordering: records
//! are stamped before they take the ring's lock); events at or below it are released, sorted.
//! An idle ring still reports its clock every poll tick, so a quiet ring never stalls the
//! stream. Memory is bounded by a cap on held events; past it the oldest are released early and
//! counted. An event older than what was already released is *late*: counted, never handed on
//! (it would be joined out of order).
//!
//! With per-CPU batching (`wakeviz_common::batch`) a record can reach its ring long after its
//! stamp, so a ring's clock alone no longer bounds what it will still deliver. Userspace then
//! also reports, every few ms, the CPUs' `BATCH_PENDING` stamps and the oldest stamp still held
//! ([`Merger::note_batches`]). Reading the slots takes time: the clock is read at `t0` before
//! the first slot and at `t1` after the last. A reading with oldest held stamp `p` proves:
//! every record stamped before `min(t0, p)` had left its batch by the time its CPU's slot was
//! read, so by `t1` (a record still held then would have made its slot at most its stamp; one
//! stamped before `t0` but not yet in the batch is the in-flight case the grace covers). So once
//! every ring's clock has passed `t1`, those records have been delivered, and the watermark may
//! go up to `min(t0, p)`; it uses the latest reading whose `t1` every ring's clock has passed.
//! Waiting for `t0` instead is wrong: a batch its CPU sends between `t0` and the read of its
//! slot shows an empty slot, while a ring drained in between (clock past `t0`) had not yet got
//! it (`late_when_a_batch_leaves_during_the_reading` in the tests).
mod held;

use std::collections::VecDeque;

use held::Held;

use crate::event::Event;

/// Slack below the slowest ring's clock before events are released: far above a probe's
/// clock-read-to-submit time on bare metal (hundreds of ns, an interrupt's µs), and above what
/// a virtual CPU descheduled by its host between the two adds (measured: with 2 ms, a 24-vCPU
/// TCG guest, whose vCPUs share one host thread, had 3 late events in 38 k).
pub const GRACE_NS: u64 = 20_000_000;

/// Most the grace grows to after late events (see [`Merger::push`]).
pub const MAX_GRACE_NS: u64 = 1_000_000_000;

/// Default bound on held events: at 10 M events/s about 0.1 s of stream, 4 MB at 40 bytes.
pub const DEFAULT_CAP: usize = 1 << 20;

/// Most batch readings kept while the rings' clocks catch up with them (about 10 s of readings
/// every 10 ms). Past it new readings are not kept, which only holds the watermark lower.
const MAX_BATCH_READINGS: usize = 1024;

/// One reading of the CPUs' held batches (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct BatchReading {
    /// CLOCK_MONOTONIC after the last stamp was read: usable once every ring's clock passed it.
    at_ns: u64,
    /// `min(clock before the first stamp was read, oldest held stamp)`.
    bound_ns: u64,
}

/// Counters a merge keeps, cumulative.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MergeStats {
    /// Events that arrived older than an event already released, left out of the stream.
    pub late_events: u64,
    /// Events released before the watermark reached them because the cap was hit.
    pub forced: u64,
}

impl Merger {
    /// The grace in force (it grows after late events).
    pub fn grace_ns(&self) -> u64 {
        self.grace
    }
}

/// The merge state. Rings are numbered `0..rings`.
pub struct Merger {
    /// Per ring: the clock it last reported, `u64::MAX` once closed.
    clocks: Vec<u64>,
    held: Held,
    /// Timestamp of the last event released.
    released: Option<u64>,
    cap: usize,
    grace: u64,
    stats: MergeStats,
    /// `Some` when records may wait in per-CPU batches: the readings not yet superseded, oldest
    /// first. Until one is usable nothing is released.
    batches: Option<VecDeque<BatchReading>>,
}

impl Merger {
    pub fn new(rings: usize, cap: usize) -> Self {
        Self::with_grace(rings, cap, GRACE_NS)
    }

    pub fn with_grace(rings: usize, cap: usize, grace: u64) -> Self {
        Self {
            clocks: vec![0; rings],
            held: Held::default(),
            released: None,
            cap: cap.max(1),
            grace,
            stats: MergeStats::default(),
            batches: None,
        }
    }

    /// Records may wait in per-CPU batches: hold the watermark below the batch readings too.
    pub fn with_batches(mut self) -> Self {
        self.batches = Some(VecDeque::new());
        self
    }

    /// A reading of the CPUs' held batches: the clock read `from_ns` before the first CPU's
    /// slot and `until_ns` after the last; the oldest held record was stamped `oldest_ns`
    /// (`None`: no CPU held one). Appends what became releasable to `out`.
    pub fn note_batches(
        &mut self,
        from_ns: u64,
        until_ns: u64,
        oldest_ns: Option<u64>,
        out: &mut Vec<Event>,
    ) {
        let Some(readings) = self.batches.as_mut() else {
            return;
        };
        let at_ns = until_ns.max(from_ns);
        let bound_ns = oldest_ns.map_or(from_ns, |p| p.min(from_ns));
        let newer = readings.back().is_none_or(|r| at_ns > r.at_ns);
        if newer && readings.len() < MAX_BATCH_READINGS {
            readings.push_back(BatchReading { at_ns, bound_ns });
        }
        self.release(out);
    }

    pub fn stats(&self) -> MergeStats {
        self.stats
    }

    /// Events held, waiting for the watermark.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// Takes in a batch from `ring`, drained after the clock read `clock_ns`, and appends to
    /// `out` whatever became releasable, in timestamp order.
    /// Takes the events by value: a boxed select record then moves instead of being cloned.
    pub fn push(
        &mut self,
        ring: usize,
        events: impl IntoIterator<Item = Event>,
        clock_ns: u64,
        out: &mut Vec<Event>,
    ) {
        for ev in events {
            self.insert(ev);
        }
        if let Some(c) = self.clocks.get_mut(ring)
            && *c != u64::MAX
        {
            *c = (*c).max(clock_ns);
        }
        self.release(out);
    }

    /// The ring will deliver nothing more: it no longer holds the watermark back.
    pub fn close(&mut self, ring: usize, out: &mut Vec<Event>) {
        if let Some(c) = self.clocks.get_mut(ring) {
            *c = u64::MAX;
        }
        self.release(out);
    }

    /// Releases everything held (the end of the stream).
    pub fn finish(&mut self, out: &mut Vec<Event>) {
        self.release_held(u64::MAX, out);
    }

    fn insert(&mut self, ev: Event) {
        let ts = ev.ts_ns();
        if let Some(r) = self.released
            && ts < r
        {
            self.stats.late_events += 1;
            // The host is slower to deliver than the grace allowed for: widen it to twice this
            // lateness, so one stall costs a few events, not a steady stream of them.
            self.grace = self.grace.max((r - ts).saturating_mul(2)).min(MAX_GRACE_NS);
            return;
        }
        self.held.insert(ev);
    }

    /// Releases what is held up to `w`, and notes the last stamp released.
    fn release_held(&mut self, w: u64, out: &mut Vec<Event>) {
        let start = out.len();
        self.held.release_to(w, out);
        if let Some(e) = out[start..].last() {
            self.released = Some(e.ts_ns());
        }
    }

    fn watermark(&mut self) -> u64 {
        let rings = self.clocks.iter().copied().min().unwrap_or(u64::MAX);
        if rings == u64::MAX {
            return u64::MAX;
        }
        let min = match self.batches.as_mut() {
            None => rings,
            Some(readings) => {
                // Drop the readings a later usable one supersedes.
                while readings.len() > 1 && readings[1].at_ns <= rings {
                    readings.pop_front();
                }
                match readings.front() {
                    Some(r) if r.at_ns <= rings => rings.min(r.bound_ns),
                    _ => 0,
                }
            }
        };
        min.saturating_sub(self.grace)
    }

    fn release(&mut self, out: &mut Vec<Event>) {
        let w = self.watermark();
        self.release_held(w, out);
        // Over the cap: release the oldest down to half of it, so the next batches do not each
        // force a release of their own.
        if self.held.len() > self.cap {
            let start = out.len();
            self.stats.forced += self.held.release_oldest(self.cap / 2, out);
            if let Some(e) = out[start..].last() {
                self.released = Some(e.ts_ns());
            }
        }
    }
}

#[cfg(test)]
mod tests;
