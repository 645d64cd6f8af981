//! Overview: what is being captured and how well. Source, kernel, topology (with the NPS mode
//! and the sched-domain rows it implies), recording status, event counts and rates, every drop
//! counter, and each probe's attach mode, with what is degraded and why.
use ratatui::{
    Frame,
    layout::{Constraint, Layout, Rect},
    style::Style,
    text::{Line, Span},
    widgets::Paragraph,
};
use wakeviz_core::{
    event::Kind,
    format::{ProbeMode, ProbeState, ScanSource},
};

use super::{file_name, fmt};
use crate::dashboard::app::{App, SourceKind, View};

pub fn render(f: &mut Frame, area: Rect, app: &App) {
    let h = app.data.header();
    let s = &app.data.snap;
    let mut top = Vec::new();
    let source = match &app.source {
        SourceKind::Live { .. } => "live capture".to_string(),
        SourceKind::Replay { path } => format!("replay of {}", file_name(path)),
    };
    top.push(kv(
        "Source",
        format!(
            "{source} · kernel {} · host {}",
            h.kernel_release, h.hostname
        ),
    ));
    // Before the topology: on a short terminal what is degraded must not be the line cut.
    top.push(kv("Probes", probe_summary(h)));
    top.push(kv("Topology", s.topology.summary.clone()));
    let rows: Vec<&str> = s.topology.domain_rows.iter().map(|r| r.name).collect();
    top.push(kv(
        "Domains",
        format!("{} → rows {}", s.topology.nps_mode, rows.join(", ")),
    ));
    let rec = match &app.source {
        SourceKind::Live { recording: Some(p) } => format!(
            "writing {} ({} events delivered)",
            p.display(),
            fmt::count(s.drops.delivered.max(s.events.total()))
        ),
        SourceKind::Live { recording: None } => {
            "not recording (--record FILE saves a capture)".into()
        }
        SourceKind::Replay { .. } => format!(
            "recorded by wakeviz {}{}",
            h.tool_version,
            if h.comm_redacted {
                ", task names redacted"
            } else {
                ""
            }
        ),
    };
    top.push(kv("Recording", rec));
    top.extend(run_lines(&s.recording));
    for w in &app.warnings {
        top.push(Line::from(Span::styled(
            format!("warning: {w}"),
            fmt::warn(),
        )));
    }
    // The header lines, wrapped here so the rows they take are known; on a short terminal
    // they get at most half the rows, and the cut is marked.
    let wrapped = wrap_lines(top, usize::from(area.width));
    let half = usize::from(area.height / 2).max(3);
    // ↑↓ scroll the header and the columns below it together: every line (the warnings, the
    // drops, the per-ring lines) is reachable on any terminal.
    let off = app.sel[View::Overview.index()];
    let top = fmt::scroll_lines(wrapped, off, half);
    let n = top.len() as u16;
    let [head, cols] =
        Layout::vertical([Constraint::Length(n + 1), Constraint::Min(0)]).areas(area);
    f.render_widget(Paragraph::new(top), head);
    let rows = usize::from(cols.height);
    // The probe table needs ~36 columns beside the 39 of the counts; narrower, the Probes
    // line above says what matters and the table is left out.
    if area.width >= 39 + 36 {
        let [left, right] =
            Layout::horizontal([Constraint::Length(39), Constraint::Min(0)]).areas(cols);
        f.render_widget(
            Paragraph::new(fmt::scroll_lines(events(app), off, rows)),
            left,
        );
        let probes = wrap_lines(probes(app), usize::from(right.width));
        f.render_widget(Paragraph::new(fmt::scroll_lines(probes, off, rows)), right);
    } else {
        f.render_widget(
            Paragraph::new(fmt::scroll_lines(events(app), off, rows)),
            cols,
        );
    }
}

/// Lines wrapped at word boundaries to `width`, so heights are known before layout. A line
/// that starts with a short label span (`Source    `) keeps it and indents the rest under it;
/// the wrapped text takes the style of the line's last span.
fn wrap_lines(lines: Vec<Line<'static>>, width: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for l in lines {
        if l.width() <= width {
            out.push(l);
            continue;
        }
        let style = l.spans.last().map_or_else(Style::default, |s| s.style);
        let label = (l.spans.len() >= 2 && l.spans[0].width() <= 12).then(|| l.spans[0].clone());
        let indent = label.as_ref().map_or(0, Span::width);
        let rest: String = l
            .spans
            .iter()
            .skip(usize::from(label.is_some()))
            .map(|s| s.content.as_ref())
            .collect();
        for (i, row) in fmt::wrap(&rest, width.saturating_sub(indent))
            .into_iter()
            .enumerate()
        {
            let head = match (&label, i) {
                (Some(lb), 0) => lb.clone(),
                _ => Span::raw(" ".repeat(indent)),
            };
            out.push(Line::from(vec![head, Span::styled(row, style)]));
        }
    }
    out
}

/// One line on the probes: all attached, or DEGRADED with what is lost (the same phrases as
/// the header's badge); an inlined `select_idle_cpu` is said as the note it is.
fn probe_summary(h: &wakeviz_core::format::Header) -> String {
    let degraded = super::status::degradations(h);
    let attached = h.probes.iter().filter(|p| p.attached()).count();
    let mut s = if degraded.is_empty() {
        format!("{attached}/{} attached, nothing degraded", h.probes.len())
    } else {
        format!("DEGRADED: {}", degraded.join("; "))
    };
    if h.scan_source == ScanSource::SelectTaskRqFair
        && h.probe("select_idle_cpu").is_some_and(|p| !p.attached())
    {
        s.push_str(" · scan timed on select_task_rq_fair (select_idle_cpu inlined)");
    }
    s
}

/// The conditions of the run and the workload's figures, for telling recordings apart; nothing
/// for recordings made without them (synthetic, older files).
fn run_lines(r: &wakeviz_core::analysis::RecordingSection) -> Vec<Line<'static>> {
    let m = &r.run;
    let mut l = Vec::new();
    if m.start_utc.is_none() && m.label.is_none() && m.command.is_none() {
        return l;
    }
    let features = m
        .sched_features
        .as_ref()
        .map_or_else(|| "unknown".to_string(), |f| format!("{} listed", f.len()));
    let mut run = format!(
        "{} · started {} · features {features}",
        m.label.as_deref().unwrap_or("-"),
        m.start_utc.as_deref().unwrap_or("unknown"),
    );
    let cmd = m.command.as_ref().map(|c| format!("`{}`", c.join(" ")));
    // The command goes with its result once there is one, else with the run.
    if let (Some(c), None) = (&cmd, &r.workload) {
        run.push_str(&format!(" · {c}"));
    }
    l.push(kv("Run", run));
    if let Some(w) = &r.workload {
        let figs: Vec<String> = w
            .metrics
            .iter()
            .map(|x| {
                format!("{} {} {}", x.name, x.value, x.unit)
                    .trim_end()
                    .to_string()
            })
            .collect();
        l.push(kv(
            "Result",
            format!(
                "{}{} after {:.2} s{}{}",
                cmd.map_or_else(String::new, |c| format!("{c} ")),
                w.status_text(),
                w.duration_ns as f64 / 1e9,
                if figs.is_empty() { "" } else { " · " },
                figs.join(" · ")
            ),
        ));
    }
    l
}

fn kv(k: &str, v: String) -> Line<'static> {
    Line::from(vec![
        Span::styled(format!("{k:<10}"), fmt::bold()),
        Span::raw(v),
    ])
}

fn events(app: &App) -> Vec<Line<'static>> {
    let s = &app.data.snap;
    let mut l = vec![Line::from(Span::styled(
        format!("{:<20} {:>8} {:>8}", "events", "total", "/s"),
        fmt::bold(),
    ))];
    for k in Kind::ALL {
        l.push(Line::raw(format!(
            "{:<20} {:>8} {:>8}",
            k.name(),
            fmt::count(s.events.0[k]),
            fmt::rate(app.data.rates[k])
        )));
    }
    let total: f64 = app.data.rates.0.iter().sum();
    l.push(Line::raw(format!(
        "{:<20} {:>8} {:>8}",
        "all",
        fmt::count(s.events.total()),
        fmt::rate(total)
    )));
    // wakeviz's own threads: what leaving them out removed from the figures.
    let own = &s.own_threads;
    if !own.tids.is_empty() {
        let text = if own.left_out {
            format!(
                "{:<20} {:>8} left out",
                "wakeviz's own",
                fmt::count(own.events)
            )
        } else {
            format!("{:<20} {:>8}", "wakeviz's own", "included")
        };
        l.push(Line::from(Span::styled(text, fmt::dim())));
    }
    // The scope: the wakeups of tasks outside it, left out of every figure.
    if s.scope.name != "all" {
        l.push(Line::from(Span::styled(
            format!(
                "{:<20} {:>8} left out",
                format!("outside {}", s.scope.name),
                fmt::count(s.scope.outside_wakeups)
            ),
            fmt::dim(),
        )));
    }
    l.push(Line::raw(""));
    let d = &s.drops;
    l.push(Line::from(Span::styled(
        "drops, where they happen",
        fmt::bold(),
    )));
    let red = |n: u64| if n > 0 { fmt::bad() } else { Style::default() };
    for (what, n) in [
        ("kernel: ring buffer full", d.kernel_drops),
        ("user: consumer behind", d.user_drops),
        ("select exit, no entry", d.select_unpaired),
        ("wakeup, no sched_waking", d.unmatched_wakeups),
        ("probe skipped (BPF nesting)", d.probe_misses),
        ("late: behind merge watermark", d.late_events),
    ] {
        l.push(Line::from(Span::styled(
            format!("{what:<29} {:>8}", fmt::count(n)),
            red(n),
        )));
    }
    if let Some(n) = d.switch_gaps {
        l.push(Line::from(Span::styled(
            format!("{:<29} {:>8}", "switch unseen (chain gap)", fmt::count(n)),
            red(n),
        )));
    }
    // Per ring only when there are several: one ring's figures are the lines above.
    if d.rings.len() > 1 {
        for (i, r) in d.rings.iter().enumerate() {
            let lost = r.kernel_drops + r.user_drops;
            l.push(Line::from(Span::styled(
                format!(
                    "ring {i} (CPUs {}): {} read, {} lost",
                    r.cpus,
                    fmt::count(r.delivered),
                    fmt::count(lost)
                ),
                red(lost),
            )));
        }
    }
    l
}

fn probes(app: &App) -> Vec<Line<'static>> {
    let h = app.data.header();
    let mut l = vec![Line::from(Span::styled(
        format!("{:<19} {:<10} {}", "probe", "mode", "state"),
        fmt::bold(),
    ))];
    for p in &h.probes {
        let mode = p.mode.map_or("-", ProbeMode::name);
        let (state, style) = match &p.state {
            ProbeState::Attached => ("attached", Style::default()),
            ProbeState::Failed(_) => ("FAILED", fmt::bad()),
            ProbeState::Unavailable(_) => ("unavailable", fmt::warn()),
        };
        l.push(Line::from(vec![
            Span::raw(format!("{:<19} {mode:<10} ", p.name)),
            Span::styled(state, style),
        ]));
    }
    l.push(Line::raw(""));
    let degraded = super::status::degradations(h);
    if degraded.is_empty() {
        l.push(Line::raw("nothing degraded"));
    } else {
        l.push(Line::from(Span::styled(
            format!("DEGRADED: {}", degraded.join("; ")),
            fmt::warn().add_modifier(ratatui::style::Modifier::BOLD),
        )));
    }
    if h.scan_source == ScanSource::None {
        l.push(Line::raw("no scan latency; shadow decides at sched_waking"));
    }
    // Every probe not attached, with its whole reason (wrapped, never cut mid-sentence).
    for p in h.probes.iter().filter(|p| !p.attached()) {
        l.push(Line::from(Span::styled(
            format!("{}: {}", p.name, p.state.reason().unwrap_or("?")),
            fmt::dim(),
        )));
    }
    l
}
