//! The kernel's own wakeup counters beside wakeviz's (the `/proc/schedstat` samples in the
//! stream, first against latest): the seeds' "wakeups on same SMT/MC/DIE/NUMA" comparison,
//! under the Placement view's detail.
use ratatui::text::{Line, Span};
use wakeviz_core::{analysis::schedstat::SchedstatComparison, topology::Level};

use super::fmt;

/// The block's lines, at most `width` wide: a title, a header and a row per counter, or one
/// line saying why there is nothing to compare.
pub fn lines(
    c: Option<&SchedstatComparison>,
    error: Option<&str>,
    width: usize,
) -> Vec<Line<'static>> {
    let Some(c) = c else {
        let why = error.map_or_else(
            || "no /proc/schedstat samples".into(),
            |e| format!("not compared: {e}"),
        );
        return vec![Line::from(Span::styled(
            fmt::ellipsis(&format!("Kernel counters: {why}"), width),
            fmt::dim(),
        ))];
    };
    let mut out = vec![
        Line::from(Span::styled(
            fmt::ellipsis(
                &format!(
                    "Kernel counters · schedstat v{} · {} disagree",
                    c.version, c.flagged
                ),
                width,
            ),
            fmt::bold(),
        )),
        Line::from(Span::styled(
            fmt::ellipsis(
                &format!(
                    "{:<9} {:<7} {:>9} {:>9} {:>7}",
                    "domain", "counter", "kernel", "wakeviz", "diff"
                ),
                width,
            ),
            fmt::dim(),
        )),
    ];
    for r in &c.rows {
        // A shared name takes the first wakeviz level its domain adds, short for the column.
        let domain = match r.levels.first() {
            Some(l) if c.name_shared(r) => format!("{}/{}", r.domain, short(*l)),
            _ => r.domain.clone(),
        };
        let counter = r
            .counter
            .strip_prefix("ttwu_")
            .unwrap_or(r.counter)
            .replace("wake_remote", "remote")
            .replace("move_affine", "affine");
        let diff = match (r.comparable, r.diff_pct) {
            (false, _) => "n/a".to_string(),
            (true, Some(p)) => format!("{p:+.1}%"),
            (true, None) => "-".into(),
        };
        let text = fmt::ellipsis(
            &format!(
                "{domain:<9} {counter:<7} {:>9} {:>9} {diff:>7}",
                fmt::count(r.kernel),
                fmt::count(r.wakeviz)
            ),
            width,
        );
        out.push(if r.flagged {
            Line::from(Span::styled(text, fmt::warn()))
        } else {
            Line::raw(text)
        });
    }
    out
}

fn short(l: Level) -> &'static str {
    match l {
        Level::SameCpu => "cpu",
        Level::SmtSibling => "smt",
        Level::SameLlc => "llc",
        Level::SameNode => "node",
        Level::SamePackage => "pkg",
        Level::CrossPackage => "xpkg",
    }
}
