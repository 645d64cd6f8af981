//! `wakeviz workload simulate`: a recording's workload under one shadow policy, closed loop
//! (`wakeviz_core::closed_loop`), folded by the ordinary analysis into the usual report.
use std::{path::Path, process::ExitCode};

use anyhow::Context as _;
use wakeviz_core::{
    analysis::Analysis,
    closed_loop::{Config, names, simulate},
    event::Event,
    source::{Batch, EventSource as _, ReplaySource},
};

use crate::{
    cli::{ReportFormat, Scope},
    print_report,
};

/// Events handed to the analysis at a time: the simulation's output is never held whole.
const BATCH: usize = 1 << 16;

pub struct Request<'a> {
    pub file: &'a Path,
    pub policy: &'a str,
    pub scope: Option<&'a Scope>,
    pub seed: u64,
    pub report: ReportFormat,
}

pub fn run(r: &Request) -> anyhow::Result<ExitCode> {
    let (a, warnings) = fold(r.file, r.policy, r.scope, r.seed, false)?;
    print_report(&a, r.report)?;
    Ok(crate::driver::warned_exit(&warnings))
}

/// The closed-loop predictions of `wakeviz diff` and `wakeviz experiment`: each of the
/// group's recordings simulated under `policy`, folded with the shadow evaluation (whose
/// baseline row then holds the policy's simulated choices). A recording that cannot be
/// simulated is said and left out.
pub fn group_runs(
    g: &wakeviz_core::compare::Group,
    policy: &str,
    scope: Option<&Scope>,
) -> Vec<wakeviz_core::analysis::Snapshot> {
    g.files
        .iter()
        .filter_map(|f| match fold(Path::new(f), policy, scope, 1, true) {
            Ok((a, _)) => Some(a.snapshot()),
            Err(e) => {
                crate::say(format_args!(
                    "closed-loop prediction: {f} under {policy}: {e:#}"
                ));
                None
            }
        })
        .collect()
}

/// `file`'s workload simulated under `policy`, folded; the recording's warnings beside it.
fn fold(
    file: &Path,
    policy: &str,
    scope: Option<&Scope>,
    seed: u64,
    shadow: bool,
) -> anyhow::Result<(Analysis, Vec<String>)> {
    let (shape, warnings) = super::extract::extract(file, scope)?;
    let header = ReplaySource::open(file)?.header().clone();
    let mut cfg = Config::new(policy, &shape, recorded_events(file)?);
    cfg.seed = seed;
    let mut h = header.clone();
    h.run.scope = None;
    h.run.own_tids.clear();
    h.notes.push(format!(
        "closed-loop simulation of {} under policy {policy} (seed {seed}): the events are \
         simulated, not recorded",
        file.display(),
    ));
    let mut a = Analysis::new(&h);
    if !shadow {
        a.set_shadow(None);
    }
    a.on_batch(&Batch {
        tasks: names(&shape),
        ..Batch::default()
    });
    let mut buf: Vec<Event> = Vec::with_capacity(BATCH);
    let sum = simulate(&shape, &header, &cfg, &mut |e| {
        buf.push(e.clone());
        if buf.len() >= BATCH {
            a.on_batch(&Batch {
                events: std::mem::take(&mut buf),
                ..Batch::default()
            });
        }
    })
    .with_context(|| format!("{}: no closed-loop simulation", file.display()))?;
    a.on_batch(&Batch {
        events: buf,
        ..Batch::default()
    });
    if sum.truncated {
        crate::say(format_args!(
            "the simulation of {} stopped with work left, at {} events and {} ms simulated \
             (the bounds: four times the recording's events, ten times its length)",
            file.display(),
            sum.events,
            sum.simulated_ns / 1_000_000
        ));
    }
    Ok((a, warnings))
}

/// The recording's event count, from its closing counters (or by counting).
fn recorded_events(file: &Path) -> anyhow::Result<u64> {
    let mut src = ReplaySource::open(file)?;
    let mut n = 0u64;
    loop {
        match src
            .poll(std::time::Duration::ZERO)
            .with_context(|| format!("reading {}", file.display()))?
        {
            wakeviz_core::source::Poll::Batch(b) => {
                n += b.events.len() as u64;
                src.recycle(b);
            }
            wakeviz_core::source::Poll::Pending => {}
            wakeviz_core::source::Poll::End => return Ok(n),
        }
    }
}
