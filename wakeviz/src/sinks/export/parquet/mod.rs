//! `wakeviz export --parquet DIR IN.wvz...`: each recording becomes a directory
//! `DIR/<recording_id>/` of four Parquet tables (`placements`, `events`, `metadata`, `cpus`;
//! schema in docs/user/exports.md, "Parquet"), so `read_parquet('DIR/*/placements.parquet')`
//! unions every host and run in one query. The rows come from the same fold as `--report`
//! (placements from the analysis's own per-wakeup records), so SQL and the reports agree.
//!
//! The directory is named by the recording id, a hash of the recording's header bytes: the
//! same recording exported twice lands in the same place (refused without `--force`) instead
//! of being counted twice by a glob.
mod events;
mod meta;
mod placements;
mod table;

use std::{
    fs::File,
    io::Read as _,
    os::unix::fs::DirBuilderExt as _,
    path::{Path, PathBuf},
    process::ExitCode,
};

use anyhow::{Context as _, bail};
use wakeviz_core::{
    analysis::Analysis,
    source::{EventSource as _, ReplaySource},
};

use self::table::Table;
use super::atomic::{self, Pending};
use crate::sinks::record::check_target;

/// Version of the tables' schema (also in each file's key-value metadata as
/// `wakeviz.schema_version`). Bumped when a column is renamed, removed or changes meaning.
pub const SCHEMA_VERSION: u32 = 2;

const TABLES: [&str; 4] = [
    "placements.parquet",
    "events.parquet",
    "metadata.parquet",
    "cpus.parquet",
];

pub fn export(a: &super::ExportArgs, dir: &Path) -> anyhow::Result<ExitCode> {
    // Everything is checked before anything is written: a refusal leaves no half export.
    let mut jobs: Vec<(&Path, String)> = Vec::new();
    for input in &a.inputs {
        let id = recording_id(input)?;
        if let Some((other, _)) = jobs.iter().find(|(_, i)| *i == id) {
            bail!(
                "{} and {} are the same recording (id {id}): export it once",
                other.display(),
                input.display()
            );
        }
        jobs.push((input, id));
    }
    check_dir(dir)?;
    for (_, id) in &jobs {
        let sub = dir.join(id);
        check_dir(&sub)?;
        for t in TABLES {
            check_target(&sub.join(t), a.force)?;
        }
    }
    // Directories this export made, removed again (when still empty) if it fails: an
    // empty directory left behind would only puzzle the next export.
    let mut made = Made(Vec::new());
    made.create_all(dir)?;
    let mut damaged = false;
    for (input, id) in &jobs {
        let sub = dir.join(id);
        check_dir(&sub)?;
        made.create_all(&sub)?;
        // Tables are written at temporary names and moved into place once all four are
        // complete: a failure (a file without its footer is unreadable) leaves none of them.
        let mut pending = Vec::new();
        let done = export_one(input, id, &sub, a.scope.as_ref(), &mut pending)?;
        for p in pending {
            p.commit(a.force)?;
        }
        for w in &done.warnings {
            crate::say(format_args!("warning: {w}"));
        }
        damaged |= !done.warnings.is_empty();
        made.0.clear();
        println!(
            "{} -> {}: {} placements, {} events",
            input.display(),
            sub.display(),
            done.placements,
            done.events
        );
    }
    Ok(if damaged {
        ExitCode::from(crate::driver::EXIT_DAMAGED)
    } else {
        ExitCode::SUCCESS
    })
}

/// A directory to write into: missing, or a real directory, never a symbolic link (a root
/// export must not be steered elsewhere by a link someone else planted).
fn check_dir(dir: &Path) -> anyhow::Result<()> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_symlink() => bail!(
            "{} is a symbolic link: refusing to write through it (remove it or pick another directory)",
            dir.display()
        ),
        Ok(m) if !m.is_dir() => bail!("{} exists and is not a directory", dir.display()),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot check {}", dir.display())),
    }
}

/// 16 hex digits of FNV-1a-64 over the header's bytes as stored (host, start time, topology,
/// run metadata): the same for every copy of a recording, different for any two captures.
fn recording_id(path: &Path) -> anyhow::Result<String> {
    // Validates the preamble and the header's checksum first, with the replay's errors.
    drop(ReplaySource::open(path)?);
    let read = || -> std::io::Result<Vec<u8>> {
        let mut f = File::open(path)?;
        let mut pre = [0u8; 20];
        f.read_exact(&mut pre)?;
        let len = u32::from_le_bytes([pre[12], pre[13], pre[14], pre[15]]);
        let mut json = Vec::new();
        f.take(u64::from(len)).read_to_end(&mut json)?;
        Ok(json)
    };
    let bytes = read().with_context(|| format!("cannot read {}", path.display()))?;
    let h = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    Ok(format!("{h:016x}"))
}

struct Done {
    placements: u64,
    events: u64,
    warnings: Vec<String>,
}

/// Directories created by this export, innermost last.
struct Made(Vec<PathBuf>);

impl Made {
    /// Creates `dir` and any missing parents (mode 0700), remembering which it created.
    fn create_all(&mut self, dir: &Path) -> anyhow::Result<()> {
        let mut missing = Vec::new();
        let mut d = Some(dir);
        while let Some(p) = d.filter(|p| !p.as_os_str().is_empty() && p.symlink_metadata().is_err())
        {
            missing.push(p.to_path_buf());
            d = p.parent();
        }
        for p in missing.into_iter().rev() {
            match std::fs::DirBuilder::new().mode(0o700).create(&p) {
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                r => {
                    r.with_context(|| format!("cannot create {}", p.display()))?;
                    self.0.push(p);
                }
            }
        }
        Ok(())
    }
}

impl Drop for Made {
    fn drop(&mut self) {
        // remove_dir refuses a directory that is not empty: only what this run left empty goes.
        for p in self.0.iter().rev() {
            let _ = std::fs::remove_dir(p);
        }
    }
}

fn create(dir: &Path, name: &str, pending: &mut Vec<Pending>) -> anyhow::Result<(File, PathBuf)> {
    let p = dir.join(name);
    let (f, tmp) = atomic::create(&p)?;
    pending.push(tmp);
    Ok((f, p))
}

/// The events and placements tables, filled batch by batch as a sink of the driver.
struct Rows {
    a: Analysis,
    ev: Table<events::Events>,
    pl: Table<placements::Placements>,
    recs: Vec<wakeviz_core::analysis::PlacementRecord>,
}

/// Writes the placement records the analysis finished.
fn drain(
    a: &mut Analysis,
    pl: &mut Table<placements::Placements>,
    recs: &mut Vec<wakeviz_core::analysis::PlacementRecord>,
) -> anyhow::Result<()> {
    recs.extend(a.drain_records());
    for r in recs.drain(..) {
        pl.rows.push(&r, a.tasks());
        pl.flush_if_full()?;
    }
    Ok(())
}

impl crate::driver::Sink for Rows {
    fn on_batch(&mut self, b: &wakeviz_core::source::Batch) -> anyhow::Result<()> {
        self.a.on_batch(b);
        for e in &b.events {
            self.ev.rows.push(e, self.a.tasks());
            self.ev.flush_if_full()?;
        }
        drain(&mut self.a, &mut self.pl, &mut self.recs)
    }
}

fn export_one(
    input: &Path,
    id: &str,
    dir: &Path,
    scope: Option<&wakeviz_core::analysis::Scope>,
    pending: &mut Vec<Pending>,
) -> anyhow::Result<Done> {
    let mut src = ReplaySource::open(input)?;
    let mut h = src.header().clone();
    wakeviz_core::analysis::Scope::apply(scope, &mut h.run);
    let mut a = Analysis::new(&h);
    a.keep_records(true);
    let policies = a.record_policies();
    // The placement rows cover the scope's wakees; every table says which scope that was.
    let scope = h
        .run
        .scope
        .as_ref()
        .map_or_else(|| "all".into(), ToString::to_string);
    let kv = |table: &str| {
        [
            ("schema_version", SCHEMA_VERSION.to_string()),
            ("recording_id", id.to_string()),
            ("table", table.to_string()),
            ("scope", scope.clone()),
        ]
    };
    let (f, p) = create(dir, TABLES[0], pending)?;
    let pl = Table::new(
        f,
        p,
        placements::schema(&policies),
        placements::Placements::new(id, &h.hostname, policies.len()),
        &kv("placements"),
    )?;
    let (f, p) = create(dir, TABLES[1], pending)?;
    let ev = Table::new(
        f,
        p,
        events::schema(),
        events::Events::new(id),
        &kv("events"),
    )?;
    let mut rows = Rows {
        a,
        ev,
        pl,
        recs: Vec::new(),
    };
    super::drive(&mut src, &mut rows)?;
    let Rows {
        mut a,
        ev,
        mut pl,
        mut recs,
    } = rows;
    a.flush_records();
    drain(&mut a, &mut pl, &mut recs)?;
    let placements = pl.close()?;
    let events = ev.close()?;
    let warnings = src.warnings().to_vec();
    let snap = a.snapshot();
    let facts = meta::Facts {
        id,
        source_file: &input.display().to_string(),
        placements,
        warnings: &warnings,
    };
    let (schema, rows) = meta::metadata(&h, &snap, &facts)?;
    let (f, p) = create(dir, TABLES[2], pending)?;
    Table::new(f, p, schema, rows, &kv("metadata"))?.close()?;
    let (schema, rows) = meta::cpus(&h, id);
    let (f, p) = create(dir, TABLES[3], pending)?;
    Table::new(f, p, schema, rows, &kv("cpus"))?.close()?;
    Ok(Done {
        placements,
        events,
        warnings,
    })
}
