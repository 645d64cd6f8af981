//! The key bindings as one table: `(Mode, key) -> Msg`, plus a scope saying where a binding is
//! live (everywhere, one view, replay only). `lookup` answers key presses; the footer and the
//! help overlay are generated from the same table, so they cannot drift from what keys do.
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::{Mode, Msg, View};

/// Where a binding applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    All,
    /// Only when the source is a recording.
    Replay,
    /// Only in these views.
    Views(&'static [View]),
}

#[derive(Clone, Copy, Debug)]
pub struct Binding {
    pub mode: Mode,
    pub code: KeyCode,
    pub mods: KeyModifiers,
    pub msg: Msg,
    pub scope: Scope,
    /// How the footer and help show the key; empty: not listed (an alias).
    pub label: &'static str,
    /// Footer text; empty: not in the footer (the help overlay lists everything with a label).
    pub short: &'static str,
    pub help: &'static str,
}

const NONE: KeyModifiers = KeyModifiers::NONE;
const SHIFT: KeyModifiers = KeyModifiers::SHIFT;
const CTRL: KeyModifiers = KeyModifiers::CONTROL;
const LISTS: &[View] = &[
    View::Overview,
    View::Scan,
    View::Placement,
    View::Shadow,
    View::Matrix,
    View::Tasks,
];
const WINDOWED: &[View] = &[View::Scan, View::Placement, View::Latency, View::Timeline];
const TASKS: &[View] = &[View::Tasks];
const MAP: &[View] = &[View::Placement];

/// `text`: the key as shown, its footer word, its help line.
const fn b(
    mode: Mode,
    code: KeyCode,
    mods: KeyModifiers,
    msg: Msg,
    scope: Scope,
    text: (&'static str, &'static str, &'static str),
) -> Binding {
    Binding {
        mode,
        code,
        mods,
        msg,
        scope,
        label: text.0,
        short: text.1,
        help: text.2,
    }
}

use KeyCode::{BackTab, Backspace, Char, Down, Enter, Esc, Left, PageDown, PageUp, Right, Tab, Up};
use Mode::{Filter, Help, Normal};
use Scope::{All, Replay, Views};

/// The table, in the order the help overlay lists it.
#[rustfmt::skip]
pub const BINDINGS: &[Binding] = &[
    b(Normal, Char('q'), NONE, Msg::Quit, All, ("q", "quit", "quit")),
    b(Help, Char('q'), NONE, Msg::Quit, All, ("", "", "")),
    b(Normal, Char('?'), NONE, Msg::ToggleHelp, All, ("?", "help", "help")),
    b(Normal, Char('h'), NONE, Msg::ToggleHelp, All, ("", "", "")),
    b(Help, Char('?'), NONE, Msg::ToggleHelp, All, ("", "", "")),
    b(Help, Esc, NONE, Msg::ToggleHelp, All, ("", "", "")),
    b(Normal, Char(' '), NONE, Msg::TogglePause, All, ("space", "pause", "pause (live: the display freezes, capture goes on)")),
    b(Normal, Char('1'), NONE, Msg::Show(View::Overview), All, ("1-8/Tab", "views", "views; Tab / Shift-Tab: next / previous")),
    b(Normal, Char('2'), NONE, Msg::Show(View::Scan), All, ("", "", "")),
    b(Normal, Char('3'), NONE, Msg::Show(View::Placement), All, ("", "", "")),
    b(Normal, Char('4'), NONE, Msg::Show(View::Shadow), All, ("", "", "")),
    b(Normal, Char('5'), NONE, Msg::Show(View::Latency), All, ("", "", "")),
    b(Normal, Char('6'), NONE, Msg::Show(View::Timeline), All, ("", "", "")),
    b(Normal, Char('7'), NONE, Msg::Show(View::Matrix), All, ("", "", "")),
    b(Normal, Char('8'), NONE, Msg::Show(View::Tasks), All, ("", "", "")),
    b(Normal, Tab, NONE, Msg::NextView, All, ("", "", "")),
    b(Normal, BackTab, SHIFT, Msg::PrevView, All, ("", "", "")),
    b(Normal, BackTab, NONE, Msg::PrevView, All, ("", "", "")),
    b(Normal, Char('/'), NONE, Msg::EditFilter, All, ("/", "filter", "filter by comm substring or pid (pid:N, comm:S)")),
    b(Normal, Char('r'), NONE, Msg::Reset, All, ("r", "reset", "reset counters (replay: count from here)")),
    b(Normal, Char('w'), NONE, Msg::CycleWindow, Views(WINDOWED), ("w", "window", "window: cumulative / last 10 s / 1 s")),
    b(Normal, Up, NONE, Msg::Move(-1), Views(LISTS), ("↑↓", "select", "select row / CPU; PgUp/PgDn page")),
    b(Normal, Down, NONE, Msg::Move(1), Views(LISTS), ("", "", "")),
    b(Normal, PageUp, NONE, Msg::Move(-16), Views(LISTS), ("", "", "")),
    b(Normal, PageDown, NONE, Msg::Move(16), Views(LISTS), ("", "", "")),
    b(Normal, Char('a'), NONE, Msg::ToggleAggregate, Views(MAP), ("a", "map", "map: per CPU / per LLC")),
    b(Normal, Char('o'), NONE, Msg::CycleSort, Views(TASKS), ("o", "sort", "tasks: sort by the next column")),
    b(Normal, Enter, NONE, Msg::FilterSelected, Views(TASKS), ("Enter/Esc", "task/all", "tasks: every view to the selected task (pid:N) / clear")),
    b(Normal, Esc, NONE, Msg::ClearFilter, Views(TASKS), ("", "", "")),
    b(Normal, Left, NONE, Msg::Step(-1), Replay, ("←→", "step", "step 100 ms back / forward (pauses)")),
    b(Normal, Right, NONE, Msg::Step(1), Replay, ("", "", "")),
    b(Normal, Char('+'), NONE, Msg::Faster, Replay, ("+/-", "speed", "speed up / down")),
    b(Normal, Char('+'), SHIFT, Msg::Faster, Replay, ("", "", "")),
    b(Normal, Char('='), NONE, Msg::Faster, Replay, ("", "", "")),
    b(Normal, Char('-'), NONE, Msg::Slower, Replay, ("", "", "")),
    b(Normal, Char('g'), NONE, Msg::ToStart, Replay, ("g/G", "start/end", "go to start / end")),
    b(Normal, Char('G'), SHIFT, Msg::ToEnd, Replay, ("", "", "")),
    b(Normal, Char('G'), NONE, Msg::ToEnd, Replay, ("", "", "")),
    b(Normal, Char('j'), NONE, Msg::Jump(1), Replay, ("j/J", "jump", "jump 1 s forward / back")),
    b(Normal, Char('J'), SHIFT, Msg::Jump(-1), Replay, ("", "", "")),
    b(Normal, Char('J'), NONE, Msg::Jump(-1), Replay, ("", "", "")),
    b(Normal, Char('l'), NONE, Msg::ToggleLegend, All, ("l", "legend", "legend of this view: columns, marks, names")),
    b(Normal, Char('s'), NONE, Msg::Save, All, ("s", "save", "save report (text, JSON) and screen next to the recording")),
    b(Normal, Char('['), NONE, Msg::MarkStart, Replay, ("[ ]", "range", "mark range start / end: views and s cover it (g clears)")),
    b(Normal, Char(']'), NONE, Msg::MarkEnd, Replay, ("", "", "")),
    b(Help, Up, NONE, Msg::Move(-1), All, ("", "", "")),
    b(Help, Down, NONE, Msg::Move(1), All, ("", "", "")),
    b(Help, PageUp, NONE, Msg::Move(-10), All, ("", "", "")),
    b(Help, PageDown, NONE, Msg::Move(10), All, ("", "", "")),
    b(Filter, Enter, NONE, Msg::FilterApply, All, ("Enter", "", "filter: apply")),
    b(Filter, Esc, NONE, Msg::FilterCancel, All, ("Esc", "", "filter: cancel")),
    b(Filter, Backspace, NONE, Msg::FilterBackspace, All, ("", "", "")),
    b(Filter, Char('u'), CTRL, Msg::FilterClearLine, All, ("Ctrl-U", "", "filter: clear the line")),
];

/// Whether a binding is live for this view and source.
pub fn active(bd: &Binding, view: View, replay: bool) -> bool {
    match bd.scope {
        Scope::All => true,
        Scope::Replay => replay,
        Scope::Views(v) => v.contains(&view),
    }
}

/// The message for a key press, if any. Ctrl-C quits in every mode (raw mode turns it into a
/// key, not a SIGINT); in filter mode printable keys are text.
pub fn lookup(mode: Mode, view: View, replay: bool, key: KeyEvent) -> Option<Msg> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    if key.modifiers.contains(CTRL) && matches!(key.code, Char('c' | 'C')) {
        return Some(Msg::Quit);
    }
    // Terminals disagree on whether Shift is reported with shifted characters: ignore it there.
    let mods = match key.code {
        Char(_) => key.modifiers - SHIFT,
        _ => key.modifiers,
    };
    let hit = BINDINGS.iter().find(|bd| {
        let bm = match bd.code {
            Char(_) => bd.mods - SHIFT,
            _ => bd.mods,
        };
        bd.mode == mode && bd.code == key.code && bm == mods && active(bd, view, replay)
    });
    if let Some(bd) = hit {
        return Some(bd.msg);
    }
    match (mode, key.code) {
        (Mode::Filter, Char(c)) if !mods.intersects(CTRL | KeyModifiers::ALT) => {
            Some(Msg::FilterChar(c))
        }
        _ => None,
    }
}

/// `(key, what)` pairs for the footer of `view`.
pub fn footer(view: View, replay: bool, mode: Mode) -> Vec<(&'static str, &'static str)> {
    if mode == Mode::Filter {
        return vec![
            ("Enter", "apply"),
            ("Esc", "cancel"),
            ("^U", "clear"),
            ("empty", "clears the filter"),
        ];
    }
    BINDINGS
        .iter()
        .filter(|bd| bd.mode == Mode::Normal && !bd.short.is_empty() && active(bd, view, replay))
        .map(|bd| (bd.label, bd.short))
        .collect()
}
