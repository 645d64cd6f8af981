//! `wakeviz diff`'s command line (the command itself: `crate::commands::diff`).
use std::path::PathBuf;

use super::ReportFormat;

#[derive(clap::Args, Debug)]
#[command(
    about = "Compare recordings: groups of runs side by side, changes against the first group, * where a change exceeds the runs' noise",
    after_help = "Groups: `wakeviz diff BASE NEW [MORE...]` (one run each), or `--base F... [--group NAME=F,F...]... --new F...` \
                  (NAME=F1,F2,...; base first, new last). `--fail-if` compares the last group with the first: \
                  exit 1 if a condition holds, 2 on a bad expression. See docs/user/comparing.md."
)]
pub struct DiffArgs {
    /// Recordings compared one against another (one group each, the first is the base).
    #[arg(value_name = "FILE", conflicts_with_all = ["base", "new", "group"])]
    pub files: Vec<PathBuf>,
    /// The base group's recordings (repeated runs of one kernel).
    #[arg(long, num_args = 1.., value_name = "FILE")]
    pub base: Vec<PathBuf>,
    /// A further group between base and new, as NAME=F1,F2,... (repeatable; kept in order).
    #[arg(long, value_name = "NAME=F1,F2,...", value_parser = parse_group)]
    pub group: Vec<GroupSpec>,
    /// The new group's recordings (the one `--fail-if` judges).
    #[arg(long, num_args = 1.., value_name = "FILE")]
    pub new: Vec<PathBuf>,
    /// Sections to show, comma-separated: workload, placement, domain, scan, latency, shadow,
    /// schedstat (the conditions are always shown first).
    #[arg(long, value_delimiter = ',', value_name = "SECTIONS")]
    pub only: Vec<String>,
    /// Output format (text by default).
    #[arg(long, value_enum)]
    pub report: Option<ReportFormat>,
    /// Fail (exit 1) when a change from the first to the last group meets COND, e.g.
    /// 'placement.vs_waker.cross_package.share > +2pt' or 'scan.p99 > +10% significant'
    /// (`significant`: only a change beyond the runs' noise). A condition that cannot be
    /// evaluated (n/a, a relative change from 0, not a finite number) fails too.
    #[arg(long = "fail-if", value_name = "COND")]
    pub fail_if: Vec<String>,
    /// Skip the --fail-if conditions that cannot be evaluated instead of failing on them
    /// (each is still printed, with why).
    #[arg(long)]
    pub skip_unevaluable: bool,
    /// Skip the shadow-policy evaluation (several times faster; no shadow section).
    #[arg(long)]
    pub no_shadow: bool,
    /// Which tasks every run's figures are about (all, cmd, tree:PID, tgid:PID, pid:PID, cgroup:PATH|ID, comm:TEXT);
    /// by default each run's recorded scope (the `-- CMD` tree of a `-- CMD` capture).
    #[arg(long, value_name = "SCOPE", value_parser = crate::cli::parse_scope)]
    pub scope: Option<super::Scope>,
}

#[derive(Clone, Debug)]
pub struct GroupSpec {
    pub name: String,
    pub files: Vec<PathBuf>,
}

fn parse_group(s: &str) -> Result<GroupSpec, String> {
    let (name, files) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: expected NAME=FILE[,FILE...]"))?;
    let files: Vec<PathBuf> = files
        .split(',')
        .filter(|f| !f.is_empty())
        .map(PathBuf::from)
        .collect();
    if name.is_empty() || files.is_empty() {
        return Err(format!(
            "{s:?}: expected NAME=FILE[,FILE...] with a name and a recording"
        ));
    }
    Ok(GroupSpec {
        name: name.into(),
        files,
    })
}
