//! The idle scan of a `select_task_rq_fair` call, watched by kprobes that userspace placed at
//! addresses read from the kernel's debug info: `select_idle_cpu` and the tests it makes are
//! inlined, so neither fentry nor a kprobe on a symbol reaches them. The kprobes fire inside the
//! call, on its CPU, with IRQs off, so they update the slot the fentry filled; the fexit closes
//! it.
use aya_ebpf::{helpers::bpf_ktime_get_ns, macros::map, maps::Array};
use wakeviz_common::{exact, scan_path};

use super::{Entry, SELECT_ENTRY};

/// 1 in slot 0 once userspace attached the scan-entry and idle-test kprobes: from then on every
/// select record says what the scan did, "no scan" included.
#[map]
pub static SCAN_ON: Array<u32> = Array::with_max_entries(1, 0);

#[inline(always)]
fn with_entry(f: impl FnOnce(&mut Entry)) -> u32 {
    if let Some(e) = SELECT_ENTRY.get_ptr_mut(0) {
        // SAFETY: a valid per-CPU map value pointer; the kprobe runs inside select_task_rq_fair
        // on this CPU with IRQs off, between the fentry and the fexit that own the slot.
        let v = unsafe { &mut *e };
        if v.valid != 0 {
            f(v);
        }
    }
    0
}

/// `select_idle_cpu` entered.
pub fn entered() -> u32 {
    with_entry(|v| {
        v.scan_path |= scan_path::SCAN;
        // SAFETY: helper without preconditions.
        v.idle_scan_start_ns = unsafe { bpf_ktime_get_ns() };
    })
}

/// One idle test (a CPU by `__select_idle_cpu`, or a core by `select_idle_core`).
pub fn tested(path: u16) -> u32 {
    with_entry(|v| {
        v.scan_cpus = v.scan_cpus.saturating_add(1);
        v.scan_path |= path;
    })
}

/// `select_idle_smt` entered (prev's SMT siblings, tried before the scan).
pub fn smt() -> u32 {
    with_entry(|v| v.scan_path |= scan_path::SMT)
}

/// At the call's exit: marks the record as watched and times the scan when one ran.
#[inline(always)]
pub fn close(v: &mut Entry) {
    if SCAN_ON.get(0).copied().unwrap_or(0) == 0 {
        return;
    }
    v.exact_mask |= exact::SCAN;
    if v.scan_path & scan_path::SCAN != 0 && v.idle_scan_start_ns != 0 {
        // SAFETY: helper without preconditions.
        let d = unsafe { bpf_ktime_get_ns() }.saturating_sub(v.idle_scan_start_ns);
        v.idle_scan_ns = d.min(u64::from(u32::MAX - 1)) as u32;
        v.idle_scan_start_ns = 0;
    }
}
