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
    /// Which tasks' placements are exported (the placement rows and tracks; every event is
    /// exported whatever the scope): all, cmd, tree:PID, pid:PID or comm:TEXT. By default
    /// each recording's own scope (the `-- CMD` tree of a `-- CMD` capture).
    #[arg(long, value_name = "SCOPE", value_parser = clap::value_parser!(wakeviz_core::analysis::Scope))]
    pub scope: Option<wakeviz_core::analysis::Scope>,
    /// Recordings to export.
    #[arg(value_name = "IN.wvz", required = true)]
    pub inputs: Vec<PathBuf>,
}

pub fn run(a: &ExportArgs) -> anyhow::Result<ExitCode> {
    if a.perfetto.is_none() && a.parquet.is_none() {
        anyhow::bail!("wakeviz export needs --perfetto FILE or --parquet DIR (or both)");
    }
    // A stop signal ends the export through the driver, and what was half written is removed.
    crate::signals::install();
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

/// Streams `src` into `sink` through the one driver (a stop signal ends it, batches are
/// recycled); a stop by a signal is an error, so nothing half-written is committed.
fn drive(
    src: &mut dyn wakeviz_core::source::EventSource,
    sink: &mut dyn crate::driver::Sink,
) -> anyhow::Result<()> {
    let out = crate::driver::run(src, &mut [sink], &crate::driver::Options::default(), None);
    if let Some(e) = out.error {
        return Err(e);
    }
    if crate::signals::stop_requested() {
        anyhow::bail!("stopped by a signal: nothing written");
    }
    Ok(())
}
