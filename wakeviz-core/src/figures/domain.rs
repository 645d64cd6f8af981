//! The placement counts spelt as the schedstat comparisons on LKML spell them: wakeups on the
//! same SMT / MC / DIE / NUMA CPUs as the waker, one row per sched domain of this topology.
use super::{Def, DefUnit, Family, FigureKind, Out, Section, key};
use crate::analysis::Snapshot;

const fn def(
    name: &'static str,
    unit: DefUnit,
    kind: FigureKind,
    na: &'static str,
    help: &'static str,
) -> Def {
    Def {
        name,
        section: Section::Domain,
        unit,
        kind,
        better: None,
        topology_bound: true,
        na_rule: na,
        help,
    }
}

static WAKEUPS: [Def; 3] = [
    def(
        "domain.{domain}.wakeups.count",
        DefUnit::Count,
        FigureKind::Count,
        "never (one per sched domain row of this topology)",
        "Wakeups whose waker -> chosen relation lies in that domain (seed 000's \"Wakeups on same ... cpus\")",
    ),
    def(
        "domain.{domain}.wakeups.rate",
        DefUnit::PerSec,
        FigureKind::Rate,
        "no stream time",
        "The same per second of stream time",
    ),
    def(
        "domain.{domain}.wakeups.share",
        DefUnit::Share,
        FigureKind::Share,
        "no wakeups",
        "The same as a share of placed wakeups",
    ),
];

static AFFINE: [Def; 2] = [
    def(
        "domain.{domain}.affine.count",
        DefUnit::Count,
        FigureKind::Count,
        "absent for domains inside one LLC (an affine pick there is not observable)",
        "Affine wakeups whose waker -> previous relation lies in that domain",
    ),
    def(
        "domain.{domain}.affine.rate",
        DefUnit::PerSec,
        FigureKind::Rate,
        "no stream time",
        "The same per second of stream time",
    ),
];

static ALL: [&Def; 5] = [
    &WAKEUPS[0],
    &WAKEUPS[1],
    &WAKEUPS[2],
    &AFFINE[0],
    &AFFINE[1],
];

pub struct Domain;

impl Family for Domain {
    fn defs(&self) -> &'static [&'static Def] {
        &ALL
    }

    fn eval(&self, s: &Snapshot, o: &mut Out) {
        let total = s.placement.wakeups.count;
        for r in &s.placement.domain_table {
            let k = key(r.name);
            let label = format!("Wakeups on same {} cpus", r.name);
            o.count_rate(&WAKEUPS, &[&k], &label, r.wakeups);
            o.share(&WAKEUPS[2], &[&k], &label, r.wakeups, total);
            if r.affine_observable {
                let label = format!("Affine wakeups on same {} cpus", r.name);
                o.count_rate(&AFFINE, &[&k], &label, r.affine);
            }
        }
    }
}
