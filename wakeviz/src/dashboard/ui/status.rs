//! What the header says about the source: LIVE / REPLAY with the exact degradations, the clock
//! (elapsed time live; position / length and the recording's date on replay), and the status
//! segments cut by priority when the line is narrow.
//!
//! A degradation is something the user loses: no function probes (no scan latency, the shadow
//! decides at `sched_waking`) or a sched tracepoint that did not attach. `select_idle_cpu`
//! being inlined is not one when `select_task_rq_fair` is probed: that is where the scan is
//! then measured, and most kernels inline it.
use ratatui::{
    style::{Modifier, Style},
    text::{Line, Span},
};
use wakeviz_core::format::{Header, ProbeState, ScanSource};

use super::{file_name, fmt};
use crate::dashboard::app::{App, SourceKind};

/// The short cause of a probe's failure: `fentry EPERM`, `inlined`, `no vmlinux BTF`.
fn short_cause(reason: &str) -> String {
    let mut parts = reason.splitn(3, ':').map(str::trim);
    let head = parts.next().unwrap_or("");
    let cause = match head {
        "fentry" | "tracepoint" | "raw_tp" | "tp_btf" => {
            let next = parts.next().unwrap_or("failed");
            let next = next.split('(').next().unwrap_or(next).trim();
            let word = if next.starts_with("EPERM") {
                "EPERM"
            } else {
                next
            };
            format!("{head} {word}")
        }
        "EPERM" => "fentry EPERM".into(),
        h => h.to_string(),
    };
    fmt::ellipsis(&cause, 40)
}

/// The degradations of a capture, each a short phrase; empty when nothing the user relies on
/// is missing.
pub fn degradations(h: &Header) -> Vec<String> {
    let function = |n: &str| n == "select_task_rq_fair" || n == "select_idle_cpu";
    let mut out = Vec::new();
    if h.scan_source == ScanSource::None {
        let why = ["select_task_rq_fair", "select_idle_cpu"]
            .iter()
            .find_map(|n| h.probe(n).and_then(|p| p.state.reason()))
            .map_or_else(|| "no function probes".into(), short_cause);
        out.push(format!("tracepoints only: {why}"));
    }
    for p in &h.probes {
        let expected = match h.scan_source {
            ScanSource::None => function(&p.name),
            ScanSource::SelectTaskRqFair | ScanSource::DebugInfo => p.name == "select_idle_cpu",
            ScanSource::SelectIdleCpu => false,
        };
        if expected {
            continue;
        }
        match &p.state {
            ProbeState::Attached => {}
            ProbeState::Failed(r) | ProbeState::Unavailable(r) => {
                out.push(format!("{}: {}", p.name, short_cause(r)));
            }
        }
    }
    out
}

/// The source badge for the tab line: `LIVE · tracepoints only: fentry EPERM`,
/// `REPLAY trace.wvz`, `COMPARE vs base.wvz`.
pub fn source_badge(app: &App) -> String {
    if let Some(b) = &app.baseline {
        return format!("COMPARE vs {}", file_name(&b.path));
    }
    if let Some(f) = &app.finished {
        return format!("FINISHED, {f}");
    }
    let mut s = match &app.source {
        SourceKind::Live { recording: None } => "LIVE".to_string(),
        SourceKind::Live { recording: Some(p) } => format!("LIVE, recording {}", file_name(p)),
        SourceKind::Replay { path } => format!("REPLAY {}", file_name(path)),
    };
    for d in degradations(app.data.header()) {
        s.push_str(" · ");
        s.push_str(&d);
    }
    s
}

/// The recording's start, UTC, to the minute: the run's own stamp when it has one, else the
/// header's realtime clock offset.
pub fn recorded_utc(h: &Header) -> Option<String> {
    if let Some(s) = &h.run.start_utc {
        // `2026-12-01T08:00:00.123Z` -> `2026-12-01 08:00 UTC`.
        let (d, t) = s.split_once('T')?;
        return Some(format!("{d} {} UTC", t.get(..5)?));
    }
    let ns = i128::from(h.realtime_offset_ns) + i128::from(h.start_ts_ns);
    if h.realtime_offset_ns == 0 {
        return None;
    }
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(ns).ok()?;
    Some(format!(
        "{:04}-{:02}-{:02} {:02}:{:02} UTC",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute()
    ))
}

/// `12.3 s` / `4m05s` / `1h02m`: elapsed time, short.
pub fn elapsed(ns: u64) -> String {
    let s = ns / 1_000_000_000;
    match s {
        0..=59 => format!("{:.1} s", ns as f64 / 1e9),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

/// One piece of the status line; lower `prio` is kept longer.
struct Seg {
    text: String,
    style: Style,
    prio: u8,
}

fn seg(text: String, style: Style, prio: u8) -> Seg {
    Seg { text, style, prio }
}

fn segments(app: &App) -> Vec<Seg> {
    let s = &app.data.snap;
    let total_rate: f64 = app.data.rates.0.iter().sum();
    let mut v = Vec::new();
    if let Some(p) = &app.pacer {
        let len = p
            .length_ns
            .map_or_else(|| "?".to_string(), |l| format!("{:.3}", l as f64 / 1e9));
        let mut t = format!(
            "+{:.3} / {len} s {}",
            p.shown_ns() as f64 / 1e9,
            p.speed_label()
        );
        if p.seeking() {
            t.push_str(&format!(" seeking (at {})", fmt::secs(p.position_ns())));
        } else if p.ended {
            t.push_str(" end");
        }
        v.push(seg(t, Style::default(), 0));
    } else {
        let el = s
            .placement
            .first_ts_ns
            .map_or(0, |f| s.placement.last_ts_ns.saturating_sub(f));
        v.push(seg(format!("{} elapsed", elapsed(el)), Style::default(), 0));
    }
    v.push(seg(
        format!(
            "events {} {}/s",
            fmt::count(s.events.total()),
            fmt::rate(total_rate)
        ),
        Style::default(),
        1,
    ));
    let d = &s.drops;
    if d.total == 0 {
        v.push(seg("drops 0".into(), Style::default(), 3));
    } else {
        v.push(seg(
            format!(
                "drops {} (kernel {}, user {})",
                fmt::count(d.total),
                fmt::count(d.kernel_drops),
                fmt::count(d.user_drops)
            ),
            fmt::bad(),
            1,
        ));
    }
    if let Some(r) = app.range_label() {
        v.push(seg(r, fmt::warn(), 1));
    }
    if app.paused {
        v.push(seg(
            "PAUSED".into(),
            fmt::warn().add_modifier(Modifier::BOLD),
            1,
        ));
    }
    if let Some(n) = &app.notice {
        v.push(seg(n.clone(), fmt::dim(), 2));
    }
    let filter = app
        .data
        .filter()
        .map_or_else(|| "-".to_string(), ToString::to_string);
    if let Some(scope) = app.data.scope() {
        v.push(seg(format!("scope: {scope}"), Style::default(), 4));
    }
    v.push(seg(format!("filter: {filter}"), Style::default(), 4));
    if app.is_replay()
        && let Some(d) = recorded_utc(app.data.header())
    {
        v.push(seg(format!("recorded {d}"), fmt::dim(), 5));
    }
    v
}

const SEP: &str = " │ ";

/// The status line(s): every segment that fits in `rows` lines of `width`, dropping the least
/// important first; a `…` says something was left out.
pub fn lines(app: &App, width: u16, rows: u16) -> Vec<Line<'static>> {
    let width = usize::from(width).max(1);
    let rows = usize::from(rows).max(1);
    let mut segs = segments(app);
    let mut cut = false;
    loop {
        let laid = lay_out(&segs, width, cut);
        if laid.len() <= rows || segs.len() <= 1 {
            return laid
                .into_iter()
                .take(rows)
                .map(|l| {
                    Line::from(
                        l.into_iter()
                            .map(|(t, st)| Span::styled(t, st))
                            .collect::<Vec<_>>(),
                    )
                })
                .collect();
        }
        // Drop the least important (the last of the highest prio).
        let worst = segs
            .iter()
            .enumerate()
            .max_by_key(|(i, s)| (s.prio, *i))
            .map_or(0, |(i, _)| i);
        segs.remove(worst);
        cut = true;
    }
}

/// Segments packed into lines; a segment wider than a line is ellipsised.
fn lay_out(segs: &[Seg], width: usize, cut: bool) -> Vec<Vec<(String, Style)>> {
    let mut out: Vec<Vec<(String, Style)>> = vec![Vec::new()];
    let mut used = 0;
    let n = segs.len();
    for (i, s) in segs.iter().enumerate() {
        let tail = if cut && i + 1 == n { " …" } else { "" };
        let need = s.text.chars().count() + tail.chars().count();
        let sep = if used == 0 { 0 } else { SEP.chars().count() };
        if used > 0 && used + sep + need > width {
            out.push(Vec::new());
            used = 0;
        }
        let line = out.last_mut().expect("one line at least");
        if used > 0 {
            line.push((SEP.to_string(), fmt::dim()));
            used += SEP.chars().count();
        }
        let room = width.saturating_sub(used + tail.chars().count());
        let text = fmt::ellipsis(&s.text, room);
        used += text.chars().count() + tail.chars().count();
        line.push((text, s.style));
        if !tail.is_empty() {
            line.push((tail.to_string(), fmt::dim()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use wakeviz_core::{
        format::ProbeStatus,
        source::{EventSource, ReplaySource},
    };

    use crate::dashboard::app::tests::{recording, topo};

    fn header() -> Header {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = recording(dir.path(), &topo(), 100);
        ReplaySource::open(&path).expect("open").header().clone()
    }

    fn probe(name: &str, state: ProbeState) -> ProbeStatus {
        ProbeStatus {
            name: name.into(),
            mode: None,
            state,
            fallbacks: Vec::new(),
        }
    }

    #[test]
    fn inlined_select_idle_cpu_is_not_a_degradation() {
        let mut h = header();
        h.scan_source = ScanSource::SelectTaskRqFair;
        h.probes = vec![
            probe("sched_waking", ProbeState::Attached),
            probe("select_task_rq_fair", ProbeState::Attached),
            probe(
                "select_idle_cpu",
                ProbeState::Unavailable("inlined: select_idle_cpu is not in kallsyms".into()),
            ),
        ];
        assert!(degradations(&h).is_empty(), "{:?}", degradations(&h));
        h.probes[0].state = ProbeState::Failed("tracepoint: EPERM (x)".into());
        assert_eq!(degradations(&h), ["sched_waking: tracepoint EPERM"]);
    }

    #[test]
    fn tracepoint_only_names_the_cause() {
        let mut h = header();
        h.scan_source = ScanSource::None;
        h.probes = vec![
            probe("sched_waking", ProbeState::Attached),
            probe(
                "select_task_rq_fair",
                ProbeState::Failed("EPERM: the kernel refused to load fentry/fexit".into()),
            ),
            probe(
                "select_idle_cpu",
                ProbeState::Unavailable("inlined: not in kallsyms".into()),
            ),
        ];
        assert_eq!(degradations(&h), ["tracepoints only: fentry EPERM"]);
    }

    #[test]
    fn elapsed_is_short() {
        assert_eq!(elapsed(12_345_000_000), "12.3 s");
        assert_eq!(elapsed(245_000_000_000), "4m05s");
        assert_eq!(elapsed(3_720_000_000_000), "1h02m");
    }
}
