use serde::{Deserialize, Serialize};
use strum::{EnumCount, EnumIter, IntoStaticStr};

/// Where a wakeup landed relative to a reference CPU (the waker's or the task's previous CPU),
/// closest first. The names are the report's and the JSON's (serde and strum agree: tested).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    EnumCount,
    EnumIter,
    IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
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
    /// Every level, closest first: `Level::iter()` as a constant array (its length is the
    /// derived count, so a new variant that is not listed here does not compile; the order
    /// is tested).
    pub const ALL: [Self; Self::COUNT] = [
        Self::SameCpu,
        Self::SmtSibling,
        Self::SameLlc,
        Self::SameNode,
        Self::SamePackage,
        Self::CrossPackage,
    ];

    pub fn name(self) -> &'static str {
        self.into()
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

/// A count per [`Level`], serialized as a map with the level names in order (the one such
/// type: placement aggregates and shadow policy rows both use it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LevelCounts(pub [u64; Level::COUNT]);

impl LevelCounts {
    #[inline]
    pub fn add(&mut self, l: Level) {
        self.0[l.index()] += 1;
    }

    pub fn get(&self, l: Level) -> u64 {
        self.0[l.index()]
    }

    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    pub fn merge(&mut self, o: &Self) {
        for (a, b) in self.0.iter_mut().zip(o.0) {
            *a += b;
        }
    }
}

impl Serialize for LevelCounts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        use strum::IntoEnumIterator;
        let mut m = s.serialize_map(Some(Level::COUNT))?;
        for l in Level::iter() {
            m.serialize_entry(l.name(), &absent::unless(l, self.0[l.index()]))?;
        }
        m.end()
    }
}

/// The levels a machine cannot have, while one snapshot of it is serialised: every level-keyed
/// value of such a level is written as `null` ("no two CPUs stand in that relation"), never as
/// a 0 that reads as "measured, none". Set by the snapshot's own `Serialize` for exactly the
/// duration of its serialisation (a guard restores the previous set), so each level-keyed type
/// serialises right wherever it sits in the tree.
pub mod absent {
    use std::cell::Cell;

    use super::Level;

    thread_local! {
        static ABSENT: Cell<u8> = const { Cell::new(0) };
    }

    /// Restores the previous set when dropped.
    pub struct Guard(u8);

    impl Drop for Guard {
        fn drop(&mut self) {
            ABSENT.with(|a| a.set(self.0));
        }
    }

    /// Marks `levels` absent until the guard is dropped.
    pub fn set(levels: impl IntoIterator<Item = Level>) -> Guard {
        let mask = levels.into_iter().fold(0u8, |m, l| m | 1 << l.index());
        Guard(ABSENT.with(|a| a.replace(mask)))
    }

    pub fn is(l: Level) -> bool {
        ABSENT.with(|a| a.get() & 1 << l.index() != 0)
    }

    /// `v`, or `None` (null) for an absent level.
    pub fn unless<T>(l: Level, v: T) -> Option<T> {
        (!is(l)).then_some(v)
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

#[cfg(test)]
mod tests {
    use strum::IntoEnumIterator;

    use super::*;

    #[test]
    fn all_names_and_indices_agree_with_the_derives() {
        assert!(Level::iter().eq(Level::ALL));
        for (i, l) in Level::iter().enumerate() {
            assert_eq!(l.index(), i);
            assert_eq!(serde_json::to_value(l).ok(), Some(l.name().into()));
        }
        assert_eq!(Level::CrossPackage.name(), "cross_package");
    }
}
