//! Comparing runs (`wakeviz diff`): groups of snapshots (one per recording: a kernel, a patch,
//! repeated runs of each) reduced to one [`DiffReport`]: per figure, each group's mean over its
//! runs, its change against the first group, and whether that change is larger than the runs'
//! own noise ([`stats`]). [`text`] renders it in the style of scheduler patch reviews
//! (`value (x.xx pct)` columns, `*` markers); [`gate`] evaluates `--fail-if` conditions on it;
//! [`predict`] sets shadow predictions beside the measurements of groups that ran the modelled
//! scheduler feature.
//!
//! Pure: the binary opens and folds the recordings, this module only reads their snapshots.
pub mod figures;
pub mod gate;
mod meta;
pub mod predict;
pub mod stats;
pub mod text;

use std::collections::HashMap;

use serde::Serialize;

pub use figures::{Section, Unit};
pub use meta::MetaRow;

use crate::analysis::Snapshot;

/// Version of the `wakeviz diff --report json` tree; bumped when a key is added, renamed or
/// removed or changes meaning.
/// 3: each prediction figure's `error_ci95` and `resolved`; `measured_source` `scan_probes`.
pub const DIFF_SCHEMA_VERSION: u32 = 4;

/// Family-wise significance level of the `*` markers.
pub const ALPHA: f64 = 0.05;

/// The test behind `*`, as printed in the footer and stored in the JSON.
pub const TEST_DESCRIPTION: &str = "Welch's two-sided t-test on the per-run values at 95 %, Benjamini-Hochberg-corrected over every figure compared";

/// The runs of one group (one kernel, one patch).
#[derive(Clone, Debug)]
pub struct Group {
    pub name: String,
    /// The recordings' paths, for the report.
    pub files: Vec<String>,
    pub runs: Vec<Snapshot>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GroupInfo {
    pub name: String,
    pub runs: usize,
    pub files: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TestInfo {
    pub description: &'static str,
    pub alpha: f64,
    /// Comparisons with a p-value (the family the correction is over).
    pub comparisons: usize,
    /// False when some group has a single run: no test, no markers.
    pub performed: bool,
}

/// One group's value of a figure.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cell {
    /// Runs that have the figure.
    pub n: usize,
    /// Mean over those runs; `None` where no run has it (an empty histogram: n/a, not 0).
    pub mean: Option<f64>,
    /// Sample standard deviation over the runs (0 with one run).
    pub sd: Option<f64>,
    /// Against the first group: `mean - base` in the figure's unit (percentage points for
    /// shares), and relative in percent (`None` when the base is 0 or either is n/a).
    pub change: Option<f64>,
    pub change_pct: Option<f64>,
    /// Welch's p-value against the first group; `None` with fewer than 2 runs on a side.
    pub p_value: Option<f64>,
    /// Marked `*`: significant after the correction.
    pub significant: bool,
    /// For figures with a direction (workload metrics): the change is for the worse.
    pub regression: Option<bool>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// Dotted name (what `--fail-if` refers to).
    pub name: String,
    pub section: Section,
    pub label: String,
    pub unit: Unit,
    pub higher_is_better: Option<bool>,
    /// One per group, in group order.
    pub groups: Vec<Cell>,
}

impl Row {
    /// Every group has it at 0 or not at all: not worth a line of text.
    pub fn is_empty(&self) -> bool {
        self.groups.iter().all(|c| c.mean.is_none_or(|m| m == 0.0))
    }
}

/// `wakeviz diff` as data: what `--report json` prints and the text renders.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DiffReport {
    pub schema_version: u32,
    pub groups: Vec<GroupInfo>,
    /// What differs between the runs' conditions (kernel, features, sysctls, topology, label,
    /// command), and what is the same.
    pub metadata: Vec<MetaRow>,
    /// All runs share one topology; when not, only shares (and workload figures) are compared.
    pub same_topology: bool,
    pub test: TestInfo,
    pub notes: Vec<String>,
    pub rows: Vec<Row>,
    /// Shadow predictions against the groups that ran the modelled setting ([`predict`]);
    /// empty when no modelled scheduler feature differs (part of the `shadow` section).
    pub predictions: Vec<predict::Prediction>,
}

impl DiffReport {
    pub fn row(&self, name: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.name == name)
    }
}

/// Compares `groups` (the first is the base); `only` restricts the sections (empty: all).
pub fn diff(groups: &[Group], only: &[Section]) -> DiffReport {
    diff_with(groups, only, &|_, _| Vec::new())
}

/// [`diff`] with closed-loop predictions: `closed` simulates a group's workloads under a
/// policy (see [`predict::ClosedLoop`]).
pub fn diff_with(groups: &[Group], only: &[Section], closed: predict::ClosedLoop) -> DiffReport {
    let runs: Vec<&Snapshot> = groups.iter().flat_map(|g| &g.runs).collect();
    let same_topology = runs.windows(2).all(|w| {
        let (a, b) = (&w[0].topology, &w[1].topology);
        a.summary == b.summary && a.nr_cpus == b.nr_cpus && a.llcs == b.llcs && a.nodes == b.nodes
    });
    let all_schedstat = runs.iter().all(|s| s.schedstat.is_some());
    let mut notes = Vec::new();
    if !same_topology {
        notes.push(
            "the runs come from different topologies: only level shares and workload figures are compared (counts, rates and per-LLC figures are left out)".into(),
        );
    }
    if !all_schedstat && runs.iter().any(|s| s.schedstat.is_some()) {
        notes.push("schedstat counters: not every recording has them, section left out".into());
    }
    let wanted = |s: Section| only.is_empty() || only.contains(&s);

    // Rows in order of first appearance; values per group, per run.
    let mut order: Vec<figures::Figure> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut values: Vec<Vec<Vec<f64>>> = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        for s in &g.runs {
            for f in figures::extract(s) {
                let f = f.clone();
                if !wanted(f.section)
                    || (f.topology_bound && !same_topology)
                    || (f.section == Section::Schedstat && !all_schedstat)
                {
                    continue;
                }
                let i = *index.entry(f.name.clone()).or_insert_with(|| {
                    order.push(f.clone());
                    values.push(vec![Vec::new(); groups.len()]);
                    order.len() - 1
                });
                if let Some(v) = f.value {
                    values[i][gi].push(v);
                }
                // The coarsest resolution any run reports for it.
                order[i].resolution = order[i].resolution.max(f.resolution);
            }
        }
    }
    order.sort_by_key(|f| f.section);
    let mut rows: Vec<Row> = order
        .iter()
        .map(|f| {
            let v = &values[index[&f.name]];
            let base = stats::mean_sd(&v[0]).map(|x| x.0);
            let groups = v
                .iter()
                .enumerate()
                .map(|(gi, vals)| {
                    let ms = stats::mean_sd(vals);
                    let mean = ms.map(|x| x.0);
                    let first = gi == 0;
                    // A change or a p-value that is not a finite number (a mean that
                    // overflowed) is n/a: never a change, never significant.
                    let finite = |x: f64| x.is_finite().then_some(x);
                    let change = (!first).then(|| finite(mean? - base?)).flatten();
                    let change_pct = (!first)
                        .then(|| {
                            let (m, b) = (mean?, base?);
                            (b != 0.0)
                                .then(|| (m - b) * 100.0 / b.abs())
                                .and_then(finite)
                        })
                        .flatten();
                    let both_finite =
                        mean.is_some_and(f64::is_finite) && base.is_some_and(f64::is_finite);
                    let p_value = if first || !both_finite {
                        None
                    } else {
                        stats::welch_p(&v[0], vals, f.resolution).and_then(finite)
                    };
                    let regression = match (f.higher_is_better, change) {
                        (Some(h), Some(c)) if c != 0.0 => Some((c > 0.0) != h),
                        _ => None,
                    };
                    Cell {
                        n: vals.len(),
                        mean,
                        sd: ms.map(|x| x.1),
                        change,
                        change_pct,
                        p_value,
                        significant: false,
                        regression,
                    }
                })
                .collect();
            Row {
                name: f.name.clone(),
                section: f.section,
                label: f.label.clone(),
                unit: f.unit.clone(),
                higher_is_better: f.higher_is_better,
                groups,
            }
        })
        .collect();

    // The correction is over every (row, group) comparison that has a p-value.
    let mut slots = Vec::new();
    let mut ps = Vec::new();
    for (ri, r) in rows.iter().enumerate() {
        for (gi, c) in r.groups.iter().enumerate() {
            if let Some(p) = c.p_value {
                slots.push((ri, gi));
                ps.push(p);
            }
        }
    }
    for ((ri, gi), sig) in slots.iter().zip(stats::benjamini_hochberg(&ps, ALPHA)) {
        rows[*ri].groups[*gi].significant = sig;
    }
    let predictions = if wanted(Section::Shadow) {
        let (p, n) = predict::predict(groups, closed);
        notes.extend(n);
        p
    } else {
        Vec::new()
    };
    let performed = groups.iter().all(|g| g.runs.len() >= 2);
    if !performed {
        notes.push(
            "a group has a single run: its noise cannot be estimated, so no change is marked (record 3 or more runs per kernel for markers)".into(),
        );
    }
    DiffReport {
        schema_version: DIFF_SCHEMA_VERSION,
        groups: groups
            .iter()
            .map(|g| GroupInfo {
                name: g.name.clone(),
                runs: g.runs.len(),
                files: g.files.clone(),
            })
            .collect(),
        metadata: meta::rows(groups),
        same_topology,
        test: TestInfo {
            description: TEST_DESCRIPTION,
            alpha: ALPHA,
            comparisons: ps.len(),
            performed,
        },
        notes,
        rows,
        predictions,
    }
}
