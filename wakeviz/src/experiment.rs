//! `wakeviz experiment`: feature settings run in alternation and compared (issue 13, part 2).
//! Placeholder until it lands.
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
#[command(
    about = "Run a workload under several scheduler-feature settings, alternated, and compare them"
)]
pub struct ExperimentArgs {}

pub fn run(_a: &ExperimentArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("wakeviz experiment is not built yet")
}
