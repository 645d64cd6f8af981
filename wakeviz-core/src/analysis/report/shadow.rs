//! The shadow section of `--report text`, rendered from the typed shadow report: a
//! "tip vs patched"-style comparison, the baseline row first, then each policy with its delta.
//! Values that do not exist (nothing evaluated) print as `-`.
use std::fmt::Write;

use strum::IntoEnumIterator;

use crate::{
    shadow::{DecisionTime, PolicyRow, ShadowReport, metrics::pct_of, report::SleptReport},
    topology::Level,
};

fn opt<T>(v: Option<T>, f: impl FnOnce(T) -> String) -> String {
    v.map_or_else(|| "-".into(), f)
}

/// `v` with its delta `d` to the kernel's model (percentage points).
fn delta(v: Option<f64>, d: Option<f64>) -> String {
    match (v, d) {
        (None, _) => "-".into(),
        (Some(v), Some(d)) => format!("{v:6.2} ({d:+6.2})"),
        (Some(v), None) => format!("{v:6.2} (   n/a)"),
    }
}

fn probes(r: &PolicyRow) -> String {
    match (r.probes_mean, r.vs_model.probes_pct) {
        (None, _) => "-".into(),
        (Some(v), Some(d)) => format!("{v:6.2} ({d:+5.1}%)"),
        (Some(v), None) => format!("{v:6.2} (  n/a)"),
    }
}

/// The model's own error, one line: what a delta against the observed row would have mixed
/// into every policy's effect.
fn model_error(r: &ShadowReport) -> String {
    let e = &r.model_error;
    let pt = |v: Option<f64>| opt(v, |v| format!("{v:+.2} pt"));
    format!(
        "Deltas are against {m}, the model of the running kernel, on the same decisions; {m}'s own error (its row minus observed): idle {}, stacked {}, migrations {}, probes {}.",
        pt(e.idle_pt),
        pt(e.stacked_pt),
        pt(e.migrations_pt),
        opt(e.probes_pct, |v| format!("{v:+.1} %")),
        m = r.model
    )
}

fn slept(h: &SleptReport) -> String {
    let b = &h.buckets;
    format!(
        "n={} slept<=10us {} <=50us {} <=200us {} <=1ms {} later {} preempted {} unresolved {}; slept within threshold {}",
        h.total,
        b.le_10us,
        b.le_50us,
        b.le_200us,
        b.le_1ms,
        b.gt_1ms,
        b.preempted,
        b.unresolved,
        opt(h.slept_within_threshold_pct, |p| format!("{p:.1}%")),
    )
}

/// What each policy does to a process's cache locality, and the processes themselves.
fn cache_section(s: &mut String, r: &ShadowReport) {
    let _ = writeln!(
        s,
        "Cache placement (the cache-aware and pick-idle proposals' questions):"
    );
    let _ = writeln!(
        s,
        "{:<22} {:>10} {:>10} {:>12} {:>10} {:>10}",
        "policy", "pref LLC%", "LLC move%", "stack+idle%", "idle left", "LLCs/proc"
    );
    let pct = |v: Option<f64>| opt(v, |v| format!("{v:.1}"));
    for row in &r.policies {
        let c = &row.cache;
        let _ = writeln!(
            s,
            "{:<22} {:>10} {:>10} {:>12} {:>10} {:>10}",
            row.name,
            pct(c.preferred_llc_pct),
            pct(c.llc_moves_pct),
            pct(c.stacked_idle_left_pct),
            opt(c.idle_left_mean, |v| format!("{v:.2}")),
            opt(c.llcs_per_process, |v| format!("{v:.2}")),
        );
    }
    let _ = writeln!(
        s,
        "(pref LLC: of wakeups whose process had a preferred LLC, placed in it; LLC move: placed in another LLC than the task's previous wakeup; stack+idle: stacked on a busy CPU while its LLC had an idle one, with the idle CPUs left there on average; LLCs/proc: LLCs a multi-threaded process's wakees were placed in)"
    );
    if r.processes.is_empty() {
        return;
    }
    let _ = writeln!(s, "Processes with the most wakeups:");
    let _ = writeln!(
        s,
        "{:>8} {:<16} {:>8} {:>9} {:>9} {:>11}",
        "tgid", "comm", "threads", "wakeups", "LLCs ran", "LLCs placed"
    );
    for p in &r.processes {
        let _ = writeln!(
            s,
            "{:>8} {:<16} {:>8} {:>9} {:>9} {:>11}",
            p.tgid,
            p.comm.as_deref().unwrap_or("-"),
            p.threads,
            p.wakeups,
            p.llcs_ran_on,
            p.llcs_placed
        );
    }
}

/// The shadow section as text.
pub fn text(r: &ShadowReport) -> String {
    text_on(r, &|_| true)
}

/// [`text`] on a topology: a level `exists` says cannot occur prints `n/a`, not `0.0`.
pub fn text_on(r: &ShadowReport, exists: &dyn Fn(Level) -> bool) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Shadow placement policies — open-loop replay: a policy's choice does not change later events."
    );
    let _ = writeln!(
        s,
        "{} placed wakeups compared{} (decision at {}); excluded: {} fork/exec, {} no-placement, {} bad CPU.",
        r.evaluated,
        if r.filtered {
            " (a subset of the wakees)"
        } else {
            ""
        },
        match r.decision_time {
            DecisionTime::SelectTaskRqFair => "select_task_rq_fair".to_string(),
            DecisionTime::SchedWaking => "sched_waking, tracepoint-only".to_string(),
            DecisionTime::SchedWakingWithInputs => format!(
                "sched_waking, tracepoint-only; kernel inputs read there for {} decisions, \
                 WF_SYNC from the waker's stack for {}",
                r.decisions_with_waking_inputs, r.decisions_with_stack_sync
            ),
        },
        r.excluded.fork_exec,
        r.excluded.no_placement,
        r.excluded.invalid_cpu,
    );
    let f = &r.fidelity;
    let _ = writeln!(
        s,
        "Kernel policy: {} ({}).",
        f.policy,
        match f.chosen_from {
            crate::shadow::policy::FlavourSource::SchedFeatures =>
                "from the recorded sched features",
            crate::shadow::policy::FlavourSource::KernelRelease => {
                "guessed from the kernel release: no sched features recorded"
            }
        }
    );
    match f.agreement {
        Some(a) => {
            let _ = writeln!(
                s,
                "Fidelity: the {} shadow reproduces {:.2}% of the kernel's choices ({} compared).",
                f.policy,
                100.0 * a,
                f.evaluated
            );
            let parts: Vec<String> = f
                .disagreements
                .nonzero()
                .map(|(b, n)| format!("{} {n}", b.name()))
                .collect();
            if !parts.is_empty() {
                let _ = writeln!(s, "  disagreements: {}", parts.join(", "));
            }
        }
        None => {
            let _ = writeln!(s, "Fidelity: nothing compared yet.");
        }
    }
    if let Some(m) = &r.scan_model {
        scan_model(&mut s, m);
    }
    let _ = writeln!(
        s,
        "Scan time: {:.0} ns per probe ({}).",
        r.per_probe_ns,
        r.per_probe_source.describe()
    );
    if let Some(hz) = r.kernel_hz_measured {
        let _ = writeln!(
            s,
            "Kernel HZ: {hz} (measured from the select records' jiffies)."
        );
    }
    let _ = writeln!(s, "{}", model_error(r));
    if let Some(a) = f.agreement.filter(|a| *a < 0.99) {
        let _ = writeln!(
            s,
            "Warning: {} reproduces only {:.2}% of the kernel's choices: a delta smaller than its error above is not a finding.",
            r.model,
            100.0 * a
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<22} {:>7} {:>15} {:>15} {:>17} {:>5} {:>9} {:>15} {:>6} {:>6}",
        "policy",
        "agree%",
        "idle%",
        "stacked%",
        "probes mean",
        "p99",
        "scan ns",
        "migrations%",
        "queue",
        "exact%"
    );
    for row in &r.policies {
        let _ = writeln!(
            s,
            "{:<22} {:>7} {:>15} {:>15} {:>17} {:>5} {:>9} {:>15} {:>6} {:>6}",
            row.name,
            opt(row.agreement, |a| format!("{:.2}", 100.0 * a)),
            delta(row.idle_pct, row.vs_model.idle_pt),
            delta(row.stacked_pct, row.vs_model.stacked_pt),
            probes(row),
            opt(row.probes_p99, |p| p.to_string()),
            opt(row.est_scan_ns_mean, |v| format!("{v:.0}")),
            delta(row.migrations_pct, row.vs_model.migrations_pt),
            opt(row.queue_mean, |q| format!("{q:.2}")),
            opt(row.exact_inputs_pct, |e| format!("{e:.1}")),
        );
    }
    let _ = writeln!(
        s,
        "(deltas vs {}: percentage points; probes: relative; n/a: cannot differ in this capture; queue: mean nr_running of the chosen CPU at decision time)",
        r.model
    );
    for row in r.policies.iter().filter(|x| x.cannot_differ.is_some()) {
        let _ = writeln!(
            s,
            "  {}: n/a, {}",
            row.name,
            row.cannot_differ.unwrap_or_default()
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "Locality of the choice, % of wakeups:");
    let short = ["cpu", "smt", "llc", "node", "pkg", "xpkg"];
    let mut hdr = format!("{:<22}", "policy");
    for side in ["waker", "prev"] {
        for n in short {
            hdr.push_str(&format!(" {:>6}", format!("{}:{}", &side[..1], n)));
        }
        hdr.push_str("  ");
    }
    let _ = writeln!(s, "{}", hdr.trim_end());
    for row in &r.policies {
        let mut line = format!("{:<22}", row.name);
        for counts in [&row.placement.vs_waker, &row.placement.vs_prev] {
            for l in Level::iter() {
                let p = pct_of(counts.get(l), row.evaluated);
                let v = if exists(l) {
                    opt(p, |p| format!("{p:.1}"))
                } else {
                    "n/a".into()
                };
                line.push_str(&format!(" {v:>6}"));
            }
            line.push_str("  ");
        }
        let _ = writeln!(s, "{}", line.trim_end());
    }
    let _ = writeln!(
        s,
        "(w: vs the waker's CPU, p: vs the previous CPU; cpu/smt/llc/node/pkg/xpkg = same CPU, SMT sibling, same LLC, same node, same package, other package)"
    );
    let _ = writeln!(s);
    cache_section(&mut s, r);
    let _ = writeln!(s);
    let w = &r.wf_sync;
    let _ = writeln!(
        s,
        "WF_SYNC check (did the waker sleep right after a sync wakeup? threshold {} us):",
        w.threshold_us
    );
    let _ = writeln!(s, "  all sync wakeups: {}", slept(&w.sync_wakeups));
    for (name, h) in &w.queued_behind_waker.0 {
        let _ = writeln!(s, "  queued behind the waker by {name}: {}", slept(h));
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "Approximations:");
    for a in &r.approximations {
        let _ = writeln!(s, "  - {a}");
    }
    s
}

/// The model's scan beside the measured one: how often each side scanned, and the depth of the
/// plain scans both made.
fn scan_model(s: &mut String, m: &crate::shadow::scan_model::ScanModelReport) {
    let _ = writeln!(
        s,
        "Scan model ({}) vs measured scan (debug-info probes), {} decisions: both scanned {}, kernel only {}, model only {}.",
        m.model, m.decisions, m.both_scanned, m.kernel_only, m.model_only
    );
    match m.mean_depth() {
        Some((k, p)) => {
            let _ = writeln!(
                s,
                "  plain scans on both sides: {}; CPUs tested per scan, mean: kernel {k:.2}, model {p:.2}; same depth in {:.2}%.",
                m.plain,
                100.0 * m.equal_depth as f64 / m.plain as f64
            );
        }
        None => {
            let _ = writeln!(s, "  no plain scan on both sides: no depth to compare.");
        }
    }
}
