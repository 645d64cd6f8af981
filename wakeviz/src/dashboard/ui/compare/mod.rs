//! Compare mode (`--replay B --compare A`): every view with the baseline recording's figures
//! beside the current ones and a Δ column. Both sides are snapshots; a Δ is arithmetic on two
//! of their values ([`super::delta`]). The figures are cumulative on both sides: the baseline
//! is one finished fold, so a rolling window of the current stream has nothing to match.
//!
//! With one recording per side there is no run-to-run noise to test a change against, so no
//! significance marker is drawn, and the header says so once. Recordings of different
//! machines compare shares only: counts, rates and latencies of different topologies are not
//! comparable, and per-LLC rows need the same LLC layout.
mod latency;
mod overview;
pub mod placement;
mod scan;
mod shadow;

use ratatui::{
    Frame,
    layout::{Constraint, Layout, Rect},
    text::{Line, Span},
    widgets::Paragraph,
};
use wakeviz_core::analysis::{Snapshot, latency::Log2Bucket};

use super::{delta, file_name, fmt};
use crate::dashboard::app::{App, SourceKind, View};

/// Said once, in the compare header: why there is no `*`.
pub const NO_MARKER: &str =
    "1 run per side: no significance marker (use `wakeviz diff` with repeated runs)";
pub const NO_MARKER_SHORT: &str = "1 run per side: no significance marker";
/// The header's second line when the two recordings come from different machines.
pub const SHARES_ONLY: &str =
    "different topologies: shares only (no counts, rates, latencies, per-LLC rows)";

/// The two snapshots of a comparison and what may be compared between them.
pub struct Cmp<'a> {
    pub cur: &'a Snapshot,
    pub base: &'a Snapshot,
    pub cur_name: String,
    pub base_name: String,
    /// Same machine layout: counts, rates and latencies are comparable.
    pub same_topology: bool,
    /// Same LLCs (ids and CPUs): per-LLC rows line up.
    pub same_llcs: bool,
}

impl<'a> Cmp<'a> {
    pub fn of(app: &'a App) -> Option<Self> {
        let b = app.baseline.as_ref()?;
        let cur = &app.data.snap;
        let cur_name = match &app.source {
            SourceKind::Replay { path } => file_name(path),
            SourceKind::Live { .. } => "live".into(),
        };
        Some(Self {
            cur,
            base: &b.snap,
            cur_name,
            base_name: file_name(&b.path),
            same_topology: cur.topology == b.snap.topology,
            same_llcs: cur.topology.llcs == b.snap.topology.llcs,
        })
    }

    /// Δ of two counts (or count-like values: rates, latencies), `n/a` across machines.
    pub fn rel(&self, cur: u64, base: u64) -> String {
        self.rel_f(cur as f64, base as f64)
    }

    pub fn rel_f(&self, cur: f64, base: f64) -> String {
        if self.same_topology {
            delta::rel_text(delta::relative(cur, base))
        } else {
            "n/a".into()
        }
    }
}

/// Stream seconds a snapshot covers (first to last event), for per-second rates.
pub fn span_secs(s: &Snapshot) -> f64 {
    s.placement.first_ts_ns.map_or(0.0, |f| {
        s.placement.last_ts_ns.saturating_sub(f) as f64 / 1e9
    })
}

/// Events per second over the whole stream; 0 for an empty or instantaneous one.
pub fn rate(n: u64, secs: f64) -> f64 {
    if secs > 0.0 { n as f64 / secs } else { 0.0 }
}

/// The compare header, then the view's compare body.
pub fn render(f: &mut Frame, area: Rect, app: &App) {
    let Some(c) = Cmp::of(app) else {
        return;
    };
    let lines = header(&c, usize::from(area.width));
    let [head, body] =
        Layout::vertical([Constraint::Length(lines.len() as u16), Constraint::Min(0)]).areas(area);
    f.render_widget(Paragraph::new(lines), head);
    match app.view {
        View::Overview => overview::render(f, body, app, &c),
        View::Scan => scan::render(f, body, app, &c),
        View::Placement => placement::render(f, body, &c),
        View::Shadow => shadow::render(f, body, app, &c),
        View::Latency => latency::render(f, body, &c),
        View::Timeline | View::Matrix | View::Tasks => super::view_body(f, body, app),
    }
}

fn header(c: &Cmp, width: usize) -> Vec<Line<'static>> {
    let who = format!("COMPARE vs {} · Δ = {} − baseline", c.base_name, c.cur_name);
    let text = [
        format!("{who} · {NO_MARKER}"),
        format!("{who} · {NO_MARKER_SHORT}"),
        format!("COMPARE vs {} · {NO_MARKER_SHORT}", c.base_name),
    ]
    .into_iter()
    .find(|t| t.chars().count() <= width)
    .unwrap_or_else(|| format!("COMPARE vs {} · {NO_MARKER_SHORT}", c.base_name));
    let mut l = vec![Line::from(Span::styled(text, fmt::warn()))];
    if !c.same_topology {
        l.push(Line::from(Span::styled(SHARES_ONLY, fmt::bad())));
    }
    if c.cur.placement.filter != c.base.placement.filter {
        // The baseline is folded once, unfiltered: a filter narrows the current side only.
        l.push(Line::from(Span::styled(
            format!(
                "filter {} applies to the current run only; the baseline is unfiltered",
                c.cur.placement.filter.as_deref().unwrap_or("-")
            ),
            fmt::bad(),
        )));
    }
    l
}

/// A log2 bucket's bounds as the histograms print them (`[512, 1K)`).
fn bucket_label(b: &Log2Bucket) -> String {
    if b.hi - b.lo <= 1 {
        format!("[{}]", human(b.lo))
    } else {
        format!("[{}, {})", human(b.lo), human(b.hi))
    }
}

fn human(v: u64) -> String {
    for (d, s) in [(1u64 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")] {
        if v >= d && v.is_multiple_of(d) {
            return format!("{}{s}", v / d);
        }
    }
    v.to_string()
}

/// Two log2 histograms bucket by bucket: the counts of both sides, and a bar each on one
/// scale (the larger side's biggest bucket), so the shapes compare at a glance.
pub fn histograms(f: &mut Frame, area: Rect, cur: &[Log2Bucket], base: &[Log2Bucket], unit: &str) {
    let mut lines = vec![Line::from(Span::styled(
        format!("log2 buckets [{unit}]: current █, baseline ▒"),
        fmt::bold(),
    ))];
    let mut los: Vec<(u64, u64)> = cur.iter().chain(base).map(|b| (b.lo, b.hi)).collect();
    los.sort_unstable();
    los.dedup();
    if los.is_empty() {
        lines.push(Line::from(Span::styled("no samples yet", fmt::dim())));
        f.render_widget(Paragraph::new(lines), area);
        return;
    }
    let get = |s: &[Log2Bucket], lo: u64| s.iter().find(|b| b.lo == lo).map_or(0, |b| b.count);
    let max = cur.iter().chain(base).map(|b| b.count).max().unwrap_or(0);
    let labels: Vec<String> = los
        .iter()
        .map(|&(lo, hi)| bucket_label(&Log2Bucket { lo, hi, count: 0 }))
        .collect();
    let lw = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let cw = cur
        .iter()
        .chain(base)
        .map(|b| b.count.to_string().len())
        .max()
        .unwrap_or(1);
    let bar = usize::from(area.width)
        .saturating_sub(lw + 2 * cw + 7)
        .saturating_div(2)
        .clamp(2, 30);
    let rows = usize::from(area.height).saturating_sub(1);
    let shown = if los.len() > rows {
        rows.saturating_sub(1)
    } else {
        los.len()
    };
    for (&(lo, _), l) in los.iter().zip(&labels).take(shown) {
        let (a, b) = (get(cur, lo), get(base, lo));
        lines.push(Line::raw(format!(
            "{l:<lw$} {a:>cw$} {b:>cw$} |{}|{}|",
            fmt::bar(a, max, bar),
            plain_bar(b, max, bar)
        )));
    }
    if shown < los.len() {
        lines.push(Line::from(Span::styled(
            format!("… {} more buckets", los.len() - shown),
            fmt::dim(),
        )));
    }
    f.render_widget(Paragraph::new(lines), area);
}

/// A bar of whole `▒` cells (the baseline's; eighth-cell partials are the current's).
fn plain_bar(n: u64, max: u64, width: usize) -> String {
    let cells = if max == 0 {
        0
    } else {
        ((u128::from(n) * width as u128).div_ceil(u128::from(max)) as usize).min(width)
    };
    format!("{}{}", "▒".repeat(cells), " ".repeat(width - cells))
}
