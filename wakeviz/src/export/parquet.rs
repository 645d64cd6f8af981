//! Parquet export (issue 14, part 2). Placeholder until the exporter lands.
use std::{path::Path, process::ExitCode};

pub fn export(_a: &super::ExportArgs, _dir: &Path) -> anyhow::Result<ExitCode> {
    anyhow::bail!("--parquet is not built yet")
}
