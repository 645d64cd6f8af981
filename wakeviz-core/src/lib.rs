//! The pure half of wakeviz. Data flows one way:
//!
//! ```text
//! probes -> ring buffer -> capture ─┐
//!                                    ├─> EventSource (live | replay) -> analyses -> snapshot -> UI / report / recorder
//! recording (.wvz) -> format::Reader ┘
//! ```
//!
//! Nothing here touches the kernel, an async runtime or a terminal; `wakeviz` (the binary)
//! owns those edges.
pub mod analysis;
pub mod closed_loop;
pub mod compare;
pub mod decode;
pub mod dump;
pub mod event;
pub mod fields;
pub mod figures;
pub mod format;
pub mod horizons;
pub mod join;
pub mod merge;
pub mod pidmap;
pub mod pidslab;
pub mod rings;
pub mod run;
pub mod safe_text;
pub mod scan_points;
pub mod sched_feature;
pub mod shadow;
pub mod source;
pub mod synth;
pub mod topology;
pub mod workload;
