//! Rolling windows over stream time (event timestamps, not the wall clock), so a replay shows
//! the same "last second" the live view showed at that point of the trace. A window is a ring of
//! slots; the current slot takes new events, and expired slots are cleared as time passes, so
//! memory is fixed and advancing costs nothing per event unless a slot boundary is crossed.
use super::{
    EventCounts, Snapshot, WindowSection,
    latency::{Hist, LatencySummary},
    part::{Ctx, Part, Placed, Ran, ScanSample},
    placement::PlacementCounts,
    snapshot::{SCAN_UNIT_NS, WAKE_UNIT_NS, Windows},
};
use crate::{event::Event, format::Header};

/// What one slot of a window holds.
#[derive(Clone)]
pub struct WindowSlot {
    /// Events per kind (every event, whatever the filter: the capture's rate).
    pub events: crate::event::PerKind<u64>,
    pub placement: PlacementCounts,
    pub scan: Hist,
    pub wakeup_latency: Hist,
}

impl Default for WindowSlot {
    fn default() -> Self {
        Self {
            events: Default::default(),
            placement: PlacementCounts::default(),
            scan: Hist::coarse(),
            wakeup_latency: Hist::coarse(),
        }
    }
}

impl WindowSlot {
    fn clear(&mut self) {
        self.events = Default::default();
        self.placement = PlacementCounts::default();
        self.scan.reset();
        self.wakeup_latency.reset();
    }

    fn is_empty(&self) -> bool {
        self.events.total() == 0
            && self.placement.count == 0
            && self.scan.is_empty()
            && self.wakeup_latency.is_empty()
    }

    fn merge(&mut self, o: &Self) {
        self.events.add(&o.events);
        self.placement.merge(&o.placement);
        self.scan.merge(&o.scan);
        self.wakeup_latency.merge(&o.wakeup_latency);
    }
}

/// A window of `slots.len() * slot_ns` nanoseconds of stream time. Expiring slots can spill into
/// a coarser window, so a 10 s window costs nothing per event: it is fed ten times a second
/// from the 1 s window's expiring 100 ms slots, and read as (coarse slots + fine window).
pub struct Rolling {
    slot_ns: u64,
    slots: Vec<WindowSlot>,
    head: usize,
    head_start: u64,
    /// End of the head slot: the only number the per-event fast path looks at.
    head_end: u64,
    started: bool,
}

impl Rolling {
    pub fn new(slot_ns: u64, nr_slots: usize) -> Self {
        Self {
            slot_ns: slot_ns.max(1),
            slots: (0..nr_slots.max(1))
                .map(|_| WindowSlot::default())
                .collect(),
            head: 0,
            head_start: 0,
            head_end: 0,
            started: false,
        }
    }

    pub fn span_ns(&self) -> u64 {
        self.slot_ns * self.slots.len() as u64
    }

    /// Moves the window so that `ts` falls into the head slot, spilling expired slots into
    /// `spill`. Timestamps slightly in the past (per-CPU buffers interleave) land in the head.
    #[inline]
    pub fn advance(&mut self, ts: u64, spill: Option<&mut Rolling>) {
        if ts >= self.head_end {
            self.advance_slow(ts, spill);
        }
    }

    #[cold]
    fn advance_slow(&mut self, ts: u64, mut spill: Option<&mut Rolling>) {
        if !self.started {
            self.started = true;
            self.head_start = ts - ts % self.slot_ns;
            self.head_end = self.head_start + self.slot_ns;
            return;
        }
        let n = self.slots.len() as u64;
        let steps = (ts - self.head_start) / self.slot_ns;
        let oldest_start = self.head_start.saturating_sub((n - 1) * self.slot_ns);
        for i in 0..steps.min(n) {
            let next = (self.head + 1) % self.slots.len();
            if let Some(p) = spill.as_deref_mut()
                && !self.slots[next].is_empty()
            {
                p.advance(oldest_start + i * self.slot_ns, None);
                p.head().merge(&self.slots[next]);
            }
            self.slots[next].clear();
            self.head = next;
        }
        self.head_start += steps * self.slot_ns;
        self.head_end = self.head_start + self.slot_ns;
    }

    #[inline]
    pub fn head(&mut self) -> &mut WindowSlot {
        &mut self.slots[self.head]
    }

    /// Everything in the window and the start of its oldest slot (`None` before any event).
    pub fn merged(&self) -> (WindowSlot, Option<u64>) {
        let mut all = WindowSlot::default();
        self.merge_into(&mut all);
        (all, self.oldest_start())
    }

    pub fn merge_into(&self, all: &mut WindowSlot) {
        for s in self.slots.iter().filter(|s| !s.is_empty()) {
            all.merge(s);
        }
    }

    pub fn oldest_start(&self) -> Option<u64> {
        self.started.then(|| {
            self.head_start
                .saturating_sub(self.slot_ns * (self.slots.len() as u64 - 1))
        })
    }

    pub fn reset(&mut self) {
        for s in &mut self.slots {
            s.clear();
        }
        self.started = false;
        self.head_end = 0;
    }
}

/// The last second and the last ten seconds of the stream, as a part of the fold: the 10 s
/// window is fed by the 1 s window's expiring slots, so together they cover the last 10 s.
pub(crate) struct RollingWindows {
    win1: Rolling,
    win10: Rolling,
}

impl Part for RollingWindows {
    fn new(_: &Header) -> Self {
        Self {
            win1: Rolling::new(100_000_000, 10),
            win10: Rolling::new(1_000_000_000, 9),
        }
    }

    #[inline]
    fn on_event(&mut self, _: &Ctx, e: &Event) {
        self.win1.advance(e.ts_ns(), Some(&mut self.win10));
        self.win1.head().events[e.kind()] += 1;
    }

    #[inline]
    fn on_scan(&mut self, _: &Ctx, s: &ScanSample) {
        if let Some(ns) = s.ns {
            self.win1.head().scan.record(ns);
        }
    }

    #[inline]
    fn on_placement(&mut self, _: &Ctx, pl: &Placed) {
        self.win1.head().placement.add(pl.class);
    }

    #[inline]
    fn on_ran(&mut self, _: &Ctx, r: &Ran) {
        self.win1.head().wakeup_latency.record(r.latency_ns);
    }

    fn rescope(&mut self, _: &Ctx) {
        self.win1.reset();
        self.win10.reset();
    }

    fn fill(&self, cx: &Ctx, s: &mut Snapshot) {
        let w1 = section(&self.win1, None, cx.first_ts, cx.last_ts);
        let w10 = section(&self.win1, Some(&self.win10), cx.first_ts, cx.last_ts);
        s.scan_latency.windows = Windows {
            w1s: w1.scan.clone(),
            w10s: w10.scan.clone(),
        };
        s.wakeup_latency.windows = Windows {
            w1s: w1.wakeup_latency.clone(),
            w10s: w10.wakeup_latency.clone(),
        };
        s.placement.windows = Windows { w1s: w1, w10s: w10 };
    }
}

fn section(
    fine: &Rolling,
    coarse: Option<&Rolling>,
    first_ns: Option<u64>,
    to_ns: u64,
) -> WindowSection {
    let (mut m, fine_from) = fine.merged();
    let (span_ns, from) = match coarse {
        Some(c) => {
            c.merge_into(&mut m);
            (c.span_ns() + fine.span_ns(), c.oldest_start().or(fine_from))
        }
        None => (fine.span_ns(), fine_from),
    };
    WindowSection {
        span_ns,
        // Never before the stream began (the oldest slots of a young window are empty).
        from_ns: from.unwrap_or(0).max(first_ns.unwrap_or(0)),
        to_ns,
        events: EventCounts(m.events),
        placement: m.placement,
        scan: LatencySummary::of(&m.scan, SCAN_UNIT_NS),
        wakeup_latency: LatencySummary::of(&m.wakeup_latency, WAKE_UNIT_NS),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_expire_with_stream_time_and_spill() {
        let mut w = Rolling::new(100, 10);
        let mut coarse = Rolling::new(1_000, 9);
        for ts in [5, 50, 150, 999] {
            w.advance(ts, Some(&mut coarse));
            w.head().placement.count += 1;
        }
        assert_eq!(w.merged().0.placement.count, 4);
        w.advance(1_050, Some(&mut coarse)); // slot [0,100) expires into the coarse window
        assert_eq!(w.merged().0.placement.count, 2);
        assert_eq!(coarse.merged().1, Some(0));
        assert_eq!(coarse.merged().0.placement.count, 2);
        w.advance(1_000_000, Some(&mut coarse));
        assert_eq!(w.merged().0.placement.count, 0);
        assert_eq!(w.merged().1, Some(999_100));
        // Everything spilled; the coarse window has moved past it too when it advances.
        assert_eq!(coarse.merged().0.placement.count, 4);
        coarse.advance(1_000_000, None);
        assert_eq!(coarse.merged().0.placement.count, 0);
    }
}
