//! The figures a diff compares are the registry's ([`crate::figures`]): every snapshot carries
//! them, so a row's name is the name `--fail-if`, the JSON and `/metrics` use.
pub use crate::figures::{Figure, Section, Unit, key};

use crate::analysis::Snapshot;

/// Every figure of `s`, in print order.
pub fn extract(s: &Snapshot) -> &[Figure] {
    &s.figures.0
}
