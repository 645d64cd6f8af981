//! Gaps in each CPU's chain of context switches: a switch whose `prev` is not the task the
//! CPU's previous switch put on it. Each gap is at least one switch the probes never saw, so it
//! checks a capture's completeness where the accounting cannot: a kernel that runs no BPF
//! program while some task is current loses those events before any probe, and the probes
//! offer, and wakeviz delivers, exactly what is left. A CPU's first switch has no predecessor
//! and is never a gap.
use super::{
    Snapshot,
    part::{Ctx, Part},
};
use crate::{
    event::{Event, Switch},
    format::Header,
};

pub(crate) struct SwitchGaps {
    /// Per CPU, the task its last switch put on it (`None`: no switch seen yet).
    on_cpu: Vec<Option<u32>>,
    gaps: u64,
}

impl SwitchGaps {
    fn with_cpus(nr_cpus: usize) -> Self {
        Self {
            on_cpu: vec![None; nr_cpus],
            gaps: 0,
        }
    }

    fn switch(&mut self, sw: &Switch) {
        // A CPU the recorded topology does not have (a hostile file): nothing to chain.
        let Some(slot) = self.on_cpu.get_mut(sw.cpu as usize) else {
            return;
        };
        if slot.is_some_and(|p| p != sw.prev_pid) {
            self.gaps += 1;
        }
        *slot = Some(sw.next_pid);
    }

    /// `None` when no CPU had a switch: n/a rather than 0 gaps.
    fn gaps(&self) -> Option<u64> {
        self.on_cpu.iter().any(Option::is_some).then_some(self.gaps)
    }
}

impl Part for SwitchGaps {
    fn new(h: &Header) -> Self {
        Self::with_cpus(h.topology.nr_cpus())
    }

    #[inline]
    fn on_event(&mut self, _: &Ctx, e: &Event) {
        if let Event::Switch(sw) = e {
            self.switch(sw);
        }
    }

    fn fill(&self, _: &Ctx, s: &mut Snapshot) {
        s.drops.switch_gaps = self.gaps();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sw(cpu: u32, prev_pid: u32, next_pid: u32) -> Switch {
        Switch {
            ts_ns: 1,
            cpu,
            prev_pid,
            next_pid,
            prev_state: 1,
            prev_prio: 120,
            next_prio: 120,
        }
    }

    fn gaps(switches: &[Switch], nr_cpus: usize) -> Option<u64> {
        let mut g = SwitchGaps::with_cpus(nr_cpus);
        for s in switches {
            g.switch(s);
        }
        g.gaps()
    }

    #[test]
    fn a_missing_switch_is_one_gap_per_cpu_chain() {
        // CPU 0: 0 -> 7 -> 8 -> 0, complete. CPU 1: 5 -> 9, then a switch out of 10: the
        // switch 9 -> 10 was never seen. A CPU's first switch is never a gap.
        let ev = [
            sw(0, 0, 7),
            sw(1, 5, 9),
            sw(0, 7, 8),
            sw(1, 10, 0),
            sw(0, 8, 0),
        ];
        assert_eq!(gaps(&ev, 2), Some(1));
        // A CPU beyond the topology is ignored, not a panic or a gap.
        assert_eq!(gaps(&[sw(0, 0, 1), sw(7, 3, 4), sw(0, 1, 0)], 2), Some(0));
        assert_eq!(gaps(&[], 2), None, "no switches: n/a, not 0");
    }
}
