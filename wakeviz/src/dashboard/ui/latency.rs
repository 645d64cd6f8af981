//! Wakeup latency (`sched_wakeup` to the wakee running) per placement level of waker CPU ->
//! chosen CPU: does pulling a task across the machine make it wait less, or more? ↑↓ picks a
//! row (all, a level, new tasks) and the histogram below is that row's; the tail of the
//! histogram is never cut (the head gives way, marked), since the tail is what matters.
use ratatui::{
    Frame,
    layout::{Constraint, Layout, Rect},
    style::{Modifier, Style},
    text::{Line, Span},
    widgets::Paragraph,
};
use wakeviz_core::analysis::latency::{LatencySummary, Quantiles, render_log2};

use super::fmt;
use crate::dashboard::app::{App, View, Window};

/// The rows of the table, in order: `(label, summary, exists)`; `exists` is false for a level
/// no CPU pair of this topology has (n/a, never 0).
fn rows(app: &App) -> Vec<(String, &LatencySummary, bool)> {
    let wl = &app.data.snap.wakeup_latency;
    let all = match app.window {
        Window::Cumulative => &wl.overall,
        Window::Last10s => &wl.windows.w10s,
        Window::Last1s => &wl.windows.w1s,
    };
    let topo = &app.data.snap.topology;
    let mut v = vec![(format!("all [{}]", app.window.label()), all, true)];
    for (l, s) in &wl.by_level.0 {
        v.push((
            l.name().to_string(),
            s,
            topo.level_exists(*l) || s.quantiles.count > 0,
        ));
    }
    v.push(("new tasks (fork)".into(), &wl.new_task, true));
    v
}

pub fn render(f: &mut Frame, area: Rect, app: &App) {
    let rows = rows(app);
    let sel = app.sel[View::Latency.index()].min(rows.len().saturating_sub(1));
    let mut lines = vec![Line::from(Span::styled(
        format!(
            "{:<22} {:>7} {:>8} {:>8} {:>8} {:>8} {:>8}",
            "waker -> chosen", "n", "p50", "p90", "p99", "p99.9", "max"
        ),
        fmt::bold(),
    ))];
    // The table takes at most half the height; what does not fit scrolls with the selection.
    let room = (usize::from(area.height) / 2).clamp(2, rows.len() + 1) - 1;
    let first = sel.saturating_sub(room.saturating_sub(1));
    let cut_below = rows.len().saturating_sub(first + room);
    let shown = if cut_below > 0 {
        room.saturating_sub(1)
    } else {
        room
    };
    for (i, (name, s, exists)) in rows.iter().enumerate().skip(first).take(shown) {
        let mut line = if *exists {
            row(name, &s.quantiles)
        } else {
            Line::from(Span::styled(
                format!("{name:<22} {:>7}", "n/a on this topology"),
                fmt::dim(),
            ))
        };
        if i == sel {
            line = line.style(Style::default().add_modifier(Modifier::REVERSED));
        }
        lines.push(line);
    }
    let hidden = rows.len() - first - shown;
    if hidden > 0 {
        lines.push(Line::from(Span::styled(
            format!("{hidden} more ↓"),
            fmt::dim(),
        )));
    }
    if app.window != Window::Cumulative {
        lines.push(Line::from(Span::styled(
            "per-level rows are cumulative; 'all' follows the window",
            fmt::dim(),
        )));
    }
    let n = lines.len() as u16;
    let [top, bottom] = Layout::vertical([Constraint::Length(n), Constraint::Min(0)]).areas(area);
    f.render_widget(Paragraph::new(fmt::fit_lines(lines, top.width)), top);
    let (name, s, exists) = &rows[sel];
    let cumulative = if sel == 0 { "" } else { ", cumulative" };
    let unit = app.data.snap.wakeup_latency.log2_unit;
    let title = format!("{name}: log2 buckets [{unit}]{cumulative}  (↑↓ row)");
    f.render_widget(
        Paragraph::new(fmt::fit_lines(
            histogram(s, *exists, &title, bottom),
            bottom.width,
        )),
        bottom,
    );
}

/// The histogram lines for `area`: when the buckets do not fit, the lowest give way (marked
/// "N more ↑"), so the slowest wakeups stay on screen.
fn histogram(s: &LatencySummary, exists: bool, title: &str, area: Rect) -> Vec<Line<'static>> {
    let mut lines = vec![Line::from(Span::styled(title.to_string(), fmt::bold()))];
    if !exists {
        lines.push(Line::from(Span::styled(
            "n/a: no CPU pair of this topology stands in this relation",
            fmt::dim(),
        )));
        return lines;
    }
    if s.log2.is_empty() {
        lines.push(Line::from(Span::styled("n/a: no samples yet", fmt::dim())));
        return lines;
    }
    let bar = usize::from(area.width).saturating_sub(24).clamp(4, 52);
    let text = render_log2(&s.log2, bar);
    let all: Vec<&str> = text.lines().collect();
    let rows = usize::from(area.height).saturating_sub(1);
    if all.len() <= rows {
        lines.extend(all.iter().map(|l| Line::raw((*l).to_string())));
    } else {
        let keep = rows.saturating_sub(1);
        lines.push(Line::from(Span::styled(
            format!("{} more ↑ (faster buckets)", all.len() - keep),
            fmt::dim(),
        )));
        lines.extend(
            all[all.len() - keep..]
                .iter()
                .map(|l| Line::raw((*l).to_string())),
        );
    }
    lines
}

fn row(name: &str, q: &Quantiles) -> Line<'static> {
    if q.count == 0 {
        return Line::from(Span::styled(
            format!("{name:<22} {:>7} {:>8}", 0, "n/a"),
            fmt::dim(),
        ));
    }
    Line::raw(format!(
        "{name:<22} {:>7} {:>8} {:>8} {:>8} {:>8} {:>8}",
        fmt::count(q.count),
        fmt::ns(q.p50),
        fmt::ns(q.p90),
        fmt::ns(q.p99),
        fmt::ns(q.p999),
        fmt::ns(q.max)
    ))
}
