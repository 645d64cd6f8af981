//! Rolling windows over stream time (event timestamps, not the wall clock), so a replay shows
//! the same "last second" the live view showed at that point of the trace. A window is a ring of
//! slots; the current slot takes new events, and expired slots are cleared as time passes, so
//! memory is fixed and advancing costs nothing per event unless a slot boundary is crossed.
use hdrhistogram::Histogram;

use super::{latency, placement::PlacementCounts};

/// What one slot of a window holds.
#[derive(Clone)]
pub struct WindowSlot {
    pub placement: PlacementCounts,
    pub scan: Histogram<u64>,
    pub wakeup_latency: Histogram<u64>,
}

impl Default for WindowSlot {
    fn default() -> Self {
        Self {
            placement: PlacementCounts::default(),
            scan: latency::coarse(),
            wakeup_latency: latency::coarse(),
        }
    }
}

impl WindowSlot {
    fn clear(&mut self) {
        self.placement = PlacementCounts::default();
        self.scan.reset();
        self.wakeup_latency.reset();
    }

    fn merge(&mut self, o: &Self) {
        self.placement.merge(&o.placement);
        latency::merge(&mut self.scan, &o.scan);
        latency::merge(&mut self.wakeup_latency, &o.wakeup_latency);
    }
}

/// A window of `slots.len() * slot_ns` nanoseconds of stream time.
pub struct Rolling {
    slot_ns: u64,
    slots: Vec<WindowSlot>,
    head: usize,
    /// Start time of the head slot; `None` before the first event.
    head_start: Option<u64>,
    /// Latest timestamp seen.
    now: u64,
}

impl Rolling {
    pub fn new(slot_ns: u64, nr_slots: usize) -> Self {
        Self {
            slot_ns: slot_ns.max(1),
            slots: (0..nr_slots.max(1)).map(|_| WindowSlot::default()).collect(),
            head: 0,
            head_start: None,
            now: 0,
        }
    }

    pub fn span_ns(&self) -> u64 {
        self.slot_ns * self.slots.len() as u64
    }

    /// Moves the window so that `ts` falls into the head slot. Timestamps slightly in the past
    /// (per-CPU buffers interleave) land in the head slot too.
    #[inline]
    pub fn advance(&mut self, ts: u64) {
        let Some(start) = self.head_start else {
            self.head_start = Some(ts - ts % self.slot_ns);
            self.now = ts;
            return;
        };
        self.now = self.now.max(ts);
        if ts < start + self.slot_ns {
            return;
        }
        let steps = (ts - start) / self.slot_ns;
        for _ in 0..steps.min(self.slots.len() as u64) {
            self.head = (self.head + 1) % self.slots.len();
            self.slots[self.head].clear();
        }
        self.head_start = Some(start + steps * self.slot_ns);
    }

    #[inline]
    pub fn head(&mut self) -> &mut WindowSlot {
        &mut self.slots[self.head]
    }

    /// Everything in the window, and the stream-time interval it covers `[from, to]`.
    pub fn merged(&self) -> (WindowSlot, u64, u64) {
        let mut all = WindowSlot::default();
        for s in &self.slots {
            all.merge(s);
        }
        let to = self.now;
        let from = self
            .head_start
            .map_or(0, |h| h.saturating_sub(self.slot_ns * (self.slots.len() as u64 - 1)));
        (all, from, to)
    }

    pub fn reset(&mut self) {
        for s in &mut self.slots {
            s.clear();
        }
        self.head_start = None;
        self.now = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_expire_with_stream_time() {
        let mut w = Rolling::new(100, 10);
        for ts in [5, 50, 150, 999] {
            w.advance(ts);
            w.head().placement.count += 1;
        }
        assert_eq!(w.merged().0.placement.count, 4);
        w.advance(1_050); // slot of ts 5 and 50 [0,100) expires
        assert_eq!(w.merged().0.placement.count, 2);
        w.advance(1_000_000);
        assert_eq!(w.merged().0.placement.count, 0);
        let (_, from, to) = w.merged();
        assert_eq!((from, to), (999_100, 1_000_000));
    }
}
