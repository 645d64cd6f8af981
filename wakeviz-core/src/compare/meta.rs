//! What differs in the conditions of the runs, printed before any figure: a changed sysctl or
//! scheduler feature explains a placement change before the figures show it.
use std::collections::BTreeSet;

use serde::Serialize;

use super::Group;
use crate::analysis::Snapshot;

/// One condition, per group: the distinct values its runs had (`unknown` where not recorded).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetaRow {
    pub field: String,
    pub values: Vec<Vec<String>>,
    /// Some run disagrees with another (in any group).
    pub differs: bool,
}

const UNKNOWN: &str = "unknown";

fn fields(s: &Snapshot) -> Vec<(String, String)> {
    let r = &s.recording;
    let run = &r.run;
    let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| UNKNOWN.into());
    let mut f = vec![
        ("label".into(), opt(&run.label)),
        ("kernel_release".into(), r.kernel_release.clone()),
        ("kernel_cmdline".into(), opt(&run.kernel_cmdline)),
        ("cpu_model".into(), opt(&run.cpu_model)),
        ("topology".into(), s.topology.summary.clone()),
        ("hostname".into(), r.hostname.clone()),
        ("tool_version".into(), r.tool_version.clone()),
        (
            "command".into(),
            run.command
                .as_ref()
                .map_or_else(|| "none".into(), |c| c.join(" ")),
        ),
        // The tasks the figures are about: runs folded with different scopes compare
        // different things.
        ("scope".into(), s.scope.name.clone()),
        ("probes".into(), probes(s)),
    ];
    // What `--sched-feature` set: the reason the features below differ.
    let set = &run.sched_feature_overrides;
    f.push((
        "sched_feature_overrides".into(),
        if set.is_empty() {
            "none".into()
        } else {
            set.join(" ")
        },
    ));
    match &run.sched_features {
        // One row per feature, on or off, so a single flipped feature is one line.
        Some(feats) => {
            for x in feats {
                let (name, on) = x
                    .strip_prefix("NO_")
                    .map_or((x.as_str(), true), |n| (n, false));
                f.push((
                    format!("sched_features.{name}"),
                    if on { "on" } else { "off" }.into(),
                ));
            }
        }
        None => f.push(("sched_features".into(), UNKNOWN.into())),
    }
    for (k, v) in &run.sysctls {
        f.push((format!("sysctl.{k}"), v.clone()));
    }
    f
}

fn probes(s: &Snapshot) -> String {
    s.probes
        .iter()
        .map(|p| {
            let mode = serde_json::to_value(p.mode)
                .ok()
                .and_then(|v| v.as_str().map(String::from));
            format!("{}={}", p.name, mode.unwrap_or_else(|| "none".into()))
        })
        .collect::<Vec<_>>()
        .join(",")
}

pub(super) fn rows(groups: &[Group]) -> Vec<MetaRow> {
    let per_run: Vec<Vec<Vec<(String, String)>>> = groups
        .iter()
        .map(|g| g.runs.iter().map(fields).collect())
        .collect();
    let mut names: Vec<String> = Vec::new();
    for f in per_run.iter().flatten().flatten() {
        if !names.contains(&f.0) {
            names.push(f.0.clone());
        }
    }
    names
        .into_iter()
        .map(|name| {
            let mut all = BTreeSet::new();
            let values: Vec<Vec<String>> = per_run
                .iter()
                .map(|runs| {
                    let mut seen: Vec<String> = Vec::new();
                    for run in runs {
                        let v = run
                            .iter()
                            .find(|(k, _)| *k == name)
                            .map_or_else(|| UNKNOWN.to_string(), |(_, v)| v.clone());
                        all.insert(v.clone());
                        if !seen.contains(&v) {
                            seen.push(v);
                        }
                    }
                    seen
                })
                .collect();
            MetaRow {
                field: name,
                values,
                differs: all.len() > 1,
            }
        })
        .collect()
}
