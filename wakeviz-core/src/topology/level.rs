use serde::{Deserialize, Serialize};

/// Where a wakeup landed relative to a reference CPU (the waker's or the task's previous CPU),
/// closest first. The names are the report's and the JSON's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    SameCpu,
    SmtSibling,
    SameLlc,
    /// Another LLC of the same NUMA node.
    SameNode,
    /// Another node of the same package: exists only with NPS2/NPS4-like layouts.
    SamePackage,
    CrossPackage,
}

impl Level {
    pub const ALL: [Self; 6] = [
        Self::SameCpu,
        Self::SmtSibling,
        Self::SameLlc,
        Self::SameNode,
        Self::SamePackage,
        Self::CrossPackage,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            Self::SameCpu => "same_cpu",
            Self::SmtSibling => "smt_sibling",
            Self::SameLlc => "same_llc",
            Self::SameNode => "same_node",
            Self::SamePackage => "same_package",
            Self::CrossPackage => "cross_package",
        }
    }

    pub const fn index(self) -> usize {
        self as usize
    }

    /// The closest level two CPUs share, given their (core, LLC, node, package) ids: the one
    /// rule both [`super::Topology::level`] and [`LevelMap::level`] apply.
    #[inline]
    pub fn between(same_cpu: bool, a: [u32; 4], b: [u32; 4]) -> Self {
        if same_cpu {
            Self::SameCpu
        } else if a[0] == b[0] {
            Self::SmtSibling
        } else if a[1] == b[1] {
            Self::SameLlc
        } else if a[2] == b[2] {
            Self::SameNode
        } else if a[3] == b[3] {
            Self::SamePackage
        } else {
            Self::CrossPackage
        }
    }
}

/// Dense per-CPU-number lookup table for [`Level`] classification on the hot path: one 16-byte
/// entry per CPU number (one cache line holds four CPUs) instead of the index walk of
/// [`super::Topology::level`]. Absent CPUs (offline, beyond the topology) classify as `None`.
#[derive(Clone, Debug, Default)]
pub struct LevelMap {
    ids: Vec<CpuIds>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CpuIds {
    core: u32,
    llc: u32,
    node: u32,
    package: u32,
}

const ABSENT: CpuIds = CpuIds {
    core: u32::MAX,
    llc: u32::MAX,
    node: u32::MAX,
    package: u32::MAX,
};

impl LevelMap {
    pub fn new(t: &super::Topology) -> Self {
        let mut ids = vec![ABSENT; t.cpu_bound()];
        for c in &t.cpus {
            ids[c.cpu as usize] = CpuIds {
                core: c.core,
                llc: c.llc,
                node: c.node,
                package: c.package,
            };
        }
        Self { ids }
    }

    #[inline]
    fn get(&self, cpu: u32) -> Option<&CpuIds> {
        self.ids.get(cpu as usize).filter(|c| c.core != u32::MAX)
    }

    /// Same answer as [`super::Topology::level`].
    #[inline]
    pub fn level(&self, a: u32, b: u32) -> Option<Level> {
        let (ca, cb) = (self.get(a)?, self.get(b)?);
        Some(Level::between(
            a == b,
            [ca.core, ca.llc, ca.node, ca.package],
            [cb.core, cb.llc, cb.node, cb.package],
        ))
    }

    /// Index into `Topology::llcs`.
    #[inline]
    pub fn llc(&self, cpu: u32) -> Option<u32> {
        self.get(cpu).map(|c| c.llc)
    }

    /// Index into `Topology::nodes`.
    #[inline]
    pub fn node(&self, cpu: u32) -> Option<u32> {
        self.get(cpu).map(|c| c.node)
    }

    /// One past the highest CPU number known.
    pub fn cpu_bound(&self) -> usize {
        self.ids.len()
    }
}
