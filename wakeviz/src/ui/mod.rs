//! Rendering: pure functions of [`App`], one file per panel, no I/O.
//!
//! ```text
//! ┌──────────────────────────────────────────────────────────────────────────────┐
//! │ wakeviz  1 Overview  2 Scan  3 Placement  4 Shadow  5 Latency   REPLAY file  │ tabs
//! │ events 1.2M 45k/s │ drops 0 │ +1.234 s 1x │ filter: -                        │ status
//! ├ <view title> ────────────────────────────────────────────────────────────────┤
//! │                                                                              │
//! │   body: overview.rs | scan.rs | placement.rs (+ topomap.rs) | shadow.rs |    │
//! │         latency.rs                                                           │
//! │                                                                              │
//! ├──────────────────────────────────────────────────────────────────────────────┤
//! │ q quit  ? help  space pause  1-5 views  Tab next  / filter  ...              │ footer.rs
//! └──────────────────────────────────────────────────────────────────────────────┘
//!   `?` draws help.rs over the body; `/` turns the footer into the filter prompt.
//! ```
//!
//! Drops are on the status line of every view. Below [`MIN_W`] x [`MIN_H`] only a "terminal
//! too small" message is drawn, so no panel ever has to cope with less.
pub mod compare;
pub mod delta;
pub mod fmt;
mod footer;
mod help;
mod latency;
mod matrix;
mod overview;
mod placement;
mod scan;
mod shadow;
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

use crate::app::{App, SourceKind, View};

pub const MIN_W: u16 = 80;
pub const MIN_H: u16 = 24;

pub fn draw(f: &mut Frame, app: &App) {
    let area = f.area();
    if area.width < MIN_W || area.height < MIN_H {
        too_small(f, area);
        return;
    }
    let [tabs, status, body, foot] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area);
    f.render_widget(Paragraph::new(tab_line(app)), tabs);
    f.render_widget(Paragraph::new(status_line(app)), status);
    let block = Block::default()
        .borders(Borders::TOP | Borders::BOTTOM)
        .title(Span::styled(format!(" {} ", title(app)), fmt::bold()));
    let inner = block.inner(body);
    f.render_widget(block, body);
    if app.baseline.is_some() {
        compare::render(f, inner, app);
    } else {
        view_body(f, inner, app);
    }
    footer::render(f, foot, app);
    if app.mode == crate::app::Mode::Help {
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
        "terminal too small (need {MIN_W}x{MIN_H}, have {}x{}); q quits",
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

/// The view's title, with what it measures (compare mode: both runs whole).
fn title(app: &App) -> String {
    let w = if app.baseline.is_some() {
        "cumulative, vs baseline"
    } else {
        app.window.label()
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
    let w = app.window.label();
    if app.baseline.is_some() {
        format!("{w}, current run only")
    } else {
        w.to_string()
    }
}

/// Those of them that are always cumulative.
fn own_cumulative(app: &App) -> &'static str {
    if app.baseline.is_some() {
        "cumulative, current run only"
    } else {
        "cumulative"
    }
}

fn tab_line(app: &App) -> Line<'_> {
    let mut spans = vec![Span::styled("wakeviz ", fmt::bold())];
    for v in View::ALL {
        let label = format!(" {} {} ", v.index() + 1, v.tab());
        let style = if v == app.view {
            Style::default()
                .fg(Color::Black)
                .bg(Color::Cyan)
                .add_modifier(Modifier::BOLD)
        } else {
            Style::default()
        };
        spans.push(Span::styled(label, style));
    }
    let src = match (&app.source, &app.baseline) {
        (_, Some(b)) => format!("  COMPARE vs {}", file_name(&b.path)),
        (src, None) => source_label(src),
    };
    spans.push(Span::styled(src, fmt::warn()));
    Line::from(spans)
}

fn source_label(src: &SourceKind) -> String {
    match src {
        SourceKind::Live { recording: None } => "  LIVE".to_string(),
        SourceKind::Live { recording: Some(p) } => format!("  LIVE, recording {}", file_name(p)),
        SourceKind::Replay { path } => format!("  REPLAY {}", file_name(path)),
    }
}

pub fn file_name(p: &std::path::Path) -> String {
    p.file_name().map_or_else(
        || p.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

fn status_line(app: &App) -> Line<'_> {
    let s = &app.data.snap;
    let total_rate: f64 = app.data.rates.iter().sum();
    let mut spans = vec![
        Span::raw(format!(
            "events {} {}/s",
            fmt::count(s.events.total()),
            fmt::rate(total_rate)
        )),
        Span::styled(" │ ", fmt::dim()),
    ];
    let d = &s.drops;
    let drops = if d.total == 0 {
        "drops 0".to_string()
    } else {
        format!(
            "drops {} (kernel {}, user {})",
            fmt::count(d.total),
            fmt::count(d.kernel_drops),
            fmt::count(d.user_drops)
        )
    };
    spans.push(Span::styled(
        drops,
        if d.total > 0 {
            fmt::bad()
        } else {
            Style::default()
        },
    ));
    spans.push(Span::styled(" │ ", fmt::dim()));
    if let Some(p) = &app.pacer {
        let mut t = format!("{} {}", fmt::secs(p.position_ns()), p.speed_label());
        if p.seeking() {
            t.push_str(&format!(" seeking {}", fmt::secs(p.cursor)));
        } else if p.ended {
            t.push_str(" end");
        }
        spans.push(Span::raw(t));
        spans.push(Span::styled(" │ ", fmt::dim()));
    }
    let filter = app
        .data
        .filter()
        .map_or_else(|| "-".to_string(), ToString::to_string);
    spans.push(Span::raw(format!("filter: {filter}")));
    if app.paused {
        spans.push(Span::styled(
            " │ PAUSED",
            fmt::warn().add_modifier(Modifier::BOLD),
        ));
    }
    if let Some(n) = &app.notice {
        spans.push(Span::styled(format!(" │ {n}"), fmt::dim()));
    }
    Line::from(spans)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_views;
