//! Wakers and wakees, one row per task: what it received (wakeups, share that crossed an
//! LLC, migrations, p99 wakeup-to-run latency) and what it issued. `o` cycles the sort column
//! (marked ▼), ↑↓ select, Enter filters every view to the selected task (`pid:N`), Esc
//! clears the filter. Cumulative (the title says so).
use ratatui::{
    Frame,
    layout::{Constraint, Layout, Rect},
    style::{Modifier, Style},
    text::{Line, Span},
    widgets::{Cell, Paragraph, Row, Table},
};
use wakeviz_core::analysis::tasks::{TaskRow, TaskSort};

use super::fmt;
use crate::dashboard::app::{App, View};

/// A column: header, width, the sort it stands for, its text for a row; listed in the order
/// they are dropped from the right when the terminal is narrow.
struct Col {
    name: &'static str,
    width: u16,
    sort: Option<TaskSort>,
    cell: fn(&TaskRow) -> String,
}

fn or_na(v: Option<String>) -> String {
    v.unwrap_or_else(|| "n/a".into())
}

const COLS: [Col; 8] = [
    Col {
        name: "pid",
        width: 7,
        sort: None,
        cell: |r| r.pid.map_or_else(|| "-".into(), |p| p.to_string()),
    },
    Col {
        name: "comm",
        width: 15,
        sort: None,
        cell: |r| r.comm.clone(),
    },
    Col {
        name: "wakeups",
        width: 8,
        sort: Some(TaskSort::Wakeups),
        cell: |r| fmt::count(r.wakeups),
    },
    Col {
        name: "xLLC%",
        width: 6,
        sort: Some(TaskSort::CrossLlc),
        cell: |r| or_na(r.cross_llc_share().map(|s| format!("{:.1}", s * 100.0))),
    },
    Col {
        name: "p99",
        width: 8,
        sort: Some(TaskSort::P99),
        cell: |r| or_na(r.wakeup_latency_p99_ns.map(fmt::ns)),
    },
    Col {
        name: "migr",
        width: 7,
        sort: Some(TaskSort::Migrations),
        cell: |r| fmt::count(r.migrations),
    },
    Col {
        name: "wakes",
        width: 7,
        sort: Some(TaskSort::Wakes),
        cell: |r| fmt::count(r.wakes),
    },
    Col {
        name: "→xLLC%",
        width: 7,
        sort: None,
        cell: |r| {
            or_na(
                (r.wakes > 0)
                    .then(|| format!("{:.1}", r.wakes_cross_llc as f64 * 100.0 / r.wakes as f64)),
            )
        },
    },
];

pub fn render(f: &mut Frame, area: Rect, app: &App) {
    if area.height == 0 || area.width == 0 {
        return;
    }
    let t = &app.data.snap.tasks;
    let rows = t.sorted(app.task_sort);
    if rows.is_empty() {
        super::timeline::empty(f, area, app);
        return;
    }
    // Columns that fit, dropped from the right (a column takes its width + 1 of spacing).
    let mut used = 0u16;
    let cols: Vec<&Col> = COLS
        .iter()
        .take_while(|c| {
            used += c.width + 1;
            used <= area.width + 1
        })
        .collect();
    let foot = if area.height >= 6 { 2 } else { 0 };
    let [body, foot_area] =
        Layout::vertical([Constraint::Min(0), Constraint::Length(foot)]).areas(area);
    let visible = usize::from(body.height.saturating_sub(1));
    let n = rows.len();
    let sel = app.sel[View::Tasks.index()].min(n - 1);
    let take = visible.min(n);
    let first = sel.saturating_sub(take.saturating_sub(1)).min(n - take);
    let header = Row::new(cols.iter().map(|c| {
        let name = if c.sort == Some(app.task_sort) {
            format!("{}▼", c.name)
        } else {
            c.name.to_string()
        };
        Cell::from(name)
    }))
    .style(fmt::bold());
    let body_rows = rows
        .iter()
        .enumerate()
        .skip(first)
        .take(take)
        .map(|(i, r)| {
            let row = Row::new(cols.iter().map(|c| Cell::from((c.cell)(r))));
            if i == sel {
                row.style(Style::default().add_modifier(Modifier::REVERSED))
            } else {
                row
            }
        });
    let widths: Vec<Constraint> = cols.iter().map(|c| Constraint::Length(c.width)).collect();
    f.render_widget(Table::new(body_rows, widths).header(header), body);
    if foot > 0 {
        let (above, below) = (first, n - first - take);
        let mut l1 = vec![];
        let mut more = String::new();
        if above > 0 {
            more.push_str(&format!("{above} more ↑ "));
        }
        if below > 0 {
            more.push_str(&format!("{below} more ↓ "));
        }
        if !more.is_empty() {
            l1.push(Span::styled(format!("{more} "), fmt::warn()));
        }
        let o = &t.other;
        l1.push(Span::styled(
            if o.tasks > 0 {
                format!(
                    "other: {} tasks, {} wakeups (beyond the {} followed)",
                    fmt::count(o.tasks),
                    fmt::count(o.wakeups),
                    t.max_tasks
                )
            } else {
                format!("{n} tasks")
            },
            fmt::dim(),
        ));
        let l2 = Line::from(Span::styled(
            format!(
                "sort {} (o) · Enter: only this task · Esc: all · xLLC% left the waker's LLC · p99 wakeup->run · wakes: woken by it",
                app.task_sort.label()
            ),
            fmt::dim(),
        ));
        f.render_widget(
            Paragraph::new(fmt::fit_lines(vec![Line::from(l1), l2], foot_area.width)),
            foot_area,
        );
    }
}
