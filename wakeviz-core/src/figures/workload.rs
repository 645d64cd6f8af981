//! The workload's own results (`-- CMD`): the figures its output reported, and its wall time.
use super::{Better, Def, DefUnit, Family, FigureKind, NotAvailable, Out, Section, Unit};
use crate::analysis::Snapshot;

static METRIC: Def = Def {
    name: "workload.{metric+}",
    section: Section::Workload,
    unit: DefUnit::Metric,
    kind: FigureKind::Value,
    better: Some(Better::PerMetric),
    topology_bound: false,
    na_rule: "never (present when the command's output had it)",
    help: "A figure the command printed, parsed by a built-in parser or --metric NAME=REGEX",
};

static DURATION: Def = Def {
    name: "workload.duration_s",
    section: Section::Workload,
    unit: DefUnit::Seconds,
    kind: FigureKind::Value,
    better: Some(Better::Lower),
    topology_bound: false,
    na_rule: "never (present in -- CMD recordings)",
    help: "The command's wall time",
};

static ALL: [&Def; 2] = [&DURATION, &METRIC];

pub struct Workload;

impl Family for Workload {
    fn defs(&self) -> &'static [&'static Def] {
        &ALL
    }

    fn eval(&self, s: &Snapshot, o: &mut Out) {
        let Some(w) = &s.recording.workload else {
            return;
        };
        for m in &w.metrics {
            let f = o.push(
                &METRIC,
                &[&m.name],
                m.name.clone(),
                Some(m.value),
                NotAvailable::NoSamples,
            );
            f.unit = Unit::Other(m.unit.clone());
            f.higher_is_better = Some(m.higher_is_better);
        }
        let secs = w.duration_ns as f64 / 1e9;
        o.push(
            &DURATION,
            &[],
            "command wall time".into(),
            Some(secs),
            NotAvailable::NoSamples,
        );
    }
}
