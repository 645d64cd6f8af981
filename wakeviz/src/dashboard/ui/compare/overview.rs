//! Overview, compared: which two runs (label, kernel, host, topology) and their event counts,
//! per-second rates and drops side by side.
use ratatui::{
    Frame,
    layout::Rect,
    text::{Line, Span},
    widgets::{Paragraph, Wrap},
};
use wakeviz_core::{analysis::Snapshot, event::Kind};

use super::{Cmp, rate, span_secs};
use crate::{dashboard::app::App, dashboard::ui::fmt};

pub fn render(f: &mut Frame, area: Rect, app: &App, c: &Cmp) {
    let mut l = vec![
        run_line("Current", &c.cur_name, c.cur),
        run_line("Baseline", &c.base_name, c.base),
    ];
    if c.same_topology {
        l.push(kv("Topology", format!("same: {}", c.cur.topology.summary)));
    } else {
        l.push(kv(
            "Topology",
            format!("current  {}", c.cur.topology.summary),
        ));
        l.push(kv("", format!("baseline {}", c.base.topology.summary)));
    }
    for w in
        app.warnings
            .iter()
            .map(|w| format!("warning: {w}"))
            .chain(app.baseline.iter().flat_map(|b| {
                b.warnings
                    .iter()
                    .map(|w| format!("warning (baseline): {w}"))
            }))
    {
        l.push(Line::from(Span::styled(w, fmt::warn())));
    }
    l.push(Line::raw(""));
    l.push(Line::from(Span::styled(
        format!(
            "{:<20} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
            "events", "current", "baseline", "Δ", "cur/s", "base/s", "Δ/s"
        ),
        fmt::bold(),
    )));
    let (sc, sb) = (span_secs(c.cur), span_secs(c.base));
    let row = |name: &str, a: u64, b: u64| {
        let (ra, rb) = (rate(a, sc), rate(b, sb));
        Line::raw(format!(
            "{name:<20} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
            fmt::count(a),
            fmt::count(b),
            c.rel(a, b),
            fmt::rate(ra),
            fmt::rate(rb),
            c.rel_f(ra, rb)
        ))
    };
    for k in Kind::ALL {
        l.push(row(k.name(), c.cur.events.0[k], c.base.events.0[k]));
    }
    l.push(row("all", c.cur.events.total(), c.base.events.total()));
    l.push(row(
        "wakeups placed",
        c.cur.placement.wakeups.count,
        c.base.placement.wakeups.count,
    ));
    let (dc, db) = (&c.cur.drops, &c.base.drops);
    for (name, a, b) in [
        ("drops (kernel+user)", dc.total, db.total),
        (
            "wakeup, no waking",
            dc.unmatched_wakeups,
            db.unmatched_wakeups,
        ),
        ("probe skipped", dc.probe_misses, db.probe_misses),
    ] {
        let style = if a > 0 || b > 0 {
            fmt::bad()
        } else {
            ratatui::style::Style::default()
        };
        l.push(Line::from(Span::styled(
            format!(
                "{name:<20} {:>8} {:>8} {:>8}",
                fmt::count(a),
                fmt::count(b),
                c.rel(a, b)
            ),
            style,
        )));
    }
    l.push(Line::from(Span::styled(
        format!(
            "stream: current {:.3} s, baseline {:.3} s; rates are per stream second",
            sc, sb
        ),
        fmt::dim(),
    )));
    f.render_widget(Paragraph::new(l).wrap(Wrap { trim: false }), area);
}

fn kv(k: &str, v: String) -> Line<'static> {
    Line::from(vec![
        Span::styled(format!("{k:<10}"), fmt::bold()),
        Span::raw(v),
    ])
}

/// `Current   b.wvz · label tip · kernel 6.12 · host h`.
fn run_line(who: &str, name: &str, s: &Snapshot) -> Line<'static> {
    let r = &s.recording;
    let label = r
        .run
        .label
        .as_deref()
        .map_or_else(String::new, |l| format!(" · label {l}"));
    kv(
        who,
        format!(
            "{name}{label} · kernel {} · host {}",
            r.kernel_release, r.hostname
        ),
    )
}
