//! The idle scan in the guest: what wakeviz's debug-info probes measured against the kernel's
//! own kprobe events at the same addresses (`xtask/vm/scenario.sh` sets them up), and what the
//! report and the shadow's scan model made of it.
use std::{path::Path, process::Command};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::check::{Findings, PREFIX, Stream, scan_source};

/// The idle scan as wakeviz's debug-info probes measured it, against the kernel's own kprobe
/// events at the same addresses in the same window (both counted while a workload task is the
/// waker): scans and idle tests must agree within 0.5 %.
pub fn check(f: &mut Findings, wakeviz: &Path, wvz: &Path, truth: &Stream, report: Option<&Value>) {
    let source = report.and_then(scan_source).unwrap_or_default();
    let measured = source.contains("debug-info probes");
    if truth.scan_hits.is_empty() && !measured {
        f.line(format!("  scan probes: not used (scan source {source})"));
        return;
    }
    if !measured {
        f.fail(format!(
            "scan probes: the guest had scan points but wakeviz's scan source is {source:?}"
        ));
        return;
    }
    let renamed = truth.renamed();
    let ours = match measured_scans(wakeviz, wvz, &renamed) {
        Ok(c) => c,
        Err(e) => {
            f.fail(format!("scan probes: {e:#}"));
            return;
        }
    };
    let kernel = |r: &str| -> u64 {
        truth
            .scan_hits
            .iter()
            .filter(|((role, pid), _)| role == r && !renamed.contains(pid))
            .map(|(_, n)| n)
            .sum()
    };
    for (what, w, k) in [
        ("scans", ours.1, kernel("scan_entry")),
        (
            "idle tests",
            ours.2,
            kernel("idle_test") + kernel("idle_core"),
        ),
    ] {
        let off = w.abs_diff(k) as f64 / k.max(1) as f64 * 100.0;
        let line = format!(
            "  scan probes: {what} by workload wakers (pids the trace also names otherwise left out: {}): wakeviz {w}, tracefs kprobe events {k} ({off:.2} % apart; {} placements watched)",
            renamed.len(),
            ours.0
        );
        // Scans always happen under the scan load; idle tests need an idle CPU in the LLC's
        // budget, which a small guest whose CPUs all run hogs may never give (SIS_UTIL cuts
        // every scan before its first test): none on either side is agreement there, and the
        // other guests check the count.
        let untested = what == "idle tests" && w == 0 && ours.1 > 0;
        if (k == 0 && !untested) || off > 0.5 {
            f.fail(line);
        } else {
            f.line(line);
        }
    }
    if let Some(m) = report.and_then(|r| r.pointer("/scan_latency/measured")) {
        let n = |k: &str| m.get(k).and_then(Value::as_u64).unwrap_or(0);
        f.line(format!(
            "  scan probes, all wakers: {} placements watched, {} scans, {} idle tests, {} scans searched for an idle core, scans by tests made {}",
            n("calls"),
            n("scans"),
            n("cpus_tested"),
            n("core_scans"),
            m.get("by_cpus_tested").map_or_else(String::new, Value::to_string)
        ));
    }
    if let Some(m) = report.and_then(|r| r.pointer("/shadow/scan_model")) {
        f.line(format!("  scan model vs measured: {m}"));
    }
}

/// `f` on every record of `wvz` as `--dump jsonl --include-self` writes it (wakeviz's own
/// threads too: the guest's checks count by the kernel's names, not by the recording's scope).
pub(super) fn each_record(wakeviz: &Path, wvz: &Path, mut f: impl FnMut(&Value)) -> Result<()> {
    let out = Command::new(wakeviz)
        .arg("--replay")
        .arg(wvz)
        .args(["--dump", "jsonl", "--include-self"])
        .output()
        .with_context(|| format!("running {} --replay --dump jsonl", wakeviz.display()))?;
    if !out.status.success() {
        bail!(
            "wakeviz --replay --dump failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if let Ok(v) = serde_json::from_str::<Value>(line) {
            f(&v);
        }
    }
    Ok(())
}

/// (placements watched, scans, idle tests) of the recording's select records whose waker was a
/// workload task at the time (its name then, as the tracefs filter sees `comm`) and never
/// named otherwise in the trace (`renamed`).
fn measured_scans(
    wakeviz: &Path,
    wvz: &Path,
    renamed: &std::collections::HashSet<u32>,
) -> Result<(u64, u64, u64)> {
    let mut c = (0, 0, 0);
    each_record(wakeviz, wvz, |v| {
        // Null when the scan probes did not watch the call.
        let Some(ran) = v.get("scan_ran").and_then(Value::as_bool) else {
            return;
        };
        let workload = v
            .get("waker_comm")
            .and_then(Value::as_str)
            .is_some_and(|c| c.starts_with(PREFIX));
        let pid = v.get("waker_pid").and_then(Value::as_u64).unwrap_or(0);
        if !workload || u32::try_from(pid).is_ok_and(|p| renamed.contains(&p)) {
            return;
        }
        c.0 += 1;
        if ran {
            c.1 += 1;
            c.2 += v
                .get("scan_idle_tests")
                .and_then(Value::as_u64)
                .unwrap_or(0);
        }
    })?;
    Ok(c)
}
