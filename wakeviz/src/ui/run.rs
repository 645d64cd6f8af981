//! The dashboard as a sink of the one driver (`crate::driver`), live and replay alike: it
//! folds every batch, answers keys without blocking the capture, draws at most every
//! [`FRAME`], paces a replay through `limit_ns`, and asks the driver to stop on `q`, to start
//! over on a backward seek, and to end when the terminal goes away.
//!
//! Capture never waits for the screen: a slow frame only lets the bounded channel fill, and
//! those drops are counted and shown.
use std::time::{Duration, Instant};

use anyhow::Context as _;
use ratatui::crossterm::event::{self, Event as TermEvent};
use wakeviz_core::source::{Batch, EventSource};

use crate::{
    app::{
        App, keymap, save,
        terminal::{self, Input, TerminalGuard},
    },
    driver::{Flow, Sink, Turn},
    signals,
};

/// Frame period: 12.5 Hz at most.
pub const FRAME: Duration = Duration::from_millis(80);
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
    /// `--serve`: where the dashboard's fold is published.
    publisher: Option<crate::sinks::serve::Publisher>,
}

impl Dashboard {
    /// Switches the terminal to the dashboard (restored when this is dropped).
    pub fn new(app: App) -> anyhow::Result<Self> {
        let guard =
            TerminalGuard::enter().context("cannot set up the terminal (try --headless)")?;
        Ok(Self {
            app,
            guard,
            last_draw: None,
            publisher: None,
        })
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
        loop {
            self.draw()?;
            if self.app.quit || signals::stop_requested() || terminal::gone() {
                return Ok(());
            }
            read_keys(&mut self.app, FRAME)?;
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

impl Sink for Dashboard {
    fn on_batch(&mut self, b: &Batch) -> anyhow::Result<()> {
        if let Some(p) = self.publisher.as_mut() {
            p.changed();
        }
        self.app.on_batch(b)
    }

    fn on_turn(&mut self, src: &dyn EventSource, t: Turn) -> anyhow::Result<Flow> {
        self.app.on_turn(src, t)?;
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
        let due = self.last_draw.is_none_or(|d| d.elapsed() >= FRAME);
        // Nothing arrived (or the replay is paced, paused or over): wait for keys until the
        // next frame is due instead of spinning.
        let wait = if t.idle && !signals::stop_requested() {
            self.last_draw
                .map_or(Duration::ZERO, |d| FRAME.saturating_sub(d.elapsed()))
        } else {
            Duration::ZERO
        };
        let keys = read_keys(&mut self.app, wait)?;
        if keys || due || (t.idle && wait > Duration::ZERO) {
            self.draw()?;
        }
        Ok(self.app.flow())
    }

    fn limit_ns(&mut self, next_ts_ns: u64) -> Option<u64> {
        self.app.limit_ns(next_ts_ns)
    }

    fn restart(&mut self) {
        self.app.restart();
    }

    fn stays_after_end(&self) -> bool {
        self.app.stays_after_end()
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
