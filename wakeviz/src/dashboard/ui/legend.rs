//! The `l` legend: what each view's columns, marks and names mean, as footer lines above the
//! key hints. One table per view ([`legend`]); a view's author fills its own entry, the frame
//! lays them out (wrapped to the width, the cut marked).
//!
//! One naming scheme everywhere: LLCs are `llc<N>` and nodes `node<N>` with N the index wakeviz
//! gives them (0.. in topology order, the same in the views, the text report and the JSON),
//! packages `pkg<N>`, CPUs by their kernel number.
use ratatui::text::{Line, Span};

use super::fmt;
use crate::dashboard::app::View;

/// `(term, meaning)` pairs of `view`'s legend.
pub fn legend(view: View) -> &'static [(&'static str, &'static str)] {
    match view {
        View::Overview => OVERVIEW,
        View::Scan => SCAN,
        View::Placement => PLACEMENT,
        View::Shadow => SHADOW,
        View::Latency => LATENCY,
        View::Timeline => TIMELINE,
        View::Matrix => MATRIX,
        View::Tasks => TASKS,
    }
}

const TIMELINE: &[(&str, &str)] = &[
    (
        "wakeups/s",
        "placed wakeups per second in each column's interval",
    ),
    (
        "mix",
        "share of each interval's wakeups per level vs the waker",
    ),
    (
        "p99",
        "scan / wakeup-latency p99 per interval (about 6 % bucket bounds)",
    ),
    (
        "one column",
        "interval length; neighbours merge on long sessions",
    ),
    NAMES,
];

const MATRIX: &[(&str, &str)] = &[
    (
        "rows / columns",
        "waker CPU / chosen CPU (LLC x LLC past 64 CPUs)",
    ),
    (
        "shade",
        "wakeups in the cell, log scale; colour: the pair's level",
    ),
    ("top", "the selected row's three most frequent destinations"),
    NAMES,
];

const TASKS: &[(&str, &str)] = &[
    (
        "wakeups",
        "times the task was woken; wakes: times it woke another task",
    ),
    (
        "xLLC%",
        "share of its wakeups placed outside the waker's LLC",
    ),
    ("p99", "its wakeup -> running p99"),
    (
        "migr",
        "its migrations; other: tasks beyond the 512 followed",
    ),
    NAMES,
];

const NAMES: (&str, &str) = (
    "llc<N> node<N> pkg<N>",
    "LLC / NUMA node / package index (0.., topology order)",
);

const OVERVIEW: &[(&str, &str)] = &[
    ("total", "events folded so far (range or since r)"),
    (
        "/s",
        "events per second of stream time, over the last second",
    ),
    (
        "drops",
        "events lost: kernel = ring buffer full, user = consumer behind",
    ),
    (
        "DEGRADED",
        "something the views rely on did not attach; the reason follows",
    ),
    NAMES,
];

const SCAN: &[(&str, &str)] = &[
    (
        "scan latency",
        "time the kernel spent choosing a CPU (source line says which function)",
    ),
    ("p50 p99 max", "percentiles of that time, ns/µs/ms"),
    ("log2 bars", "count of samples per power-of-two bucket"),
    NAMES,
];

const PLACEMENT: &[(&str, &str)] = &[
    (
        "vs waker / vs prev",
        "where the woken task ran, relative to the waker's CPU / its previous CPU",
    ),
    (
        "same_cpu … cross_package",
        "topology level of that pair of CPUs",
    ),
    (
        "map",
        "one row per node; ▕ starts an LLC; a cell per CPU (a: per LLC); CPU numbers on the axis",
    ),
    (
        "· ░▒▓█",
        "wakeups landed: none, then quarters of the busiest cell",
    ),
    (
        "busy",
        "CPU busy % (sysinfo, live only; replay: n/a, not recorded)",
    ),
    NAMES,
];

/// Filled in by the Shadow view's author.
const SHADOW: &[(&str, &str)] = &[NAMES];

/// Filled in by the Latency view's author.
const LATENCY: &[(&str, &str)] = &[NAMES];

/// The legend of `view` as at most `rows` lines of `width`: `term meaning · term meaning`,
/// wrapped between entries; a cut says so.
pub fn lines(view: View, width: u16, rows: u16) -> Vec<Line<'static>> {
    let width = usize::from(width).max(8);
    let rows = usize::from(rows).max(1);
    let mut out: Vec<Vec<Span<'static>>> = vec![vec![Span::styled("legend ", fmt::bold())]];
    let mut used = 7;
    for &(term, what) in legend(view) {
        let n = term.chars().count() + 1 + what.chars().count();
        let sep = if used > 7 || out.len() > 1 { 3 } else { 0 };
        if used + sep + n > width && used > 0 {
            out.push(Vec::new());
            used = 0;
        }
        let line = out.last_mut().expect("a line");
        if used > 0 && sep > 0 {
            line.push(Span::styled(" · ", fmt::dim()));
            used += 3;
        }
        let room = width.saturating_sub(used + term.chars().count() + 1);
        let what = fmt::ellipsis(what, room);
        used += term.chars().count() + 1 + what.chars().count();
        line.push(fmt::key(term));
        line.push(Span::raw(format!(" {what}")));
    }
    let lines: Vec<Line<'static>> = out.into_iter().map(Line::from).collect();
    fmt::cut_lines(lines, rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_view_has_a_legend_that_fits_and_marks_its_cut() {
        for v in View::ALL {
            assert!(!legend(v).is_empty(), "{v:?}");
            for w in [60u16, 80, 200] {
                for l in lines(v, w, 3) {
                    assert!(l.width() <= usize::from(w), "{v:?} at {w}: {l}");
                }
            }
        }
        let one = lines(View::Placement, 60, 1);
        assert_eq!(one.len(), 1);
        assert!(one[0].to_string().contains("more ↓"), "{}", one[0]);
    }
}
