//! Idle-scan latency (what is measured is the scan section's `source`): overall and per LLC of
//! the chosen CPU; with the debug-info scan probes, how often a placement scanned and how far.
//! Absent, not n/a, when the capture has no select records at all.
use super::{
    Better, Def, DefUnit, Family, FigureKind, NotAvailable, Out, Section, latency::quantile_defs,
};
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

const fn measured(
    name: &'static str,
    unit: DefUnit,
    kind: FigureKind,
    better: Option<Better>,
    help: &'static str,
) -> Def {
    Def {
        name,
        section: Section::Scan,
        unit,
        kind,
        better,
        topology_bound: matches!(kind, FigureKind::Count),
        na_rule: "no placement watched; absent without the debug-info scan probes",
        help,
    }
}

/// What the debug-info probes counted (`scan_latency.measured`).
static MEASURED: [Def; 5] = [
    measured(
        "scan.measured.calls",
        DefUnit::Count,
        FigureKind::Count,
        None,
        "Placements (select_task_rq_fair calls, forks excluded) the scan probes watched",
    ),
    measured(
        "scan.measured.scans.share",
        DefUnit::Share,
        FigureKind::Share,
        None,
        "Watched placements in which select_idle_cpu ran",
    ),
    measured(
        "scan.measured.cpus_per_scan",
        DefUnit::Cpus,
        FigureKind::Mean,
        Some(Better::Lower),
        "Idle tests per scan, mean (a CPU per __select_idle_cpu, a core per select_idle_core)",
    ),
    measured(
        "scan.measured.core.share",
        DefUnit::Share,
        FigureKind::Share,
        None,
        "Scans that searched for an idle core (select_idle_core ran)",
    ),
    measured(
        "scan.measured.smt.share",
        DefUnit::Share,
        FigureKind::Share,
        None,
        "Watched placements that tried prev's SMT siblings first (select_idle_smt)",
    ),
];

static ALL: [&Def; 15] = [
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
    &MEASURED[0],
    &MEASURED[1],
    &MEASURED[2],
    &MEASURED[3],
    &MEASURED[4],
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
        if let Some(m) = &sc.measured {
            let label = "measured scan";
            o.push(
                &MEASURED[0],
                &[],
                label.into(),
                Some(m.calls as f64),
                NotAvailable::NoSamples,
            );
            o.share(&MEASURED[1], &[], label, m.scans, m.calls);
            let mean = (m.scans > 0).then(|| m.cpus_tested as f64 / m.scans as f64);
            o.push(
                &MEASURED[2],
                &[],
                label.into(),
                mean,
                NotAvailable::NoSamples,
            );
            o.share(&MEASURED[3], &[], label, m.core_scans, m.scans);
            o.share(&MEASURED[4], &[], label, m.smt_calls, m.calls);
        }
        o.quantiles(&OVERALL, &[], "scan", &sc.overall, 1.0, false);
        for l in &sc.per_llc {
            let name = format!("llc{}", l.id);
            let label = format!("scan LLC {} ({})", l.id, l.cpus);
            o.quantiles(&PER_LLC, &[&name], &label, &l.latency, 1.0, false);
        }
    }
}
