//! Waker CPU x chosen CPU: how many placed wakeups went from each CPU to each CPU. The diagonal
//! is `same_cpu`, blocks along it are LLCs, and off-diagonal blocks are the cross-LLC and
//! cross-node traffic a placement policy is judged by. Past [`PER_CPU_MAX`] CPUs a per-CPU grid
//! no longer fits a terminal (nor a glance), so the axes become LLCs: LLC x LLC.
//!
//! Memory is the square of the axis length: at most 64^2 counters per CPU, or LLCs^2 up to
//! [`AXIS_MAX`] LLCs. Past that (no machine has so many LLCs, but a recording can claim 8192 in
//! a megabyte) neighbouring LLCs share an axis position, so the grid stays [`AXIS_MAX`]^2
//! (512 KiB) instead of growing to gigabytes in memory and in the report.
use serde::Serialize;

use super::part::{Ctx, Part, Placed};
use crate::format::Header;
use crate::topology::Topology;

/// Largest machine drawn per CPU; larger ones are drawn LLC x LLC.
pub const PER_CPU_MAX: usize = 64;
/// Most axis positions; more LLCs are grouped, `step` consecutive ones per position.
pub const AXIS_MAX: usize = 256;

/// What one axis step is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Axis {
    #[default]
    Cpu,
    Llc,
}

/// The fold.
#[derive(Clone, Debug)]
pub struct Matrix {
    axis: Axis,
    /// CPU number -> axis position (`u32::MAX`: not in the topology).
    pos: Vec<u32>,
    /// Axis position -> label (CPU number, or the first LLC id of the position).
    labels: Vec<u32>,
    /// LLCs per axis position (1 but on topologies of more than [`AXIS_MAX`] LLCs).
    step: u32,
    /// `labels.len()`^2, row-major: `[waker][chosen]`.
    counts: Vec<u64>,
    /// Placements with a CPU the topology does not know (hot-plugged, or a damaged event).
    outside: u64,
}

impl Matrix {
    pub fn new(t: &Topology) -> Self {
        let axis = if t.nr_cpus() <= PER_CPU_MAX {
            Axis::Cpu
        } else {
            Axis::Llc
        };
        let mut pos = vec![u32::MAX; t.cpu_bound()];
        let step = match axis {
            Axis::Cpu => 1,
            Axis::Llc => t.llcs.len().div_ceil(AXIS_MAX).max(1),
        };
        let labels: Vec<u32> = match axis {
            Axis::Cpu => t.cpus.iter().map(|c| c.cpu).collect(),
            Axis::Llc => t.llcs.iter().step_by(step).map(|g| g.id).collect(),
        };
        for (i, c) in t.cpus.iter().enumerate() {
            if let Some(p) = pos.get_mut(c.cpu as usize) {
                *p = match axis {
                    Axis::Cpu => i as u32,
                    Axis::Llc => c.llc / step as u32,
                };
            }
        }
        Self {
            axis,
            pos,
            step: step as u32,
            counts: vec![0; labels.len() * labels.len()],
            labels,
            outside: 0,
        }
    }

    /// A placed wakeup (not a fork).
    #[inline]
    pub fn add(&mut self, waker_cpu: u32, chosen_cpu: u32) {
        let n = self.labels.len();
        let at = |c: u32| {
            self.pos
                .get(c as usize)
                .copied()
                .filter(|&p| (p as usize) < n)
        };
        match (at(waker_cpu), at(chosen_cpu)) {
            (Some(w), Some(c)) => self.counts[w as usize * n + c as usize] += 1,
            _ => self.outside += 1,
        }
    }

    pub fn section(&self) -> MatrixSection {
        let n = self.labels.len();
        MatrixSection {
            axis: self.axis,
            labels: self.labels.clone(),
            step: self.step,
            counts: self.counts.chunks(n.max(1)).map(<[u64]>::to_vec).collect(),
            total: self.counts.iter().sum(),
            outside: self.outside,
        }
    }
}

/// Cumulative (since the start or the last filter change / reset).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MatrixSection {
    pub axis: Axis,
    /// Per axis position: the CPU number, or the (first) LLC id.
    pub labels: Vec<u32>,
    /// LLCs per axis position; left out of the JSON when 1 (every real machine).
    #[serde(skip_serializing_if = "is_one")]
    pub step: u32,
    /// `counts[waker][chosen]`, in axis order.
    pub counts: Vec<Vec<u64>>,
    pub total: u64,
    pub outside: u64,
}

fn is_one(v: &u32) -> bool {
    *v == 1
}

impl MatrixSection {
    /// The largest cell, for shading.
    pub fn max(&self) -> u64 {
        self.counts.iter().flatten().copied().max().unwrap_or(0)
    }
}

impl Part for Matrix {
    fn new(h: &Header) -> Self {
        Self::new(&h.topology)
    }

    #[inline]
    fn on_placement(&mut self, _: &Ctx, pl: &Placed) {
        self.add(pl.p.waker_cpu, pl.p.chosen_cpu);
    }

    fn rescope(&mut self, cx: &Ctx) {
        *self = Self::new(cx.topology);
    }

    fn fill(&self, _: &Ctx, s: &mut super::Snapshot) {
        s.matrix = self.section();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::fixture;

    fn topo(name: &str) -> Topology {
        fixture::named_topology(name).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
    }

    #[test]
    fn per_cpu_cells_count_waker_to_chosen() {
        // 2 x 12C/24T Xeon: 48 CPUs, drawn per CPU.
        let t = topo("xeon-e5-2690v3");
        let mut m = Matrix::new(&t);
        for (w, c) in [(0, 0), (0, 5), (0, 5), (3, 1), (47, 47), (48, 1), (0, 200)] {
            m.add(w, c);
        }
        let s = m.section();
        assert_eq!(s.axis, Axis::Cpu);
        assert_eq!(s.labels, (0..48).collect::<Vec<_>>());
        assert_eq!(s.counts.len(), 48);
        assert_eq!(s.counts[0][5], 2);
        assert_eq!(
            (s.counts[0][0], s.counts[3][1], s.counts[47][47]),
            (1, 1, 1)
        );
        assert_eq!(s.total, 5);
        assert_eq!(s.outside, 2, "CPU 48 and 200 are not in the topology");
        assert_eq!(s.max(), 2);
    }

    #[test]
    fn big_machines_are_llc_by_llc() {
        // 2 x 64C/128T Zen3 NPS4: 256 CPUs, 16 LLCs of 8 cores (CPU n and n+128 siblings).
        let t = topo("zen3-nps4");
        let mut m = Matrix::new(&t);
        // CPU 0 and 128 are SMT siblings in LLC 0; CPU 8 is LLC 1's first core.
        for (w, c) in [(0, 128), (128, 7), (0, 8), (255, 0)] {
            m.add(w, c);
        }
        let s = m.section();
        assert_eq!(s.axis, Axis::Llc);
        assert_eq!(s.labels.len(), 16);
        let llc = |cpu: u32| t.cpu(cpu).map(|c| c.llc as usize).expect("cpu");
        assert_eq!(s.counts[llc(0)][llc(0)], 2);
        assert_eq!(s.counts[llc(0)][llc(8)], 1);
        assert_ne!(llc(0), llc(8));
        assert_eq!(s.counts[llc(255)][llc(0)], 1);
        assert_eq!(s.total, 4);
        assert_eq!(s.step, 1);
    }

    #[test]
    fn thousands_of_llcs_share_positions() {
        use crate::topology::fixture::{Symmetric, SysfsSpec};
        // 1024 single-core LLCs: 4 per axis position.
        let spec = SysfsSpec::symmetric(Symmetric {
            packages: 1,
            cores_per_package: 1024,
            threads_per_core: 1,
            cores_per_llc: 1,
            nodes_per_package: 1,
            local: 10,
            same_package: 12,
            remote: 32,
        });
        let t = spec.read_back().expect("topology");
        assert_eq!(t.llcs.len(), 1024);
        let mut m = Matrix::new(&t);
        for (w, c) in [(0, 3), (0, 4), (1023, 0)] {
            m.add(w, c);
        }
        let s = m.section();
        assert_eq!((s.labels.len(), s.step), (AXIS_MAX, 4));
        assert_eq!(s.counts.len(), AXIS_MAX);
        assert_eq!(
            (s.counts[0][0], s.counts[0][1], s.counts[255][0]),
            (1, 1, 1)
        );
        assert_eq!(s.total, 3);
    }
}
