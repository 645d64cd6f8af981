//! Where wakeups landed: per level of the chosen CPU against the waker's and the previous CPU,
//! the cross-LLC summary, affine pulls, migrations and fork placements.
use super::{Def, DefUnit, Family, FigureKind, NotAvailable, Out, Section};
use crate::{analysis::Snapshot, topology::Level, topology::LevelCounts};

const fn def(
    name: &'static str,
    unit: DefUnit,
    kind: FigureKind,
    topology_bound: bool,
    na_rule: &'static str,
    help: &'static str,
) -> Def {
    Def {
        name,
        section: Section::Placement,
        unit,
        kind,
        better: None,
        topology_bound,
        na_rule,
        help,
    }
}

const NA_COUNT: &str = "the level cannot occur on this topology";
const NA_RATE: &str = "the level cannot occur on this topology, or no stream time";
const NA_SHARE: &str = "the level cannot occur on this topology, or no wakeups";

static WAKEUPS: [Def; 2] = [
    def(
        "placement.wakeups.count",
        DefUnit::Count,
        FigureKind::Count,
        true,
        "never",
        "Placed wakeups of the tasks in scope (sched_waking joined with sched_wakeup; forks apart)",
    ),
    def(
        "placement.wakeups.rate",
        DefUnit::PerSec,
        FigureKind::Rate,
        true,
        "no stream time",
        "Placed wakeups per second of stream time",
    ),
];

static LEVEL: [Def; 3] = [
    def(
        "placement.{relation}.{level}.count",
        DefUnit::Count,
        FigureKind::Count,
        true,
        NA_COUNT,
        "Wakeups whose chosen CPU stands at {level} from the waker's CPU (vs_waker) or the task's previous CPU (vs_prev)",
    ),
    def(
        "placement.{relation}.{level}.rate",
        DefUnit::PerSec,
        FigureKind::Rate,
        true,
        NA_RATE,
        "The same per second of stream time",
    ),
    def(
        "placement.{relation}.{level}.share",
        DefUnit::Share,
        FigureKind::Share,
        false,
        NA_SHARE,
        "The same as a share of the relation's classified wakeups",
    ),
];

static CROSS_LLC: [Def; 3] = [
    def(
        "placement.{relation}.cross_llc.count",
        DefUnit::Count,
        FigureKind::Count,
        true,
        "one LLC on this topology",
        "Wakeups that left the waker's LLC (vs_waker) or the previous CPU's LLC (vs_prev): same_node + same_package + cross_package",
    ),
    def(
        "placement.{relation}.cross_llc.rate",
        DefUnit::PerSec,
        FigureKind::Rate,
        true,
        "one LLC on this topology, or no stream time",
        "The same per second of stream time",
    ),
    def(
        "placement.{relation}.cross_llc.share",
        DefUnit::Share,
        FigureKind::Share,
        false,
        "one LLC on this topology, or no wakeups",
        "The same as a share of the relation's classified wakeups",
    ),
];

static AFFINE: [Def; 3] = [
    def(
        "placement.affine.count",
        DefUnit::Count,
        FigureKind::Count,
        true,
        "never",
        "Wakeups pulled to the waker's LLC away from the previous CPU's (the outcome of wake_affine())",
    ),
    def(
        "placement.affine.rate",
        DefUnit::PerSec,
        FigureKind::Rate,
        true,
        "no stream time",
        "The same per second of stream time",
    ),
    def(
        "placement.affine.share",
        DefUnit::Share,
        FigureKind::Share,
        false,
        "no wakeups",
        "Affine wakeups as a share of placed wakeups",
    ),
];

static AFFINE_BY: [Def; 2] = [
    def(
        "placement.affine.{level}.count",
        DefUnit::Count,
        FigureKind::Count,
        true,
        NA_COUNT,
        "Affine wakeups by the level of waker CPU -> previous CPU (same_node and beyond)",
    ),
    def(
        "placement.affine.{level}.rate",
        DefUnit::PerSec,
        FigureKind::Rate,
        true,
        NA_RATE,
        "The same per second of stream time",
    ),
];

static MIGRATIONS: [Def; 3] = [
    def(
        "placement.migrations.count",
        DefUnit::Count,
        FigureKind::Count,
        true,
        "never",
        "Wakeups placed off the task's previous CPU",
    ),
    def(
        "placement.migrations.rate",
        DefUnit::PerSec,
        FigureKind::Rate,
        true,
        "no stream time",
        "The same per second of stream time",
    ),
    def(
        "placement.migrations.share",
        DefUnit::Share,
        FigureKind::Share,
        false,
        "no wakeups",
        "Migrations as a share of placed wakeups",
    ),
];

static MIGRATIONS_BY: [Def; 2] = [
    def(
        "placement.migrations.{level}.count",
        DefUnit::Count,
        FigureKind::Count,
        true,
        NA_COUNT,
        "Migrations by the level of previous CPU -> chosen CPU",
    ),
    def(
        "placement.migrations.{level}.rate",
        DefUnit::PerSec,
        FigureKind::Rate,
        true,
        NA_RATE,
        "The same per second of stream time",
    ),
];

static NEW_TASKS: [Def; 3] = [
    def(
        "placement.new_tasks.count",
        DefUnit::Count,
        FigureKind::Count,
        true,
        "never",
        "First placements of new tasks (sched_wakeup_new)",
    ),
    def(
        "placement.new_tasks.rate",
        DefUnit::PerSec,
        FigureKind::Rate,
        true,
        "no stream time",
        "The same per second of stream time",
    ),
    def(
        "placement.new_tasks.vs_waker.{level}.share",
        DefUnit::Share,
        FigureKind::Share,
        false,
        NA_SHARE,
        "Fork placements by the level of the forking CPU -> chosen CPU, as a share",
    ),
];

static ALL: [&Def; 21] = [
    &WAKEUPS[0],
    &WAKEUPS[1],
    &LEVEL[0],
    &LEVEL[1],
    &LEVEL[2],
    &CROSS_LLC[0],
    &CROSS_LLC[1],
    &CROSS_LLC[2],
    &AFFINE[0],
    &AFFINE[1],
    &AFFINE[2],
    &AFFINE_BY[0],
    &AFFINE_BY[1],
    &MIGRATIONS[0],
    &MIGRATIONS[1],
    &MIGRATIONS[2],
    &MIGRATIONS_BY[0],
    &MIGRATIONS_BY[1],
    &NEW_TASKS[0],
    &NEW_TASKS[1],
    &NEW_TASKS[2],
];

pub struct Placement;

/// Levels beyond the LLC: what "left the LLC" adds up.
const BEYOND_LLC: [Level; 3] = [Level::SameNode, Level::SamePackage, Level::CrossPackage];

impl Out {
    /// A per-level count, rate and share, n/a where the level cannot occur.
    fn level_figures(&mut self, args: &[&str], label: &str, c: &LevelCounts, l: Level) {
        if self.level_exists(l) {
            self.count_rate(&LEVEL, args, label, c.get(l));
            self.share(&LEVEL[2], args, label, c.get(l), c.total());
        } else {
            self.none(&LEVEL, args, label, NotAvailable::NotOnTopology);
        }
    }
}

impl Family for Placement {
    fn defs(&self) -> &'static [&'static Def] {
        &ALL
    }

    fn eval(&self, s: &Snapshot, o: &mut Out) {
        let w = &s.placement.wakeups;
        o.count_rate(&WAKEUPS, &[], "wakeups", w.count);
        for (rel, c) in [("vs_waker", &w.vs_waker), ("vs_prev", &w.vs_prev)] {
            let words = rel.replace('_', " ");
            for l in Level::ALL {
                let label = format!("{words} {}", l.name());
                o.level_figures(&[rel, l.name()], &label, c, l);
            }
            let label = format!("{words} cross-LLC");
            if BEYOND_LLC.iter().any(|l| o.level_exists(*l)) {
                let n: u64 = BEYOND_LLC.iter().map(|l| c.get(*l)).sum();
                o.count_rate(&CROSS_LLC, &[rel], &label, n);
                o.share(&CROSS_LLC[2], &[rel], &label, n, c.total());
            } else {
                o.none(&CROSS_LLC, &[rel], &label, NotAvailable::NotOnTopology);
            }
        }
        o.count_rate(&AFFINE, &[], "affine", w.affine);
        o.share(&AFFINE[2], &[], "affine", w.affine, w.count);
        for l in BEYOND_LLC {
            let label = format!("affine, waker-prev {}", l.name());
            if o.level_exists(l) {
                o.count_rate(
                    &AFFINE_BY,
                    &[l.name()],
                    &label,
                    w.affine_by_waker_prev.get(l),
                );
            } else {
                o.none(&AFFINE_BY, &[l.name()], &label, NotAvailable::NotOnTopology);
            }
        }
        o.count_rate(&MIGRATIONS, &[], "migrations", w.migrations);
        o.share(&MIGRATIONS[2], &[], "migrations", w.migrations, w.count);
        for l in &Level::ALL[1..] {
            let label = format!("migrations {}", l.name());
            if o.level_exists(*l) {
                let n = w.migrations_by_level.get(*l);
                o.count_rate(&MIGRATIONS_BY, &[l.name()], &label, n);
            } else {
                o.none(
                    &MIGRATIONS_BY,
                    &[l.name()],
                    &label,
                    NotAvailable::NotOnTopology,
                );
            }
        }
        let f = &s.placement.new_tasks;
        o.count_rate(&NEW_TASKS, &[], "fork placements", f.count);
        for l in Level::ALL {
            let label = format!("fork vs parent {}", l.name());
            if o.level_exists(l) {
                let c = &f.vs_waker;
                o.share(&NEW_TASKS[2], &[l.name()], &label, c.get(l), c.total());
            } else {
                o.push(
                    &NEW_TASKS[2],
                    &[l.name()],
                    label,
                    None,
                    NotAvailable::NotOnTopology,
                );
            }
        }
    }
}
