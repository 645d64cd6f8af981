//! The figures of one prediction: each one read off the shadow report's policy rows (and the
//! scan-latency section) of every run, averaged per group, and the error split into its
//! open-loop and shadow-input parts (see the parent module).
use serde::Serialize;

use crate::{
    analysis::{ScanSection, Snapshot},
    compare::{
        Group, Unit,
        stats::{mean_sd, welch_ci95},
    },
    shadow::{PolicyRow, ShadowReport},
    topology::{Level, LevelCounts},
};

/// Where a figure's measured value comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MeasuredSource {
    /// The kernel's own choices in B's runs (the shadow report's `observed` baseline row).
    Observed,
    /// Not observable (the kernel's scan length is not captured): the model itself on B's own
    /// recordings stands in, so the whole error counts as open loop.
    ProxyModelOnTarget,
    /// B's measured scan latency (the scan section's source, e.g. `select_task_rq_fair`
    /// duration), against the policy's estimated scan cost.
    ScanLatency(&'static str),
    /// The kernel's `select_idle_cpu` as the debug-info scan probes counted it in every one of
    /// B's runs (the observed row, on the decisions the model is scored on).
    ScanProbes,
}

/// Which part of the error dominates, decided from the numbers only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// Neither part is beyond twice its standard error (run-to-run noise) and a quarter of
    /// the error.
    Noise,
    /// Mostly `model on A - model on B`: the workload ran differently under B's setting.
    OpenLoop,
    /// Mostly `model on B - measured on B`: the model misses B's kernel on B's own events.
    ShadowInputs,
}

impl Cause {
    pub fn label(self) -> &'static str {
        match self {
            Self::Noise => "noise",
            Self::OpenLoop => "open loop",
            Self::ShadowInputs => "shadow inputs",
        }
    }
}

/// One figure: predicted (the model on A's runs), measured (B's runs) and the error's parts.
/// Shares in percent, their error in points; other units keep their own and add `error_pct`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PredictedFigure {
    /// `vs_waker.same_llc.share`, `idle.share`, `probes_mean`, `scan.p99_ns`, ...
    pub name: String,
    pub label: String,
    pub unit: Unit,
    pub predicted: Option<f64>,
    pub predicted_sd: Option<f64>,
    pub measured: Option<f64>,
    /// Run-to-run standard deviation of B's runs (with `target_runs` of the prediction).
    pub measured_sd: Option<f64>,
    pub measured_source: MeasuredSource,
    /// `predicted - measured`, in the figure's unit (points for shares).
    pub error: Option<f64>,
    /// Relative to the measured value, in percent (`None` when it is 0 or n/a).
    pub error_pct: Option<f64>,
    /// Half-width of the error's 95 % confidence interval, in the error's unit (Welch, A's
    /// predictions against B's measurements; `None` with a single run on a side).
    pub error_ci95: Option<f64>,
    /// Whether the interval is narrow enough to judge the error: at most
    /// [`RESOLVE_SHARE_PT`] for shares, [`RESOLVE_RELATIVE_PCT`] of the measured value
    /// otherwise (`None` without an interval).
    pub resolved: Option<bool>,
    /// `predicted - model on B`.
    pub open_loop: Option<f64>,
    /// `model on B - measured`.
    pub shadow_inputs: Option<f64>,
    /// Twice the standard error of `open_loop` (unpaired: the model's run-to-run SD on A and
    /// on B) and of `shadow_inputs` (paired: the SD of B's per-run `model - measured`); `None`
    /// with a single run on a side. A part is taken for a cause only beyond its noise.
    pub open_loop_noise: Option<f64>,
    pub shadow_inputs_noise: Option<f64>,
    pub cause: Option<Cause>,
    /// The closed-loop prediction: the figure measured on simulations of A's workloads under
    /// the policy ([`crate::closed_loop`]), the kernel-observable figures only; `None` where
    /// no simulation ran.
    pub closed_loop: Option<f64>,
    /// `closed_loop - measured`, and its 95 % half-width (Welch, simulations against B's
    /// runs).
    pub closed_loop_error: Option<f64>,
    pub closed_loop_error_ci95: Option<f64>,
}

/// The largest 95 % half-width at which a share's prediction error counts as resolved, in
/// points: experiments are sized for a standard error of 0.35 pt per setting, about +-1 pt.
pub const RESOLVE_SHARE_PT: f64 = 1.0;
/// The same for other units, in percent of the measured value.
pub const RESOLVE_RELATIVE_PCT: f64 = 5.0;

/// What the open-loop and shadow-input parts rest on, A's and B's values side by side.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Evidence {
    /// Wakeups per second of stream time (mean over the runs), A then B.
    pub wakeup_rate: [Option<f64>; 2],
    /// The workload's wall time, seconds, A then B.
    pub workload_duration_s: [Option<f64>; 2],
    /// Share of wakeups whose previous CPU was idle at decision time (the `prev_only` row's
    /// idle hits, where the registry has it), A then B: how idle the machine was for wakees.
    pub prev_idle_share: Option<[Option<f64>; 2]>,
    /// The model's agreement with B's kernel on B's own recordings, percent.
    pub model_agreement_on_target: Option<f64>,
    /// Share of those decisions made from exact kernel inputs only, percent.
    pub model_exact_inputs_on_target: Option<f64>,
    /// The policy B's fidelity figure judges (picked from the kernel release, not the features).
    pub target_fidelity_policy: String,
    /// When that policy is the model: its disagreements on B by cause bucket, percent of the
    /// wakeups evaluated, largest first (empty otherwise).
    pub target_fidelity_buckets: Vec<(String, f64)>,
}

type PolicyFig = fn(&ShadowReport, &PolicyRow) -> Option<f64>;
/// A figure read off one policy row (closures: the level figures capture their level).
type PolicyRead = Box<dyn Fn(&ShadowReport, &PolicyRow) -> Option<f64>>;

enum Measure {
    Observed,
    Proxy,
    Scan(fn(&ScanSection) -> Option<f64>),
    /// The observed row where every B run had the scan probes on, else the proxy.
    ScanProbes,
}

struct Spec {
    name: String,
    label: String,
    unit: Unit,
    /// A level share: n/a (never 0) on a run whose topology cannot have the level.
    level: Option<Level>,
    policy: PolicyRead,
    measure: Measure,
}

fn share(c: &LevelCounts, l: Level) -> Option<f64> {
    let t = c.total();
    (t > 0).then(|| c.get(l) as f64 * 100.0 / t as f64)
}

fn specs() -> Vec<Spec> {
    let mut v = Vec::new();
    for (rel, label) in [("vs_waker", "vs waker"), ("vs_prev", "vs prev")] {
        for l in Level::ALL {
            let waker = rel == "vs_waker";
            v.push(Spec {
                name: format!("{rel}.{}.share", l.name()),
                label: format!("{label} {}", l.name()),
                unit: Unit::Share,
                level: Some(l),
                policy: Box::new(move |_, r: &PolicyRow| {
                    let c = if waker {
                        &r.placement.vs_waker
                    } else {
                        &r.placement.vs_prev
                    };
                    share(c, l)
                }),
                measure: Measure::Observed,
            });
        }
    }
    let plain: [(&str, &str, Unit, PolicyFig, Measure); 7] = [
        (
            "idle.share",
            "idle hits",
            Unit::Share,
            |_, r| r.idle_pct,
            Measure::Observed,
        ),
        (
            "stacked.share",
            "stacked",
            Unit::Share,
            |_, r| r.stacked_pct,
            Measure::Observed,
        ),
        (
            "migrations.share",
            "migrations",
            Unit::Share,
            |_, r| r.migrations_pct,
            Measure::Observed,
        ),
        (
            "probes_mean",
            "probes/wakeup",
            Unit::Other("probes".into()),
            |_, r| r.probes_mean,
            Measure::Proxy,
        ),
        (
            "scan.scans.share",
            "idle scans",
            Unit::Share,
            |_, r| r.scan.scans_pct,
            Measure::ScanProbes,
        ),
        (
            "scan.cpus_per_scan",
            "CPUs tested/scan",
            Unit::Other("CPUs".into()),
            |_, r| r.scan.cpus_per_scan,
            Measure::ScanProbes,
        ),
        (
            "scan.tests_per_wakeup",
            "CPUs tested/wakeup",
            Unit::Other("CPUs".into()),
            |_, r| r.scan.tests_mean,
            Measure::ScanProbes,
        ),
    ];
    for (name, label, unit, f, measure) in plain {
        v.push(Spec {
            name: name.into(),
            label: label.into(),
            unit,
            level: None,
            policy: Box::new(f),
            measure,
        });
    }
    v.push(Spec {
        name: "scan.mean_ns".into(),
        label: "scan cost mean".into(),
        unit: Unit::Ns,
        level: None,
        policy: Box::new(|_, r| r.est_scan_ns_mean),
        measure: Measure::Scan(|s| {
            (s.available && s.overall.quantiles.count > 0).then_some(s.overall.quantiles.mean)
        }),
    });
    v.push(Spec {
        name: "scan.p50_ns".into(),
        label: "scan cost p50".into(),
        unit: Unit::Ns,
        level: None,
        policy: Box::new(|rep, r| r.probes_p50.map(|p| f64::from(p) * rep.per_probe_ns)),
        measure: Measure::Scan(|s| {
            (s.available && s.overall.quantiles.count > 0).then_some(s.overall.quantiles.p50 as f64)
        }),
    });
    v.push(Spec {
        name: "scan.p99_ns".into(),
        label: "scan cost p99".into(),
        unit: Unit::Ns,
        level: None,
        policy: Box::new(|rep, r| r.probes_p99.map(|p| f64::from(p) * rep.per_probe_ns)),
        measure: Measure::Scan(|s| {
            (s.available && s.overall.quantiles.count > 0).then_some(s.overall.quantiles.p99 as f64)
        }),
    });
    v
}

fn row<'a>(s: &'a Snapshot, policy: &str) -> Option<(&'a ShadowReport, &'a PolicyRow)> {
    let r = s.shadow.as_ref()?;
    Some((r, r.policies.iter().find(|p| p.name == policy)?))
}

/// The registry's baseline (first) row: the kernel's own choices.
fn observed(s: &Snapshot) -> Option<(&ShadowReport, &PolicyRow)> {
    let r = s.shadow.as_ref()?;
    Some((r, r.policies.first()?))
}

fn values(runs: &[Snapshot], f: impl Fn(&Snapshot) -> Option<f64>) -> Vec<f64> {
    runs.iter().filter_map(f).collect()
}

/// Every figure of `policies[0]` on `a`'s runs against `b`'s, where `policies[1]` is the
/// model of B's setting on B's own runs (the error's split; the same policy unless the first
/// flips a feature of the recording it replays); `closed`: simulations of `a`'s workloads
/// under the first (empty: no closed-loop prediction).
pub fn compute(
    a: &[Snapshot],
    b: &[Snapshot],
    policies: [&str; 2],
    closed: &[Snapshot],
) -> Vec<PredictedFigure> {
    // The select_idle_cpu rows are measured only where every B run had the scan probes on.
    let probed = !b.is_empty() && b.iter().all(|s| s.scan_latency.measured.is_some());
    specs()
        .into_iter()
        .map(|sp| {
            let exists = |s: &Snapshot| sp.level.is_none_or(|l| s.topology.level_exists(l));
            let by = |policy: &str, s: &Snapshot| {
                exists(s)
                    .then(|| row(s, policy).and_then(|(r, p)| (sp.policy)(r, p)))
                    .flatten()
            };
            let pa = values(a, |s| by(policies[0], s));
            let model = |s: &Snapshot| by(policies[1], s);
            // Per B run: the model and the measurement, for the paired part.
            let (measured, source): (Vec<(Option<f64>, Option<f64>)>, _) = match sp.measure {
                Measure::Observed => (
                    b.iter()
                        .map(|s| {
                            let m = exists(s)
                                .then(|| observed(s).and_then(|(r, p)| (sp.policy)(r, p)))
                                .flatten();
                            (model(s), m)
                        })
                        .collect(),
                    MeasuredSource::Observed,
                ),
                Measure::ScanProbes if probed => (
                    b.iter()
                        .map(|s| (model(s), observed(s).and_then(|(r, p)| (sp.policy)(r, p))))
                        .collect(),
                    MeasuredSource::ScanProbes,
                ),
                Measure::Proxy | Measure::ScanProbes => (
                    b.iter().map(|s| (model(s), model(s))).collect(),
                    MeasuredSource::ProxyModelOnTarget,
                ),
                Measure::Scan(f) => (
                    b.iter().map(|s| (model(s), f(&s.scan_latency))).collect(),
                    MeasuredSource::ScanLatency(
                        b.first().map_or("scan latency", |s| s.scan_latency.source),
                    ),
                ),
            };
            let mut f = figure(sp.name, sp.label, sp.unit, &pa, &measured, source);
            if matches!(sp.measure, Measure::Observed) {
                let cl = values(closed, |s| {
                    exists(s)
                        .then(|| observed(s).and_then(|(r, p)| (sp.policy)(r, p)))
                        .flatten()
                });
                let meas: Vec<f64> = measured.iter().filter_map(|x| x.1).collect();
                f.closed_loop = mean(&cl);
                f.closed_loop_error = f.closed_loop.zip(f.measured).map(|(x, y)| x - y);
                f.closed_loop_error_ci95 = welch_ci95(&cl, &meas);
            }
            f
        })
        .collect()
}

/// Twice the standard error of a difference of means, unpaired.
fn se2(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (_, sa) = mean_sd(a)?;
    let (_, sb) = mean_sd(b)?;
    Some(2.0 * (sa * sa / a.len() as f64 + sb * sb / b.len() as f64).sqrt())
}

fn figure(
    name: String,
    label: String,
    unit: Unit,
    pa: &[f64],
    b: &[(Option<f64>, Option<f64>)],
    measured_source: MeasuredSource,
) -> PredictedFigure {
    let pb: Vec<f64> = b.iter().filter_map(|x| x.0).collect();
    let meas: Vec<f64> = b.iter().filter_map(|x| x.1).collect();
    let diffs: Vec<f64> = b.iter().filter_map(|x| Some(x.0? - x.1?)).collect();
    let p = mean_sd(pa);
    let m = mean_sd(&meas);
    let mb = mean_sd(&pb).map(|x| x.0);
    let (pm, mm) = (p.map(|x| x.0), m.map(|x| x.0));
    let error = pm.zip(mm).map(|(x, y)| x - y);
    let error_pct = match (&unit, error, mm) {
        (Unit::Share, _, _) => None,
        (_, Some(e), Some(y)) if y != 0.0 => Some(e * 100.0 / y.abs()),
        _ => None,
    };
    let error_ci95 = welch_ci95(pa, &meas);
    let resolved = error_ci95.and_then(|h| match (&unit, mm) {
        (Unit::Share, _) => Some(h <= RESOLVE_SHARE_PT),
        (_, Some(y)) if y != 0.0 => Some(h * 100.0 / y.abs() <= RESOLVE_RELATIVE_PCT),
        _ => None,
    });
    let open_loop = pm.zip(mb).map(|(x, y)| x - y);
    let shadow_inputs = mb.zip(mm).map(|(x, y)| x - y);
    let open_loop_noise = se2(pa, &pb);
    let shadow_inputs_noise = (diffs.len() >= 2)
        .then(|| mean_sd(&diffs).map(|(_, sd)| 2.0 * sd / (diffs.len() as f64).sqrt()))
        .flatten();
    let cause = error.map(|e| {
        // A part is a cause when it is beyond its noise (or the noise is unknown) and not a
        // sliver of the error (a quarter of it at least).
        let counts = |v: Option<f64>, n: Option<f64>| {
            v.filter(|v| n.is_none_or(|n| v.abs() > n) && v.abs() >= 0.25 * e.abs() && *v != 0.0)
                .map(f64::abs)
        };
        match (
            counts(open_loop, open_loop_noise),
            counts(shadow_inputs, shadow_inputs_noise),
        ) {
            (None, None) => Cause::Noise,
            (Some(_), None) => Cause::OpenLoop,
            (None, Some(_)) => Cause::ShadowInputs,
            (Some(o), Some(i)) if o >= i => Cause::OpenLoop,
            _ => Cause::ShadowInputs,
        }
    });
    PredictedFigure {
        name,
        label,
        unit,
        predicted: pm,
        predicted_sd: p.map(|x| x.1),
        measured: mm,
        measured_sd: m.map(|x| x.1),
        measured_source,
        error,
        error_pct,
        error_ci95,
        resolved,
        open_loop,
        shadow_inputs,
        open_loop_noise,
        shadow_inputs_noise,
        cause,
        closed_loop: None,
        closed_loop_error: None,
        closed_loop_error_ci95: None,
    }
}

fn mean(v: &[f64]) -> Option<f64> {
    mean_sd(v).map(|x| x.0)
}

fn wakeup_rate(s: &Snapshot) -> Option<f64> {
    let p = &s.placement;
    let secs = p
        .first_ts_ns
        .map(|f| p.last_ts_ns.saturating_sub(f) as f64 / 1e9)?;
    (secs > 0.0).then(|| p.wakeups.count as f64 / secs)
}

/// The evidence for the pair: A's and B's workload and idleness, the model's grip on B.
pub fn evidence(a: &Group, b: &Group, policy: &str) -> Evidence {
    let both = |f: &dyn Fn(&Snapshot) -> Option<f64>| {
        [mean(&values(&a.runs, f)), mean(&values(&b.runs, f))]
    };
    let wakeup_rate = both(&wakeup_rate);
    let workload_duration_s = both(&|s: &Snapshot| {
        s.recording
            .workload
            .as_ref()
            .map(|w| w.duration_ns as f64 / 1e9)
    });
    let prev = |s: &Snapshot| row(s, "prev_only").and_then(|(_, r)| r.idle_pct);
    let prev_idle_share = a
        .runs
        .iter()
        .chain(&b.runs)
        .any(|s| prev(s).is_some())
        .then(|| both(&prev));
    let on_b = |f: fn(&PolicyRow) -> Option<f64>| mean(&values(&b.runs, |s| f(row(s, policy)?.1)));
    let model_agreement_on_target = on_b(|r| r.agreement.map(|x| x * 100.0));
    let model_exact_inputs_on_target = on_b(|r| r.exact_inputs_pct);
    let fid: Vec<_> = b
        .runs
        .iter()
        .filter_map(|s| s.shadow.as_ref().map(|r| &r.fidelity))
        .collect();
    let target_fidelity_policy = fid.first().map_or_else(String::new, |f| f.policy.into());
    let mut target_fidelity_buckets = Vec::new();
    if !fid.is_empty() && fid.iter().all(|f| f.policy == policy) {
        let evaluated: u64 = fid.iter().map(|f| f.evaluated).sum();
        let mut sums: Vec<(String, u64)> = Vec::new();
        for f in &fid {
            for (bk, n) in f.disagreements.nonzero() {
                match sums.iter_mut().find(|x| x.0 == bk.name()) {
                    Some(x) => x.1 += n,
                    None => sums.push((bk.name().into(), n)),
                }
            }
        }
        sums.sort_by_key(|x| std::cmp::Reverse(x.1));
        if evaluated > 0 {
            target_fidelity_buckets = sums
                .into_iter()
                .map(|(k, n)| (k, n as f64 * 100.0 / evaluated as f64))
                .collect();
        }
    }
    Evidence {
        wakeup_rate,
        workload_duration_s,
        prev_idle_share,
        model_agreement_on_target,
        model_exact_inputs_on_target,
        target_fidelity_policy,
        target_fidelity_buckets,
    }
}
