//! Scan latency of in-scope wakeups, overall and by the chosen CPU's LLC (see
//! [`crate::format::ScanSource`] for what is measured).
use super::{
    Snapshot,
    latency::{Hist, LatencySummary},
    part::{Ctx, Part, ScanSample},
    snapshot::{LlcLatency, SCAN_UNIT_NS},
};
use crate::format::Header;

pub(crate) struct ScanPart {
    overall: Hist,
    per_llc: Vec<Hist>,
}

impl Part for ScanPart {
    fn new(h: &Header) -> Self {
        Self {
            overall: Hist::fine(),
            per_llc: (0..h.topology.llcs.len()).map(|_| Hist::coarse()).collect(),
        }
    }

    #[inline]
    fn on_scan(&mut self, cx: &Ctx, s: &ScanSample) {
        let Some(ns) = s.ns else {
            return;
        };
        self.overall.record(ns);
        if let Some(h) = cx
            .levels
            .llc(s.chosen_cpu)
            .and_then(|l| self.per_llc.get_mut(l as usize))
        {
            h.record(ns);
        }
    }

    fn rescope(&mut self, _: &Ctx) {
        self.overall.reset();
        self.per_llc.iter_mut().for_each(Hist::reset);
    }

    fn fill(&self, cx: &Ctx, s: &mut Snapshot) {
        let sec = &mut s.scan_latency;
        sec.overall = LatencySummary::of(&self.overall, SCAN_UNIT_NS);
        sec.per_llc = cx
            .topology
            .llcs
            .iter()
            .zip(&self.per_llc)
            .map(|(g, h)| LlcLatency {
                id: g.id,
                cpus: g.cpus.to_list(),
                latency: LatencySummary::of(h, SCAN_UNIT_NS),
            })
            .collect();
    }
}
