//! The live capture: the run builder's checks, the probes, the capture into the recording, the
//! report, the dashboard and `/metrics`, and `-- CMD`.
use std::process::ExitCode;

use wakeviz_core::{analysis::Analysis, source::EventSource as _};

use crate::{
    aggregate, analysis_header, capture,
    capture::{meta, schedstat},
    cli::Cli,
    command,
    dashboard::app,
    dashboard::ui,
    dashboard_wanted, driver, print_report, probes, signals,
    sinks::{record, serve},
};

use super::{replay::budget_warning, session};

/// The probes as the command line asks for them (ring sizes rounded to powers of two).
fn probe_config(cli: &Cli, topo: &wakeviz_core::topology::Topology) -> probes::ProbeConfig {
    let mb = cli
        .ringbuf_mb
        .unwrap_or(16)
        .clamp(1, 1024)
        .next_power_of_two();
    let ringbuf_bytes = cli
        .ringbuf_bytes
        .map_or(mb << 20, |b| b.clamp(4096, 1 << 30).next_power_of_two());
    probes::ProbeConfig {
        ringbuf_bytes,
        function_probes: !cli.no_function_probes,
        tracepoint_mode: cli.tracepoint_mode.unwrap_or(probes::TracepointMode::Auto),
        bpf_stats: cli.bpf_stats,
        rings: wakeviz_core::rings::RingPlan::new(topo, cli.rings.map(|n| n as usize)),
        batching: !cli.no_batch,
        scan_points: None,
    }
}

/// The idle-scan points for this kernel, or the line that says why there are none (`None`
/// when the user turned them off or no function probes are wanted).
fn scan_points(
    cli: &Cli,
) -> (
    Option<wakeviz_core::scan_points::ScanPoints>,
    Option<String>,
) {
    if cli.no_scan_points || cli.no_function_probes {
        return (None, None);
    }
    match probes::debuginfo::discover(cli.scan_points.as_deref()) {
        Ok(p) => (Some(p), None),
        Err(e) => (None, Some(format!("idle scan not measured: {e}"))),
    }
}

/// `capturing to F for 10.0 s while `CMD` runs; Ctrl-C to stop`.
fn capturing_line(cli: &Cli, argv: &[String]) -> String {
    format!(
        "capturing{}{}{}; Ctrl-C to stop",
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
    )
}

/// What the capture runs on, built before its first event: the session (the features it set
/// are restored when it drops), the source, the recording, the server and the maps beside.
/// Fields drop in this order: the source (the probes detach) before the server, and the
/// session last.
struct Started {
    rec: Option<record::RecordSink>,
    src: capture::LiveSource,
    argv: Vec<String>,
    beside: Option<aggregate::Beside>,
    server: Option<serve::Server>,
    session: session::Session,
}

/// How the capture ended: what the summary, the report and the exit code need.
struct Ended<'a> {
    out: driver::Outcome,
    source_warnings: Vec<String>,
    analysis: Option<Analysis>,
    failed: bool,
    outcome: Option<wakeviz_core::run::WorkloadOutcome>,
    written: Option<(&'a std::path::Path, record::Written)>,
}

pub(crate) fn live(cli: &Cli) -> anyhow::Result<ExitCode> {
    let mut run = start(cli)?;
    let ended = capture(cli, &mut run)?;
    conclude(cli, &run, ended)
}

/// The checks, the probes and the source; nothing is changed on the machine before every
/// check a mistake in the command line can fail has passed.
fn start(cli: &Cli) -> anyhow::Result<Started> {
    if cli.dump.is_some() {
        anyhow::bail!("--dump reads a recording: use it with --replay FILE or --demo");
    }
    // A points file the user named must be of this kernel: refused before anything starts.
    let (points, scan_note) = scan_points(cli);
    if cli.scan_points.is_some()
        && let Some(n) = &scan_note
    {
        anyhow::bail!("--scan-points: {n}");
    }
    let (mut session, topo) = session::Session::begin(cli)?;
    let mut cfg = probe_config(cli, &topo);
    cfg.scan_points = points;
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
    if probes.scan_source == wakeviz_core::format::ScanSource::SelectTaskRqFair {
        probes.notes.extend(scan_note);
    }
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
    header.scan_points = probes.scan_points.clone();
    header.comm_redacted = cli.redact_comm;
    if cli.redact_comm {
        header.hostname = meta::redact_host(&header.hostname);
    }
    header.run = session.run_meta(cli, command::default_label(cli.record.as_deref()));
    let argv = session.argv().to_vec();
    let src = capture::LiveSource::start(probes, header)?;
    let rec = match (file, &cli.record) {
        (Some(f), Some(p)) => Some(record::RecordSink::new(f, p, src.header())?),
        _ => None,
    };
    if let Some(s) = &server {
        say!(
            "wakeviz: serving OpenMetrics at http://{}/metrics",
            s.local_addr()
        );
    }
    say!("wakeviz: {}", capturing_line(cli, &argv));
    Ok(Started {
        rec,
        src,
        argv,
        beside,
        server,
        session,
    })
}

/// The capture itself: the dashboard, the workload, the one fold and the sinks, driven until
/// the end; then the closing batch and the recording finalised. The terminal is back when
/// this returns.
fn capture<'a>(cli: &'a Cli, run: &mut Started) -> anyhow::Result<Ended<'a>> {
    let mut dash = dashboard(cli, run)?;
    // The workload starts once the capture runs (its first wakeups are seen).
    let mut workload = match run.session.workload(cli, dash.is_none()) {
        Ok(w) => w,
        Err(e) => {
            drop(dash);
            run.rec = None;
            if let Some(p) = &cli.record {
                command::discard(p)?;
            }
            return Err(e.into());
        }
    };
    // The process folds the stream once: the dashboard's fold, else the report's (printed at
    // the end), else one of its own for `/metrics`; `/metrics` publishes that fold.
    let mut analysis = (cli.report.is_some() || (run.server.is_some() && dash.is_none()))
        .then(|| Analysis::new(&analysis_header(run.src.header(), cli)));
    let opts = driver::Options {
        deadline: cli.duration,
        redact: cli.redact_comm,
    };
    if let (Some(s), Some(d)) = (&run.server, dash.as_mut()) {
        d.publish_to(s.publisher(d.run_snapshot()));
    }
    let mut fold = analysis.as_mut().map(|a| serve::Fold {
        publisher: run.server.as_ref().map(|s| s.publisher(a.snapshot())),
        analysis: a,
    });
    let mut sinks: Vec<&mut dyn driver::Sink> = Vec::new();
    if let Some(r) = run.rec.as_mut() {
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
    let counting = sysctl.as_ref().is_some_and(|s| s.counting);
    let mut live = schedstat::Sampler::new(&mut run.src, counting);
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
    let failed = run.rec.as_ref().is_some_and(record::RecordSink::failed);
    let outcome = workload.map(|w| w.finish(&cli.metrics));
    // Ctrl-C, SIGTERM and SIGHUP are the usual ways to stop; any other signal is named, as
    // it may come from a limit (SIGXFSZ, SIGXCPU) the user did not know was set.
    if let Some(sig) = signals::last().filter(|s| signals::for_child() != *s) {
        say!("wakeviz: stopped by {}", signals::name(sig));
    }
    let closing = closing_batch(run, out.elapsed, outcome.as_ref());
    if let (Some(r), false) = (run.rec.as_mut(), failed) {
        driver::Sink::on_batch(r, &closing)?;
    }
    if let Some(a) = analysis.as_mut() {
        a.on_batch(&closing);
    }
    let written = match (run.rec.take(), &cli.record) {
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
    // Terminal back first, so the summary and any error after it are readable.
    drop(dash);
    Ok(Ended {
        out,
        source_warnings,
        analysis,
        failed,
        outcome,
        written,
    })
}

/// The dashboard, when one is wanted (a terminal and no `--headless`).
fn dashboard(cli: &Cli, run: &Started) -> anyhow::Result<Option<ui::run::Dashboard>> {
    if !dashboard_wanted(cli) {
        return Ok(None);
    }
    let app = app::App::new(
        &analysis_header(run.src.header(), cli),
        app::SourceKind::Live {
            recording: cli.record.clone(),
        },
    );
    Ok(Some(ui::run::Dashboard::new(app, cli.refresh)?))
}

/// What is known only at the end (the capture's counters and duration, the workload's
/// outcome), for the recording's END chunk and the report.
fn closing_batch(
    run: &Started,
    elapsed: std::time::Duration,
    outcome: Option<&wakeviz_core::run::WorkloadOutcome>,
) -> wakeviz_core::source::Batch {
    let mut closing = run.src.stats().cloned().unwrap_or_default();
    closing.capture_duration_ns = Some(u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX));
    closing.workload = outcome.cloned().map(Box::new);
    wakeviz_core::source::Batch {
        stats: Some(closing),
        ..Default::default()
    }
}

/// The summary, the warnings, the capture's error if it had one, the maps beside, the report
/// and the exit code.
fn conclude(cli: &Cli, run: &Started, e: Ended<'_>) -> anyhow::Result<ExitCode> {
    let stats = run.src.stats().cloned().unwrap_or_default();
    let summary = record::Summary {
        per_kind: e.out.per_kind,
        events: e.out.events,
        elapsed: e.out.elapsed,
        stats: &stats,
        written: e.written,
    };
    say!("wakeviz: {}", summary.text());
    for w in &e.source_warnings {
        say!("wakeviz: warning: {w}");
    }
    if let Some(w) = budget_warning(e.analysis.as_ref().map_or(0, Analysis::evicted)) {
        say!("wakeviz: warning: {w}");
    }
    if cli.bpf_stats {
        signals::say_str(&probes::describe_run_stats(run.src.run_stats()));
    }
    if let Some(err) = e.out.error {
        let kept = cli.record.as_ref().map_or(String::new(), |p| {
            if e.failed {
                format!("; {} is valid up to its last complete chunk", p.display())
            } else {
                format!("; {} was finalised", p.display())
            }
        });
        return Err(err.context(format!("capture stopped{kept}")));
    }
    if let (Some(b), Some(p)) = (&run.beside, &cli.aggregate_beside) {
        b.write(p, run.src.header())?;
    }
    if let (Some(a), Some(fmt)) = (&e.analysis, cli.report) {
        print_report(a, fmt)?;
    }
    Ok(match &e.outcome {
        Some(w) => {
            say!("wakeviz: {}", workload_line(&run.argv, w));
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
