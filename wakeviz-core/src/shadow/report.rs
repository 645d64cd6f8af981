//! The typed shadow report: everything the text report, the JSON and the dashboard show,
//! built by [`ShadowEval::report`]. Its serde form is the `shadow` section of
//! `--report json`; `analysis::report::shadow` renders it as text.
use serde::{Serialize, Serializer, ser::SerializeMap};
use strum::{EnumCount, IntoEnumIterator};

use super::{
    eval::{PolicyId, ShadowEval},
    fidelity::{Bucket, Fidelity},
    metrics::{PolicyMetrics, SLEPT_THRESHOLD_NS, SleptHist, pct_of},
    policy::{Policy, Rule},
    tally::Tally,
};
use crate::topology::LevelCounts;

/// Per-probe cost used for the scan-time estimate when no select durations are available.
pub const DEFAULT_PROBE_NS: f64 = 50.0;

/// The caveats of the evaluation itself; each policy adds its own (`Policy::approximations`),
/// listed after the first [`GENERAL_BEFORE_POLICIES`] of these.
pub const APPROXIMATIONS: &[&str] = &[
    "open loop: a policy's choice does not change later events; only the kernel's choices happened",
    "decision time: select_task_rq_fair exit with function probes, sched_waking without (wake flags there: WF_SYNC from the waker's stack where the probe read it, else unknown and treated as not sync)",
    "idle map reconstructed from sched_switch/sched_wakeup/sched_migrate_task; a CPU claimed by an in-flight wakeup counts busy (ttwu_pending): from the select exit (from sched_waking for tasks never seen reaching select_task_rq_fair, e.g. pinned ones) until its sched_wakeup, the task's next switch-in, or 100 ms; sched_exec placements claim nothing",
    "idle test = available_idle_cpu from the reconstructed map only: sched_idle_cpu (SCHED_IDLE-only CPUs count idle in the kernel), core-scheduling cookies (sched_core_cookie_match) and vCPU preemption (vcpu_is_preempted) are ignored",
    "recent_used_cpu reconstructed: prev_cpu of the task's last SIS pass past the target/prev shortcuts (as the kernel-flavour shadow judged it), the forking CPU for a new task (wake_up_new_task); unknown for tasks not seen since the capture started",
    "wakee affinity: the allowed mask is read (ABI 2) only when nr_cpus_allowed < online CPUs and only for CPUs 0-255; it restricts the affine step, the recent_used_cpu and SMT-sibling shortcuts and the scans as cpumask_and(sd span, p->cpus_ptr) does; a policy answer still outside it becomes select_fallback_rq's (first allowed CPU of prev's node, else the first allowed); older recordings: all online CPUs allowed",
    "wake_affine: WA_IDLE then WA_WEIGHT (WA_BIAS with imbalance_pct 110 for SMT siblings, 117 otherwise; sync subtracts task_h_load(current)) from cpu_load, capacity_of and task_h_load read at select_task_rq_fair entry; task_h_load = se.avg.load_avg x cfs_rq.h_load / (cfs_rq load + 1) from the fields at entry, so a group h_load the kernel refreshes in that call (once a jiffy) is missed (cgroup tasks are marked inexact); without the loads (older recordings) an undecided wake_affine_idle keeps prev_cpu",
    "sync test: nr_running - cfs_h_nr_delayed == 1 when the recorded features have DELAY_DEQUEUE on and the probe read the delayed count (h_nr_queued - h_nr_runnable where both exist, else the 6.13 h_nr_delayed), nr_running == 1 otherwise; whether the recorded 6.12 point release carries the wake_up_sync fix is assumed, not read (the delayed_dequeue_sync bucket counts the cases it decides)",
    "WF_SYNC: the waker's PF_EXITING (which cancels sync) is not read: assumed not exiting",
    "affine domain across NUMA nodes when the SLIT distance is <= node_reclaim_distance: 32 on AMD/Hygon (and recordings without a vendor), 30 otherwise, from the header's cpu_vendor",
    "wake_wide: from the waker's and the wakee's wakee_flips, the waker's last_wakee and its decay stamp read at select_task_rq_fair entry (ABI 3), with record_wakee applied on top and HZ measured from the records' jiffies (kernel_hz_measured); older recordings and tracepoint-only decisions replay record_wakee from the placed wakeups (HZ=250), which misses the flips a thread inherits at fork (the wake_wide_flips_unknown bucket)",
    "per-CPU kthread stacking rule from the waker's PF_KTHREAD and nr_cpus_allowed (ABI 2); in_task() is not readable, assumed true unless the waker is an idle task (pid 0); not applied on older recordings",
    "cluster (SD_CLUSTER, select_idle_smt over the cluster) and asymmetric-capacity paths (select_idle_capacity, asym_fits_cpu) are not modelled: symmetric CPUs without clusters assumed",
    "kernel flavour (SIS_UTIL / SIS_PROP / full scan) from the recorded sched_features; from the release string only when the recording has no features (then wrong for kernels that backported SIS_UTIL or turned SIS_PROP on); fidelity.chosen_from says which",
    "SIS_PROP: the 5.14-6.6 budget (nr = max(4, |LLC| x wake_avg_idle / avg_scan_cost), at most nr - 1 CPUs probed), HZ=250 assumed for the wake_avg_idle ageing; other releases' forms are not modelled",
    "has_idle_cores and nr_idle_scan: probe reads where captured (waker's and prev's LLC), else emulated (hint set on idle entry with idle siblings, cleared by the kernel policy's failed core scan; nr_idle_scan from PELT-like util, 32 ms half-life, refreshed every 4 ms)",
    // Policies' own caveats go here.
    "probes count every idle test (affine step, shortcuts, scan); est_scan_ns = probes x per_probe_ns",
    "queue_mean: run-queue length of the chosen CPU at decision time; est_wait_us = queue x EEVDF base slice 0.75 ms x (1 + ilog2(min(ncpus, 8))), a rough bound",
    "waker slept after a sync wakeup = its next switch-out on the waker CPU blocked (prev_state != 0) within 50 us",
];

/// How many of [`APPROXIMATIONS`] come before the policies' own caveats (the report's order:
/// inputs and state first, then policies, then how the figures are derived).
const GENERAL_BEFORE_POLICIES: usize = 16;

/// Where the evaluator re-decides a wakeup.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionTime {
    /// At the select record (function probes attached).
    SelectTaskRqFair,
    /// At `sched_waking` (tracepoint-only: no wake flags, no kernel inputs).
    SchedWaking,
    /// At `sched_waking`, with the kernel inputs its probe read (tracepoint-only);
    /// `decisions_with_waking_inputs` says how many had them, `decisions_with_stack_sync` how
    /// many of those also had `WF_SYNC` from the waker's stack (the others: no wake flags).
    SchedWakingWithInputs,
}

/// Where `per_probe_ns` comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ProbeCostSource {
    #[serde(
        rename = "median select_task_rq_fair duration / mean modelled probes of the kernel's policy"
    )]
    SelectDurations,
    #[serde(rename = "default 50 ns per probe (no select durations)")]
    Default,
}

impl ProbeCostSource {
    /// The report's wording (the JSON's string).
    pub fn describe(self) -> &'static str {
        match self {
            Self::SelectDurations => {
                "median select_task_rq_fair duration / mean modelled probes of the kernel's policy"
            }
            Self::Default => "default 50 ns per probe (no select durations)",
        }
    }
}

/// Where a policy's choices landed, vs the waker's CPU and vs the previous CPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Locality {
    pub vs_waker: LevelCounts,
    pub vs_prev: LevelCounts,
}

/// Decisions per rule name (rules that fired only), serialized as `{rule: count}`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuleCounts(pub Vec<(&'static str, u64)>);

impl Serialize for RuleCounts {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// [`SleptHist`] buckets by name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SleptBuckets {
    pub le_10us: u64,
    pub le_50us: u64,
    pub le_200us: u64,
    pub le_1ms: u64,
    pub gt_1ms: u64,
    pub preempted: u64,
    pub unresolved: u64,
}

/// What the waker did after sync wakeups (see `shadow::watch`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct SleptReport {
    pub total: u64,
    /// Percent of resolved cases where the waker blocked within the threshold.
    pub slept_within_threshold_pct: Option<f64>,
    pub buckets: SleptBuckets,
}

impl From<&SleptHist> for SleptReport {
    fn from(h: &SleptHist) -> Self {
        let [le_10us, le_50us, le_200us, le_1ms, gt_1ms] = h.slept;
        Self {
            total: h.total(),
            slept_within_threshold_pct: h.slept_within_threshold_pct(),
            buckets: SleptBuckets {
                le_10us,
                le_50us,
                le_200us,
                le_1ms,
                gt_1ms,
                preempted: h.preempted,
                unresolved: h.unresolved,
            },
        }
    }
}

/// One policy's figures (the baseline included). Shares are `None` when nothing was
/// evaluated, never 0.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PolicyRow {
    /// Registry name (the key of the JSON's `policies` object).
    #[serde(skip)]
    pub name: &'static str,
    #[serde(rename = "description")]
    pub describe: &'static str,
    pub evaluated: u64,
    pub agreement: Option<f64>,
    pub idle_pct: Option<f64>,
    pub stacked_pct: Option<f64>,
    pub probes_mean: Option<f64>,
    /// The median, for the predicted median scan cost (`compare::predict`).
    pub probes_p50: Option<u32>,
    pub probes_p99: Option<u32>,
    pub est_scan_ns_mean: Option<f64>,
    pub migrations: u64,
    pub migrations_pct: Option<f64>,
    pub placement: Locality,
    pub exact_inputs_pct: Option<f64>,
    /// Mean run-queue length of the chosen CPU at decision time (0 when idle).
    pub queue_mean: Option<f64>,
    /// Mean estimated wait before running: queue length x the EEVDF base slice (approximate).
    pub est_wait_us_mean: Option<f64>,
    pub rules: RuleCounts,
    /// This row minus the kernel model's ([`ShadowReport::model`]), on the same decisions:
    /// what the policy changes, without the model's own error. All n/a when it cannot differ.
    pub vs_model: Deltas,
    /// Why this row cannot differ from the model's in this capture (its deltas are n/a).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cannot_differ: Option<&'static str>,
    /// For policies that queued wakees behind the waker: did the waker sleep? (unfiltered
    /// reports only: the watch is not per task).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waker_slept_after: Option<SleptReport>,
    /// The cache-placement questions.
    pub cache: CacheRow,
    /// The kernel's `select_idle_cpu` as the policy runs it.
    pub scan: ScanRow,
}

/// How often a policy runs the kernel's idle scan (`select_idle_cpu`) and how deep. On the
/// observed row: the scan the debug-info probes counted where they were on (an idle-core walk
/// counts one test per core there, one per CPU in the model), else the model's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ScanRow {
    /// Of all wakeups, those that ran `select_idle_cpu`.
    pub scans_pct: Option<f64>,
    /// CPUs tested per scan, mean (`None` when no scan ran).
    pub cpus_per_scan: Option<f64>,
    /// CPUs tested per wakeup, mean.
    pub tests_mean: Option<f64>,
}

/// One policy's answers to the questions the cache-aware and pick-idle proposals raise. Each
/// is `None` where nothing qualified (no process with a preferred LLC, no task woken twice,
/// nothing stacked, no multi-threaded process).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct CacheRow {
    /// Of the wakeups whose process had a preferred LLC (modelled), placed in it.
    pub preferred_llc_pct: Option<f64>,
    /// Of the wakeups of a task seen woken before, placed in another LLC than last time.
    pub llc_moves_pct: Option<f64>,
    /// Of all wakeups, stacked on a busy CPU while a CPU of the same LLC was idle.
    pub stacked_idle_left_pct: Option<f64>,
    /// Idle CPUs in that LLC at those stackings, mean.
    pub idle_left_mean: Option<f64>,
    /// LLCs the policy placed a multi-threaded process's wakees in, mean over processes.
    pub llcs_per_process: Option<f64>,
}

impl PolicyRow {
    fn new(
        p: &dyn Policy,
        m: &PolicyMetrics,
        per_probe_ns: f64,
        base_slice_us: f64,
        slept: bool,
    ) -> Self {
        let own = p.rules();
        let rules = (0..Rule::SLOTS)
            .filter(|&i| m.rules[i] > 0)
            .filter_map(|i| Some((Rule::from_index(i)?.name(own)?, m.rules[i])))
            .collect();
        Self {
            name: p.name(),
            describe: p.describe(),
            evaluated: m.evaluated,
            agreement: m.agreement(),
            idle_pct: pct_of(m.idle, m.evaluated),
            stacked_pct: pct_of(m.stacked, m.evaluated),
            probes_mean: m.probes_mean(),
            probes_p50: m.probes_quantile(0.5),
            probes_p99: m.probes_quantile(0.99),
            est_scan_ns_mean: m.probes_mean().map(|x| x * per_probe_ns),
            migrations: m.migrations,
            migrations_pct: pct_of(m.migrations, m.evaluated),
            placement: Locality {
                vs_waker: LevelCounts(m.vs_waker),
                vs_prev: LevelCounts(m.vs_prev),
            },
            exact_inputs_pct: pct_of(m.exact, m.evaluated),
            queue_mean: m.queue_mean(),
            est_wait_us_mean: m.queue_mean().map(|q| q * base_slice_us),
            rules: RuleCounts(rules),
            vs_model: Deltas::default(),
            cannot_differ: None,
            waker_slept_after: (slept && m.behind_waker > 0).then(|| (&m.slept).into()),
            scan: ScanRow {
                scans_pct: m.scans_pct(),
                cpus_per_scan: m.cpus_per_scan(),
                tests_mean: m.scan_tests_mean(),
            },
            cache: CacheRow {
                preferred_llc_pct: pct_of(m.cache.pref_in, m.cache.pref_known),
                llc_moves_pct: pct_of(m.cache.moves, m.cache.moves_known),
                stacked_idle_left_pct: pct_of(m.cache.idle_left, m.evaluated),
                idle_left_mean: (m.cache.idle_left > 0)
                    .then(|| m.cache.idle_left_cpus as f64 / m.cache.idle_left as f64),
                llcs_per_process: None,
            },
        }
    }
}

/// Differences of one row's figures from another's: shares in percentage points, the probes
/// relative in percent; `None` where either side is n/a (or the base of a relative change is 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Deltas {
    pub idle_pt: Option<f64>,
    pub stacked_pt: Option<f64>,
    pub migrations_pt: Option<f64>,
    pub probes_pct: Option<f64>,
}

impl Deltas {
    /// `row - base`.
    pub fn between(row: &PolicyRow, base: &PolicyRow) -> Self {
        let d = |a: Option<f64>, b: Option<f64>| Some(a? - b?);
        Self {
            idle_pt: d(row.idle_pct, base.idle_pct),
            stacked_pt: d(row.stacked_pct, base.stacked_pct),
            migrations_pt: d(row.migrations_pct, base.migrations_pct),
            probes_pct: match (row.probes_mean, base.probes_mean) {
                (Some(a), Some(b)) if b > 0.0 => Some((a - b) * 100.0 / b),
                _ => None,
            },
        }
    }
}

/// Disagreements per [`Bucket`], serialized as `{bucket name: count}` (every bucket).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BucketCounts(pub [u64; Bucket::COUNT]);

impl BucketCounts {
    /// Non-empty buckets, in classification order.
    pub fn nonzero(&self) -> impl Iterator<Item = (Bucket, u64)> + '_ {
        Bucket::iter().zip(self.0).filter(|&(_, n)| n > 0)
    }
}

impl Serialize for BucketCounts {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(Bucket::COUNT))?;
        for (b, n) in Bucket::iter().zip(self.0) {
            m.serialize_entry(b.name(), &n)?;
        }
        m.end()
    }
}

/// How well the shadow of the running kernel's policy reproduces the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct FidelityReport {
    /// Name of that policy.
    pub policy: &'static str,
    /// What chose it: the recording's scheduler features, or (without them) its kernel release.
    pub chosen_from: crate::shadow::policy::FlavourSource,
    /// Its registry index (its row in [`ShadowReport::policies`]).
    #[serde(skip)]
    pub policy_id: PolicyId,
    pub agreement: Option<f64>,
    pub evaluated: u64,
    pub exact_inputs_evaluated: u64,
    pub exact_inputs_agreement: Option<f64>,
    pub disagreements: BucketCounts,
}

impl FidelityReport {
    fn new(
        policy: &'static str,
        chosen_from: crate::shadow::policy::FlavourSource,
        policy_id: PolicyId,
        f: &Fidelity,
    ) -> Self {
        Self {
            policy,
            chosen_from,
            policy_id,
            agreement: f.agreement(),
            evaluated: f.evaluated,
            exact_inputs_evaluated: f.exact_evaluated,
            exact_inputs_agreement: f.exact_agreement(),
            disagreements: BucketCounts(f.buckets),
        }
    }
}

/// `{policy name: slept report}` for the policies that queued wakees behind the waker.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ByPolicy(pub Vec<(&'static str, SleptReport)>);

impl Serialize for ByPolicy {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// The WF_SYNC check: did the waker sleep right after a sync wakeup?
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WfSyncReport {
    /// "Slept right after" = blocked within this many microseconds.
    pub threshold_us: u64,
    pub sync_wakeups: SleptReport,
    pub queued_behind_waker: ByPolicy,
}

/// The shadow evaluation's results: the `shadow` section of the snapshot.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ShadowReport {
    /// Always true: a policy's choice does not change later events.
    pub open_loop: bool,
    /// Rows, `evaluated` and fidelity cover a subset (a task filter); the rest is unfiltered.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub filtered: bool,
    pub evaluated: u64,
    pub late_decisions: u64,
    pub excluded: super::Excluded,
    pub decision_time: DecisionTime,
    /// Tracepoint-only decisions made with the inputs read at `sched_waking`.
    #[serde(skip_serializing_if = "crate::format::is_zero")]
    pub decisions_with_waking_inputs: u64,
    /// Of those, the decisions whose `WF_SYNC` the probe read from the waker's stack.
    #[serde(skip_serializing_if = "crate::format::is_zero")]
    pub decisions_with_stack_sync: u64,
    pub per_probe_ns: f64,
    pub per_probe_source: ProbeCostSource,
    /// The traced kernel's HZ from the select records' jiffies (`None`: no ABI-3 records, or
    /// under half a second of them; 250 is assumed then).
    pub kernel_hz_measured: Option<u32>,
    /// The policy that models the running kernel: every row's `vs_model` is against it.
    pub model: &'static str,
    /// The model's own error: the model's row minus the observed row (what a delta against
    /// the observed row would mix into every policy's effect).
    pub model_error: Deltas,
    /// Registry order, baseline first; serialized as `{name: row}`.
    #[serde(serialize_with = "rows_by_name")]
    pub policies: Vec<PolicyRow>,
    pub fidelity: FidelityReport,
    pub wf_sync: WfSyncReport,
    /// The model's idle scan against the one the debug-info probes measured, on the same
    /// decisions (absent without those probes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scan_model: Option<super::scan_model::ScanModelReport>,
    /// The processes with the most evaluated wakeups: threads, LLCs ran on and placed in.
    pub processes: Vec<super::spread::ProcessRow>,
    pub approximations: Vec<&'static str>,
}

fn rows_by_name<S: Serializer>(rows: &[PolicyRow], s: S) -> Result<S::Ok, S::Error> {
    let mut m = s.serialize_map(Some(rows.len()))?;
    for r in rows {
        m.serialize_entry(r.name, r)?;
    }
    m.end()
}

impl ShadowEval {
    /// ns per probe for the scan-time estimate, and where it came from.
    pub fn per_probe_ns(&self) -> (f64, ProbeCostSource) {
        self.per_probe_ns_of(&self.policy_metrics())
    }

    fn per_probe_ns_of(&self, all: &[PolicyMetrics]) -> (f64, ProbeCostSource) {
        let km = all.get(self.kernel.0).and_then(PolicyMetrics::probes_mean);
        match (&self.select_ns, km) {
            (Some(h), Some(pm)) if !h.is_empty() && pm > 0.0 => (
                (h.value_at_quantile(0.5) as f64 / pm).clamp(1.0, 2000.0),
                ProbeCostSource::SelectDurations,
            ),
            _ => (DEFAULT_PROBE_NS, ProbeCostSource::Default),
        }
    }

    /// EEVDF base slice, 0.75 ms x (1 + ilog2(min(ncpus, 8))), for the wait estimate.
    pub fn base_slice_us(&self) -> f64 {
        let n = self.nr_cpus.clamp(1, 8) as u32;
        750.0 * f64::from(1 + n.ilog2())
    }

    /// The report; with `subset`, its rows, `evaluated` and fidelity are the subset's.
    pub fn report(&self, subset: Option<&Tally>) -> ShadowReport {
        let all = self.policy_metrics();
        let (ns, src) = self.per_probe_ns_of(&all);
        let slice = self.base_slice_us();
        let (metrics, fidelity, evaluated, spread, scan_model) = match subset {
            Some(t) => (
                &t.metrics,
                &t.fidelity,
                t.evaluated(),
                &t.spread,
                &t.scan_model,
            ),
            None => (
                &all,
                &self.fidelity,
                self.evaluated,
                &self.spread,
                &self.scan_model,
            ),
        };
        let per_process = spread.llcs_per_process();
        let empty = PolicyMetrics::default();
        let mut policies: Vec<PolicyRow> = self
            .policies
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let m = metrics.get(i).unwrap_or(&empty);
                let mut row = PolicyRow::new(p.as_ref(), m, ns, slice, subset.is_none());
                row.cache.llcs_per_process = per_process.get(i).copied().flatten();
                row
            })
            .collect();
        let model_row = policies.get(self.kernel.0).cloned();
        let mut model_error = Deltas::default();
        if let Some(m) = &model_row {
            if let Some(obs) = policies.first() {
                model_error = Deltas::between(m, obs);
            }
            for (row, p) in policies.iter_mut().zip(&self.policies) {
                let flags_known = self.select_mode || self.with_stack_flags > 0;
                match p.needs_select_records().filter(|_| !flags_known) {
                    Some(why) => row.cannot_differ = Some(why),
                    None => row.vs_model = Deltas::between(row, m),
                }
            }
        }
        let queued = self
            .policies
            .iter()
            .zip(&all)
            .filter(|(_, m)| m.behind_waker > 0)
            .map(|(p, m)| (p.name(), (&m.slept).into()))
            .collect();
        let (inputs, derived) = APPROXIMATIONS.split_at(GENERAL_BEFORE_POLICIES);
        let mut approximations = inputs.to_vec();
        for a in self.policies.iter().flat_map(|p| p.approximations()) {
            if !approximations.contains(a) {
                approximations.push(a);
            }
        }
        approximations.extend_from_slice(derived);
        let kname = self
            .policies
            .get(self.kernel.0)
            .map_or(super::policies::name::SIS_UTIL, |p| p.name());
        ShadowReport {
            open_loop: true,
            filtered: subset.is_some(),
            evaluated,
            late_decisions: self.late,
            excluded: self.excluded,
            decision_time: if self.select_mode {
                DecisionTime::SelectTaskRqFair
            } else if self.with_waking_inputs > 0 {
                DecisionTime::SchedWakingWithInputs
            } else {
                DecisionTime::SchedWaking
            },
            decisions_with_waking_inputs: self.with_waking_inputs,
            decisions_with_stack_sync: self.with_stack_flags,
            per_probe_ns: ns,
            per_probe_source: src,
            kernel_hz_measured: self.hz.measured(),
            model: kname,
            model_error,
            policies,
            fidelity: FidelityReport::new(kname, self.flavour_source, self.kernel, fidelity),
            wf_sync: WfSyncReport {
                threshold_us: SLEPT_THRESHOLD_NS / 1000,
                sync_wakeups: (&self.sync.all).into(),
                queued_behind_waker: ByPolicy(queued),
            },
            scan_model: (scan_model.decisions > 0).then(|| {
                let mut r = scan_model.clone();
                r.model = kname;
                r
            }),
            processes: spread.top(),
            approximations,
        }
    }
}
