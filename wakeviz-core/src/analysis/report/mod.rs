//! `--report text|json`. Both render a [`Snapshot`], so the report, the TUI and the JSON never
//! disagree. The JSON schema is documented in docs/reference/report-json.md and pinned
//! by `tests/analysis_report.rs`.
pub mod shadow;

use std::fmt::Write;

use serde_json::Value;

use super::{
    Snapshot,
    latency::{LatencySummary, render_log2},
    placement::{LevelCounts, PlacementCounts},
    schedstat::SchedstatComparison,
};
use crate::{event::Kind, format::ProbeState, topology::Level};

/// The top-level keys of [`json`], in order: the fields of [`Snapshot`].
pub const JSON_KEYS: [&str; 17] = [
    "schema_version",
    "recording",
    "events",
    "drops",
    "own_threads",
    "scope",
    "probes",
    "topology",
    "placement",
    "scan_latency",
    "wakeup_latency",
    "schedstat",
    "shadow",
    "series",
    "matrix",
    "tasks",
    "figures",
];

/// Width of log2 histogram bars, as bpftrace's.
pub const BAR_WIDTH: usize = 52;

/// `--report json`: the snapshot itself, serialised (`null` for every level-keyed value of a
/// level this topology cannot have: the snapshot's own `Serialize` says so).
pub fn json(s: &Snapshot) -> Value {
    // Every field serialises infallibly (no maps with non-string keys, no failing impls).
    serde_json::to_value(s).unwrap_or(Value::Null)
}

fn pct(n: u64, d: u64) -> String {
    if d == 0 {
        "n/a".into()
    } else {
        format!("{:.1}%", n as f64 * 100.0 / d as f64)
    }
}

/// Nanoseconds with a unit keeping 3 significant digits (`850ns`, `12.3µs`, `1.57ms`,
/// `2.33s`): the text report is read by people; the JSON keeps raw integers.
pub fn human_ns(v: u64) -> String {
    let f = v as f64;
    let three = |x: f64, u: &str| {
        if x < 10.0 {
            format!("{x:.2}{u}")
        } else if x < 100.0 {
            format!("{x:.1}{u}")
        } else {
            format!("{x:.0}{u}")
        }
    };
    match v {
        0..=999 => format!("{v}ns"),
        1_000..=999_999 => three(f / 1e3, "µs"),
        1_000_000..=999_999_999 => three(f / 1e6, "ms"),
        _ => three(f / 1e9, "s"),
    }
}

fn quantile_line(out: &mut String, label: &str, l: &LatencySummary) {
    let q = &l.quantiles;
    if q.is_empty() {
        let _ = writeln!(out, "  {label:<22} n=0         n/a (no samples)");
        return;
    }
    let _ = writeln!(
        out,
        "  {label:<22} n={:<9} p50={:<9} p90={:<9} p99={:<9} p99.9={:<9} max={}",
        q.count,
        human_ns(q.p50),
        human_ns(q.p90),
        human_ns(q.p99),
        human_ns(q.p999),
        human_ns(q.max)
    );
}

fn na_line(out: &mut String, label: &str) {
    let _ = writeln!(out, "  {label:<22} n/a (no such CPU pair on this topology)");
}

fn level_table(out: &mut String, c: &PlacementCounts, t: &super::TopologySection) {
    let _ = writeln!(
        out,
        "  {:<14} {:>12} {:>8} {:>12} {:>8}",
        "level", "vs waker", "", "vs prev", ""
    );
    for l in Level::ALL {
        if !t.level_exists(l) {
            let _ = writeln!(
                out,
                "  {:<14} {:>12} {:>8} {:>12} {:>8}",
                l.name(),
                "n/a",
                "",
                "n/a",
                ""
            );
            continue;
        }
        let _ = writeln!(
            out,
            "  {:<14} {:>12} {:>8} {:>12} {:>8}",
            l.name(),
            c.vs_waker.get(l),
            pct(c.vs_waker.get(l), c.vs_waker.total()),
            c.vs_prev.get(l),
            pct(c.vs_prev.get(l), c.vs_prev.total())
        );
    }
    let _ = writeln!(
        out,
        "  affine {} ({}), migrations off prev {} ({}), unclassified {}",
        c.affine,
        pct(c.affine, c.count),
        c.migrations,
        pct(c.migrations, c.count),
        c.unclassified
    );
    if c.migrations > 0 {
        let _ = writeln!(
            out,
            "  migrations by level: {}",
            levels_inline(&c.migrations_by_level, t)
        );
    }
}

fn levels_inline(c: &LevelCounts, t: &super::TopologySection) -> String {
    Level::ALL
        .iter()
        .filter(|l| **l != Level::SameCpu && t.level_exists(**l))
        .map(|l| format!("{} {}", l.name(), c.get(*l)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn schedstat_text(out: &mut String, c: &SchedstatComparison) {
    let _ = writeln!(
        out,
        "schedstat v{} over {} jiffies: {} row(s) disagree by more than {}%",
        c.version, c.interval_jiffies, c.flagged, c.threshold_pct
    );
    let _ = writeln!(
        out,
        "  {:<22} {:<18} {:>12} {:>12} {:>8}",
        "domain", "counter", "kernel", "wakeviz", "diff"
    );
    for r in &c.rows {
        let levels: Vec<&str> = r.levels.iter().map(|l| l.name()).collect();
        let name = if levels.is_empty() {
            r.domain.clone()
        } else {
            format!("{} ({})", r.domain, levels.join("+"))
        };
        let diff = match (r.comparable, r.diff_pct) {
            (false, _) => "n/a".to_string(),
            (true, Some(p)) => format!("{p:+.1}%"),
            (true, None) => "-".into(),
        };
        let mark = if r.flagged {
            "  <-- disagree"
        } else if r.approximate {
            "  (approx.)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "  {name:<22} {:<18} {:>12} {:>12} {diff:>8}{mark}",
            r.counter, r.kernel, r.wakeviz
        );
    }
    for n in &c.notes {
        let _ = writeln!(out, "  note: {n}");
    }
}

pub fn text(s: &Snapshot) -> String {
    let mut o = String::new();
    let r = &s.recording;
    let _ = writeln!(o, "== recording");
    workload_block(&mut o, r);
    let _ = writeln!(
        o,
        "  kernel {}, host {}, wakeviz {} (format {}, event ABI {}){}",
        r.kernel_release,
        r.hostname,
        r.tool_version,
        r.format_version,
        r.abi_version,
        if r.comm_redacted {
            ", task names redacted"
        } else {
            ""
        }
    );
    run_block(&mut o, r);
    for n in &r.notes {
        let _ = writeln!(o, "  note: {n}");
    }
    let t = &s.topology;
    let _ = writeln!(o, "\n== topology\n{}", t.summary);
    for (i, n) in t.nodes.iter().enumerate() {
        let d: Vec<String> = t
            .distances
            .get(i)
            .map(|r| r.iter().map(u32::to_string).collect())
            .unwrap_or_default();
        let _ = writeln!(
            o,
            "  node{:<3} cpus {:<24} distances {}",
            n.id,
            n.cpus.to_list(),
            d.join(" ")
        );
    }
    if !t.memory_only_nodes.is_empty() {
        let _ = writeln!(o, "  memory-only nodes: {:?}", t.memory_only_nodes);
    }
    if !t.offline.is_empty() {
        let _ = writeln!(o, "  offline CPUs: {}", t.offline);
    }

    let _ = writeln!(o, "\n== events");
    for k in Kind::ALL {
        let _ = writeln!(o, "  {:<22} {:>12}", k.name(), s.events.0[k]);
    }
    let _ = writeln!(o, "  {:<22} {:>12}", "total", s.events.total());
    let d = &s.drops;
    if d.offered.total() == 0 && d.total == 0 {
        let _ = writeln!(o, "  drops: no capture counters in this stream");
    } else {
        let _ = writeln!(
            o,
            "  drops: kernel {}, userspace {} ({} of {} offered)",
            d.kernel_drops,
            d.user_drops,
            pct(d.total, d.offered.total()),
            d.offered.total(),
        );
    }
    let _ = writeln!(o, "  wakeups without sched_waking: {}", d.unmatched_wakeups);
    if let Some(n) = d.switch_gaps {
        let _ = writeln!(o, "  switch chain gaps (switches no probe saw): {n}");
    }
    own_threads_line(&mut o, &s.own_threads);
    let _ = writeln!(o, "  {}", scope_text(&s.scope));
    let _ = writeln!(
        o,
        "  probe runs skipped by the kernel (BPF programs do not nest): {}",
        d.probe_misses
    );
    if !d.rings.is_empty() || d.late_events > 0 || d.batches.is_some() {
        let n = d.rings.len().max(1);
        let _ = writeln!(
            o,
            "  late events (behind the merge of {n} ring{}): {}; events reached the analyses at most {:.0} ms after their probe ({:.0} ms for those from before the first hand-over)",
            if n == 1 { "" } else { "s" },
            d.late_events,
            d.max_hold_ns as f64 / 1e6,
            d.startup_hold_ns as f64 / 1e6
        );
    }
    for (i, r) in d.rings.iter().enumerate() {
        let _ = writeln!(
            o,
            "  ring {i:<3} cpus {:<16} delivered {:>12}  drops: kernel {}, userspace {}",
            r.cpus, r.delivered, r.kernel_drops, r.user_drops
        );
    }
    if let Some(b) = &d.batches {
        let _ = writeln!(o, "  {}", b.summary());
    }
    let _ = writeln!(o, "\n== probes");
    for p in &s.probes {
        let mode = p
            .mode
            .map_or_else(|| "-".to_string(), |m| m.name().to_string());
        let state = match &p.state {
            ProbeState::Attached => "attached".to_string(),
            ProbeState::Failed(r) => format!("failed: {r}"),
            ProbeState::Unavailable(r) => format!("unavailable: {r}"),
        };
        let _ = writeln!(o, "  {:<24} {:<10} {state}", p.name, mode);
    }

    let p = &s.placement;
    let _ = writeln!(
        o,
        "\n== placement: {} wakeups, scope {}, filter {}",
        p.wakeups.count,
        s.scope.name,
        p.filter.as_deref().unwrap_or("none")
    );
    coverage_block(&mut o, &p.coverage);
    level_table(&mut o, &p.wakeups, t);
    let _ = writeln!(o, "  affine = {}", p.affine_definition);
    let _ = writeln!(o, "\n  wakeup info (as the schedstat comparisons on LKML):");
    let _ = writeln!(
        o,
        "  {:<52}: {:>12}",
        "Wakeups on the waker cpu",
        p.wakeups.vs_waker.get(Level::SameCpu)
    );
    for r in &p.domain_table {
        let _ = writeln!(
            o,
            "  {:<52}: {:>12}",
            format!("Wakeups on same         {} cpus", r.name),
            r.wakeups
        );
    }
    for r in &p.domain_table {
        let v = if r.affine_observable {
            r.affine.to_string()
        } else {
            "n/a".into()
        };
        let _ = writeln!(
            o,
            "  {:<52}: {:>12}",
            format!("Affine wakeups on same  {} cpus", r.name),
            v
        );
    }
    if p.domain_table.iter().any(|r| !r.affine_observable) {
        let _ = writeln!(
            o,
            "  (n/a: an affine pick inside one LLC is not observable from the outcome)"
        );
    }
    let _ = writeln!(
        o,
        "\n  new tasks (fork placement, sched_wakeup_new): {}",
        p.new_tasks.count
    );
    if p.new_tasks.count > 0 {
        level_table(&mut o, &p.new_tasks, t);
    }
    let _ = writeln!(o, "\n  per waker node:");
    for g in &p.per_node {
        let _ = writeln!(
            o,
            "    node{:<3} {:>10} wakeups  vs waker: {}",
            g.id,
            g.counts.count,
            levels_short(&g.counts.vs_waker, t)
        );
    }
    let _ = writeln!(o, "  per chosen LLC:");
    for (i, g) in p.per_llc.iter().enumerate() {
        let _ = writeln!(
            o,
            "    llc{:<4} {:<22} {:>10} wakeups, {:>8} affine, {:>8} migrated",
            i, g.cpus, g.counts.count, g.counts.affine, g.counts.migrations
        );
    }
    for (name, w) in [("1s", &p.windows.w1s), ("10s", &p.windows.w10s)] {
        let _ = writeln!(
            o,
            "  last {name:<3} (stream time {:.3}..{:.3} s): {} wakeups, vs waker: {}",
            w.from_ns as f64 / 1e9,
            w.to_ns as f64 / 1e9,
            w.placement.count,
            levels_short(&w.placement.vs_waker, t)
        );
    }

    let sc = &s.scan_latency;
    let _ = writeln!(o, "\n== scan latency: {}", sc.source);
    match sc.status {
        Some(why) => {
            let _ = writeln!(o, "  {why}");
        }
        None => latency_block(&mut o, &sc.overall, "@nsecs"),
    }
    if sc.available {
        for (i, l) in sc.per_llc.iter().enumerate() {
            if l.latency.quantiles.count > 0 {
                quantile_line(&mut o, &format!("llc{i} {}", l.cpus), &l.latency);
            }
        }
        quantile_line(&mut o, "last 1s", &sc.windows.w1s);
        quantile_line(&mut o, "last 10s", &sc.windows.w10s);
        if let Some(m) = &sc.measured {
            measured_scan(&mut o, s, m);
        }
    }

    let wl = &s.wakeup_latency;
    let _ = writeln!(o, "\n== wakeup-to-run latency, by level of {}", wl.relation);
    latency_block(&mut o, &wl.overall, "@usecs");
    for (l, q) in &wl.by_level.0 {
        if t.level_exists(*l) || !q.quantiles.is_empty() {
            quantile_line(&mut o, l.name(), q);
        } else {
            na_line(&mut o, l.name());
        }
    }
    quantile_line(&mut o, "new tasks", &wl.new_task);
    quantile_line(&mut o, "last 1s", &wl.windows.w1s);
    quantile_line(&mut o, "last 10s", &wl.windows.w10s);

    let _ = writeln!(o, "\n== schedstat");
    match &s.schedstat {
        Some(c) => schedstat_text(&mut o, c),
        None => {
            let _ = writeln!(
                o,
                "  not compared (needs two /proc/schedstat samples in the stream: a live run or a recording of format 3 or later, on a kernel with CONFIG_SCHEDSTATS, without --no-schedstat)"
            );
        }
    }
    if let Some(e) = &s.schedstat_error {
        let _ = writeln!(o, "  latest sample not compared: {e}");
    }
    let _ = writeln!(o, "\n== shadow policies");
    match &s.shadow {
        Some(x) => {
            if let Some(sc) = &p.coverage.shadow {
                let _ = writeln!(
                    o,
                    "Covers the placed subset: {} of {} placed wakeups ({}); the placement section counts all {}.",
                    sc.compared,
                    p.coverage.placed,
                    pct(sc.compared, p.coverage.placed),
                    p.coverage.placed
                );
            }
            o.push_str(&shadow::text_on(x, &|l| s.topology.level_exists(l)));
        }
        None => {
            let _ = writeln!(o, "  not evaluated");
        }
    }
    let _ = writeln!(
        o,
        "\n== figures (the names `wakeviz diff`, --fail-if and /metrics use; `wakeviz figures` explains each)"
    );
    o.push_str(&crate::figures::text_block(&s.figures.0));
    o
}

/// How many wakeups the level table classifies and why the others are not: the same counts the
/// Placement view and the JSON's `placement.coverage` show.
fn coverage_block(o: &mut String, c: &super::placement::Coverage) {
    let _ = writeln!(
        o,
        "  classified {} of {} wakeups ({}); not classified: {} no sched_waking, {} self-wakeups, {} CPU outside the topology",
        c.classified,
        c.wakeups,
        pct(c.classified, c.wakeups),
        c.no_sched_waking,
        c.self_wakeups,
        c.unclassified
    );
    if let Some(sc) = &c.shadow {
        let reasons: Vec<String> = sc
            .reasons()
            .iter()
            .map(|(why, n)| format!("{n} {why}"))
            .collect();
        let _ = writeln!(
            o,
            "  shadow policies compared on {} of the {} placed ({}); left out: {}",
            sc.compared,
            c.placed,
            pct(sc.compared, c.placed),
            reasons.join(", ")
        );
    }
}

/// What leaving wakeviz's own threads out removed (the Overview's line too).
pub fn own_threads_text(t: &super::OwnThreads) -> String {
    match (t.left_out, t.tids.is_empty()) {
        (_, true) => {
            "wakeviz's own threads: not recorded (older recording or no live capture)".into()
        }
        (false, false) => format!(
            "wakeviz's own threads ({} tids): included (--include-self)",
            t.tids.len()
        ),
        (true, false) => format!(
            "wakeviz's own threads ({} tids) left out: {} events, {} wakeups (--include-self keeps them)",
            t.tids.len(),
            t.events,
            t.wakeups
        ),
    }
}

/// Which tasks the figures are about, and what that left out (the Overview's line too).
pub fn scope_text(s: &super::ScopeSection) -> String {
    if s.name == "all" {
        return "scope all: every wakeup (--scope narrows it)".into();
    }
    format!(
        "scope {}: {}; {} wakeups outside it left out (--scope all keeps them)",
        s.name, s.rule, s.outside_wakeups
    )
}

fn own_threads_line(o: &mut String, t: &super::OwnThreads) {
    let _ = writeln!(o, "  {}", own_threads_text(t));
}

/// The workload's own result first (the figure a comparison starts from, as in the seeds).
fn workload_block(o: &mut String, r: &super::RecordingSection) {
    let Some(w) = &r.workload else { return };
    let cmd = r
        .run
        .command
        .as_ref()
        .map_or_else(String::new, |c| c.join(" "));
    let _ = writeln!(
        o,
        "  workload `{cmd}`: {}, {:.3} s",
        w.status_text(),
        w.duration_ns as f64 / 1e9
    );
    for m in &w.metrics {
        let _ = writeln!(
            o,
            "    {:<32} {:>14} {:<10} ({} is better)",
            m.name,
            format!("{}", m.value),
            m.unit,
            if m.higher_is_better {
                "higher"
            } else {
                "lower"
            }
        );
    }
    if w.metrics.is_empty() {
        let _ = writeln!(
            o,
            "    no figures recognised in its output (--metric NAME=REGEX adds your own)"
        );
    }
}

/// The conditions of the run, for comparing it with another; only what the header knows
/// (recordings made before this metadata existed print nothing here).
fn run_block(o: &mut String, r: &super::RecordingSection) {
    let m = &r.run;
    let known = m.label.is_some()
        || m.start_utc.is_some()
        || m.kernel_cmdline.is_some()
        || m.cpu_model.is_some()
        || m.command.is_some();
    if !known {
        return;
    }
    let dur = r
        .capture_duration_ns
        .map_or_else(String::new, |d| format!(", {:.3} s", d as f64 / 1e9));
    let _ = writeln!(
        o,
        "  label {}, started {}{dur}",
        m.label.as_deref().unwrap_or("-"),
        m.start_utc.as_deref().unwrap_or("unknown")
    );
    if let Some(c) = &m.command {
        let _ = writeln!(o, "  command {}", c.join(" "));
    }
    let _ = writeln!(o, "  cpu {}", m.cpu_model.as_deref().unwrap_or("unknown"));
    let _ = writeln!(
        o,
        "  cmdline {}",
        m.kernel_cmdline.as_deref().unwrap_or("unknown")
    );
    let _ = writeln!(
        o,
        "  sched features {}",
        m.sched_features
            .as_ref()
            .map_or_else(|| "unknown".to_string(), |f| f.join(" "))
    );
    if !m.sched_feature_overrides.is_empty() {
        let _ = writeln!(
            o,
            "  sched features set for the run {}",
            m.sched_feature_overrides.join(" ")
        );
    }
    if m.sysctls.is_empty() {
        let _ = writeln!(o, "  sysctls kernel.sched_*: none read");
    } else {
        let kv: Vec<String> = m.sysctls.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(o, "  sysctls {}", kv.join(" "));
    }
}

fn levels_short(c: &LevelCounts, t: &super::TopologySection) -> String {
    let total = c.total();
    Level::ALL
        .iter()
        .map(|l| {
            if t.level_exists(*l) {
                format!("{} {}", l.name(), pct(c.get(*l), total))
            } else {
                format!("{} n/a", l.name())
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn latency_block(o: &mut String, l: &LatencySummary, unit_label: &str) {
    quantile_line(o, "overall", l);
    if !l.log2.is_empty() {
        let _ = writeln!(o, "  {unit_label}:");
        for line in render_log2(&l.log2, BAR_WIDTH).lines() {
            let _ = writeln!(o, "  {line}");
        }
    }
}

/// The scan as the debug-info probes counted it: how often a placement scanned and how far
/// (the registered figures' values, and the distribution beside them).
fn measured_scan(o: &mut String, s: &Snapshot, m: &super::MeasuredScan) {
    let v = |name: &str| {
        s.figures
            .get(name)
            .map_or_else(|| "n/a".to_string(), crate::figures::Figure::value_text)
    };
    let _ = writeln!(
        o,
        "  measured (debug-info probes): {} placements watched, {} scanned, idle tests per scan {}, idle-core search {}, SMT siblings first {}",
        v("scan.measured.calls"),
        v("scan.measured.scans.share"),
        v("scan.measured.cpus_per_scan"),
        v("scan.measured.core.share"),
        v("scan.measured.smt.share"),
    );
    let buckets: Vec<String> = m
        .by_cpus_tested
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(i, n)| format!("{i}:{n}"))
        .collect();
    if !buckets.is_empty() {
        let _ = writeln!(o, "  scans by idle tests made: {}", buckets.join(" "));
    }
}
