//! The in-kernel aggregate mode: the same join and classification the streaming analysis does
//! in userspace (`wakeviz_core::join`, `analysis::placement`, the wakeup-to-run latency), done
//! here into per-CPU counters, so a host that only exports metrics sends nothing through the
//! ring buffer. Layouts and slots are `wakeviz_common::agg`'s.
//!
//! Per event: `sched_waking` one hash insert; `sched_wakeup` one lookup + delete, three
//! topology lookups and two counter updates, one insert; `sched_switch` up to two deletes and
//! one lookup; `sched_migrate_task` one counter.
use aya_ebpf::{
    helpers::{bpf_get_current_pid_tgid, bpf_get_smp_processor_id, bpf_ktime_get_ns},
    macros::map,
    maps::{Array, LruHashMap, PerCpuArray},
};
use wakeviz_common::{
    EventKind, UNKNOWN_U32,
    agg::{
        CpuCounts, CpuPlace, JOIN_WAKING_NS, LogHist, PendingRun, PendingWaking, PlaceCounts,
        WAKE_TO_RUN_NS, hist, level_index, stat, totals,
    },
};

use crate::{
    globals::*,
    kread::{Access, field},
};

// Declared small: the streaming mode loads the same object and never uses these; the
// aggregate loader sizes them (CPU count, `agg::PENDING_ENTRIES`).
/// cpu -> its place in the topology, written by userspace before attaching.
#[map]
pub static AGG_TOPO: Array<CpuPlace> = Array::with_max_entries(1, 0);
/// Per-CPU counters per CPU number: wakeups that landed there, wakeups woken from there.
#[map]
pub static AGG_CPU: PerCpuArray<CpuCounts> = PerCpuArray::with_max_entries(1, 0);
/// New-task placements, and wakeups to a CPU beyond `AGG_CPU` (`agg::totals`).
#[map]
pub static AGG_TOTALS: PerCpuArray<PlaceCounts> = PerCpuArray::with_max_entries(totals::LEN, 0);
/// Wakeup-to-run latency histograms (`agg::hist`).
#[map]
pub static AGG_HIST: PerCpuArray<LogHist> = PerCpuArray::with_max_entries(hist::LEN, 0);
/// Event and join counters (`agg::stat`).
#[map]
pub static AGG_STATS: PerCpuArray<u64> = PerCpuArray::with_max_entries(stat::LEN, 0);
/// pid -> its `sched_waking`, until the `sched_wakeup`.
#[map]
pub static AGG_WAKING: LruHashMap<u32, PendingWaking> = LruHashMap::with_max_entries(64, 0);
/// pid -> its `sched_wakeup`, until its switch-in.
#[map]
pub static AGG_RUN: LruHashMap<u32, PendingRun> = LruHashMap::with_max_entries(64, 0);

#[inline(always)]
fn bump(idx: u32) {
    if let Some(p) = AGG_STATS.get_ptr_mut(idx) {
        // SAFETY: this CPU's slot; tracepoint programs do not nest on one CPU.
        unsafe { *p += 1 };
    }
}

#[inline(always)]
fn now() -> u64 {
    // SAFETY: helper without preconditions.
    unsafe { bpf_ktime_get_ns() }
}

#[inline(always)]
fn this_cpu() -> u32 {
    // SAFETY: helper without preconditions.
    unsafe { bpf_get_smp_processor_id() }
}

#[inline(always)]
fn pid_of(how: Access, task: u64) -> u32 {
    field::<u32>(how, task, OFF_TASK_PID.load()).unwrap_or(0)
}

#[inline(always)]
fn cpu_of(how: Access, task: u64) -> u32 {
    field::<u32>(how, task, OFF_TASK_CPU.load()).unwrap_or(UNKNOWN_U32)
}

#[inline(always)]
fn place(cpu: u32) -> CpuPlace {
    match AGG_TOPO.get(cpu) {
        Some(p) => *p,
        None => CpuPlace::UNKNOWN,
    }
}

#[inline(always)]
fn inc(a: &mut [u64], i: usize) {
    if let Some(x) = a.get_mut(i) {
        *x += 1;
    }
}

/// One placement's relations, as `wakeviz_core::analysis::placement::classify` has them.
#[derive(Clone, Copy)]
struct Classified {
    /// All three CPUs known (`vs_waker` and `vs_prev` exist).
    classified: bool,
    /// Waker and chosen CPU known (`vs_waker` exists).
    has_vs_waker: bool,
    vs_waker: usize,
    vs_prev: usize,
    waker_prev: usize,
    affine: bool,
}

#[inline(always)]
fn classify(waker: u32, prev: u32, chosen: u32) -> Classified {
    let (w, p, c) = (place(waker), place(prev), place(chosen));
    Classified {
        classified: w.known() && p.known() && c.known(),
        has_vs_waker: w.known() && c.known(),
        vs_waker: level_index(waker == chosen, &w, &c),
        vs_prev: level_index(prev == chosen, &p, &c),
        waker_prev: level_index(waker == prev, &w, &p),
        // An unknown waker has llc ABSENT, never equal to a known chosen CPU's.
        affine: chosen != prev && c.known() && p.known() && c.llc == w.llc && c.llc != p.llc,
    }
}

#[inline(always)]
fn add(pc: &mut PlaceCounts, k: &Classified) {
    pc.count += 1;
    if k.classified {
        inc(&mut pc.vs_waker, k.vs_waker);
        inc(&mut pc.vs_prev, k.vs_prev);
    } else {
        pc.unclassified += 1;
    }
    if k.affine {
        inc(&mut pc.affine_by_waker_prev, k.waker_prev);
    }
}

#[inline(always)]
fn add_total(slot: u32, k: &Classified) {
    if let Some(p) = AGG_TOTALS.get_ptr_mut(slot) {
        // SAFETY: this CPU's slot of a per-CPU array; programs do not nest on one CPU.
        add(unsafe { &mut *p }, k);
    }
}

/// Counts a placement; returns the histogram slot of its wakeup-to-run latency.
#[inline(always)]
fn placed(waker: u32, prev: u32, chosen: u32) -> u32 {
    let k = classify(waker, prev, chosen);
    match AGG_CPU.get_ptr_mut(chosen) {
        // SAFETY: as in `add_total`.
        Some(p) => add(unsafe { &mut (*p).landed }, &k),
        None => add_total(totals::BEYOND, &k),
    }
    if let Some(p) = AGG_CPU.get_ptr_mut(waker) {
        // SAFETY: as in `add_total`.
        add(unsafe { &mut (*p).woke }, &k);
    }
    if k.has_vs_waker {
        hist::BY_LEVEL + k.vs_waker as u32
    } else {
        hist::OVERALL
    }
}

#[inline(always)]
fn pending_run(pid: u32, ts: u64, slot: u32) {
    let v = PendingRun {
        wakeup_ts_ns: ts,
        slot,
        _pad0: 0,
    };
    if AGG_RUN.insert(pid, v, 0).is_err() {
        bump(stat::PENDING_FULL);
    }
}

#[inline(always)]
fn record(slot: u32, v: u64) {
    if let Some(h) = AGG_HIST.get_ptr_mut(slot) {
        // SAFETY: this CPU's slot of a per-CPU array; programs do not nest on one CPU.
        let h = unsafe { &mut *h };
        inc(&mut h.buckets, LogHist::bucket(v / hist::UNIT_NS));
        h.count += 1;
        h.sum_ns += v;
        if v > h.max_ns {
            h.max_ns = v;
        }
        if !v > h.min_inv_ns {
            h.min_inv_ns = !v;
        }
    }
}

#[inline(always)]
pub fn waking(how: Access, task: u64) -> i32 {
    bump(stat::EVENTS_BASE + EventKind::Waking as u32);
    let pid = pid_of(how, task);
    let v = PendingWaking {
        ts_ns: now(),
        waker_cpu: this_cpu(),
        prev_cpu: cpu_of(how, task),
        self_wake: u32::from(pid == bpf_get_current_pid_tgid() as u32),
        _pad0: 0,
    };
    if AGG_WAKING.insert(pid, v, 0).is_err() {
        bump(stat::PENDING_FULL);
    }
    0
}

#[inline(always)]
pub fn wakeup(how: Access, task: u64) -> i32 {
    bump(stat::EVENTS_BASE + EventKind::Wakeup as u32);
    let ts = now();
    let pid = pid_of(how, task);
    let chosen = cpu_of(how, task);
    let slot = match AGG_WAKING.get_ptr(pid) {
        None => {
            bump(stat::UNMATCHED_WAKEUPS);
            hist::OVERALL
        }
        Some(p) => {
            // SAFETY: a value pointer from a successful lookup, read once before the delete.
            let w = unsafe { *p };
            let _ = AGG_WAKING.remove(pid);
            if w.self_wake != 0 {
                bump(stat::SELF_WAKEUPS);
                hist::OVERALL
            } else if ts.saturating_sub(w.ts_ns) >= JOIN_WAKING_NS {
                bump(stat::STALE_WAKINGS);
                hist::OVERALL
            } else {
                placed(w.waker_cpu, w.prev_cpu, chosen)
            }
        }
    };
    pending_run(pid, ts, slot);
    0
}

/// Fork placement runs in the parent's context without `sched_waking`: waker and previous CPU
/// are the parent's (as the streaming join has it without the select probe).
#[inline(always)]
pub fn wakeup_new(how: Access, task: u64) -> i32 {
    bump(stat::EVENTS_BASE + EventKind::WakeupNew as u32);
    let ts = now();
    let pid = pid_of(how, task);
    let here = this_cpu();
    let k = classify(here, here, cpu_of(how, task));
    add_total(totals::NEW_TASKS, &k);
    pending_run(pid, ts, hist::NEW_TASK);
    0
}

#[inline(always)]
pub fn switch(how: Access, prev: u64, next: u64) -> i32 {
    bump(stat::EVENTS_BASE + EventKind::Switch as u32);
    let ts = now();
    let prev_pid = pid_of(how, prev);
    // A task switching out was running: a wakeup recorded for it meanwhile (ttwu_runnable)
    // must not be matched with its next switch-in.
    if prev_pid != 0 {
        let _ = AGG_RUN.remove(prev_pid);
    }
    let next_pid = pid_of(how, next);
    if next_pid == 0 {
        return 0;
    }
    if let Some(p) = AGG_RUN.get_ptr(next_pid) {
        // SAFETY: as in `wakeup`.
        let r = unsafe { *p };
        let _ = AGG_RUN.remove(next_pid);
        let v = ts.saturating_sub(r.wakeup_ts_ns);
        if v < WAKE_TO_RUN_NS {
            record(r.slot, v);
            if r.slot != hist::OVERALL && r.slot != hist::NEW_TASK {
                record(hist::OVERALL, v);
            }
        }
    }
    0
}

#[inline(always)]
pub fn migrate() -> i32 {
    bump(stat::EVENTS_BASE + EventKind::Migrate as u32);
    0
}
