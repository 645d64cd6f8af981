//! `wakeviz experiment`'s command line (the command itself: `crate::commands::experiment`).
use std::{ffi::OsString, path::PathBuf};

use super::ReportFormat;

#[derive(clap::Args, Debug)]
#[command(
    about = "Run a workload under several scheduler-feature settings, alternated, and compare them",
    after_help = "Example: sudo wakeviz experiment --setting default --setting NO_SIS_UTIL --runs 3 \
                  --out exp -- hackbench -g 4 -l 2000. Each run is DIR/SETTING-I.wvz; the report \
                  (also DIR/experiment.txt and DIR/experiment.json) is `wakeviz diff` of the \
                  settings, the first one the base. Features found changed after a run are put back before the \
                  experiment stops (exit 4 if that fails, with the command that restores them). \
                  See docs/user/experiments.md."
)]
pub struct ExperimentArgs {
    /// A setting: `default` (the kernel's features as they are) or features to set for the
    /// run, comma-separated (`NO_SIS_UTIL,NO_WA_BIAS`). Repeatable, at least two; the first is
    /// the base of the comparison.
    #[arg(long = "setting", value_name = "SETTING", required = true)]
    pub settings: Vec<String>,
    /// Runs of each setting.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// Directory for the recordings and the report (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// A figure of the command's own output, as with `wakeviz --record` (repeatable).
    #[arg(long = "metric", value_name = "NAME=REGEX", value_parser = checked_metric)]
    pub metrics: Vec<String>,
    /// Output format on stdout (text by default); both are written to DIR.
    #[arg(long, value_enum)]
    pub report: Option<ReportFormat>,
    /// Skip the shadow-policy evaluation in the comparison.
    #[arg(long)]
    pub no_shadow: bool,
    /// Which tasks the runs' figures are about (recorded in each run): cmd, the workload's
    /// process tree, by default; all, tree:PID, tgid:PID, pid:PID, cgroup:PATH|ID or comm:TEXT.
    #[arg(long, value_name = "SCOPE", value_parser = crate::cli::parse_scope)]
    pub scope: Option<super::Scope>,
    /// The idle-scan probe points for every run (a vmlinux with debug info or a file from
    /// `wakeviz scan-points`; by default each run looks where distributions install it).
    #[arg(long, value_name = "FILE")]
    pub scan_points: Option<PathBuf>,
    /// Move existing files of the experiment to FILE.old instead of refusing to start.
    #[arg(long)]
    pub force: bool,
    /// A plain file standing in for debugfs `sched/features` (tests).
    #[arg(long, value_name = "PATH", hide = true)]
    pub sched_features_file: Option<PathBuf>,
    /// The workload, run once per run.
    #[arg(last = true, required = true, value_name = "CMD",
          value_parser = clap::value_parser!(OsString))]
    pub command: Vec<OsString>,
}

/// `--metric` is handed to each child as given; it is checked here so a bad one is a usage
/// error before any run.
fn checked_metric(s: &str) -> Result<String, String> {
    crate::command::parse_metric(s).map(|_| s.to_string())
}
