//! Scan latency, compared: percentiles of both runs with their Δ, the two log2 histograms
//! bucket by bucket, and per-LLC p99 rows when the LLC layout is the same.
use ratatui::{
    Frame,
    layout::{Constraint, Layout, Rect},
    style::{Modifier, Style},
    text::{Line, Span},
    widgets::Paragraph,
};
use wakeviz_core::analysis::latency::Quantiles;

use super::{Cmp, histograms};
use crate::{
    dashboard::app::{App, View},
    dashboard::ui::fmt,
};

pub fn render(f: &mut Frame, area: Rect, app: &App, c: &Cmp) {
    let (sc, sb) = (&c.cur.scan_latency, &c.base.scan_latency);
    let [head, body] = Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(area);
    let mut src = vec![Span::styled("source ", fmt::dim()), Span::raw(sc.source)];
    if sb.source != sc.source {
        src.push(Span::styled(
            format!(" (baseline: {})", sb.source),
            fmt::warn(),
        ));
    }
    f.render_widget(Paragraph::new(Line::from(src)), head);
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(55), Constraint::Min(0)]).areas(body);
    let table = quantile_table(c, &sc.overall.quantiles, &sb.overall.quantiles);
    let n = table.len() as u16 + 1;
    let [top, hist] = Layout::vertical([Constraint::Length(n), Constraint::Min(0)]).areas(left);
    f.render_widget(Paragraph::new(table), top);
    // The histograms follow the selection as in the single-run view: row 0 is every LLC, the
    // others one LLC each (only when both runs have the same LLCs).
    let sel = selected(app, c);
    match sel
        .checked_sub(1)
        .and_then(|i| sc.per_llc.get(i).zip(sb.per_llc.get(i)))
    {
        Some((a, b)) => {
            let [t, h] = Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(hist);
            f.render_widget(
                Paragraph::new(Line::from(Span::styled(
                    format!("LLC {} (CPUs {})", a.id, a.cpus),
                    fmt::bold(),
                ))),
                t,
            );
            histograms(f, h, &a.latency.log2, &b.latency.log2, sc.log2_unit);
        }
        None => histograms(f, hist, &sc.overall.log2, &sb.overall.log2, sc.log2_unit),
    }
    per_llc(f, right, sel, c);
}

/// The selected row: 0 = every LLC, `i + 1` = LLC `i`, the same numbering as the single-run
/// view so a selection survives switching between them; only row 0 when the layouts differ.
fn selected(app: &App, c: &Cmp) -> usize {
    if !c.same_llcs {
        return 0;
    }
    let llcs = c
        .cur
        .scan_latency
        .per_llc
        .len()
        .min(c.base.scan_latency.per_llc.len());
    app.sel[View::Scan.index()].min(llcs)
}

/// `n`, p50 .. max of both sides and the Δ (relative; `n/a` where a side has no samples).
pub fn quantile_table(c: &Cmp, a: &Quantiles, b: &Quantiles) -> Vec<Line<'static>> {
    let mut l = vec![Line::from(Span::styled(
        format!("{:<6} {:>8} {:>8} {:>8}", "", "current", "baseline", "Δ"),
        fmt::bold(),
    ))];
    l.push(Line::raw(format!(
        "{:<6} {:>8} {:>8} {:>8}",
        "n",
        fmt::count(a.count),
        fmt::count(b.count),
        c.rel(a.count, b.count)
    )));
    for (name, x, y) in [
        ("p50", a.p50, b.p50),
        ("p90", a.p90, b.p90),
        ("p99", a.p99, b.p99),
        ("p99.9", a.p999, b.p999),
        ("max", a.max, b.max),
    ] {
        let show = |q: &Quantiles, v: u64| if q.count == 0 { "-".into() } else { fmt::ns(v) };
        let d = if a.count == 0 || b.count == 0 {
            "n/a".into()
        } else {
            c.rel(x, y)
        };
        l.push(Line::raw(format!(
            "{name:<6} {:>8} {:>8} {d:>8}",
            show(a, x),
            show(b, y)
        )));
    }
    l
}

fn per_llc(f: &mut Frame, area: Rect, sel: usize, c: &Cmp) {
    let (sc, sb) = (&c.cur.scan_latency, &c.base.scan_latency);
    let mut lines = vec![Line::from(Span::styled(
        "per LLC p99 (chosen CPU)",
        fmt::bold(),
    ))];
    if !c.same_llcs {
        lines.push(Line::from(Span::styled(
            "not compared: the LLC layouts differ",
            fmt::dim(),
        )));
        f.render_widget(Paragraph::new(lines), area);
        return;
    }
    lines.push(Line::from(Span::styled(
        format!(
            "{:<4} {:>6} {:>7} {:>7} {:>7}",
            "LLC", "n", "current", "base", "Δ"
        ),
        fmt::dim(),
    )));
    let rows = usize::from(area.height).saturating_sub(3);
    let first = sel.saturating_sub(rows.saturating_sub(1));
    let list = std::iter::once(("all".to_string(), &sc.overall, &sb.overall)).chain(
        sc.per_llc
            .iter()
            .zip(&sb.per_llc)
            .map(|(a, b)| (a.id.to_string(), &a.latency, &b.latency)),
    );
    for (i, (name, a, b)) in list.enumerate().skip(first).take(rows) {
        let (qa, qb) = (&a.quantiles, &b.quantiles);
        let show = |q: &Quantiles| {
            if q.count == 0 {
                "-".into()
            } else {
                fmt::ns(q.p99)
            }
        };
        let d = if qa.count == 0 || qb.count == 0 {
            "n/a".into()
        } else {
            c.rel(qa.p99, qb.p99)
        };
        let text = format!(
            "{:<4} {:>6} {:>7} {:>7} {d:>7}",
            name,
            fmt::count(qa.count),
            show(qa),
            show(qb)
        );
        let style = if i == sel {
            Style::default().add_modifier(Modifier::REVERSED)
        } else {
            Style::default()
        };
        lines.push(Line::from(Span::styled(text, style)));
    }
    if let Some(l) = sel.checked_sub(1).and_then(|i| sc.per_llc.get(i)) {
        lines.push(Line::from(Span::styled(
            format!("LLC {} = CPUs {}", l.id, l.cpus),
            fmt::dim(),
        )));
    }
    f.render_widget(Paragraph::new(lines), area);
}
