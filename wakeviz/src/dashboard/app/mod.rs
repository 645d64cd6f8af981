//! The dashboard, in The Elm Architecture: [`App`] is the model, [`Msg`] the messages (key
//! presses become messages through the [`keymap`] table), [`App::update`] the only place the
//! model changes; the views (`crate::dashboard::ui`) draw it and its run loop (`crate::dashboard::ui::run`) feeds it.
//! Kernel events never turn into messages: they are folded into [`data::Data`] by the run loop.
//! The model imports nothing of the views.
pub mod busy;
pub mod data;
pub mod keymap;
pub mod map;
pub mod replay;
pub mod save;
pub mod terminal;

use std::path::PathBuf;

use wakeviz_core::{
    analysis::{Filter, tasks::TaskSort},
    format::Header,
};

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
    Timeline,
    Matrix,
    Tasks,
}

impl View {
    pub const ALL: [Self; 8] = [
        Self::Overview,
        Self::Scan,
        Self::Placement,
        Self::Shadow,
        Self::Latency,
        Self::Timeline,
        Self::Matrix,
        Self::Tasks,
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
            Self::Timeline => "Timeline",
            Self::Matrix => "Matrix",
            Self::Tasks => "Tasks",
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
    /// Empties the filter prompt (Ctrl-U, as in a shell).
    FilterClearLine,
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
    /// Show / hide the legend lines of the current view.
    ToggleLegend,
    /// Write the report (text, JSON) and a screen capture next to the recording.
    Save,
    /// Replay: the range the views cover starts / ends here.
    MarkStart,
    MarkEnd,
    /// Tasks view: sort by the next column.
    CycleSort,
    /// Tasks view: filter every view to the selected task.
    FilterSelected,
    /// Drop the filter (as `/` with an empty line does).
    ClearFilter,
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
    pub sel: [usize; View::ALL.len()],
    /// The Tasks view's sort column (`o`).
    pub task_sort: TaskSort,
    /// Topology map: one cell per CPU (else one per LLC).
    pub per_cpu_map: bool,
    pub pacer: Option<Pacer>,
    /// Problems the source reported without stopping (damaged recording tail).
    pub warnings: Vec<String>,
    /// `--compare FILE`: every view shows these figures beside the current ones.
    pub baseline: Option<Baseline>,
    pub quit: bool,
    /// Live with `-- CMD`: the command has exited and the capture stopped; the final figures
    /// stay on screen until `q`. What ended it, for the header.
    pub finished: Option<String>,
    /// The legend lines are shown (`l`).
    pub legend: bool,
    /// First line of the help overlay shown (it scrolls when the terminal is short).
    pub help_scroll: u16,
    /// Replay: stream time (from the first event) where the counted span starts (`[`, `r`)
    /// and ends (`]`); events outside it are not folded.
    pub range_from: Option<u64>,
    pub range_to: Option<u64>,
    /// `s` was pressed: the run loop saves after the next frame (the capture needs it).
    pub save_wanted: bool,
    /// Live: per-CPU busy % from `sysinfo` (replay: none, the views say n/a).
    pub busy: Option<busy::Busy>,
}

/// Machines this large get the LLC-aggregated map by default.
pub const AGGREGATE_FROM_CPUS: usize = 256;

/// How far the Overview's columns can be scrolled (they hold a few dozen lines, one per ring
/// buffer among them, at most 64).
const OVERVIEW_SCROLL: usize = 128;

impl App {
    pub fn new(header: &Header, source: SourceKind) -> Self {
        let pacer = matches!(source, SourceKind::Replay { .. }).then(Pacer::default);
        let busy = pacer.is_none().then(busy::Busy::new);
        Self {
            view: View::Overview,
            mode: Mode::Normal,
            source,
            data: Data::new(header, pacer.is_none()),
            paused: false,
            window: Window::Cumulative,
            filter_input: String::new(),
            finished: None,
            notice: None,
            sel: [0; View::ALL.len()],
            task_sort: TaskSort::default(),
            per_cpu_map: header.topology.nr_cpus() < AGGREGATE_FROM_CPUS,
            pacer,
            warnings: Vec::new(),
            baseline: None,
            quit: false,
            legend: false,
            help_scroll: 0,
            range_from: None,
            range_to: None,
            save_wanted: false,
            busy,
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
            // Row 0 is "all LLCs", then one row per LLC.
            View::Scan => t.llcs.len() + 1,
            View::Matrix => self.data.snap.matrix.labels.len(),
            View::Tasks => self.data.snap.tasks.rows.len(),
            View::Placement => map::Map::new(t, self.per_cpu_map).units.len(),
            View::Shadow => self
                .data
                .snap
                .shadow
                .as_ref()
                .map_or(0, |s| s.policies.len()),
            // `all`, the six levels, new tasks (ui::latency::rows).
            View::Latency => 2 + wakeviz_core::topology::Level::ALL.len(),
            // The Overview's columns scroll; the renderer stops at their last screenful.
            View::Overview => OVERVIEW_SCROLL,
            View::Timeline => 0,
        }
    }

    pub fn update(&mut self, msg: Msg) {
        match msg {
            Msg::Quit => self.quit = true,
            Msg::ToggleHelp => {
                self.help_scroll = 0;
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
            Msg::FilterClearLine => self.filter_input.clear(),
            Msg::FilterCancel => self.mode = Mode::Normal,
            Msg::FilterApply => {
                self.mode = Mode::Normal;
                let text = self.filter_input.trim();
                if text.is_empty() {
                    self.update(Msg::ClearFilter);
                } else {
                    match text.parse::<Filter>() {
                        // The filter in effect, unchanged: nothing to fold again.
                        Ok(f) if self.data.filter() == Some(&f) => self.notice = None,
                        Ok(f) => {
                            self.notice = None;
                            self.data.set_filter(Some(f));
                            self.refold();
                        }
                        Err(e) => self.notice = Some(e.to_string()),
                    }
                }
            }
            Msg::Reset => self.reset(),
            Msg::ClearFilter => {
                let had = self.data.filter().is_some();
                self.data.set_filter(None);
                self.notice = Some("filter cleared".into());
                if had {
                    self.refold();
                }
            }
            Msg::CycleSort => {
                self.task_sort = self.task_sort.next();
                self.sel[View::Tasks.index()] = 0;
            }
            Msg::FilterSelected => {
                let rows = self.data.snap.tasks.sorted(self.task_sort);
                let sel = self.sel[View::Tasks.index()].min(rows.len().saturating_sub(1));
                if let Some(pid) = rows.get(sel).and_then(|r| r.pid) {
                    self.notice = None;
                    self.data.set_filter(Some(Filter::Pid(pid)));
                    self.sel[View::Tasks.index()] = 0;
                    self.refold();
                }
            }
            Msg::CycleWindow => {
                self.window = match self.window {
                    Window::Cumulative => Window::Last10s,
                    Window::Last10s => Window::Last1s,
                    Window::Last1s => Window::Cumulative,
                }
            }
            Msg::Move(d) if self.mode == Mode::Help => {
                self.help_scroll = self.help_scroll.saturating_add_signed(d as i16);
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
                self.after_seek();
            }
            Msg::Faster => self.pacer.as_mut().into_iter().for_each(Pacer::faster),
            Msg::Slower => self.pacer.as_mut().into_iter().for_each(Pacer::slower),
            Msg::ToStart => {
                if let Some(p) = self.pacer.as_mut() {
                    p.seek_to(0);
                    if self.range_from.take().is_some() | self.range_to.take().is_some() {
                        self.notice = Some("range cleared".into());
                    }
                }
            }
            Msg::ToEnd => self.pacer.as_mut().into_iter().for_each(Pacer::seek_end),
            Msg::ToggleLegend => self.legend = !self.legend,
            Msg::Save => self.save_wanted = true,
            Msg::MarkStart => self.mark_start(),
            Msg::MarkEnd => self.mark_end(),
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

/// Reset and range marks. In replay, the fold covers one span of stream time: from
/// `range_from` (`[`, or `r`: "count from here") to `range_to` (`]`, where the replay then
/// pauses). The fold never runs backwards, so a seek before the start moves the start there
/// (the figures restart empty, and the status says from where); `g` clears the range.
impl App {
    /// Where the replay is, in stream time from the first event.
    fn here(&self) -> u64 {
        self.pacer.as_ref().map_or(0, replay::Pacer::shown_ns)
    }

    fn reset(&mut self) {
        self.data.reset();
        if self.is_replay() {
            let at = self.here();
            self.range_from = Some(at);
            self.range_to = None;
            self.notice = Some(format!("counters reset: counting from {}", fmt_secs(at)));
        } else {
            self.notice = Some("counters reset".into());
        }
    }

    fn mark_start(&mut self) {
        if !self.is_replay() {
            return;
        }
        let at = self.here();
        self.data.reset();
        self.range_from = Some(at);
        if self.range_to.is_some_and(|t| t <= at) {
            self.range_to = None;
        }
        self.notice = Some(format!("range starts at {} (] ends it)", fmt_secs(at)));
    }

    fn mark_end(&mut self) {
        if !self.is_replay() {
            return;
        }
        let at = self.here();
        let from = self.range_from.unwrap_or(0);
        if at <= from {
            self.notice = Some(format!("] must be after the start {}", fmt_secs(from)));
            return;
        }
        self.range_from = Some(from);
        self.range_to = Some(at);
        self.paused = true;
        if let Some(p) = self.pacer.as_mut() {
            p.seek_to(at);
        }
        self.notice = Some("views and s cover the range".into());
    }

    /// After a seek: before the range start, the start follows (nothing before it is folded).
    fn after_seek(&mut self) {
        let Some(to) = self.pacer.as_ref().map(|p| p.cursor) else {
            return;
        };
        if self.range_from.is_some_and(|f| to < f) {
            self.range_from = Some(to);
            if self.range_to.is_some_and(|t| t <= to) {
                self.range_to = None;
            }
            self.notice = Some(format!(
                "before the range start: counting from {}",
                fmt_secs(to)
            ));
        }
    }

    /// The span the figures cover, for the status and the saved report; `None`: everything
    /// folded so far.
    pub fn range_ns(&self) -> Option<(u64, u64)> {
        if self.range_from.is_none() && self.range_to.is_none() {
            return None;
        }
        let here = self.here();
        let from = self.range_from.unwrap_or(0);
        Some((from, self.range_to.map_or(here, |t| t.min(here)).max(from)))
    }

    /// `range +1.000–+3.000 s` once `]` is set, else `from +1.000 s`.
    pub fn range_label(&self) -> Option<String> {
        let (a, b) = self.range_ns()?;
        Some(if self.range_to.is_some() {
            format!("range {}–{}", fmt_secs(a), fmt_secs(b))
        } else {
            format!("from {}", fmt_secs(a))
        })
    }

    /// Whether an event at stream time `ts_ns` is inside the range (replay with marks only).
    pub fn in_range(&self, ts_ns: u64) -> bool {
        let Some(o) = self.pacer.as_ref().and_then(|p| p.origin) else {
            return true;
        };
        let rel = ts_ns.saturating_sub(o);
        self.range_from.is_none_or(|f| rel >= f) && self.range_to.is_none_or(|t| rel <= t)
    }
}

/// `+1.234 s`.
fn fmt_secs(ns: u64) -> String {
    format!("+{:.3} s", ns as f64 / 1e9)
}

/// A filter as the user types it back (`pid:1`, or the bare comm substring).
fn filter_text(f: &Filter) -> String {
    match f {
        Filter::Comm(c)
            if c.bytes().all(|b| b.is_ascii_digit())
                || ["pid:", "tree:", "comm:"].iter().any(|p| c.starts_with(p))
                || c == "cmd" =>
        {
            format!("comm:{c}")
        }
        Filter::Comm(c) => c.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
pub(crate) mod tests;
#[cfg(test)]
mod tests_views;

/// The last component of a path, for titles and messages (the whole path when it has none).
pub fn file_name(p: &std::path::Path) -> String {
    p.file_name().map_or_else(
        || p.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}
