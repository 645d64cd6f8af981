//! Prediction against reality: when two groups of a diff ran under different
//! scheduler features and a shadow policy models one group's setting, that policy replayed on
//! the other group's recordings is a prediction of what the first group measured. This module
//! sets the prediction beside the measurement, figure by figure, and splits each error in two
//! parts computed from the data alone:
//!
//! `error = predicted - measured = (model on A - model on B) + (model on B - measured on B)`
//!
//! - **open loop** (`model on A - model on B`): the same policy, replayed on A's events and on
//!   B's, gives different figures because the workload itself ran differently under B's setting
//!   (it reacts to the placements; replay is open loop and cannot see that), plus run-to-run
//!   noise;
//! - **shadow inputs** (`model on B - measured on B`): on B's own events the model still misses
//!   B's kernel, i.e. what the shadow lacks (uncaptured inputs, approximations; the fidelity gap).
//!
//! The setting of a run is the features file its recording stored at the start
//! (`RunMeta::sched_features`, `NO_X` = off). Which policy models which setting is [`MODELS`];
//! a model is used only where every recording's shadow report has that policy's row.
mod figures;
pub mod text;

use std::collections::BTreeMap;

use serde::Serialize;

pub use figures::{
    Cause, Evidence, MeasuredSource, PredictedFigure, RESOLVE_RELATIVE_PCT, RESOLVE_SHARE_PT,
};

use super::Group;
use crate::analysis::Snapshot;
use crate::sched_feature::SchedFeature::{
    self, SisNode, SisProp, SisUtil, WaBias, WaIdle, WaWeight,
};
pub use crate::sched_feature::State;

/// What a model needs of one feature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Want {
    /// Listed and on.
    On,
    /// Listed as `NO_X`.
    Off,
    /// Off or not in this kernel's features file.
    NotOn,
    /// On or not in this kernel's features file.
    NotOff,
    /// Not in the features file (the kernel predates the feature).
    Absent,
}

impl Want {
    pub fn holds(self, s: State) -> bool {
        match self {
            Self::On => s == State::On,
            Self::Off => s == State::Off,
            Self::NotOn => s != State::On,
            Self::NotOff => s != State::Off,
            Self::Absent => s == State::Absent,
        }
    }
}

use crate::shadow::policies::name as policy_name;

/// A shadow policy and the feature setting whose kernel behaviour it reproduces.
#[derive(Clone, Copy, Debug)]
pub struct Model {
    /// Registry name of the policy (its row in the shadow report).
    pub policy: &'static str,
    pub when: &'static [(SchedFeature, Want)],
    /// The [`FROM_RECORDING`] features this policy flips from the recording it replays
    /// (empty: it keeps them). A pair that differs in those features, and only those of
    /// them, is predicted by a model flipping exactly them.
    pub flips: &'static [SchedFeature],
    /// Why this policy is that setting, for the report.
    pub describe: &'static str,
}

/// `SIS_UTIL` the only scan limit on.
const SIS_UTIL_ALONE: &[(SchedFeature, Want)] = &[
    (SisUtil, Want::On),
    (SisProp, Want::NotOn),
    (SisNode, Want::NotOn),
];

/// The kernel-like policies' `wake_affine` follows the replayed recording's own `WA_IDLE`,
/// `WA_WEIGHT` and `WA_BIAS` ([`FROM_RECORDING`]); a pair differing in `WA_IDLE` or `WA_WEIGHT`
/// is predicted by the policy that flips it, on `SIS_UTIL` kernels, and a pair differing in
/// `WA_BIAS` gets a note. Among models with the same `flips`, conditions are mutually
/// exclusive: at most one model fits a pair.
pub const MODELS: &[Model] = &[
    Model {
        policy: policy_name::SIS_UTIL,
        when: SIS_UTIL_ALONE,
        flips: &[],
        describe: "SIS_UTIL limits the LLC scan to nr_idle_scan",
    },
    Model {
        policy: policy_name::FULL_SCAN,
        when: &[
            (SisUtil, Want::Off),
            (SisProp, Want::NotOn),
            (SisNode, Want::NotOn),
        ],
        flips: &[],
        describe: "neither SIS_UTIL nor SIS_PROP: select_idle_cpu scans the whole LLC",
    },
    Model {
        policy: policy_name::FULL_SCAN,
        when: &[
            (SisUtil, Want::Absent),
            (SisProp, Want::Off),
            (SisNode, Want::NotOn),
        ],
        flips: &[],
        describe: "pre-6.0 kernel with NO_SIS_PROP: select_idle_cpu scans the whole LLC",
    },
    Model {
        policy: policy_name::SIS_PROP,
        when: &[
            (SisProp, Want::On),
            (SisUtil, Want::NotOn),
            (SisNode, Want::NotOn),
        ],
        flips: &[],
        describe: "SIS_PROP limits the LLC scan by the waker's average idle time",
    },
    Model {
        policy: policy_name::SIS_NODE,
        when: &[
            (SisNode, Want::On),
            (SisUtil, Want::On),
            (SisProp, Want::NotOn),
        ],
        flips: &[],
        describe: "SIS_NODE (tip, 2023): SIS_UTIL, then the node's other LLCs",
    },
    Model {
        policy: policy_name::FLIP_WA_IDLE,
        when: SIS_UTIL_ALONE,
        flips: &[WaIdle],
        describe: "SIS_UTIL with the other side's WA_IDLE: wake_affine_idle runs or is skipped",
    },
    Model {
        policy: policy_name::FLIP_WA_WEIGHT,
        when: SIS_UTIL_ALONE,
        flips: &[WaWeight],
        describe: "SIS_UTIL with the other side's WA_WEIGHT: the load comparison runs or keeps prev",
    },
];

/// Features every kernel-like policy takes from the recording it replays (`KernelRules`): a
/// policy replayed on A's runs keeps A's setting of them, so a pair that differs in one is
/// predicted only by a model that flips it ([`Model::flips`]).
pub const FROM_RECORDING: [SchedFeature; 3] = [WaIdle, WaWeight, WaBias];

/// The features [`MODELS`] look at: a pair of groups is predicted only when these differ.
pub fn modelled_features() -> Vec<SchedFeature> {
    let mut v: Vec<SchedFeature> = MODELS
        .iter()
        .flat_map(|m| m.when.iter().map(|w| w.0).chain(m.flips.iter().copied()))
        .collect();
    // In the kernel's spelling's order, which is the order the report lists them in.
    v.sort_unstable_by_key(|f| f.name());
    v.dedup();
    v
}

/// A group's feature setting: name -> on/off, as the features file said.
pub type Setting = BTreeMap<String, bool>;

fn setting_of(s: &Snapshot) -> Option<Setting> {
    let feats = s.recording.run.sched_features.as_ref()?;
    Some(
        feats
            .iter()
            .map(|x| match x.strip_prefix("NO_") {
                Some(n) => (n.to_string(), false),
                None => (x.clone(), true),
            })
            .collect(),
    )
}

fn state(s: &Setting, f: SchedFeature) -> State {
    match s.get(f.name()) {
        Some(true) => State::On,
        Some(false) => State::Off,
        None => State::Absent,
    }
}

fn spell(s: &Setting, f: SchedFeature) -> String {
    f.spell(state(s, f))
}

/// The model that fits `s` and flips exactly `flips` of the recording's own features, if any.
pub fn model_for(s: &Setting, flips: &[SchedFeature]) -> Option<&'static Model> {
    MODELS
        .iter()
        .find(|m| m.flips == flips && m.when.iter().all(|&(f, w)| w.holds(state(s, f))))
}

/// One ordered pair: the model of `target`'s setting replayed on `baseline`'s runs, against
/// what `target`'s runs measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Prediction {
    /// Group A, whose recordings the policy is replayed on.
    pub baseline: String,
    /// Group B, whose kernel ran the modelled setting.
    pub target: String,
    /// The modelled features as A had them and as B had them (`NO_X` = off).
    pub baseline_setting: Vec<String>,
    pub target_setting: Vec<String>,
    /// The policy modelling B's setting, and why.
    pub policy: String,
    /// The policy that reproduces B's kernel on B's own recordings, for the split of the
    /// error: `policy` itself, or for a model that flips a feature, the model of B's setting
    /// that keeps the recording's features.
    pub target_policy: String,
    pub model: String,
    pub baseline_runs: usize,
    pub target_runs: usize,
    pub figures: Vec<PredictedFigure>,
    pub evidence: Evidence,
}

fn has_policy(s: &Snapshot, p: &str) -> bool {
    s.shadow
        .as_ref()
        .is_some_and(|r| r.policies.iter().any(|x| x.name == p))
}

/// Simulations of a group's workloads under a policy, for the closed-loop prediction (the
/// caller reads the recordings; empty: none).
pub type ClosedLoop<'a> = &'a dyn Fn(&Group, &str) -> Vec<Snapshot>;

/// Every ordered pair of groups that differ in a modelled feature where the second group's
/// setting has a model, and notes on the pairs that could not be predicted.
pub fn predict(groups: &[Group], closed: ClosedLoop) -> (Vec<Prediction>, Vec<String>) {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    let feats = modelled_features();
    // One setting per group, when every run recorded the same one.
    let settings: Vec<Option<Setting>> = groups
        .iter()
        .map(|g| {
            let s: Vec<Option<Setting>> = g.runs.iter().map(setting_of).collect();
            match s.first() {
                Some(Some(f)) if s.iter().all(|x| x.as_ref() == Some(f)) => Some(f.clone()),
                _ => None,
            }
        })
        .collect();
    if settings.iter().any(Option::is_some) {
        for (g, s) in groups.iter().zip(&settings) {
            if s.is_none() {
                notes.push(format!(
                    "prediction: group {} has no single recorded scheduler-feature setting (unknown, or its runs differ): left out of the prediction table",
                    g.name
                ));
            }
        }
    }
    for (bi, b) in groups.iter().enumerate() {
        let Some(sb) = &settings[bi] else { continue };
        for (ai, a) in groups.iter().enumerate() {
            let Some(sa) = &settings[ai] else { continue };
            if ai == bi {
                continue;
            }
            let differ: Vec<SchedFeature> = feats
                .iter()
                .copied()
                .filter(|&f| state(sa, f) != state(sb, f))
                .collect();
            let kept: Vec<SchedFeature> = FROM_RECORDING
                .into_iter()
                .filter(|&f| state(sa, f) != state(sb, f))
                .collect();
            if differ.is_empty() && kept.is_empty() {
                continue;
            }
            let tset: Vec<String> = differ.iter().map(|&f| spell(sb, f)).collect();
            let model = model_for(sb, &kept);
            if model.is_none() && !kept.is_empty() {
                let side = |s: &Setting| {
                    kept.iter()
                        .map(|&f| spell(s, f))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                notes.push(format!(
                    "prediction {} -> {}: the shadow replays each recording with its own {} ({}: {}; {}: {}), so it predicts no change of them",
                    a.name,
                    b.name,
                    kept.iter().map(|f| f.name()).collect::<Vec<_>>().join(", "),
                    a.name,
                    side(sa),
                    b.name,
                    side(sb)
                ));
                continue;
            }
            let Some(m) = model else {
                notes.push(format!(
                    "prediction {} -> {}: no shadow policy models {}'s setting ({})",
                    a.name,
                    b.name,
                    b.name,
                    tset.join(", ")
                ));
                continue;
            };
            let on_target = if m.flips.is_empty() {
                Some(m)
            } else {
                model_for(sb, &[])
            };
            let Some(on_target) = on_target.map(|x| x.policy) else {
                notes.push(format!(
                    "prediction {} -> {}: no shadow policy reproduces {}'s own kernel ({}), which the error's split needs",
                    a.name,
                    b.name,
                    b.name,
                    tset.join(", ")
                ));
                continue;
            };
            let runs = a.runs.iter().chain(&b.runs);
            if runs.clone().any(|s| s.shadow.is_none()) {
                notes.push(format!(
                    "prediction {} -> {}: needs the shadow evaluation of every run (not run with --no-shadow)",
                    a.name, b.name
                ));
                continue;
            }
            if let Some(p) = [m.policy, on_target]
                .into_iter()
                .find(|&p| !runs.clone().all(|s| has_policy(s, p)))
            {
                notes.push(format!(
                    "prediction {} -> {}: policy {p} is not in every recording's shadow report",
                    a.name, b.name
                ));
                continue;
            }
            out.push(Prediction {
                baseline: a.name.clone(),
                target: b.name.clone(),
                baseline_setting: differ.iter().map(|&f| spell(sa, f)).collect(),
                target_setting: tset,
                policy: m.policy.into(),
                target_policy: on_target.into(),
                model: m.describe.into(),
                baseline_runs: a.runs.len(),
                target_runs: b.runs.len(),
                figures: figures::compute(
                    &a.runs,
                    &b.runs,
                    [m.policy, on_target],
                    &closed(a, m.policy),
                ),
                evidence: figures::evidence(a, b, on_target),
            });
        }
    }
    (out, notes)
}

/// `policy` replayed on `a`'s runs against `b`'s measurements, whatever their settings (the
/// identity check: A's own kernel-flavour policy on A against A gives the fidelity gap alone).
pub fn predict_pair(a: &Group, b: &Group, policy: &str) -> Option<Prediction> {
    if !a.runs.iter().chain(&b.runs).all(|s| has_policy(s, policy)) {
        return None;
    }
    Some(Prediction {
        baseline: a.name.clone(),
        target: b.name.clone(),
        baseline_setting: Vec::new(),
        target_setting: Vec::new(),
        policy: policy.into(),
        target_policy: policy.into(),
        model: "chosen by the caller".into(),
        baseline_runs: a.runs.len(),
        target_runs: b.runs.len(),
        figures: figures::compute(&a.runs, &b.runs, [policy, policy], &[]),
        evidence: figures::evidence(a, b, policy),
    })
}
