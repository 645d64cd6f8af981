//! A figure that exists only for tests: it shows that one entry and one registration line put
//! a figure in every output (the outputs take the figures a snapshot carries, and a test adds
//! this family to a snapshot's list the way [`super::FAMILIES`] registers the real ones).
use super::{Def, DefUnit, Family, FigureKind, NotAvailable, Out, Section};
use crate::analysis::Snapshot;

static DOUBLED: Def = Def {
    name: "placement.test_doubled.count",
    section: Section::Placement,
    unit: DefUnit::Count,
    kind: FigureKind::Count,
    better: None,
    topology_bound: false,
    na_rule: "never",
    help: "Twice the placed wakeups (a test-only figure)",
};

static ALL: [&Def; 1] = [&DOUBLED];

#[doc(hidden)]
pub struct TestFamily;

impl Family for TestFamily {
    fn defs(&self) -> &'static [&'static Def] {
        &ALL
    }

    fn eval(&self, s: &Snapshot, o: &mut Out) {
        let v = s.placement.wakeups.count as f64 * 2.0;
        o.push(
            &DOUBLED,
            &[],
            "test doubled".into(),
            Some(v),
            NotAvailable::NoSamples,
        );
    }
}
