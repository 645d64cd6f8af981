//! The figures a diff compares, read off one [`Snapshot`]: counts, rates and shares the
//! analyses already computed, under stable dotted names (the `name` of each row of the
//! `DiffReport` JSON, and what `--fail-if` expressions refer to). Nothing here re-derives what
//! an analysis knows; rates divide by the run's stream time, shares by the relation's total.
use serde::Serialize;

use crate::{
    analysis::{Snapshot, latency::LatencySummary, placement::LevelCounts},
    topology::Level,
};

/// The sections of a diff, in print order; the names are `--only`'s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Section {
    Workload,
    Placement,
    Domain,
    Scan,
    Latency,
    Shadow,
    Schedstat,
}

impl Section {
    pub const ALL: [Self; 7] = [
        Self::Workload,
        Self::Placement,
        Self::Domain,
        Self::Scan,
        Self::Latency,
        Self::Shadow,
        Self::Schedstat,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            Self::Workload => "workload",
            Self::Placement => "placement",
            Self::Domain => "domain",
            Self::Scan => "scan",
            Self::Latency => "latency",
            Self::Shadow => "shadow",
            Self::Schedstat => "schedstat",
        }
    }

    pub const fn title(self) -> &'static str {
        match self {
            Self::Workload => "Workload results",
            Self::Placement => "Wakeup placement",
            Self::Domain => "Schedstat spelling (wakeups by sched domain, vs the waker)",
            Self::Scan => "Scan latency",
            Self::Latency => "Wakeup-to-run latency",
            Self::Shadow => "Shadow policies",
            Self::Schedstat => "Kernel schedstat counters over the run",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|x| x.name() == s)
    }
}

/// What a figure measures, which decides how it is shown and how it changes: shares in
/// percentage points, everything else relatively.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Count,
    PerSec,
    /// Percent of a total (0-100).
    Share,
    Ns,
    Us,
    /// A workload metric's own unit (may be empty).
    Other(String),
}

impl Unit {
    pub fn label(&self) -> &str {
        match self {
            Self::Count => "",
            Self::PerSec => "/s",
            Self::Share => "%",
            Self::Ns => "ns",
            Self::Us => "us",
            Self::Other(s) => s,
        }
    }
}

/// One figure of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    pub name: String,
    pub section: Section,
    pub label: String,
    pub unit: Unit,
    /// `None` where the run has no such figure (an empty histogram, no stream time).
    pub value: Option<f64>,
    /// Granularity of the value (see [`super::stats::welch_p`]).
    pub resolution: f64,
    /// Direction of an improvement, where the figure has one (workload metrics).
    pub higher_is_better: Option<bool>,
    /// Only meaningful between identical topologies (counts, rates, per-LLC figures): dropped
    /// when the topologies differ.
    pub topology_bound: bool,
}

struct Out {
    v: Vec<Figure>,
}

impl Out {
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        section: Section,
        name: String,
        label: String,
        unit: Unit,
        value: Option<f64>,
        resolution: f64,
        topology_bound: bool,
    ) {
        self.v.push(Figure {
            name,
            section,
            label,
            unit,
            value,
            resolution,
            higher_is_better: None,
            topology_bound,
        });
    }

    fn count(&mut self, s: Section, name: String, label: String, n: u64, secs: Option<f64>) {
        self.push(
            s,
            format!("{name}.count"),
            label.clone(),
            Unit::Count,
            Some(n as f64),
            1.0,
            true,
        );
        let rate = secs.map(|t| n as f64 / t);
        self.push(
            s,
            format!("{name}.rate"),
            label,
            Unit::PerSec,
            rate,
            0.0,
            true,
        );
    }

    fn share(&mut self, s: Section, name: String, label: String, n: u64, total: u64) {
        let v = (total > 0).then(|| n as f64 * 100.0 / total as f64);
        self.push(
            s,
            format!("{name}.share"),
            label,
            Unit::Share,
            v,
            0.0,
            false,
        );
    }

    fn levels(&mut self, name: &str, label: &str, c: &LevelCounts, secs: Option<f64>) {
        for l in Level::ALL {
            let n = format!("placement.{name}.{}", l.name());
            let lb = format!("{label} {}", l.name());
            self.count(Section::Placement, n.clone(), lb.clone(), c.get(l), secs);
            self.share(Section::Placement, n, lb, c.get(l), c.total());
        }
    }

    /// Percentiles of a histogram; an empty one gives n/a, never 0.
    #[allow(clippy::too_many_arguments)]
    fn latency(
        &mut self,
        s: Section,
        name: &str,
        label: &str,
        l: &LatencySummary,
        unit: Unit,
        div: f64,
        bound: bool,
    ) {
        let q = &l.quantiles;
        let has = q.count > 0;
        let fig = [
            ("p50", q.p50),
            ("p90", q.p90),
            ("p99", q.p99),
            ("p999", q.p999),
        ];
        for (k, v) in fig {
            let v = has.then(|| v as f64 / div);
            // The percentiles come from buckets of 1 % (0.1 % overall): a value is known to that.
            let res = v.map_or(0.0, |x| x * 0.01);
            let lb = format!("{label} {}", if k == "p999" { "p99.9" } else { k });
            self.push(s, format!("{name}.{k}"), lb, unit.clone(), v, res, bound);
        }
        let mean = has.then(|| q.mean / div);
        let res = mean.map_or(0.0, |x| x * 0.01);
        self.push(
            s,
            format!("{name}.mean"),
            format!("{label} mean"),
            unit,
            mean,
            res,
            bound,
        );
    }
}

/// A name component from a free-form string (`LLC(MC)` -> `llc_mc`).
pub fn key(s: &str) -> String {
    let mut k = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            k.push(c.to_ascii_lowercase());
        } else if !k.ends_with('_') && !k.is_empty() {
            k.push('_');
        }
    }
    k.trim_end_matches('_').to_string()
}

/// Every figure of `s`, in print order.
pub fn extract(s: &Snapshot) -> Vec<Figure> {
    let mut o = Out { v: Vec::new() };
    let p = &s.placement;
    let secs = p
        .first_ts_ns
        .map(|f| p.last_ts_ns.saturating_sub(f) as f64 / 1e9)
        .filter(|t| *t > 0.0);

    if let Some(w) = &s.recording.workload {
        for m in &w.metrics {
            o.push(
                Section::Workload,
                format!("workload.{}", m.name),
                m.name.clone(),
                Unit::Other(m.unit.clone()),
                Some(m.value),
                0.0,
                false,
            );
            if let Some(f) = o.v.last_mut() {
                f.higher_is_better = Some(m.higher_is_better);
            }
        }
        o.push(
            Section::Workload,
            "workload.duration_s".into(),
            "command wall time".into(),
            Unit::Other("s".into()),
            Some(w.duration_ns as f64 / 1e9),
            0.0,
            false,
        );
        if let Some(f) = o.v.last_mut() {
            f.higher_is_better = Some(false);
        }
    }

    let w = &p.wakeups;
    o.count(
        Section::Placement,
        "placement.wakeups".into(),
        "wakeups".into(),
        w.count,
        secs,
    );
    o.levels("vs_waker", "vs waker", &w.vs_waker, secs);
    o.levels("vs_prev", "vs prev", &w.vs_prev, secs);
    o.count(
        Section::Placement,
        "placement.affine".into(),
        "affine".into(),
        w.affine,
        secs,
    );
    o.share(
        Section::Placement,
        "placement.affine".into(),
        "affine".into(),
        w.affine,
        w.count,
    );
    for l in &Level::ALL[3..] {
        let n = format!("placement.affine.{}", l.name());
        let lb = format!("affine, waker-prev {}", l.name());
        o.count(
            Section::Placement,
            n,
            lb,
            w.affine_by_waker_prev.get(*l),
            secs,
        );
    }
    o.count(
        Section::Placement,
        "placement.migrations".into(),
        "migrations".into(),
        w.migrations,
        secs,
    );
    o.share(
        Section::Placement,
        "placement.migrations".into(),
        "migrations".into(),
        w.migrations,
        w.count,
    );
    for l in &Level::ALL[1..] {
        let n = format!("placement.migrations.{}", l.name());
        let lb = format!("migrations {}", l.name());
        o.count(
            Section::Placement,
            n,
            lb,
            w.migrations_by_level.get(*l),
            secs,
        );
    }
    let f = &p.new_tasks;
    o.count(
        Section::Placement,
        "placement.new_tasks".into(),
        "fork placements".into(),
        f.count,
        secs,
    );
    for l in Level::ALL {
        let n = format!("placement.new_tasks.vs_waker.{}", l.name());
        let lb = format!("fork vs parent {}", l.name());
        o.share(
            Section::Placement,
            n,
            lb,
            f.vs_waker.get(l),
            f.vs_waker.total(),
        );
    }

    for r in &p.domain_table {
        let k = key(r.name);
        let n = format!("domain.{k}.wakeups");
        o.count(
            Section::Domain,
            n.clone(),
            format!("Wakeups on same {} cpus", r.name),
            r.wakeups,
            secs,
        );
        o.share(
            Section::Domain,
            n,
            format!("Wakeups on same {} cpus", r.name),
            r.wakeups,
            w.count,
        );
        if r.affine_observable {
            let lb = format!("Affine wakeups on same {} cpus", r.name);
            o.count(
                Section::Domain,
                format!("domain.{k}.affine"),
                lb,
                r.affine,
                secs,
            );
        }
    }

    let sc = &s.scan_latency;
    if sc.available {
        o.latency(
            Section::Scan,
            "scan",
            "scan",
            &sc.overall,
            Unit::Ns,
            1.0,
            false,
        );
        for l in &sc.per_llc {
            let name = format!("scan.llc{}", l.id);
            let label = format!("scan LLC {} ({})", l.id, l.cpus);
            o.latency(
                Section::Scan,
                &name,
                &label,
                &l.latency,
                Unit::Ns,
                1.0,
                true,
            );
        }
    }

    let wl = &s.wakeup_latency;
    o.latency(
        Section::Latency,
        "wakeup_latency",
        "wakeup-to-run",
        &wl.overall,
        Unit::Us,
        1e3,
        false,
    );
    for (l, v) in &wl.by_level.0 {
        let name = format!("wakeup_latency.{}", l.name());
        let label = format!("wakeup-to-run {}", l.name());
        o.latency(Section::Latency, &name, &label, v, Unit::Us, 1e3, false);
    }
    o.latency(
        Section::Latency,
        "wakeup_latency.new_task",
        "fork-to-run",
        &wl.new_task,
        Unit::Us,
        1e3,
        false,
    );

    if let Some(sh) = &s.shadow {
        for r in &sh.policies {
            let k = format!("shadow.{}", key(r.name));
            let l = r.name;
            let sec = Section::Shadow;
            // Agreement is a fraction in the shadow report; shown as a share like the others.
            let agree = r.agreement.map(|a| a * 100.0);
            o.push(
                sec,
                format!("{k}.agreement.share"),
                format!("{l} agreement"),
                Unit::Share,
                agree,
                0.0,
                false,
            );
            o.push(
                sec,
                format!("{k}.idle.share"),
                format!("{l} idle hits"),
                Unit::Share,
                r.idle_pct,
                0.0,
                false,
            );
            o.push(
                sec,
                format!("{k}.stacked.share"),
                format!("{l} stacked"),
                Unit::Share,
                r.stacked_pct,
                0.0,
                false,
            );
            let probes = Unit::Other("probes".into());
            o.push(
                sec,
                format!("{k}.probes_mean"),
                format!("{l} probes mean"),
                probes,
                r.probes_mean,
                0.0,
                false,
            );
            o.push(
                sec,
                format!("{k}.est_scan_ns"),
                format!("{l} est. scan cost"),
                Unit::Ns,
                r.est_scan_ns_mean,
                0.0,
                false,
            );
        }
        let f = &sh.fidelity;
        let label = format!("fidelity ({})", f.policy);
        let agree = f.agreement.map(|a| a * 100.0);
        o.push(
            Section::Shadow,
            "shadow.fidelity.agreement.share".into(),
            format!("{label} agreement"),
            Unit::Share,
            agree,
            0.0,
            false,
        );
        let exact = f.exact_inputs_agreement.map(|a| a * 100.0);
        let lb = format!("{label} exact-input agreement");
        o.push(
            Section::Shadow,
            "shadow.fidelity.exact_inputs_agreement.share".into(),
            lb,
            Unit::Share,
            exact,
            0.0,
            false,
        );
    }

    if let Some(c) = &s.schedstat {
        for r in &c.rows {
            let name = format!("schedstat.{}.{}", key(&r.domain), r.counter);
            let label = format!("{} {}", r.domain, r.counter);
            o.count(Section::Schedstat, name, label, r.kernel, secs);
        }
    }
    o.v
}
