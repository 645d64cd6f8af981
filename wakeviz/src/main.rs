//! wakeviz: `sudo wakeviz` (live), `--record FILE`, `--replay FILE`, headless reports.
mod app;
mod capture;
mod cli;
mod meta;
mod probes;
mod record;
mod replay;
mod schedstat;
mod signals;
mod ui;
mod workload;

use std::{
    io::{IsTerminal as _, Write as _},
    ops::ControlFlow,
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

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let cli = Cli::parse();
    match run(&cli) {
        Ok(code) => code,
        Err(e) => {
            // One line, the whole chain: what failed and why.
            eprintln!("wakeviz: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: &Cli) -> anyhow::Result<ExitCode> {
    if let Some(Sub::Workload(w)) = &cli.workload {
        workload::run(w)?;
        return Ok(ExitCode::SUCCESS);
    }
    if cli.demo {
        return demo(cli);
    }
    if let Some(path) = &cli.replay {
        if dashboard_wanted(cli) {
            app::run::run_replay(path, || Ok(Box::new(ReplaySource::open(path)?)))?;
            return Ok(ExitCode::SUCCESS);
        }
        let mut src = ReplaySource::open(path)?;
        return replay_mode(cli, &mut src);
    }
    match live(cli) {
        Err(e) if offer_demo(cli, &e) => demo(cli),
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
    eprintln!("wakeviz: {e:#}");
    eprint!("wakeviz: replay the built-in demo recording instead? [Y/n] ");
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

fn demo(cli: &Cli) -> anyhow::Result<ExitCode> {
    if dashboard_wanted(cli) {
        app::run::run_replay(Path::new("demo.wvz"), || Ok(Box::new(demo_source()?)))?;
        return Ok(ExitCode::SUCCESS);
    }
    replay_mode(cli, &mut demo_source()?)
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

/// Prints to stdout; a reader that went away (`| head`) is not an error.
fn print_stdout(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}") {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing to stdout"),
    }
}

fn replay_mode(cli: &Cli, src: &mut dyn EventSource) -> anyhow::Result<ExitCode> {
    let warnings = if cli.dump.is_some() {
        replay::dump_jsonl(src)?
    } else if let Some(fmt) = cli.report {
        let mut a = Analysis::new(src.header());
        let w = replay::for_each_batch(src, |b| {
            a.on_batch(b);
            Ok(())
        })?;
        print_report(&a, fmt)?;
        w
    } else {
        let (per, w) = replay::count(src)?;
        print_stdout(&replay::counts_text(&per))?;
        w
    };
    for w in warnings {
        eprintln!("wakeviz: warning: {w}");
    }
    Ok(ExitCode::SUCCESS)
}

fn live(cli: &Cli) -> anyhow::Result<ExitCode> {
    if cli.dump.is_some() {
        anyhow::bail!("--dump reads a recording: use it with --replay FILE or --demo");
    }
    signals::install();
    let mb = cli.ringbuf_mb.clamp(1, 1024).next_power_of_two();
    let ringbuf_bytes = cli
        .ringbuf_bytes
        .map_or(mb << 20, |b| b.clamp(4096, 1 << 30).next_power_of_two());
    let cfg = probes::ProbeConfig {
        ringbuf_bytes,
        function_probes: !cli.no_function_probes,
        tracepoint_mode: cli.tracepoint_mode,
        bpf_stats: cli.bpf_stats,
    };
    let topo = meta::topology(cli.topology.as_deref())?;
    let probes = probes::load(&cfg)?;
    eprintln!("wakeviz: probes\n{}", probes::describe(&probes.status));
    for n in &probes.notes {
        eprintln!("wakeviz: note: {n}");
    }
    let header = meta::header(
        topo,
        probes.status.clone(),
        probes.scan_source,
        u64::from(cfg.ringbuf_bytes),
        probes.notes.clone(),
    );
    let mut src = capture::LiveSource::start(probes, header)?;
    let mut rec = match &cli.record {
        Some(p) => Some(record::recorder(p, &src, cli.redact_comm)?),
        None => None,
    };
    eprintln!(
        "wakeviz: capturing{}{}; Ctrl-C to stop",
        cli.record
            .as_ref()
            .map_or(String::new(), |p| format!(" to {}", p.display())),
        cli.duration
            .map_or(String::new(), |d| format!(" for {:.1} s", d.as_secs_f64()))
    );
    let mut dash = if dashboard_wanted(cli) {
        Some(app::run::Dashboard::live(&src, cli.record.as_deref())?)
    } else {
        None
    };
    // Headless report: the same fold the dashboard runs, printed at the end.
    let mut analysis = cli.report.map(|_| Analysis::new(src.header()));
    let schedstat = analysis.as_ref().map(|_| schedstat::Session::start());
    let out = record::run(&mut src, rec.as_mut(), cli.duration, cli.redact_comm, |b| {
        if let (Some(a), Some(b)) = (analysis.as_mut(), b) {
            a.on_batch(b);
        }
        dash.as_mut()
            .map_or(ControlFlow::Continue(()), |d| d.step(b))
    });
    if let (Some(a), Some(s)) = (analysis.as_mut(), schedstat) {
        s.finish(a);
    }
    // Terminal back first, so the summary and any error below are readable.
    let ui_result = dash.map_or(Ok(()), app::run::Dashboard::finish);
    let mut bytes = 0;
    if let (Some(r), Some(path)) = (rec, &cli.record) {
        if out.write_error.is_none() {
            let (_, b) = r
                .finish(&out.stats)
                .with_context(|| format!("finishing {}", path.display()))?;
            bytes = b;
        } else {
            bytes = r.bytes_written();
        }
    }
    let out = record::Outcome { bytes, ..out };
    ui_result?;
    eprintln!("wakeviz: {}", out.summary(cli.record.as_deref()));
    if cli.bpf_stats {
        eprint!("{}", probes::describe_run_stats(src.run_stats()));
    }
    if let (Some(a), Some(fmt)) = (&analysis, cli.report) {
        print_report(a, fmt)?;
    }
    if let Some(e) = &out.write_error {
        anyhow::bail!(
            "capture stopped: {e}; {} is valid up to its last complete chunk",
            cli.record
                .as_ref()
                .map_or("the recording".into(), |p| p.display().to_string())
        );
    }
    Ok(ExitCode::SUCCESS)
}
