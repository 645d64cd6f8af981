//! The kernel's own `/proc/schedstat` counters over the run, per sched domain.
use super::{Def, DefUnit, Family, FigureKind, Out, Section, key};
use crate::analysis::Snapshot;

static COUNTER: [Def; 2] = [
    Def {
        name: "schedstat.{domain}.{counter}.count",
        section: Section::Schedstat,
        unit: DefUnit::Count,
        kind: FigureKind::Count,
        better: None,
        topology_bound: true,
        na_rule: "absent without two /proc/schedstat samples in the stream (CONFIG_SCHEDSTATS, not --no-schedstat)",
        help: "A /proc/schedstat counter's increase over the run, summed over the domain's CPUs",
    },
    Def {
        name: "schedstat.{domain}.{counter}.rate",
        section: Section::Schedstat,
        unit: DefUnit::PerSec,
        kind: FigureKind::Rate,
        better: None,
        topology_bound: true,
        na_rule: "no stream time",
        help: "The same per second of stream time",
    },
];

static ALL: [&Def; 2] = [&COUNTER[0], &COUNTER[1]];

pub struct Schedstat;

impl Family for Schedstat {
    fn defs(&self) -> &'static [&'static Def] {
        &ALL
    }

    fn eval(&self, s: &Snapshot, o: &mut Out) {
        let Some(c) = &s.schedstat else {
            return;
        };
        for r in &c.rows {
            let domain = if c.name_shared(r) {
                let levels: Vec<&str> = r.levels.iter().map(|l| l.name()).collect();
                format!("{} {}", r.domain, levels.join(" "))
            } else {
                r.domain.clone()
            };
            let d = key(&domain);
            let label = format!("{domain} {}", r.counter);
            o.count_rate(&COUNTER, &[&d, r.counter], &label, r.kernel);
        }
    }
}
