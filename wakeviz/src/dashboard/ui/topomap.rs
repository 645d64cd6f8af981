//! The topology map: one line per NUMA node (`node<N>` and its share of wakeups), LLCs as runs
//! of cells, each cell a CPU (or a whole LLC, `llc<N>`, on large machines) shaded by how many
//! wakeups landed there, relative to the busiest cell. Above each node line, the number of the
//! first CPU of each LLC (the axis). NPS1/2/4 layouts show as one, two or four lines per
//! package. The selected cell is reversed; its detail, with the CPU's busy % (live), is drawn
//! next to the map. Rows that do not fit scroll with the selection and the header says so.
use ratatui::{
    Frame,
    layout::Rect,
    style::{Modifier, Style},
    text::{Line, Span},
    widgets::Paragraph,
};
use wakeviz_core::{analysis::PlacementSection, topology::Level};

use super::fmt;
use crate::dashboard::app::{
    App,
    map::{Map, Unit},
};

const LABEL: usize = 12;

fn landed(pc: &PlacementSection, u: &Unit) -> u64 {
    u.cpus
        .iter()
        .map(|&c| pc.cpu(c).map_or(0, |x| x.landed))
        .sum()
}

/// Busy % of a unit for the map header and detail: live from sysinfo, `n/a` on replay.
fn busy_text(app: &App, cpus: &[u32]) -> String {
    match &app.busy {
        None => "busy n/a (replay: not recorded)".into(),
        Some(b) => b
            .mean(cpus)
            .map_or_else(|| "busy …".into(), |p| format!("busy {p:.0}%")),
    }
}

pub fn render_map(f: &mut Frame, area: Rect, app: &App, map: &Map, sel: usize) {
    let pc = &app.data.snap.placement;
    let total = pc.landed_total();
    let counts: Vec<u64> = map.units.iter().map(|u| landed(pc, u)).collect();
    let max = counts.iter().copied().max().unwrap_or(0);
    let width = usize::from(area.width).max(LABEL + 8);
    let per_cpu = app.per_cpu_map;
    let mut lines: Vec<Line> = Vec::new();
    let mut sel_line = 0;
    for r in &map.rows {
        let node_n: u64 = r.groups.iter().flatten().map(|&i| counts[i]).sum();
        let label = fmt::fit(
            &format!("node{} {:>4}", r.node, short_pct(node_n, total)),
            LABEL,
        );
        let mut axis = " ".repeat(LABEL);
        let mut spans = vec![Span::styled(label, fmt::bold())];
        let mut used = LABEL;
        let flush = |lines: &mut Vec<Line>, axis: &mut String, spans: &mut Vec<Span<'static>>| {
            if per_cpu {
                lines.push(Line::from(Span::styled(
                    std::mem::replace(axis, " ".repeat(LABEL)),
                    fmt::dim(),
                )));
            }
            lines.push(Line::from(std::mem::take(spans)));
            spans.push(Span::raw(" ".repeat(LABEL)));
        };
        for g in &r.groups {
            let glen = if per_cpu { g.len() + 1 } else { 9 };
            if used + glen > width && used > LABEL {
                flush(&mut lines, &mut axis, &mut spans);
                used = LABEL;
            }
            spans.push(Span::styled("▕", fmt::dim()));
            // The axis: this LLC's first CPU number, where its cells start.
            if let Some(c) = g.first().and_then(|&i| map.units[i].cpus.first()) {
                let num = c.to_string();
                let at = used + 1;
                if axis.chars().count() <= at && num.len() <= glen.saturating_sub(1).max(1) {
                    axis.push_str(&" ".repeat(at - axis.chars().count()));
                    axis.push_str(&num);
                }
            }
            for &i in g {
                if i == sel {
                    sel_line = lines.len() + usize::from(per_cpu);
                }
                let style = if i == sel {
                    Style::default().add_modifier(Modifier::REVERSED)
                } else {
                    Style::default()
                };
                let sh = fmt::shade(counts[i], max);
                let text = if per_cpu {
                    sh.to_string()
                } else {
                    format!("llc{:<3}{sh}{sh}", map.units[i].llc)
                };
                if per_cpu && used + 2 > width {
                    flush(&mut lines, &mut axis, &mut spans);
                    used = LABEL;
                }
                used += text.chars().count();
                spans.push(Span::styled(text, style));
            }
            used += 1;
        }
        if per_cpu {
            lines.push(Line::from(Span::styled(axis, fmt::dim())));
        }
        lines.push(Line::from(spans));
    }
    let rows = usize::from(area.height).saturating_sub(1);
    let first = sel_line.saturating_sub(rows.saturating_sub(1));
    // Keep an axis line with its cells.
    let first = if per_cpu && first % 2 == 1 {
        first - 1
    } else {
        first
    };
    let shown = lines.len().saturating_sub(first).min(rows);
    let all: Vec<u32> = map
        .units
        .iter()
        .flat_map(|u| u.cpus.iter().copied())
        .collect();
    let mut head = format!(
        "wakeups landed: · none, ░▒▓█ quarters of {max} · {}",
        busy_text(app, &all)
    );
    if first > 0 || first + shown < lines.len() {
        head.push_str(&format!(
            " · rows {}–{} of {} ↕",
            first + 1,
            first + shown,
            lines.len()
        ));
    }
    let mut out = vec![Line::from(Span::styled(
        fmt::ellipsis(&head, usize::from(area.width)),
        fmt::dim(),
    ))];
    out.extend(lines.into_iter().skip(first).take(rows));
    f.render_widget(Paragraph::new(out), area);
}

fn short_pct(n: u64, d: u64) -> String {
    if d == 0 {
        "-".into()
    } else {
        format!("{:.0}%", n as f64 * 100.0 / d as f64)
    }
}

/// Detail of the selected cell: for a CPU, the levels its wakeups came from; for an LLC, its
/// CPUs one by one (the per-CPU detail of the aggregated map).
pub fn render_detail(f: &mut Frame, area: Rect, app: &App, map: &Map, sel: usize) {
    let Some(u) = map.units.get(sel) else {
        return;
    };
    let pc = &app.data.snap.placement;
    let t = &app.data.header().topology;
    let n = landed(pc, u);
    let woke: u64 = u
        .cpus
        .iter()
        .map(|&c| pc.cpu(c).map_or(0, |x| x.woke))
        .sum();
    let mut lines = Vec::new();
    let single = match u.cpus.as_slice() {
        [c] if app.per_cpu_map => Some(*c),
        _ => None,
    };
    let title = match single {
        Some(c) => format!(
            "CPU {c} · pkg{} node{} llc{} core {}",
            u.package,
            u.node,
            u.llc,
            t.cpu(c).map_or(0, |x| x.core)
        ),
        None => format!(
            "llc{} · pkg{} node{} · {} CPUs",
            u.llc,
            u.package,
            u.node,
            u.cpus.len()
        ),
    };
    lines.push(Line::from(Span::styled(title, fmt::bold())));
    lines.push(Line::raw(format!(
        "landed {} ({}) · {}",
        fmt::count(n),
        fmt::pct(n, pc.landed_total()),
        busy_text(app, &u.cpus)
    )));
    lines.push(Line::raw(format!("woke from here {}", fmt::count(woke))));
    if single.is_some() {
        let c = sel_cpu(u)
            .and_then(|c| pc.cpu(c))
            .copied()
            .unwrap_or_default();
        let (w, p) = (c.vs_waker, c.vs_prev);
        lines.push(Line::from(Span::styled(
            format!("{:<14} {:>7} {:>7}", "came from", "waker", "prev"),
            fmt::dim(),
        )));
        for l in Level::ALL {
            // A level no two CPUs stand at is n/a here as in the reports, never a 0.0%.
            let (a, b) = if app.data.snap.topology.level_exists(l) {
                (fmt::pct(w.get(l), w.total()), fmt::pct(p.get(l), p.total()))
            } else {
                ("n/a".into(), "n/a".into())
            };
            lines.push(Line::raw(format!("{:<14} {a:>7} {b:>7}", l.name())));
        }
    } else {
        let max = u
            .cpus
            .iter()
            .map(|&c| pc.cpu(c).map_or(0, |x| x.landed))
            .max()
            .unwrap_or(0);
        let cols = (usize::from(area.width) / 15).max(1);
        let rows = usize::from(area.height)
            .saturating_sub(lines.len() + 1)
            .max(1);
        let cells: Vec<String> = u
            .cpus
            .iter()
            .map(|&c| {
                let k = pc.cpu(c).map_or(0, |x| x.landed);
                format!("{c:>4} {} {:<7}", fmt::shade(k, max), fmt::count(k))
            })
            .collect();
        lines.push(Line::from(Span::styled("cpu landed", fmt::dim())));
        for chunk in cells.chunks(cols).take(rows) {
            lines.push(Line::raw(chunk.join(" ")));
        }
        if cells.len() > cols * rows {
            lines.push(Line::from(Span::styled(
                format!("… {} more (a: per-CPU map)", cells.len() - cols * rows),
                fmt::dim(),
            )));
        }
    }
    let w = usize::from(area.width);
    let lines: Vec<Line> = lines
        .into_iter()
        .map(|l| {
            if l.width() > w {
                Line::raw(fmt::ellipsis(&l.to_string(), w))
            } else {
                l
            }
        })
        .collect();
    f.render_widget(
        Paragraph::new(fmt::cut_lines(lines, usize::from(area.height))),
        area,
    );
}

fn sel_cpu(u: &Unit) -> Option<u32> {
    u.cpus.first().copied()
}
