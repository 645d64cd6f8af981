//! wakeviz: `sudo wakeviz` (live), `--record FILE`, `--replay FILE`, headless reports. The
//! binary (`main.rs`) calls [`main`]; the dashboard's modules are public for its benchmark.
// First, so that its `say!` is in scope in every module below.
#[macro_use]
pub mod signals;

mod capture;
mod cli;
mod command;
mod commands;
use commands::{aggregate, diff, experiment, generate, live::live, replay::replay, workload};
use sinks::serve;
pub mod dashboard;
pub mod driver;
mod features;
mod probes;
pub mod sinks;

use std::{
    io::{IsTerminal as _, Write as _},
    process::ExitCode,
};

use anyhow::Context as _;
use clap::Parser as _;
use std::path::Path;

use wakeviz_core::{analysis::Analysis, source::ReplaySource};

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

#[cfg(feature = "export")]
fn run_export(x: &cli::ExportArgs) -> anyhow::Result<ExitCode> {
    sinks::export::run(x)
}

/// The command line is the same in every build (so `--help` and the man page are), and a build
/// without the exporters says how to get them.
#[cfg(not(feature = "export"))]
fn run_export(_: &cli::ExportArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!(
        "this build has no exporters: build with `cargo build --release -p wakeviz --features export` (scripts/run.sh does when the command is `export`)"
    )
}

fn run(cli: &Cli) -> anyhow::Result<ExitCode> {
    if let Some(what) = cli.generate {
        generate::run(what)?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(Sub::Workload(w)) = &cli.workload {
        return workload::run(w);
    }
    if let Some(Sub::Diff(d)) = &cli.workload {
        return diff::run(d);
    }
    if let Some(Sub::Export(x)) = &cli.workload {
        return run_export(x);
    }
    if let Some(Sub::Experiment(x)) = &cli.workload {
        return experiment::run(x);
    }
    if let Some(Sub::ScanPoints(a)) = &cli.workload {
        return commands::scan_points::run(a);
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
            Ok(Box::new(commands::replay::demo_source()?))
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
            Ok(Box::new(commands::replay::demo_source()?))
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

/// The terminal UI, unless asked for text output or not on a terminal.
pub(crate) fn dashboard_wanted(cli: &Cli) -> bool {
    !cli.headless && cli.dump.is_none() && cli.report.is_none() && std::io::stdout().is_terminal()
}

pub(crate) fn print_report(a: &Analysis, fmt: ReportFormat) -> anyhow::Result<()> {
    let text = match fmt {
        ReportFormat::Text => a.report_text(),
        ReportFormat::Json => serde_json::to_string_pretty(&a.report_json())?,
    };
    print_stdout(&text)
}

/// The header the analyses fold with: the recording's, with `--include-self` and `--scope`
/// applied (the reader's choices, never recorded).
pub(crate) fn analysis_header(
    h: &wakeviz_core::format::Header,
    cli: &Cli,
) -> wakeviz_core::format::Header {
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
pub(crate) fn print_stdout(text: &str) -> anyhow::Result<()> {
    let text = wakeviz_core::safe_text::escape(text);
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}") {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing to stdout"),
    }
}
