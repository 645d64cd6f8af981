//! The in-kernel aggregate mode: the same join and classification the streaming analysis does
//! in userspace (`wakeviz_core::join`, `analysis::placement`, the wakeup-to-run latency), done
//! here into per-CPU counters, so a host that only exports metrics sends nothing through the
//! ring buffer. Layouts and slots are `wakeviz_common::agg`'s.
//!
//! Per event: `sched_waking` one hash lookup (an insert for a task seen the first time);
//! `sched_wakeup` one lookup, three topology lookups, a scratch slot and two counter updates;
//! `sched_switch` two lookups and, for a woken task, one histogram update; `sched_migrate_task`
//! one counter. The per-task state is updated in place, never deleted per event: an LRU insert
//! or delete costs several lookups (measured: 440 ns per wakeup path with insert/delete, see
//! CHANGELOG.md).
use aya_ebpf::{
    helpers::{bpf_get_current_pid_tgid, bpf_get_smp_processor_id, bpf_ktime_get_ns},
    macros::map,
    maps::{Array, LruHashMap, PerCpuArray},
};
use wakeviz_common::{
    EventKind, UNKNOWN_U32,
    agg::{
        CpuCounts, CpuPlace, JOIN_WAKING_NS, LogHist, PlaceCounts, TaskState, WAKE_TO_RUN_NS, hist,
        level_index, stat, task_flags as tf, totals,
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
/// pid -> its pending waking and wakeup ([`TaskState`]).
#[map]
pub static AGG_TASKS: LruHashMap<u32, TaskState> = LruHashMap::with_max_entries(64, 0);

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

/// One placement's relations, as `wakeviz_core::analysis::placement::classify` has them; 0 or 1
/// for the flags, level indexes for the rest.
#[repr(C)]
#[derive(Clone, Copy)]
struct Classified {
    /// All three CPUs known (`vs_waker` and `vs_prev` exist).
    classified: u32,
    /// Waker and chosen CPU known (`vs_waker` exists).
    has_vs_waker: u32,
    vs_waker: u32,
    vs_prev: u32,
    waker_prev: u32,
    affine: u32,
}

/// Where [`classify`] leaves its result for the counters to read. The verifier does not track
/// what a map value holds, so the paths through the three level comparisons meet once it is
/// written; kept in registers, each combination of levels updated the counters on a path of
/// its own (about 80,000 verified instructions for the `sched_wakeup` program).
#[map]
static AGG_CLASSIFIED: PerCpuArray<Classified> = PerCpuArray::with_max_entries(1, 0);

#[inline(always)]
fn classify(waker: u32, prev: u32, chosen: u32) -> Option<&'static Classified> {
    let slot = AGG_CLASSIFIED.get_ptr_mut(0)?;
    let (w, p, c) = (place(waker), place(prev), place(chosen));
    let k = Classified {
        classified: u32::from(w.known() && p.known() && c.known()),
        has_vs_waker: u32::from(w.known() && c.known()),
        vs_waker: level_index(waker == chosen, &w, &c) as u32,
        vs_prev: level_index(prev == chosen, &p, &c) as u32,
        waker_prev: level_index(waker == prev, &w, &p) as u32,
        // An unknown waker has llc ABSENT, never equal to a known chosen CPU's.
        affine: u32::from(
            chosen != prev && c.known() && p.known() && c.llc == w.llc && c.llc != p.llc,
        ),
    };
    // SAFETY: this CPU's slot of a per-CPU array; programs do not nest on one CPU, and the
    // slot is read only by this program run, after this write.
    unsafe {
        *slot = k;
        Some(&*slot)
    }
}

#[inline(always)]
fn add(pc: &mut PlaceCounts, k: &Classified) {
    pc.count += 1;
    if k.classified != 0 {
        inc(&mut pc.vs_waker, k.vs_waker as usize);
        inc(&mut pc.vs_prev, k.vs_prev as usize);
    } else {
        pc.unclassified += 1;
    }
    if k.affine != 0 {
        inc(&mut pc.affine_by_waker_prev, k.waker_prev as usize);
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
    let Some(k) = classify(waker, prev, chosen) else {
        return hist::OVERALL;
    };
    match AGG_CPU.get_ptr_mut(chosen) {
        // SAFETY: as in `add_total`.
        Some(p) => add(unsafe { &mut (*p).landed }, k),
        None => add_total(totals::BEYOND, k),
    }
    if let Some(p) = AGG_CPU.get_ptr_mut(waker) {
        // SAFETY: as in `add_total`.
        add(unsafe { &mut (*p).woke }, k);
    }
    if k.has_vs_waker != 0 {
        hist::BY_LEVEL + k.vs_waker
    } else {
        hist::OVERALL
    }
}

const BPF_NOEXIST: u64 = 1;

/// The task's state, created (all zero) the first time the task is seen.
#[inline(always)]
fn task(pid: u32) -> Option<*mut TaskState> {
    if let Some(p) = AGG_TASKS.get_ptr_mut(pid) {
        return Some(p);
    }
    let zero = TaskState {
        waking_ts_ns: 0,
        wakeup_ts_ns: 0,
        waker_cpu: 0,
        prev_cpu: 0,
        run_slot: 0,
        flags: 0,
    };
    // NOEXIST: another CPU may have created it meanwhile; either way it exists now.
    let _ = AGG_TASKS.insert(pid, zero, BPF_NOEXIST);
    let p = AGG_TASKS.get_ptr_mut(pid);
    if p.is_none() {
        bump(stat::PENDING_FULL);
    }
    p
}

/// Marks the task woken at `ts`, waiting for its switch-in.
#[inline(always)]
fn pending_run(t: &mut TaskState, ts: u64, slot: u32) {
    t.wakeup_ts_ns = ts;
    t.run_slot = slot;
    t.flags = (t.flags & !(tf::WAKING | tf::SELF_WAKE)) | tf::RUN;
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
pub fn waking(how: Access, task_ptr: u64) -> i32 {
    bump(stat::EVENTS_BASE + EventKind::Waking as u32);
    let pid = pid_of(how, task_ptr);
    let self_wake = pid == bpf_get_current_pid_tgid() as u32;
    let (ts, cpu, prev) = (now(), this_cpu(), cpu_of(how, task_ptr));
    if let Some(t) = task(pid) {
        // SAFETY: a value pointer from a successful lookup; a racing update of the same task
        // on another CPU can at worst mix two of its wakeups, as a lost event would.
        let t = unsafe { &mut *t };
        t.waking_ts_ns = ts;
        t.waker_cpu = cpu;
        t.prev_cpu = prev;
        t.flags = (t.flags & tf::RUN) | tf::WAKING | if self_wake { tf::SELF_WAKE } else { 0 };
    }
    0
}

#[inline(always)]
pub fn wakeup(how: Access, task_ptr: u64) -> i32 {
    bump(stat::EVENTS_BASE + EventKind::Wakeup as u32);
    let ts = now();
    let pid = pid_of(how, task_ptr);
    let chosen = cpu_of(how, task_ptr);
    let Some(t) = task(pid) else {
        bump(stat::UNMATCHED_WAKEUPS);
        return 0;
    };
    // SAFETY: as in `waking`.
    let t = unsafe { &mut *t };
    let slot = if t.flags & tf::WAKING == 0 {
        bump(stat::UNMATCHED_WAKEUPS);
        hist::OVERALL
    } else if t.flags & tf::SELF_WAKE != 0 {
        bump(stat::SELF_WAKEUPS);
        hist::OVERALL
    } else if ts.saturating_sub(t.waking_ts_ns) >= JOIN_WAKING_NS {
        bump(stat::STALE_WAKINGS);
        hist::OVERALL
    } else {
        placed(t.waker_cpu, t.prev_cpu, chosen)
    };
    pending_run(t, ts, slot);
    0
}

/// Fork placement runs in the parent's context without `sched_waking`: waker and previous CPU
/// are the parent's (as the streaming join has it without the select probe).
#[inline(always)]
pub fn wakeup_new(how: Access, task_ptr: u64) -> i32 {
    bump(stat::EVENTS_BASE + EventKind::WakeupNew as u32);
    let ts = now();
    let pid = pid_of(how, task_ptr);
    let here = this_cpu();
    if let Some(k) = classify(here, here, cpu_of(how, task_ptr)) {
        add_total(totals::NEW_TASKS, k);
    }
    if let Some(t) = task(pid) {
        // SAFETY: as in `waking`.
        pending_run(unsafe { &mut *t }, ts, hist::NEW_TASK);
    }
    0
}

#[inline(always)]
pub fn switch(how: Access, prev: u64, next: u64) -> i32 {
    bump(stat::EVENTS_BASE + EventKind::Switch as u32);
    let ts = now();
    let prev_pid = pid_of(how, prev);
    // A task switching out was running: a wakeup recorded for it meanwhile (ttwu_runnable)
    // must not be matched with its next switch-in.
    if prev_pid != 0
        && let Some(t) = AGG_TASKS.get_ptr_mut(prev_pid)
    {
        // SAFETY: as in `waking`.
        unsafe { (*t).flags &= !tf::RUN };
    }
    let next_pid = pid_of(how, next);
    if next_pid == 0 {
        return 0;
    }
    let Some(t) = AGG_TASKS.get_ptr_mut(next_pid) else {
        return 0;
    };
    // SAFETY: as in `waking`.
    let t = unsafe { &mut *t };
    if t.flags & tf::RUN == 0 {
        return 0;
    }
    t.flags &= !tf::RUN;
    let (slot, v) = (t.run_slot, ts.saturating_sub(t.wakeup_ts_ns));
    if v < WAKE_TO_RUN_NS {
        record(slot, v);
        if slot != hist::OVERALL && slot != hist::NEW_TASK {
            record(hist::OVERALL, v);
        }
    }
    0
}

#[inline(always)]
pub fn migrate() -> i32 {
    bump(stat::EVENTS_BASE + EventKind::Migrate as u32);
    0
}
