//! Placement: where woken tasks landed relative to the waker's CPU and to their previous CPU,
//! at the six topology levels, as bars; the topology map shaded by landings; the selected CPU
//! (or LLC) in detail.
use ratatui::{
    Frame,
    layout::{Constraint, Layout, Rect},
    text::{Line, Span},
    widgets::Paragraph,
};
use wakeviz_core::{
    analysis::placement::{Coverage, PlacementCounts},
    topology::Level,
};

use super::{fmt, kernel_counters, topomap};
use crate::dashboard::app::{App, View, Window, map::Map};

pub fn render(f: &mut Frame, area: Rect, app: &App) {
    let p = &app.data.snap.placement;
    let c = match app.window {
        Window::Cumulative => &p.wakeups,
        Window::Last10s => &p.windows.w10s.placement,
        Window::Last1s => &p.windows.w1s.placement,
    };
    let [bars, rest] = Layout::vertical([Constraint::Length(11), Constraint::Min(0)]).areas(area);
    f.render_widget(
        Paragraph::new(level_bars(c, usize::from(bars.width), app)),
        bars,
    );
    let map = Map::new(&app.data.header().topology, app.per_cpu_map);
    let sel = app.sel[View::Placement.index()].min(map.units.len().saturating_sub(1));
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(60), Constraint::Min(0)]).areas(rest);
    topomap::render_map(f, left, app, &map, sel);
    let snap = &app.data.snap;
    let kernel = kernel_counters::lines(
        snap.schedstat.as_ref(),
        snap.schedstat_error.as_deref(),
        usize::from(right.width),
    );
    // The detail first: the kernel's counters take what it leaves, at most their rows.
    let [detail, counters] =
        Layout::vertical([Constraint::Min(12), Constraint::Length(kernel.len() as u16)])
            .areas(right);
    topomap::render_detail(f, detail, app, &map, sel);
    f.render_widget(Paragraph::new(kernel), counters);
}

fn level_bars(c: &PlacementCounts, width: usize, app: &App) -> Vec<Line<'static>> {
    let name_w = 14;
    let col = (width.saturating_sub(name_w)) / 2;
    let bar_w = col.saturating_sub(8).max(4);
    let topo = &app.data.header().topology;
    let (tw, tp) = (c.vs_waker.total(), c.vs_prev.total());
    let max = Level::ALL
        .iter()
        .map(|&l| c.vs_waker.get(l).max(c.vs_prev.get(l)))
        .max()
        .unwrap_or(0);
    let mut lines = vec![Line::from(Span::styled(
        format!(
            "{:<name_w$}{}{}",
            "level",
            fmt::fit("vs waker CPU", col),
            fmt::fit("vs previous CPU", col)
        ),
        fmt::bold(),
    ))];
    for l in Level::ALL {
        let style = if topo.level_exists(l) {
            ratatui::style::Style::default()
        } else {
            fmt::dim()
        };
        let (w, p) = (c.vs_waker.get(l), c.vs_prev.get(l));
        if !topo.level_exists(l) {
            let na = format!("{:>w$}", "n/a", w = bar_w + 7);
            lines.push(Line::from(Span::styled(
                format!("{:<name_w$}{na} {na}", l.name()),
                style,
            )));
            continue;
        }
        lines.push(Line::from(Span::styled(
            format!(
                "{:<name_w$}{} {:>6} {} {:>6}",
                l.name(),
                fmt::bar(w, max, bar_w),
                fmt::pct(w, tw),
                fmt::bar(p, max, bar_w),
                fmt::pct(p, tp)
            ),
            style,
        )));
    }
    lines.push(Line::raw(format!(
        "n={}  affine {} ({})  migrated {} ({})  unclassified {}  forks {}",
        fmt::count(c.count),
        fmt::count(c.affine),
        fmt::pct(c.affine, c.count),
        fmt::count(c.migrations),
        fmt::pct(c.migrations, c.count),
        c.unclassified,
        fmt::count(app.data.snap.placement.new_tasks.count),
    )));
    lines.extend(coverage_lines(&app.data.snap.placement.coverage, width));
    lines
}

/// How many wakeups the bars classify and why the others are not, and what share of them the
/// Shadow view's rows cover: the counts of `placement.coverage` (the text report's and the
/// JSON's), cumulative whatever the window. Reasons with a count of 0 are left out.
fn coverage_lines(c: &Coverage, width: usize) -> [Line<'static>; 2] {
    let nonzero = |v: &[(&str, u64)]| -> String {
        v.iter()
            .filter(|(_, n)| *n > 0)
            .map(|(w, n)| format!("{} {w}", fmt::count(*n)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut s = format!(
        "classified {} of {} wakeups ({}, cumulative)",
        fmt::count(c.classified),
        fmt::count(c.wakeups),
        fmt::pct(c.classified, c.wakeups)
    );
    let not = nonzero(&[
        ("no sched_waking", c.no_sched_waking),
        ("self-wake", c.self_wakeups),
        ("bad CPU", c.unclassified),
    ]);
    if !not.is_empty() {
        s.push_str(&format!(" · not: {not}"));
    }
    let t = match &c.shadow {
        Some(sc) => {
            let mut t = format!(
                "Shadow view covers {} of them ({})",
                fmt::count(sc.compared),
                fmt::pct(sc.compared, c.placed)
            );
            let why = nonzero(&sc.short_reasons());
            if !why.is_empty() {
                t.push_str(&format!(" · left out: {why}"));
            }
            t
        }
        None => "shadow evaluation off".into(),
    };
    [
        Line::from(Span::styled(fmt::ellipsis(&s, width), fmt::dim())),
        Line::from(Span::styled(fmt::ellipsis(&t, width), fmt::dim())),
    ]
}
