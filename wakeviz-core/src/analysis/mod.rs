//! The analyses: one streaming fold over the event stream that live capture, replay, the TUI
//! and the reports all share. Memory is bounded by CPUs (dense per-CPU tables), LLCs and nodes
//! (fixed aggregates and histograms), and live tasks (the per-task maps), never by trace length.
//!
//! Per event the fold does a few array updates, at most three histogram records and one or two
//! per-task hash-map operations; nothing allocates in steady state.
pub mod aggregate;
pub mod filter;
pub mod latency;
pub mod matrix;
pub mod placement;
pub mod records;
pub mod report;
pub mod schedstat;
pub mod series;
mod snapshot;
pub mod tasks;
pub mod window;

pub use filter::{Filter, FilterError};
pub use records::PlacementRecord;
pub use snapshot::{
    ByLevel, CpuRow, Drops, EventCounts, LatencySection, OwnThreads, PlacementSection,
    RecordingSection, SCHEMA_VERSION, ScanSection, Snapshot, TopologySection, WindowSection,
};

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use self::{
    filter::FilterState,
    latency::Hist,
    placement::{Coverage, OurWakeCounts, PlacementStats, ShadowCoverage, classify},
    schedstat::{SchedstatComparison, SchedstatError},
    window::Rolling,
};
use crate::{
    event::{Event, Kind, TaskTable, wf},
    format::{CaptureStats, Header},
    join::{Joiner, Placement},
    source::Batch,
    topology::{Level, LevelMap},
};

const NO_LEVEL: u8 = u8::MAX;
const NEW_TASK: u8 = u8::MAX - 1;

/// Scan-latency histograms (see [`crate::format::ScanSource`] for what is measured).
pub(crate) struct ScanStats {
    pub(crate) overall: Hist,
    pub(crate) per_llc: Vec<Hist>,
}

/// Wakeup-to-run latency: `sched_wakeup` to the wakee's next `sched_switch` in, by the level of
/// waker CPU -> chosen CPU (what the placement decision did to the wakee).
pub(crate) struct WakeLatency {
    /// pid -> (wakeup ts, level index | NO_LEVEL | NEW_TASK)
    pending: crate::pidmap::PidMap<(u64, u8)>,
    pub(crate) overall: Hist,
    pub(crate) by_level: Vec<Hist>,
    pub(crate) new_task: Hist,
}

pub struct Analysis {
    pub(crate) header: Header,
    levels: LevelMap,
    pub(crate) tasks: TaskTable,
    pub(crate) joiner: Joiner,
    filter: FilterState,
    pub(crate) events: [u64; 6],
    pub(crate) stats: CaptureStats,
    pub(crate) placement: PlacementStats,
    /// How many matching wakeups the placement figures (and the shadow rows) cover.
    pub(crate) coverage: Coverage,
    /// wakeviz's own threads, left out of every filtered figure (empty: none known, or
    /// `--include-self`); a short list, scanned per wakeup event.
    own: Vec<u32>,
    /// Wakeup-side events (`sched_waking`, `sched_wakeup`, `sched_wakeup_new`, select) of
    /// `own` wakees or wakers, and of those the wakeups, that were left out.
    pub(crate) own_events: u64,
    pub(crate) own_wakeups: u64,
    pub(crate) ours: OurWakeCounts,
    /// Wakeups before this time are left out of `ours`: the kernel's counters only run from
    /// the schedstat start snapshot on, while the probes see events from their attach.
    ours_from_ns: u64,
    /// ... and after this one (`u64::MAX` until set): the end snapshot is taken when the live
    /// capture stops, while the analysis is one of the driver's sinks, hence shared.
    ours_until_ns: Arc<AtomicU64>,
    pub(crate) scan: ScanStats,
    pub(crate) wake: WakeLatency,
    pub(crate) win1: Rolling,
    pub(crate) win10: Rolling,
    /// The session as a time series, the waker x chosen matrix and the per-task table (all
    /// under the filter, like the placement figures).
    pub(crate) series: series::Series,
    pub(crate) matrix: matrix::Matrix,
    pub(crate) task_stats: tasks::TaskStats,
    pub(crate) schedstat: Option<SchedstatComparison>,
    pub(crate) shadow: Option<crate::shadow::ShadowEval>,
    /// The shadow's figures over the filtered wakees (empty without a filter).
    pub(crate) shadow_subset: crate::shadow::Tally,
    pub(crate) first_ts: Option<u64>,
    pub(crate) last_ts: u64,
    /// The workload's outcome, when the stream carried one (`-- CMD` recordings).
    pub(crate) workload: Option<crate::run::WorkloadOutcome>,
    seen: u64,
    /// Per-wakeup records, when asked for ([`Analysis::keep_records`]).
    records: Option<Box<records::Recorder>>,
}

impl Analysis {
    /// Shadow-policy evaluation (`shadow::ShadowEval`) is on; see [`Analysis::set_shadow`].
    pub fn new(header: &Header) -> Self {
        let t = &header.topology;
        Self {
            levels: LevelMap::new(t),
            tasks: TaskTable::default(),
            joiner: Joiner::new(),
            filter: FilterState::default(),
            events: [0; 6],
            stats: CaptureStats::default(),
            placement: PlacementStats::new(t),
            coverage: Coverage {
                shadow: Some(ShadowCoverage::default()),
                ..Coverage::default()
            },
            own: if header.run.include_own {
                Vec::new()
            } else {
                header.run.own_tids.clone()
            },
            own_events: 0,
            own_wakeups: 0,
            ours: OurWakeCounts::new(t.cpu_bound()),
            ours_from_ns: 0,
            ours_until_ns: Arc::new(AtomicU64::new(u64::MAX)),
            scan: ScanStats {
                overall: Hist::fine(),
                per_llc: (0..t.llcs.len()).map(|_| Hist::coarse()).collect(),
            },
            wake: WakeLatency {
                pending: Default::default(),
                overall: Hist::fine(),
                by_level: Level::ALL.iter().map(|_| Hist::coarse()).collect(),
                new_task: Hist::coarse(),
            },
            win1: Rolling::new(100_000_000, 10),
            // Fed by win1's expiring slots: together they cover the last 10 s.
            win10: Rolling::new(1_000_000_000, 9),
            series: series::Series::default(),
            matrix: matrix::Matrix::new(t),
            task_stats: tasks::TaskStats::default(),
            schedstat: None,
            shadow: Some(crate::shadow::ShadowEval::new(header)),
            shadow_subset: crate::shadow::Tally::default(),
            first_ts: None,
            last_ts: 0,
            workload: None,
            seen: 0,
            records: None,
            header: header.clone(),
        }
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    pub fn tasks(&self) -> &TaskTable {
        &self.tasks
    }

    pub fn filter(&self) -> Option<&Filter> {
        self.filter.get()
    }

    /// Restricts placement, latency and the shadow rows to matching wakees. Past events cannot
    /// be re-filtered without storing them, so the filtered figures (placement, scan and wakeup
    /// latency, windows, shadow rows) restart from zero; event and drop counts and the unfiltered schedstat
    /// cross-check counts are kept.
    pub fn set_filter(&mut self, f: Option<Filter>) {
        self.filter.set(f);
        let t = &self.header.topology;
        self.placement = PlacementStats::new(t);
        self.coverage = Coverage {
            shadow: self.shadow.as_ref().map(|_| ShadowCoverage::default()),
            ..Coverage::default()
        };
        self.scan.overall.reset();
        self.scan.per_llc.iter_mut().for_each(Hist::reset);
        self.wake.overall.reset();
        self.wake.by_level.iter_mut().for_each(Hist::reset);
        self.wake.new_task.reset();
        self.wake.pending.clear();
        if let Some(r) = self.records.as_mut() {
            r.flush();
        }
        self.win1.reset();
        self.win10.reset();
        self.series = series::Series::default();
        self.matrix = matrix::Matrix::new(t);
        self.task_stats = tasks::TaskStats::default();
        self.shadow_subset = crate::shadow::Tally::default();
    }

    /// Replaces the shadow-policy evaluation, which [`Analysis::new`] turns on; `None` turns it
    /// off (the fold is several times faster without it, and the JSON `shadow` is then null).
    pub fn set_shadow(&mut self, s: Option<crate::shadow::ShadowEval>) {
        self.coverage.shadow = s.as_ref().map(|_| ShadowCoverage::default());
        self.shadow = s;
    }

    /// Whether `pid` is one of wakeviz's own threads being left out.
    #[inline]
    fn own(&self, pid: u32) -> bool {
        !self.own.is_empty() && self.own.contains(&pid)
    }

    /// A wakee (woken by `waker`) whose wakeups the filtered figures count.
    #[inline]
    fn wanted(&mut self, pid: u32, waker: u32) -> bool {
        !self.own(pid) && !self.own(waker) && self.filter.matches(pid, &self.tasks)
    }

    /// The shadow rows are a tally of a subset: a filter is set, or own threads are left out.
    fn shadow_subset_on(&self) -> bool {
        self.filter.get().is_some() || !self.own.is_empty()
    }

    /// Turns per-wakeup [`PlacementRecord`]s on or off (off by default: exporters want them,
    /// the dashboard and the reports do not). Turning them off drops the undrained ones.
    pub fn keep_records(&mut self, on: bool) {
        match (on, self.records.is_some()) {
            (true, false) => self.records = Some(Box::default()),
            (false, true) => self.records = None,
            _ => {}
        }
    }

    /// The records emitted so far (latency known or given up), in that order; call after each
    /// batch so they do not pile up. Empty unless [`Analysis::keep_records`] is on.
    pub fn drain_records(&mut self) -> impl Iterator<Item = PlacementRecord> + '_ {
        self.records.iter_mut().flat_map(|r| r.drain())
    }

    /// Gives up every record still waiting for its wakee's switch-in, so the next
    /// [`Analysis::drain_records`] returns them (with no wakeup-to-run latency): call at the
    /// end of the stream.
    pub fn flush_records(&mut self) {
        if let Some(r) = self.records.as_mut() {
            r.flush();
        }
    }

    /// Records waiting for their wakee's switch-in.
    pub fn open_records(&self) -> usize {
        self.records.as_ref().map_or(0, |r| r.open_count())
    }

    /// Names of the policies in [`PlacementRecord::shadow`], registry order (empty with the
    /// shadow off).
    pub fn record_policies(&self) -> Vec<&'static str> {
        self.shadow
            .as_ref()
            .map_or_else(Vec::new, |s| s.policy_names())
    }

    /// Unfiltered per-waker-CPU counts, for [`schedstat::compare`].
    pub fn wake_counts(&self) -> &OurWakeCounts {
        &self.ours
    }

    /// Starts the counts [`Analysis::compare_schedstat`] uses at `ts_ns` (the probes' clock,
    /// CLOCK_MONOTONIC): the time of the start snapshot, so both sides cover one window.
    pub fn count_wakeups_from(&mut self, ts_ns: u64) {
        self.ours_from_ns = ts_ns;
        self.ours = OurWakeCounts::new(self.header.topology.cpu_bound());
    }

    /// Where the end snapshot's time goes (the probes' clock): wakeups after it are not
    /// counted for [`Analysis::compare_schedstat`], though the probes still see them while
    /// they detach (the fentry detach waits for RCU-tasks grace periods: kthread wakeups).
    pub fn wakeup_count_end(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.ours_until_ns)
    }

    /// Runs the `/proc/schedstat` cross-check on two snapshots taken at the start and the end
    /// of a live run and keeps the result for the reports.
    pub fn compare_schedstat(
        &mut self,
        start: &str,
        end: &str,
    ) -> Result<&SchedstatComparison, SchedstatError> {
        let c = schedstat::compare(start, end, &self.header.topology, &self.ours)?;
        Ok(self.schedstat.insert(c))
    }

    pub fn on_batch(&mut self, b: &Batch) {
        for t in &b.tasks {
            if self.tasks.learn(*t) {
                self.filter.renamed(t.pid);
            }
        }
        if let Some(s) = &b.stats {
            self.stats = s.clone();
            // Only the END chunk carries the outcome; periodic counters must not erase it.
            if let Some(w) = &s.workload {
                self.workload = Some(w.as_ref().clone());
            }
        }
        for e in &b.events {
            self.on_event(e);
        }
    }

    pub fn on_event(&mut self, e: &Event) {
        let ts = e.ts_ns();
        self.events[e.kind().index()] += 1;
        self.first_ts.get_or_insert(ts);
        self.last_ts = self.last_ts.max(ts);
        self.win1.advance(ts, Some(&mut self.win10));
        self.win1.head().events[e.kind().index()] += 1;
        self.seen += 1;
        if self.seen.is_multiple_of(1 << 16) {
            let now = self.last_ts;
            self.wake
                .pending
                .retain(|_, (t, _)| now.saturating_sub(*t) < crate::horizons::WAKE_TO_RUN_NS);
            if let Some(r) = self.records.as_mut() {
                r.expire(now);
            }
        }
        if !self.own.is_empty() {
            let own = match e {
                Event::Waking(w) | Event::WakeupNew(w) => self.own(w.pid) || self.own(w.waker_pid),
                // Counted where its placement is left out: its waker is known only there.
                Event::Wakeup(_) => false,
                Event::Select(s) => self.own(s.pid) || self.own(s.waker_pid),
                _ => false,
            };
            self.own_events += u64::from(own);
        }
        if let Some(s) = self.shadow.as_mut() {
            s.on_event(e);
        }
        match e {
            // Fork/exec placements take the slow path (find_idlest_cpu), not the idle scan.
            Event::Select(s)
                if s.wake_flags & (wf::FORK | wf::EXEC) == 0 && self.wanted(s.pid, s.waker_pid) =>
            {
                // select_idle_cpu time when probed, else the whole select_task_rq_fair.
                let v = s.idle_scan_ns.map_or_else(|| s.duration_ns(), u64::from);
                self.scan.overall.record(v);
                if let Some(h) = self
                    .levels
                    .llc(s.chosen_cpu)
                    .and_then(|l| self.scan.per_llc.get_mut(l as usize))
                {
                    h.record(v);
                }
                self.win1.head().scan.record(v);
                self.series.scan(ts, v);
            }
            Event::Switch(sw) => {
                // A task switching out was running: a wakeup recorded for it meanwhile (the
                // ttwu_runnable path) must not be matched with its next switch-in.
                if sw.prev_pid != 0 && !self.wake.pending.is_empty() {
                    self.wake.pending.remove(&sw.prev_pid);
                    if let Some(r) = self.records.as_mut() {
                        r.close(sw.prev_pid, None);
                    }
                }
                if sw.next_pid != 0
                    && let Some((t, lvl)) = self.wake.pending.remove(&sw.next_pid)
                {
                    if let Some(r) = self.records.as_mut() {
                        r.close(sw.next_pid, Some(sw.ts_ns));
                    }
                    let v = sw.ts_ns.saturating_sub(t);
                    if lvl == NEW_TASK {
                        self.wake.new_task.record(v);
                    } else {
                        self.wake.overall.record(v);
                        if let Some(h) = self.wake.by_level.get_mut(lvl as usize) {
                            h.record(v);
                        }
                        self.win1.head().wakeup_latency.record(v);
                        self.series.wakeup_latency(sw.ts_ns, v);
                        self.task_stats.wakeup_latency(sw.next_pid, v);
                    }
                }
            }
            _ => {}
        }
        let self_wakeups = self.joiner.self_wakeups;
        let placed = self.joiner.on_event(e);
        if let Some(p) = placed {
            self.on_placement(&p);
        } else if let Event::Wakeup(w) = e
            && self.own(w.pid)
        {
            self.own_wakeups += 1;
            self.own_events += 1;
        } else if let Event::Wakeup(w) = e
            && self.filter.matches(w.pid, &self.tasks)
        {
            self.coverage.wakeups += 1;
            if self.joiner.self_wakeups > self_wakeups {
                self.coverage.self_wakeups += 1;
            } else {
                self.coverage.no_sched_waking += 1;
            }
            // No placement (its sched_waking was lost): the latency still counts overall.
            self.wake.pending.insert(w.pid, (w.ts_ns, NO_LEVEL));
            if let Some(r) = self.records.as_mut() {
                r.close(w.pid, None);
            }
        }
    }

    fn on_placement(&mut self, p: &Placement) {
        let c = classify(&self.levels, p.waker_cpu, p.prev_cpu, p.chosen_cpu);
        if !p.new_task
            && p.wakeup_ts_ns >= self.ours_from_ns
            && p.wakeup_ts_ns <= self.ours_until_ns.load(Ordering::Relaxed)
        {
            self.ours.add(p.waker_cpu, &c);
        }
        let matches = self.wanted(p.pid, p.waker_pid);
        if !matches && !p.new_task && (self.own(p.pid) || self.own(p.waker_pid)) {
            self.own_wakeups += 1;
            self.own_events += 1;
        }
        let subset_on = self.shadow_subset_on();
        let mut shadow = Vec::new();
        if let Some(s) = self.shadow.as_mut() {
            let before = s.excluded();
            let n = if self.records.is_some() && matches {
                s.policy_count()
            } else {
                0
            };
            // The evaluator follows every task (it needs the whole machine's state); the
            // filtered rows are a tally of the matching wakees' scored placements.
            let scored = s.on_placement(p);
            let was_scored = scored.is_some();
            if n > 0 {
                shadow = match &scored {
                    Some(sc) => sc.outcomes.iter().map(|o| Some(o.cpu)).collect(),
                    None => vec![None; n],
                };
            }
            if let (Some(sc), true, true) = (scored, matches, subset_on) {
                self.shadow_subset.add(&sc);
            }
            if matches
                && !p.new_task
                && let Some(c) = self.coverage.shadow.as_mut()
            {
                c.add(was_scored, &before, &s.excluded());
            }
        }
        if !matches {
            return;
        }
        if let Some(r) = self.records.as_mut() {
            r.open(PlacementRecord::new(p, c.vs_waker, c.vs_prev, shadow));
        }
        self.placement
            .add(&self.levels, &c, p.waker_cpu, p.chosen_cpu, p.new_task);
        if !p.new_task {
            let cv = &mut self.coverage;
            cv.wakeups += 1;
            cv.placed += 1;
            if c.vs_waker.is_some() && c.vs_prev.is_some() {
                cv.classified += 1;
            } else {
                cv.unclassified += 1;
            }
        }
        let lvl = if p.new_task {
            NEW_TASK
        } else {
            self.win1.head().placement.add(&c);
            self.series.placement(p.wakeup_ts_ns, &c);
            self.matrix.add(p.waker_cpu, p.chosen_cpu);
            self.task_stats.placement(p.waker_pid, p.pid, &c);
            c.vs_waker.map_or(NO_LEVEL, |l| l.index() as u8)
        };
        self.wake.pending.insert(p.pid, (p.wakeup_ts_ns, lvl));
    }

    /// Per-task entries this fold dropped because a map was over its budget: the figures of
    /// those tasks are approximate (see [`crate::pidmap`]).
    pub fn evicted(&self) -> u64 {
        self.joiner.evicted()
            + self.tasks.evicted()
            + self.wake.pending.evicted()
            + self
                .shadow
                .as_ref()
                .map_or(0, crate::shadow::ShadowEval::evicted)
    }

    /// Counts per event kind so far.
    pub fn event_count(&self, k: Kind) -> u64 {
        self.events[k.index()]
    }

    /// Tasks with a wakeup whose switch-in has not been seen yet.
    pub fn pending_wakeups(&self) -> usize {
        self.wake.pending.len()
    }

    pub fn report_text(&self) -> String {
        report::text(&self.snapshot())
    }

    pub fn report_json(&self) -> serde_json::Value {
        report::json(&self.snapshot())
    }
}
