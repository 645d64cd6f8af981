//! Per-wakeup records: everything the analysis knows about one placed wakeup, handed out so
//! exporters (Parquet, Perfetto) never recompute the classification, the latencies or the
//! shadow's choices, and cannot disagree with the reports.
//!
//! Off by default ([`super::Analysis::keep_records`]): the normal fold pays one branch per
//! hook. When on, a record is opened at the placement and emitted once its wakeup-to-run
//! latency is known (the wakee's next switch-in) or given up, on exactly the paths where the
//! analysis drops its own pending entry: the task switched out first (it was running, the
//! `ttwu_runnable` path), a newer wakeup of the same pid replaced it, the entry outlived
//! [`crate::horizons::WAKE_TO_RUN_NS`], the filter changed, the pid budget evicted it, or the
//! caller flushed at the end of the stream. Pending records are bounded like the analysis's
//! own map (one per pid, [`crate::pidmap::PID_BUDGET`]); emitted ones wait in a queue until
//! [`super::Analysis::drain_records`], which the caller runs after each batch.
//!
//! Records come out in the order their latency resolved, not in wakeup order.
use super::part::{Ctx, Part, Placed, Ran, Unplaced};
use crate::format::Header;
use crate::{join::Placement, pidmap::PidMap, topology::Level};

/// One placed wakeup as the analysis classified and measured it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlacementRecord {
    pub placement: Placement,
    /// Level of waker CPU -> chosen CPU; `None` for a CPU outside the topology.
    pub vs_waker: Option<Level>,
    /// Level of previous CPU -> chosen CPU.
    pub vs_prev: Option<Level>,
    /// `select_task_rq_fair` duration (entry to exit), when the function probes saw the call.
    pub select_ns: Option<u64>,
    /// Time inside `select_idle_cpu`, only where that function could be probed (it is usually
    /// inlined; the report's scan latency then falls back to `select_ns`, this field does not).
    pub scan_ns: Option<u64>,
    /// The idle scan as the debug-info kprobes counted it, when they watched the call.
    pub scan: Option<crate::event::ScanMeasure>,
    /// `sched_wakeup` to the wakee's next switch-in; `None` when that was not seen.
    pub wakeup_to_run_ns: Option<u64>,
    /// Each shadow policy's chosen CPU, in [`super::Analysis::record_policies`] order; all
    /// `None` when the shadow did not score this placement (forks, exec, no placement path)
    /// and empty when the shadow is off.
    pub shadow: Vec<Option<u32>>,
}

impl PlacementRecord {
    pub(crate) fn new(
        p: &Placement,
        vs_waker: Option<Level>,
        vs_prev: Option<Level>,
        shadow: Vec<Option<u32>>,
    ) -> Self {
        Self {
            placement: *p,
            vs_waker,
            vs_prev,
            select_ns: p.select.map(|s| s.duration_ns()),
            scan_ns: p.select.and_then(|s| s.idle_scan_ns).map(u64::from),
            scan: p.select.and_then(|s| s.scan),
            wakeup_to_run_ns: None,
            shadow,
        }
    }
}

/// Open records by wakee pid, and the emitted ones not drained yet.
#[derive(Default)]
pub(crate) struct Recorder {
    pending: PidMap<PlacementRecord>,
    ready: Vec<PlacementRecord>,
}

impl Recorder {
    /// Opens `r`; a record still open for the same pid is given up (the analysis's pending
    /// entry is overwritten the same way).
    pub(crate) fn open(&mut self, r: PlacementRecord) {
        let ready = &mut self.ready;
        if let Some(old) = self
            .pending
            .insert_evicting(r.placement.pid, r, |_, v| ready.push(v))
        {
            ready.push(old);
        }
    }

    /// Emits the open record of `pid`, if any, with the switch-in time `run_ts` (`None`: given
    /// up).
    pub(crate) fn close(&mut self, pid: u32, run_ts: Option<u64>) {
        if let Some(mut r) = self.pending.remove(&pid) {
            r.wakeup_to_run_ns = run_ts.map(|t| t.saturating_sub(r.placement.wakeup_ts_ns));
            self.ready.push(r);
        }
    }

    /// Gives up the records older than the analysis's horizon at `now`.
    pub(crate) fn expire(&mut self, now: u64) {
        let ready = &mut self.ready;
        self.pending.retain(|_, r| {
            let keep =
                now.saturating_sub(r.placement.wakeup_ts_ns) < crate::horizons::WAKE_TO_RUN_NS;
            if !keep {
                ready.push(r.clone());
            }
            keep
        });
    }

    /// Gives up every open record (end of stream, filter change), oldest wakeup first.
    pub(crate) fn flush(&mut self) {
        let mut open: Vec<_> = self.pending.iter().map(|(_, r)| r.clone()).collect();
        self.pending.clear();
        open.sort_by_key(|r| r.placement.wakeup_ts_ns);
        self.ready.append(&mut open);
    }

    pub(crate) fn drain(&mut self) -> std::vec::Drain<'_, PlacementRecord> {
        self.ready.drain(..)
    }

    pub(crate) fn open_count(&self) -> usize {
        self.pending.len()
    }
}

/// The records as a part of the fold: off (`None`) unless [`super::Analysis::keep_records`]
/// turned them on.
#[derive(Default)]
pub(crate) struct Records(pub(crate) Option<Box<Recorder>>);

impl Records {
    #[inline]
    fn open(&mut self, pl: &Placed) {
        if let Some(r) = self.0.as_mut() {
            Self::open_in(r, pl);
        }
    }

    fn open_in(r: &mut Recorder, pl: &Placed) {
        let shadow = match &pl.shadow {
            Some(st) => match st.scored {
                Some(sc) => sc.outcomes.iter().map(|o| Some(o.cpu)).collect(),
                None => vec![None; st.policies],
            },
            None => Vec::new(),
        };
        let c = pl.class;
        r.open(PlacementRecord::new(pl.p, c.vs_waker, c.vs_prev, shadow));
    }
}

impl Part for Records {
    fn new(_: &Header) -> Self {
        Self::default()
    }

    #[inline]
    fn on_placement(&mut self, _: &Ctx, pl: &Placed) {
        self.open(pl);
    }

    #[inline]
    fn on_new_task(&mut self, _: &Ctx, pl: &Placed) {
        self.open(pl);
    }

    #[inline]
    fn on_unplaced(&mut self, _: &Ctx, u: &Unplaced) {
        if let Some(r) = self.0.as_mut() {
            r.close(u.pid, None);
        }
    }

    #[inline]
    fn on_ran(&mut self, _: &Ctx, ran: &Ran) {
        if let Some(r) = self.0.as_mut() {
            r.close(ran.pid, Some(ran.ts_ns));
        }
    }

    #[inline]
    fn on_new_task_ran(&mut self, _: &Ctx, ran: &Ran) {
        if let Some(r) = self.0.as_mut() {
            r.close(ran.pid, Some(ran.ts_ns));
        }
    }

    #[inline]
    fn on_gave_up(&mut self, _: &Ctx, pid: u32) {
        if let Some(r) = self.0.as_mut() {
            r.close(pid, None);
        }
    }

    fn expire(&mut self, now_ns: u64) {
        if let Some(r) = self.0.as_mut() {
            r.expire(now_ns);
        }
    }

    fn rescope(&mut self, _: &Ctx) {
        if let Some(r) = self.0.as_mut() {
            r.flush();
        }
    }
}
