//! `wakeviz scan-points`: the scan points of a debug vmlinux as a points file (JSON), for a
//! machine that runs that kernel build without its debug info, or to look at.
use std::{io::Write as _, process::ExitCode};

use anyhow::Context as _;

use crate::{cli::ScanPointsArgs, probes::debuginfo};

pub fn run(a: &ScanPointsArgs) -> anyhow::Result<ExitCode> {
    let vmlinux = match &a.vmlinux {
        Some(p) => p.clone(),
        None => debuginfo::default_vmlinux()?,
    };
    let points = debuginfo::dwarf::find(&vmlinux)?;
    let json = points.to_json();
    match &a.out {
        Some(out) => {
            let mut f = crate::sinks::record::create_file(out, a.force)?;
            f.write_all(json.as_bytes())
                .and_then(|()| f.sync_all())
                .with_context(|| format!("cannot write {}", out.display()))?;
            say!(
                "wakeviz: {} scan points of build {} written to {}",
                points.points.len(),
                points.build_id,
                out.display()
            );
        }
        None => {
            let mut o = std::io::stdout().lock();
            o.write_all(json.as_bytes())
                .and_then(|()| o.flush())
                .context("cannot write the points to stdout")?;
        }
    }
    for n in &points.notes {
        say!("wakeviz: note: {n}");
    }
    Ok(ExitCode::SUCCESS)
}
