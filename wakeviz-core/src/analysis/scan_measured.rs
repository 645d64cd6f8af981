//! The idle scan as the debug-info probes counted it, for in-scope wakeups: how many
//! placements scanned, how many CPUs each scan tested, which paths ran (the figures the
//! SIS_UTIL discussion argues with: "less CPU scans").
use super::{
    Snapshot,
    part::{Ctx, Part, ScanSample},
    snapshot::MeasuredScan,
};
use crate::{format::Header, format::ScanSource};

/// Scans testing this many or more CPUs share the last bucket of the distribution.
pub const TESTED_BUCKETS: usize = 257;

pub(crate) struct MeasuredScanPart {
    on: bool,
    m: MeasuredScan,
}

impl Part for MeasuredScanPart {
    fn new(h: &Header) -> Self {
        Self {
            on: h.scan_source == ScanSource::DebugInfo,
            m: MeasuredScan::default(),
        }
    }

    #[inline]
    fn on_scan(&mut self, _: &Ctx, s: &ScanSample) {
        let Some(x) = s.measured else {
            return;
        };
        let m = &mut self.m;
        m.calls += 1;
        m.smt_calls += u64::from(x.smt());
        if !x.ran() {
            return;
        }
        m.scans += 1;
        m.core_scans += u64::from(x.core());
        m.cpus_tested += u64::from(x.cpus);
        let b = usize::from(x.cpus).min(TESTED_BUCKETS - 1);
        if m.by_cpus_tested.len() <= b {
            m.by_cpus_tested.resize(b + 1, 0);
        }
        m.by_cpus_tested[b] += 1;
    }

    fn rescope(&mut self, _: &Ctx) {
        self.m = MeasuredScan::default();
    }

    fn fill(&self, _: &Ctx, s: &mut Snapshot) {
        s.scan_latency.measured = self.on.then(|| self.m.clone());
    }
}
