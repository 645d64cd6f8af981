//! `wakeviz export`: recordings handed to the tools scheduler people already use (Perfetto for
//! traces, DuckDB/any Parquet reader for SQL over many runs), so wakeviz's placement classes,
//! scan latencies and shadow verdicts do not stop at its own screen.
mod atomic;
pub mod parquet;
pub mod perfetto;

use std::process::ExitCode;

pub use crate::cli::ExportArgs;

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
