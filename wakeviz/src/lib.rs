//! wakeviz: `sudo wakeviz` (live), `--record FILE`, `--replay FILE`, headless reports. The
//! binary (`main.rs`) calls [`main`]; the dashboard's modules are public for its benchmark.
// First, so that its `say!` is in scope in every module below.
#[macro_use]
pub mod signals;

pub mod app;
mod capture;
mod cli;
mod command;
mod commands;
use commands::{aggregate, diff, experiment, generate};
pub mod driver;
mod export;
mod features;
mod meta;
mod probes;
mod record;
mod replay;
mod schedstat;
pub mod serve;
mod session;
pub mod ui;
mod workload;

use std::{
    io::{IsTerminal as _, Write as _},
    process::ExitCode,
};

use anyhow::Context as _;
use clap::Parser as _;
use std::path::Path;

use wakeviz_core::{
    analysis::Analysis,
    format::Reader,
    source::{EventSource, ReplaySource},
};

use crate::cli::{Cli, ReportFormat, Sub};

/// Parses the command line, runs it, and says how it ended.
pub fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let cli = Cli::parse();
    let code = match run(&cli) {
        Ok(code) => code,
        Err(e) => {
            // One line, the whole chain: what failed and why.
            say!("wakeviz: {e:#}");
            if features::is_busy(&e) {
                ExitCode::from(features::EXIT_SETTINGS_BUSY)
            } else {
                // A `-- CMD` that cannot start exits as a shell would (127, 126).
                e.downcast_ref::<command::SpawnError>()
                    .map_or(ExitCode::FAILURE, |s| ExitCode::from(s.code))
            }
        }
    };
    // Settings left changed outweigh everything else: the line saying which, with the command
    // that restores them, was printed when the restore failed.
    if features::not_restored() {
        return ExitCode::from(features::EXIT_NOT_RESTORED);
    }
    code
}

/// Exit status of a replay that finished but met damage (a cut-short or corrupt recording:
/// the figures cover the intact chunks only). See docs/reference/exit-codes.md.
const EXIT_DAMAGED: u8 = 3;

fn run(cli: &Cli) -> anyhow::Result<ExitCode> {
    if let Some(what) = cli.generate {
        generate::run(what)?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(Sub::Workload(w)) = &cli.workload {
        workload::run(w)?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(Sub::Diff(d)) = &cli.workload {
        return diff::run(d);
    }
    if let Some(Sub::Export(x)) = &cli.workload {
        return export::run(x);
    }
    if let Some(Sub::Experiment(x)) = &cli.workload {
        return experiment::run(x);
    }
    if let Some(Sub::Figures) = &cli.workload {
        print_stdout(wakeviz_core::figures::list_text().trim())?;
        return Ok(ExitCode::SUCCESS);
    }
    if cli.restore_leftovers && cli.command.is_empty() {
        features::restore_leftovers(&features::Store::new(cli.sched_features_file.as_deref()))?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(floor) = cli.floor_probes {
        probes::floor::run(floor)?;
        return Ok(ExitCode::SUCCESS);
    }
    if cli.demo {
        return replay(cli, Path::new("demo.wvz"), &mut || {
            Ok(Box::new(demo_source()?))
        });
    }
    if let Some(path) = &cli.replay {
        return replay(cli, path, &mut || Ok(Box::new(ReplaySource::open(path)?)));
    }
    if aggregate::wanted(cli, dashboard_wanted(cli)) {
        // Bound before anything is attached: a bad or busy address is one line, nothing loaded.
        let server = cli
            .serve
            .map(|a| serve::Server::bind(a, cli.serve_public))
            .transpose()?;
        if let Some(s) = &server {
            say!(
                "wakeviz: serving OpenMetrics at http://{}/metrics",
                s.local_addr()
            );
        }
        return aggregate::run(cli, &mut |snap| {
            if let Some(s) = &server {
                s.publish(snap);
            }
        });
    }
    match live(cli) {
        Err(e) if offer_demo(cli, &e) => replay(cli, Path::new("demo.wvz"), &mut || {
            Ok(Box::new(demo_source()?))
        }),
        r => r,
    }
}

/// Without privileges on an interactive terminal, offer the built-in demo instead of just
/// failing: a first-time user sees what wakeviz does before reaching for sudo.
fn offer_demo(cli: &Cli, e: &anyhow::Error) -> bool {
    let denied = matches!(
        e.downcast_ref::<probes::LoadError>(),
        Some(probes::LoadError::NotPermitted(_))
    );
    if !denied || cli.record.is_some() || !dashboard_wanted(cli) || !std::io::stdin().is_terminal()
    {
        return false;
    }
    say!("wakeviz: {e:#}");
    signals::say_str("wakeviz: replay the built-in demo recording instead? [Y/n] ");
    let mut answer = String::new();
    if std::io::stdin().read_line(&mut answer).is_err() {
        return false;
    }
    !answer.trim().eq_ignore_ascii_case("n")
}

/// A recording made in the VM suite (Debian 6.12, NPS2-like 2-package guest, full probes,
/// mixed workload), so wakeviz shows something real without root or BPF.
static DEMO: &[u8] = include_bytes!("../assets/demo.wvz");

fn demo_source() -> anyhow::Result<ReplaySource<std::io::Cursor<&'static [u8]>>> {
    let r = Reader::new(std::io::Cursor::new(DEMO), Path::new("demo.wvz"))
        .context("the built-in demo recording is unreadable")?;
    Ok(ReplaySource::new(r))
}

/// The terminal UI, unless asked for text output or not on a terminal.
fn dashboard_wanted(cli: &Cli) -> bool {
    !cli.headless && cli.dump.is_none() && cli.report.is_none() && std::io::stdout().is_terminal()
}

fn print_report(a: &Analysis, fmt: ReportFormat) -> anyhow::Result<()> {
    let text = match fmt {
        ReportFormat::Text => a.report_text(),
        ReportFormat::Json => serde_json::to_string_pretty(&a.report_json())?,
    };
    print_stdout(&text)
}

/// The header the analyses fold with: the recording's, with `--include-self` and `--scope`
/// applied (the reader's choices, never recorded).
fn analysis_header(h: &wakeviz_core::format::Header, cli: &Cli) -> wakeviz_core::format::Header {
    let mut h = h.clone();
    h.run.include_own = cli.include_self;
    cli::Scope::apply(cli.scope.as_ref(), &mut h.run);
    h
}

/// One `wakeviz: ` line on stderr, made terminal-safe (see [`signals::say_args`]), never
/// failing on a dead terminal.
pub(crate) fn say(msg: std::fmt::Arguments<'_>) {
    signals::say_args(format_args!("wakeviz: {msg}"));
}

/// Prints to stdout, made terminal-safe (text from a recording can carry escape sequences;
/// JSON stays valid, see `safe_text`); a reader that went away (`| head`) is not an error.
fn print_stdout(text: &str) -> anyhow::Result<()> {
    let text = wakeviz_core::safe_text::escape(text);
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}") {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing to stdout"),
    }
}

/// A recording (or the demo) through the driver: the dashboard, a dump, a report, or counts.
fn replay(cli: &Cli, path: &Path, open: &mut driver::Reopen<'_>) -> anyhow::Result<ExitCode> {
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
        let mut dash = ui::run::Dashboard::new(app)?;
        let out = driver::run(src.as_mut(), &mut [&mut dash], &opts, Some(open));
        drop(dash);
        return out.error.map_or(Ok(ExitCode::SUCCESS), Err);
    }
    // Entries the mode's own per-task tables dropped (the counter keeps none).
    let mut evicted = 0;
    if cli.dump.is_some() {
        let mut d = replay::Dump::new();
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
        let mut c = replay::Counter::default();
        let out = driver::run(src.as_mut(), &mut [&mut c], &opts, None);
        out.error.map_or(Ok(()), Err)?;
        print_stdout(&replay::counts_text(&c.0))?;
    }
    let mut warnings = src.warnings().to_vec();
    warnings.extend(budget_warning(evicted));
    for w in &warnings {
        say!("wakeviz: warning: {w}");
    }
    Ok(if warnings.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_DAMAGED)
    })
}

/// Per-task state is bounded (`pidmap::PID_BUDGET` entries per map, so a file of millions of
/// distinct pids cannot exhaust memory); when the budget evicted entries, figures for those
/// tasks are approximate, and the run says so.
fn budget_warning(n: u64) -> Option<String> {
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

fn live(cli: &Cli) -> anyhow::Result<ExitCode> {
    if cli.dump.is_some() {
        anyhow::bail!("--dump reads a recording: use it with --replay FILE or --demo");
    }
    let (mut session, topo) = session::Session::begin(cli)?;
    let mb = cli
        .ringbuf_mb
        .unwrap_or(16)
        .clamp(1, 1024)
        .next_power_of_two();
    let ringbuf_bytes = cli
        .ringbuf_bytes
        .map_or(mb << 20, |b| b.clamp(4096, 1 << 30).next_power_of_two());
    let cfg = probes::ProbeConfig {
        ringbuf_bytes,
        function_probes: !cli.no_function_probes,
        tracepoint_mode: cli.tracepoint_mode.unwrap_or(probes::TracepointMode::Auto),
        bpf_stats: cli.bpf_stats,
        rings: wakeviz_core::rings::RingPlan::new(&topo, cli.rings.map(|n| n as usize)),
        batching: !cli.no_batch,
    };
    // Refuse a bad recording path before attaching anything; create the file only once the
    // probes are in (a failed start leaves no empty recording behind).
    if let Some(p) = &cli.record {
        record::check_target(p, cli.force)?;
    }
    // Bound before anything is attached: a bad or busy address is one line, nothing loaded.
    let server = cli
        .serve
        .map(|a| serve::Server::bind(a, cli.serve_public))
        .transpose()?;
    session.set_features(cli)?;
    let (sizes, beside_btf) = match cli.aggregate_beside {
        Some(_) => (
            probes::aggregate::map_sizes(&topo),
            aggregate::Beside::btf(),
        ),
        None => (Vec::new(), None),
    };
    let mut probes = if sizes.is_empty() {
        probes::load(&cfg)?
    } else {
        probes::load_with(&cfg, &sizes)?
    };
    let beside = match cli.aggregate_beside {
        Some(_) => Some(aggregate::Beside::attach(
            &mut probes,
            beside_btf.as_ref(),
            &topo,
        )?),
        None => None,
    };
    let file = cli
        .record
        .as_deref()
        .map(|p| record::create_file(p, cli.force))
        .transpose()?;
    say!("wakeviz: probes\n{}", probes::describe(&probes.status));
    for n in &probes.notes {
        say!("wakeviz: note: {n}");
    }
    let mut header = meta::header(
        topo,
        probes.status.clone(),
        probes.scan_source,
        u64::from(cfg.ringbuf_bytes),
        probes.notes.clone(),
    );
    header.comm_redacted = cli.redact_comm;
    if cli.redact_comm {
        header.hostname = meta::redact_host(&header.hostname);
    }
    header.run = session.run_meta(cli, command::default_label(cli.record.as_deref()));
    let argv = session.argv().to_vec();
    let mut src = capture::LiveSource::start(probes, header)?;
    let mut rec = match (file, &cli.record) {
        (Some(f), Some(p)) => Some(record::RecordSink::new(f, p, src.header())?),
        _ => None,
    };
    if let Some(s) = &server {
        say!(
            "wakeviz: serving OpenMetrics at http://{}/metrics",
            s.local_addr()
        );
    }
    say!(
        "wakeviz: capturing{}{}{}; Ctrl-C to stop",
        cli.record
            .as_ref()
            .map_or(String::new(), |p| format!(" to {}", p.display())),
        cli.duration
            .map_or(String::new(), |d| format!(" for {:.1} s", d.as_secs_f64())),
        if argv.is_empty() {
            String::new()
        } else {
            format!(" while `{}` runs", argv.join(" "))
        }
    );
    let mut dash = if dashboard_wanted(cli) {
        let app = app::App::new(
            &analysis_header(src.header(), cli),
            app::SourceKind::Live {
                recording: cli.record.clone(),
            },
        );
        Some(ui::run::Dashboard::new(app)?)
    } else {
        None
    };
    // The workload starts once the capture runs (its first wakeups are seen).
    let mut workload = match session.workload(cli, dash.is_none()) {
        Ok(w) => w,
        Err(e) => {
            drop(dash);
            drop(rec);
            if let Some(p) = &cli.record {
                command::discard(p)?;
            }
            return Err(e.into());
        }
    };
    // The process folds the stream once: the dashboard's fold, else the report's (printed at
    // the end), else one of its own for `/metrics`; `/metrics` publishes that fold.
    let mut analysis = (cli.report.is_some() || (server.is_some() && dash.is_none()))
        .then(|| Analysis::new(&analysis_header(src.header(), cli)));
    let opts = driver::Options {
        deadline: cli.duration,
        redact: cli.redact_comm,
    };
    if let (Some(s), Some(d)) = (&server, dash.as_mut()) {
        d.publish_to(s.publisher(d.run_snapshot()));
    }
    let mut fold = analysis.as_mut().map(|a| serve::Fold {
        publisher: server.as_ref().map(|s| s.publisher(a.snapshot())),
        analysis: a,
    });
    let mut sinks: Vec<&mut dyn driver::Sink> = Vec::new();
    if let Some(r) = rec.as_mut() {
        sinks.push(r);
    }
    if let Some(f) = fold.as_mut() {
        sinks.push(f);
    }
    if let Some(d) = dash.as_mut() {
        sinks.push(d);
    }
    let mut supervisor = workload
        .as_mut()
        .map(|w| command::Supervisor { workload: w });
    if let Some(s) = supervisor.as_mut() {
        sinks.push(s);
    }
    let sysctl = (!cli.no_schedstat).then(schedstat::Sysctl::enable);
    let mut live = schedstat::Sampler::new(&mut src, sysctl.as_ref().is_some_and(|s| s.counting));
    let out = driver::run(&mut live, &mut sinks, &opts, None);
    // What went wrong on the way without ending the capture (the schedstat samples'), said
    // after the summary.
    let source_warnings = live.warnings().to_vec();
    drop(live);
    drop(sysctl);
    drop(sinks);
    drop(fold);
    // Only a failed write to the recording keeps its END chunk out: a dead terminal, a failed
    // drain or a signal end the capture, and the file is still finalised.
    let failed = rec.as_ref().is_some_and(record::RecordSink::failed);
    let outcome = workload.map(|w| w.finish(&cli.metrics));
    // Ctrl-C, SIGTERM and SIGHUP are the usual ways to stop; any other signal is named, as
    // it may come from a limit (SIGXFSZ, SIGXCPU) the user did not know was set.
    if let Some(sig) = signals::last().filter(|s| signals::for_child() != *s) {
        say!("wakeviz: stopped by {}", signals::name(sig));
    }
    // What is known only now goes into the END chunk and the report, as a closing batch.
    let mut closing = src.stats().cloned().unwrap_or_default();
    closing.capture_duration_ns = Some(u64::try_from(out.elapsed.as_nanos()).unwrap_or(u64::MAX));
    closing.workload = outcome.clone().map(Box::new);
    let closing = wakeviz_core::source::Batch {
        stats: Some(closing),
        ..Default::default()
    };
    if let (Some(r), false) = (rec.as_mut(), failed) {
        driver::Sink::on_batch(r, &closing)?;
    }
    if let Some(a) = analysis.as_mut() {
        a.on_batch(&closing);
    }
    let written = match (rec, &cli.record) {
        (Some(r), Some(p)) => Some((p.as_path(), r.finish()?)),
        _ => None,
    };
    // With `-- CMD`, the dashboard keeps the run's final figures until `q` (the recording is
    // finalised already); a stop by `q`, a signal or an error ends at once.
    if let (Some(d), Some(o)) = (dash.as_mut(), &outcome)
        && !d.app.quit
        && !signals::stop_requested()
        && out.error.is_none()
    {
        driver::Sink::on_batch(d, &closing)?;
        d.linger(command::ended(o))?;
    }
    // Terminal back first, so the summary and any error below are readable.
    drop(dash);
    let stats = src.stats().cloned().unwrap_or_default();
    let summary = record::Summary {
        per_kind: out.per_kind,
        events: out.events,
        elapsed: out.elapsed,
        stats: &stats,
        written,
    };
    say!("wakeviz: {}", summary.text());
    for w in &source_warnings {
        say!("wakeviz: warning: {w}");
    }
    if let Some(w) = budget_warning(analysis.as_ref().map_or(0, Analysis::evicted)) {
        say!("wakeviz: warning: {w}");
    }
    if cli.bpf_stats {
        signals::say_str(&probes::describe_run_stats(src.run_stats()));
    }
    if let Some(e) = out.error {
        let kept = cli.record.as_ref().map_or(String::new(), |p| {
            if failed {
                format!("; {} is valid up to its last complete chunk", p.display())
            } else {
                format!("; {} was finalised", p.display())
            }
        });
        return Err(e.context(format!("capture stopped{kept}")));
    }
    if let (Some(b), Some(p)) = (&beside, &cli.aggregate_beside) {
        b.write(p, src.header())?;
    }
    if let (Some(a), Some(fmt)) = (&analysis, cli.report) {
        print_report(a, fmt)?;
    }
    Ok(match &outcome {
        Some(w) => {
            say!("wakeviz: {}", workload_line(&argv, w));
            ExitCode::from(command::exit_status(w))
        }
        None => ExitCode::SUCCESS,
    })
}

/// `` `hackbench -g 1` exited 0 after 1.234 s: hackbench.time_s 0.061 s ``
fn workload_line(argv: &[String], w: &wakeviz_core::run::WorkloadOutcome) -> String {
    let figs: Vec<String> = w
        .metrics
        .iter()
        .map(|m| {
            format!("{} {} {}", m.name, m.value, m.unit)
                .trim_end()
                .to_string()
        })
        .collect();
    format!(
        "`{}` {} after {:.3} s{}",
        argv.join(" "),
        w.status_text(),
        w.duration_ns as f64 / 1e9,
        if figs.is_empty() {
            String::new()
        } else {
            format!(": {}", figs.join(", "))
        }
    )
}
