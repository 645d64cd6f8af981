//! The waker x chosen heat map: rows are the waker CPU (or LLC past 64 CPUs), columns where
//! the wakee was put; the shade is the cell's count against the busiest cell (log scale), the
//! colour the level between row and column, so the diagonal (same CPU) and the LLC blocks
//! stand out.
//! Cumulative (the title says so). ↑↓ move the selected row, whose top destinations are
//! listed under the map.
use ratatui::{
    Frame,
    layout::Rect,
    style::{Modifier, Style},
    text::{Line, Span},
    widgets::Paragraph,
};
use wakeviz_core::{
    analysis::matrix::{Axis, MatrixSection},
    topology::{Level, Topology},
};

use super::{fmt, timeline::level_color};
use crate::dashboard::app::{App, View};

/// Width of the row labels (`" 123 "`).
const LABEL_W: usize = 5;

pub fn render(f: &mut Frame, area: Rect, app: &App) {
    let m = &app.data.snap.matrix;
    let topo = &app.data.header().topology;
    let n = m.labels.len();
    if area.height == 0 || area.width == 0 {
        return;
    }
    if m.total == 0 {
        super::timeline::empty(f, area, app);
        return;
    }
    let unit = match m.axis {
        Axis::Cpu => "CPU",
        Axis::Llc => "LLC",
    };
    let max = m.max();
    let width = usize::from(area.width);
    // Cell width: numbers under every column when they fit, else ticks (see `col_axis`).
    let digits = m.labels.iter().max().map_or(1, |v| v.to_string().len());
    let room = width.saturating_sub(LABEL_W);
    let cw = if room >= n * (digits + 1) {
        digits + 1
    } else if room >= n * 2 {
        2
    } else {
        1
    };
    let shown_cols = (room / cw).min(n);
    let sel = app.sel[View::Matrix.index()].min(n.saturating_sub(1));
    let mut lines = vec![Line::from(vec![
        Span::styled(
            format!("rows: waker {unit}  columns: chosen {unit}"),
            fmt::bold(),
        ),
        Span::styled(
            format!(
                "  {} wakeups, busiest cell {}",
                fmt::count(m.total),
                fmt::count(max)
            ),
            fmt::dim(),
        ),
    ])];
    lines.push(col_axis(m, cw, shown_cols, n));
    // Rows left after the two header lines, the detail line and the legend line.
    let foot = if area.height >= 8 { 2 } else { 0 };
    let rows = usize::from(area.height).saturating_sub(2 + foot);
    let (first, take) = window(sel, n, rows);
    let reps: Vec<Option<u32>> = (0..n).map(|i| representative(m, topo, i)).collect();
    for r in first..first + take {
        let label = format!("{:>4} ", m.labels[r]);
        let lstyle = if r == sel {
            Style::default().add_modifier(Modifier::REVERSED)
        } else {
            Style::default()
        };
        let mut spans = vec![Span::styled(label, lstyle)];
        for c in 0..shown_cols {
            let v = m
                .counts
                .get(r)
                .and_then(|row| row.get(c))
                .copied()
                .unwrap_or(0);
            let ch = log_shade(v, max);
            let cell: String = if cw == 1 {
                ch.to_string()
            } else {
                format!("{}{}", ch.to_string().repeat(cw - 1), ' ')
            };
            let style = match (reps[r], reps[c]) {
                (Some(a), Some(b)) if v > 0 => topo
                    .level(a, b)
                    .map_or(Style::default(), |l| Style::default().fg(level_color(l))),
                _ => fmt::dim(),
            };
            spans.push(Span::styled(cell, style));
        }
        lines.push(Line::from(spans));
    }
    if foot > 0 {
        lines.push(detail(m, sel, unit));
        lines.push(legend(topo));
    }
    let (above, below) = (first, n - (first + take));
    if above + below > 0
        && let Some(l) = lines.first_mut()
    {
        let mut t = String::new();
        if above > 0 {
            t.push_str(&format!("{above} more ↑ "));
        }
        if below > 0 {
            t.push_str(&format!("{below} more ↓ "));
        }
        l.spans.insert(0, Span::styled(t, fmt::warn()));
    }
    if shown_cols < n
        && let Some(l) = lines.get_mut(1)
    {
        l.spans.push(Span::styled(
            format!(" {} more →", n - shown_cols),
            fmt::dim(),
        ));
    }
    f.render_widget(Paragraph::new(fmt::fit_lines(lines, area.width)), area);
}

/// Shade of a cell on a log scale to the busiest cell: a few hot pairs (a pinned pipe) would
/// otherwise leave every other cell at the lowest shade and the block structure invisible.
fn log_shade(n: u64, max: u64) -> char {
    if n == 0 || max == 0 {
        return '·';
    }
    let q = ((n as f64).ln_1p() / (max as f64).ln_1p() * 4.0).ceil() as u32;
    match q {
        0 | 1 => '░',
        2 => '▒',
        3 => '▓',
        _ => '█',
    }
}

/// First row and number of rows to show so that `sel` is visible.
fn window(sel: usize, n: usize, rows: usize) -> (usize, usize) {
    let take = rows.min(n);
    let first = sel.saturating_sub(take.saturating_sub(1)).min(n - take);
    (first, take)
}

/// A CPU standing for axis position `i`, to colour cells by level.
fn representative(m: &MatrixSection, t: &Topology, i: usize) -> Option<u32> {
    match m.axis {
        Axis::Cpu => m.labels.get(i).copied(),
        Axis::Llc => t
            .llcs
            .get(i * m.step.max(1) as usize)
            .and_then(|g| g.cpus.first()),
    }
}

/// Column numbers: under every column when the cells are wider than the numbers, else under
/// every 2nd, 4th or 8th column (a tick), never two numbers touching.
fn col_axis(m: &MatrixSection, cw: usize, shown: usize, n: usize) -> Line<'static> {
    let digits = m.labels.iter().max().map_or(1, |v| v.to_string().len());
    let step = [1, 2, 4, 8, 16]
        .into_iter()
        .find(|s| s * cw > digits)
        .unwrap_or(32);
    let mut buf = vec![' '; shown.min(n) * cw];
    for c in (0..shown.min(n)).step_by(step) {
        let t = m.labels[c].to_string();
        let at = c * cw;
        if at + t.len() <= buf.len() {
            for (k, ch) in t.chars().enumerate() {
                buf[at + k] = ch;
            }
        }
    }
    let s: String = " ".repeat(LABEL_W) + &buf.into_iter().collect::<String>();
    Line::from(Span::styled(s, fmt::dim()))
}

/// The selected row's total and its busiest destinations.
fn detail(m: &MatrixSection, sel: usize, unit: &str) -> Line<'static> {
    let Some(row) = m.counts.get(sel) else {
        return Line::raw("");
    };
    let total: u64 = row.iter().sum();
    let mut top: Vec<(usize, u64)> = row
        .iter()
        .copied()
        .enumerate()
        .filter(|c| c.1 > 0)
        .collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let dests: Vec<String> = top
        .iter()
        .take(3)
        .map(|&(c, v)| format!("{unit} {} {}", m.labels[c], fmt::pct(v, total)))
        .collect();
    let label = m.labels.get(sel).copied().unwrap_or_default();
    let what = if dests.is_empty() {
        "none".to_string()
    } else {
        dests.join(", ")
    };
    Line::from(vec![
        Span::styled(
            format!("waker {unit} {label}: {} wakeups -> ", fmt::count(total)),
            fmt::bold(),
        ),
        Span::raw(what),
    ])
}

/// Shades and colours, as one line.
fn legend(t: &Topology) -> Line<'static> {
    let mut spans = vec![Span::styled("·0 ░▒▓█ log to busiest  ", fmt::dim())];
    for l in Level::ALL {
        if t.level_exists(l) {
            spans.push(Span::styled(
                format!("█{} ", l.name()),
                Style::default().fg(level_color(l)),
            ));
        }
    }
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::{log_shade, window};

    #[test]
    fn shades_are_logarithmic() {
        assert_eq!(log_shade(0, 1_000), '·');
        assert_eq!(log_shade(1, 1_000), '░');
        assert_eq!(log_shade(30, 1_000), '▒');
        assert_eq!(log_shade(150, 1_000), '▓');
        assert_eq!(log_shade(1_000, 1_000), '█');
        assert_eq!(log_shade(5, 0), '·');
    }

    #[test]
    fn the_selected_row_stays_visible() {
        assert_eq!(window(0, 32, 10), (0, 10));
        assert_eq!(window(15, 32, 10), (6, 10));
        assert_eq!(window(31, 32, 10), (22, 10));
        assert_eq!(window(3, 4, 10), (0, 4));
        assert_eq!(window(0, 4, 0), (0, 0));
    }
}
