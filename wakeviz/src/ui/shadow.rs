//! Shadow policies: for every placed wakeup, what each placement policy would have chosen from
//! the reconstructed state at that instant, scored against the kernel's choice. The first row is
//! the baseline (what the kernel did); deltas are against it. Replay is open loop, and the view
//! says so: a policy's choice never changes the events that follow.
use ratatui::{
    Frame,
    layout::Rect,
    style::{Modifier, Style},
    text::{Line, Span},
    widgets::{Paragraph, Wrap},
};
use wakeviz_core::{shadow::PolicyRow, topology::Level};

use super::fmt;
use crate::app::{App, View};

pub fn render(f: &mut Frame, area: Rect, app: &App) {
    let sv = &app.data.shadow;
    let json = app.data.snap.shadow.as_ref().map(|s| &s.json);
    let decision = json
        .and_then(|j| j.get("decision_time"))
        .and_then(|v| v.as_str())
        .unwrap_or("-");
    let mut lines = vec![Line::from(Span::styled(
        "open loop: the policies' choices do not feed back into later events",
        fmt::warn(),
    ))];
    lines.push(match sv.fidelity {
        Some(a) => Line::from(vec![
            Span::styled(format!("Fidelity {:.2}%", 100.0 * a), fmt::bold()),
            Span::raw(format!(
                ": the {} shadow matches the kernel on {} wakeups",
                sv.fidelity_policy,
                fmt::count(sv.evaluated)
            )),
        ]),
        None => Line::from(Span::styled("Fidelity: nothing compared yet", fmt::dim())),
    });
    let ex = sv.excluded;
    lines.push(Line::from(Span::styled(
        format!(
            "decision at {decision} · scan cost {:.0} ns/probe",
            sv.per_probe_ns
        ),
        fmt::dim(),
    )));
    if sv.filtered {
        let f = app
            .data
            .filter()
            .map_or_else(String::new, ToString::to_string);
        let text = format!("rows: {f} wakees only (the shadow state follows every task)");
        lines.push(Line::from(Span::styled(text, fmt::warn())));
    } else {
        lines.push(Line::from(Span::styled(
            format!(
                "excluded: {} fork/exec, {} no placement, {} bad CPU",
                ex.fork_exec, ex.no_placement, ex.invalid_cpu
            ),
            fmt::dim(),
        )));
    }
    lines.push(Line::from(Span::styled(
        format!(
            "{:<18} {:>6} {:>11} {:>11} {:>11} {:>11}",
            "policy", "agree%", "idle% Δ", "stacked% Δ", "probes Δ", "migr% Δ"
        ),
        fmt::bold(),
    )));
    let sel = app.sel[View::Shadow.index()].min(sv.rows.len().saturating_sub(1));
    let base = sv.rows.first();
    let room = usize::from(area.height).saturating_sub(lines.len() + 4);
    let first = sel.saturating_sub(room.saturating_sub(1));
    for (i, r) in sv.rows.iter().enumerate().skip(first).take(room) {
        let b = if i == 0 { None } else { base };
        let style = if i == sel {
            Style::default().add_modifier(Modifier::REVERSED)
        } else {
            Style::default()
        };
        lines.push(Line::from(Span::styled(row(r, b), style)));
    }
    if let Some(r) = sv.rows.get(sel) {
        lines.push(Line::from(Span::styled(
            format!("{}: {}", r.name, r.describe),
            fmt::dim(),
        )));
        for (side, counts) in [("vs waker", &r.vs_waker), ("vs prev ", &r.vs_prev)] {
            let mut s = format!("{side}:");
            for (l, short) in Level::ALL
                .iter()
                .zip(["cpu", "smt", "llc", "node", "pkg", "xpkg"])
            {
                s.push_str(&format!(
                    " {short} {}",
                    fmt::pct(counts[l.index()], r.evaluated)
                ));
            }
            lines.push(Line::raw(s));
        }
    } else {
        lines.push(Line::from(Span::styled(
            "no placed wakeups compared yet",
            fmt::dim(),
        )));
    }
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), area);
}

fn row(r: &PolicyRow, b: Option<&PolicyRow>) -> String {
    let d = |v: f64, base: Option<f64>| match base {
        Some(x) => format!("{v:5.1} {:+5.1}", v - x),
        None => format!("{v:5.1}      "),
    };
    let probes = match b {
        Some(x) if x.probes_mean > 0.0 => format!(
            "{:5.2} {:+4.0}%",
            r.probes_mean,
            100.0 * (r.probes_mean - x.probes_mean) / x.probes_mean
        ),
        _ => format!("{:5.2}      ", r.probes_mean),
    };
    format!(
        "{:<18} {:>6} {:>11} {:>11} {:>11} {:>11}",
        r.name,
        r.agreement
            .map_or("-".into(), |a| format!("{:.2}", 100.0 * a)),
        d(r.idle_pct, b.map(|x| x.idle_pct)),
        d(r.stacked_pct, b.map(|x| x.stacked_pct)),
        probes,
        d(r.migrations_pct, b.map(|x| x.migrations_pct)),
    )
}
