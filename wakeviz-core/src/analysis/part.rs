//! The interface every analysis implements. The fold ([`super::Analysis`]) derives the facts
//! of each event once (the joined placement, its classification, whether it is in scope, the
//! shadow's verdict, the wakee's wait) and hands them to each registered part in turn
//! ([`super::parts`]); a part keeps only its own state, resets it when the scope changes and
//! writes its own sections of the [`Snapshot`]. No part reads or writes another's fields.
use super::{Snapshot, placement::Classified};
use crate::{
    event::{Event, SchedstatSample},
    format::Header,
    join::Placement,
    shadow::{Excluded, Scored, ShadowEval},
    topology::{Level, LevelMap, Topology},
};

/// What every part may read during the fold and when filling the snapshot; none may write it.
pub(crate) struct Ctx<'a> {
    pub(crate) topology: &'a Topology,
    pub(crate) levels: &'a LevelMap,
    pub(crate) tasks: &'a crate::event::TaskTable,
    /// The in-scope figures cover a subset of the wakeups: a filter is set, or wakeviz's own
    /// threads are left out.
    pub(crate) subset: bool,
    pub(crate) first_ts: Option<u64>,
    pub(crate) last_ts: u64,
    /// The shadow evaluation, when filling the snapshot (`None` during the fold, which holds
    /// it mutably, and with the shadow off).
    pub(crate) shadow: Option<&'a ShadowEval>,
}

/// An in-scope placement's idle scan: `select_idle_cpu` time when probed, else the whole
/// `select_task_rq_fair` (see [`crate::format::ScanSource`]); with the debug-info probes, the
/// time from the scan's entry to the exit, and no time when no scan ran.
pub(crate) struct ScanSample {
    pub(crate) ts_ns: u64,
    pub(crate) ns: Option<u64>,
    pub(crate) chosen_cpu: u32,
    /// What the debug-info probes counted, when they watched this call.
    pub(crate) measured: Option<crate::event::ScanMeasure>,
}

/// What the shadow evaluation did with one placement.
pub(crate) struct ShadowStep<'a> {
    /// The policies' outcomes, when it was scored.
    pub(crate) scored: Option<&'a Scored<'a>>,
    /// Its exclusion counters before and after this placement (why it was not scored).
    pub(crate) before: Excluded,
    pub(crate) after: Excluded,
    pub(crate) policies: usize,
}

/// One joined placement of an in-scope wakee (neither side one of wakeviz's own threads).
pub(crate) struct Placed<'a> {
    pub(crate) p: &'a Placement,
    pub(crate) class: &'a Classified,
    /// `None` with the shadow evaluation off.
    pub(crate) shadow: Option<ShadowStep<'a>>,
}

/// An in-scope `sched_wakeup` that joined no placement.
pub(crate) struct Unplaced {
    pub(crate) pid: u32,
    /// The wakee woke itself (it was running: no placement); else its `sched_waking` was lost.
    pub(crate) self_wakeup: bool,
}

/// How an in-scope wakee's wait began.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Waited {
    /// A placed wakeup, at the level of waker CPU -> chosen CPU (`None`: outside the topology).
    Placed(Option<Level>),
    /// A wakeup whose placement was not seen.
    Unplaced,
    /// A new task's first placement.
    NewTask,
}

/// An in-scope wakee ran: its switch-in ended the wait that began at its wakeup.
pub(crate) struct Ran {
    pub(crate) pid: u32,
    pub(crate) waited: Waited,
    pub(crate) ts_ns: u64,
    /// Wakeup-to-run latency.
    pub(crate) latency_ns: u64,
}

/// One analysis: its fold hooks, its reset and its sections of the snapshot. Every hook has a
/// default that does nothing, so a part implements only what it reads.
pub(crate) trait Part {
    fn new(header: &Header) -> Self
    where
        Self: Sized;
    /// Every event, before anything derived from it.
    fn on_event(&mut self, _cx: &Ctx, _e: &Event) {}
    /// A `/proc/schedstat` sample, before the events read after it.
    fn on_schedstat(&mut self, _cx: &Ctx, _s: &SchedstatSample) {}
    fn on_scan(&mut self, _cx: &Ctx, _s: &ScanSample) {}
    /// Every joined placement, in scope or not, wakeviz's own threads' too: what the kernel's
    /// own counters count.
    fn on_any_placement(&mut self, _cx: &Ctx, _p: &Placement, _c: &Classified) {}
    /// An in-scope wakeup's placement (`sched_wakeup`).
    fn on_placement(&mut self, _cx: &Ctx, _pl: &Placed) {}
    /// An in-scope new task's first placement (`sched_wakeup_new`: fork balancing).
    fn on_new_task(&mut self, _cx: &Ctx, _pl: &Placed) {}
    fn on_unplaced(&mut self, _cx: &Ctx, _u: &Unplaced) {}
    /// An in-scope wakee ran after a wakeup (placed or not).
    fn on_ran(&mut self, _cx: &Ctx, _r: &Ran) {}
    /// An in-scope new task ran for the first time.
    fn on_new_task_ran(&mut self, _cx: &Ctx, _r: &Ran) {}
    /// An in-scope wakee switched out before it was seen switching in (it was running: the
    /// `ttwu_runnable` path), so its wait has no latency.
    fn on_gave_up(&mut self, _cx: &Ctx, _pid: u32) {}
    /// Stream time reached `now_ns`: give up what is older than the horizons.
    fn expire(&mut self, _now_ns: u64) {}
    /// The scope changed: in-scope figures restart from zero (past events cannot be
    /// re-scoped without storing them); stream-wide ones are kept.
    fn rescope(&mut self, _cx: &Ctx) {}
    fn fill(&self, _cx: &Ctx, _s: &mut Snapshot) {}
}
