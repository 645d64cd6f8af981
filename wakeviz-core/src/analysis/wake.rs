//! Wakeup-to-run latency: `sched_wakeup` to the wakee's next `sched_switch` in, by the level of
//! waker CPU -> chosen CPU (what the placement decision did to the wakee). [`Waits`] is the
//! fold's matcher of wakeups with switch-ins; [`WakeLatency`] the analysis of what it matched.
use super::{
    ByLevel, Snapshot,
    latency::{Hist, LatencySummary},
    part::{Ctx, Part, Ran, Waited},
    snapshot::WAKE_UNIT_NS,
};
use crate::{event::Switch, format::Header, pidmap::PidMap, topology::Level};

const NO_LEVEL: u8 = u8::MAX;
const NEW_TASK: u8 = u8::MAX - 1;
const UNPLACED: u8 = u8::MAX - 2;

/// In-scope wakees waiting for their switch-in: pid -> (wakeup ts, how the wait began).
#[derive(Default)]
pub(crate) struct Waits {
    pending: PidMap<(u64, u8)>,
}

impl Waits {
    #[inline]
    pub(crate) fn start(&mut self, pid: u32, ts_ns: u64, w: Waited) {
        let code = match w {
            Waited::Placed(l) => l.map_or(NO_LEVEL, |l| l.index() as u8),
            Waited::Unplaced => UNPLACED,
            Waited::NewTask => NEW_TASK,
        };
        self.pending.insert(pid, (ts_ns, code));
    }

    /// Hands `ended` the waits `sw` ends: its previous task switched out (it was running), its
    /// next one in.
    #[inline]
    pub(crate) fn on_switch(&mut self, sw: &Switch, mut ended: impl FnMut(Ended)) {
        if self.pending.is_empty() {
            return;
        }
        if sw.prev_pid != 0 && self.pending.remove(&sw.prev_pid).is_some() {
            ended(Ended::GaveUp(sw.prev_pid));
        }
        if sw.next_pid != 0
            && let Some((t, code)) = self.pending.remove(&sw.next_pid)
        {
            ended(Ended::Ran(Ran {
                pid: sw.next_pid,
                waited: waited(code),
                ts_ns: sw.ts_ns,
                latency_ns: sw.ts_ns.saturating_sub(t),
            }));
        }
    }

    pub(crate) fn expire(&mut self, now_ns: u64) {
        self.pending
            .retain(|_, (t, _)| now_ns.saturating_sub(*t) < crate::horizons::WAKE_TO_RUN_NS);
    }

    pub(crate) fn clear(&mut self) {
        self.pending.clear();
    }

    pub(crate) fn len(&self) -> usize {
        self.pending.len()
    }

    pub(crate) fn evicted(&self) -> u64 {
        self.pending.evicted()
    }
}

/// How a wait ended.
pub(crate) enum Ended {
    Ran(Ran),
    /// Switched out first: see [`super::part::Part::on_gave_up`].
    GaveUp(u32),
}

fn waited(code: u8) -> Waited {
    match code {
        NEW_TASK => Waited::NewTask,
        UNPLACED => Waited::Unplaced,
        NO_LEVEL => Waited::Placed(None),
        i => Waited::Placed(Level::ALL.get(i as usize).copied()),
    }
}

pub(crate) struct WakeLatency {
    overall: Hist,
    by_level: Vec<Hist>,
    new_task: Hist,
}

impl Part for WakeLatency {
    fn new(_: &Header) -> Self {
        Self {
            overall: Hist::fine(),
            by_level: Level::ALL.iter().map(|_| Hist::coarse()).collect(),
            new_task: Hist::coarse(),
        }
    }

    #[inline]
    fn on_ran(&mut self, _: &Ctx, r: &Ran) {
        self.overall.record(r.latency_ns);
        if let Waited::Placed(Some(l)) = r.waited
            && let Some(h) = self.by_level.get_mut(l.index())
        {
            h.record(r.latency_ns);
        }
    }

    #[inline]
    fn on_new_task_ran(&mut self, _: &Ctx, r: &Ran) {
        self.new_task.record(r.latency_ns);
    }

    fn rescope(&mut self, _: &Ctx) {
        self.overall.reset();
        self.by_level.iter_mut().for_each(Hist::reset);
        self.new_task.reset();
    }

    fn fill(&self, _: &Ctx, s: &mut Snapshot) {
        let sec = &mut s.wakeup_latency;
        sec.overall = LatencySummary::of(&self.overall, WAKE_UNIT_NS);
        sec.by_level = ByLevel(
            Level::ALL
                .iter()
                .zip(&self.by_level)
                .map(|(l, h)| (*l, LatencySummary::of(h, WAKE_UNIT_NS)))
                .collect(),
        );
        sec.new_task = LatencySummary::of(&self.new_task, WAKE_UNIT_NS);
    }
}
