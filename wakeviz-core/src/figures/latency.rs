//! Wakeup-to-run latency: overall, by the level of waker CPU -> chosen CPU, and for new tasks.
use super::{Better, Def, DefUnit, Family, FigureKind, NotAvailable, Out, Section};
use crate::{analysis::Snapshot, analysis::latency::LatencySummary};

/// The five figures of a latency histogram (`p50`, `p90`, `p99`, `p999`, `mean`) under `prefix`.
macro_rules! quantile_defs {
    ($prefix:literal, $section:expr, $unit:expr, $bound:expr, $na:literal, $what:literal) => {
        [
            $crate::figures::latency::quantile_def(
                concat!($prefix, ".p50"),
                $section,
                $unit,
                $crate::figures::FigureKind::Percentile,
                $bound,
                $na,
                concat!($what, ", median"),
            ),
            $crate::figures::latency::quantile_def(
                concat!($prefix, ".p90"),
                $section,
                $unit,
                $crate::figures::FigureKind::Percentile,
                $bound,
                $na,
                concat!($what, ", 90th percentile"),
            ),
            $crate::figures::latency::quantile_def(
                concat!($prefix, ".p99"),
                $section,
                $unit,
                $crate::figures::FigureKind::Percentile,
                $bound,
                $na,
                concat!($what, ", 99th percentile"),
            ),
            $crate::figures::latency::quantile_def(
                concat!($prefix, ".p999"),
                $section,
                $unit,
                $crate::figures::FigureKind::Percentile,
                $bound,
                $na,
                concat!($what, ", 99.9th percentile"),
            ),
            $crate::figures::latency::quantile_def(
                concat!($prefix, ".mean"),
                $section,
                $unit,
                $crate::figures::FigureKind::Mean,
                $bound,
                $na,
                concat!($what, ", mean"),
            ),
        ]
    };
}
pub(super) use quantile_defs;

pub(crate) const fn quantile_def(
    name: &'static str,
    section: Section,
    unit: DefUnit,
    kind: FigureKind,
    topology_bound: bool,
    na_rule: &'static str,
    help: &'static str,
) -> Def {
    Def {
        name,
        section,
        unit,
        kind,
        better: Some(Better::Lower),
        topology_bound,
        na_rule,
        help,
    }
}

static OVERALL: [Def; 5] = quantile_defs!(
    "wakeup_latency",
    Section::Latency,
    DefUnit::Us,
    false,
    "no samples",
    "From sched_wakeup to the wakee's next switch-in"
);
static BY_LEVEL: [Def; 5] = quantile_defs!(
    "wakeup_latency.{level}",
    Section::Latency,
    DefUnit::Us,
    false,
    "no samples (always where the level cannot occur on this topology)",
    "Wakeup-to-run latency of wakeups placed at {level} from the waker's CPU"
);
static NEW_TASK: [Def; 5] = quantile_defs!(
    "wakeup_latency.new_task",
    Section::Latency,
    DefUnit::Us,
    false,
    "no samples",
    "From sched_wakeup_new to the new task's first switch-in"
);

static ALL: [&Def; 15] = [
    &OVERALL[0],
    &OVERALL[1],
    &OVERALL[2],
    &OVERALL[3],
    &OVERALL[4],
    &BY_LEVEL[0],
    &BY_LEVEL[1],
    &BY_LEVEL[2],
    &BY_LEVEL[3],
    &BY_LEVEL[4],
    &NEW_TASK[0],
    &NEW_TASK[1],
    &NEW_TASK[2],
    &NEW_TASK[3],
    &NEW_TASK[4],
];

impl Out {
    /// The five figures of `defs` from a histogram in ns, divided by `div` (1e3 for µs); an
    /// empty histogram gives n/a, never 0, and so does `absent` (a level that cannot occur).
    pub(super) fn quantiles(
        &mut self,
        defs: &'static [Def; 5],
        args: &[&str],
        label: &str,
        l: &LatencySummary,
        div: f64,
        absent: bool,
    ) {
        let q = &l.quantiles;
        let values = [
            q.p50 as f64,
            q.p90 as f64,
            q.p99 as f64,
            q.p999 as f64,
            q.mean,
        ];
        let names = ["p50", "p90", "p99", "p99.9", "mean"];
        let na = if absent {
            NotAvailable::NotOnTopology
        } else {
            NotAvailable::NoSamples
        };
        for ((d, v), n) in defs.iter().zip(values).zip(names) {
            let v = (q.count > 0 && !absent).then_some(v / div);
            self.push(d, args, format!("{label} {n}"), v, na);
        }
    }
}

pub struct Latency;

impl Family for Latency {
    fn defs(&self) -> &'static [&'static Def] {
        &ALL
    }

    fn eval(&self, s: &Snapshot, o: &mut Out) {
        let w = &s.wakeup_latency;
        o.quantiles(&OVERALL, &[], "wakeup-to-run", &w.overall, 1e3, false);
        for (l, v) in &w.by_level.0 {
            // A sample at an impossible level would be a topology bug: show it rather than hide.
            let absent = !o.level_exists(*l) && v.quantiles.count == 0;
            let label = format!("wakeup-to-run {}", l.name());
            o.quantiles(&BY_LEVEL, &[l.name()], &label, v, 1e3, absent);
        }
        o.quantiles(&NEW_TASK, &[], "fork-to-run", &w.new_task, 1e3, false);
    }
}
