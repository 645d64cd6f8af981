//! One module per thing the user runs.

pub(crate) mod aggregate;
pub(crate) mod diff;
pub(crate) mod experiment;
pub(crate) mod extract;
pub(crate) mod generate;
pub(crate) mod live;
pub(crate) mod replay;
pub(crate) mod scan_points;
pub(crate) mod session;
pub(crate) mod simulate;
pub(crate) mod workload;
