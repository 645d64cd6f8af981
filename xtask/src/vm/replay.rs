//! A recorded workload replayed from its extracted shape (`xtask/vm/replay.sh`): the guest
//! records a workload ([`WORKLOADS`]), `wakeviz workload extract` turns the recording into an
//! rt-app file,
//! Debian's rt-app runs it under a second recording, and the guest's `wakeviz diff` of the two
//! and `--replay --report json` of each come back. The host prints the placement shares of the
//! original and the replay side by side and flags the levels more than [`FLAG_PT`] points
//! apart. How close the replay comes is measured, not judged: the check fails only when a step
//! of the loop did not work (no rt-app, a step's non-zero exit, a missing or unreadable result,
//! a recording without in-scope wakeups).
//!
//! rt-app is Debian's package, fetched with `apt-get download` and unpacked with `dpkg -x`
//! (never installed) into `<cache>/rt-app/<package>/rt-app`, reused from there afterwards.
use std::{
    fs,
    path::{Path, PathBuf},
};

use anyhow::{Context, Result, bail};
use serde_json::Value;
use wakeviz_core::topology::Level;

use super::{check::Findings, kernel};

/// The topology whose guest runs the loop (the one CI runs).
const TOPOLOGY: &str = "nps1";
const PACKAGE: &str = "rt-app";
/// Placement rows whose original and replay shares differ by more than this are flagged.
const FLAG_PT: f64 = 3.0;
/// The guest's workloads: result directory under `replay/`, and what it runs.
const WORKLOADS: [(&str, &str); 2] = [
    (
        "fanout",
        "a fan-out (2 groups x 3 receivers x 3000 loops, --ack)",
    ),
    ("pingpong", "a pipe ping-pong (20000 round trips, unpinned)"),
];
/// The guest's steps, in order; each leaves `replay/STEP.rc` and `replay/STEP.log`.
const STEPS: [(&str, &str); 6] = [
    ("orig", "recording the workload"),
    ("extract", "wakeviz workload extract"),
    ("replay", "rt-app under wakeviz --record"),
    ("diff", "wakeviz diff --report json"),
    ("orig_report", "wakeviz --replay orig.wvz --report json"),
    ("replay_report", "wakeviz --replay replay.wvz --report json"),
];

/// Whether the guest of this topology runs the loop.
pub fn runs_in(topology: &str) -> bool {
    topology == TOPOLOGY
}

/// Debian's rt-app binary from the cache, fetched when missing. The error is one line.
pub fn rt_app(cache: &Path) -> Result<PathBuf> {
    let dir = cache.join("rt-app");
    if let Some(p) = cached(&dir) {
        return Ok(p);
    }
    fetch(&dir).map_err(|e| {
        let why = format!("{e:#}")
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("; ");
        anyhow::anyhow!(
            "vm-test: cannot get Debian's rt-app, which the {TOPOLOGY} guest's replay check runs: \
             {why}"
        )
    })
}

/// The newest `<dir>/<package>/rt-app`.
fn cached(dir: &Path) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path().join("rt-app"))
        .filter(|p| p.is_file())
        .collect();
    found.sort();
    found.pop()
}

/// `apt-get download rt-app` + `dpkg -x`; keeps only the binary, in `dir/<package>/`.
fn fetch(dir: &Path) -> Result<PathBuf> {
    if kernel::which("apt-get").is_none() || kernel::which("dpkg").is_none() {
        bail!(
            "none cached under {} and no apt-get/dpkg to fetch it",
            dir.display()
        );
    }
    let tmp = dir.join(".fetch");
    let (deb, unpacked) = kernel::unpack(&tmp, PACKAGE)?;
    let name = deb
        .file_stem()
        .map_or_else(|| PACKAGE.into(), |s| s.to_string_lossy().into_owned());
    let final_dir = dir.join(&name);
    if final_dir.exists() {
        fs::remove_dir_all(&final_dir)
            .with_context(|| format!("removing {}", final_dir.display()))?;
    }
    fs::create_dir_all(&final_dir).with_context(|| format!("creating {}", final_dir.display()))?;
    let bin = final_dir.join("rt-app");
    let r = fs::rename(unpacked.join("usr/bin/rt-app"), &bin)
        .with_context(|| format!("{} holds no /usr/bin/rt-app", deb.display()));
    let _ = fs::remove_dir_all(&tmp);
    r?;
    eprintln!("vm-test: {name} unpacked into {}", final_dir.display());
    Ok(bin)
}

/// The last lines of a step's log, for a failure message: the unindented ones (messages;
/// wakeviz indents its tables).
fn tail(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with(char::is_whitespace))
        .collect();
    let from = lines.len().saturating_sub(3);
    match lines.get(from..) {
        Some(l) if !l.is_empty() => l.join(" | "),
        _ => "(no output)".into(),
    }
}

/// The first step that did not run or did not succeed, as a failure message.
fn failed_step(dir: &Path) -> Option<String> {
    let path = fs::read_to_string(dir.join("rt-app.path")).unwrap_or_default();
    if path.trim().is_empty() {
        return Some("the guest has no rt-app in its PATH".into());
    }
    for (step, what) in STEPS {
        let rc = match fs::read_to_string(dir.join(format!("{step}.rc"))) {
            Ok(rc) => rc.trim().to_owned(),
            Err(_) => {
                return Some(format!(
                    "{what}: the guest never ran it (no {}/{step}.rc)",
                    dir.display()
                ));
            }
        };
        if rc != "0" {
            let stopped = if step == "replay" && dir.join("timed_out.txt").is_file() {
                " (stopped with SIGINT: rt-app still ran after 120 s)"
            } else {
                ""
            };
            return Some(format!(
                "{what}: exit {rc}{stopped}; {}/{step}.log: {}",
                dir.display(),
                tail(&dir.join(format!("{step}.log")))
            ));
        }
    }
    None
}

fn read_json(path: &Path) -> Result<Value> {
    let bytes = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_slice(&bytes).with_context(|| format!("parsing {}", path.display()))
}

/// A figure's value from a report's `figures` table (`None`: absent or n/a).
fn figure(report: &Value, name: &str) -> Option<f64> {
    report.get("figures")?.get(name)?.get("value")?.as_f64()
}

/// The placement levels the two reports have share figures for, nearest first (`Level::ALL`);
/// a name that is no level (`cross_llc`) follows them.
fn levels(reports: [&Value; 2], side: &str) -> Vec<String> {
    let prefix = format!("placement.{side}.");
    let mut names: Vec<String> = reports
        .iter()
        .filter_map(|r| r.get("figures")?.as_object())
        .flat_map(|m| m.keys())
        .filter_map(|k| k.strip_prefix(&prefix)?.strip_suffix(".share"))
        .filter(|l| !l.contains('.'))
        .map(str::to_owned)
        .collect();
    let rank = |l: &str| {
        Level::ALL
            .iter()
            .position(|x| x.name() == l)
            .unwrap_or(Level::ALL.len())
    };
    names.sort_by(|a, b| rank(a).cmp(&rank(b)).then_with(|| a.cmp(b)));
    names.dedup();
    names
}

/// The change `wakeviz diff` reports for a figure (last group against the base).
fn diff_change(diff: &Value, name: &str) -> Option<f64> {
    diff.get("rows")?
        .as_array()?
        .iter()
        .find(|r| r.get("name").and_then(Value::as_str) == Some(name))?
        .get("groups")?
        .as_array()?
        .last()?
        .get("change")?
        .as_f64()
}

fn cell(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "n/a".into(), |v| format!("{v:.decimals$}"))
}

/// Seconds per step and in all, from `step start end` lines of guest uptimes.
fn times(text: &str) -> Option<String> {
    let mut parts = Vec::new();
    let (mut first, mut last) = (f64::INFINITY, f64::NEG_INFINITY);
    for l in text.lines() {
        if let [step, t0, t1] = l.split_whitespace().collect::<Vec<_>>()[..]
            && let (Ok(t0), Ok(t1)) = (t0.parse::<f64>(), t1.parse::<f64>())
        {
            parts.push(format!("{step} {:.1}", t1 - t0));
            first = first.min(t0);
            last = last.max(t1);
        }
    }
    (!parts.is_empty()).then(|| format!("{:.1} s ({} s)", last - first, parts.join(", ")))
}

pub fn check(f: &mut Findings, results: &Path) {
    for (name, what) in WORKLOADS {
        one(f, &results.join("replay").join(name), what);
    }
}

fn one(f: &mut Findings, dir: &Path, what: &str) {
    let dir = dir.to_path_buf();
    f.line(format!(
        "  replay: {what} recorded, `wakeviz workload extract --rt-app`, rt-app under a \
         second recording:"
    ));
    if let Ok(t) = fs::read_to_string(dir.join("times.txt"))
        && let Some(t) = times(&t)
    {
        f.line(format!("    guest time {t}"));
    }
    if let Some(msg) = failed_step(&dir) {
        f.fail(format!("replay: {msg}"));
        return;
    }
    // The extract's summary: its first line and what it says of the rt-app file (its per-task
    // table is in replay/extract.log).
    let extract = fs::read_to_string(dir.join("extract.log")).unwrap_or_default();
    for (i, l) in extract.lines().enumerate() {
        if i == 0 || l.contains("rt-app") || l.contains("reproduced") {
            f.line(format!("    extract: {}", l.trim()));
        }
    }
    let (orig, replay, diff) = match (
        read_json(&dir.join("orig_report.json")),
        read_json(&dir.join("replay_report.json")),
        read_json(&dir.join("diff.json")),
    ) {
        (Ok(o), Ok(r), Ok(d)) => (o, r, d),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
            return f.fail(format!("replay: {e:#}"));
        }
    };
    let wakeups = |r: &Value| figure(r, "placement.wakeups.count").unwrap_or(0.0);
    let (n_orig, n_replay) = (wakeups(&orig), wakeups(&replay));
    f.line(format!(
        "    {:<28} {:>9} {:>9} {:>8}",
        "placement (in scope)", "original", "replay", "diff"
    ));
    f.line(format!(
        "    {:<28} {n_orig:>9.0} {n_replay:>9.0} {:>+7.1}%",
        "wakeups",
        if n_orig > 0.0 {
            (n_replay - n_orig) / n_orig * 100.0
        } else {
            f64::NAN
        }
    ));
    let mut flagged = Vec::new();
    let mut disagree = Vec::new();
    let mut rows = 0;
    for side in ["vs_waker", "vs_prev"] {
        for level in levels([&orig, &replay], side) {
            let name = format!("placement.{side}.{level}.share");
            let (a, b) = (figure(&orig, &name), figure(&replay, &name));
            if a.is_none() && b.is_none() {
                continue;
            }
            rows += 1;
            let d = a.zip(b).map(|(a, b)| b - a);
            let flag = d.is_some_and(|d| d.abs() > FLAG_PT);
            if flag {
                flagged.push(format!("{side}.{level}"));
            }
            if let (Some(d), Some(c)) = (d, diff_change(&diff, &name))
                && (d - c).abs() > 0.01
            {
                disagree.push(format!("{side}.{level} (diff {c:+.2}, reports {d:+.2})"));
            }
            f.line(format!(
                "    {:<28} {:>8}% {:>8}% {:>6}pt{}",
                format!("{side}.{level}"),
                cell(a, 1),
                cell(b, 1),
                // Rounded first, so that a change below the last digit shows as +0.0.
                d.map_or_else(
                    || "n/a".into(),
                    |d| format!("{:+.1}", (d * 10.0).round() / 10.0 + 0.0)
                ),
                if flag {
                    format!("  <- |diff| > {FLAG_PT} pt")
                } else {
                    String::new()
                }
            ));
        }
    }
    f.line(format!(
        "    {} of {rows} placement shares more than {FLAG_PT} pt apart{}",
        flagged.len(),
        if flagged.is_empty() {
            String::new()
        } else {
            format!(": {}", flagged.join(", "))
        }
    ));
    if disagree.is_empty() {
        f.line("    the guest's `wakeviz diff --report json` gives the same changes");
    } else {
        f.line(format!(
            "    the guest's `wakeviz diff --report json` differs from the two reports on: {}",
            disagree.join("; ")
        ));
    }
    if n_orig <= 0.0 {
        f.fail("replay: the original recording has no in-scope wakeups");
    }
    if n_replay <= 0.0 {
        f.fail("replay: the rt-app recording has no in-scope wakeups");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_in_order() {
        let r = serde_json::json!({"figures": {
            "placement.vs_waker.cross_llc.share": {"value": 1.0},
            "placement.vs_waker.same_cpu.share": {"value": 1.0},
            "placement.vs_waker.same_cpu.count": {"value": 1.0},
            "placement.vs_waker.new_level.share": {"value": 1.0},
            "placement.vs_waker.smt_sibling.share": {"value": null},
            "placement.vs_prev.same_llc.share": {"value": 1.0},
        }});
        assert_eq!(
            levels([&r, &r], "vs_waker"),
            ["same_cpu", "smt_sibling", "cross_llc", "new_level"]
        );
    }

    #[test]
    fn step_times() {
        let t = times("orig 10.0 15.5\nextract 15.5 16.0\nbad line\n").expect("times");
        assert_eq!(t, "6.0 s (orig 5.5, extract 0.5 s)");
        assert!(times("").is_none());
    }

    #[test]
    fn first_failed_step() {
        let dir = std::env::temp_dir().join(format!("wvz-replay-{}", std::process::id()));
        fs::create_dir_all(&dir).expect("temp dir");
        let w = |n: &str, s: &str| fs::write(dir.join(n), s).expect("write");
        assert!(failed_step(&dir).is_some_and(|m| m.contains("no rt-app")));
        w("rt-app.path", "/bin/rt-app\n");
        w("orig.rc", "0\n");
        w("extract.rc", "1\n");
        w("extract.log", "wakeviz: no such file\n");
        let m = failed_step(&dir).unwrap_or_default();
        assert!(
            m.contains("extract: exit 1") && m.contains("no such file"),
            "{m}"
        );
        for s in STEPS {
            w(&format!("{}.rc", s.0), "0");
        }
        assert_eq!(failed_step(&dir), None);
        let _ = fs::remove_dir_all(&dir);
    }
}
