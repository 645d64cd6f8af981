//! The noisy-neighbour check: the SMT ping-pong recorded [`RUNS`] times alone and as often
//! beside an unrelated ping-pong on the cross-package pair (`xtask/vm/scenario.sh`,
//! `noisy_runs`). Unscoped, `wakeviz diff` measures the neighbour: a placement figure moves
//! beyond the runs' noise and a gate on it holds. Scoped to the command's tree (what the
//! recordings carry), the diff measures the benchmark alone: no placement share is marked and
//! the same gate does not hold. Shares are what the neighbour's wakeups, counted as the
//! benchmark's, would move. Counts and rates are reported but not judged there: the neighbour
//! really changes how the benchmark runs. On this host (16 vCPUs on a few CPUs) its CPU time
//! slows the benchmark (longer runs, so lower rates) and can move the count of the benchmark's
//! own wakeups by a few in a thousand, which a few runs a side can mark; and the fork
//! balancer (`find_idlest_cpu`) places the benchmark's new threads (`placement.new_tasks.*`)
//! before they pin themselves, seeing the neighbour's load. Those are the neighbour's effects
//! on the benchmark, not its wakeups counted as the benchmark's.
use std::path::Path;

use serde_json::Value;

use super::check::Findings;

const GATE: &str = "placement.vs_waker.cross_package.share > +1pt significant";

/// Runs a side. With three, the neighbour's share (about 38 % of the wakeups, a few points apart
/// run to run under TCG) gives p near 0.004, at the edge of the diff's Benjamini-Hochberg
/// threshold over its dozen placement figures.
const RUNS: usize = 4;

/// The placement rows whose change the diff marks as beyond the noise.
fn marked(report: &Value) -> Vec<String> {
    report["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["section"] == "placement")
        .filter(|r| {
            r["groups"]
                .as_array()
                .is_some_and(|g| g.iter().any(|x| x["significant"] == true))
        })
        .filter_map(|r| r["name"].as_str().map(String::from))
        .collect()
}

pub fn check(f: &mut Findings, wakeviz: &Path, results: &Path) {
    let runs = |kind: &str| -> Vec<std::path::PathBuf> {
        (1..=RUNS)
            .map(|i| results.join(format!("{kind}-{i}.wvz")))
            .collect()
    };
    let (quiet, noisy) = (runs("quiet"), runs("noisy"));
    if !quiet[0].is_file() {
        f.line("  noisy neighbour: no SMT and cross-package pair on this layout (not run)");
        return;
    }
    let diff = |scope: Option<&str>, json: bool| {
        let mut c = std::process::Command::new(wakeviz);
        c.arg("diff")
            .arg("--base")
            .args(&quiet)
            .arg("--new")
            .args(&noisy);
        c.args(["--only", "placement", "--fail-if", GATE]);
        if let Some(s) = scope {
            c.args(["--scope", s]);
        }
        if json {
            c.args(["--report", "json"]);
        }
        c.output()
    };
    for (scope, name, want_exit) in [(Some("all"), "unscoped", 1), (None, "scoped (cmd)", 0)] {
        let (o, j) = match (diff(scope, false), diff(scope, true)) {
            (Ok(o), Ok(j)) => (o, j),
            (Err(e), _) | (_, Err(e)) => return f.fail(format!("running wakeviz diff: {e}")),
        };
        let report: Value = match serde_json::from_slice(&j.stdout) {
            Ok(v) => v,
            Err(e) => return f.fail(format!("wakeviz diff --report json ({name}): {e}")),
        };
        let marks = marked(&report);
        let verdict = String::from_utf8_lossy(&o.stderr)
            .lines()
            .find(|l| l.contains("fail-if"))
            .unwrap_or("no verdict line")
            .to_string();
        let text = String::from_utf8_lossy(&o.stdout);
        f.line(format!(
            "  noisy neighbour, {name} diff of quiet-1..{RUNS} -> noisy-1..{RUNS} --only placement:"
        ));
        for l in text.lines().filter(|l| {
            l.contains("wakeups") || l.contains("cross_package") || l.contains("smt_sibling")
        }) {
            f.line(format!("    {l}"));
        }
        f.line(format!("    {verdict}"));
        f.line(format!("    marked placement figures: {marks:?}"));
        let judged: Vec<&String> = marks
            .iter()
            .filter(|m| m.ends_with(".share") && !m.starts_with("placement.new_tasks."))
            .collect();
        let ok = o.status.code() == Some(want_exit)
            && if want_exit == 0 {
                judged.is_empty()
            } else {
                marks.iter().any(|m| m.ends_with(".share"))
            };
        if !ok {
            f.fail(format!(
                "noisy neighbour, {name}: exit {:?} (want {want_exit}), marked {marks:?}",
                o.status.code()
            ));
        }
    }
}
