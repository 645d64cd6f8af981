//! Events captured per kernel event kind, and what the capture lost: counts and rates over the
//! stream time (the rate the dashboard's status line shows is this one, so it is the same at
//! the same point of a replay whatever the refresh cadence).
use super::{Def, DefUnit, Family, FigureKind, NotAvailable, Out, Section};
use crate::{analysis::Snapshot, event::Kind};

const fn def(
    name: &'static str,
    unit: DefUnit,
    kind: FigureKind,
    na: &'static str,
    help: &'static str,
) -> Def {
    Def {
        name,
        section: Section::Events,
        unit,
        kind,
        better: None,
        topology_bound: true,
        na_rule: na,
        help,
    }
}

static EVENTS: [Def; 2] = [
    def(
        "events.{kind}.count",
        DefUnit::Count,
        FigureKind::Count,
        "never",
        "Events delivered of one kernel kind (sched_waking, ..., select_task_rq_fair) or all (total)",
    ),
    def(
        "events.{kind}.rate",
        DefUnit::PerSec,
        FigureKind::Rate,
        "no stream time",
        "The same per second of stream time",
    ),
];

static RECENT: Def = def(
    "events.{kind}.rate_1s",
    DefUnit::PerSec,
    FigureKind::Rate,
    "no stream time in the last second",
    "Events per second over the last second of stream time (the dashboard's rate; a replay shows the same at the same point)",
);

static DROPS: [Def; 2] = [
    def(
        "events.dropped.count",
        DefUnit::Count,
        FigureKind::Count,
        "never",
        "Events lost in the kernel (ring buffer full) or in userspace",
    ),
    def(
        "events.dropped.rate",
        DefUnit::PerSec,
        FigureKind::Rate,
        "no stream time",
        "The same per second of stream time",
    ),
];

static EVICTED: Def = def(
    "events.evicted_task_entries.count",
    DefUnit::Count,
    FigureKind::Count,
    "never",
    "Per-task entries dropped over the per-map budget (more live tasks than a map holds): those tasks' figures are approximate",
);

static SWITCH_GAPS: Def = def(
    "events.switch_gaps.count",
    DefUnit::Count,
    FigureKind::Count,
    "no context switch in the stream",
    "Context switches whose previous task is not the one the CPU's last switch put on it: each is at least one switch the probes never saw, a loss the drop accounting cannot count (a kernel that runs no BPF program while some task is current)",
);

static OWN: [Def; 2] = [
    def(
        "events.own_wakeups.count",
        DefUnit::Count,
        FigureKind::Count,
        "never",
        "Wakeups of or by wakeviz's own threads, left out of the placement figures (0 with --include-self)",
    ),
    def(
        "events.own_wakeups.rate",
        DefUnit::PerSec,
        FigureKind::Rate,
        "no stream time",
        "The same per second of stream time",
    ),
];

static OUTSIDE: [Def; 2] = [
    def(
        "events.outside_scope_wakeups.count",
        DefUnit::Count,
        FigureKind::Count,
        "never",
        "Wakeups whose wakee is outside the run's scope (--scope; the -- CMD tree of a -- CMD capture), left out of the placement figures (0 with scope all)",
    ),
    def(
        "events.outside_scope_wakeups.rate",
        DefUnit::PerSec,
        FigureKind::Rate,
        "no stream time",
        "The same per second of stream time",
    ),
];

static ALL: [&Def; 11] = [
    &EVENTS[0],
    &EVENTS[1],
    &RECENT,
    &DROPS[0],
    &DROPS[1],
    &EVICTED,
    &SWITCH_GAPS,
    &OWN[0],
    &OWN[1],
    &OUTSIDE[0],
    &OUTSIDE[1],
];

pub struct Events;

impl Family for Events {
    fn defs(&self) -> &'static [&'static Def] {
        &ALL
    }

    fn eval(&self, s: &Snapshot, o: &mut Out) {
        let w = &s.placement.windows.w1s;
        let span = w.to_ns.saturating_sub(w.from_ns) as f64 / 1e9;
        let recent = |n: u64| (span > 0.0).then(|| n as f64 / span);
        let na = NotAvailable::NoStreamTime;
        for k in Kind::ALL {
            o.count_rate(&EVENTS, &[k.name()], k.name(), s.events.0[k]);
            let label = format!("{} last 1 s", k.name());
            o.push(&RECENT, &[k.name()], label, recent(w.events.0[k]), na);
        }
        o.count_rate(&EVENTS, &["total"], "all events", s.events.total());
        let label = "all events last 1 s".to_string();
        o.push(&RECENT, &["total"], label, recent(w.events.total()), na);
        o.count_rate(&DROPS, &[], "dropped events", s.drops.total);
        let n = s.drops.evicted_task_entries as f64;
        o.push(
            &EVICTED,
            &[],
            "evicted task entries".into(),
            Some(n),
            NotAvailable::NoSamples,
        );
        o.push(
            &SWITCH_GAPS,
            &[],
            "switch chain gaps".into(),
            s.drops.switch_gaps.map(|n| n as f64),
            NotAvailable::NoSamples,
        );
        o.count_rate(&OWN, &[], "wakeviz's own wakeups", s.own_threads.wakeups);
        let label = "wakeups outside the scope";
        o.count_rate(&OUTSIDE, &[], label, s.scope.outside_wakeups);
    }
}
