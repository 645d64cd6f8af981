//! `wakeviz export`: recordings handed to the tools scheduler people already use (Perfetto for
//! traces, DuckDB/any Parquet reader for SQL over many runs), so wakeviz's placement classes,
//! scan latencies and shadow verdicts do not stop at its own screen.
mod atomic;
pub mod parquet;
pub mod perfetto;

use std::{path::PathBuf, process::ExitCode};

#[derive(clap::Args, Debug)]
#[command(
    about = "Export recordings: a Perfetto trace (ui.perfetto.dev, trace_processor) or Parquet tables (DuckDB)",
    after_help = "See docs/user/exports.md in the source tree."
)]
pub struct ExportArgs {
    /// Write a Perfetto trace of one recording to FILE.
    #[arg(long, value_name = "FILE")]
    pub perfetto: Option<PathBuf>,
    /// With --perfetto: cut the trace into files of at most MB megabytes each, so each one
    /// loads in the Perfetto UI (it holds about 2 GB).
    #[arg(long, value_name = "MB", requires = "perfetto",
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub split_mb: Option<u64>,
    /// Write Parquet tables of the recordings into DIR (created if missing).
    #[arg(long, value_name = "DIR")]
    pub parquet: Option<PathBuf>,
    /// Replace existing output files (the old ones are moved to NAME.old).
    #[arg(long)]
    pub force: bool,
    /// Recordings to export.
    #[arg(value_name = "IN.wvz", required = true)]
    pub inputs: Vec<PathBuf>,
}

pub fn run(a: &ExportArgs) -> anyhow::Result<ExitCode> {
    if a.perfetto.is_none() && a.parquet.is_none() {
        anyhow::bail!("wakeviz export needs --perfetto FILE or --parquet DIR (or both)");
    }
    let mut code = ExitCode::SUCCESS;
    if let Some(out) = &a.perfetto {
        code = perfetto::export(a, out)?;
    }
    if let Some(dir) = &a.parquet {
        let c = parquet::export(a, dir)?;
        if c != ExitCode::SUCCESS {
            code = c;
        }
    }
    Ok(code)
}
