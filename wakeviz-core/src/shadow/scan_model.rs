//! The shadow's scan model against the scan the debug-info probes measured, on the same
//! decisions: whether the model of the running kernel (SIS_UTIL's `select_idle_cpu`) scanned
//! where the kernel did, and, where both made a plain scan (no idle-core search), how many CPUs
//! each tested. Idle-core scans are left out of the depth: the model counts the CPUs of each
//! core it walks, the probes count `select_idle_core` calls (one per core).
use serde::Serialize;

use super::policy::ScanOut;
use crate::event::ScanMeasure;

/// Depths at or beyond this share the distributions' last bucket.
const BUCKETS: usize = 65;

/// What the model's scan did on one decision.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ModelScan {
    pub ran: bool,
    pub core: bool,
    pub probes: u32,
}

impl ModelScan {
    pub(super) fn of(s: &ScanOut) -> Self {
        Self {
            // A zero budget returns before any test: the kernel's `nr == 1` early return, which
            // the probes see as an entry with no test.
            ran: s.ran,
            core: s.core_failed || s.rule == super::rule::Stage::ScanCore,
            probes: s.probes,
        }
    }
}

/// The comparison, as the report and the JSON carry it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ScanModelReport {
    /// The policy whose scan is compared (the model of the running kernel).
    pub model: &'static str,
    /// Decisions both sides saw: the probes watched the call and the model decided it.
    pub decisions: u64,
    /// Scans: both, the kernel only, the model only.
    pub both_scanned: u64,
    pub kernel_only: u64,
    pub model_only: u64,
    /// Plain scans on both sides (the depth comparison's decisions).
    pub plain: u64,
    /// CPUs tested over those, by the kernel and by the model.
    pub kernel_tests: u64,
    pub model_tests: u64,
    /// Plain scans where both tested the same number of CPUs.
    pub equal_depth: u64,
    /// Plain scans by CPUs tested (index; the last bucket holds 64 and more).
    pub kernel_by_depth: Vec<u64>,
    pub model_by_depth: Vec<u64>,
}

impl ScanModelReport {
    pub(super) fn add(&mut self, model: ModelScan, kernel: ScanMeasure) {
        self.decisions += 1;
        match (kernel.ran(), model.ran) {
            (true, true) => self.both_scanned += 1,
            (true, false) => self.kernel_only += 1,
            (false, true) => self.model_only += 1,
            (false, false) => return,
        }
        if !(kernel.ran() && model.ran) || kernel.core() || model.core {
            return;
        }
        self.plain += 1;
        let (k, m) = (u64::from(kernel.cpus), u64::from(model.probes));
        self.kernel_tests += k;
        self.model_tests += m;
        self.equal_depth += u64::from(k == m);
        bump(&mut self.kernel_by_depth, k);
        bump(&mut self.model_by_depth, m);
    }

    /// Mean CPUs tested per plain scan: (kernel, model).
    pub fn mean_depth(&self) -> Option<(f64, f64)> {
        (self.plain > 0).then(|| {
            let n = self.plain as f64;
            (self.kernel_tests as f64 / n, self.model_tests as f64 / n)
        })
    }
}

fn bump(v: &mut Vec<u64>, x: u64) {
    let i = usize::try_from(x).unwrap_or(usize::MAX).min(BUCKETS - 1);
    if v.len() <= i {
        v.resize(i + 1, 0);
    }
    v[i] += 1;
}

#[cfg(test)]
mod tests {
    use super::*;
    use wakeviz_common::scan_path;

    fn measured(cpus: u16, path: u16) -> ScanMeasure {
        ScanMeasure { cpus, path }
    }

    #[test]
    fn depth_is_compared_on_plain_scans_only() {
        let mut r = ScanModelReport::default();
        let model = |ran, core, probes| ModelScan { ran, core, probes };
        r.add(model(true, false, 4), measured(4, scan_path::SCAN));
        r.add(model(true, false, 2), measured(5, scan_path::SCAN));
        // Idle-core scans: counted as scans, not in the depth.
        r.add(
            model(true, true, 8),
            measured(4, scan_path::SCAN | scan_path::CORE),
        );
        r.add(model(false, false, 0), measured(3, scan_path::SCAN));
        r.add(model(true, false, 1), measured(0, 0));
        r.add(model(false, false, 0), measured(0, 0));
        assert_eq!(r.decisions, 6);
        assert_eq!((r.both_scanned, r.kernel_only, r.model_only), (3, 1, 1));
        assert_eq!(r.plain, 2);
        assert_eq!((r.kernel_tests, r.model_tests, r.equal_depth), (9, 6, 1));
        assert_eq!(r.mean_depth(), Some((4.5, 3.0)));
        assert_eq!(r.kernel_by_depth, vec![0, 0, 0, 0, 1, 1]);
        assert_eq!(r.model_by_depth, vec![0, 0, 1, 0, 1]);
    }

    #[test]
    fn deep_scans_share_the_last_bucket() {
        let mut r = ScanModelReport::default();
        let m = ModelScan {
            ran: true,
            core: false,
            probes: 500,
        };
        r.add(m, measured(300, scan_path::SCAN));
        assert_eq!(r.kernel_by_depth.len(), BUCKETS);
        assert_eq!(r.model_by_depth[BUCKETS - 1], 1);
    }
}
