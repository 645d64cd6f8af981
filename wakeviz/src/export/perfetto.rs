//! Perfetto trace export (issue 14, part 1). Placeholder until the exporter lands.
use std::{path::Path, process::ExitCode};

pub fn export(_a: &super::ExportArgs, _out: &Path) -> anyhow::Result<ExitCode> {
    anyhow::bail!("--perfetto is not built yet")
}
