//! The session over time: wakeup rate, placement mix by level (waker CPU -> chosen CPU), scan
//! p99 and wakeup-latency p99, one column per interval of the core's series (merged when there
//! are more intervals than columns). Follows the window `w`: cumulative is the whole session.
//!
//! Tall enough, the mix is a line chart (one line per level the topology has); in a short
//! terminal every figure becomes a labelled one-row sparkline, and what still does not fit is
//! counted ("2 more ↓").
use ratatui::{
    Frame,
    layout::{Constraint, Layout, Rect},
    style::{Color, Style},
    symbols::Marker,
    text::{Line, Span},
    widgets::{Axis, Chart, Dataset, GraphType, Paragraph, Sparkline},
};
use wakeviz_core::{analysis::series::SeriesPoint, topology::Level};

use super::fmt;
use crate::dashboard::app::{App, Window};

/// One drawn column: one or more consecutive intervals.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Column {
    pub span_ns: u64,
    pub wakeups: u64,
    pub mix: [u64; Level::ALL.len()],
    /// Worst interval p99 of the column (a p99 cannot be merged; the worst is the honest
    /// summary of a merged column).
    pub scan_p99: Option<u64>,
    pub wake_p99: Option<u64>,
}

impl Column {
    pub fn rate(&self) -> f64 {
        if self.span_ns == 0 {
            0.0
        } else {
            self.wakeups as f64 * 1e9 / self.span_ns as f64
        }
    }

    /// Per cent of the classified wakeups at level `l`, `None` without any.
    pub fn share(&self, l: Level) -> Option<f64> {
        let all: u64 = self.mix.iter().sum();
        (all > 0).then(|| self.mix[l.index()] as f64 * 100.0 / all as f64)
    }

    /// Per cent that left the waker's LLC.
    pub fn cross_llc(&self) -> Option<f64> {
        let all: u64 = self.mix.iter().sum();
        let out: u64 = Level::ALL
            .iter()
            .filter(|&&l| l > Level::SameLlc)
            .map(|l| self.mix[l.index()])
            .sum();
        (all > 0).then(|| out as f64 * 100.0 / all as f64)
    }
}

/// `points` merged into at most `width` columns of equal numbers of intervals.
pub(crate) fn columns(points: &[SeriesPoint], width: usize) -> (Vec<Column>, usize) {
    let per = points.len().div_ceil(width.max(1)).max(1);
    let cols = points
        .chunks(per)
        .map(|ch| {
            let mut c = Column::default();
            for p in ch {
                c.span_ns += p.span_ns;
                c.wakeups += p.wakeups;
                for (m, v) in c.mix.iter_mut().zip(p.vs_waker.0) {
                    *m += v;
                }
                c.scan_p99 = c.scan_p99.max(p.scan_p99_ns);
                c.wake_p99 = c.wake_p99.max(p.wakeup_latency_p99_ns);
            }
            c
        })
        .collect();
    (cols, per)
}

pub(crate) fn level_color(l: Level) -> Color {
    match l {
        Level::SameCpu => Color::Green,
        Level::SmtSibling => Color::Cyan,
        Level::SameLlc => Color::Blue,
        Level::SameNode => Color::Yellow,
        Level::SamePackage => Color::Magenta,
        Level::CrossPackage => Color::Red,
    }
}

fn window_span(w: Window) -> Option<u64> {
    match w {
        Window::Cumulative => None,
        Window::Last10s => Some(10_000_000_000),
        Window::Last1s => Some(1_000_000_000),
    }
}

/// A figure's label line and its sparkline (or its "unavailable" reason).
struct Strip {
    label: Line<'static>,
    data: Option<Vec<Option<u64>>>,
}

pub fn render(f: &mut Frame, area: Rect, app: &App) {
    let s = &app.data.snap;
    let to = s.placement.last_ts_ns;
    let points = s.series.last(window_span(app.window), to);
    if area.height == 0 || area.width == 0 {
        return;
    }
    if points.is_empty() {
        empty(f, area, app);
        return;
    }
    let width = usize::from(area.width);
    let (cols, per) = columns(points, width);
    let origin = s.placement.first_ts_ns.unwrap_or(0);
    let from = points.first().map_or(0, |p| p.start_ns);
    let step = s.series.interval_ns.saturating_mul(per as u64);
    let head = Line::from(vec![
        Span::styled(
            format!(
                "{} .. {}",
                fmt::secs(from.saturating_sub(origin)),
                fmt::secs(to.saturating_sub(origin))
            ),
            fmt::bold(),
        ),
        Span::styled(format!("  one column = {}", fmt::ns(step)), fmt::dim()),
    ]);
    let worst = if per > 1 { " (worst interval)" } else { "" };
    let last = cols.last().cloned().unwrap_or_default();
    let peak_rate = cols.iter().map(Column::rate).fold(0.0, f64::max);
    let mut strips = vec![Strip {
        label: label(
            "wakeups/s",
            format!(
                "last {}  peak {}",
                fmt::rate(last.rate()),
                fmt::rate(peak_rate)
            ),
        ),
        data: Some(cols.iter().map(|c| Some(c.rate().round() as u64)).collect()),
    }];
    let peak_x = cols
        .iter()
        .filter_map(Column::cross_llc)
        .fold(0.0, f64::max);
    strips.push(Strip {
        label: label(
            "cross-LLC %",
            format!(
                "last {}  peak {:.1}%  (waker -> chosen)",
                last.cross_llc()
                    .map_or("n/a".into(), |v| format!("{v:.1}%")),
                peak_x
            ),
        ),
        data: Some(
            cols.iter()
                .map(|c| c.cross_llc().map(|v| v.round() as u64))
                .collect(),
        ),
    });
    let sc = &s.scan_latency;
    strips.push(if sc.available {
        p99_strip(&format!("scan p99{worst}"), &cols, |c| c.scan_p99)
    } else {
        Strip {
            label: label("scan p99", sc.status.unwrap_or("unavailable").to_string()),
            data: None,
        }
    });
    strips.push(p99_strip(
        &format!("wakeup latency p99{worst}"),
        &cols,
        |c| c.wake_p99,
    ));
    let h = area.height;
    if h >= 18 {
        tall(f, area, app, head, &cols, strips);
    } else {
        short(f, area, head, strips);
    }
}

/// What an empty picture view says: aggregate mode has no per-event stream to draw from.
pub(crate) fn empty(f: &mut Frame, area: Rect, app: &App) {
    let agg = app
        .data
        .snap
        .recording
        .notes
        .iter()
        .any(|n| n == wakeviz_core::analysis::aggregate::NOTE);
    let why = if agg {
        "n/a in aggregate mode: the kernel keeps totals only, no event stream"
    } else {
        "no placed wakeups yet"
    };
    f.render_widget(
        Paragraph::new(Line::from(Span::styled(why, fmt::dim()))),
        area,
    );
}

fn label(name: &str, value: String) -> Line<'static> {
    Line::from(vec![
        Span::styled(format!("{name}  "), fmt::bold()),
        Span::raw(value),
    ])
}

fn p99_strip(name: &str, cols: &[Column], get: fn(&Column) -> Option<u64>) -> Strip {
    let last = cols.iter().rev().find_map(get);
    let peak = cols.iter().filter_map(get).max();
    let txt = match (last, peak) {
        (Some(l), Some(p)) => format!("last {}  peak {}", fmt::ns(l), fmt::ns(p)),
        _ => "n/a (no samples)".into(),
    };
    Strip {
        label: label(name, txt),
        data: Some(cols.iter().map(get).collect()),
    }
}

fn draw_strip(f: &mut Frame, area: Rect, s: &Strip) {
    if area.height == 0 {
        return;
    }
    let [l, rest] = Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(area);
    f.render_widget(Paragraph::new(s.label.clone()), l);
    if let Some(d) = &s.data {
        // Fewer columns than cells: each is drawn wider, so a short run still fills the row.
        let wide = (usize::from(rest.width) / d.len().max(1)).max(1);
        let bars: Vec<Option<u64>> = d
            .iter()
            .flat_map(|v| std::iter::repeat_n(*v, wide))
            .collect();
        f.render_widget(
            Sparkline::default()
                .data(bars)
                .style(Style::default().fg(Color::Cyan))
                .absent_value_symbol("·"),
            rest,
        );
    }
}

/// Head line, then every strip with as many rows as fit (at least 2: label + bars); what does
/// not fit is counted on the last line.
fn short(f: &mut Frame, area: Rect, head: Line<'static>, strips: Vec<Strip>) {
    let rows = usize::from(area.height.saturating_sub(1));
    let n = strips.len();
    let (fit, avail) = if rows >= 2 * n {
        (n, rows)
    } else {
        // One line for the "more" mark.
        (rows.saturating_sub(1) / 2, rows.saturating_sub(1))
    };
    let cut = n - fit;
    let mut cons = vec![Constraint::Length(1)];
    let each = avail.checked_div(fit).unwrap_or(0) as u16;
    cons.extend((0..fit).map(|_| Constraint::Length(each)));
    cons.push(Constraint::Min(0));
    let parts = Layout::vertical(cons).split(area);
    f.render_widget(
        Paragraph::new(fmt::fit_line(head, parts[0].width)),
        parts[0],
    );
    for (i, s) in strips.iter().take(fit).enumerate() {
        draw_strip(f, parts[i + 1], s);
    }
    if cut > 0 {
        f.render_widget(
            Paragraph::new(Line::from(Span::styled(
                format!("{cut} more ↓ (taller terminal)"),
                fmt::dim(),
            ))),
            parts[fit + 1],
        );
    }
}

/// Rate strip, the mix chart, then the two p99 strips (the cross-LLC strip is the chart).
fn tall(
    f: &mut Frame,
    area: Rect,
    app: &App,
    head: Line<'static>,
    cols: &[Column],
    strips: Vec<Strip>,
) {
    let h = area.height.saturating_sub(1);
    let strip_h = (h / 5).clamp(3, 6);
    let [top, rate, mix, scan, wake] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(strip_h),
        Constraint::Min(7),
        Constraint::Length(strip_h),
        Constraint::Length(strip_h),
    ])
    .areas(area);
    f.render_widget(Paragraph::new(fmt::fit_line(head, top.width)), top);
    draw_strip(f, rate, &strips[0]);
    mix_chart(f, mix, app, cols);
    draw_strip(f, scan, &strips[2]);
    draw_strip(f, wake, &strips[3]);
}

fn mix_chart(f: &mut Frame, area: Rect, app: &App, cols: &[Column]) {
    let topo = &app.data.header().topology;
    let levels: Vec<Level> = Level::ALL
        .iter()
        .copied()
        .filter(|&l| topo.level_exists(l) || cols.iter().any(|c| c.mix[l.index()] > 0))
        .collect();
    let data: Vec<Vec<(f64, f64)>> = levels
        .iter()
        .map(|&l| {
            cols.iter()
                .enumerate()
                .filter_map(|(i, c)| c.share(l).map(|v| (i as f64, v)))
                .collect()
        })
        .collect();
    let sets = levels
        .iter()
        .zip(&data)
        .map(|(&l, d)| {
            Dataset::default()
                .name(l.name())
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::default().fg(level_color(l)))
                .data(d)
        })
        .collect();
    let x_max = cols.len().saturating_sub(1).max(1) as f64;
    let [legend, area] = Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(area);
    let mut spans = vec![Span::styled("mix % (waker -> chosen): ", fmt::bold())];
    for &l in &levels {
        spans.push(Span::styled(
            format!("━{} ", l.name()),
            Style::default().fg(level_color(l)),
        ));
    }
    f.render_widget(
        Paragraph::new(fmt::fit_line(Line::from(spans), legend.width)),
        legend,
    );
    let chart = Chart::new(sets)
        .x_axis(Axis::default().bounds([0.0, x_max]))
        .y_axis(
            Axis::default()
                .bounds([0.0, 100.0])
                .labels(["0", "50", "100"]),
        )
        .legend_position(None);
    f.render_widget(chart, area);
}

#[cfg(test)]
mod tests {
    use super::*;
    use wakeviz_core::topology::LevelCounts;

    fn pt(wakeups: u64, same_cpu: u64, cross: u64, p99: Option<u64>) -> SeriesPoint {
        let mut m = LevelCounts::default();
        m.0[Level::SameCpu.index()] = same_cpu;
        m.0[Level::CrossPackage.index()] = cross;
        SeriesPoint {
            start_ns: 0,
            span_ns: 100,
            wakeups,
            wakeups_per_s: 0.0,
            vs_waker: m,
            scan_n: 0,
            scan_p99_ns: p99,
            wakeup_latency_n: 0,
            wakeup_latency_p99_ns: None,
        }
    }

    #[test]
    fn columns_merge_intervals_to_fit() {
        let pts = [
            pt(2, 2, 0, Some(5)),
            pt(4, 1, 3, None),
            pt(6, 6, 0, Some(9)),
        ];
        let (c, per) = columns(&pts, 2);
        assert_eq!((c.len(), per), (2, 2));
        assert_eq!((c[0].wakeups, c[0].span_ns), (6, 200));
        assert_eq!(c[0].rate(), 6.0 * 1e9 / 200.0);
        assert_eq!(c[0].scan_p99, Some(5), "the worst interval's p99");
        assert_eq!(c[0].cross_llc(), Some(50.0));
        assert_eq!(c[1].share(Level::SameCpu), Some(100.0));
        let (c, per) = columns(&pts, 80);
        assert_eq!((c.len(), per), (3, 1));
        assert_eq!(c[1].scan_p99, None);
        assert_eq!(Column::default().cross_llc(), None);
    }
}
