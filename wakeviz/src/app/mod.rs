//! The dashboard, in The Elm Architecture: [`App`] is the model, [`Msg`] the messages (key
//! presses become messages through the [`keymap`] table), [`App::update`] the only place the
//! model changes, and `crate::ui::draw` a pure function of the model. Kernel events never turn
//! into messages: they are folded into [`data::Data`] by the run loops in [`run`].
pub mod data;
pub mod keymap;
pub mod map;
pub mod replay;
pub mod run;
pub mod terminal;

use std::path::PathBuf;

use wakeviz_core::{analysis::Filter, format::Header};

use self::{
    data::{Baseline, Data},
    replay::Pacer,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum View {
    Overview,
    Scan,
    Placement,
    Shadow,
    Latency,
}

impl View {
    pub const ALL: [Self; 5] = [
        Self::Overview,
        Self::Scan,
        Self::Placement,
        Self::Shadow,
        Self::Latency,
    ];

    pub const fn index(self) -> usize {
        self as usize
    }

    pub const fn tab(self) -> &'static str {
        match self {
            Self::Overview => "Overview",
            Self::Scan => "Scan",
            Self::Placement => "Placement",
            Self::Shadow => "Shadow",
            Self::Latency => "Latency",
        }
    }

    fn next(self) -> Self {
        Self::ALL[(self.index() + 1) % Self::ALL.len()]
    }

    fn prev(self) -> Self {
        Self::ALL[(self.index() + Self::ALL.len() - 1) % Self::ALL.len()]
    }
}

/// Which keys mean what: normal navigation, typing a filter, or the help overlay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    Normal,
    Filter,
    Help,
}

/// Which span of the stream the latency and placement figures cover.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    Cumulative,
    Last10s,
    Last1s,
}

impl Window {
    pub const fn label(self) -> &'static str {
        match self {
            Self::Cumulative => "cumulative",
            Self::Last10s => "last 10 s",
            Self::Last1s => "last 1 s",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Msg {
    Quit,
    ToggleHelp,
    TogglePause,
    Show(View),
    NextView,
    PrevView,
    EditFilter,
    FilterChar(char),
    FilterBackspace,
    FilterApply,
    FilterCancel,
    Reset,
    CycleWindow,
    /// Move the selection of the current view's list.
    Move(i32),
    ToggleAggregate,
    /// Replay: step by `STEP_NS` (negative: back).
    Step(i32),
    Faster,
    Slower,
    ToStart,
    ToEnd,
    /// Replay: jump by `JUMP_NS`.
    Jump(i32),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SourceKind {
    Live { recording: Option<PathBuf> },
    Replay { path: PathBuf },
}

pub struct App {
    pub view: View,
    pub mode: Mode,
    pub source: SourceKind,
    pub data: Data,
    pub paused: bool,
    pub window: Window,
    /// Text being typed after `/`.
    pub filter_input: String,
    /// One-line message for the status bar (bad filter, counters reset).
    pub notice: Option<String>,
    /// Selected row per view (LLC rows, map cells, policies).
    pub sel: [usize; 5],
    /// Topology map: one cell per CPU (else one per LLC).
    pub per_cpu_map: bool,
    pub pacer: Option<Pacer>,
    /// Problems the source reported without stopping (damaged recording tail).
    pub warnings: Vec<String>,
    /// `--compare FILE`: every view shows these figures beside the current ones.
    pub baseline: Option<Baseline>,
    pub quit: bool,
}

/// Machines this large get the LLC-aggregated map by default.
pub const AGGREGATE_FROM_CPUS: usize = 256;

impl App {
    pub fn new(header: &Header, source: SourceKind) -> Self {
        let pacer = matches!(source, SourceKind::Replay { .. }).then(Pacer::default);
        Self {
            view: View::Overview,
            mode: Mode::Normal,
            source,
            data: Data::new(header),
            paused: false,
            window: Window::Cumulative,
            filter_input: String::new(),
            notice: None,
            sel: [0; 5],
            per_cpu_map: header.topology.nr_cpus() < AGGREGATE_FROM_CPUS,
            pacer,
            warnings: Vec::new(),
            baseline: None,
            quit: false,
        }
    }

    pub fn is_replay(&self) -> bool {
        self.pacer.is_some()
    }

    /// Recomputes display figures, except while a live view is paused (frozen).
    pub fn refresh(&mut self) {
        if !self.paused || self.is_replay() {
            self.data.refresh();
        }
    }

    /// Rows the selection of `view` moves over.
    pub fn list_len(&self, view: View) -> usize {
        let t = &self.data.header().topology;
        match view {
            View::Scan => t.llcs.len(),
            View::Placement => map::Map::new(t, self.per_cpu_map).units.len(),
            View::Shadow => self
                .data
                .snap
                .shadow
                .as_ref()
                .map_or(0, |s| s.policies.len()),
            // `all`, the six levels, new tasks (ui::latency::rows).
            View::Latency => 2 + wakeviz_core::topology::Level::ALL.len(),
            View::Overview => 0,
        }
    }

    pub fn update(&mut self, msg: Msg) {
        match msg {
            Msg::Quit => self.quit = true,
            Msg::ToggleHelp => {
                self.mode = if self.mode == Mode::Help {
                    Mode::Normal
                } else {
                    Mode::Help
                }
            }
            Msg::TogglePause => self.paused = !self.paused,
            Msg::Show(v) => self.view = v,
            Msg::NextView => self.view = self.view.next(),
            Msg::PrevView => self.view = self.view.prev(),
            Msg::EditFilter => {
                self.mode = Mode::Filter;
                self.filter_input = self.data.filter().map_or_else(String::new, filter_text);
            }
            Msg::FilterChar(c) => {
                if self.filter_input.chars().count() < 64 {
                    self.filter_input.push(c);
                }
            }
            Msg::FilterBackspace => {
                self.filter_input.pop();
            }
            Msg::FilterCancel => self.mode = Mode::Normal,
            Msg::FilterApply => {
                self.mode = Mode::Normal;
                let text = self.filter_input.trim();
                if text.is_empty() {
                    self.data.set_filter(None);
                    self.notice = Some("filter cleared".into());
                    self.refold();
                } else {
                    match text.parse::<Filter>() {
                        Ok(f) => {
                            self.notice = None;
                            self.data.set_filter(Some(f));
                            self.refold();
                        }
                        Err(e) => self.notice = Some(e.to_string()),
                    }
                }
            }
            Msg::Reset => {
                self.data.reset();
                self.notice = Some("counters reset".into());
            }
            Msg::CycleWindow => {
                self.window = match self.window {
                    Window::Cumulative => Window::Last10s,
                    Window::Last10s => Window::Last1s,
                    Window::Last1s => Window::Cumulative,
                }
            }
            Msg::Move(d) => {
                let n = self.list_len(self.view);
                let s = &mut self.sel[self.view.index()];
                *s = s.saturating_add_signed(d as isize).min(n.saturating_sub(1));
            }
            Msg::ToggleAggregate => {
                self.per_cpu_map = !self.per_cpu_map;
                self.sel[View::Placement.index()] = 0;
            }
            Msg::Step(n) | Msg::Jump(n) => {
                let unit = if matches!(msg, Msg::Step(_)) {
                    replay::STEP_NS
                } else {
                    replay::JUMP_NS
                };
                if let Some(p) = self.pacer.as_mut() {
                    p.seek_by(i64::from(n).saturating_mul(unit as i64));
                    self.paused = true;
                }
            }
            Msg::Faster => self.pacer.as_mut().into_iter().for_each(Pacer::faster),
            Msg::Slower => self.pacer.as_mut().into_iter().for_each(Pacer::slower),
            Msg::ToStart => self.pacer.as_mut().into_iter().for_each(|p| p.seek_to(0)),
            Msg::ToEnd => self.pacer.as_mut().into_iter().for_each(Pacer::seek_end),
        }
    }
}

impl App {
    /// A filter changed. Past events cannot be re-filtered from the fold, so a live view starts
    /// the filtered figures from zero; a replay folds the recording again from its start up to
    /// where it was, so the figures cover the same span of the trace.
    fn refold(&mut self) {
        if let Some(p) = self.pacer.as_mut() {
            let to = if p.ended { u64::MAX } else { p.position_ns() };
            p.reopen = true;
            p.cursor = to;
        } else {
            let n = self
                .notice
                .take()
                .unwrap_or_else(|| "filter applied".into());
            self.notice = Some(format!("{n}: figures restart from zero"));
        }
    }
}

/// A filter as the user types it back (`pid:1`, or the bare comm substring).
fn filter_text(f: &Filter) -> String {
    match f {
        Filter::Pid(p) => format!("pid:{p}"),
        Filter::Comm(c) if c.bytes().all(|b| b.is_ascii_digit()) || c.starts_with("pid:") => {
            format!("comm:{c}")
        }
        Filter::Comm(c) => c.clone(),
    }
}

#[cfg(test)]
pub(crate) mod tests;
