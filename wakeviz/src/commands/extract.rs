//! `wakeviz workload extract`: a recording's workload shape, as a table, JSON and an rt-app
//! file (the shape and its rt-app form: `wakeviz_core::workload`).
use std::{io::Write as _, path::Path, process::ExitCode, time::Duration};

use anyhow::Context as _;
use wakeviz_core::{
    source::{EventSource as _, Poll, ReplaySource},
    workload::{Extractor, Shape, TaskShape, Waker, rtapp},
};

use crate::{cli::Scope, print_stdout, sinks::record::create_file};

/// Rows of the task table; the JSON has every task.
const SHOWN: usize = 20;

pub struct Request<'a> {
    pub file: &'a Path,
    pub scope: Option<&'a Scope>,
    pub json: Option<&'a Path>,
    pub rt_app: Option<&'a Path>,
    pub force: bool,
}

/// The table (and files); exit 3 when the recording was damaged (the shape covers its intact
/// chunks only).
pub fn run(r: &Request) -> anyhow::Result<ExitCode> {
    if let Some(p) = r.json {
        crate::sinks::record::check_target(p, r.force)?;
    }
    if let Some(p) = r.rt_app {
        crate::sinks::record::check_target(p, r.force)?;
    }
    let (shape, warnings) = extract(r.file, r.scope)?;
    let mut text = table(&shape);
    if let Some(p) = r.json {
        let body = serde_json::to_string_pretty(&shape).context("serialising the shape")?;
        write(p, &body, r.force)?;
        text.push_str(&format!("shape written to {}\n", p.display()));
    }
    if let Some(p) = r.rt_app {
        let f = rtapp::rt_app(&shape);
        write(p, &f.json, r.force)?;
        text.push_str(&format!(
            "rt-app file written to {} ({} threads, {} stars); run it with `rt-app {}`\n",
            p.display(),
            f.threads,
            f.stars,
            p.display()
        ));
        for n in &f.notes {
            text.push_str(&format!("  not reproduced: {n}\n"));
        }
    }
    print_stdout(text.trim_end())?;
    Ok(crate::driver::warned_exit(&warnings))
}

/// Folds the whole recording into its shape; the file's warnings (damage) beside it.
pub fn extract(file: &Path, scope: Option<&Scope>) -> anyhow::Result<(Shape, Vec<String>)> {
    let mut src = ReplaySource::open(file)?;
    let mut h = src.header().clone();
    Scope::apply(scope, &mut h.run);
    let mut x = Extractor::new(&h);
    loop {
        match src
            .poll(Duration::ZERO)
            .with_context(|| format!("reading {}", file.display()))?
        {
            Poll::Batch(b) => {
                x.on_batch(&b);
                src.recycle(b);
            }
            Poll::Pending => {}
            Poll::End => break,
        }
    }
    let warnings = src
        .warnings()
        .iter()
        .map(|w| format!("{}: {w}", file.display()))
        .collect();
    Ok((x.finish(), warnings))
}

fn write(path: &Path, body: &str, force: bool) -> anyhow::Result<()> {
    let mut f = create_file(path, force)?;
    f.write_all(body.as_bytes())
        .and_then(|()| f.write_all(b"\n"))
        .and_then(|()| f.sync_all())
        .with_context(|| format!("writing {}", path.display()))
}

fn waker(w: Waker, shape: &Shape) -> String {
    match w {
        Waker::Task(p) => shape
            .tasks
            .iter()
            .find(|t| t.pid == p)
            .map_or_else(|| format!("pid {p}"), |t| format!("{} {p}", t.comm)),
        Waker::Interrupt => "interrupt".into(),
        Waker::Outside => "outside the scope".into(),
        Waker::Other => "other tasks".into(),
    }
}

fn row(t: &TaskShape, shape: &Shape) -> String {
    let by = t.principal().map_or_else(
        || "-".to_owned(),
        |(w, share)| format!("{} ({:.0}%)", waker(w, shape), share * 100.0),
    );
    let sync: Option<(u64, u64)> = t
        .woken_by
        .iter()
        .filter_map(|w| w.sync.map(|s| (s, w.count)))
        .reduce(|a, b| (a.0 + b.0, a.1 + b.1));
    let sync = sync.map_or_else(
        || "n/a".to_owned(),
        |(s, n)| format!("{:.0}", 100.0 * s as f64 / n.max(1) as f64),
    );
    format!(
        "{:<16} {:>7} {:>7} {:>8} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>6} {}\n",
        t.comm,
        t.pid,
        t.tgid.map_or_else(|| "?".into(), |g| g.to_string()),
        t.woken,
        t.run.p50_us,
        t.run.p90_us,
        t.sleep.p50_us,
        t.sleep.p90_us,
        sync,
        by
    )
}

fn table(shape: &Shape) -> String {
    let mut s = format!(
        "workload of {} ({} s, {} tasks in {} processes{})\n",
        shape.scope,
        shape.duration_ns / 1_000_000_000,
        shape.tasks.len(),
        shape.processes.len(),
        if shape.tasks_not_followed > 0 {
            format!(", {} more tasks not described", shape.tasks_not_followed)
        } else {
            String::new()
        }
    );
    s.push_str(&format!(
        "{:<16} {:>7} {:>7} {:>8} {:>9} {:>9} {:>9} {:>9} {:>6} {}\n",
        "task",
        "pid",
        "tgid",
        "woken",
        "run p50",
        "run p90",
        "sleep p50",
        "sleep p90",
        "sync%",
        "woken mostly by"
    ));
    s.push_str(&format!(
        "{:<16} {:>7} {:>7} {:>8} {:>9} {:>9} {:>9} {:>9}\n",
        "", "", "", "", "[us]", "[us]", "[us]", "[us]"
    ));
    for t in shape.tasks.iter().take(SHOWN) {
        s.push_str(&row(t, shape));
    }
    if shape.tasks.len() > SHOWN {
        s.push_str(&format!(
            "... {} more tasks (--json has them all)\n",
            shape.tasks.len() - SHOWN
        ));
    }
    s
}
