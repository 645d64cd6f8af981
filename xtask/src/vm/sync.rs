//! `WF_SYNC` read from the waker's stack at `sched_waking` (the tracepoint-only `msg_tp` run)
//! against the kernel's own wake flags: a tracefs kprobe event at `select_task_rq_fair`'s entry,
//! counted by value in a histogram while a workload task is the waker (`xtask/vm/scenario.sh`,
//! `sync_count_on`).
use std::path::Path;

use anyhow::Result;
use serde_json::Value;
use wakeviz_core::event::wf;

use super::check::{Findings, PREFIX};

/// How far apart the two sync shares may be. The sets differ a little: the probe also reads the
/// wake-ups of a task still on its run queue (`ttwu_runnable`), which never reach
/// `select_task_rq_fair`.
const SHARE_PT: f64 = 1.0;

const WF_TTWU: u64 = wf::TTWU as u64;
const WF_SYNC: u64 = wf::SYNC as u64;
const AT_WAKING: u64 = wf::AT_WAKING as u64;
const FROM_STACK: u64 = wf::FROM_STACK as u64;

/// (wake-ups, sync ones) in a tracefs `hist` file keyed by `wake_flags`: the try-to-wake-up
/// calls (`WF_TTWU`) only, not forks and execs.
pub fn kernel_counts(hist: &str) -> Option<(u64, u64)> {
    let mut seen = false;
    let (mut all, mut sync) = (0, 0);
    for line in hist.lines() {
        let Some(rest) = line.trim().strip_prefix("{ wake_flags:") else {
            continue;
        };
        let (key, n) = rest.split_once('}')?;
        // The histogram prints a numeric key in decimal whatever the field's print type.
        let key = key.trim();
        let flags = match key.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16).ok()?,
            None => key.parse().ok()?,
        };
        let n: u64 = n.trim().strip_prefix("hitcount:")?.trim().parse().ok()?;
        seen = true;
        if flags & WF_TTWU != 0 {
            all += n;
            if flags & WF_SYNC != 0 {
                sync += n;
            }
        }
    }
    seen.then_some((all, sync))
}

/// (wake-ups, sync ones) of the recording's at-waking records whose flags came from the stack
/// and whose waker was a workload task.
fn ours(wakeviz: &Path, wvz: &Path) -> Result<(u64, u64)> {
    let (mut all, mut sync) = (0, 0);
    super::scan::each_record(wakeviz, wvz, |v| {
        let flags = v.get("wake_flags").and_then(Value::as_u64).unwrap_or(0);
        let workload = v
            .get("waker_comm")
            .and_then(Value::as_str)
            .is_some_and(|c| c.starts_with(PREFIX));
        if workload && flags & AT_WAKING != 0 && flags & FROM_STACK != 0 {
            all += 1;
            sync += u64::from(flags & WF_SYNC != 0);
        }
    })?;
    Ok((all, sync))
}

/// The sync shares of both must agree within [`SHARE_PT`].
pub fn check(f: &mut Findings, wakeviz: &Path, results: &Path) {
    let hist = std::fs::read_to_string(results.join("msg_tp_sync.txt")).unwrap_or_default();
    let Some((k_all, k_sync)) = kernel_counts(&hist) else {
        f.fail("msg_tp: no select_task_rq_fair wake-flags histogram from the guest");
        return;
    };
    let (w_all, w_sync) = match ours(wakeviz, &results.join("msg_tp.wvz")) {
        Ok(c) => c,
        Err(e) => {
            f.fail(format!("msg_tp WF_SYNC: {e:#}"));
            return;
        }
    };
    let share = |s: u64, a: u64| s as f64 * 100.0 / a.max(1) as f64;
    let (k, w) = (share(k_sync, k_all), share(w_sync, w_all));
    let line = format!(
        "  WF_SYNC at sched_waking (msg_tp, workload wakers): from the waker's stack {w_sync} of {w_all} ({w:.2} %), kernel's select_task_rq_fair wake_flags {k_sync} of {k_all} ({k:.2} %)"
    );
    if w_all == 0 || k_all == 0 || (w - k).abs() > SHARE_PT {
        f.fail(format!("{line}: want within {SHARE_PT} pt"));
    } else {
        f.line(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_histogram_counts_wakeups_by_their_flags() {
        let hist = "\
# event histogram
#
# trigger info: hist:keys=wake_flags:vals=hitcount:sort=hitcount:size=2048 if comm ~ \"wvz-*\" [active]
#

{ wake_flags:          4 } hitcount:          8
{ wake_flags:          8 } hitcount:         12
{ wake_flags:         24 } hitcount:       4021

Totals:
    Hits: 4041
";
        assert_eq!(kernel_counts(hist), Some((4033, 4021)));
        assert_eq!(
            kernel_counts("{ wake_flags:       0x18 } hitcount:          3\n"),
            Some((3, 3))
        );
        assert_eq!(kernel_counts("# nothing\n"), None);
    }
}
