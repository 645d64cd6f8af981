//! The dashboard's views, pure functions of [`App`] (one file per panel, no I/O), and its run
//! loop ([`run`]: the dashboard as a sink of the driver, drawing these views).
//!
//! ```text
//! ┌──────────────────────────────────────────────────────────────────────────────┐
//! │ wakeviz  1 Overview  2 Scan  3 Placement ... 8 Tasks       REPLAY file       │ tabs: mod.rs
//! │ +1.200 / 9.870 s 1x │ events 1.2M 45k/s │ drops 0 │ filter: - │ recorded …   │ status.rs
//! ├ <view title> ────────────────────────────────────────────────────────────────┤
//! │                                                                              │
//! │   body: overview.rs | scan.rs | placement.rs (+ topomap.rs, kernel_counters  │
//! │         .rs) | shadow.rs | latency.rs | timeline.rs | matrix.rs | tasks.rs;  │
//! │         with --compare: compare/                                             │
//! │                                                                              │
//! │ legend (l): one or more lines of what the view's columns and marks mean       │ legend.rs
//! │ q quit  ? help  space pause  1-8 views  Tab next  / filter  ...              │ footer.rs
//! └──────────────────────────────────────────────────────────────────────────────┘
//!   `?` draws help.rs over the body; `/` turns the footer into the filter prompt.
//! ```
//!
//! Drops are on the status line of every view. Any size from about 60x15 draws: the status
//! takes a second line when there is room, panels shrink or drop by priority and say what they
//! cut (`…`, `3 more ↓`); below [`TINY_W`] x [`TINY_H`] one line says the terminal is too small.
pub mod compare;
pub mod delta;
pub mod fmt;
mod footer;
mod help;
mod kernel_counters;
mod latency;
pub mod legend;
mod matrix;
mod overview;
mod placement;
pub mod run;
mod scan;
mod shadow;
pub mod status;
mod tasks;
mod timeline;
mod topomap;

use ratatui::{
    Frame,
    layout::{Alignment, Constraint, Layout, Rect},
    style::{Color, Modifier, Style},
    text::{Line, Span},
    widgets::{Block, Borders, Paragraph, Wrap},
};

use crate::dashboard::app::{App, View, Window, file_name};

/// Below this, one line says the terminal is too small: no view shows its main figure there.
pub const TINY_W: u16 = 40;
pub const TINY_H: u16 = 8;

pub fn draw(f: &mut Frame, app: &App) {
    let area = f.area();
    if area.width < TINY_W || area.height < TINY_H {
        too_small(f, area);
        return;
    }
    // The status wraps to a second line on terminals tall enough to spare it.
    let status_rows = if area.height >= 24 { 2 } else { 1 };
    let status = status::lines(app, area.width, status_rows);
    let legend = if app.legend {
        legend::lines(app.view, area.width, (area.height / 4).max(1))
    } else {
        Vec::new()
    };
    let [tabs, status_area, body, legend_area, foot] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(status.len() as u16),
        Constraint::Min(0),
        Constraint::Length(legend.len() as u16),
        Constraint::Length(1),
    ])
    .areas(area);
    f.render_widget(Paragraph::new(tab_line(app, area.width)), tabs);
    f.render_widget(Paragraph::new(status), status_area);
    f.render_widget(Paragraph::new(legend), legend_area);
    let block = Block::default()
        .borders(Borders::TOP | Borders::BOTTOM)
        .title(Span::styled(
            format!(
                " {} ",
                fmt::ellipsis(&title(app), usize::from(area.width).saturating_sub(4))
            ),
            fmt::bold(),
        ));
    let inner = block.inner(body);
    f.render_widget(block, body);
    if app.baseline.is_some() {
        compare::render(f, inner, app);
    } else {
        view_body(f, inner, app);
    }
    footer::render(f, foot, app);
    if app.mode == crate::dashboard::app::Mode::Help {
        help::render(f, body, app);
    }
}

/// The current view's body, without a baseline (compare mode draws the views that have no
/// compare form through this too).
pub(crate) fn view_body(f: &mut Frame, area: Rect, app: &App) {
    match app.view {
        View::Overview => overview::render(f, area, app),
        View::Scan => scan::render(f, area, app),
        View::Placement => placement::render(f, area, app),
        View::Shadow => shadow::render(f, area, app),
        View::Latency => latency::render(f, area, app),
        View::Timeline => timeline::render(f, area, app),
        View::Matrix => matrix::render(f, area, app),
        View::Tasks => tasks::render(f, area, app),
    }
}

fn too_small(f: &mut Frame, area: Rect) {
    let msg = format!(
        "too small ({}x{}; need {TINY_W}x{TINY_H}) q quits",
        area.width, area.height
    );
    let y = area.height / 2;
    let line = Rect {
        y: area.y + y.min(area.height.saturating_sub(1)),
        height: area.height.min(3),
        ..area
    };
    f.render_widget(
        Paragraph::new(msg)
            .alignment(Alignment::Center)
            .wrap(Wrap { trim: true }),
        line,
    );
}

/// What the cumulative figures span: everything folded, or the `[ ]` range when one is set.
fn span(app: &App) -> String {
    app.range_label()
        .unwrap_or_else(|| Window::Cumulative.label().to_string())
}

/// The window's label: a rolling window's, else the cumulative span.
fn window(app: &App) -> String {
    match app.window {
        Window::Cumulative => span(app),
        w => w.label().to_string(),
    }
}

/// The view's title, with what it measures (compare mode: both runs whole).
fn title(app: &App) -> String {
    let w = if app.baseline.is_some() {
        "cumulative, vs baseline".to_string()
    } else {
        window(app)
    };
    match app.view {
        View::Overview => "Overview".into(),
        View::Scan => format!("Scan latency [{w}]"),
        View::Placement => format!("Placement of wakeups [{w}]"),
        View::Shadow => "Shadow policies (open loop)".into(),
        View::Latency => format!("Wakeup latency: sched_wakeup -> running [{w}]"),
        View::Timeline => format!("Timeline of placed wakeups [{}]", own(app)),
        View::Matrix => format!("Waker CPU -> chosen CPU [{}]", own_cumulative(app)),
        View::Tasks => format!("Wakers and wakees [{}]", own_cumulative(app)),
    }
}

/// The window of the views that have no compare form: in compare mode they show the
/// current run alone, and say so.
fn own(app: &App) -> String {
    let w = window(app);
    if app.baseline.is_some() {
        format!("{w}, current run only")
    } else {
        w.to_string()
    }
}

/// Those of them that are always cumulative (over the range, when one is set).
fn own_cumulative(app: &App) -> String {
    if app.baseline.is_some() {
        "cumulative, current run only".into()
    } else {
        span(app)
    }
}

/// Tabs and the source badge in `width`: full tab names when they fit, else the current
/// view's name and the others' numbers; the badge is ellipsised last.
fn tab_line(app: &App, width: u16) -> Line<'static> {
    let width = usize::from(width);
    let badge = status::source_badge(app);
    let full = |v: View| format!(" {} {} ", v.index() + 1, v.tab());
    let label = |v: View, compact: bool| {
        if compact && v != app.view {
            format!(" {} ", v.index() + 1)
        } else {
            full(v)
        }
    };
    let brand = "wakeviz ";
    let tabs_w = |compact: bool| -> usize {
        View::ALL
            .iter()
            .map(|&v| label(v, compact).chars().count())
            .sum()
    };
    // Compact tabs when the full ones leave the badge less than its first word and a bit.
    let compact = brand.len() + tabs_w(false) + 2 + badge.chars().count().min(16) > width;
    let mut spans = vec![Span::styled(brand, fmt::bold())];
    let mut used = brand.len();
    for v in View::ALL {
        let text = label(v, compact);
        let style = if v == app.view {
            Style::default()
                .fg(Color::Black)
                .bg(Color::Cyan)
                .add_modifier(Modifier::BOLD)
        } else {
            Style::default()
        };
        used += text.chars().count();
        spans.push(Span::styled(text, style));
    }
    let left = width.saturating_sub(used + 2);
    if left > 0 {
        spans.push(Span::styled(
            format!("  {}", fmt::ellipsis(&badge, left)),
            fmt::warn(),
        ));
    }
    Line::from(spans)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_na;
#[cfg(test)]
mod tests_views;
