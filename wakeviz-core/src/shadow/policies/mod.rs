//! The registered policies. Adding one = one file here (the policy: its decision, its own
//! rules, private state and caveats, all through `Policy`) plus its `mod` line and one entry in
//! [`registry`]. The first entry must stay the observed baseline. (`always_waker`, compiled
//! for tests only, is the proof: see its module.)
//!
//! | registry name | spec | what |
//! |---|---|---|
//! | `observed` | — | the running kernel's choice (baseline) |
//! | `sis_util` | P1 | SIS_UTIL, the 6.0+ default; the fidelity policy on 6.x kernels |
//! | `sis_prop` | P0 | SIS_PROP (<= 6.6), state emulated; the fidelity policy before 6.0 |
//! | `wf_sync` | P2 | Vagin's WF_SYNC wake-local on SIS_UTIL |
//! | `wf_sync_delayed` | P2b | the same with delayed-dequeue tasks subtracted (not captured: = P2) |
//! | `sis_node` | P3 | SIS_NODE: SIS_UTIL, then the node's other LLCs |
//! | `full_scan` | P4 | whole-LLC scan without a limit |
//! | `prev_only` | P5 | previous CPU, no search |
//! | `idle_core_first` | P6b | pure idle-core-first on the true idle map |
//! | `sis_util_true_hint` | P6a | SIS_UTIL with the true idle-core state, unbounded core scan |
//! | `idler_llc` | P8 | Srikar's idler-LLC wake_affine on SIS_UTIL |
//! | `cache_aware` | P9 | cache-aware wake steering to the process's preferred LLC (RFC v4) |
//! | `sis_cache` | P10 | SIS_CACHE: idle CPUs reserved for short sleepers (v2) |
//! | `scx_builtin` | X1 | sched_ext's built-in idle policy, prev's SMT sibling first |
//! | `scx_builtin_nosib` | X1b | the same before the SMT-sibling preference |
//! | `bpfland_scan` | X2 | scx_bpfland's `--preferred-idle-scan` order |
//! | `lavd` | X3 | scx_lavd's `pick_idle_cpu` |
//! | `flip_wa_idle` | F1 | SIS_UTIL with the recording's `WA_IDLE` flipped (predicts that flip) |
//! | `flip_wa_weight` | F2 | SIS_UTIL with the recording's `WA_WEIGHT` flipped |
//!
//! `scx_pick` holds the sched_ext idle-mask primitives the X policies share.
#[cfg(test)]
mod always_waker;
mod bpfland;
mod cache_aware;
mod full_scan;
mod idle_core_first;
mod idler_llc;
mod lavd;
mod observed;
mod prev_only;
mod scx_builtin;
mod scx_pick;
mod sis_cache;
mod sis_node;
mod sis_prop;
mod sis_util;
mod wa_flip;
mod wf_sync;

pub use idle_core_first::true_idle_core;
pub use sis_prop::{SCAN_FIXED_NS, SCAN_PROBE_NS};

use super::{policy::Policy, topo::ShadowTopo};

/// Registry names other modules refer to (the experiment models, the report's fallback): one
/// constant each, so a misspelt name does not compile instead of silently matching nothing.
pub mod name {
    pub const OBSERVED: &str = "observed";
    pub const SIS_UTIL: &str = "sis_util";
    pub const SIS_PROP: &str = "sis_prop";
    pub const SIS_NODE: &str = "sis_node";
    pub const FULL_SCAN: &str = "full_scan";
    pub const FLIP_WA_IDLE: &str = "flip_wa_idle";
    pub const FLIP_WA_WEIGHT: &str = "flip_wa_weight";
}

/// Every policy, baseline first, in report order.
pub fn registry(t: &ShadowTopo) -> Vec<Box<dyn Policy>> {
    #[allow(unused_mut)]
    let mut v: Vec<Box<dyn Policy>> = vec![
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
        Box::new(cache_aware::CacheAware),
        Box::new(sis_cache::SisCache::new(t)),
        Box::new(scx_builtin::ScxBuiltin::new(t, true)),
        Box::new(scx_builtin::ScxBuiltin::new(t, false)),
        Box::new(bpfland::Bpfland),
        Box::new(lavd::Lavd::new(t)),
        Box::new(wa_flip::WaFlip::IDLE),
        Box::new(wa_flip::WaFlip::WEIGHT),
    ];
    #[cfg(test)]
    v.push(Box::new(always_waker::AlwaysWaker::default()));
    v
}
