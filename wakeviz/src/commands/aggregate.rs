//! The in-kernel aggregate mode (`--serve` without `--record` and without the dashboard, or
//! the hidden `--aggregate`): the kernel counts placements and latencies in per-CPU maps and
//! nothing streams; the counters are read on demand and turned into the same `Snapshot` the
//! streaming analysis produces (`wakeviz_core::analysis::aggregate`).
use std::{
    io::Write as _,
    path::Path,
    process::ExitCode,
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::Context as _;
use wakeviz_core::{
    analysis::{Snapshot, aggregate, report},
    format::{Header, ScanSource},
    source::{EventSource, Poll, SourceError},
};

use super::session::Session;
use crate::{
    capture::meta,
    cli::{Cli, ReportFormat},
    command, driver,
    probes::{
        self, Probes,
        aggregate::{AggregateProbes, Reader},
    },
};

/// How often a running aggregate publishes a fresh snapshot.
const PUBLISH_EVERY: Duration = Duration::from_secs(1);

/// True when this invocation runs the aggregate mode instead of streaming.
pub fn wanted(cli: &Cli, dashboard: bool) -> bool {
    cli.aggregate
        || (cli.serve.is_some()
            && cli.record.is_none()
            && !dashboard
            && cli.aggregate_beside.is_none()
            && cli.report.is_none()
            // In-kernel counters cannot tell tasks apart: a scope needs the event stream.
            && cli.scope.as_ref().is_none_or(|s| s.0.is_none()))
}

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    u64::try_from(ts.tv_sec * 1_000_000_000 + ts.tv_nsec).unwrap_or(0)
}

/// The longest a source without events sleeps: how soon a stop signal, the deadline or
/// CMD's exit is seen, and the capture's only wakeups between two publications.
const QUIET_TURN: Duration = Duration::from_millis(500);

/// A source without events: the driver's loop (deadline, signals, `-- CMD`) around a kernel
/// that counts by itself.
struct Quiet {
    header: Header,
    stopped: bool,
}

impl EventSource for Quiet {
    fn header(&self) -> &Header {
        &self.header
    }

    fn poll(&mut self, timeout: Duration) -> Result<Poll, SourceError> {
        if self.stopped {
            return Ok(Poll::End);
        }
        std::thread::sleep(timeout.min(QUIET_TURN));
        Ok(Poll::Pending)
    }

    fn warnings(&self) -> &[String] {
        &[]
    }

    fn stop(&mut self) {
        self.stopped = true;
    }
}

fn snapshot(probes: &AggregateProbes, header: &Header) -> anyhow::Result<Snapshot> {
    let k = probes.read().context("reading the aggregate maps")?;
    Ok(aggregate::snapshot(header, &k, monotonic_ns()))
}

/// Publishes a snapshot every [`PUBLISH_EVERY`] while the run lasts.
struct Publisher<'a> {
    publish: &'a mut dyn FnMut(Arc<Snapshot>),
    last: Instant,
    probes: &'a AggregateProbes,
    header: Header,
}

impl driver::Sink for Publisher<'_> {
    fn turn_every(&self) -> Option<Duration> {
        Some(PUBLISH_EVERY.saturating_sub(self.last.elapsed()))
    }

    fn on_batch(&mut self, _b: &wakeviz_core::source::Batch) -> anyhow::Result<()> {
        Ok(())
    }

    fn on_turn(
        &mut self,
        _src: &dyn EventSource,
        _t: driver::Turn,
    ) -> anyhow::Result<driver::Flow> {
        if self.last.elapsed() >= PUBLISH_EVERY {
            self.last = Instant::now();
            (self.publish)(Arc::new(snapshot(self.probes, &self.header)?));
        }
        Ok(driver::Flow::Continue)
    }
}

/// Runs the aggregate mode to its end (Ctrl-C, `--duration`, CMD's exit), handing `publish`
/// a snapshot every second and at the end; with `--report`, prints the final one.
pub fn run(cli: &Cli, publish: &mut dyn FnMut(Arc<Snapshot>)) -> anyhow::Result<ExitCode> {
    if let Some(f) = cli.scope.as_ref().and_then(|s| s.0.as_ref()) {
        anyhow::bail!(
            "--scope {f}: the in-kernel aggregate counts every task; drop --aggregate to capture the event stream, which can be scoped"
        );
    }
    crate::capture::pace::relax_timers();
    let (mut session, topo) = Session::begin(cli)?;
    session.set_features(cli)?;
    let probes = AggregateProbes::load(&topo, cli.bpf_stats)?;
    say!(
        "wakeviz: probes (in-kernel aggregate mode)\n{}",
        probes::describe(&probes.status)
    );
    let mut notes = probes.notes.clone();
    notes.push(aggregate::NOTE.into());
    let mut header = meta::header(topo, probes.status.clone(), ScanSource::None, 0, notes);
    header.run = session.run_meta(cli, None);
    header.run.scope = None;
    let mut src = Quiet {
        header: header.clone(),
        stopped: false,
    };
    // A first snapshot before the "capturing" line: a scrape from then on has figures.
    publish(Arc::new(snapshot(&probes, &header)?));
    say!(
        "wakeviz: capturing in-kernel aggregates (no event stream){}; Ctrl-C to stop",
        cli.duration
            .map_or(String::new(), |d| format!(" for {:.1} s", d.as_secs_f64()))
    );
    let mut workload = session.workload(cli, true)?;
    let opts = driver::Options {
        deadline: cli.duration,
        redact: false,
    };
    let out = {
        let mut publisher = Publisher {
            publish: &mut *publish,
            last: Instant::now(),
            probes: &probes,
            header: header.clone(),
        };
        let mut sinks: Vec<&mut dyn driver::Sink> = vec![&mut publisher];
        let mut supervisor = workload
            .as_mut()
            .map(|w| command::Supervisor { workload: w });
        if let Some(s) = supervisor.as_mut() {
            sinks.push(s);
        }
        driver::run(&mut src, &mut sinks, &opts, None)
    };
    let outcome = workload.map(|w| w.finish(&cli.metrics));
    let mut snap = snapshot(&probes, &header)?;
    snap.recording.capture_duration_ns =
        Some(u64::try_from(out.elapsed.as_nanos()).unwrap_or(u64::MAX));
    snap.recording.workload.clone_from(&outcome);
    publish(Arc::new(snap.clone()));
    say!(
        "wakeviz: aggregated {} wakeups ({} new tasks) from {} tracepoint hits in {:.1} s; no ring-buffer traffic",
        snap.placement.wakeups.count,
        snap.placement.new_tasks.count,
        snap.events.total(),
        out.elapsed.as_secs_f64()
    );
    if cli.bpf_stats {
        crate::signals::say_str(&probes::describe_run_stats(&probes.run_stats()));
    }
    if let Some(e) = out.error {
        return Err(e.context("aggregate run stopped"));
    }
    if let Some(fmt) = cli.report {
        print(&snap, fmt)?;
    }
    Ok(outcome.map_or(ExitCode::SUCCESS, |w| {
        ExitCode::from(command::exit_status(&w))
    }))
}

fn print(s: &Snapshot, fmt: ReportFormat) -> anyhow::Result<()> {
    let text = match fmt {
        ReportFormat::Text => report::text(s),
        ReportFormat::Json => serde_json::to_string_pretty(&report::json(s))?,
    };
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}") {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing to stdout"),
    }
}

/// `--aggregate-beside FILE` (tests): the aggregate programs attached next to a streaming
/// capture in the same object, so both count the very same tracepoint hits.
pub struct Beside {
    reader: Reader,
}

impl Beside {
    /// The kernel's BTF, parsed before the streaming probes attach: parsing takes tens of
    /// milliseconds, whose events would otherwise reach the stream only.
    pub fn btf() -> Option<aya::Btf> {
        aya::Btf::from_sys_fs().ok()
    }

    pub fn attach(
        p: &mut Probes,
        btf: Option<&aya::Btf>,
        topo: &wakeviz_core::topology::Topology,
    ) -> anyhow::Result<Self> {
        let (status, reader) = probes::aggregate::attach(&mut p.ebpf, btf, topo)?;
        say!(
            "wakeviz: aggregate programs beside the stream\n{}",
            probes::describe(&status)
        );
        Ok(Self { reader })
    }

    /// Writes the aggregate's snapshot as `--report json` would print it.
    pub fn write(&self, path: &Path, header: &Header) -> anyhow::Result<()> {
        let k = self.reader.read(0).context("reading the aggregate maps")?;
        let snap = aggregate::snapshot(header, &k, monotonic_ns());
        let text = serde_json::to_string_pretty(&report::json(&snap))?;
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
    }
}
