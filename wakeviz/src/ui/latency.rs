//! Wakeup latency (`sched_wakeup` to the wakee running) per placement level of waker CPU ->
//! chosen CPU: does pulling a task across the machine make it wait less, or more?
use ratatui::{
    Frame,
    layout::{Constraint, Layout, Rect},
    text::{Line, Span},
    widgets::Paragraph,
};
use wakeviz_core::analysis::latency::Quantiles;

use super::{fmt, scan};
use crate::app::{App, Window};

pub fn render(f: &mut Frame, area: Rect, app: &App) {
    let wl = &app.data.snap.wakeup_latency;
    let all = match app.window {
        Window::Cumulative => &wl.overall,
        Window::Last10s => &wl.windows.w10s,
        Window::Last1s => &wl.windows.w1s,
    };
    let topo = &app.data.header().topology;
    let mut lines = vec![
        Line::from(Span::styled(
            format!(
                "{:<22} {:>7} {:>8} {:>8} {:>8} {:>8} {:>8}",
                "waker -> chosen", "n", "p50", "p90", "p99", "p99.9", "max"
            ),
            fmt::bold(),
        )),
        row(&format!("all [{}]", app.window.label()), &all.quantiles),
    ];
    for (l, s) in &wl.by_level.0 {
        if topo.level_exists(*l) || s.quantiles.count > 0 {
            lines.push(row(l.name(), &s.quantiles));
        } else {
            lines.push(Line::from(Span::styled(
                format!("{:<22} {:>7}", l.name(), "n/a on this topology"),
                fmt::dim(),
            )));
        }
    }
    lines.push(row("new tasks (fork)", &wl.new_task.quantiles));
    if app.window != Window::Cumulative {
        lines.push(Line::from(Span::styled(
            "per-level rows are cumulative; 'all' follows the window",
            fmt::dim(),
        )));
    }
    let n = lines.len() as u16 + 1;
    let [top, bottom] = Layout::vertical([Constraint::Length(n), Constraint::Min(0)]).areas(area);
    f.render_widget(Paragraph::new(lines), top);
    scan::histogram(f, bottom, all, wl.log2_unit);
}

fn row(name: &str, q: &Quantiles) -> Line<'static> {
    if q.count == 0 {
        return Line::from(Span::styled(format!("{name:<22} {:>7}", 0), fmt::dim()));
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
