//! The one driver: a single loop takes any [`EventSource`] (live capture or a recording) and
//! feeds every [`Sink`] (analysis, recorder, dashboard) the same batches, so live and replay run
//! the same code from the source to the screen.
//!
//! Stops, in this order of precedence: a sink error (a full disk: the capture stops at once),
//! a source error (a failed drain: a clear error, what was recorded stays valid), SIGINT /
//! SIGTERM / SIGHUP or the deadline or a sink asking to stop (the source is told to stop and
//! drained: live capture detaches its probes and delivers what is still in the ring buffer).
use std::time::{Duration, Instant};

use anyhow::Context as _;
use wakeviz_core::{
    event::PerKind,
    source::{Batch, EventSource, Poll},
};

use crate::signals;

/// How long a poll of a live source waits for a batch before the sinks get an idle turn, when
/// no sink asks for turns more often ([`Sink::turn_every`]): the source wakes the loop for
/// what it delivers, so a headless capture of an idle machine turns about as often as its
/// capture does and no more.
const IDLE_POLL: Duration = Duration::from_secs(1);

/// Exit status of a run that finished but met damage (a cut-short or corrupt recording: the
/// figures cover the intact chunks only). See docs/reference/exit-codes.md.
pub const EXIT_DAMAGED: u8 = 3;

/// Says each of a finished run's warnings; its exit status: [`EXIT_DAMAGED`] if there was one.
pub fn warned_exit(warnings: &[String]) -> std::process::ExitCode {
    for w in warnings {
        say!("wakeviz: warning: {w}");
    }
    if warnings.is_empty() {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::from(EXIT_DAMAGED)
    }
}

/// What a sink wants after a turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    /// End the run (the dashboard's `q`): the source is stopped and drained.
    Stop,
    /// Start over from the beginning of the stream (a backward seek in a replay).
    Restart,
}

/// The state of the loop, as the sinks see it once per turn.
#[derive(Clone, Copy, Debug)]
pub struct Turn {
    /// Nothing was delivered this turn: a sink that draws may wait for keys now.
    pub idle: bool,
    /// The source has ended (a replay stays on screen until `q`).
    pub ended: bool,
}

pub trait Sink {
    /// Every batch, in stream order; an error stops the run at once.
    fn on_batch(&mut self, b: &Batch) -> anyhow::Result<()>;
    /// The longest the sink may go without a turn (the dashboard reads its keys in its turns).
    fn turn_every(&self) -> Option<Duration> {
        None
    }
    /// Once per loop turn, after a batch or an idle poll.
    fn on_turn(&mut self, _src: &dyn EventSource, _t: Turn) -> anyhow::Result<Flow> {
        Ok(Flow::Continue)
    }
    /// Pacing: the latest stream time (ns) this sink wants delivered now, given the time of the
    /// next event waiting; `None` takes everything. Only the replay dashboard paces.
    fn limit_ns(&mut self, _next_ts_ns: u64) -> Option<u64> {
        None
    }
    /// The source was reopened at its start: forget everything folded so far.
    fn restart(&mut self) {}
    /// Keep turning after the source ended (a replay dashboard stays until `q`).
    fn stays_after_end(&self) -> bool {
        false
    }
}

/// Opens the stream again from its start (replay seeks backwards by re-folding).
pub type Reopen<'a> = dyn FnMut() -> anyhow::Result<Box<dyn EventSource>> + 'a;

#[derive(Debug, Default)]
pub struct Options {
    /// Stop after this long (live `--duration`).
    pub deadline: Option<Duration>,
    /// Replace task names by their stable hashes before any sink sees them.
    pub redact: bool,
}

/// What the run delivered, for the closing summary.
#[derive(Debug, Default)]
pub struct Outcome {
    pub per_kind: PerKind<u64>,
    pub events: u64,
    pub elapsed: Duration,
    /// Why the run ended early, if it did: the first sink or source error.
    pub error: Option<anyhow::Error>,
}

/// Runs `src` to its end (or a stop) through `sinks`. Errors end the run and are returned in
/// [`Outcome::error`], so the caller can still finalise what it owns (the recording).
pub fn run(
    first: &mut dyn EventSource,
    sinks: &mut [&mut dyn Sink],
    opts: &Options,
    mut reopen: Option<&mut Reopen<'_>>,
) -> Outcome {
    let start = Instant::now();
    let mut out = Outcome::default();
    let mut stopping = false;
    let mut ended = false;
    let mut held: Option<Batch> = None;
    // After a restart the stream comes from a reopened source.
    let mut reopened: Option<Box<dyn EventSource>> = None;
    loop {
        let src: &mut dyn EventSource = match reopened.as_mut() {
            Some(b) => b.as_mut(),
            None => &mut *first,
        };
        if !stopping
            && (signals::stop_requested() || opts.deadline.is_some_and(|d| start.elapsed() >= d))
        {
            src.stop();
            stopping = true;
        }
        if held.is_none() && !ended {
            let every = sinks
                .iter()
                .filter_map(|s| s.turn_every())
                .fold(IDLE_POLL, Duration::min);
            let left = opts
                .deadline
                .map_or(every, |d| d.saturating_sub(start.elapsed()));
            match src.poll(every.min(left)) {
                Ok(Poll::Batch(b)) => held = Some(b),
                Ok(Poll::Pending) => {}
                Ok(Poll::End) => ended = true,
                Err(e) => {
                    out.error = Some(anyhow::Error::new(e).context("the event stream failed"));
                    src.stop();
                    break;
                }
            }
        }
        let mut idle = true;
        if let Some(b) = held.take() {
            // Once stopping, what is held back is delivered at once (a paused replay must
            // not keep a stopped run alive).
            let (mut now, rest) = if stopping { (b, None) } else { pace(b, sinks) };
            held = rest;
            if opts.redact {
                for t in &mut now.tasks {
                    t.comm = t.comm.redacted();
                }
            }
            if now != Batch::default() {
                idle = false;
                for e in &now.events {
                    out.per_kind[e.kind()] += 1;
                }
                out.events += now.events.len() as u64;
                if let Err(e) = sinks.iter_mut().try_for_each(|s| s.on_batch(&now)) {
                    out.error = Some(e);
                    src.stop();
                    break;
                }
            }
            // Every sink is done with it: a replay decodes its next chunk over it.
            src.recycle(now);
        }
        // A batch held back by pacing is not "ended" yet.
        let turn = Turn {
            idle,
            ended: ended && held.is_none(),
        };
        let mut flow = Flow::Continue;
        for s in sinks.iter_mut() {
            match s.on_turn(&*src, turn) {
                Ok(Flow::Continue) => {}
                Ok(f) => flow = f,
                Err(e) => {
                    out.error = Some(e);
                    break;
                }
            }
        }
        if out.error.is_some() {
            src.stop();
            break;
        }
        match flow {
            Flow::Continue => {}
            Flow::Stop if !stopping => {
                src.stop();
                stopping = true;
            }
            Flow::Stop => {}
            Flow::Restart => {
                let Some(r) = reopen.as_deref_mut() else {
                    continue;
                };
                match r().context("reopening the recording") {
                    Ok(s) => reopened = Some(s),
                    Err(e) => {
                        out.error = Some(e);
                        break;
                    }
                }
                held = None;
                ended = false;
                out = Outcome::default();
                sinks.iter_mut().for_each(|s| s.restart());
                continue;
            }
        }
        if turn.ended && (stopping || !sinks.iter().any(|s| s.stays_after_end())) {
            break;
        }
    }
    out.elapsed = start.elapsed();
    out
}

/// Splits `b` at the earliest limit any sink sets: the events up to it now, the rest later.
fn pace(mut b: Batch, sinks: &mut [&mut dyn Sink]) -> (Batch, Option<Batch>) {
    let Some(first) = b.events.first().map(|e| e.ts_ns()) else {
        return (b, None);
    };
    let limit = sinks.iter_mut().filter_map(|s| s.limit_ns(first)).min();
    let Some(limit) = limit else {
        return (b, None);
    };
    let cut = b
        .events
        .iter()
        .position(|e| e.ts_ns() > limit)
        .unwrap_or(b.events.len());
    if cut >= b.events.len() {
        return (b, None);
    }
    let rest = b.events.split_off(cut);
    (
        b,
        Some(Batch {
            events: rest,
            ..Batch::default()
        }),
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use wakeviz_core::{
        event::{Event, Migrate},
        format::Header,
        source::{Batch, EventSource, Poll, SourceError},
    };

    use super::*;

    /// Two batches, then a capture failure (a drain that died).
    struct Failing {
        header: Header,
        left: u32,
        stopped: bool,
    }

    impl EventSource for Failing {
        fn header(&self) -> &Header {
            &self.header
        }
        fn poll(&mut self, _: Duration) -> Result<Poll, SourceError> {
            if self.left == 0 {
                return Err(SourceError::Capture(
                    "polling the ring buffer failed".into(),
                ));
            }
            self.left -= 1;
            Ok(Poll::Batch(Batch {
                events: vec![Event::Migrate(Migrate {
                    ts_ns: u64::from(self.left),
                    cpu: 0,
                    pid: 1,
                    orig_cpu: 0,
                    dest_cpu: 1,
                })],
                ..Batch::default()
            }))
        }
        fn warnings(&self) -> &[String] {
            &[]
        }
        fn stop(&mut self) {
            self.stopped = true;
        }
    }

    #[derive(Default)]
    struct Seen(u64);
    impl Sink for Seen {
        fn on_batch(&mut self, b: &Batch) -> anyhow::Result<()> {
            self.0 += b.events.len() as u64;
            Ok(())
        }
    }

    #[test]
    fn a_failed_drain_ends_the_run_with_an_error_after_what_was_delivered() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = crate::dashboard::app::tests::recording(
            dir.path(),
            &crate::dashboard::app::tests::topo(),
            100,
        );
        let header = wakeviz_core::source::ReplaySource::open(&path)
            .expect("open")
            .header()
            .clone();
        let mut src = Failing {
            header,
            left: 2,
            stopped: false,
        };
        let mut seen = Seen::default();
        let out = run(&mut src, &mut [&mut seen], &Options::default(), None);
        assert_eq!(
            (seen.0, out.events),
            (2, 2),
            "both batches reached the sink"
        );
        let e = out
            .error
            .expect("a capture failure is an error, not an end of stream");
        assert!(
            format!("{e:#}").contains("polling the ring buffer failed"),
            "{e:#}"
        );
        assert!(src.stopped, "the source is stopped (probes detached)");
    }
}
