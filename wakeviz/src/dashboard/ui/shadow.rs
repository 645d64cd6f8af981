//! Shadow policies: for every placed wakeup, what each placement policy would have chosen from
//! the reconstructed state at that instant, scored against the kernel's choice. The first row is
//! the baseline (what the kernel did); deltas are against it. Replay is open loop, and the view
//! says so: a policy's choice never changes the events that follow.
use ratatui::{
    Frame,
    layout::Rect,
    style::{Modifier, Style},
    text::{Line, Span},
    widgets::Paragraph,
};
use wakeviz_core::{
    shadow::report::{DecisionTime, PolicyRow, ProbeCostSource},
    topology::Level,
};

use super::fmt;
use crate::dashboard::app::{App, View};

pub fn render(f: &mut Frame, area: Rect, app: &App) {
    let Some(sv) = app.data.snap.shadow.as_ref() else {
        let msg = Line::from(Span::styled("shadow evaluation is off", fmt::dim()));
        f.render_widget(Paragraph::new(msg), area);
        return;
    };
    let decision = match sv.decision_time {
        DecisionTime::SelectTaskRqFair => "select_task_rq_fair",
        DecisionTime::SchedWaking => "sched_waking",
        DecisionTime::SchedWakingWithInputs => "sched_waking, inputs read there",
    };
    let mut lines = vec![Line::from(Span::styled(
        "open loop: the policies' choices do not feed back into later events",
        fmt::warn(),
    ))];
    lines.push(match sv.fidelity.agreement {
        Some(a) => {
            let mut v = vec![
                Span::styled(format!("Fidelity {:.2}%", 100.0 * a), fmt::bold()),
                Span::raw(format!(
                    ": the {} shadow matches the kernel on {} wakeups",
                    sv.fidelity.policy,
                    fmt::count(sv.evaluated)
                )),
            ];
            if a < 0.99 {
                v.push(Span::styled(
                    " · below 99%: a Δ within the model's error is not a finding",
                    fmt::warn(),
                ));
            }
            Line::from(v)
        }
        None => Line::from(Span::styled("Fidelity: nothing compared yet", fmt::dim())),
    });
    let src = match sv.per_probe_source {
        ProbeCostSource::SelectDurations if sv.per_probe_ns >= 2000.0 => "measured, capped",
        ProbeCostSource::SelectDurations => "measured",
        ProbeCostSource::Default => "assumed: no select durations",
    };
    lines.push(Line::from(Span::styled(
        format!(
            "decision at {decision} · scan cost {:.0} ns/probe ({src})",
            sv.per_probe_ns
        ),
        fmt::dim(),
    )));
    let cov = &app.data.snap.placement.coverage;
    let compared = cov.shadow.map_or(sv.evaluated, |c| c.compared);
    let mut scope = format!(
        "covers {} of {} placed wakeups ({})",
        fmt::count(compared),
        fmt::count(cov.placed),
        fmt::pct(compared, cov.placed)
    );
    if let Some(c) = cov.shadow
        && c.excluded() > 0
    {
        let why: Vec<String> = c
            .short_reasons()
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(w, n)| format!("{} {w}", fmt::count(*n)))
            .collect();
        scope.push_str(&format!("; left out: {}", why.join(", ")));
    }
    lines.push(Line::from(Span::styled(scope, fmt::warn())));
    if sv.filtered {
        let text = match app.data.filter() {
            Some(f) => format!("rows: {f} wakees only (the shadow state follows every task)"),
            None => "rows: without wakeviz's own threads".to_string(),
        };
        lines.push(Line::from(Span::styled(text, fmt::warn())));
    }
    lines.push(Line::from(Span::styled(
        format!(
            "{:<18} {:>6} {:>11} {:>11} {:>11} {:>11}",
            "policy", "agree%", "idle% Δpt", "stack% Δpt", "probes Δ%", "migr% Δpt"
        ),
        fmt::bold(),
    )));
    let rows = &sv.policies;
    let sel = app.sel[View::Shadow.index()].min(rows.len().saturating_sub(1));
    let base = rows.first();
    let selected = |i: usize| {
        if i == sel {
            Style::default().add_modifier(Modifier::REVERSED)
        } else {
            Style::default()
        }
    };
    // The baseline row stays pinned; the policy rows under it scroll with the selection.
    if let Some(b) = base {
        lines.push(Line::from(Span::styled(
            row(b),
            selected(0).add_modifier(Modifier::BOLD),
        )));
    }
    let policies = rows.len().saturating_sub(1);
    // Under the table: the legend (2 lines), the selected row's description, locality and
    // cache placement (4).
    let room = usize::from(area.height)
        .saturating_sub(lines.len() + 6)
        .max(1);
    let psel = sel.saturating_sub(1);
    let first = psel.saturating_sub(room.saturating_sub(1));
    let fits = policies <= first + room;
    let shown = if fits {
        room
    } else {
        room.saturating_sub(1).max(1)
    };
    for (i, r) in rows.iter().enumerate().skip(1 + first).take(shown) {
        lines.push(Line::from(Span::styled(row(r), selected(i))));
    }
    let below = policies.saturating_sub(first + shown);
    if below > 0 {
        lines.push(Line::from(Span::styled(
            format!("{below} more ↓"),
            fmt::dim(),
        )));
    }
    lines.push(Line::from(Span::styled(
        "agree%=kernel's CPU  idle%=idle CPU  stack%=busy CPU  migr%=left prev CPU",
        fmt::dim(),
    )));
    lines.push(Line::from(Span::styled(
        format!(
            "Δ vs {}, the kernel model (observed row: its error)  -=n/a",
            sv.model
        ),
        fmt::dim(),
    )));
    let topo = &app.data.snap.topology;
    if let Some(r) = rows.get(sel) {
        lines.push(Line::from(Span::styled(
            format!("{}: {}", r.name, r.describe),
            fmt::dim(),
        )));
        for (side, counts) in [
            ("vs waker", &r.placement.vs_waker),
            ("vs prev ", &r.placement.vs_prev),
        ] {
            let mut s = format!("{side}:");
            for (l, short) in Level::ALL
                .iter()
                .zip(["cpu", "smt", "llc", "node", "pkg", "xpkg"])
            {
                // A level this topology cannot have is n/a, as in the Placement view.
                let v = if topo.level_exists(*l) {
                    fmt::pct(counts.get(*l), r.evaluated)
                } else {
                    "n/a".into()
                };
                s.push_str(&format!(" {short} {v}"));
            }
            lines.push(Line::raw(s));
        }
        lines.push(Line::raw(cache(r)));
    } else {
        lines.push(Line::from(Span::styled(
            "no placed wakeups compared yet",
            fmt::dim(),
        )));
    }
    // Cut (marked with …) rather than wrapped: a wrapped head would push the policy rows, the
    // view's main figure, off a short terminal.
    f.render_widget(Paragraph::new(fmt::fit_lines(lines, area.width)), area);
}

/// The selected policy's answers to the cache-placement questions ("-": nothing qualified).
fn cache(r: &PolicyRow) -> String {
    let c = &r.cache;
    let p = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| format!("{v:.1}%"));
    let n = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| format!("{v:.2}"));
    format!(
        "cache: in preferred LLC {} · LLC moves {} · stacked beside idle {} ({} idle left) · LLCs/process {}",
        p(c.preferred_llc_pct),
        p(c.llc_moves_pct),
        p(c.stacked_idle_left_pct),
        n(c.idle_left_mean),
        n(c.llcs_per_process)
    )
}

/// `value delta`: the value, and its difference from the kernel model's in points (the
/// report's `vs_model`); "-" where the value is not available, "n/a" where the delta is not.
fn d(v: Option<f64>, delta: Option<f64>) -> String {
    match (v, delta) {
        (None, _) => format!("{:>5}      ", "-"),
        (Some(v), Some(x)) => format!("{v:5.1} {x:+5.1}"),
        (Some(v), None) => format!("{v:5.1}   n/a"),
    }
}

fn row(r: &PolicyRow) -> String {
    let probes = match (r.probes_mean, r.vs_model.probes_pct) {
        (Some(p), Some(x)) => format!("{p:5.2} {x:+4.0}%"),
        (Some(p), None) => format!("{p:5.2}   n/a"),
        (None, _) => format!("{:>5}      ", "-"),
    };
    let dm = &r.vs_model;
    format!(
        "{:<18} {:>6} {:>11} {:>11} {:>11} {:>11}",
        r.name,
        r.agreement
            .map_or("-".into(), |a| format!("{:.2}", 100.0 * a)),
        d(r.idle_pct, dm.idle_pt),
        d(r.stacked_pct, dm.stacked_pt),
        probes,
        d(r.migrations_pct, dm.migrations_pt),
    )
}
