//! Per-policy figures over a subset of the scored placements (the wakees passing a task
//! filter, say): the evaluator hands out each scored placement as a [`Scored`], and a
//! [`Tally`] records the ones the caller keeps with the same `PolicyMetrics::record` the
//! evaluator uses, so nobody re-scores outside it. `ShadowEval::report(Some(&tally))` turns
//! it into the report's rows and fidelity.
use super::{
    eval::ShadowEval,
    fidelity::{Fidelity, Verdict},
    metrics::{Outcome, PolicyMetrics},
    spread::Spread,
};
use crate::topology::Level;

/// One scored placement, as `ShadowEval::on_placement` scored it.
#[derive(Clone, Copy, Debug)]
pub struct Scored<'a> {
    pub pid: u32,
    /// The wakee's process, when known.
    pub tgid: Option<u32>,
    /// Each CPU's LLC (the evaluator's dense topology).
    pub llc_of: &'a [u32],
    /// The kernel's CPU the evaluator scored against (the select record's return value when
    /// there is one, else the `sched_wakeup` CPU).
    pub kernel: u32,
    /// Waker and previous CPU of the decision.
    pub waker: u32,
    pub prev: u32,
    /// Each policy's outcome, registry order (the baseline's filled in from the kernel).
    pub outcomes: &'a [Outcome],
    /// Each outcome's level vs the waker's and vs the previous CPU.
    pub levels: &'a [(Option<Level>, Option<Level>)],
    /// The fidelity verdict of the policy standing for the kernel.
    pub verdict: Verdict,
    /// The model's idle scan and the one the debug-info probes measured, where both are known.
    pub scan: Option<(super::scan_model::ModelScan, crate::event::ScanMeasure)>,
}

/// Per-policy metrics and fidelity over a subset of the scored placements.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    pub(super) metrics: Vec<PolicyMetrics>,
    pub(super) fidelity: Fidelity,
    pub(super) spread: Spread,
    pub(super) scan_model: super::scan_model::ScanModelReport,
}

impl Tally {
    /// An empty tally sized for `ev`'s policies (`Default` sizes itself on the first add).
    pub fn new(ev: &ShadowEval) -> Self {
        Self {
            metrics: vec![PolicyMetrics::default(); ev.policy_count()],
            fidelity: Fidelity::default(),
            spread: Spread::new(ev.topo().n_llcs(), ev.policy_count()),
            scan_model: Default::default(),
        }
    }

    pub fn add(&mut self, s: &Scored<'_>) {
        if self.metrics.len() < s.outcomes.len() {
            self.metrics
                .resize(s.outcomes.len(), PolicyMetrics::default());
        }
        for ((m, o), &(lw, lp)) in self.metrics.iter_mut().zip(s.outcomes).zip(s.levels) {
            m.record(o, s.kernel, s.prev, lw, lp);
        }
        self.fidelity.add(&s.verdict);
        if let Some((m, k)) = s.scan {
            self.scan_model.add(m, k);
        }
        if !self.spread.is_sized() {
            let valid = s.llc_of.iter().filter(|&&l| l != super::topo::NONE);
            let n_llcs = valid.max().map_or(1, |&l| l as usize + 1);
            self.spread = Spread::new(n_llcs, s.outcomes.len());
        }
        if let Some(g) = s.tgid {
            let llc = |o: &Outcome| s.llc_of.get(o.cpu as usize).copied().unwrap_or(0);
            self.spread.on_placed(g, s.pid, s.outcomes.iter().map(llc));
        }
    }

    /// Placements added.
    pub fn evaluated(&self) -> u64 {
        self.fidelity.evaluated
    }
}
