//! The figure registry: every figure a user can read, defined once.
//!
//! A figure is a number read off a [`Snapshot`] under a stable dotted name
//! (`placement.vs_waker.same_llc.share`), with a unit, a kind, a better direction where it has
//! one, and an n/a rule. The text report's figure list, the JSON's `figures`, the rows of
//! `wakeviz diff`, the names `--fail-if` accepts, the OpenMetrics `figure` series and
//! `wakeviz figures` all come from here, so a name printed anywhere is the name a gate takes.
//!
//! Figures are grouped in [`Family`]s, one file each; [`FAMILIES`] is the registration list.
//! A family declares its [`Def`]s (patterns such as `placement.{relation}.{level}.share`) and
//! evaluates them on a snapshot. Nothing here re-derives what an analysis knows: counts come
//! from the snapshot, rates divide by the stream time, shares by the relation's total.
mod domain;
mod events;
mod latency;
mod placement;
mod scan;
mod schedstat;
mod shadow;
pub mod testing;
mod workload;

use serde::{Serialize, Serializer, ser::SerializeMap};

use crate::{analysis::Snapshot, topology::Level};

/// The sections of a diff and of the figure list, in print order; the names are `--only`'s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Section {
    Workload,
    Events,
    Placement,
    Domain,
    Scan,
    Latency,
    Shadow,
    Schedstat,
}

impl Section {
    pub const ALL: [Self; 8] = [
        Self::Workload,
        Self::Events,
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
            Self::Events => "events",
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
            Self::Events => "Events captured",
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

/// What a figure's value is measured in, which decides how it is shown and how it changes:
/// shares in percentage points, everything else relatively.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Count,
    PerSec,
    /// Percent of a total (0-100).
    Share,
    Ns,
    Us,
    /// A workload metric's own unit, or a unit of its own (`probes`, `s`; may be empty).
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

/// A [`Def`]'s unit (const-constructible; [`DefUnit::Metric`] takes the workload metric's own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefUnit {
    Count,
    PerSec,
    Share,
    Ns,
    Us,
    Seconds,
    Probes,
    /// A mean number of CPUs (not a count: fractional).
    Cpus,
    /// A mean number of LLCs.
    Llcs,
    /// The unit the workload's parser gave the metric.
    Metric,
}

impl DefUnit {
    pub fn unit(self) -> Unit {
        match self {
            Self::Count => Unit::Count,
            Self::PerSec => Unit::PerSec,
            Self::Share => Unit::Share,
            Self::Ns => Unit::Ns,
            Self::Us => Unit::Us,
            Self::Seconds => Unit::Other("s".into()),
            Self::Probes => Unit::Other("probes".into()),
            Self::Cpus => Unit::Other("CPUs".into()),
            Self::Llcs => Unit::Other("LLCs".into()),
            Self::Metric => Unit::Other(String::new()),
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            Self::Count => "count",
            Self::PerSec => "per second",
            Self::Share => "% (0-100)",
            Self::Ns => "ns",
            Self::Us => "us",
            Self::Seconds => "s",
            Self::Probes => "CPUs probed",
            Self::Cpus => "CPUs (mean)",
            Self::Llcs => "LLCs (mean)",
            Self::Metric => "the metric's own",
        }
    }
}

/// How a figure is made, which decides how it is exported and compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FigureKind {
    /// Events counted over the run.
    Count,
    /// A count divided by the stream time.
    Rate,
    /// A count divided by its relation's total, in percent.
    Share,
    /// A percentile of a latency histogram.
    Percentile,
    /// A mean over samples.
    Mean,
    /// Any other value (a workload's metric, a wall time).
    Value,
}

impl FigureKind {
    pub const fn name(self) -> &'static str {
        match self {
            Self::Count => "count",
            Self::Rate => "rate",
            Self::Share => "share",
            Self::Percentile => "percentile",
            Self::Mean => "mean",
            Self::Value => "value",
        }
    }
}

/// Which direction is better, where the figure has one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
    /// Decided per run (a workload metric's parser knows).
    PerMetric,
}

/// Why a figure has no value. A figure without a value is `null` in the JSON and `n/a` in
/// text, never 0: a 0 reads as "measured, none".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NotAvailable {
    /// No two CPUs of this topology stand in that relation.
    NotOnTopology,
    /// The run has no samples for it (an empty histogram, a zero total).
    NoSamples,
    /// The run has no stream time to divide by (fewer than two timestamps).
    NoStreamTime,
}

impl NotAvailable {
    pub const fn text(self) -> &'static str {
        match self {
            Self::NotOnTopology => "no such CPU pair on this topology",
            Self::NoSamples => "no samples",
            Self::NoStreamTime => "no stream time",
        }
    }
}

/// One registered figure (or pattern of figures: `{level}` stands for one dotted component).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Def {
    /// Stable dotted name; `{x}` is one name component, `{x+}` one or more.
    pub name: &'static str,
    pub section: Section,
    pub unit: DefUnit,
    pub kind: FigureKind,
    pub better: Option<Better>,
    /// Only meaningful between identical topologies (counts, rates, per-LLC figures): a diff
    /// leaves it out when the topologies differ.
    pub topology_bound: bool,
    /// When the figure is n/a, in words (for `wakeviz figures` and the reference).
    pub na_rule: &'static str,
    /// What it is.
    pub help: &'static str,
}

impl Def {
    /// Whether the concrete `name` is an instance of this pattern.
    pub fn matches(&self, name: &str) -> bool {
        let mut pat = self.name.split('.').peekable();
        let mut got = name.split('.').peekable();
        while let Some(p) = pat.next() {
            if p.starts_with('{') && p.ends_with("+}") {
                // One or more components, then whatever the rest of the pattern needs.
                let rest: Vec<&str> = pat.collect();
                let all: Vec<&str> = got.collect();
                if all.len() < rest.len() + 1 {
                    return false;
                }
                let tail = &all[all.len() - rest.len()..];
                return all[..all.len() - rest.len()].iter().all(|c| !c.is_empty())
                    && rest.iter().zip(tail).all(|(p, c)| component(p, c));
            }
            match got.next() {
                Some(c) if component(p, c) => {}
                _ => return false,
            }
        }
        got.peek().is_none()
    }
}

/// Whether `c` fills one component of a pattern: a placeholder with a known domain (`{level}`,
/// `{relation}`, `{kind}`) takes only its values, any other placeholder any non-empty name.
fn component(pattern: &str, c: &str) -> bool {
    match pattern.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
        Some("level") => Level::ALL.iter().any(|l| l.name() == c),
        Some("relation") => RELATIONS.contains(&c),
        Some("llc") => c
            .strip_prefix("llc")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())),
        Some("kind") => crate::event::Kind::ALL.iter().any(|k| k.name() == c) || c == "total",
        Some(_) => !c.is_empty(),
        None => pattern == c,
    }
}

/// The two placement relations, as name components.
pub const RELATIONS: [&str; 2] = ["vs_waker", "vs_prev"];

/// One figure of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    pub name: String,
    pub def: &'static Def,
    pub section: Section,
    /// Words for people (the name is what tools take).
    pub label: String,
    pub unit: Unit,
    pub value: Option<f64>,
    /// Why `value` is `None`.
    pub na: Option<NotAvailable>,
    /// Granularity of the value (see [`crate::compare::stats::welch_p`]).
    pub resolution: f64,
    /// Direction of an improvement, where the figure has one.
    pub higher_is_better: Option<bool>,
    pub topology_bound: bool,
}

impl Figure {
    /// The value with its unit for people (`12.34 %`, `850 ns`, `1234`), or `n/a (why)`.
    pub fn value_text(&self) -> String {
        let Some(v) = self.value else {
            return format!("n/a ({})", self.na.map_or("no value", NotAvailable::text));
        };
        let num = match self.def.kind {
            FigureKind::Count => format!("{v:.0}"),
            _ if v.abs() >= 100.0 => format!("{v:.1}"),
            _ => format!("{v:.2}"),
        };
        match self.unit.label() {
            "" => num,
            "%" => format!("{num} %"),
            u => format!("{num} {u}"),
        }
    }
}

/// The figure list of the text report: one line per figure, `name value unit`.
pub fn text_block(figures: &[Figure]) -> String {
    use std::fmt::Write as _;
    let width = figures
        .iter()
        .map(|f| f.name.len())
        .max()
        .unwrap_or(0)
        .min(64);
    let mut o = String::new();
    for f in figures {
        let _ = writeln!(o, "  {:<width$} {}", f.name, f.value_text());
    }
    o
}

/// A part of the registry: its definitions and how to read them off a snapshot.
pub trait Family: Sync {
    fn defs(&self) -> &'static [&'static Def];
    fn eval(&self, s: &Snapshot, out: &mut Out);
}

/// The registered families, in print order.
pub static FAMILIES: &[&dyn Family] = &[
    &workload::Workload,
    &events::Events,
    &placement::Placement,
    &domain::Domain,
    &scan::Scan,
    &latency::Latency,
    &shadow::Shadow,
    &schedstat::Schedstat,
];

/// Every definition of `families`, in order.
pub fn defs_of<'a>(families: &'a [&'a dyn Family]) -> impl Iterator<Item = &'static Def> + 'a {
    families.iter().flat_map(|f| f.defs().iter().copied())
}

/// Every registered definition.
pub fn defs() -> impl Iterator<Item = &'static Def> {
    defs_of(FAMILIES)
}

/// The registered definition `name` is an instance of.
pub fn lookup(name: &str) -> Option<&'static Def> {
    lookup_in(FAMILIES, name)
}

pub fn lookup_in(families: &[&dyn Family], name: &str) -> Option<&'static Def> {
    defs_of(families).find(|d| d.matches(name))
}

/// Every registered figure of `s`, in print order.
pub fn evaluate(s: &Snapshot) -> Vec<Figure> {
    evaluate_with(s, FAMILIES)
}

/// The figures of `families` on `s`.
pub fn evaluate_with(s: &Snapshot, families: &[&dyn Family]) -> Vec<Figure> {
    let mut o = Out::new(s);
    for f in families {
        f.eval(s, &mut o);
    }
    o.v
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

/// Fills a pattern's `{...}` components with `args`, in order.
fn instantiate(pattern: &str, args: &[&str]) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut args = args.iter();
    for (i, p) in pattern.split('.').enumerate() {
        if i > 0 {
            out.push('.');
        }
        if p.starts_with('{') && p.ends_with('}') {
            out.push_str(args.next().copied().unwrap_or("_"));
        } else {
            out.push_str(p);
        }
    }
    out
}

/// The figures being read off one snapshot, with what every family needs.
pub struct Out {
    v: Vec<Figure>,
    /// Stream seconds, for rates.
    pub secs: Option<f64>,
    /// Which levels can occur on the snapshot's topology.
    levels: [bool; Level::ALL.len()],
}

impl Out {
    fn new(s: &Snapshot) -> Self {
        let p = &s.placement;
        let secs = p
            .first_ts_ns
            .map(|f| p.last_ts_ns.saturating_sub(f) as f64 / 1e9)
            .filter(|t| *t > 0.0);
        let mut levels = [false; Level::ALL.len()];
        for (i, l) in Level::ALL.iter().enumerate() {
            levels[i] = s.topology.level_exists(*l);
        }
        Self {
            v: Vec::new(),
            secs,
            levels,
        }
    }

    pub fn level_exists(&self, l: Level) -> bool {
        self.levels[l.index()]
    }

    /// One figure of `def`, its pattern filled with `args`.
    pub fn push(
        &mut self,
        def: &'static Def,
        args: &[&str],
        label: String,
        value: Option<f64>,
        na: NotAvailable,
    ) -> &mut Figure {
        let value = value.filter(|v| v.is_finite());
        let resolution = match def.kind {
            FigureKind::Count => 1.0,
            // The percentiles come from buckets of 1 % (0.1 % overall): known to that.
            FigureKind::Percentile | FigureKind::Mean => value.map_or(0.0, |x| x * 0.01),
            _ => 0.0,
        };
        self.v.push(Figure {
            name: instantiate(def.name, args),
            def,
            section: def.section,
            label,
            unit: def.unit.unit(),
            na: value.is_none().then_some(na),
            value,
            resolution,
            higher_is_better: match def.better {
                Some(Better::Higher) => Some(true),
                Some(Better::Lower) => Some(false),
                _ => None,
            },
            topology_bound: def.topology_bound,
        });
        let i = self.v.len() - 1;
        &mut self.v[i]
    }

    /// A count (`defs[0]`) and its rate over the stream time (`defs[1]`).
    pub fn count_rate(&mut self, defs: &'static [Def], args: &[&str], label: &str, n: u64) {
        let rate = self.secs.map(|t| n as f64 / t);
        self.push(
            &defs[0],
            args,
            label.into(),
            Some(n as f64),
            NotAvailable::NoSamples,
        );
        self.push(
            &defs[1],
            args,
            label.into(),
            rate,
            NotAvailable::NoStreamTime,
        );
    }

    /// Every figure of `defs` as n/a for `why`.
    pub fn none(&mut self, defs: &'static [Def], args: &[&str], label: &str, why: NotAvailable) {
        for d in defs {
            self.push(d, args, label.into(), None, why);
        }
    }

    /// `n` of `total` in percent; n/a on a zero total.
    pub fn share(&mut self, def: &'static Def, args: &[&str], label: &str, n: u64, total: u64) {
        let v = (total > 0).then(|| n as f64 * 100.0 / total as f64);
        self.push(def, args, label.into(), v, NotAvailable::NoSamples);
    }
}

/// The figures as the JSON carries them: `{name: {value, unit, kind, na}}`, in print order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figures(pub Vec<Figure>);

impl Figures {
    pub fn get(&self, name: &str) -> Option<&Figure> {
        self.0.iter().find(|f| f.name == name)
    }
}

impl Serialize for Figures {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Entry<'a> {
            value: Option<f64>,
            unit: &'a str,
            kind: FigureKind,
            #[serde(skip_serializing_if = "Option::is_none")]
            na: Option<&'static str>,
        }
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for f in &self.0 {
            let e = Entry {
                value: f.value,
                unit: f.unit.label(),
                kind: f.def.kind,
                na: f.na.map(NotAvailable::text),
            };
            m.serialize_entry(&f.name, &e)?;
        }
        m.end()
    }
}

/// `wakeviz figures`: every registered name with its unit, kind, direction and n/a rule.
pub fn list_text() -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let mut section = None;
    for d in defs() {
        if section != Some(d.section) {
            let _ = writeln!(o, "\n== {} ({})", d.section.name(), d.section.title());
            section = Some(d.section);
        }
        let better = match d.better {
            Some(Better::Higher) => ", higher is better",
            Some(Better::Lower) => ", lower is better",
            Some(Better::PerMetric) => ", direction per metric",
            None => "",
        };
        let _ = writeln!(
            o,
            "{}\n    {} [{}, {}{better}]; n/a: {}",
            d.name,
            d.help,
            d.kind.name(),
            d.unit.name(),
            d.na_rule
        );
    }
    let _ = writeln!(
        o,
        "\n{{level}}: {}; {{relation}}: vs_waker, vs_prev",
        Level::ALL.map(Level::name).join(", ")
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_their_instances_only() {
        let d = lookup("placement.vs_waker.same_llc.share").expect("registered");
        assert_eq!(d.name, "placement.{relation}.{level}.share");
        let d = lookup("placement.vs_prev.cross_llc.share").expect("registered");
        assert_eq!(d.name, "placement.{relation}.cross_llc.share");
        assert!(lookup("placement.vs_waker.same_lcc.share").is_none());
        assert!(lookup("placement.sideways.same_llc.share").is_none());
        assert_eq!(lookup("scan.p99").map(|d| d.name), Some("scan.p99"));
        assert_eq!(
            lookup("scan.llc12.p99").map(|d| d.name),
            Some("scan.{llc}.p99")
        );
        assert!(lookup("scan.l12.p99").is_none());
        assert_eq!(
            lookup("workload.hackbench.time_s").map(|d| d.name),
            Some("workload.{metric+}")
        );
        assert!(lookup("workload").is_none());
        assert_eq!(
            lookup("shadow.fidelity.agreement.share").map(|d| d.name),
            Some("shadow.fidelity.agreement.share")
        );
        assert_eq!(
            lookup("events.total.rate").map(|d| d.name),
            Some("events.{kind}.rate")
        );
        assert!(lookup("events.sched_nothing.rate").is_none());
    }

    #[test]
    fn names_are_filled_in_order() {
        assert_eq!(
            instantiate(
                "placement.{relation}.{level}.share",
                &["vs_prev", "same_cpu"]
            ),
            "placement.vs_prev.same_cpu.share"
        );
        assert_eq!(instantiate("workload.{metric+}", &["a.b"]), "workload.a.b");
    }
}
