//! The kernel's own wakeup counters beside wakeviz's: the `/proc/schedstat` samples in the
//! stream, the first against the latest, compared with the placements wakeviz saw between the
//! two ([`super::schedstat::compare_diff`]).
//!
//! Which placements fall between two samples is decided by time, not by arrival: a sample
//! comes in the stream after every event delivered before it was read, so those all happened
//! before it, while events still in the ring buffers when it was read arrive after it with
//! earlier times. So the counts up to the latest sample (`upto`) take every placement timed
//! before it whenever it arrives, and the placements timed after it wait in `beyond` until the
//! next sample makes them part of the interval. The kernel's counters run from the first
//! sample only (the sysctl may have been switched on just before it): placements timed before
//! it are not counted.
use super::{
    part::{Ctx, Part},
    placement::{Classified, OurWakeCounts},
    schedstat::{self, Plan, Schedstat},
    snapshot::Snapshot,
};
use crate::{event::SchedstatSample, format::Header, join::Placement};

pub(crate) struct KernelCounters {
    /// The first sample that parsed, and its time.
    first: Option<(u64, Schedstat)>,
    /// The comparison of the first sample with the latest (the kernel's side), and the
    /// latest's time.
    latest: Option<(u64, Plan)>,
    upto: OurWakeCounts,
    beyond: OurWakeCounts,
    /// Why the latest sample could not be compared (shown as a note).
    error: Option<String>,
}

impl KernelCounters {
    fn on_sample(
        &mut self,
        cx: &Ctx,
        s: &SchedstatSample,
    ) -> Result<(), schedstat::SchedstatError> {
        let parsed = schedstat::parse(&s.text)?;
        let Some((t0, first)) = &self.first else {
            self.first = Some((s.ts_ns, parsed));
            return Ok(());
        };
        if s.ts_ns < *t0 {
            return Ok(());
        }
        let plan = Plan::new(&schedstat::diff(first, &parsed)?, cx.topology);
        self.upto.absorb(&mut self.beyond);
        self.latest = Some((s.ts_ns, plan));
        Ok(())
    }
}

impl Part for KernelCounters {
    fn new(h: &Header) -> Self {
        let n = h.topology.cpu_bound();
        Self {
            first: None,
            latest: None,
            upto: OurWakeCounts::new(n),
            beyond: OurWakeCounts::new(n),
            error: None,
        }
    }

    fn on_schedstat(&mut self, cx: &Ctx, s: &SchedstatSample) {
        self.error = self.on_sample(cx, s).err().map(|e| e.to_string());
    }

    fn on_any_placement(&mut self, _cx: &Ctx, p: &Placement, c: &Classified) {
        let Some((t0, _)) = &self.first else {
            return;
        };
        if p.new_task || p.wakeup_ts_ns < *t0 {
            return;
        }
        match &self.latest {
            Some((t1, _)) if p.wakeup_ts_ns < *t1 => self.upto.add(p.waker_cpu, c),
            // Not before the first comparison either: wait for the next sample.
            _ => self.beyond.add(p.waker_cpu, c),
        }
    }

    fn fill(&self, _cx: &Ctx, s: &mut Snapshot) {
        s.schedstat = self.latest.as_ref().map(|(_, p)| p.compare(&self.upto));
        s.schedstat_error.clone_from(&self.error);
    }
}
