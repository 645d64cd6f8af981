//! What makes two runs comparable: the conditions a capture ran under (kernel command line,
//! scheduler features, `kernel.sched_*` sysctls, CPU model, wall-clock start, a label) and the
//! workload's own result (the benchmark's figure, printed beside the placement figures).
use serde::{Deserialize, Serialize};

/// Conditions of a capture, read at its start and stored in the recording's header. Unknown
/// values are `None` (never an empty string standing for "unknown").
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    /// Free-form name of the run (`--label tip`); the recording's file name by default.
    #[serde(default)]
    pub label: Option<String>,
    /// Wall-clock start, RFC 3339 UTC (`2026-12-01T08:00:00.123Z`).
    #[serde(default)]
    pub start_utc: Option<String>,
    /// `/proc/cmdline`.
    #[serde(default)]
    pub kernel_cmdline: Option<String>,
    /// Scheduler features in force, by name as in debugfs `sched/features` (`NO_` prefix for
    /// the ones off); `None` where the file could not be read.
    #[serde(default)]
    pub sched_features: Option<Vec<String>>,
    /// The features wakeviz set for this run (`--sched-feature NO_SIS_UTIL`), as asked;
    /// `sched_features` is read after they were set. Empty: the kernel's own settings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sched_feature_overrides: Vec<String>,
    /// `kernel.sched_*` sysctls, name -> value, sorted by name.
    #[serde(default)]
    pub sysctls: Vec<(String, String)>,
    /// `/proc/cpuinfo` `model name` of the first CPU.
    #[serde(default)]
    pub cpu_model: Option<String>,
    /// The command run under wakeviz (`wakeviz --record F -- CMD ARGS`), if any.
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// Thread ids of wakeviz itself during the capture (the process and its threads, such as
    /// `wakeviz-drain`): its own wakeups are not the workload's, and the analyses leave them
    /// out unless `--include-self`. Empty in recordings made before this field existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub own_tids: Vec<u32>,
    /// The tasks the run's figures are about (`--scope`; the `-- CMD` tree for a capture
    /// with one): a replay folds with it unless its reader asks for another. `None`: every
    /// task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<crate::analysis::Filter>,
    /// `--include-self`: the analyses keep `own_tids`' wakeups. Never recorded: the choice
    /// belongs to whoever reads the recording, so a replay leaves them out unless asked too.
    #[serde(skip)]
    pub include_own: bool,
}

/// How the workload ended and what it reported; known only at the end of the capture.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkloadOutcome {
    /// Exit status (0-255) if it exited, else the signal that killed it.
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// Wall time from start to exit.
    pub duration_ns: u64,
    /// Figures parsed from its output (built-in parsers and `--metric NAME=REGEX`).
    pub metrics: Vec<Metric>,
}

/// One figure a benchmark printed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    /// `pipe.usecs_per_op`, `messaging.time_s`, `schbench.wakeup_p99_us`, or the user's name.
    pub name: String,
    pub value: f64,
    /// `us`, `s`, `MB/s`, `ops/s`, or empty.
    pub unit: String,
    /// Whether a larger value is an improvement (throughput) or a regression (latency, time).
    pub higher_is_better: bool,
}

pub mod parse;

pub use parse::builtin_metrics;

impl Metric {
    pub fn new(name: &str, value: f64, unit: &str, higher_is_better: bool) -> Self {
        Self {
            name: name.into(),
            value,
            unit: unit.into(),
            higher_is_better,
        }
    }
}

impl WorkloadOutcome {
    /// `exited 0`, `killed by signal 9`, as the text report and the dashboard print it.
    pub fn status_text(&self) -> String {
        match (self.exit_code, self.signal) {
            (Some(c), _) => format!("exited {c}"),
            (None, Some(s)) => format!("killed by signal {s}"),
            (None, None) => "status unknown".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Recordings made before `--sched-feature` existed read as "no overrides", and a run
    /// without overrides writes the header those builds wrote.
    #[test]
    fn overrides_are_optional_in_the_header() {
        let old: RunMeta = serde_json::from_str(r#"{"label":"tip"}"#).unwrap();
        assert!(old.sched_feature_overrides.is_empty());
        let j = serde_json::to_string(&old).unwrap();
        assert!(!j.contains("sched_feature_overrides"), "{j}");
        let set = RunMeta {
            sched_feature_overrides: vec!["NO_SIS_UTIL".into()],
            ..old
        };
        let back: RunMeta = serde_json::from_str(&serde_json::to_string(&set).unwrap()).unwrap();
        assert_eq!(back, set);
    }
}
