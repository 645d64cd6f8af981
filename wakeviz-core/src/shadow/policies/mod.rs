//! The registered policies. Adding one = one file here plus its `mod` line and one entry in
//! [`registry`]. The first entry must stay the observed baseline.
mod full_scan;
mod idle_core_first;
mod idler_llc;
mod observed;
mod prev_only;
mod sis_node;
mod sis_prop;
mod sis_util;
mod wf_sync;

pub use idle_core_first::true_idle_core;
pub use sis_prop::{SCAN_FIXED_NS, SCAN_PROBE_NS};

use super::{policy::Policy, topo::ShadowTopo};

/// Every policy, baseline first, in report order.
pub fn registry(t: &ShadowTopo) -> Vec<Box<dyn Policy>> {
    vec![
        Box::new(observed::Observed),
        Box::new(sis_util::SisUtil),
        Box::new(sis_prop::SisProp::new(t)),
        Box::new(wf_sync::WfSync {
            delayed_variant: false,
        }),
        Box::new(wf_sync::WfSync {
            delayed_variant: true,
        }),
        Box::new(sis_node::SisNode),
        Box::new(full_scan::FullScan),
        Box::new(prev_only::PrevOnly),
        Box::new(idle_core_first::IdleCoreFirst),
        Box::new(idle_core_first::TrueHint),
        Box::new(idler_llc::IdlerLlc),
    ]
}
