//! The bottom line: the keys of the current view, or the filter prompt while typing one. When
//! the line is narrow the hints shrink by priority instead of vanishing: first the words of
//! the later keys go (the key alone stays), then those keys, and a `…` says some are left out;
//! `q` and `?` (which lists them all) stay to the last.
use ratatui::{
    Frame,
    layout::Rect,
    text::{Line, Span},
    widgets::Paragraph,
};

use super::fmt;
use crate::dashboard::app::{App, Mode, keymap};

/// The hints for `width` columns: `(key, word)`, the word empty where it had to go.
pub fn fit(
    hints: &[(&'static str, &'static str)],
    width: usize,
) -> (Vec<(&'static str, &'static str)>, bool) {
    let cost = |h: &[(&str, &str)]| -> usize {
        h.iter()
            .map(|(k, w)| {
                k.chars().count()
                    + if w.is_empty() {
                        1
                    } else {
                        w.chars().count() + 3
                    }
            })
            .sum()
    };
    let mut v: Vec<_> = hints.to_vec();
    // The first two (quit, help) are kept whole; words go from the end.
    for i in (2..v.len()).rev() {
        if cost(&v) <= width {
            return (v, false);
        }
        v[i].1 = "";
    }
    let mut cut = false;
    while cost(&v) + if cut { 1 } else { 0 } > width && v.len() > 2 {
        v.pop();
        cut = true;
    }
    (v, cut)
}

pub fn render(f: &mut Frame, area: Rect, app: &App) {
    let mut spans = Vec::new();
    if app.mode == Mode::Filter {
        spans.push(Span::styled(
            "filter (comm substring or pid)> ",
            fmt::bold(),
        ));
        spans.push(Span::raw(format!("{}█  ", app.filter_input)));
    }
    let used: usize = spans.iter().map(|s| s.content.chars().count()).sum();
    let width = usize::from(area.width).saturating_sub(used);
    let hints = keymap::footer(app.view, app.is_replay(), app.mode);
    let (shown, cut) = fit(&hints, width);
    for (k, what) in shown {
        spans.push(fmt::key(k));
        if what.is_empty() {
            spans.push(Span::raw(" "));
        } else {
            spans.push(Span::raw(format!(" {what}  ")));
        }
    }
    if cut {
        spans.push(Span::styled("…", fmt::dim()));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_shrink_before_they_go() {
        let h = [
            ("q", "quit"),
            ("?", "help"),
            ("/", "filter"),
            ("r", "reset"),
        ];
        let (all, cut) = fit(&h, 80);
        assert_eq!((all.len(), cut), (4, false));
        assert!(all.iter().all(|(_, w)| !w.is_empty()));
        // "q quit  " 8 + "? help  " 8 + "/ filter  " 10 + "r " 2 = 28
        let (some, cut) = fit(&h, 28);
        assert_eq!(
            some,
            [("q", "quit"), ("?", "help"), ("/", "filter"), ("r", "")]
        );
        assert!(!cut);
        let (few, cut) = fit(&h, 19);
        assert_eq!(few, [("q", "quit"), ("?", "help"), ("/", "")]);
        assert!(cut);
    }
}
