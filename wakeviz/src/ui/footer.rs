//! The bottom line: the keys of the current view, or the filter prompt while typing one.
use ratatui::{
    Frame,
    layout::Rect,
    text::{Line, Span},
    widgets::Paragraph,
};

use super::fmt;
use crate::app::{App, Mode, keymap};

pub fn render(f: &mut Frame, area: Rect, app: &App) {
    let mut spans = Vec::new();
    if app.mode == Mode::Filter {
        spans.push(Span::styled(
            "filter (comm substring or pid)> ",
            fmt::bold(),
        ));
        spans.push(Span::raw(format!("{}█  ", app.filter_input)));
    }
    let width = usize::from(area.width);
    let mut used: usize = spans.iter().map(|s| s.content.chars().count()).sum();
    for (k, what) in keymap::footer(app.view, app.is_replay(), app.mode) {
        let n = k.chars().count() + what.chars().count() + 3;
        if used + n > width {
            break;
        }
        used += n;
        spans.push(fmt::key(k));
        spans.push(Span::raw(format!(" {what}  ")));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}
