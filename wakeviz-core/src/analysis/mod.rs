//! The analyses: one streaming fold over the event stream that live capture, replay, the TUI
//! and the reports all share. Memory is bounded by CPUs (dense per-CPU tables), LLCs and nodes
//! (fixed aggregates and histograms), and live tasks (the per-task maps), never by trace length.
//!
//! Per event the fold does a few array updates, at most three histogram records and one or two
//! per-task hash-map operations; nothing allocates in steady state.
pub mod aggregate;
mod events;
pub mod filter;
mod kernel_counters;
pub mod latency;
pub mod matrix;
mod part;
mod parts;
pub mod placement;
pub mod records;
pub mod report;
mod scan;
mod scan_measured;
pub mod schedstat;
pub mod series;
mod shadow_rows;
mod snapshot;
mod switch_gaps;
pub mod tasks;
mod wake;
mod wakeups;
pub mod window;

pub use filter::{Filter, FilterError, Scope, ScopeError};
pub use records::PlacementRecord;
pub use snapshot::{
    ByLevel, CpuRow, Drops, EventCounts, LatencySection, MeasuredScan, OwnThreads,
    PlacementSection, RecordingSection, SCHEMA_VERSION, ScanSection, ScopeSection, Snapshot,
    TopologySection, WindowSection,
};

use self::{filter::FilterState, placement::classify};
use crate::{
    event::{Event, Kind, TaskTable, wf},
    format::{CaptureStats, Header, ScanSource},
    join::{Joiner, Placement},
    source::Batch,
    topology::LevelMap,
};

/// The fold: derives each event's facts once (the joined placement, its classification,
/// whether it is in scope, the shadow's verdict, the wakee's wait) and hands them to every
/// registered analysis ([`parts`]).
pub struct Analysis {
    pub(crate) header: Header,
    levels: LevelMap,
    pub(crate) tasks: TaskTable,
    pub(crate) joiner: Joiner,
    filter: FilterState,
    pub(crate) stats: CaptureStats,
    /// wakeviz's own threads, left out of every in-scope figure (empty: none known, or
    /// `--include-self`); a short list, scanned per wakeup event.
    own: Vec<u32>,
    /// Wakeup-side events (`sched_waking`, `sched_wakeup`, `sched_wakeup_new`, select) of
    /// `own` wakees or wakers, and of those the wakeups, that were left out.
    pub(crate) own_events: u64,
    pub(crate) own_wakeups: u64,
    /// Placed wakeups (forks apart) whose wakee is outside the run's scope, own threads apart.
    pub(crate) outside_wakeups: u64,
    pub(crate) shadow: Option<crate::shadow::ShadowEval>,
    /// In-scope wakees waiting for their switch-in.
    waits: wake::Waits,
    /// The in-scope figures cover a subset of the wakeups: a filter is set, or own threads are
    /// left out (the shadow rows are then a tally of that subset).
    subset: bool,
    pub(crate) parts: parts::Parts,
    pub(crate) first_ts: Option<u64>,
    pub(crate) last_ts: u64,
    /// The workload's outcome, when the stream carried one (`-- CMD` recordings).
    pub(crate) workload: Option<crate::run::WorkloadOutcome>,
    seen: u64,
    /// Select records that are inputs read at `sched_waking`, not calls (counted with the
    /// select kind, never as a scan).
    pub(crate) waking_inputs: u64,
}

impl Analysis {
    /// Shadow-policy evaluation (`shadow::ShadowEval`) is on; see [`Analysis::set_shadow`].
    pub fn new(header: &Header) -> Self {
        let t = &header.topology;
        let own = if header.run.include_own {
            Vec::new()
        } else {
            header.run.own_tids.clone()
        };
        Self {
            levels: LevelMap::new(t),
            tasks: TaskTable::default(),
            joiner: Joiner::new(),
            filter: FilterState::new(header.run.scope.clone(), &header.run.own_tids),
            stats: CaptureStats::default(),
            subset: !own.is_empty() || header.run.scope.is_some(),
            own,
            own_events: 0,
            waking_inputs: 0,
            own_wakeups: 0,
            outside_wakeups: 0,
            shadow: Some(crate::shadow::ShadowEval::new(header)),
            waits: wake::Waits::default(),
            parts: parts::Parts::new(header),
            first_ts: None,
            last_ts: 0,
            workload: None,
            seen: 0,
            header: header.clone(),
        }
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    pub fn tasks(&self) -> &TaskTable {
        &self.tasks
    }

    /// The dashboard's view within the scope.
    pub fn filter(&self) -> Option<&Filter> {
        self.filter.get()
    }

    /// The run's scope (`None`: every task), fixed for the fold's life: the recording's
    /// (`run.scope`), or what the reader asked for instead.
    pub fn scope(&self) -> Option<&Filter> {
        self.filter.scope()
    }

    /// Restricts placement, latency and the shadow rows to matching wakees within the scope
    /// (the view; the scope stays). Past events cannot
    /// be re-filtered without storing them, so the filtered figures (placement, scan and wakeup
    /// latency, windows, shadow rows) restart from zero; event and drop counts and the unfiltered schedstat
    /// cross-check counts are kept.
    pub fn set_filter(&mut self, f: Option<Filter>) {
        self.filter.set(f);
        self.subset =
            self.filter.get().is_some() || self.filter.scope().is_some() || !self.own.is_empty();
        self.waits.clear();
        let (cx, parts, _, _) = self.split();
        parts.rescope(&cx);
    }

    /// The parts and what they read during the fold, with the stages that derive their facts
    /// (the shadow evaluation is not in the context: the fold holds it mutably).
    fn split(
        &mut self,
    ) -> (
        part::Ctx<'_>,
        &mut parts::Parts,
        &mut wake::Waits,
        Option<&mut crate::shadow::ShadowEval>,
    ) {
        let Self {
            header,
            levels,
            tasks,
            first_ts,
            last_ts,
            parts,
            waits,
            shadow,
            subset,
            ..
        } = self;
        let cx = part::Ctx {
            topology: &header.topology,
            levels,
            tasks,
            subset: *subset,
            first_ts: *first_ts,
            last_ts: *last_ts,
            shadow: None,
        };
        (cx, parts, waits, shadow.as_mut())
    }

    /// What the parts read when filling the snapshot.
    fn ctx(&self) -> part::Ctx<'_> {
        part::Ctx {
            topology: &self.header.topology,
            levels: &self.levels,
            tasks: &self.tasks,
            subset: self.subset,
            first_ts: self.first_ts,
            last_ts: self.last_ts,
            shadow: self.shadow.as_ref(),
        }
    }

    /// Replaces the shadow-policy evaluation, which [`Analysis::new`] turns on; `None` turns it
    /// off (the fold is several times faster without it, and the JSON `shadow` is then null).
    pub fn set_shadow(&mut self, s: Option<crate::shadow::ShadowEval>) {
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

    /// Turns per-wakeup [`PlacementRecord`]s on or off (off by default: exporters want them,
    /// the dashboard and the reports do not). Turning them off drops the undrained ones.
    pub fn keep_records(&mut self, on: bool) {
        let r = &mut self.parts.records.0;
        match (on, r.is_some()) {
            (true, false) => *r = Some(Box::default()),
            (false, true) => *r = None,
            _ => {}
        }
    }

    /// The records emitted so far (latency known or given up), in that order; call after each
    /// batch so they do not pile up. Empty unless [`Analysis::keep_records`] is on.
    pub fn drain_records(&mut self) -> impl Iterator<Item = PlacementRecord> + '_ {
        self.parts.records.0.iter_mut().flat_map(|r| r.drain())
    }

    /// Gives up every record still waiting for its wakee's switch-in, so the next
    /// [`Analysis::drain_records`] returns them (with no wakeup-to-run latency): call at the
    /// end of the stream.
    pub fn flush_records(&mut self) {
        if let Some(r) = self.parts.records.0.as_mut() {
            r.flush();
        }
    }

    /// Records waiting for their wakee's switch-in.
    pub fn open_records(&self) -> usize {
        self.parts.records.0.as_ref().map_or(0, |r| r.open_count())
    }

    /// Names of the policies in [`PlacementRecord::shadow`], registry order (empty with the
    /// shadow off).
    pub fn record_policies(&self) -> Vec<&'static str> {
        self.shadow
            .as_ref()
            .map_or_else(Vec::new, |s| s.policy_names())
    }

    pub fn on_batch(&mut self, b: &Batch) {
        for t in &b.tasks {
            if self.tasks.learn(*t) {
                self.filter.renamed(t.pid);
            }
            if let Some(s) = self.shadow.as_mut() {
                s.on_task(t);
            }
        }
        if let Some(s) = &b.stats {
            self.stats = s.clone();
            // Only the END chunk carries the outcome; periodic counters must not erase it.
            if let Some(w) = &s.workload {
                self.workload = Some(w.as_ref().clone());
            }
        }
        for x in &b.schedstat {
            let (cx, parts, _, _) = self.split();
            parts.on_schedstat(&cx, x);
        }
        for e in &b.events {
            self.on_event(e);
        }
    }

    pub fn on_event(&mut self, e: &Event) {
        let ts = e.ts_ns();
        self.first_ts.get_or_insert(ts);
        self.last_ts = self.last_ts.max(ts);
        self.seen += 1;
        match e {
            Event::WakeupNew(w) => self.filter.forked(w.waker_pid, w.pid),
            Event::Select(s) if s.at_waking() => self.waking_inputs += 1,
            _ => {}
        }
        if self.seen.is_multiple_of(1 << 16) {
            self.waits.expire(self.last_ts);
            self.parts.expire(self.last_ts);
        }
        if !self.own.is_empty() {
            let own = match e {
                Event::Waking(w) | Event::WakeupNew(w) => self.own(w.pid) || self.own(w.waker_pid),
                // Counted where its placement is left out: its waker is known only there.
                Event::Wakeup(_) => false,
                // Inputs read at sched_waking: that wakeup is counted with its waking record.
                Event::Select(s) => !s.at_waking() && (self.own(s.pid) || self.own(s.waker_pid)),
                _ => false,
            };
            self.own_events += u64::from(own);
        }
        {
            let (cx, parts, _, _) = self.split();
            parts.on_event(&cx, e);
        }
        if let Some(s) = self.shadow.as_mut() {
            s.on_event(e);
        }
        match e {
            // Fork/exec placements take the slow path (find_idlest_cpu), not the idle scan.
            Event::Select(s)
                if s.wake_flags & (wf::FORK | wf::EXEC | wf::AT_WAKING) == 0
                    && self.wanted(s.pid, s.waker_pid) =>
            {
                let ns = match s.scan {
                    // Watched by the debug-info probes: timed only when a scan ran.
                    Some(m) => m.ran().then(|| s.idle_scan_ns.map(u64::from)).flatten(),
                    // A call before the scan probes were on, in a capture that has them: the
                    // whole select_task_rq_fair would mix another measure into the histogram.
                    None if self.header.scan_source == ScanSource::DebugInfo => None,
                    // select_idle_cpu time when probed, else the whole select_task_rq_fair.
                    None => Some(s.idle_scan_ns.map_or_else(|| s.duration_ns(), u64::from)),
                };
                let sample = part::ScanSample {
                    ts_ns: ts,
                    ns,
                    chosen_cpu: s.chosen_cpu,
                    measured: s.scan,
                };
                let (cx, parts, _, _) = self.split();
                parts.on_scan(&cx, &sample);
            }
            Event::Switch(sw) => {
                let (cx, parts, waits, _) = self.split();
                waits.on_switch(sw, |end| match end {
                    wake::Ended::Ran(r) if r.waited == part::Waited::NewTask => {
                        parts.on_new_task_ran(&cx, &r);
                    }
                    wake::Ended::Ran(r) => parts.on_ran(&cx, &r),
                    wake::Ended::GaveUp(pid) => parts.on_gave_up(&cx, pid),
                });
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
            let u = part::Unplaced {
                pid: w.pid,
                self_wakeup: self.joiner.self_wakeups > self_wakeups,
            };
            let (cx, parts, _, _) = self.split();
            parts.on_unplaced(&cx, &u);
            // No placement (its sched_waking was lost): the latency still counts overall.
            self.waits.start(w.pid, w.ts_ns, part::Waited::Unplaced);
        }
    }

    fn on_placement(&mut self, p: &Placement) {
        let c = classify(&self.levels, p.waker_cpu, p.prev_cpu, p.chosen_cpu);
        {
            let (cx, parts, _, _) = self.split();
            parts.on_any_placement(&cx, p, &c);
        }
        let in_scope = self.wanted(p.pid, p.waker_pid);
        if !in_scope && !p.new_task {
            if self.own(p.pid) || self.own(p.waker_pid) {
                self.own_wakeups += 1;
                self.own_events += 1;
            } else if !self.filter.in_scope(p.pid, &self.tasks) {
                self.outside_wakeups += 1;
            }
        }
        let (cx, parts, _, shadow) = self.split();
        // The evaluation follows every task (it needs the whole machine's state); the parts
        // see the in-scope placements.
        let mut placed = |shadow: Option<part::ShadowStep>| {
            if !in_scope {
                return;
            }
            let pl = part::Placed {
                p,
                class: &c,
                shadow,
            };
            if p.new_task {
                parts.on_new_task(&cx, &pl);
            } else {
                parts.on_placement(&cx, &pl);
            }
        };
        match shadow {
            None => placed(None),
            Some(s) => {
                let (before, policies) = (s.excluded(), s.policy_count());
                match s.on_placement(p) {
                    Some(sc) => placed(Some(part::ShadowStep {
                        scored: Some(&sc),
                        before,
                        after: before,
                        policies,
                    })),
                    None => placed(Some(part::ShadowStep {
                        scored: None,
                        before,
                        after: s.excluded(),
                        policies,
                    })),
                }
            }
        }
        if in_scope {
            let w = if p.new_task {
                part::Waited::NewTask
            } else {
                part::Waited::Placed(c.vs_waker)
            };
            self.waits.start(p.pid, p.wakeup_ts_ns, w);
        }
    }

    /// Per-task entries this fold dropped because a map was over its budget: the figures of
    /// those tasks are approximate (see [`crate::pidmap`]).
    pub fn evicted(&self) -> u64 {
        self.filter.evicted()
            + self.joiner.evicted()
            + self.tasks.evicted()
            + self.waits.evicted()
            + self
                .shadow
                .as_ref()
                .map_or(0, crate::shadow::ShadowEval::evicted)
    }

    /// Counts per event kind so far.
    pub fn event_count(&self, k: Kind) -> u64 {
        self.parts.events.counts[k]
    }

    /// Tasks with a wakeup whose switch-in has not been seen yet.
    pub fn pending_wakeups(&self) -> usize {
        self.waits.len()
    }

    pub fn report_text(&self) -> String {
        report::text(&self.snapshot())
    }

    pub fn report_json(&self) -> serde_json::Value {
        report::json(&self.snapshot())
    }
}
