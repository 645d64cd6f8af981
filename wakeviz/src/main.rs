//! wakeviz: `sudo wakeviz` (live), `--record FILE`, `--replay FILE`, headless reports.
mod capture;
mod cli;
mod meta;
mod probes;
mod record;
mod replay;
mod signals;
mod workload;

use std::process::ExitCode;

use anyhow::Context as _;
use clap::Parser as _;
use wakeviz_core::source::{EventSource, ReplaySource};

use crate::cli::{Cli, Sub};

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
    if let Some(path) = &cli.replay {
        let mut src = ReplaySource::open(path)?;
        return replay_mode(cli, &mut src);
    }
    live(cli)
}

fn replay_mode(cli: &Cli, src: &mut dyn EventSource) -> anyhow::Result<ExitCode> {
    let warnings = if cli.dump.is_some() {
        replay::dump_jsonl(src)?
    } else {
        let (per, w) = replay::count(src)?;
        println!("{}", replay::counts_text(&per));
        w
    };
    for w in warnings {
        eprintln!("wakeviz: warning: {w}");
    }
    Ok(ExitCode::SUCCESS)
}

fn live(cli: &Cli) -> anyhow::Result<ExitCode> {
    signals::install();
    let mb = cli.ringbuf_mb.clamp(1, 1024).next_power_of_two();
    let cfg = probes::ProbeConfig {
        ringbuf_bytes: mb << 20,
        function_probes: !cli.no_function_probes,
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
    let out = record::run(&mut src, rec.as_mut(), cli.duration, cli.redact_comm, |_| {});
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
    eprintln!("wakeviz: {}", out.summary(cli.record.as_deref()));
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
