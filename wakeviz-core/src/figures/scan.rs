//! Idle-scan latency (what is measured is the scan section's `source`): overall and per LLC of
//! the chosen CPU. Absent, not n/a, when the capture has no select records at all.
use super::{Def, DefUnit, Family, Out, Section, latency::quantile_defs};
use crate::analysis::Snapshot;

static OVERALL: [Def; 5] = quantile_defs!(
    "scan",
    Section::Scan,
    DefUnit::Ns,
    false,
    "no samples; absent without select_task_rq_fair events (tracepoint-only capture)",
    "Idle-CPU scan latency"
);
static PER_LLC: [Def; 5] = quantile_defs!(
    "scan.{llc}",
    Section::Scan,
    DefUnit::Ns,
    true,
    "no samples; absent without select_task_rq_fair events",
    "Idle-CPU scan latency of wakeups placed in LLC {llc} (llc0, llc1, ...)"
);

static ALL: [&Def; 10] = [
    &OVERALL[0],
    &OVERALL[1],
    &OVERALL[2],
    &OVERALL[3],
    &OVERALL[4],
    &PER_LLC[0],
    &PER_LLC[1],
    &PER_LLC[2],
    &PER_LLC[3],
    &PER_LLC[4],
];

pub struct Scan;

impl Family for Scan {
    fn defs(&self) -> &'static [&'static Def] {
        &ALL
    }

    fn eval(&self, s: &Snapshot, o: &mut Out) {
        let sc = &s.scan_latency;
        if !sc.available {
            return;
        }
        o.quantiles(&OVERALL, &[], "scan", &sc.overall, 1.0, false);
        for l in &sc.per_llc {
            let name = format!("llc{}", l.id);
            let label = format!("scan LLC {} ({})", l.id, l.cpus);
            o.quantiles(&PER_LLC, &[&name], &label, &l.latency, 1.0, false);
        }
    }
}
