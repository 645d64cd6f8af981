//! The two drivers of the dashboard.
//!
//! - Live (and `--record`): the capture loop (`record::run`) owns the source and the recorder
//!   and calls [`Dashboard::step`] with every batch and on every idle poll; the dashboard folds
//!   the batch, answers keys without blocking, draws at most every [`FRAME`], and asks the loop
//!   to stop on `q`, Ctrl-C or SIGTERM. Capture never waits for the screen: a slow frame only
//!   lets the bounded channel fill, and those drops are counted and shown.
//! - Replay: [`run_replay`] owns the source and paces it (see [`super::replay`]).
use std::{
    ops::ControlFlow,
    path::Path,
    time::{Duration, Instant},
};

use anyhow::Context as _;
use ratatui::crossterm::event::{self, Event as TermEvent};
use wakeviz_core::source::{Batch, EventSource};

use super::{App, SourceKind, keymap, terminal::TerminalGuard};
use crate::{signals, ui};

/// Frame period: 12.5 Hz at most, 10 Hz at worst with the capture loop's 50 ms idle polls.
pub const FRAME: Duration = Duration::from_millis(80);
/// Longest a replay frame spends folding before it draws and reads keys again.
const FEED_BUDGET: Duration = Duration::from_millis(40);

pub struct Dashboard {
    app: App,
    guard: TerminalGuard,
    last_draw: Option<Instant>,
    error: Option<anyhow::Error>,
}

impl Dashboard {
    /// Switches the terminal to the dashboard (restored when this is dropped).
    pub fn live(src: &dyn EventSource, recording: Option<&Path>) -> anyhow::Result<Self> {
        let app = App::new(
            src.header(),
            SourceKind::Live {
                recording: recording.map(Path::to_path_buf),
            },
        );
        let guard =
            TerminalGuard::enter().context("cannot set up the terminal (try --headless)")?;
        Ok(Self {
            app,
            guard,
            last_draw: None,
            error: None,
        })
    }

    /// One turn of the capture loop: `Some(batch)` when one arrived, `None` on an idle poll.
    /// `Break` asks the loop to stop capturing (it drains and finalises the recording).
    pub fn step(&mut self, batch: Option<&Batch>) -> ControlFlow<()> {
        if let Some(b) = batch {
            self.app.data.on_batch(b);
        }
        if self.app.quit {
            return ControlFlow::Break(());
        }
        if let Err(e) = self.turn() {
            self.error = Some(e);
            self.app.quit = true;
        }
        if self.app.quit {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }

    fn turn(&mut self) -> anyhow::Result<()> {
        let keys = read_keys(&mut self.app, Duration::ZERO)?;
        if signals::stop_requested() {
            self.app.quit = true;
        }
        if keys || self.last_draw.is_none_or(|t| t.elapsed() >= FRAME) {
            self.app.refresh();
            self.guard
                .term
                .draw(|f| ui::draw(f, &self.app))
                .context("drawing")?;
            self.last_draw = Some(Instant::now());
        }
        Ok(())
    }

    /// Restores the terminal; returns the first error met while drawing or reading keys.
    pub fn finish(self) -> anyhow::Result<()> {
        drop(self.guard);
        self.error.map_or(Ok(()), Err)
    }
}

/// Reads the keys that are waiting (for up to `wait` for the first) and applies them; true if
/// any changed something worth redrawing at once.
fn read_keys(app: &mut App, wait: Duration) -> anyhow::Result<bool> {
    let mut any = false;
    let mut wait = wait;
    while !app.quit && event::poll(wait).context("reading the terminal")? {
        wait = Duration::ZERO;
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
    Ok(any)
}

/// The dashboard on a recording. `open` (re)opens it: backward seeks start the fold over.
pub fn run_replay(
    path: &Path,
    mut open: impl FnMut() -> anyhow::Result<Box<dyn EventSource>>,
) -> anyhow::Result<()> {
    signals::install();
    let mut src = open()?;
    let mut app = App::new(
        src.header(),
        SourceKind::Replay {
            path: path.to_path_buf(),
        },
    );
    let mut guard =
        TerminalGuard::enter().context("cannot set up the terminal (try --headless)")?;
    loop {
        let frame = Instant::now();
        if app.pacer.as_ref().is_some_and(|p| p.reopen) {
            src = open()?;
            app.data.reset();
            app.pacer
                .as_mut()
                .into_iter()
                .for_each(super::replay::Pacer::reopened);
        }
        if let Some(p) = app.pacer.as_mut() {
            p.tick(frame, app.paused);
            let data = &mut app.data;
            p.feed(src.as_mut(), FEED_BUDGET, |b| data.on_batch(b))
                .with_context(|| format!("reading {}", path.display()))?;
        }
        if app.warnings.len() != src.warnings().len() {
            app.warnings = src.warnings().to_vec();
        }
        app.refresh();
        guard.term.draw(|f| ui::draw(f, &app)).context("drawing")?;
        let left = FRAME.saturating_sub(frame.elapsed());
        read_keys(&mut app, left)?;
        if signals::stop_requested() {
            app.quit = true;
        }
        if app.quit {
            return Ok(());
        }
    }
}
