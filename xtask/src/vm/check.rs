//! Host-side checks of what a guest sent back: probe modes, event counts against the kernel's
//! own tracing, placement levels of the pinned pairs, and the SIS_UTIL fidelity figure.
use std::{
    collections::BTreeMap,
    fs,
    io::{BufRead, BufReader},
    path::Path,
    process::{Command, Stdio},
};

use anyhow::{Context, Result, bail};
use serde_json::Value;
use wakeviz_core::topology::{Level, Topology};

use super::topo::Pair;

pub const KINDS: [&str; 5] = [
    "sched_waking",
    "sched_wakeup",
    "sched_wakeup_new",
    "sched_switch",
    "sched_migrate_task",
];

/// Workload events are those of tasks whose comm starts with this.
pub const PREFIX: &str = "wvz-";

/// What one check found: lines for the summary, and failures (empty when it passed).
#[derive(Default)]
pub struct Findings {
    pub lines: Vec<String>,
    pub failures: Vec<String>,
}

impl Findings {
    pub fn fail(&mut self, msg: impl Into<String>) {
        let m = msg.into();
        self.lines.push(format!("FAIL: {m}"));
        self.failures.push(m);
    }
    pub fn line(&mut self, msg: impl Into<String>) {
        self.lines.push(msg.into());
    }
}

/// (kind, comm) -> count.
pub type Counts = BTreeMap<(String, String), u64>;

/// `tracefs_counts.txt`: "kind comm count" lines written by the guest's awk.
pub fn tracefs_counts(path: &Path) -> Result<Counts> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut c = Counts::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if let [kind, comm, n] = f[..] {
            let n: u64 = n
                .parse()
                .with_context(|| format!("{}: bad line {line:?}", path.display()))?;
            *c.entry((kind.to_owned(), comm.to_owned())).or_default() += n;
        }
    }
    Ok(c)
}

/// `tracefs_stats.txt`: "cpuN overrun commit_overrun dropped" per CPU; all must be 0.
pub fn tracefs_losses(path: &Path) -> Result<Vec<String>> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut bad = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 4 || f[1..].iter().any(|v| *v != "0") {
            bad.push(format!(
                "{line} (cpu overrun commit-overrun dropped: must be 0; raise WVZ_BUF_KB)"
            ));
        }
    }
    if text.lines().next().is_none() {
        bad.push("no per-CPU stats".into());
    }
    Ok(bad)
}

/// Aggregates over wakeviz's `--dump jsonl` of one recording.
#[derive(Default)]
pub struct Dump {
    pub events: u64,
    pub counts: Counts,
    /// select_task_rq_fair (fentry/fexit) events of any task.
    pub selects: u64,
    /// comm -> woken pid -> level of (waker CPU, target CPU) from sched_waking -> count.
    pub placement: BTreeMap<String, BTreeMap<u64, BTreeMap<Option<Level>, u64>>>,
}

fn s(v: &Value, k: &str) -> String {
    v.get(k).and_then(Value::as_str).unwrap_or("").to_owned()
}

fn u(v: &Value, k: &str) -> Option<u64> {
    v.get(k).and_then(Value::as_u64)
}

/// Runs `wakeviz --replay FILE --dump jsonl` and folds its output.
pub fn dump(wakeviz: &Path, wvz: &Path, topo: &Topology) -> Result<Dump> {
    let mut child = Command::new(wakeviz)
        .arg("--replay")
        .arg(wvz)
        .args(["--dump", "jsonl"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("running {} --replay --dump jsonl", wakeviz.display()))?;
    let stdout = child.stdout.take().context("no stdout from wakeviz")?;
    let mut d = Dump::default();
    for (i, line) in BufReader::new(stdout).lines().enumerate() {
        let line = line.context("reading wakeviz --dump output")?;
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(&line)
            .with_context(|| format!("--dump jsonl line {}: not JSON: {line:.200}", i + 1))?;
        d.events += 1;
        let kind = s(&v, "kind");
        if kind == "select_task_rq_fair" {
            d.selects += 1;
            continue;
        }
        let comm = if kind == "sched_switch" {
            let p = s(&v, "prev_comm");
            if p.starts_with(PREFIX) {
                p
            } else {
                s(&v, "next_comm")
            }
        } else {
            s(&v, "comm")
        };
        if !comm.starts_with(PREFIX) {
            continue;
        }
        if kind == "sched_waking"
            && let (Some(cpu), Some(target), Some(pid)) =
                (u(&v, "cpu"), u(&v, "target_cpu"), u(&v, "pid"))
        {
            let level = topo.level(cpu as u32, target as u32);
            *d.placement
                .entry(comm.clone())
                .or_default()
                .entry(pid)
                .or_default()
                .entry(level)
                .or_default() += 1;
        }
        *d.counts.entry((kind, comm)).or_default() += 1;
    }
    let out = child.wait_with_output().context("waiting for wakeviz")?;
    if !out.status.success() {
        bail!(
            "wakeviz --replay {} --dump jsonl failed ({}): {}",
            wvz.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(d)
}

fn total(c: &Counts, kind: &str) -> u64 {
    c.iter()
        .filter(|((k, comm), _)| k == kind && comm.starts_with(PREFIX))
        .map(|(_, n)| n)
        .sum()
}

/// wakeviz's counts against tracefs's, per event kind: equal within 0.5%.
pub fn compare_counts(f: &mut Findings, wakeviz: &Counts, truth: &Counts) {
    f.line(format!(
        "  {:<20} {:>9} {:>9} {:>8}",
        "event (comm wvz-*)", "wakeviz", "tracefs", "diff"
    ));
    for kind in KINDS {
        let (w, t) = (total(wakeviz, kind), total(truth, kind));
        let diff = w.abs_diff(t);
        let pct = if t == 0 {
            if w == 0 { 0.0 } else { 100.0 }
        } else {
            diff as f64 * 100.0 / t as f64
        };
        let ok = diff * 1000 <= t * 5;
        f.line(format!(
            "  {kind:<20} {w:>9} {t:>9} {pct:>7.2}%{}",
            if ok { "" } else { "  <- over 0.5%" }
        ));
        if !ok {
            f.failures
                .push(format!("{kind}: wakeviz {w} vs tracefs {t} ({pct:.2}% apart)"));
        }
    }
    for kind in ["sched_waking", "sched_wakeup", "sched_switch"] {
        if total(truth, kind) == 0 {
            f.fail(format!(
                "tracefs saw no {kind} of the workloads: the workloads did not run in the window"
            ));
        }
    }
}

/// Each pinned pair's wakeups must all land at the pair's level. Wakees woken fewer than
/// `min_wakes` times (the workload's main thread, woken by thread exits) are not ping-pong
/// threads and are listed apart.
pub fn placement(f: &mut Findings, d: &Dump, pairs: &[Pair], iterations: u32) {
    let min_wakes = (iterations / 10).max(5) as u64;
    for p in pairs {
        let Some(by_pid) = d.placement.get(p.comm) else {
            f.fail(format!(
                "{}: no sched_waking of the pair in the recording",
                p.comm
            ));
            continue;
        };
        let (mut hit, mut miss, mut other) = (0u64, BTreeMap::<String, u64>::new(), 0u64);
        let mut threads = 0;
        for levels in by_pid.values() {
            let n: u64 = levels.values().sum();
            if n < min_wakes {
                other += n;
                continue;
            }
            threads += 1;
            for (l, c) in levels {
                if *l == Some(p.level) {
                    hit += c;
                } else {
                    *miss
                        .entry(l.map_or("unknown-cpu", Level::name).to_owned())
                        .or_default() += c;
                }
            }
        }
        let missed: u64 = miss.values().sum();
        let line = format!(
            "  {:<9} cpus {:>2} -> {:<2} {:<13} {hit}/{} wakeups of {threads} ping-pong threads{}",
            p.comm,
            p.waker,
            p.wakee,
            p.level.name(),
            hit + missed,
            if other > 0 {
                format!(" (+{other} thread start/exit wakeups not counted)")
            } else {
                String::new()
            }
        );
        if missed > 0 || threads < 2 || hit < u64::from(iterations) {
            f.fail(format!(
                "{line}: expected all at {} and >= {iterations}; elsewhere: {miss:?}",
                p.level.name()
            ));
        } else {
            f.line(line);
        }
    }
}

/// The probe table from the guest's `--report json`.
pub fn probes(f: &mut Findings, report: &Value) {
    let Some(list) = report.get("probes").and_then(Value::as_array) else {
        f.fail("report.json has no `probes` list");
        return;
    };
    let attached = |p: &Value| s(p, "state").eq_ignore_ascii_case("attached");
    for p in list {
        let reason = s(p, "reason");
        f.line(format!(
            "  {:<28} {:<16} {:<12}{}",
            s(p, "name"),
            s(p, "mode"),
            s(p, "state"),
            if reason.is_empty() {
                String::new()
            } else {
                format!(" ({reason})")
            }
        ));
    }
    let srtf: Vec<&Value> = list
        .iter()
        .filter(|p| s(p, "name").contains("select_task_rq_fair"))
        .collect();
    if !srtf
        .iter()
        .any(|p| s(p, "mode").starts_with("fentry") && attached(p))
    {
        f.fail("select_task_rq_fair is not attached in fentry mode");
    }
    for p in &srtf {
        if s(p, "mode").contains("fexit") && !attached(p) {
            f.fail("select_task_rq_fair fexit is not attached");
        }
    }
    match list
        .iter()
        .find(|p| s(p, "name").contains("select_idle_cpu"))
    {
        None => f.fail("no select_idle_cpu entry in the probe table"),
        Some(p) => {
            let text = p.to_string().to_lowercase();
            if attached(p) {
                f.fail(
                    "select_idle_cpu reported attached, but it is inlined in Debian's 6.12 kernel",
                );
            } else if !(text.contains("inline") || text.contains("unavailable")) {
                f.fail(format!(
                    "select_idle_cpu not reported as inlined/unavailable: {p}"
                ));
            }
            if !text.contains("select_task_rq_fair") {
                f.fail(format!(
                    "select_idle_cpu's entry does not name the select_task_rq_fair fallback \
                     for scan latency: {p}"
                ));
            }
        }
    }
}

/// `wakeviz --replay FILE --report json`.
pub fn replay_report(wakeviz: &Path, wvz: &Path) -> Result<Value> {
    let o = Command::new(wakeviz)
        .arg("--replay")
        .arg(wvz)
        .args(["--report", "json"])
        .output()
        .with_context(|| format!("running {} --replay --report json", wakeviz.display()))?;
    if !o.status.success() {
        bail!(
            "wakeviz --replay {} --report json failed ({}): {}",
            wvz.display(),
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
    serde_json::from_slice(&o.stdout).context("wakeviz --report json printed no valid JSON")
}

/// SIS_UTIL's fidelity from `shadow.fidelity`: a number, or an object/list keyed by policy.
pub fn sis_util_fidelity(report: &Value) -> String {
    let Some(fid) = report.get("shadow").and_then(|s| s.get("fidelity")) else {
        return "n/a (no shadow.fidelity in the report)".into();
    };
    let is_sis = |k: &str| {
        let k = k.to_ascii_lowercase().replace(['-', ' '], "_");
        k.contains("sis_util")
    };
    let fmt = |v: &Value| match v {
        Value::Number(n) => n.to_string(),
        Value::Null => "n/a".into(),
        other => other.to_string(),
    };
    match fid {
        Value::Null => "n/a (shadow.fidelity is null)".into(),
        Value::Number(_) => fmt(fid),
        Value::Object(m) => m
            .iter()
            .find(|(k, _)| is_sis(k))
            .map(|(_, v)| fmt(v))
            .unwrap_or_else(|| format!("n/a (no SIS_UTIL key in {fid})")),
        Value::Array(a) => a
            .iter()
            .find(|e| {
                e.as_object()
                    .is_some_and(|o| o.values().any(|v| v.as_str().is_some_and(is_sis)))
            })
            .map(|e| {
                let o = e.as_object();
                o.and_then(|o| {
                    ["fidelity", "value", "agreement"]
                        .iter()
                        .find_map(|k| o.get(*k))
                })
                .map_or_else(|| e.to_string(), fmt)
            })
            .unwrap_or_else(|| format!("n/a (no SIS_UTIL entry in {fid})")),
        other => other.to_string(),
    }
}
