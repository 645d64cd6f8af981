//! Placement, compared: the share of wakeups at each level vs the waker and vs the previous
//! CPU for both runs and the Δ in points; affine and migrated shares; per-node landing shares
//! when the node layout is the same. Shares compare across machines; counts only on one.
use ratatui::{
    Frame,
    layout::Rect,
    text::{Line, Span},
    widgets::Paragraph,
};
use wakeviz_core::{
    analysis::placement::{LevelCounts, PlacementCounts},
    topology::Level,
};

use super::Cmp;
use crate::ui::{delta, fmt};

/// Which relation a level share is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Waker,
    Prev,
}

fn counts(c: &PlacementCounts, side: Side) -> &LevelCounts {
    match side {
        Side::Waker => &c.vs_waker,
        Side::Prev => &c.vs_prev,
    }
}

/// Share (percent) of the classified wakeups at `level`.
pub fn level_share(c: &PlacementCounts, side: Side, level: Level) -> Option<f64> {
    let l = counts(c, side);
    delta::share(l.get(level), l.total())
}

/// Current minus baseline share at `level`, in points.
pub fn level_share_delta(
    cur: &PlacementCounts,
    base: &PlacementCounts,
    side: Side,
    level: Level,
) -> Option<f64> {
    delta::points(
        level_share(cur, side, level),
        level_share(base, side, level),
    )
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
                delta::share_text(level_share(a, side, l)),
                delta::share_text(level_share(b, side, l)),
                delta::pt_text(level_share_delta(a, b, side, l))
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
