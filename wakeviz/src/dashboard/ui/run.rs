//! The dashboard as a sink of the one driver (`crate::driver`), live and replay alike: it
//! folds every batch, answers keys without blocking the capture, draws at most once per
//! refresh period ([`REFRESH`] unless `--refresh` says otherwise) and only when something
//! changed, paces a replay through `limit_ns`, and asks the driver to stop on `q`, to start
//! over on a backward seek, and to end when the terminal goes away.
//!
//! Capture never waits for the screen: a slow frame only lets the bounded channel fill, and
//! those drops are counted and shown.
use std::time::{Duration, Instant};

use anyhow::Context as _;
use ratatui::crossterm::event::{self, Event as TermEvent};
use wakeviz_core::source::{Batch, EventSource};

use crate::{
    dashboard::app::{
        App, keymap, save,
        terminal::{self, Input, TerminalGuard},
    },
    driver::{Flow, Sink, Turn},
    signals,
};

/// Default refresh period: 4 frames a second at most. Every frame costs the terminal a write
/// and wakeviz a wakeup, and a person reads figures that change four times a second.
pub const REFRESH: Duration = Duration::from_millis(250);
/// A live run's clock (elapsed time, rates) moves on screen at least this often while its
/// figures stand still.
const CLOCK: Duration = Duration::from_secs(1);
/// Terminal events handled per turn at most, so a flood of input (or a broken terminal that
/// reports readiness forever) cannot keep the loop from checking signals and the stream.
const MAX_KEYS_PER_TURN: usize = 64;

/// The fold and the pacing of an [`App`], without a terminal: what the dashboard does per
/// batch, shared with the tests.
impl Sink for App {
    fn on_batch(&mut self, b: &Batch) -> anyhow::Result<()> {
        if let Some(p) = self.pacer.as_mut() {
            p.fed(b);
        }
        if self.range_from.is_some() || self.range_to.is_some() {
            // Marks set: only the events inside the range are folded (task names all are).
            let inside = Batch {
                tasks: b.tasks.clone(),
                events: b
                    .events
                    .iter()
                    .filter(|e| self.in_range(e.ts_ns()))
                    .cloned()
                    .collect(),
                schedstat: b
                    .schedstat
                    .iter()
                    .filter(|s| self.in_range(s.ts_ns))
                    .cloned()
                    .collect(),
                stats: b.stats.clone(),
            };
            self.data.on_batch(&inside);
        } else {
            self.data.on_batch(b);
        }
        Ok(())
    }

    fn on_turn(&mut self, src: &dyn EventSource, t: Turn) -> anyhow::Result<Flow> {
        if let Some(p) = self.pacer.as_mut() {
            p.ended = t.ended;
            if t.ended {
                p.end_reached();
            }
        }
        if self.warnings.len() != src.warnings().len() {
            self.warnings = src.warnings().to_vec();
        }
        Ok(self.flow())
    }

    fn limit_ns(&mut self, next_ts_ns: u64) -> Option<u64> {
        self.pacer.as_mut().map(|p| {
            p.tick(Instant::now(), self.paused);
            p.limit_ns(next_ts_ns)
        })
    }

    fn restart(&mut self) {
        self.data.reset();
        if let Some(p) = self.pacer.as_mut() {
            p.reopened();
        }
    }

    fn stays_after_end(&self) -> bool {
        self.is_replay() && !self.quit
    }
}

impl App {
    fn flow(&self) -> Flow {
        if self.quit {
            Flow::Stop
        } else if self.pacer.as_ref().is_some_and(|p| p.reopen) {
            Flow::Restart
        } else {
            Flow::Continue
        }
    }
}

/// The dashboard on a terminal.
pub struct Dashboard {
    pub app: App,
    guard: TerminalGuard,
    last_draw: Option<Instant>,
    /// The refresh period.
    frame: Duration,
    /// Something shown changed since the last frame (a batch folded, a key, a restart).
    dirty: bool,
    /// `--serve`: where the dashboard's fold is published.
    publisher: Option<crate::sinks::serve::Publisher>,
}

impl Dashboard {
    /// Switches the terminal to the dashboard (restored when this is dropped); `refresh` is
    /// `--refresh`, [`REFRESH`] when absent.
    pub fn new(app: App, refresh: Option<Duration>) -> anyhow::Result<Self> {
        let guard =
            TerminalGuard::enter().context("cannot set up the terminal (try --headless)")?;
        Ok(Self {
            app,
            guard,
            last_draw: None,
            frame: refresh.unwrap_or(REFRESH),
            dirty: true,
            publisher: None,
        })
    }

    /// What decides the next frame, as the app stands now.
    fn cadence(&self) -> Cadence {
        Cadence {
            frame: self.frame,
            dirty: self.dirty,
            since: self.last_draw.map(|d| d.elapsed()),
            paused: self.app.paused,
            replay: self.app.is_replay(),
            playing: self.app.pacer.as_ref().is_some_and(|p| !p.ended),
        }
    }

    fn draw(&mut self) -> anyhow::Result<()> {
        self.app.refresh();
        if let Some(b) = self.app.busy.as_mut() {
            b.refresh(Instant::now());
        }
        let app = &self.app;
        let frame = self
            .guard
            .term
            .draw(|f| super::draw(f, app))
            .context("drawing on the terminal")?;
        let screen = self
            .app
            .save_wanted
            .then(|| save::buffer_text(frame.buffer));
        self.last_draw = Some(Instant::now());
        self.dirty = false;
        if let Some(screen) = screen {
            self.app.save(&screen);
            // Draw again so the notice with the paths shows at once.
            let app = &self.app;
            self.guard
                .term
                .draw(|f| super::draw(f, app))
                .context("drawing on the terminal")?;
        }
        Ok(())
    }
}

impl Dashboard {
    /// The run is over (its command exited, the capture stopped): the final figures stay on
    /// screen, marked finished with `what`, until `q`, a signal, or the terminal going away.
    pub fn linger(&mut self, what: String) -> anyhow::Result<()> {
        self.app.finished = Some(what);
        self.app.notice = Some("the command ended: the run's final figures; q quits".into());
        // Nothing changes any more: a frame now, then one per key.
        self.draw()?;
        loop {
            if self.app.quit || signals::stop_requested() || terminal::gone() {
                return Ok(());
            }
            if read_keys(&mut self.app, CLOCK)? {
                self.draw()?;
            }
        }
    }

    /// Serves the dashboard's fold at `/metrics` (its filter and resets are views, not
    /// published).
    pub fn publish_to(&mut self, p: crate::sinks::serve::Publisher) {
        self.publisher = Some(p);
    }

    /// The run's figures as `/metrics` serves them.
    pub fn run_snapshot(&self) -> wakeviz_core::analysis::Snapshot {
        self.app.data.run_snapshot()
    }
}

/// The longest a key waits while events keep the loop from waiting on the terminal.
const KEY_TURN: Duration = Duration::from_millis(200);

impl Sink for Dashboard {
    fn turn_every(&self) -> Option<Duration> {
        Some(KEY_TURN)
    }

    fn on_batch(&mut self, b: &Batch) -> anyhow::Result<()> {
        if let Some(p) = self.publisher.as_mut() {
            p.changed();
        }
        self.dirty = true;
        self.app.on_batch(b)
    }

    fn on_turn(&mut self, src: &dyn EventSource, t: Turn) -> anyhow::Result<Flow> {
        let shown = |a: &App| (a.pacer.as_ref().map(|p| p.ended), a.warnings.len());
        let before = shown(&self.app);
        self.app.on_turn(src, t)?;
        // The replay's end (or a new warning) can come in a turn without a batch, after the
        // last batch's frame was drawn: without a frame of its own it would never show.
        if shown(&self.app) != before {
            self.dirty = true;
        }
        if let Some(p) = self.publisher.as_mut() {
            let data = &self.app.data;
            p.offer(t.ended, || data.run_snapshot());
        }
        if terminal::gone() {
            // SIGHUP, or the terminal's other end closed (tmux killed, ssh dropped): end now,
            // as if `q` had been pressed, so the probes detach and the recording is finalised.
            self.app.quit = true;
            return Ok(Flow::Stop);
        }
        // Nothing arrived (or the replay is paced, paused or over): wait for keys until the
        // next frame could be due instead of spinning.
        let wait = if t.idle && !signals::stop_requested() {
            self.cadence().until_due()
        } else {
            Duration::ZERO
        };
        let keys = read_keys(&mut self.app, wait)?;
        if keys {
            self.dirty = true;
        }
        if keys || self.cadence().due() {
            self.draw()?;
        }
        Ok(self.app.flow())
    }

    fn limit_ns(&mut self, next_ts_ns: u64) -> Option<u64> {
        self.app.limit_ns(next_ts_ns)
    }

    fn restart(&mut self) {
        self.dirty = true;
        self.app.restart();
    }

    fn stays_after_end(&self) -> bool {
        self.app.stays_after_end()
    }
}

/// When the dashboard draws: at most once per refresh period, and only when something
/// changed (for a running live capture, at least its clock once per [`CLOCK`]); a paused view
/// or a replay that stands paused or at its end changes only on keys, which draw at once.
#[derive(Clone, Copy, Debug)]
struct Cadence {
    frame: Duration,
    /// Something shown changed since the last frame.
    dirty: bool,
    /// Since the last frame (`None`: nothing drawn yet).
    since: Option<Duration>,
    paused: bool,
    replay: bool,
    /// A replay that has not reached its end.
    playing: bool,
}

impl Cadence {
    fn due(&self) -> bool {
        let Some(since) = self.since else {
            return true;
        };
        if since < self.frame || self.paused {
            return false;
        }
        self.dirty || (!self.replay && since >= CLOCK)
    }

    /// How long the loop may wait for keys before a frame could be due. A playing replay is
    /// paced by the loop's turns, so it keeps the frame's rhythm even between batches.
    fn until_due(&self) -> Duration {
        let Some(since) = self.since else {
            return Duration::ZERO;
        };
        let period = if (self.dirty || self.playing) && !self.paused {
            self.frame
        } else {
            CLOCK.max(self.frame)
        };
        period.saturating_sub(since)
    }
}

/// Reads the terminal events that are waiting (for up to `wait` for the first) and applies
/// them; true if any changed something worth redrawing at once.
///
/// The wait is poll(2) on the terminal, not crossterm's (see [`terminal::wait_input`]).
/// crossterm is then asked, with a zero timeout, every turn and not only when keys are
/// waiting: its reader is edge-triggered and also carries SIGWINCH, and a resize it reports
/// together with a key would otherwise strand that key until the next one.
fn read_keys(app: &mut App, wait: Duration) -> anyhow::Result<bool> {
    let input = terminal::wait_input(wait);
    if input == Input::Gone {
        app.quit = true;
        return Ok(true);
    }
    let mut any = false;
    let mut got = false;
    for _ in 0..MAX_KEYS_PER_TURN {
        if app.quit
            || signals::stop_requested()
            || terminal::input_gone()
            || !event::poll(Duration::ZERO).context("reading the terminal")?
        {
            break;
        }
        got = true;
        match event::read().context("reading the terminal")? {
            TermEvent::Key(k) => {
                if let Some(m) = keymap::lookup(app.mode, app.view, app.is_replay(), k) {
                    app.update(m);
                    any = true;
                }
            }
            TermEvent::Resize(..) => any = true,
            _ => {}
        }
    }
    if input == Input::Ready && !got {
        // Bytes crossterm will not report until more arrive: do not spin on them.
        std::thread::sleep(wait);
    }
    Ok(any)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    fn live(dirty: bool, since_ms: u64) -> Cadence {
        Cadence {
            frame: REFRESH,
            dirty,
            since: Some(MS(since_ms)),
            paused: false,
            replay: false,
            playing: false,
        }
    }

    #[test]
    fn frames_come_only_when_due_and_something_changed() {
        assert!(
            Cadence {
                since: None,
                ..live(false, 0)
            }
            .due(),
            "the first frame"
        );
        assert!(!live(true, 100).due(), "within the period");
        assert!(live(true, 250).due(), "changed, period over");
        assert!(!live(false, 600).due(), "nothing changed");
        assert!(live(false, 1000).due(), "a live clock moves once a second");
        let paused = Cadence {
            paused: true,
            ..live(true, 5000)
        };
        assert!(!paused.due(), "paused: keys only");
        let ended = Cadence {
            replay: true,
            ..live(false, 5000)
        };
        assert!(!ended.due(), "a replay at its end stands still");
        let fast = Cadence {
            frame: MS(20),
            ..live(true, 20)
        };
        assert!(fast.due(), "--refresh 20ms");
    }

    #[test]
    fn the_loop_sleeps_longer_when_nothing_changes() {
        assert_eq!(live(true, 100).until_due(), MS(150));
        assert_eq!(live(false, 100).until_due(), MS(900));
        let playing = Cadence {
            replay: true,
            playing: true,
            ..live(false, 100)
        };
        assert_eq!(
            playing.until_due(),
            MS(150),
            "a playing replay keeps the rhythm"
        );
        let slow = Cadence {
            frame: MS(5000),
            ..live(false, 0)
        };
        assert_eq!(slow.until_due(), MS(5000));
    }
}
