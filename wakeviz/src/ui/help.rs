//! The `?` overlay: every binding of the keymap table, grouped by where it applies.
use ratatui::{
    Frame,
    layout::Rect,
    text::{Line, Span},
    widgets::{Block, Borders, Clear, Paragraph, Wrap},
};

use super::fmt;
use crate::app::{
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
    let w = area.width.saturating_sub(4).min(90);
    let h = (lines.len() as u16 + 2).min(area.height);
    let r = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(Block::default().borders(Borders::ALL).title(" Help: keys ")),
        r,
    );
}
