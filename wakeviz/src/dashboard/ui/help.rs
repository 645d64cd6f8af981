//! The `?` overlay: every binding of the keymap table, grouped by where it applies. A line too
//! long is ellipsised; a list too long for the terminal scrolls (↑↓ PgUp PgDn) and the title
//! says how much is above and below.
use ratatui::{
    Frame,
    layout::Rect,
    text::{Line, Span},
    widgets::{Block, Borders, Clear, Paragraph},
};

use super::fmt;
use crate::dashboard::app::{
    App, Mode,
    keymap::{BINDINGS, Scope},
};

pub fn render(f: &mut Frame, area: Rect, app: &App) {
    let mut lines = Vec::new();
    let replay_title = if app.is_replay() {
        "Replay"
    } else {
        "Replay (with --replay FILE)"
    };
    for (group, title) in [(0, "Everywhere"), (1, "In some views"), (2, replay_title)] {
        let pick = |s: Scope| match s {
            Scope::All => group == 0,
            Scope::Views(_) => group == 1,
            Scope::Replay => group == 2,
        };
        lines.push(Line::from(Span::styled(title, fmt::bold())));
        for b in BINDINGS
            .iter()
            .filter(|b| b.mode == Mode::Normal && !b.label.is_empty() && pick(b.scope))
        {
            let mut help = b.help.to_string();
            if let Scope::Views(v) = b.scope {
                let names: Vec<&str> = v.iter().map(|v| v.tab()).collect();
                help.push_str(&format!(" ({})", names.join(", ")));
            }
            lines.push(Line::from(vec![
                Span::raw("  "),
                fmt::key(b.label),
                Span::raw(format!(
                    "{}{help}",
                    " ".repeat(10usize.saturating_sub(b.label.chars().count()))
                )),
            ]));
        }
    }
    lines.push(Line::from(Span::styled(
        "Ctrl-C also quits. ? or Esc closes this help.",
        fmt::dim(),
    )));
    let w = area.width.saturating_sub(2).min(90);
    let h = (lines.len() as u16 + 2).min(area.height);
    let r = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    let inner_w = usize::from(w.saturating_sub(2));
    let rows = usize::from(h.saturating_sub(2));
    let lines: Vec<Line> = lines
        .into_iter()
        .map(|l| {
            let t = l.to_string();
            if t.chars().count() > inner_w {
                Line::raw(fmt::ellipsis(&t, inner_w))
            } else {
                l
            }
        })
        .collect();
    let top = usize::from(app.help_scroll).min(lines.len().saturating_sub(rows));
    let below = lines.len().saturating_sub(top + rows);
    let title = if top == 0 && below == 0 {
        " Help: keys ".to_string()
    } else {
        format!(" Help: keys · {top} above, {below} more ↓ (↑↓ scroll) ")
    };
    let shown: Vec<Line> = lines.into_iter().skip(top).take(rows).collect();
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(shown).block(
            Block::default()
                .borders(Borders::ALL)
                .title(fmt::ellipsis(&title, usize::from(w).saturating_sub(2))),
        ),
        r,
    );
}
