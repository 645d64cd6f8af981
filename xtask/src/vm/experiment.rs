//! The experiment features on a real kernel: the live schedstat cross-check, `--sched-feature` set
//! and restore, and `wakeviz experiment` default vs NO_SIS_UTIL with its prediction table. The
//! guest side is `xtask/vm/experiment.sh` (results under `<results>/exp`).
use std::{fs, path::Path};

use serde_json::Value;

use super::check::{self, Findings};

/// Bound on wakeviz's wakeup counts vs the kernel's: "within 1 %", the promise the docs make.
const SCHEDSTAT_PCT: f64 = 1.0;
/// Per CPU, a difference of this many wakeups is allowed however few the CPU made: a wakeup
/// at either edge of the window (its sched_wakeup and the kernel's ttwu_stat() are a few
/// hundred ns apart) falls on one side or the other; 3 of a CPU's 223 local wakeups differed
/// once in four runs.
const PER_CPU_SLACK: u64 = 3;

fn read(p: &Path) -> Option<String> {
    fs::read_to_string(p).ok()
}

fn trimmed(p: &Path) -> String {
    read(p).unwrap_or_default().trim().to_string()
}

fn sis_util(features: &str) -> Option<&str> {
    features
        .split_whitespace()
        .find(|t| *t == "SIS_UTIL" || *t == "NO_SIS_UTIL")
}

fn pct(a: u64, k: u64) -> Option<f64> {
    (k > 0).then(|| (a as f64 - k as f64) / k as f64 * 100.0)
}

/// The `schedstat` section of the guest's live `--report json` (main run), and the sysctl
/// read in the guest after that run.
pub fn schedstat(f: &mut Findings, report: Option<&Value>, results: &Path) {
    let Some(s) = report
        .and_then(|r| r.get("schedstat"))
        .filter(|s| !s.is_null())
    else {
        f.fail("the live report has no schedstat section (CONFIG_SCHEDSTATS guest)");
        return;
    };
    let boot = report
        .and_then(|r| r.pointer("/recording/run/sysctls"))
        .and_then(Value::as_array)
        .and_then(|v| {
            v.iter()
                .find(|kv| kv.get(0).and_then(Value::as_str) == Some("kernel.sched_schedstats"))
        })
        .and_then(|kv| kv.get(1).and_then(Value::as_str))
        .unwrap_or("?")
        .to_string();
    let after = trimmed(&results.join("exp/schedstats_after_main.txt"));
    f.line(format!(
        "  schedstat v{} over {} jiffies (kernel.sched_schedstats {boot} before the run, {after} \
         after it):",
        s.get("version").unwrap_or(&Value::Null),
        s.get("interval_jiffies").unwrap_or(&Value::Null)
    ));
    let rows = s
        .get("rows")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let num = |r: &Value, k: &str| r.get(k).and_then(Value::as_u64).unwrap_or(0);
    let mut kernel_total = 0;
    for r in &rows {
        let (dom, ctr) = (
            r.get("domain").and_then(Value::as_str).unwrap_or("?"),
            r.get("counter").and_then(Value::as_str).unwrap_or("?"),
        );
        let (k, w) = (num(r, "kernel"), num(r, "wakeviz"));
        let d = pct(w, k).map_or("-".into(), |p| format!("{p:+.2}%"));
        let note = if r.get("comparable") == Some(&Value::Bool(false)) {
            " (not observable)"
        } else {
            ""
        };
        f.line(format!(
            "    {dom:<5} {ctr:<17} kernel {k:>7} wakeviz {w:>7} {d:>8}{note}"
        ));
        if dom == "cpu" {
            if ctr == "ttwu_count" {
                kernel_total = k;
            }
            match pct(w, k) {
                Some(p) if p.abs() <= SCHEDSTAT_PCT => {}
                _ => f.fail(format!(
                    "schedstat {ctr}: wakeviz {w} vs kernel {k}, over {SCHEDSTAT_PCT}%"
                )),
            }
        }
    }
    if kernel_total == 0 {
        f.fail("schedstat: the kernel counted no wakeups (kernel.sched_schedstats never on?)");
    }
    if after != "0" || boot != "0" {
        f.fail(format!(
            "kernel.sched_schedstats was {boot} before and {after} after the run (0 and 0 expected: \
             wakeviz switches it on for the run only)"
        ));
    }
    per_cpu(f, s);
}

/// Per CPU: within 1 % or [`PER_CPU_SLACK`] wakeups, whichever is larger; every CPU that
/// differs at all is printed.
fn per_cpu(f: &mut Findings, s: &Value) {
    let Some(rows) = s.get("per_cpu").and_then(Value::as_array) else {
        f.fail("schedstat: no per_cpu rows in the report");
        return;
    };
    let num = |r: &Value, k: &str| r.get(k).and_then(Value::as_u64).unwrap_or(0);
    let (mut off, mut exact) = (Vec::new(), 0);
    for r in rows {
        let cpu = num(r, "cpu");
        for (k, w, what) in [
            (num(r, "ttwu_count"), num(r, "wakeviz_count"), "ttwu_count"),
            (num(r, "ttwu_local"), num(r, "wakeviz_local"), "ttwu_local"),
        ] {
            if k == w {
                exact += 1;
                continue;
            }
            off.push(format!("cpu{cpu} {what} wakeviz {w} kernel {k}"));
            let bound = ((k as f64 * SCHEDSTAT_PCT / 100.0).ceil() as u64).max(PER_CPU_SLACK);
            if k.abs_diff(w) > bound {
                f.fail(format!(
                    "schedstat cpu{cpu} {what}: wakeviz {w} vs kernel {k}, over {SCHEDSTAT_PCT}% \
                     and {PER_CPU_SLACK} wakeups"
                ));
            }
        }
    }
    f.line(format!(
        "    per CPU ({} CPUs): {exact} counters equal{}",
        rows.len(),
        if off.is_empty() {
            String::new()
        } else {
            format!("; differ: {}", off.join(", "))
        }
    ));
}

/// `--sched-feature NO_SIS_UTIL`: before, during (from CMD), after; metadata; a bad name.
pub fn features(f: &mut Findings, wakeviz: &Path, results: &Path) -> bool {
    let exp = results.join("exp");
    if let Some(why) = read(&exp.join("skipped.txt")) {
        f.fail(format!(
            "experiment runs skipped in the guest: {}",
            why.trim()
        ));
        return false;
    }
    let before = read(&exp.join("features_before.txt")).unwrap_or_default();
    let during = read(&exp.join("features_during.txt")).unwrap_or_default();
    let after = read(&exp.join("features_after.txt")).unwrap_or_default();
    let rc = trimmed(&exp.join("feature.rc"));
    f.line(format!(
        "  --sched-feature NO_SIS_UTIL -- CMD: exit {rc}; features file before {}, during {}, \
         after {}",
        sis_util(&before).unwrap_or("?"),
        sis_util(&during).unwrap_or("?"),
        sis_util(&after).unwrap_or("?")
    ));
    if rc != "0" {
        f.fail(format!(
            "wakeviz --sched-feature NO_SIS_UTIL exited {rc}: {}",
            trimmed(&exp.join("feature.stderr"))
        ));
    }
    if sis_util(&before) != Some("SIS_UTIL") {
        f.fail("the guest's features file did not say SIS_UTIL at the start");
    }
    if sis_util(&during) != Some("NO_SIS_UTIL") {
        f.fail("CMD did not see NO_SIS_UTIL in the features file while it ran");
    }
    if before.trim().is_empty() || after != before {
        f.fail(format!(
            "features file not restored after the run:\nbefore {before}\nafter  {after}"
        ));
    }
    match check::replay_report(wakeviz, &exp.join("feature.wvz")) {
        Ok(r) => {
            let run = r.pointer("/recording/run").cloned().unwrap_or(Value::Null);
            let lists = |k: &str| {
                run.get(k)
                    .and_then(Value::as_array)
                    .is_some_and(|v| v.iter().any(|x| x.as_str() == Some("NO_SIS_UTIL")))
            };
            if lists("sched_features") && lists("sched_feature_overrides") {
                f.line(
                    "  feature.wvz recording.run: sched_features and sched_feature_overrides list \
                     NO_SIS_UTIL",
                );
            } else {
                f.fail(format!(
                    "feature.wvz's recording.run does not list NO_SIS_UTIL in both \
                     sched_features and sched_feature_overrides: {run}"
                ));
            }
        }
        Err(e) => f.fail(format!("{e:#}")),
    }
    let bad_rc = trimmed(&exp.join("bad.rc"));
    let bad_err = trimmed(&exp.join("bad.stderr"));
    let bad_after = read(&exp.join("features_after_bad.txt")).unwrap_or_default();
    f.line(format!(
        "  --sched-feature NO_SUCH_FEATURE: exit {bad_rc}, stderr {bad_err:?}"
    ));
    if bad_rc != "1" || bad_err.lines().count() != 1 {
        f.fail("a bad feature name must be exit 1 with a one-line error");
    }
    if bad_after != before {
        f.fail("a bad feature name changed the features file");
    }
    if exp.join("bad_recording.txt").exists() {
        f.fail("a bad feature name left a recording behind");
    }
    true
}

/// Signals on the real debugfs: every catchable one restores the features file, ends CMD and
/// finalises the recording; after SIGKILL the next run refuses (5) naming the leftover, and
/// `--restore-leftovers` puts the file back.
pub fn signals(f: &mut Findings, results: &Path) {
    let s = results.join("exp").join("sig");
    let before = read(&results.join("exp").join("features_before.txt")).unwrap_or_default();
    if !s.is_dir() {
        f.fail("the guest ran no signal cases (no exp/sig)");
        return;
    }
    for sig in ["USR1", "ALRM", "QUIT", "XFSZ", "TERM"] {
        let at = |ext: &str| s.join(format!("{sig}.{ext}"));
        let (rc, replay) = (trimmed(&at("rc")), trimmed(&at("replay.rc")));
        let cmd = trimmed(&at("cmd_state"));
        let during = read(&at("during")).unwrap_or_default();
        let after = read(&at("after")).unwrap_or_default();
        let stderr = trimmed(&at("stderr"));
        f.line(format!(
            "  SIG{sig} mid-run: wakeviz exit {rc}, features during {} after {}, CMD {cmd}, replay exit {replay}",
            sis_util(&during).unwrap_or("?"),
            sis_util(&after).unwrap_or("?")
        ));
        if sis_util(&during) != Some("NO_SIS_UTIL") {
            f.fail(format!("SIG{sig}: the run never set NO_SIS_UTIL: {stderr}"));
        }
        if before.trim().is_empty() || after != before {
            f.fail(format!("SIG{sig}: features file not restored: {stderr}"));
        }
        if cmd != "dead" {
            f.fail(format!("SIG{sig}: CMD outlived wakeviz ({cmd})"));
        }
        if replay != "0" {
            f.fail(format!(
                "SIG{sig}: the recording does not replay cleanly (exit {replay}): {}",
                trimmed(&at("replay.stderr"))
            ));
        }
        // TERM is passed on to CMD, whose end then stops the run; the others stop it directly.
        let says = if sig == "TERM" {
            "killed by signal 15".to_string()
        } else {
            format!("stopped by SIG{sig}")
        };
        if !stderr.contains(&says) || !stderr.contains("scheduler features restored") {
            f.fail(format!(
                "SIG{sig}: no '{says}' and 'scheduler features restored' lines: {stderr}"
            ));
        }
    }
    let killed_after = read(&s.join("KILL.after")).unwrap_or_default();
    let next_rc = trimmed(&s.join("next.rc"));
    let next_err = trimmed(&s.join("next.stderr"));
    let restore_rc = trimmed(&s.join("restore.rc"));
    let restored = read(&s.join("restore.after")).unwrap_or_default();
    f.line(format!(
        "  SIGKILL mid-run: features left {}, CMD {}; next run exit {next_rc}; --restore-leftovers exit {restore_rc}, features {}",
        sis_util(&killed_after).unwrap_or("?"),
        trimmed(&s.join("KILL.cmd_state")),
        sis_util(&restored).unwrap_or("?")
    ));
    if sis_util(&killed_after) != Some("NO_SIS_UTIL") {
        f.fail("SIGKILL: the feature was not left changed, so the case tested nothing");
    }
    if trimmed(&s.join("KILL.cmd_state")) != "dead" {
        f.fail("SIGKILL: CMD outlived wakeviz (no parent-death signal)");
    }
    if next_rc != "5" || !next_err.contains("NO_SIS_UTIL (was SIS_UTIL)") {
        f.fail(format!(
            "after SIGKILL the next run must refuse with 5 naming the leftover: exit {next_rc}: {next_err}"
        ));
    }
    if read(&s.join("next.after")).unwrap_or_default() != killed_after {
        f.fail("the refused run changed the features file");
    }
    if restore_rc != "0" || restored != before {
        f.fail(format!(
            "--restore-leftovers did not put the features file back (exit {restore_rc}): {}",
            trimmed(&s.join("restore.stderr"))
        ));
    }
}

/// Runs of each setting, from the spec's "groups:receivers:loops[:hogs[:ack[:runs]]]".
pub fn runs_of(spec: &str) -> usize {
    spec.split(':')
        .nth(5)
        .and_then(|r| r.parse().ok())
        .filter(|&r| r > 0)
        .unwrap_or(3)
}

/// `--exp-setting`: the `NO_X` of a feature name (upper case, digits, `_`).
pub fn parse_setting(s: &str) -> Result<String, String> {
    match s.strip_prefix("NO_") {
        Some(x)
            if !x.is_empty()
                && x.bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_') =>
        {
            Ok(s.to_string())
        }
        _ => Err(format!(
            "{s:?}: want NO_<FEATURE>, such as NO_SIS_UTIL or NO_WA_IDLE"
        )),
    }
}

/// `wakeviz experiment --setting default --setting SETTING --runs N` (`SETTING` = `NO_X`):
/// mechanics asserted (features restored, runs alternated, prediction table complete);
/// figures printed.
pub fn experiment(f: &mut Findings, wakeviz: &Path, results: &Path, runs: usize, setting: &str) {
    let feature = setting.strip_prefix("NO_").unwrap_or(setting);
    let exp = results.join("exp");
    let rc = trimmed(&exp.join("experiment.rc"));
    f.line(format!(
        "  wakeviz experiment default vs {setting}, {runs} runs each: exit {rc}"
    ));
    if rc != "0" {
        f.fail(format!(
            "wakeviz experiment exited {rc}: {}",
            trimmed(&exp.join("experiment.stderr"))
        ));
        return;
    }
    let before = read(&exp.join("features_before.txt")).unwrap_or_default();
    if read(&exp.join("features_after_experiment.txt")).unwrap_or_default() != before {
        f.fail("the features file differs after the experiment from before it");
    }
    let seen: Vec<String> = read(&exp.join("during_runs.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    // The settings in the order the guest's CMD saw them, one line per run.
    let order = [feature, setting].repeat(runs);
    if seen == order {
        f.line(format!(
            "  runs alternated: the kernel had {feature}, {setting}, ... ({} runs, read by CMD)",
            2 * runs
        ));
    } else {
        f.fail(format!(
            "the kernel's {feature} setting per run, read by CMD: {seen:?}, expected {order:?}"
        ));
    }
    let Some(j) = read(&exp.join("runs/experiment.json"))
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
    else {
        f.fail("wakeviz experiment wrote no valid runs/experiment.json");
        return;
    };
    runs_in_order(f, &j, runs, setting);
    measured(f, wakeviz, &exp.join("runs"), runs, setting);
    scan_rows(f, &j, setting);
    predictions(f, &j, ("default", setting), true);
    predictions(f, &j, (setting, "default"), false);
}

/// experiment.json's `order`: each run names its setting; they must alternate.
fn runs_in_order(f: &mut Findings, j: &Value, runs: usize, setting: &str) {
    let settings: Vec<String> = order(j)
        .iter()
        .map(|r| {
            r.get("setting")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_string()
        })
        .collect();
    let want = ["default", setting].repeat(runs);
    if settings == want {
        f.line(format!(
            "  experiment.json order: default, {setting}, ... alternated"
        ));
    } else {
        f.fail(format!(
            "experiment.json order {settings:?}, expected {want:?}"
        ));
    }
}

fn order(j: &Value) -> Vec<Value> {
    j.get("order")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Measured scan cost per wakeup of each setting, from each run's replay.
fn measured(f: &mut Findings, wakeviz: &Path, dir: &Path, runs: usize, flipped: &str) {
    for setting in ["default", flipped] {
        let mut cells = Vec::new();
        for i in 1..=runs {
            let p = dir.join(format!("{setting}-{i}.wvz"));
            match check::replay_report(wakeviz, &p) {
                Ok(r) => {
                    let o = r.pointer("/scan_latency/overall");
                    let g = |k: &str| o.and_then(|o| o.get(k)).and_then(Value::as_f64);
                    let wakeups = r
                        .pointer("/placement/wakeups/count")
                        .and_then(Value::as_u64)
                        .unwrap_or(0);
                    cells.push(format!(
                        "{wakeups} wakeups, scan mean {:.1} p50 {:.1} us",
                        g("mean").unwrap_or(f64::NAN) / 1e3,
                        g("p50").unwrap_or(f64::NAN) / 1e3
                    ));
                }
                Err(e) => f.fail(format!("{e:#}")),
            }
        }
        f.line(format!("    measured {setting:<11}: {}", cells.join("; ")));
    }
}

/// The experiment's own diff of the overall scan figures (default first): means, change,
/// Welch's p and whether the change is significant. Printed, not asserted: under TCG the
/// scan is a few microseconds inside a select_task_rq_fair of tens.
fn scan_rows(f: &mut Findings, j: &Value, setting: &str) {
    let rows = j
        .pointer("/diff/rows")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut any = false;
    for r in &rows {
        let name = r.get("name").and_then(Value::as_str).unwrap_or("");
        if !name.starts_with("scan.") || name.starts_with("scan.llc") {
            continue;
        }
        any = true;
        let cells = r
            .get("groups")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let g = |c: &Value, k: &str| c.get(k).and_then(Value::as_f64);
        // The measured scan's shares and depths are small numbers; the latencies are ns.
        let digits = if name.starts_with("scan.measured") {
            2
        } else {
            0
        };
        let txt: Vec<String> = cells
            .iter()
            .map(|c| {
                format!(
                    "{:.digits$}±{:.digits$}",
                    g(c, "mean").unwrap_or(f64::NAN),
                    g(c, "sd").unwrap_or(f64::NAN)
                )
            })
            .collect();
        let last = cells.last();
        f.line(format!(
            "    diff {name:<27} default -> {setting}: {} (change {:+.1}%, p {}{})",
            txt.join(" -> "),
            last.and_then(|c| g(c, "change_pct")).unwrap_or(f64::NAN),
            last.and_then(|c| g(c, "p_value"))
                .map_or("-".into(), |p| format!("{p:.3}")),
            if last.and_then(|c| c.get("significant")) == Some(&Value::Bool(true)) {
                ", significant"
            } else {
                ", not significant"
            }
        ));
    }
    if !any {
        f.fail("the experiment's diff has no scan rows (scan latency unavailable?)");
    }
}

/// Whether the prediction figure `name` (`vs_waker.same_package.share`) is of a level the
/// topology cannot have: the diff's count of that level is n/a in every group.
fn absent_level(j: &Value, name: &str) -> bool {
    let mut parts = name.split('.');
    let (Some(rel @ ("vs_waker" | "vs_prev")), Some(level)) = (parts.next(), parts.next()) else {
        return false;
    };
    let count = format!("placement.{rel}.{level}.count");
    j.pointer("/diff/rows")
        .and_then(Value::as_array)
        .and_then(|rows| {
            rows.iter()
                .find(|r| r.get("name").and_then(Value::as_str) == Some(&count))
        })
        .and_then(|r| r.get("groups").and_then(Value::as_array))
        .is_some_and(|g| {
            !g.is_empty() && g.iter().all(|c| c.get("mean").is_none_or(Value::is_null))
        })
}

/// The prediction table of `from -> to`: every figure with predicted, measured and error
/// present; the rows go into the summary (the figures are whatever they are). `required`:
/// a missing table is a failure, else only said.
fn predictions(f: &mut Findings, j: &Value, (from, to): (&str, &str), required: bool) {
    let all = j
        .pointer("/diff/predictions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let Some(p) = all.iter().find(|p| {
        p.get("baseline").and_then(Value::as_str) == Some(from)
            && p.get("target").and_then(Value::as_str) == Some(to)
    }) else {
        let msg = format!(
            "experiment.json diff.predictions has no {from} -> {to} prediction: {}",
            compact(&Value::Array(all))
        );
        if required {
            f.fail(msg);
        } else {
            f.line(format!("  {msg}"));
        }
        return;
    };
    let s = |k: &str| p.get(k).map_or("?".into(), |v| v.to_string());
    f.line(format!(
        "  prediction {from} -> {to} (policy {}, error split against {} on {to}, {} + {} runs): \
         predicted, measured, error (points for shares), its 95 % half-width, cause",
        s("policy"),
        s("target_policy"),
        s("baseline_runs"),
        s("target_runs")
    ));
    let figures = p
        .get("figures")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if figures.is_empty() {
        f.fail(format!("the {from} -> {to} prediction has no figures"));
    }
    let mut missing = Vec::new();
    for fig in &figures {
        let g = |k: &str| fig.get(k).and_then(Value::as_f64);
        let name = fig.get("name").and_then(Value::as_str).unwrap_or("?");
        let src = match fig.get("measured_source") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Object(m)) => m.keys().cloned().collect::<Vec<_>>().join(","),
            _ => "?".into(),
        };
        let cause = match fig.get("resolved").and_then(Value::as_bool) {
            Some(false) => "not resolved",
            _ => fig.get("cause").and_then(Value::as_str).unwrap_or("-"),
        };
        let v = |x: Option<f64>| x.map_or("n/a".into(), |x| format!("{x:.2}"));
        f.line(format!(
            "    {name:<28} {:>10} {:>10} {:>9} +-{:<8} {cause:<13} ({src})",
            v(g("predicted")),
            v(g("measured")),
            v(g("error")),
            v(g("error_ci95"))
        ));
        // Three runs a side: every error that exists has its interval.
        if g("error").is_some() && g("error_ci95").is_none() {
            missing.push(format!("{name} (interval)"));
        }
        let none = g("predicted").is_none() && g("measured").is_none() && g("error").is_none();
        if absent_level(j, name) {
            // A level the guest's topology cannot have is n/a on every side, never 0.
            if !none {
                f.fail(format!(
                    "{name}: a level this topology cannot have has values"
                ));
            }
        } else if g("predicted").is_none() || g("measured").is_none() || g("error").is_none() {
            missing.push(name.to_string());
        }
    }
    if !missing.is_empty() {
        f.fail(format!(
            "prediction table incomplete: no predicted/measured/error for {}",
            missing.join(", ")
        ));
    }
}

fn compact(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 400 {
        format!("{}...", &s[..400])
    } else {
        s
    }
}
