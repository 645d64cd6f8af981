//! `wakeviz export`'s command line (the export itself: `crate::sinks::export`).
use std::path::PathBuf;

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
    /// exported whatever the scope): all, cmd, tree:PID, tgid:PID, pid:PID, cgroup:PATH|ID or
    /// comm:TEXT. By default
    /// each recording's own scope (the `-- CMD` tree of a `-- CMD` capture).
    #[arg(long, value_name = "SCOPE", value_parser = crate::cli::parse_scope)]
    pub scope: Option<wakeviz_core::analysis::Scope>,
    /// Recordings to export.
    #[arg(value_name = "IN.wvz", required = true)]
    pub inputs: Vec<PathBuf>,
}
