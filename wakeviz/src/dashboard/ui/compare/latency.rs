//! Wakeup latency, compared: per placement level (waker CPU -> chosen CPU) the sample count
//! and p50/p99 of both runs with their Δ, then the two overall histograms.
use ratatui::{
    Frame,
    layout::{Constraint, Layout, Rect},
    text::{Line, Span},
    widgets::Paragraph,
};
use wakeviz_core::analysis::latency::Quantiles;

use super::{Cmp, histograms};
use crate::dashboard::ui::fmt;

pub fn render(f: &mut Frame, area: Rect, c: &Cmp) {
    let (wa, wb) = (&c.cur.wakeup_latency, &c.base.wakeup_latency);
    let mut lines = vec![Line::from(Span::styled(
        format!(
            "{:<16} {:>6} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}",
            "waker -> chosen", "n", "Δ", "p50", "Δ", "p99", "base", "Δ"
        ),
        fmt::bold(),
    ))];
    lines.push(row(c, "all", &wa.overall.quantiles, &wb.overall.quantiles));
    for ((l, a), (_, b)) in wa.by_level.0.iter().zip(&wb.by_level.0) {
        // A level neither machine can have is n/a, as the single-run view says, not a 0.
        let exists = |s: &wakeviz_core::analysis::Snapshot| s.topology.level_exists(*l);
        if exists(c.cur) || exists(c.base) || a.quantiles.count > 0 || b.quantiles.count > 0 {
            lines.push(row(c, l.name(), &a.quantiles, &b.quantiles));
        } else {
            lines.push(Line::from(Span::styled(
                format!("{:<16} {:>6}", l.name(), "n/a on this topology"),
                fmt::dim(),
            )));
        }
    }
    lines.push(row(
        c,
        "new tasks",
        &wa.new_task.quantiles,
        &wb.new_task.quantiles,
    ));
    let n = lines.len() as u16 + 1;
    let [top, bottom] = Layout::vertical([Constraint::Length(n), Constraint::Min(0)]).areas(area);
    f.render_widget(Paragraph::new(lines), top);
    histograms(f, bottom, &wa.overall.log2, &wb.overall.log2, wa.log2_unit);
}

fn row(c: &Cmp, name: &str, a: &Quantiles, b: &Quantiles) -> Line<'static> {
    let both = a.count > 0 && b.count > 0;
    let d = |x: u64, y: u64| if both { c.rel(x, y) } else { "n/a".into() };
    let v = |q: &Quantiles, x: u64| if q.count == 0 { "-".into() } else { fmt::ns(x) };
    let text = format!(
        "{name:<16} {:>6} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}",
        fmt::count(a.count),
        c.rel(a.count, b.count),
        v(a, a.p50),
        d(a.p50, b.p50),
        v(a, a.p99),
        v(b, b.p99),
        d(a.p99, b.p99)
    );
    if a.count == 0 && b.count == 0 {
        Line::from(Span::styled(text, fmt::dim()))
    } else {
        Line::raw(text)
    }
}
