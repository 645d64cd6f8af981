//! The prediction tables of `wakeviz diff`'s text: per ordered pair, one line per figure
//! (predicted, measured with its run-to-run SD, the error, its two parts, the dominating
//! cause), then the evidence each part rests on. Lines fit [`super::super::text::WIDTH`].
use std::fmt::Write;

use super::{Cause, Evidence, MeasuredSource, PredictedFigure, Prediction};
use crate::compare::{
    Unit,
    text::{WIDTH, clip, num},
};

/// `s` in lines of at most [`WIDTH`] columns: the first indented by `first`, the rest by
/// `first` plus two spaces.
fn wrap(out: &mut String, s: &str, first: &str) {
    let cont = format!("{first}  ");
    let mut line = first.to_string();
    let mut empty = true;
    for w in s.split_whitespace() {
        if !empty && line.len() + 1 + w.len() > WIDTH {
            let _ = writeln!(out, "{line}");
            line = cont.clone();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(w);
        empty = false;
    }
    if !empty {
        let _ = writeln!(out, "{line}");
    }
}

fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".into(), num)
}

fn signed(v: Option<f64>) -> String {
    match v {
        Some(x) if x.abs() >= 1000.0 => format!("{x:+.0}"),
        Some(x) => format!("{x:+.2}"),
        None => "n/a".into(),
    }
}

fn error(f: &PredictedFigure) -> String {
    match (&f.unit, f.error, f.error_pct) {
        (Unit::Share, Some(e), _) => format!("{e:+.2} pt"),
        (_, _, Some(p)) => format!("{p:+.1} %"),
        (_, Some(e), None) => signed(Some(e)),
        _ => "n/a".into(),
    }
}

fn label(f: &PredictedFigure) -> String {
    let u = f.unit.label();
    let proxy = if f.measured_source == MeasuredSource::ProxyModelOnTarget {
        " (proxy)"
    } else {
        ""
    };
    if u.is_empty() || matches!(f.unit, Unit::Other(_)) {
        format!("{}{proxy}", f.label)
    } else {
        format!("{} [{u}]{proxy}", f.label)
    }
}

/// The error's 95 % half-width, in the unit its error is shown in.
fn interval(f: &PredictedFigure) -> String {
    let h = match (&f.unit, f.error_ci95, f.measured) {
        (Unit::Share, Some(h), _) => h,
        (_, Some(h), Some(y)) if f.error_pct.is_some() && y != 0.0 => h * 100.0 / y.abs(),
        (_, Some(h), _) => h,
        _ => return "n/a".into(),
    };
    if h >= 1000.0 {
        format!("±{h:.0}")
    } else {
        format!("±{h:.2}")
    }
}

fn line(out: &mut String, cols: [&str; 8]) {
    let [l, p, m, ci, e, o, i, c] = cols;
    let s = format!(
        "  {:<26} {p:>9} {m:>9} {e:>9} {ci:>6} {o:>9} {i:>9} {c}",
        clip(l, 26)
    );
    let _ = writeln!(out, "{}", s.trim_end());
}

fn change(a: Option<f64>, b: Option<f64>, unit: &str) -> String {
    let rel = match (a, b) {
        (Some(x), Some(y)) if x != 0.0 => format!(" ({:+.1} %)", (y - x) * 100.0 / x.abs()),
        _ => String::new(),
    };
    format!("{}{unit} -> {}{unit}{rel}", opt(a), opt(b))
}

fn evidence(out: &mut String, p: &Prediction, e: &Evidence) {
    let mut ol = vec![format!(
        "wakeups/s {}",
        change(e.wakeup_rate[0], e.wakeup_rate[1], "")
    )];
    if let Some([a, b]) = e.prev_idle_share {
        ol.push(format!(
            "prev CPU idle at wakeup (prev_only idle hits) {}",
            change(a, b, " %")
        ));
    }
    if e.workload_duration_s.iter().any(Option::is_some) {
        let [a, b] = e.workload_duration_s;
        ol.push(format!("workload wall time {}", change(a, b, " s")));
    }
    wrap(
        out,
        &format!(
            "open loop = {} on {} - {} on {}; {} -> {}: {}",
            p.policy,
            p.baseline,
            p.target_policy,
            p.target,
            p.baseline,
            p.target,
            ol.join("; ")
        ),
        "  ",
    );
    let mut si = format!(
        "shadow inputs = {} on {} - measured: {} reproduces {}'s kernel on {} % of its wakeups (exact inputs {} %)",
        p.target_policy,
        p.target,
        p.target_policy,
        p.target,
        opt(e.model_agreement_on_target),
        opt(e.model_exact_inputs_on_target),
    );
    if e.target_fidelity_policy != p.target_policy {
        let _ = write!(
            si,
            "; {}'s fidelity buckets judge {}, not {}: not shown",
            p.target, e.target_fidelity_policy, p.target_policy
        );
    } else if !e.target_fidelity_buckets.is_empty() {
        let b: Vec<String> = e
            .target_fidelity_buckets
            .iter()
            .map(|(k, v)| format!("{k} {v:.2} %"))
            .collect();
        let _ = write!(si, "; misses by cause (% of wakeups): {}", b.join(", "));
    }
    wrap(out, &si, "  ");
}

/// The closed-loop rows: the same figures measured on simulations of the baseline's
/// workloads under the policy, against the target's runs.
fn closed_loop(out: &mut String, p: &Prediction) {
    let rows: Vec<&PredictedFigure> = p
        .figures
        .iter()
        .filter(|f| {
            f.closed_loop.is_some() && !(f.closed_loop == Some(0.0) && f.measured == Some(0.0))
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "  closed loop ({}'s workloads simulated under {}, reacting to its placements):",
        p.baseline, p.policy
    );
    let _ = writeln!(
        out,
        "  {:<26} {:>9} {:>9} {:>9} {:>6}",
        "", "closed", "measured", "error", "95% CI"
    );
    for f in rows {
        let e = f.closed_loop_error.map_or_else(
            || "n/a".into(),
            |e| match f.unit {
                Unit::Share => format!("{e:+.2} pt"),
                _ => format!("{e:+.2}"),
            },
        );
        let ci = f
            .closed_loop_error_ci95
            .map_or_else(|| "n/a".into(), |h| format!("±{h:.2}"));
        let _ = writeln!(
            out,
            "  {:<26} {:>9} {:>9} {e:>9} {ci:>6}",
            clip(&label(f), 26),
            opt(f.closed_loop),
            opt(f.measured)
        );
    }
}

/// One prediction table.
pub fn render(out: &mut String, p: &Prediction) {
    let runs = |n: usize| format!("{n} run{}", if n == 1 { "" } else { "s" });
    let _ = writeln!(
        out,
        "\n{}",
        clip(
            &format!(
                "Prediction vs measurement: {} on {} ({}) predicts {} ({})",
                p.policy,
                p.baseline,
                runs(p.baseline_runs),
                p.target,
                runs(p.target_runs)
            ),
            WIDTH
        )
    );
    if !p.target_setting.is_empty() {
        wrap(
            out,
            &format!(
                "setting: {} {} -> {} {} ({})",
                p.baseline,
                p.baseline_setting.join(" "),
                p.target,
                p.target_setting.join(" "),
                p.model
            ),
            "  ",
        );
    }
    line(
        out,
        [
            "",
            "predicted",
            "measured",
            "95% CI",
            "error",
            "open loop",
            "sh.inputs",
            "cause",
        ],
    );
    let mut hidden = 0;
    for f in &p.figures {
        let zero = |v: Option<f64>| v.is_none_or(|x| x == 0.0);
        if zero(f.predicted) && zero(f.measured) {
            hidden += 1;
            continue;
        }
        line(
            out,
            [
                &label(f),
                &opt(f.predicted),
                &opt(f.measured),
                &interval(f),
                &error(f),
                &signed(f.open_loop),
                &signed(f.shadow_inputs),
                match f.resolved {
                    Some(false) => "not resolved",
                    _ => f.cause.map_or("n/a", Cause::label),
                },
            ],
        );
    }
    if hidden > 0 {
        let _ = writeln!(
            out,
            "  ({hidden} figures at 0 or n/a on both sides left out)"
        );
    }
    closed_loop(out, p);
    let scan = p.figures.iter().find_map(|f| match f.measured_source {
        MeasuredSource::ScanLatency(s) => Some(s),
        _ => None,
    });
    let mut notes = Vec::new();
    if p.figures
        .iter()
        .any(|f| f.measured_source == MeasuredSource::ProxyModelOnTarget)
    {
        notes.push(format!(
            "(proxy): the kernel's own figure is not captured (idle tests outside select_idle_cpu; the scan itself without the debug-info scan probes); measured = {} on {}'s own recordings, so its error is all open loop",
            p.target_policy, p.target
        ));
    }
    if p.figures
        .iter()
        .any(|f| f.measured_source == MeasuredSource::ScanProbes)
    {
        notes.push(format!(
            "idle scans, CPUs tested (select_idle_cpu): measured by the debug-info scan probes in {}'s runs, on the decisions the model is scored on (an idle-core walk counts one test per core there, one per CPU in the model)",
            p.target
        ));
    }
    if let Some(s) = scan {
        notes.push(format!(
            "scan cost: predicted = modelled probes x ns per probe (mean; p50, p99 from the probes' p50, p99); measured = {}'s scan latency ({s})",
            p.target
        ));
    }
    for n in notes {
        wrap(out, &n, "  ");
    }
    evidence(out, p, &p.evidence);
}

/// The legend of every prediction table, printed once after them.
pub fn legend(out: &mut String, preds: &[Prediction]) {
    if preds.is_empty() {
        return;
    }
    let single = preds
        .iter()
        .any(|p| p.baseline_runs < 2 || p.target_runs < 2);
    wrap(
        out,
        &format!(
            "prediction tables (POLICY on A predicts B): predicted = POLICY replayed on A's runs, measured = B's kernel in B's runs; error = predicted - measured (pt for shares, % of measured otherwise) = open loop + sh.inputs (in the figure's unit); 95% CI = the error's interval (Welch over A's and B's runs, in the error's unit); not resolved = an interval wider than +-{share} pt on a share or +-{rel} % otherwise, too wide to judge the error; cause = the larger of the parts that are beyond twice their standard error (open loop: unpaired over both groups' runs; sh.inputs: paired over the target's runs) and at least a quarter of the error, noise when neither is{}",
            if single {
                " (a group with a single run has no noise estimate)"
            } else {
                ""
            },
            share = super::figures::RESOLVE_SHARE_PT,
            rel = super::figures::RESOLVE_RELATIVE_PCT,
        ),
        "",
    );
}
