//! Placement, compared: the share of wakeups at each level vs the waker and vs the previous
//! CPU for both runs and the Δ in points; affine and migrated shares; per-node landing shares
//! when the node layout is the same. Shares compare across machines; counts only on one.
use ratatui::{
    Frame,
    layout::Rect,
    text::{Line, Span},
    widgets::Paragraph,
};
use wakeviz_core::{analysis::Snapshot, topology::Level};

use super::Cmp;
use crate::dashboard::ui::{delta, fmt};

/// Which relation a level share is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Waker,
    Prev,
}

impl Side {
    const fn relation(self) -> &'static str {
        match self {
            Self::Waker => "vs_waker",
            Self::Prev => "vs_prev",
        }
    }
}

/// The registry's share (percent) of the classified wakeups at `level`: `None` without
/// wakeups, and where the level cannot occur on the snapshot's topology.
pub fn level_share(s: &Snapshot, side: Side, level: Level) -> Option<f64> {
    let name = format!("placement.{}.{}.share", side.relation(), level.name());
    s.figures.get(&name).and_then(|f| f.value)
}

/// Current minus baseline share at `level`, in points.
pub fn level_share_delta(cur: &Snapshot, base: &Snapshot, side: Side, level: Level) -> Option<f64> {
    delta::points(
        level_share(cur, side, level),
        level_share(base, side, level),
    )
}

/// A share cell: `n/a` where the level cannot occur on that run's topology, `-` without data.
fn share_cell(s: &Snapshot, side: Side, level: Level) -> String {
    if s.topology.level_exists(level) {
        delta::share_text(level_share(s, side, level))
    } else {
        "n/a".into()
    }
}

pub fn render(f: &mut Frame, area: Rect, c: &Cmp) {
    let (a, b) = (&c.cur.placement.wakeups, &c.base.placement.wakeups);
    let mut lines = vec![
        Line::from(Span::styled(
            format!(
                "{:<14}{:<24}  {:<24}",
                "", "vs waker CPU", "vs previous CPU"
            ),
            fmt::bold(),
        )),
        Line::from(Span::styled(
            format!(
                "{:<14}{:>7} {:>7} {:>8}  {:>7} {:>7} {:>8}",
                "level", "current", "base", "Δ", "current", "base", "Δ"
            ),
            fmt::bold(),
        )),
    ];
    for l in Level::ALL {
        let mut s = format!("{:<14}", l.name());
        for side in [Side::Waker, Side::Prev] {
            s.push_str(&format!(
                "{:>7} {:>7} {:>8}  ",
                share_cell(c.cur, side, l),
                share_cell(c.base, side, l),
                delta::pt_text(level_share_delta(c.cur, c.base, side, l))
            ));
        }
        lines.push(Line::raw(s.trim_end().to_string()));
    }
    lines.push(Line::raw(""));
    for (name, x, y) in [
        ("affine", a.affine, b.affine),
        ("migrated", a.migrations, b.migrations),
        ("unclassified", a.unclassified, b.unclassified),
    ] {
        let (sa, sb) = (delta::share(x, a.count), delta::share(y, b.count));
        lines.push(Line::raw(format!(
            "{name:<14}{:>7} {:>7} {:>8}",
            delta::share_text(sa),
            delta::share_text(sb),
            delta::pt_text(delta::points(sa, sb))
        )));
    }
    lines.push(Line::raw(format!(
        "{:<14}{:>7} {:>7} {:>8}",
        "wakeups n",
        fmt::count(a.count),
        fmt::count(b.count),
        c.rel(a.count, b.count)
    )));
    lines.push(Line::raw(format!(
        "{:<14}{:>7} {:>7} {:>8}",
        "forks n",
        fmt::count(c.cur.placement.new_tasks.count),
        fmt::count(c.base.placement.new_tasks.count),
        c.rel(
            c.cur.placement.new_tasks.count,
            c.base.placement.new_tasks.count
        )
    )));
    if c.cur.topology.nodes == c.base.topology.nodes {
        lines.push(Line::raw(""));
        lines.push(Line::from(Span::styled(
            "waker's node (share of wakeups, Δ)",
            fmt::bold(),
        )));
        let mut s = String::new();
        for (x, y) in c
            .cur
            .placement
            .per_node
            .iter()
            .zip(&c.base.placement.per_node)
        {
            let d = delta::points(
                delta::share(x.counts.count, a.count),
                delta::share(y.counts.count, b.count),
            );
            s.push_str(&format!(
                "n{} {} ({})  ",
                x.id,
                delta::share_text(delta::share(x.counts.count, a.count)),
                delta::pt_text(d)
            ));
        }
        lines.push(Line::raw(s.trim_end().to_string()));
    }
    f.render_widget(
        Paragraph::new(lines).wrap(ratatui::widgets::Wrap { trim: false }),
        area,
    );
}
