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
}

/// Dense per-CPU-number lookup tables for [`Level`] classification on the hot path: four `Vec`
/// reads per CPU instead of the index walk of [`super::Topology::level`], and no `Option` chain.
/// Absent CPUs (offline, beyond the topology) hold `u32::MAX` and classify as `None`.
#[derive(Clone, Debug, Default)]
pub struct LevelMap {
    core: Vec<u32>,
    llc: Vec<u32>,
    node: Vec<u32>,
    package: Vec<u32>,
}

const ABSENT: u32 = u32::MAX;

impl LevelMap {
    pub fn new(t: &super::Topology) -> Self {
        let n = t.cpu_bound();
        let mut m = Self {
            core: vec![ABSENT; n],
            llc: vec![ABSENT; n],
            node: vec![ABSENT; n],
            package: vec![ABSENT; n],
        };
        for c in &t.cpus {
            let i = c.cpu as usize;
            m.core[i] = c.core;
            m.llc[i] = c.llc;
            m.node[i] = c.node;
            m.package[i] = c.package;
        }
        m
    }

    /// Same answer as [`super::Topology::level`].
    #[inline]
    pub fn level(&self, a: u32, b: u32) -> Option<Level> {
        let (a, b) = (a as usize, b as usize);
        let (ca, cb) = (*self.core.get(a)?, *self.core.get(b)?);
        if ca == ABSENT || cb == ABSENT {
            return None;
        }
        Some(if a == b {
            Level::SameCpu
        } else if ca == cb {
            Level::SmtSibling
        } else if self.llc[a] == self.llc[b] {
            Level::SameLlc
        } else if self.node[a] == self.node[b] {
            Level::SameNode
        } else if self.package[a] == self.package[b] {
            Level::SamePackage
        } else {
            Level::CrossPackage
        })
    }

    /// Index into `Topology::llcs`.
    #[inline]
    pub fn llc(&self, cpu: u32) -> Option<u32> {
        self.llc.get(cpu as usize).copied().filter(|&x| x != ABSENT)
    }

    /// Index into `Topology::nodes`.
    #[inline]
    pub fn node(&self, cpu: u32) -> Option<u32> {
        self.node.get(cpu as usize).copied().filter(|&x| x != ABSENT)
    }

    /// One past the highest CPU number known.
    pub fn cpu_bound(&self) -> usize {
        self.core.len()
    }
}
