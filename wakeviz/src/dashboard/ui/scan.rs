//! Scan latency: the time the kernel spent choosing a CPU, as log2 bars (bpftrace `hist()`
//! style) with percentiles, and per-LLC rows. Always labelled with what is measured
//! (`select_idle_cpu` itself, or all of `select_task_rq_fair` when that is inlined).
use ratatui::{
    Frame,
    layout::{Alignment, Constraint, Layout, Rect},
    style::{Modifier, Style},
    text::{Line, Span},
    widgets::{Paragraph, Wrap},
};
use wakeviz_core::{
    analysis::latency::{LatencySummary, render_log2},
    figures::{Figure, Figures},
};

use super::fmt;
use crate::dashboard::app::{App, View, Window};

pub fn render(f: &mut Frame, area: Rect, app: &App) {
    let sc = &app.data.snap.scan_latency;
    if !sc.available {
        let why = app
            .data
            .header()
            .probe("select_task_rq_fair")
            .and_then(|p| p.state.reason())
            .map_or_else(String::new, |r| format!("select_task_rq_fair: {r}"));
        let msg = vec![
            Line::raw(""),
            Line::from(Span::styled(
                sc.status.unwrap_or("unavailable"),
                fmt::warn().add_modifier(Modifier::BOLD),
            )),
            Line::raw(""),
            Line::raw("Scan latency needs the fentry/fexit probes on select_task_rq_fair."),
            Line::from(Span::styled(why, fmt::dim())),
        ];
        f.render_widget(
            Paragraph::new(msg)
                .alignment(Alignment::Center)
                .wrap(Wrap { trim: true }),
            area,
        );
        return;
    }
    let sum = match app.window {
        Window::Cumulative => &sc.overall,
        Window::Last10s => &sc.windows.w10s,
        Window::Last1s => &sc.windows.w1s,
    };
    let [head, body] = Layout::vertical([Constraint::Length(3), Constraint::Min(0)]).areas(area);
    let src = Line::from(vec![
        Span::styled("source ", fmt::dim()),
        Span::raw(sc.source),
    ]);
    f.render_widget(
        Paragraph::new(fmt::fit_lines(
            vec![
                src,
                quantiles(sum),
                if sc.measured.is_some() {
                    measured(&app.data.snap.figures)
                } else {
                    Line::raw("")
                },
            ],
            head.width,
        )),
        head,
    );
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(55), Constraint::Min(0)]).areas(body);
    // The histogram follows the selection: row 0 is every LLC (in the chosen window), the
    // others one LLC each (cumulative: the windows keep no per-LLC histograms).
    let sel = app.sel[View::Scan.index()].min(sc.per_llc.len());
    match sel.checked_sub(1).and_then(|i| sc.per_llc.get(i)) {
        Some(l) => {
            let [t, h] = Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(left);
            f.render_widget(
                Paragraph::new(Line::from(Span::styled(
                    format!("LLC {} (CPUs {}), cumulative", l.id, l.cpus),
                    fmt::bold(),
                ))),
                t,
            );
            histogram(f, h, &l.latency, sc.log2_unit);
        }
        None => histogram(f, left, sum, sc.log2_unit),
    }
    per_llc(f, right, app);
}

pub fn quantiles(s: &LatencySummary) -> Line<'static> {
    let q = &s.quantiles;
    Line::from(vec![
        Span::styled(format!("n={} ", fmt::count(q.count)), fmt::bold()),
        Span::raw(format!(
            " p50 {}  p90 {}  p99 {}  p99.9 {}  max {}",
            fmt::ns(q.p50),
            fmt::ns(q.p90),
            fmt::ns(q.p99),
            fmt::ns(q.p999),
            fmt::ns(q.max)
        )),
    ])
}

/// What the debug-info probes counted, cumulative: how often a placement scanned, how far
/// (the registered figures' values).
fn measured(figures: &Figures) -> Line<'static> {
    let v = |name: &str| {
        figures
            .get(name)
            .map_or_else(|| "n/a".to_string(), Figure::value_text)
    };
    Line::from(vec![
        Span::styled("measured ", fmt::dim()),
        Span::raw(format!(
            "{} placements, {} scanned, {} tested per scan, idle-core search {}",
            v("scan.measured.calls"),
            v("scan.measured.scans.share"),
            v("scan.measured.cpus_per_scan"),
            v("scan.measured.core.share"),
        )),
    ])
}

/// Log2 buckets drawn as bpftrace does, cut to the rows available.
pub fn histogram(f: &mut Frame, area: Rect, s: &LatencySummary, unit: &str) {
    let mut lines = vec![Line::from(Span::styled(
        format!("log2 buckets [{unit}]"),
        fmt::bold(),
    ))];
    if s.log2.is_empty() {
        lines.push(Line::from(Span::styled("no samples yet", fmt::dim())));
    } else {
        let bar = usize::from(area.width).saturating_sub(24).clamp(4, 52);
        let text = render_log2(&s.log2, bar);
        let rows = usize::from(area.height).saturating_sub(1);
        let all: Vec<&str> = text.lines().collect();
        let shown = if all.len() > rows {
            rows.saturating_sub(1)
        } else {
            all.len()
        };
        lines.extend(all.iter().take(shown).map(|l| Line::raw((*l).to_string())));
        if shown < all.len() {
            lines.push(Line::from(Span::styled(
                format!("… {} more buckets", all.len() - shown),
                fmt::dim(),
            )));
        }
    }
    f.render_widget(Paragraph::new(fmt::fit_lines(lines, area.width)), area);
}

fn per_llc(f: &mut Frame, area: Rect, app: &App) {
    let sc = &app.data.snap.scan_latency;
    let sel = app.sel[View::Scan.index()].min(sc.per_llc.len());
    let mut lines = vec![
        Line::from(Span::styled(
            "per LLC (chosen CPU), cumulative",
            fmt::bold(),
        )),
        Line::from(Span::styled(
            format!(
                "{:<4} {:>6} {:>7} {:>7} {:>7}",
                "LLC", "n", "p50", "p99", "max"
            ),
            fmt::dim(),
        )),
    ];
    let rows = usize::from(area.height).saturating_sub(3);
    let first = sel.saturating_sub(rows.saturating_sub(1));
    let list = std::iter::once(("all".to_string(), &sc.overall))
        .chain(sc.per_llc.iter().map(|l| (l.id.to_string(), &l.latency)));
    for (i, (name, lat)) in list.enumerate().skip(first).take(rows) {
        let q = &lat.quantiles;
        let text = format!(
            "{:<4} {:>6} {:>7} {:>7} {:>7}",
            name,
            fmt::count(q.count),
            fmt::ns(q.p50),
            fmt::ns(q.p99),
            fmt::ns(q.max)
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
    f.render_widget(Paragraph::new(fmt::fit_lines(lines, area.width)), area);
}
