//! The kernel's own wakeup counters around a live run: `/proc/schedstat` read at the start and
//! at the end, compared with wakeviz's counts by the analysis. Where `kernel.sched_schedstats`
//! is off and we are root, it is switched on for the run and restored afterwards.
//!
//! The probes see events from their attach, the kernel counts only once the sysctl is on: the
//! analysis counts from the start snapshot's time on ([`Analysis::count_wakeups_from`]), or the
//! probe-loading time (a few seconds under emulation, with its timer and child-exit wakeups)
//! would be wakeviz's alone. The end snapshot is taken when the capture is stopped, before the
//! probes detach ([`Bracket`]): detaching the fentry programs waits for RCU-tasks grace
//! periods, whose kthread wakeups the kernel counts and detached probes cannot see.
use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use wakeviz_core::{
    analysis::Analysis,
    format::{CaptureStats, Header},
    source::{Batch, EventSource, Poll, SourceError},
};

const SCHEDSTAT: &str = "/proc/schedstat";
const SYSCTL: &str = "/proc/sys/kernel/sched_schedstats";

pub struct Session {
    start: Option<String>,
    end: Option<String>,
    /// The analysis's end of counting, set with the end snapshot.
    end_ns: Arc<AtomicU64>,
    restore: Option<String>,
}

impl Session {
    /// Takes the start snapshot and starts the analysis's counts at its time.
    pub fn start(a: &mut Analysis) -> Self {
        let before = std::fs::read_to_string(SYSCTL).ok();
        let restore = match before.as_deref().map(str::trim) {
            Some("0") if std::fs::write(SYSCTL, "1").is_ok() => before,
            _ => None,
        };
        let (start, t) = read_timed();
        a.count_wakeups_from(t);
        Self {
            start,
            end: None,
            end_ns: a.wakeup_count_end(),
            restore,
        }
    }

    /// The end snapshot, once (the first stop is the end of wakeviz's window).
    fn mark_end(&mut self) {
        if self.end.is_none() {
            let (end, t) = read_timed();
            self.end = end;
            self.end_ns.store(t, Ordering::Relaxed);
        }
    }

    /// Takes the end snapshot unless the stop took it, hands both to the analysis and
    /// restores the sysctl.
    pub fn finish(mut self, a: &mut Analysis) {
        self.mark_end();
        let end = self.end;
        if let Some(v) = &self.restore {
            let _ = std::fs::write(SYSCTL, v);
        }
        if let (Some(s), Some(e)) = (self.start, end)
            && let Err(err) = a.compare_schedstat(&s, &e)
        {
            say!("wakeviz: note: schedstat cross-check skipped: {err}");
        }
    }
}

fn mono_ns() -> u64 {
    u64::try_from(crate::meta::clock_ns(libc::CLOCK_MONOTONIC)).unwrap_or(0)
}

/// `/proc/schedstat` and the middle of the time it took to read (the probes' clock): the CPUs'
/// lines are read one after another, the middle splits the ambiguity evenly.
fn read_timed() -> (Option<String>, u64) {
    let t0 = mono_ns();
    let text = std::fs::read_to_string(SCHEDSTAT).ok();
    let t1 = mono_ns();
    (text, t0 + (t1.saturating_sub(t0)) / 2)
}

/// The live source with the end snapshot taken in `stop`, just before it detaches the probes.
pub struct Bracket<'a> {
    pub src: &'a mut dyn EventSource,
    pub session: Option<&'a mut Session>,
}

impl EventSource for Bracket<'_> {
    fn header(&self) -> &Header {
        self.src.header()
    }

    fn poll(&mut self, timeout: Duration) -> Result<Poll, SourceError> {
        self.src.poll(timeout)
    }

    fn warnings(&self) -> &[String] {
        self.src.warnings()
    }

    fn recycle(&mut self, batch: Batch) {
        self.src.recycle(batch);
    }

    fn stop(&mut self) {
        if let Some(s) = self.session.as_deref_mut() {
            s.mark_end();
        }
        self.src.stop();
    }

    fn stats(&self) -> Option<&CaptureStats> {
        self.src.stats()
    }
}
