//! The kernel's own wakeup counters in the event stream: `/proc/schedstat` sampled at the
//! start of a live run, every [`PERIOD`] and when the capture stops (before the probes
//! detach: detaching fentry programs waits for RCU-tasks grace periods, whose kthread wakeups
//! the kernel counts and detached probes cannot see). Each sample goes into the stream ahead
//! of the events read after it, so the recording keeps it and the analysis, live or on replay,
//! compares the counters' increase with the wakeups it saw in between.
//!
//! Where `kernel.sched_schedstats` is off and we are root it is switched on for the run
//! ([`Sysctl`]) and put back on every way out: the guard's drop, and the signal watchdog's and
//! the panic hook's forced exit. With the sysctl off and not switchable nothing is sampled:
//! counters that do not move would only disagree with everything.
use std::{
    io::Read as _,
    sync::{Mutex, PoisonError},
    time::{Duration, Instant},
};

use wakeviz_core::{
    event::SchedstatSample,
    format::{CaptureStats, Header},
    source::{Batch, EventSource, Poll, SourceError},
};

const SCHEDSTAT: &str = "/proc/schedstat";
const SYSCTL: &str = "/proc/sys/kernel/sched_schedstats";
/// Time between samples: the dashboard's comparison is this fresh.
pub const PERIOD: Duration = Duration::from_secs(2);
/// A sample larger than a recording chunk may hold is no kernel's (8192 CPUs with their
/// domains take a few MiB).
const MAX_TEXT: u64 = (wakeviz_core::format::chunk::MAX_RAW_LEN - 8) as u64;

/// The sysctl's value before the run, while it is switched on for the run.
static RESTORE: Mutex<Option<String>> = Mutex::new(None);

/// Puts `kernel.sched_schedstats` back as it was (once); false if that failed.
fn restore() -> bool {
    let taken = RESTORE
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    let Some(v) = taken else {
        return true;
    };
    match std::fs::write(SYSCTL, &v) {
        Ok(()) => true,
        Err(e) => {
            say!(
                "wakeviz: could not restore kernel.sched_schedstats ({e}); restore it by hand: echo {} > {SYSCTL}",
                v.trim()
            );
            false
        }
    }
}

/// `kernel.sched_schedstats` on for the run; restored when dropped.
pub struct Sysctl {
    /// Samples are worth taking: the counters run.
    pub counting: bool,
}

impl Sysctl {
    /// Switches the sysctl on where it is off (and we may). `counting` says whether the
    /// kernel's counters run now.
    pub fn enable() -> Self {
        let before = std::fs::read_to_string(SYSCTL).ok();
        let counting = match before.as_deref().map(str::trim) {
            Some("0") => {
                crate::signals::before_forced_exit(restore);
                *RESTORE.lock().unwrap_or_else(PoisonError::into_inner) = before.clone();
                let on = std::fs::write(SYSCTL, "1").is_ok()
                    && std::fs::read_to_string(SYSCTL).is_ok_and(|v| v.trim() == "1");
                if !on {
                    restore();
                }
                on
            }
            Some(_) => true,
            // Kernels before 4.6 count whenever CONFIG_SCHEDSTATS is set.
            None => std::path::Path::new(SCHEDSTAT).exists(),
        };
        Self { counting }
    }
}

impl Drop for Sysctl {
    fn drop(&mut self) {
        if !restore() {
            crate::features::mark_not_restored();
        }
    }
}

fn mono_ns() -> u64 {
    u64::try_from(super::meta::clock_ns(libc::CLOCK_MONOTONIC)).unwrap_or(0)
}

/// `/proc/schedstat` and the middle of the time it took to read (the probes' clock): the CPUs'
/// lines are read one after another, the middle splits the ambiguity evenly.
fn read() -> std::io::Result<SchedstatSample> {
    let t0 = mono_ns();
    let mut text = String::new();
    std::fs::File::open(SCHEDSTAT)?
        .take(MAX_TEXT + 1)
        .read_to_string(&mut text)?;
    let t1 = mono_ns();
    if text.len() as u64 > MAX_TEXT {
        return Err(std::io::Error::other(format!(
            "{SCHEDSTAT} is larger than {MAX_TEXT} bytes"
        )));
    }
    Ok(SchedstatSample {
        ts_ns: t0 + t1.saturating_sub(t0) / 2,
        text,
    })
}

/// The live source with `/proc/schedstat` samples put into its stream.
pub struct Sampler<'a> {
    src: &'a mut dyn EventSource,
    /// When the next sample is due; `None`: not sampling (off, failed or stopped).
    due: Option<Instant>,
    pending: Vec<SchedstatSample>,
    /// The source said `End` (held back while samples were pending).
    ended: bool,
    /// The sampler's own problems, and the source's followed by them.
    own: Vec<String>,
    warnings: Vec<String>,
}

impl<'a> Sampler<'a> {
    /// Samples from the first poll on when `on`.
    pub fn new(src: &'a mut dyn EventSource, on: bool) -> Self {
        let warnings = src.warnings().to_vec();
        Self {
            src,
            due: on.then(Instant::now),
            pending: Vec::new(),
            ended: false,
            own: Vec::new(),
            warnings,
        }
    }

    fn gather_warnings(&mut self) {
        let theirs = self.src.warnings();
        if self.warnings.len() != theirs.len() + self.own.len() {
            self.warnings = theirs.iter().chain(&self.own).cloned().collect();
        }
    }

    fn sample(&mut self) {
        match read() {
            // Another process (another wakeviz that switched it on for its own run, and now
            // restored it) may switch the counters off under us: a sample taken then would
            // compare counters that stopped with wakeviz's that did not.
            Ok(_) if std::fs::read_to_string(SYSCTL).is_ok_and(|v| v.trim() == "0") => {
                self.due = None;
                self.own.push(
                    "kernel.sched_schedstats was switched off during the run (by another process): the kernel's counters stopped, the schedstat comparison ends at the sample before"
                        .into(),
                );
            }
            Ok(s) => self.pending.push(s),
            Err(e) => {
                self.due = None;
                self.own
                    .push(format!("{SCHEDSTAT}: {e}; no more schedstat samples"));
            }
        }
    }

    /// The pending samples ahead of `b`'s own.
    fn prepend(&mut self, b: &mut Batch) {
        if !self.pending.is_empty() {
            let mut s = std::mem::take(&mut self.pending);
            s.append(&mut b.schedstat);
            b.schedstat = s;
        }
    }
}

impl EventSource for Sampler<'_> {
    fn header(&self) -> &Header {
        self.src.header()
    }

    fn poll(&mut self, timeout: Duration) -> Result<Poll, SourceError> {
        if let Some(d) = self.due
            && Instant::now() >= d
        {
            self.due = Some(d.max(Instant::now() - PERIOD) + PERIOD);
            self.sample();
        }
        if self.ended {
            return Ok(Poll::End);
        }
        let p = self.src.poll(timeout);
        self.gather_warnings();
        Ok(match p? {
            Poll::Batch(mut b) => {
                self.prepend(&mut b);
                Poll::Batch(b)
            }
            p @ (Poll::Pending | Poll::End) if !self.pending.is_empty() => {
                let mut b = Batch::default();
                self.prepend(&mut b);
                if matches!(p, Poll::End) {
                    // The source ended: nothing more to sample, and End comes next time.
                    self.due = None;
                    self.ended = true;
                }
                Poll::Batch(b)
            }
            other => other,
        })
    }

    fn warnings(&self) -> &[String] {
        &self.warnings
    }

    fn recycle(&mut self, batch: Batch) {
        self.src.recycle(batch);
    }

    fn stop(&mut self) {
        if self.due.take().is_some() {
            self.sample();
        }
        self.src.stop();
    }

    fn stats(&self) -> Option<&CaptureStats> {
        self.src.stats()
    }
}
