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
