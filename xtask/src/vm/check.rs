//! Host-side checks of what a guest sent back: probe modes, event counts against the kernel's
//! own tracing, placement levels of the pinned pairs, and the SIS_UTIL fidelity figure.
use std::{
    collections::{BTreeMap, HashMap},
    fs,
    io::{BufRead, BufReader},
    path::Path,
    process::{Command, Stdio},
};

use anyhow::{Context, Result, bail};
use serde_json::Value;
use wakeviz_core::topology::{Level, Topology};

use super::{
    topo::Pair,
    tp_gap::{self, Fid},
};

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
    /// The tracepoint-only pairs, judged over every guest (`super::tp_gap`).
    pub tp_pairs: Vec<tp_gap::Pair>,
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

/// One scheduler event from either source, reduced to what the checks use.
#[derive(Debug, Default, Clone)]
pub struct Ev {
    pub kind: String,
    /// CPU the event was recorded on (for sched_waking: the waker's CPU).
    pub cpu: u32,
    /// The woken / migrated task (0 for sched_switch).
    pub pid: u32,
    pub comm: String,
    pub target_cpu: Option<u32>,
    /// The task running when the event fired (the waker, for wake events).
    pub waker_pid: Option<u32>,
    /// A process: in the kernel's trace, that of the running task (`waker_pid`, from
    /// `record-tgid`); in wakeviz's dump, that of `pid`.
    pub tgid: Option<u32>,
    pub prev_pid: u32,
    pub prev_comm: String,
    pub next_pid: u32,
    pub next_comm: String,
    /// Stamp in seconds: the trace clock's in the kernel's trace, `ts_ns` in the dump.
    pub ts_s: f64,
}

impl Ev {
    /// The (pid, name) pairs the event states: its task's, and a switch's outgoing and
    /// incoming ones (an empty name where the kind has none).
    fn named(&self) -> [(u32, &str); 3] {
        [
            (self.pid, &self.comm),
            (self.prev_pid, &self.prev_comm),
            (self.next_pid, &self.next_comm),
        ]
    }
}

/// All events of one source.
#[derive(Default)]
pub struct Stream {
    pub events: Vec<Ev>,
    /// Events of other kinds (select_task_rq_fair ...) by kind.
    pub other: BTreeMap<String, u64>,
    /// tracefs only: the scan kprobe events by (role, the running task's pid): `scan_entry`,
    /// `idle_test`, `idle_core`, each a hit while a workload task was the waker.
    pub scan_hits: BTreeMap<(String, u32), u64>,
}

/// comm -> ((waker CPU, wakee's CPU) -> count of the pair's own wakeups, wakeups of it by
/// other tasks). CPUs, not levels: a wakeup off the pair's two pinned CPUs happened before a
/// thread had pinned itself, which the check can then tell from a misplaced one.
pub type Placement = BTreeMap<String, (BTreeMap<(u32, Option<u32>), u64>, u64)>;

impl Stream {
    /// pid -> the last name seen for it. wakeviz's task table keeps each pid's latest name, so
    /// both sources attribute an event to its task's final name: a workload process forked by
    /// the guest's shell (comm "sh" until exec) counts as the workload on both sides.
    pub fn final_names(&self) -> HashMap<u32, String> {
        let mut names = HashMap::new();
        for e in &self.events {
            if e.kind == "sched_switch" {
                names.insert(e.prev_pid, e.prev_comm.clone());
                names.insert(e.next_pid, e.next_comm.clone());
            } else {
                names.insert(e.pid, e.comm.clone());
            }
        }
        names
    }

    /// The workload task an event counts under: sched_switch under the outgoing task when that
    /// is a workload's, else under the incoming one; any other kind under its task. `None` when
    /// neither is a workload's.
    fn counted<'a>(e: &Ev, names: &'a HashMap<u32, String>) -> Option<(u32, &'a str)> {
        let name = |pid: u32| names.get(&pid).map_or("", String::as_str);
        let pid = if e.kind == "sched_switch" {
            if name(e.prev_pid).starts_with(PREFIX) {
                e.prev_pid
            } else {
                e.next_pid
            }
        } else {
            e.pid
        };
        Some((pid, name(pid))).filter(|(_, n)| n.starts_with(PREFIX))
    }

    /// (kind, final comm) -> count over workload tasks (see [`Stream::counted`]).
    pub fn counts(&self) -> Counts {
        let names = self.final_names();
        let mut c = Counts::new();
        for e in &self.events {
            if let Some((_, comm)) = Self::counted(e, &names) {
                *c.entry((e.kind.clone(), comm.to_owned())).or_default() += 1;
            }
        }
        c
    }

    /// (kind, pid) -> (count, first and last stamp) over workload tasks.
    fn per_pid(&self) -> BTreeMap<(String, u32), (u64, f64, f64)> {
        let names = self.final_names();
        let mut c = BTreeMap::new();
        for e in &self.events {
            if let Some((pid, _)) = Self::counted(e, &names) {
                let v = c
                    .entry((e.kind.clone(), pid))
                    .or_insert((0, e.ts_s, e.ts_s));
                v.0 += 1;
                v.2 = e.ts_s;
            }
        }
        c
    }

    /// Every name this source gave `pid`, in order of first sight.
    fn names_of(&self, pid: u32) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for e in &self.events {
            for (p, n) in e.named() {
                if p == pid && !n.is_empty() && !out.contains(&n) {
                    out.push(n);
                }
            }
        }
        out
    }

    /// Per comm, counts of (waker CPU, wakee CPU) over the sched_waking events whose waker and
    /// wakee are both tasks of that comm (a pinned pair's own wakeups; a thread that pins itself
    /// is woken by migration/N, which is not the pair's doing), and how many wakings of the
    /// comm were not the pair's own. Counts, not levels: the check compares both sources CPU
    /// pair by CPU pair, and tells wakeups before pinning from misplaced ones.
    pub fn placement(&self) -> Placement {
        let names = self.final_names();
        let name = |pid: u32| names.get(&pid).map_or("", String::as_str);
        let mut p = Placement::new();
        for e in self.events.iter().filter(|e| e.kind == "sched_waking") {
            let comm = name(e.pid);
            if !comm.starts_with(PREFIX) {
                continue;
            }
            let entry = p.entry(comm.to_owned()).or_default();
            if e.waker_pid.is_none_or(|w| name(w) != comm) {
                entry.1 += 1;
                continue;
            }
            *entry.0.entry((e.cpu, e.target_cpu)).or_default() += 1;
        }
        p
    }
}

/// The guest's filtered `trace` file (the ground truth).
pub fn tracefs_stream(path: &Path) -> Result<Stream> {
    let text = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let text = String::from_utf8_lossy(&text);
    let mut st = Stream::default();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if let Some((role, pid)) = scan_hit(line) {
            *st.scan_hits.entry((role.to_owned(), pid)).or_default() += 1;
            continue;
        }
        let e = parse_trace_line(line)
            .with_context(|| format!("{}:{}: cannot parse {line:?}", path.display(), i + 1))?;
        if KINDS.contains(&e.kind.as_str()) {
            st.events.push(e);
        } else {
            *st.other.entry(e.kind).or_default() += 1;
        }
    }
    Ok(st)
}

/// The role and the running task's pid of a scan kprobe event's line
/// (`  wvz-x-243  (  241) [001] d..3.  11.3: idle_test_2: (select_task_rq_fair+0x683/...)`).
fn scan_hit(line: &str) -> Option<(&'static str, u32)> {
    let role = ["scan_entry", "idle_test", "idle_core"]
        .into_iter()
        .find(|r| line.contains(&format!(": {r}_")) && line.contains(": ("))?;
    let task = line.split_whitespace().next()?;
    let pid = task.rsplit_once('-')?.1.parse().ok()?;
    Some((role, pid))
}

impl Stream {
    /// Pids the trace names other than a workload's at some point (forked by the shell as
    /// `sh`, then exec'd): around the exec, which name a hit belongs to is a matter of
    /// nanoseconds, so the scan check leaves them out on both sides.
    pub fn renamed(&self) -> std::collections::HashSet<u32> {
        let mut out = std::collections::HashSet::new();
        for e in &self.events {
            for (pid, comm) in e.named() {
                if pid != 0 && !comm.is_empty() && !comm.starts_with(PREFIX) {
                    out.insert(pid);
                }
            }
        }
        out
    }
}

/// `   task-123   [004] d..2.  31.5: sched_waking: comm=x pid=124 prio=120 target_cpu=005`
fn parse_trace_line(line: &str) -> Option<Ev> {
    // The CPU field "[NNN]" ends the task column (whose comm may hold spaces or '-').
    let mut cpu_field = None;
    for (i, b) in line.bytes().enumerate() {
        if b == b'[' {
            let close = line[i..].find(']')? + i;
            if close > i + 1 && line[i + 1..close].bytes().all(|c| c.is_ascii_digit()) {
                cpu_field = Some((i, close));
                break;
            }
        }
    }
    let (open, close) = cpu_field?;
    let mut task = line[..open].trim();
    // With `record-tgid` the task column ends with its process: `task-123 (  120)`, or
    // `(-------)` where the kernel has no tgid saved for it.
    let mut tgid = None;
    if task.ends_with(')')
        && let Some(o) = task.rfind('(')
    {
        tgid = task[o + 1..task.len() - 1].trim().parse().ok();
        task = task[..o].trim_end();
    }
    let waker_pid = task.rsplit_once('-').and_then(|(_, p)| p.parse().ok());
    let cpu: u32 = line[open + 1..close].parse().ok()?;
    let rest = &line[close + 1..];
    let at = rest.find(": sched_")?;
    let (kind, fields) = rest[at + 2..].split_once(':')?;
    let ts_s = rest[..at]
        .split_whitespace()
        .last()
        .and_then(|t| t.parse().ok())
        .unwrap_or(f64::NAN);
    let mut e = Ev {
        kind: kind.to_owned(),
        cpu,
        ts_s,
        waker_pid,
        tgid,
        ..Ev::default()
    };
    for kv in fields.split_whitespace() {
        let Some((k, v)) = kv.split_once('=') else {
            continue;
        };
        match k {
            "comm" => e.comm = v.to_owned(),
            "pid" => e.pid = v.parse().ok()?,
            "target_cpu" => e.target_cpu = v.parse().ok(),
            "prev_comm" => e.prev_comm = v.to_owned(),
            "prev_pid" => e.prev_pid = v.parse().ok()?,
            "next_comm" => e.next_comm = v.to_owned(),
            "next_pid" => e.next_pid = v.parse().ok()?,
            _ => {}
        }
    }
    Some(e)
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

fn s(v: &Value, k: &str) -> String {
    v.get(k).and_then(Value::as_str).unwrap_or("").to_owned()
}

fn u(v: &Value, k: &str) -> Option<u32> {
    v.get(k)
        .and_then(Value::as_u64)
        .and_then(|x| u32::try_from(x).ok())
}

/// Runs `wakeviz --replay FILE --dump jsonl` and keeps the five tracepoints' events.
pub fn dump(wakeviz: &Path, wvz: &Path) -> Result<Stream> {
    let mut child = Command::new(wakeviz)
        .arg("--replay")
        .arg(wvz)
        .args(["--dump", "jsonl"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("running {} --replay --dump jsonl", wakeviz.display()))?;
    let stdout = child.stdout.take().context("no stdout from wakeviz")?;
    let mut st = Stream::default();
    for (i, line) in BufReader::new(stdout).lines().enumerate() {
        let line = line.context("reading wakeviz --dump output")?;
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(&line)
            .with_context(|| format!("--dump jsonl line {}: not JSON: {line:.200}", i + 1))?;
        let kind = s(&v, "kind");
        if !KINDS.contains(&kind.as_str()) {
            *st.other.entry(kind).or_default() += 1;
            continue;
        }
        st.events.push(Ev {
            cpu: u(&v, "cpu").unwrap_or(u32::MAX),
            pid: u(&v, "pid").unwrap_or(0),
            comm: s(&v, "comm"),
            target_cpu: u(&v, "target_cpu"),
            waker_pid: u(&v, "waker_pid"),
            tgid: u(&v, "tgid"),
            prev_pid: u(&v, "prev_pid").unwrap_or(0),
            prev_comm: s(&v, "prev_comm"),
            next_pid: u(&v, "next_pid").unwrap_or(0),
            next_comm: s(&v, "next_comm"),
            ts_s: v["ts_ns"].as_u64().map_or(f64::NAN, |n| n as f64 / 1e9),
            kind,
        });
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
    Ok(st)
}

fn total(c: &Counts, kind: &str) -> u64 {
    c.iter()
        .filter(|((k, comm), _)| k == kind && comm.starts_with(PREFIX))
        .map(|(_, n)| n)
        .sum()
}

/// wakeviz's counts against tracefs's, per event kind: equal within 0.5%, or one event (the
/// two captures start at slightly different instants, and a kind with few events, such as the
/// fifty forks of the many-ring guest, can have one at that edge).
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
        let ok = diff * 1000 <= t * 5 || diff <= 1;
        f.line(format!(
            "  {kind:<20} {w:>9} {t:>9} {pct:>7.2}%{}",
            if ok { "" } else { "  <- over 0.5% and 1 event" }
        ));
        if !ok {
            f.failures.push(format!(
                "{kind}: wakeviz {w} vs tracefs {t} ({pct:.2}% apart)"
            ));
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

/// Every (kind, workload task) whose counts differ between the sources, even where the totals
/// agree: pid, the counts, the names each source gave it and when each saw it, so a mismatch
/// can be traced to events rather than argued about. At most `MAX` lines.
pub fn explain_count_diffs(f: &mut Findings, wakeviz: &Stream, truth: &Stream) {
    const MAX: usize = 12;
    let (w, t) = (wakeviz.per_pid(), truth.per_pid());
    let mut keys: Vec<&(String, u32)> = w.keys().chain(t.keys()).collect();
    keys.sort();
    keys.dedup();
    let span = |v: Option<&(u64, f64, f64)>| {
        v.map_or_else(|| "-".to_owned(), |&(_, a, b)| format!("{a:.6}..{b:.6} s"))
    };
    let mut lines = Vec::new();
    for key in keys {
        let (a, b) = (w.get(key), t.get(key));
        let (na, nb) = (a.map_or(0, |v| v.0), b.map_or(0, |v| v.0));
        if na == nb {
            continue;
        }
        let (kind, pid) = key;
        lines.push(format!(
            "    {kind} pid {pid}: wakeviz {na} ({}; names {}), tracefs {nb} ({}; names {})",
            span(a),
            wakeviz.names_of(*pid).join(","),
            span(b),
            truth.names_of(*pid).join(",")
        ));
    }
    if lines.is_empty() {
        return;
    }
    f.line(format!(
        "  tasks whose counts differ ({} of kind and pid):",
        lines.len()
    ));
    let n = lines.len();
    for l in lines.into_iter().take(MAX) {
        f.line(l);
    }
    if n > MAX {
        f.line(format!("    ... {} more", n - MAX));
    }
}

/// Several rings: the capture used the topology's ring count, nothing arrived behind
/// the merge's watermark, nothing was dropped, no CPU's chain of switches has a gap, and every
/// workload wakeup the kernel traced is in the recording: task by task, wakeviz has at least
/// tracefs's sched_waking and sched_wakeup count. tracefs records from before wakeviz starts
/// until after it ends, so a task with fewer is a wakeup wakeviz lost; one with more is one the
/// kernel's trace does not show, which [`compare_counts`] judges and [`explain_count_diffs`]
/// names.
pub fn rings(f: &mut Findings, report: Option<&Value>, want: usize, w: &Stream, truth: &Stream) {
    let Some(d) = report.map(|r| &r["drops"]) else {
        f.fail("rings: no guest report");
        return;
    };
    let rings = d["rings"].as_array().map_or(1, Vec::len);
    let late = d["late_events"].as_u64();
    let per_ring: Vec<String> = d["rings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| format!("{}:{}", s(r, "cpus"), r["delivered"]))
        .collect();
    f.line(format!(
        "  rings: {rings} (want {want}), late events {}, drops {} kernel / {} userspace, unmatched wakeups {}, switch chain gaps {}; delivered per ring (cpus:events) {}",
        late.map_or("?".into(), |n| n.to_string()),
        d["kernel_drops"],
        d["user_drops"],
        d["unmatched_wakeups"],
        d["switch_gaps"],
        if per_ring.is_empty() { "-".into() } else { per_ring.join(" ") }
    ));
    // Per-CPU batching is on by default: the guest's records went through batches, and the
    // counts below hold with them.
    let b = &d["batches"];
    f.line(format!(
        "  per-CPU batches: {} sent, {} flushed by wakeviz, {} records alone, {} records lost; events held at most {:.0} ms ({:.0} ms at start-up)",
        b["sent"],
        b["flushed_by_wakeviz"],
        b["unbatched"],
        b["dropped_records"],
        d["max_hold_ns"].as_f64().unwrap_or(0.0) / 1e6,
        d["startup_hold_ns"].as_f64().unwrap_or(0.0) / 1e6
    ));
    if b["sent"].as_u64().is_none_or(|n| n == 0) {
        f.fail("batches: the capture sent no per-CPU batch".to_string());
    }
    if b["dropped_records"].as_u64() != Some(0) {
        f.fail(format!(
            "batches: {} records lost with refused batches, want 0",
            b["dropped_records"]
        ));
    }
    if rings != want {
        f.fail(format!(
            "rings: the capture used {rings} ring buffers, want {want}"
        ));
    }
    if late != Some(0) {
        f.fail(format!("rings: late events {late:?}, want 0"));
    }
    if d["kernel_drops"].as_u64() != Some(0) || d["user_drops"].as_u64() != Some(0) {
        f.fail(format!(
            "rings: drops {} / {}, want 0",
            d["kernel_drops"], d["user_drops"]
        ));
    }
    // Where every probe runs, each CPU's chain of switches is whole: a gap is a switch no
    // probe saw, which the drop counts above cannot show (docs/dev/capture.md).
    if d["switch_gaps"].as_u64() != Some(0) {
        f.fail(format!(
            "rings: switch chain gaps {}, want 0",
            d["switch_gaps"]
        ));
    }
    if want > 1 {
        let (wp, tp) = (w.per_pid(), truth.per_pid());
        for kind in ["sched_waking", "sched_wakeup"] {
            let short: Vec<String> = tp
                .iter()
                .filter(|((k, _), _)| k == kind)
                .filter_map(|((_, pid), &(b, ..))| {
                    let a = wp.get(&(kind.to_owned(), *pid)).map_or(0, |v| v.0);
                    (a < b).then(|| format!("pid {pid} {a} of {b}"))
                })
                .collect();
            if !short.is_empty() {
                f.fail(format!(
                    "rings: {kind}: {} workload task(s) with fewer than tracefs traced: {}",
                    short.len(),
                    short.join(", ")
                ));
            }
        }
    }
}

/// Every wakeup of a pinned pair between its two CPUs is at the pair's level, there are at least
/// `iterations` of them, and wakeviz saw the same (waker CPU, wakee CPU) counts as the kernel's
/// own trace. A wakeup with a CPU off the pair's two came before a thread had pinned itself (after
/// pinning neither thread can be anywhere else): reported, allowed while they stay a sliver (1%).
pub fn placement(
    f: &mut Findings,
    topo: &Topology,
    wakeviz: &Placement,
    truth: &Placement,
    pairs: &[Pair],
    iterations: u32,
) {
    for p in pairs {
        let empty = (BTreeMap::new(), 0);
        let (w, others) = wakeviz.get(p.comm).unwrap_or(&empty);
        let (t, _) = truth.get(p.comm).unwrap_or(&empty);
        let pinned = |&(cpu, target): &(u32, Option<u32>)| {
            (cpu, target) == (p.waker, Some(p.wakee)) || (cpu, target) == (p.wakee, Some(p.waker))
        };
        let split = |m: &BTreeMap<(u32, Option<u32>), u64>| -> (u64, u64) {
            m.iter().fold((0, 0), |(on, off), (k, n)| {
                if pinned(k) {
                    (on + n, off)
                } else {
                    (on, off + n)
                }
            })
        };
        let (t_hit, t_off) = split(t);
        // wakeviz's side in one walk: the counts and the off-pin wakeups listed.
        let (mut hit, mut off, mut off_pin) = (0u64, 0u64, Vec::new());
        for (&(cpu, target), &n) in w {
            if pinned(&(cpu, target)) {
                hit += n;
                continue;
            }
            off += n;
            let level = target.and_then(|t| topo.level(cpu, t));
            let to = target.map_or("?".into(), |t| t.to_string());
            off_pin.push(format!(
                "{cpu}->{to} {}={n}",
                level.map_or("unknown-cpu", Level::name)
            ));
        }
        let line = format!(
            "  {:<9} cpus {:>2} -> {:<2} {:<13} wakeviz {hit}/{}, tracefs {t_hit}/{}{}{}",
            p.comm,
            p.waker,
            p.wakee,
            p.level.name(),
            hit + off,
            t_hit + t_off,
            if off > 0 {
                format!(" ({off} before pinning: {})", off_pin.join(" "))
            } else {
                String::new()
            },
            if *others > 0 {
                format!(" (+{others} by other tasks, e.g. migration/N: not counted)")
            } else {
                String::new()
            }
        );
        if topo.level(p.waker, p.wakee) != Some(p.level) {
            f.fail(format!(
                "{line}: the guest's topology puts cpus {} and {} at {}, not {}",
                p.waker,
                p.wakee,
                topo.level(p.waker, p.wakee)
                    .map_or("unknown-cpu", Level::name),
                p.level.name()
            ));
        } else if w != t {
            f.fail(format!(
                "{line}: wakeviz and the kernel's own trace saw different (waker CPU, wakee \
                 CPU) counts"
            ));
        } else if hit < u64::from(iterations) {
            // A round trip is two wakeups, or one when both threads share a CPU and the writer
            // is still running when the reader blocks.
            f.fail(format!(
                "{line}: want at least {iterations} wakeups between the pinned CPUs"
            ));
        } else if off * 100 > hit + off {
            f.fail(format!(
                "{line}: over 1% of the pair's wakeups were off its pinned CPUs"
            ));
        } else {
            f.line(line);
        }
    }
}

/// The probe list: the report's `probes` when it has one, else the table wakeviz prints on
/// stderr (`  name  mode  attached | FAILED: why | unavailable: why`). Second: where it came from.
pub fn probe_list(report: Option<&Value>, stderr: &str) -> Option<(Vec<Value>, &'static str)> {
    if let Some(list) = report
        .and_then(|r| r.get("probes"))
        .and_then(Value::as_array)
    {
        return Some((list.clone(), "report.json"));
    }
    let mut lines = stderr
        .lines()
        .skip_while(|l| !l.ends_with("wakeviz: probes"));
    lines.next()?;
    let mut list = Vec::new();
    for l in lines {
        if !l.starts_with("  ") || l.trim().is_empty() {
            break;
        }
        if l.contains("(tried ") {
            continue;
        }
        let mut it = l.split_whitespace();
        let (Some(name), Some(mode)) = (it.next(), it.next()) else {
            continue;
        };
        let state_text = it.collect::<Vec<_>>().join(" ");
        let (state, reason) = match state_text.split_once(": ") {
            Some((st, why)) => (st.to_lowercase(), why.to_owned()),
            None => (state_text.to_lowercase(), String::new()),
        };
        list.push(serde_json::json!({
            "name": name,
            "mode": if mode == "-" { Value::Null } else { Value::from(mode) },
            "state": state,
            "reason": reason,
        }));
    }
    (!list.is_empty()).then_some((list, "wakeviz's stderr probe table"))
}

/// Which probes attached in which mode: fentry on select_task_rq_fair, select_idle_cpu
/// reported inlined, scan latency taken from select_task_rq_fair.
pub fn probes(f: &mut Findings, list: &[Value], scan_source: Option<&str>) {
    let attached = |p: &Value| s(p, "state").eq_ignore_ascii_case("attached");
    for p in list {
        let reason = s(p, "reason");
        f.line(format!(
            "    {:<20} {:<10} {}{}",
            s(p, "name"),
            p.get("mode").and_then(Value::as_str).unwrap_or("-"),
            s(p, "state"),
            if reason.is_empty() {
                String::new()
            } else {
                format!(": {reason}")
            }
        ));
    }
    let srtf: Vec<&Value> = list
        .iter()
        .filter(|p| s(p, "name") == "select_task_rq_fair")
        .collect();
    if !srtf
        .iter()
        .any(|p| s(p, "mode").starts_with("fentry") && attached(p))
    {
        f.fail("select_task_rq_fair is not attached in fentry mode");
    }
    match list.iter().find(|p| s(p, "name") == "select_idle_cpu") {
        None => f.fail("no select_idle_cpu entry in the probe table"),
        Some(p) => {
            let text = p.to_string().to_lowercase();
            if attached(p) {
                f.fail("select_idle_cpu reported attached, but Debian's 6.12 kernel inlines it");
            } else if !(text.contains("inline") && s(p, "state") == "unavailable") {
                f.fail(format!(
                    "select_idle_cpu not reported unavailable (inlined): {p}"
                ));
            }
        }
    }
    match scan_source {
        Some(src) if src.contains("select_task_rq_fair") => {
            f.line(format!("  scan latency source: {src}"));
        }
        Some(src) => f.fail(format!(
            "scan latency source is {src:?}, not the select_task_rq_fair fallback"
        )),
        None => f.fail("no report gives the scan latency source (scan_latency.source)"),
    }
}

/// The report's label for where scan latency comes from (`scan_latency.source`).
pub fn scan_source(report: &Value) -> Option<String> {
    report
        .get("scan_latency")
        .and_then(|s| s.get("source"))
        .and_then(Value::as_str)
        .map(str::to_owned)
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

/// The select-input guest runs: fidelity with its non-zero disagreement buckets for `busy.wvz`
/// and `msg.wvz` (fan-out groups, like `perf bench sched messaging`), each beside the same
/// workload by the tracepoints alone (`*_tp.wvz`, whose `sched_waking` probe reads the select
/// inputs and WF_SYNC; `super::tp_gap` judges the two fidelities over every guest), `aff.wvz` (replayed
/// here), the affinity run's kernel and shadow CPUs (all must be 1 or 6), and the `cache` run's
/// cache-placement table.
pub fn inputs_runs(f: &mut Findings, wakeviz: &Path, results: &Path) {
    let mut agreement = std::collections::HashMap::new();
    for (name, what) in [
        ("busy", "busy 2-LLC"),
        ("busy_tp", "busy 2-LLC, --no-function-probes"),
        ("aff", "taskset -c 1,6"),
        ("cache", "5 multi-threaded processes, unpinned"),
        ("msg", "fan-out groups, unpinned"),
        ("msg_tp", "fan-out groups, --no-function-probes"),
    ] {
        let wvz = results.join(format!("{name}.wvz"));
        if !wvz.is_file() {
            f.fail(format!("no {name}.wvz from the guest ({what} run)"));
            continue;
        }
        match replay_report(wakeviz, &wvz) {
            Ok(r) => {
                let _ = std::fs::write(results.join(format!("{name}_report.json")), r.to_string());
                f.line(format!("  {what}: {}", sis_util_fidelity(&r)));
                let fid = r.get("shadow").and_then(|s| s.get("fidelity"));
                if let Some(a) = fid.and_then(|x| x.get("agreement")).and_then(Value::as_f64) {
                    let n = fid.and_then(|x| x.get("evaluated")).and_then(Value::as_u64);
                    agreement.insert(name, Fid::from_share(a, n.unwrap_or(0)));
                }
                if name.ends_with("_tp") {
                    let n = r["shadow"]["decisions_with_waking_inputs"].as_u64();
                    f.line(format!(
                        "    decisions with the inputs read at sched_waking: {}, WF_SYNC from the waker's stack: {}",
                        n.unwrap_or(0),
                        r["shadow"]["decisions_with_stack_sync"].as_u64().unwrap_or(0)
                    ));
                    if n.is_none_or(|n| n == 0) {
                        f.fail(format!(
                            "{name}: no decision had the inputs read at sched_waking"
                        ));
                    }
                }
                if let Some(b) = fid
                    .and_then(|x| x.get("disagreements"))
                    .and_then(Value::as_object)
                {
                    let nz: Vec<String> = b
                        .iter()
                        .filter(|(_, v)| v.as_u64().is_some_and(|n| n > 0))
                        .map(|(k, v)| format!("{k} {v}"))
                        .collect();
                    f.line(format!("    disagreements: {}", nz.join(", ")));
                }
                if name == "cache" {
                    cache_table(f, &r);
                }
            }
            Err(e) => f.fail(format!("{name}: {e:#}")),
        }
    }
    // The fan-out groups wake through pipes, whose wakeups are WF_SYNC: a flag no tracepoint
    // shows, which the tracepoint-only probe reads from the waker's stack (`super::sync`).
    for (workload, without) in [("busy", "busy_tp"), ("msg", "msg_tp")] {
        let (Some(&with), Some(&without_fid)) = (agreement.get(workload), agreement.get(without))
        else {
            f.fail(format!("{workload} / {without}: no fidelity to compare"));
            continue;
        };
        let pair = tp_gap::Pair {
            workload,
            with,
            without: without_fid,
        };
        f.line(tp_gap::line(&pair));
        f.tp_pairs.push(pair);
    }
    // The reads' cost is measured with the function-probe cost runs (`vm/fentry.sh`).
}

/// The cache-placement figures of every policy on the `cache` run (three fan-out and two
/// ping-pong processes, unpinned), open loop. The recording carries each thread's tgid
/// (tp_btf), so the kernel's own row must have a preferred-LLC share.
fn cache_table(f: &mut Findings, r: &Value) {
    let Some(rows) = r
        .get("shadow")
        .and_then(|s| s.get("policies"))
        .and_then(Value::as_object)
    else {
        f.fail("cache: no shadow.policies in the report".to_string());
        return;
    };
    let pct = |v: Option<&Value>| {
        v.and_then(Value::as_f64)
            .map_or("-".to_string(), |x| format!("{x:.1}"))
    };
    f.line(
        "    cache placement, open loop (policy: in preferred LLC %, stacked %, LLC moves %, stacked beside idle %, LLCs/process):"
            .to_string(),
    );
    for (name, row) in rows {
        let c = row.get("cache");
        let get = |k: &str| c.and_then(|c| c.get(k));
        f.line(format!(
            "      {name:<18} {:>6} {:>6} {:>6} {:>6} {:>5}",
            pct(get("preferred_llc_pct")),
            pct(row.get("stacked_pct")),
            pct(get("llc_moves_pct")),
            pct(get("stacked_idle_left_pct")),
            get("llcs_per_process")
                .and_then(Value::as_f64)
                .map_or("-".to_string(), |x| format!("{x:.2}")),
        ));
    }
    let observed = rows
        .get("observed")
        .and_then(|o| o.get("cache"))
        .and_then(|c| c.get("preferred_llc_pct"));
    if observed.and_then(Value::as_f64).is_none() {
        f.fail(
            "busy: the kernel's row has no preferred-LLC share: tgids or runtimes missing"
                .to_string(),
        );
    }
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
    // wakeviz-core's shape: {"policy", "agreement" (0..1 or null), "evaluated",
    // "exact_inputs_agreement", ...}.
    if let Some(agreement) = fid.get("agreement") {
        let policy = fid.get("policy").and_then(Value::as_str).unwrap_or("?");
        let evaluated = fid.get("evaluated").and_then(Value::as_u64).unwrap_or(0);
        let exact = fid
            .get("exact_inputs_agreement")
            .and_then(Value::as_f64)
            .map_or("n/a".into(), |x| format!("{:.1}%", x * 100.0));
        return match agreement.as_f64() {
            Some(a) => format!(
                "{:.1}% of {evaluated} decisions agree with the kernel (policy {policy}; \
                 exact-input subset {exact})",
                a * 100.0
            ),
            None => format!("n/a (policy {policy}: no decision evaluated)"),
        };
    }
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

/// `wakeviz diff` on the guest's `diff-*.wvz` recordings (topologies with an SMT and a
/// cross-package pair only): the gates that say "wakeups moved off the SMT sibling, onto the
/// other package" must hold between the two layouts and not between two runs of one.
pub fn diff_gate(f: &mut Findings, wakeviz: &Path, results: &Path) {
    let (smt1, smt2, xpkg) = (
        results.join("diff-smt-1.wvz"),
        results.join("diff-smt-2.wvz"),
        results.join("diff-xpkg-1.wvz"),
    );
    if !smt1.is_file() {
        f.line("  diff: no SMT and cross-package pair on this layout (not run)");
        return;
    }
    // The recordings are scoped to their command (the ping-pong's tree), so the shares are the
    // pair's alone and move by about 100 pt; a gate's threshold still sits above what the runs'
    // own noise could do unscoped (kthreads moved shares by 2.2 pt), as a CI job's would.
    let gates = [
        "placement.vs_waker.cross_package.share > +20pt",
        "placement.vs_waker.smt_sibling.share < -20pt",
    ];
    let run = |a: &Path, b: &Path| {
        let mut c = std::process::Command::new(wakeviz);
        c.arg("diff").arg(a).arg(b).args(["--only", "placement"]);
        for g in gates {
            c.args(["--fail-if", g]);
        }
        c.output()
    };
    match run(&smt1, &xpkg) {
        Ok(o) => {
            let text = String::from_utf8_lossy(&o.stdout);
            f.line("  wakeviz diff diff-smt-1.wvz diff-xpkg-1.wvz --only placement:");
            for l in text.lines().filter(|l| {
                l.contains("smt_sibling") || l.contains("cross_package") || l.contains("wakeups")
            }) {
                f.line(format!("    {l}"));
            }
            let err = String::from_utf8_lossy(&o.stderr);
            let held = err.lines().filter(|l| l.contains("HOLDS")).count();
            if o.status.code() == Some(1) && held == gates.len() {
                f.line("  diff gate, SMT pair -> cross-package pair: exit 1, both gates hold");
            } else {
                f.fail(format!(
                    "diff gate SMT -> cross-package: exit {:?}, {held} of {} gates held:\n{err}",
                    o.status.code(),
                    gates.len()
                ));
            }
        }
        Err(e) => f.fail(format!("running wakeviz diff: {e}")),
    }
    diff_schedstat(f, wakeviz, &smt1, &xpkg);
    match run(&smt1, &smt2) {
        Ok(o) if o.status.code() == Some(0) => {
            f.line("  diff gate, SMT pair run 1 -> run 2: exit 0 (nothing moved)");
        }
        Ok(o) => f.fail(format!(
            "diff gate on two SMT runs: exit {:?}:\n{}",
            o.status.code(),
            String::from_utf8_lossy(&o.stderr)
        )),
        Err(e) => f.fail(format!("running wakeviz diff: {e}")),
    }
}

/// The kernel's own counters travel in the recordings: `wakeviz diff` of two of them prints
/// the schedstat rows with values (the guest kernel has CONFIG_SCHEDSTATS; wakeviz switches
/// the sysctl on for each run).
fn diff_schedstat(f: &mut Findings, wakeviz: &Path, a: &Path, b: &Path) {
    let out = std::process::Command::new(wakeviz)
        .arg("diff")
        .arg(a)
        .arg(b)
        .args(["--only", "schedstat"])
        .output();
    let o = match out {
        Ok(o) => o,
        Err(e) => return f.fail(format!("running wakeviz diff --only schedstat: {e}")),
    };
    let text = String::from_utf8_lossy(&o.stdout);
    let rows: Vec<&str> = text.lines().filter(|l| l.contains("ttwu_")).collect();
    f.line("  wakeviz diff diff-smt-1.wvz diff-xpkg-1.wvz --only schedstat:");
    for l in &rows {
        f.line(format!("    {l}"));
    }
    let counted = rows.iter().any(|l| {
        l.contains("ttwu_count")
            && l.split_whitespace()
                .filter_map(|w| w.replace(',', "").parse::<f64>().ok())
                .any(|v| v > 0.0)
    });
    if !counted {
        f.fail(format!(
            "wakeviz diff of two recordings printed no schedstat ttwu_count row with a value \
             (exit {:?}):\n{text}{}",
            o.status.code(),
            String::from_utf8_lossy(&o.stderr)
        ));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn parses_trace_lines() {
        let w = parse_trace_line(
            "  wvz-smt-301     [004] d..2.    31.123456: sched_waking: comm=wvz-smt pid=302 \
             prio=120 target_cpu=005",
        )
        .expect("waking");
        assert_eq!(
            (w.kind.as_str(), w.cpu, w.pid, w.comm.as_str()),
            ("sched_waking", 4, 302, "wvz-smt")
        );
        assert_eq!((w.target_cpu, w.waker_pid), (Some(5), Some(301)));
        assert!((w.ts_s - 31.123456).abs() < 1e-9);
        let s = parse_trace_line(
            "          <idle>-0       [013] d..2.    32.388598: sched_switch: \
             prev_comm=swapper/13 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=sh \
             next_pid=284 next_prio=120",
        )
        .expect("switch");
        assert_eq!((s.cpu, s.prev_pid, s.next_pid), (13, 0, 284));
        assert_eq!(
            (s.prev_comm.as_str(), s.next_comm.as_str()),
            ("swapper/13", "sh")
        );
        // A comm with a space and a dash before the CPU column.
        let m = parse_trace_line(
            " my task-x-77 [001] d..2. 1.0: sched_migrate_task: comm=wvz-a pid=9 prio=120 \
             orig_cpu=1 dest_cpu=2",
        )
        .expect("migrate");
        assert_eq!((m.cpu, m.pid, m.waker_pid), (1, 9, Some(77)));
        assert!(parse_trace_line("# tracer: nop").is_none());
        // `record-tgid`: the running task's process after its name.
        let t = parse_trace_line(
            "  wvz-smt-301     (    300) [004] d..2.    31.1: sched_waking: comm=wvz-smt \
             pid=302 prio=120 target_cpu=005",
        )
        .expect("waking with tgid");
        assert_eq!((t.waker_pid, t.tgid, t.cpu), (Some(301), Some(300), 4));
        let u = parse_trace_line(
            "  sh-284 (-------) [001] d..2. 1.0: sched_waking: comm=sh pid=9 prio=120 \
             target_cpu=001",
        )
        .expect("waking without a saved tgid");
        assert_eq!((u.waker_pid, u.tgid), (Some(284), None));
    }

    fn ev(kind: &str, pid: u32, comm: &str) -> Ev {
        Ev {
            kind: kind.into(),
            pid,
            comm: comm.into(),
            ..Ev::default()
        }
    }

    #[test]
    fn scan_kprobe_lines_give_their_role_and_pid() {
        let l = "        wvz-fan-243     (    241) [001] d..3.    11.366119: idle_test_1: (select_task_rq_fair+0x683/0x17d0)";
        assert_eq!(scan_hit(l), Some(("idle_test", 243)));
        let l = "  wvz-hog-473 (473) [006] d.s2. 12.787500: scan_entry_0: (select_task_rq_fair+0x545/0x17d0)";
        assert_eq!(scan_hit(l), Some(("scan_entry", 473)));
        let l =
            "  sh-5 (5) [000] d..2. 1.0: sched_waking: comm=wvz-x pid=6 prio=120 target_cpu=001";
        assert_eq!(scan_hit(l), None);
    }

    #[test]
    fn counts_use_each_pid_final_name() {
        // pid 5 is forked by the shell as "sh" and execs as "wvz-x"; pid 6 stays "sh".
        let mut sw = ev("sched_switch", 0, "");
        (sw.prev_pid, sw.prev_comm, sw.next_pid, sw.next_comm) = (6, "sh".into(), 5, "sh".into());
        let st = Stream {
            events: vec![
                ev("sched_wakeup_new", 5, "sh"),
                sw,
                ev("sched_waking", 5, "wvz-x"),
                ev("sched_waking", 6, "sh"),
            ],
            other: BTreeMap::new(),
            scan_hits: BTreeMap::new(),
        };
        let c = st.counts();
        let get = |k: &str| c.get(&(k.to_owned(), "wvz-x".to_owned())).copied();
        assert_eq!(get("sched_wakeup_new"), Some(1));
        assert_eq!(get("sched_switch"), Some(1));
        assert_eq!(get("sched_waking"), Some(1));
        assert_eq!(c.len(), 3);
    }

    #[test]
    fn count_diffs_name_the_tasks_that_differ() {
        let at = |kind: &str, pid: u32, comm: &str, ts_s: f64| Ev {
            ts_s,
            ..ev(kind, pid, comm)
        };
        let st = |events| Stream {
            events,
            other: BTreeMap::new(),
            scan_hits: BTreeMap::new(),
        };
        let w = st(vec![
            at("sched_waking", 5, "wvz-x", 1.0),
            at("sched_waking", 5, "wvz-x", 2.0),
            at("sched_waking", 6, "wvz-x", 3.0),
        ]);
        let t = st(vec![
            at("sched_waking", 5, "sh", 1.0),
            at("sched_waking", 5, "wvz-x", 2.0),
        ]);
        let mut f = Findings::default();
        explain_count_diffs(&mut f, &w, &t);
        assert_eq!(f.lines.len(), 2, "{:?}", f.lines);
        assert!(
            f.lines[1].contains("sched_waking pid 6: wakeviz 1"),
            "{}",
            f.lines[1]
        );
        assert!(
            f.lines[1].contains("tracefs 0 (-; names )"),
            "{}",
            f.lines[1]
        );
        let mut same = Findings::default();
        explain_count_diffs(&mut same, &w, &w);
        assert!(same.lines.is_empty());
    }

    #[test]
    fn rings_fail_on_a_task_short_of_the_trace_not_on_a_surplus() {
        let report = serde_json::json!({"drops": {
            "rings": [{"cpus": "0-3", "delivered": 1}, {"cpus": "4-7", "delivered": 1}],
            "late_events": 0, "kernel_drops": 0, "user_drops": 0, "switch_gaps": 0,
            "unmatched_wakeups": 0, "max_hold_ns": 0, "startup_hold_ns": 0,
            "batches": {"sent": 1, "flushed_by_wakeviz": 0, "unbatched": 0, "dropped_records": 0}
        }});
        let st = |wakings: &[u32]| Stream {
            events: wakings
                .iter()
                .map(|&pid| ev("sched_waking", pid, "wvz-x"))
                .collect(),
            other: BTreeMap::new(),
            scan_hits: BTreeMap::new(),
        };
        let run = |w: &Stream, t: &Stream| {
            let mut f = Findings::default();
            rings(&mut f, Some(&report), 2, w, t);
            f.failures
        };
        // A surplus the trace does not show: not a loss.
        assert!(run(&st(&[5, 5, 6]), &st(&[5, 6])).is_empty());
        // Equal totals, but pid 6 lost one of its wakeups.
        let lost = run(&st(&[5, 5, 6]), &st(&[5, 6, 6]));
        assert_eq!(lost.len(), 1, "{lost:?}");
        assert!(lost[0].contains("pid 6 1 of 2"), "{}", lost[0]);
    }

    /// Two-socket Xeon (48 CPUs): cpus 1 and 13 are in different packages.
    fn xeon() -> Topology {
        let dir = std::env::temp_dir().join(format!("wvz-check-topo-{}", std::process::id()));
        wakeviz_core::topology::fixture::SysfsSpec::xeon_e5_2690v3()
            .write(&dir)
            .expect("write fixture");
        let t = wakeviz_core::topology::from_sysfs(&dir).expect("read fixture");
        let _ = fs::remove_dir_all(&dir);
        t
    }

    #[test]
    fn placement_tells_pre_pinning_wakeups_from_misplaced_ones() {
        let topo = xeon();
        let pair = Pair {
            comm: "wvz-x",
            waker: 1,
            wakee: 13,
            level: Level::CrossPackage,
        };
        let run = |counts: &[((u32, Option<u32>), u64)], truth: &[((u32, Option<u32>), u64)]| {
            let mk = |c: &[((u32, Option<u32>), u64)]| -> Placement {
                [("wvz-x".to_string(), (c.iter().copied().collect(), 0))].into()
            };
            let mut f = Findings::default();
            placement(&mut f, &topo, &mk(counts), &mk(truth), &[pair], 100);
            f
        };
        let good = [((1, Some(13)), 60), ((13, Some(1)), 60)];
        assert!(run(&good, &good).failures.is_empty());
        // One wakeup from cpu 2 before the waker pinned itself to 1: reported, not failed.
        let early = [((1, Some(13)), 60), ((13, Some(1)), 60), ((2, Some(13)), 1)];
        let f = run(&early, &early);
        assert!(f.failures.is_empty(), "{:?}", f.failures);
        assert!(
            f.lines[0].contains("1 before pinning: 2->13 cross_package=1"),
            "{}",
            f.lines[0]
        );
        // wakeviz and the kernel disagree on one wakeup's CPUs.
        let moved = [((1, Some(13)), 59), ((13, Some(1)), 60), ((1, Some(3)), 1)];
        assert_eq!(run(&moved, &good).failures.len(), 1);
        // Too few, and too many off the pinned CPUs.
        let few = [((1, Some(13)), 40), ((13, Some(1)), 40)];
        assert_eq!(run(&few, &few).failures.len(), 1);
        let loose = [((1, Some(13)), 60), ((13, Some(1)), 60), ((2, Some(3)), 5)];
        assert_eq!(run(&loose, &loose).failures.len(), 1);
        // A pair spec the topology contradicts.
        let mut f = Findings::default();
        let wrong = Pair {
            level: Level::SameLlc,
            ..pair
        };
        let p = [("wvz-x".to_string(), (good.iter().copied().collect(), 0))].into();
        placement(&mut f, &topo, &p, &p, &[wrong], 100);
        assert_eq!(f.failures.len(), 1);
    }

    #[test]
    fn compare_allows_half_a_percent() {
        let mut f = Findings::default();
        let mk = |n: u64| -> Counts {
            KINDS
                .iter()
                .map(|k| ((k.to_string(), "wvz-a".to_string()), n))
                .collect()
        };
        compare_counts(&mut f, &mk(1005), &mk(1000));
        assert!(f.failures.is_empty(), "{:?}", f.failures);
        compare_counts(&mut f, &mk(1006), &mk(1000));
        assert_eq!(f.failures.len(), KINDS.len());
    }

    #[test]
    fn probe_table_from_stderr() {
        let stderr = "wakeviz: probes\n  sched_waking         tp_btf     attached\n  \
                      select_task_rq_fair  fentry     attached\n  select_idle_cpu      -          \
                      unavailable: inlined: not in /proc/kallsyms\n\nwakeviz: capturing\n";
        let (list, from) = probe_list(None, stderr).expect("table");
        assert_eq!(from, "wakeviz's stderr probe table");
        assert_eq!(list.len(), 3);
        assert_eq!(list[2]["state"], "unavailable");
        assert_eq!(list[2]["mode"], Value::Null);
        let mut f = Findings::default();
        probes(
            &mut f,
            &list,
            Some("select_task_rq_fair duration (select_idle_cpu inlined)"),
        );
        assert!(f.failures.is_empty(), "{:?}", f.failures);
        let mut f = Findings::default();
        probes(&mut f, &list[..1], None);
        assert_eq!(f.failures.len(), 3, "{:?}", f.failures);
    }

    #[test]
    fn fidelity_shapes() {
        assert!(sis_util_fidelity(&json!({})).starts_with("n/a"));
        assert!(sis_util_fidelity(&json!({"shadow": {"fidelity": null}})).starts_with("n/a"));
        assert_eq!(
            sis_util_fidelity(&json!({"shadow": {"fidelity": {"SIS_UTIL": 0.93}}})),
            "0.93"
        );
        assert_eq!(
            sis_util_fidelity(
                &json!({"shadow": {"fidelity": [{"policy": "sis_util", "fidelity": 0.5}]}})
            ),
            "0.5"
        );
        let core = json!({"shadow": {"fidelity": {"policy": "sis_util", "agreement": 0.875,
            "evaluated": 800, "exact_inputs_agreement": 0.9}}});
        assert_eq!(
            sis_util_fidelity(&core),
            "87.5% of 800 decisions agree with the kernel (policy sis_util; exact-input subset \
             90.0%)"
        );
        let none = json!({"shadow": {"fidelity": {"policy": "sis_util", "agreement": null}}});
        assert!(sis_util_fidelity(&none).starts_with("n/a"));
    }
}
