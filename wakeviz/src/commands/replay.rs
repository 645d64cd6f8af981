//! `--replay FILE` and `--demo`: a recording through the driver, into the dashboard, a dump,
//! a report or the event counts.
use std::{path::Path, process::ExitCode};

use anyhow::Context as _;
use wakeviz_core::{
    analysis::Analysis,
    format::Reader,
    source::{EventSource as _, ReplaySource},
};

use crate::{
    analysis_header, cli::Cli, dashboard::app, dashboard::ui, dashboard_wanted, driver,
    print_report, print_stdout, signals,
};

/// A recording made in the VM suite (Debian 6.12, NPS2-like 2-package guest, full probes,
/// mixed workload), so wakeviz shows something real without root or BPF.
static DEMO: &[u8] = include_bytes!("../../assets/demo.wvz");

pub(crate) fn demo_source() -> anyhow::Result<ReplaySource<std::io::Cursor<&'static [u8]>>> {
    let r = Reader::new(std::io::Cursor::new(DEMO), Path::new("demo.wvz"))
        .context("the built-in demo recording is unreadable")?;
    Ok(ReplaySource::new(r))
}

/// A recording (or the demo) through the driver: the dashboard, a dump, a report, or counts.
pub(crate) fn replay(
    cli: &Cli,
    path: &Path,
    open: &mut driver::Reopen<'_>,
) -> anyhow::Result<ExitCode> {
    if cli.compare.is_some() && !dashboard_wanted(cli) {
        anyhow::bail!(
            "--compare shows the comparison in the dashboard, which needs a terminal; \
             for text or JSON use `wakeviz diff`"
        );
    }
    let mut src = open()?;
    let opts = driver::Options::default();
    if dashboard_wanted(cli) {
        // The baseline first, headlessly: a bad file fails before the terminal is taken.
        let baseline = cli
            .compare
            .as_deref()
            .map(|p| baseline(p, cli))
            .transpose()?;
        signals::install();
        let mut app = app::App::new(
            &analysis_header(src.header(), cli),
            app::SourceKind::Replay {
                path: path.to_path_buf(),
            },
        );
        app.baseline = baseline;
        let mut dash = ui::run::Dashboard::new(app, cli.refresh)?;
        let out = driver::run(src.as_mut(), &mut [&mut dash], &opts, Some(open));
        drop(dash);
        return out.error.map_or(Ok(ExitCode::SUCCESS), Err);
    }
    // Entries the mode's own per-task tables dropped (the counter keeps none).
    let mut evicted = 0;
    if cli.dump.is_some() {
        let mut d = crate::sinks::dump::Dump::new();
        let out = driver::run(src.as_mut(), &mut [&mut d], &opts, None);
        let closed = d.closed;
        evicted = d.evicted();
        d.finish()?;
        if closed {
            return Ok(ExitCode::SUCCESS);
        }
        out.error.map_or(Ok(()), Err)?;
    } else if let Some(fmt) = cli.report {
        let mut a = Analysis::new(&analysis_header(src.header(), cli));
        let out = driver::run(src.as_mut(), &mut [&mut a], &opts, None);
        out.error.map_or(Ok(()), Err)?;
        print_report(&a, fmt)?;
        evicted = a.evicted();
    } else {
        let mut c = crate::sinks::dump::Counter::default();
        let out = driver::run(src.as_mut(), &mut [&mut c], &opts, None);
        out.error.map_or(Ok(()), Err)?;
        print_stdout(&crate::sinks::dump::counts_text(&c.0))?;
    }
    let mut warnings = src.warnings().to_vec();
    warnings.extend(budget_warning(evicted));
    Ok(driver::warned_exit(&warnings))
}

/// Per-task state is bounded (`pidmap::PID_BUDGET` entries per map, so a file of millions of
/// distinct pids cannot exhaust memory); when the budget evicted entries, figures for those
/// tasks are approximate, and the run says so.
pub(crate) fn budget_warning(n: u64) -> Option<String> {
    (n > 0).then(|| {
        format!(
            "{n} per-task entries were evicted (more than {} live tasks in one map): wakeups of the evicted tasks are joined or scored approximately",
            wakeviz_core::pidmap::PID_BUDGET
        )
    })
}

/// `--compare FILE`: the whole recording folded as `--report` folds it, kept as a snapshot.
fn baseline(path: &Path, cli: &Cli) -> anyhow::Result<app::data::Baseline> {
    let ctx = || format!("baseline {}", path.display());
    let mut src = ReplaySource::open(path).with_context(ctx)?;
    let mut a = Analysis::new(&analysis_header(src.header(), cli));
    let out = driver::run(&mut src, &mut [&mut a], &driver::Options::default(), None);
    out.error.map_or(Ok(()), Err).with_context(ctx)?;
    Ok(app::data::Baseline {
        path: path.to_path_buf(),
        snap: a.snapshot(),
        warnings: src.warnings().to_vec(),
    })
}
