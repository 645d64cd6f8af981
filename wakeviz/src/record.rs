//! `--record FILE` without a terminal UI: capture, stream to disk, print the figures at the end.
use std::{
    fs::{File, OpenOptions},
    ops::ControlFlow,
    os::unix::fs::OpenOptionsExt as _,
    path::Path,
    time::{Duration, Instant},
};

use anyhow::Context as _;
use wakeviz_core::{
    event::Kind,
    format::{CaptureStats, Recorder, RecorderConfig},
    source::{Batch, EventSource, Poll},
};

use crate::{capture::LiveSource, signals};

/// Creates the recording with mode 0600: task names can be sensitive.
pub fn create_file(path: &Path) -> anyhow::Result<File> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))
}

/// What a capture did, for the closing summary.
#[derive(Debug, Default)]
pub struct Outcome {
    pub per_kind: [u64; 6],
    pub events: u64,
    pub elapsed: Duration,
    pub bytes: u64,
    pub stats: CaptureStats,
    pub write_error: Option<String>,
}

impl Outcome {
    pub fn summary(&self, path: Option<&Path>) -> String {
        let secs = self.elapsed.as_secs_f64().max(1e-9);
        let mut s = format!(
            "captured {} events in {:.1} s ({:.0} events/s)",
            self.events,
            secs,
            self.events as f64 / secs
        );
        for k in Kind::ALL {
            s.push_str(&format!(
                "\n  {:<20} {}",
                k.name(),
                self.per_kind[k.index()]
            ));
        }
        s.push_str(&format!(
            "\n  drops: {} in the kernel (ring buffer full), {} in userspace (consumer behind)",
            self.stats.kernel_drops, self.stats.user_drops
        ));
        s.push_str(&format!(
            "\n  missed: {} probe runs skipped by the kernel (BPF programs do not nest, e.g. an interrupt waking a task while a probe ran)",
            self.stats.probe_misses
        ));
        let offered: u64 = self.stats.offered.iter().sum();
        s.push_str(&format!(
            "\n  accounting: offered {offered} = delivered {} + dropped {} + undecodable {}",
            self.events,
            self.stats.drops(),
            self.stats.decode_errors
        ));
        if let Some(p) = path {
            s.push_str(&format!(
                "\n  wrote {} bytes to {} ({:.2} bytes/event)",
                self.bytes,
                p.display(),
                self.bytes as f64 / self.events.max(1) as f64
            ));
        }
        s
    }
}

/// Feeds every batch to `on_batch` (`Some`; `None` on an idle poll, so a dashboard can redraw
/// and read keys) and, when recording, to the recorder; stops at the deadline, on
/// SIGINT/SIGTERM, when `on_batch` says `Break` (the dashboard's `q`), or on a write error
/// (keeping what was written valid).
pub fn run(
    src: &mut LiveSource,
    mut rec: Option<&mut Recorder<File>>,
    duration: Option<Duration>,
    redact: bool,
    mut on_batch: impl FnMut(Option<&Batch>) -> ControlFlow<()>,
) -> Outcome {
    let start = Instant::now();
    let mut out = Outcome::default();
    let mut stopping = false;
    loop {
        if !stopping
            && (signals::stop_requested() || duration.is_some_and(|d| start.elapsed() >= d))
        {
            src.stop();
            stopping = true;
        }
        let batch = match src.poll(Duration::from_millis(50)) {
            Ok(Poll::Batch(b)) => b,
            Ok(Poll::Pending) => {
                tick(&mut rec, &mut out, src);
                if on_batch(None).is_break() && !stopping {
                    src.stop();
                    stopping = true;
                }
                continue;
            }
            Ok(Poll::End) => break,
            Err(e) => {
                out.write_error = Some(e.to_string());
                break;
            }
        };
        let mut batch = batch;
        if redact {
            for t in &mut batch.tasks {
                t.comm = t.comm.redacted();
            }
        }
        for e in &batch.events {
            out.per_kind[e.kind().index()] += 1;
        }
        out.events += batch.events.len() as u64;
        if let Some(s) = &batch.stats {
            out.stats = s.clone();
        }
        if on_batch(Some(&batch)).is_break() && !stopping {
            src.stop();
            stopping = true;
        }
        if let Some(r) = rec.as_deref_mut()
            && out.write_error.is_none()
        {
            for t in &batch.tasks {
                r.learn_task(*t);
            }
            let res = batch.events.iter().try_for_each(|e| r.push(e));
            if let Err(e) = res {
                out.write_error = Some(e.to_string());
                src.stop();
                stopping = true;
            }
        }
        tick(&mut rec, &mut out, src);
    }
    out.elapsed = start.elapsed();
    out.stats.delivered = out.events;
    out
}

fn tick(rec: &mut Option<&mut Recorder<File>>, out: &mut Outcome, src: &LiveSource) {
    if let Some(r) = rec.as_deref_mut()
        && out.write_error.is_none()
    {
        let mut s = src.stats().clone();
        s.delivered = out.events;
        r.set_stats(&s);
        if let Err(e) = r.tick() {
            out.write_error = Some(e.to_string());
        }
    }
}

/// Opens the recorder for `path` with the capture's header.
pub fn recorder(path: &Path, src: &LiveSource, redact: bool) -> anyhow::Result<Recorder<File>> {
    let f = create_file(path)?;
    let mut h = src.header().clone();
    h.comm_redacted = redact;
    Recorder::new(f, &h, RecorderConfig::default())
        .with_context(|| format!("writing the header of {}", path.display()))
}
