//! A recording's workload as data: per task, how long it runs between blocks, how long it
//! sleeps, and who wakes it (the waker -> wakee graph), grouped by process ([`extract`]); and
//! that shape as an `rt-app` file ([`rtapp`]), so "this workload" can run again on another
//! kernel or setting. Pure: no I/O, bounded by [`extract::MAX_TASKS`].
pub mod extract;
pub mod rtapp;
pub mod shape;

pub use extract::Extractor;
pub use shape::{Dist, ProcessShape, Shape, TaskShape, Waker, WakerShare};
