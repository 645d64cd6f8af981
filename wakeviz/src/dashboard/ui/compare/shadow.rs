//! Shadow policies, compared: each policy's agreement with the kernel, idle hits, stacking and
//! probes in the current run with the Δ against the same policy's row in the baseline run.
use ratatui::{
    Frame,
    layout::Rect,
    style::{Modifier, Style},
    text::{Line, Span},
    widgets::{Paragraph, Wrap},
};
use wakeviz_core::shadow::report::PolicyRow;

use super::Cmp;
use crate::{
    dashboard::app::{App, View},
    dashboard::ui::{delta, fmt},
};

pub fn render(f: &mut Frame, area: Rect, app: &App, c: &Cmp) {
    let (Some(a), Some(b)) = (c.cur.shadow.as_ref(), c.base.shadow.as_ref()) else {
        let msg = Line::from(Span::styled(
            "shadow evaluation is off in one of the runs: nothing to compare",
            fmt::dim(),
        ));
        f.render_widget(Paragraph::new(msg), area);
        return;
    };
    let pct = |x: Option<f64>| x.map(|v| 100.0 * v);
    let (fa, fb) = (pct(a.fidelity.agreement), pct(b.fidelity.agreement));
    let mut lines = vec![
        Line::from(Span::styled(
            "open loop: the policies' choices do not feed back into later events",
            fmt::warn(),
        )),
        Line::from(vec![
            Span::styled(format!("Fidelity {}", delta::share_text(fa)), fmt::bold()),
            Span::raw(format!(
                " (baseline {}, {}) on {} vs {} wakeups",
                delta::share_text(fb),
                delta::pt_text(delta::points(fa, fb)),
                fmt::count(a.evaluated),
                fmt::count(b.evaluated)
            )),
        ]),
        Line::from(Span::styled(
            "Δ: current minus the same policy in the baseline (pt; probes relative)",
            fmt::dim(),
        )),
        Line::from(Span::styled(
            format!(
                "{:<18} {:>6} {:>7} {:>6} {:>7} {:>6} {:>7} {:>5} {:>7}",
                "policy", "agree%", "Δ", "idle%", "Δ", "stack%", "Δ", "probe", "Δ"
            ),
            fmt::bold(),
        )),
    ];
    let sel = app.sel[View::Shadow.index()].min(a.policies.len().saturating_sub(1));
    let room = usize::from(area.height).saturating_sub(lines.len() + 2);
    let first = sel.saturating_sub(room.saturating_sub(1));
    for (i, r) in a.policies.iter().enumerate().skip(first).take(room) {
        let base = b.policies.iter().find(|x| x.name == r.name);
        let style = if i == sel {
            Style::default().add_modifier(Modifier::REVERSED)
        } else {
            Style::default()
        };
        lines.push(Line::from(Span::styled(row(c, r, base), style)));
    }
    if let Some(r) = a.policies.get(sel) {
        let missing = if b.policies.iter().any(|x| x.name == r.name) {
            ""
        } else {
            " (not in the baseline)"
        };
        lines.push(Line::from(Span::styled(
            format!("{}{missing}: {}", r.name, r.describe),
            fmt::dim(),
        )));
    }
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), area);
}

/// A share and its Δ against the baseline policy's, as two cells.
fn cells(v: Option<f64>, base: Option<f64>) -> (String, String) {
    (
        v.map_or_else(|| "-".into(), |v| format!("{v:.1}")),
        delta::pt_text(delta::points(v, base)),
    )
}

fn row(c: &Cmp, r: &PolicyRow, b: Option<&PolicyRow>) -> String {
    let agree = r.agreement.map(|x| 100.0 * x);
    let (ag, agd) = cells(agree, b.and_then(|x| x.agreement).map(|x| 100.0 * x));
    let (id, idd) = cells(r.idle_pct, b.and_then(|x| x.idle_pct));
    let (st, std) = cells(r.stacked_pct, b.and_then(|x| x.stacked_pct));
    let probes = r
        .probes_mean
        .map_or_else(|| "-".into(), |p| format!("{p:.2}"));
    let pd = match (r.probes_mean, b.and_then(|x| x.probes_mean)) {
        (Some(p), Some(x)) => c.rel_f(p, x),
        _ => "n/a".into(),
    };
    format!(
        "{:<18} {ag:>6} {agd:>7} {id:>6} {idd:>7} {st:>6} {std:>7} {probes:>5} {pd:>7}",
        r.name
    )
}
