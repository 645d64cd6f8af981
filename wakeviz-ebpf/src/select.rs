//! `select_task_rq_fair` entry/exit joined per CPU, plus the kernel inputs the shadow policies
//! want to use exactly (waker run-queue length, SIS_UTIL budget, idle-core hint, and from ABI 2
//! the `wake_affine_weight` loads, the delayed count, the waker's kthread-ness and the task's
//! affinity: see [`crate::inputs`]).
//!
//! The function runs with `p->pi_lock` held and IRQs off, so entry and exit cannot interleave
//! with another call on the same CPU: one per-CPU slot is enough.
use aya_ebpf::{
    helpers::{bpf_get_current_task_btf, bpf_get_smp_processor_id, bpf_ktime_get_ns},
    macros::map,
    maps::{Array, PerCpuArray},
};
use wakeviz_common::{
    EventKind, PINNED_SLOTS, SELECT_AT_WAKING, SelectEvent, SelectEventMaskedV3, SelectEventV3,
    SelectFlips, SelectInputs, SelectMask, UNKNOWN_U32, exact, stat,
};

mod inputs;
pub mod scan;
pub mod sync;

use crate::{
    emit::{Route, bump, header, send},
    globals::*,
    kread::{Access, at, at0, field},
};

/// CPUs whose `struct rq` address we can remember.
const MAX_CPUS: u32 = 8192;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct Entry {
    ts_ns: u64,
    idle_scan_start_ns: u64,
    pid: u32,
    prev_cpu: u32,
    wake_flags: u32,
    valid: u32,
    waker_nr_running: u32,
    nr_idle_scan: u32,
    has_idle_cores: u32,
    prev_nr_idle_scan: u32,
    prev_has_idle_cores: u32,
    exact_mask: u32,
    idle_scan_ns: u32,
    scan_cpus: u16,
    scan_path: u16,
    inputs: SelectInputs,
    flips: SelectFlips,
    mask: SelectMask,
}

#[map]
static SELECT_ENTRY: PerCpuArray<Entry> = PerCpuArray::with_max_entries(1, 0);

/// cpu -> `struct rq *`, learnt at `select_task_rq_fair` entry from the waker (a task's
/// `se.cfs_rq->rq` is its CPU's rq) the first time that CPU wakes a task. It was
/// learnt in `sched_switch` before, which cost every switch a CPU lookup and a map access though
/// no input of a switch needs the rq (measured: `cargo xtask bench --only floor`, docs/dev/performance.md).
#[map]
static RQ_OF_CPU: Array<u64> = Array::with_max_entries(MAX_CPUS, 0);

/// A CPU's base `sched_domain` and the LLC `sched_domain_shared` found by walking up from it.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct LlcOfCpu {
    sd: u64,
    shared: u64,
}

/// cpu -> its LLC's shared state, so a wakeup reads `rq->sd` and compares instead of walking
/// the domains (two reads a level) for both LLCs on every call: measured in the VM guest
/// (`cargo xtask vm-test`, fentry cost), where the function probes cost more than the five
/// tracepoint probes together. A domain rebuild (hotplug, cpusets) gives the rq a newly
/// allocated base domain, so a changed `rq->sd` makes the entry walk again.
#[map]
static LLC_OF_CPU: Array<LlcOfCpu> = Array::with_max_entries(MAX_CPUS, 0);

/// `task->se.cfs_rq`: the task's own (possibly group) cfs_rq.
#[inline(always)]
pub fn cfs_of_task(task: u64) -> u64 {
    at::<u64>(task, OFF_TASK_SE_CFS_RQ.load()).unwrap_or(0)
}

#[inline(always)]
pub fn rq_of_cfs(cfs: u64) -> u64 {
    at::<u64>(cfs, OFF_CFS_RQ_RQ.load()).unwrap_or(0)
}

/// Records the running CPU's rq, once.
#[inline(always)]
fn remember_rq(cpu: u32, rq: u64) {
    if rq == 0 {
        return;
    }
    if let Some(slot) = RQ_OF_CPU.get_ptr_mut(cpu) {
        // SAFETY: valid map value pointer; a racing writer would store the same value.
        unsafe {
            if *slot == 0 {
                *slot = rq;
            }
        }
    }
}

/// The LLC's `sched_domain_shared` of `cpu` (whose rq is `rq`), from [`LLC_OF_CPU`] while the
/// rq's base domain is the one it was found from.
#[inline(always)]
fn llc_shared(cpu: u32, rq: u64) -> u64 {
    let sd = at::<u64>(rq, OFF_RQ_SD.load()).unwrap_or(0);
    if sd == 0 {
        return 0;
    }
    let slot = LLC_OF_CPU.get_ptr_mut(cpu);
    if let Some(c) = slot {
        // SAFETY: valid map value pointer; see the store below for concurrent writers.
        let c = unsafe { *c };
        if c.sd == sd && c.shared != 0 {
            return c.shared;
        }
    }
    let shared = walk_llc_shared(sd);
    if let Some(c) = slot {
        // SAFETY: valid map value pointer. Writers of one CPU's slot store the values they
        // found for the same base domain; `sd` is cleared first and set last, so with x86's
        // ordered stores a reader that sees the new `sd` also sees its `shared` (a weakly
        // ordered CPU racing a domain rebuild could pair them wrongly for that one read).
        unsafe {
            (*c).sd = 0;
            (*c).shared = shared;
            (*c).sd = sd;
        }
    }
    shared
}

/// The LLC's `sched_domain_shared`: the highest domain, walking up from the base domain `sd`,
/// of the unbroken run that has `shared` set (SMT and MC have one each before 7.1; only the LLC
/// domain has one from 7.1 on).
#[inline(always)]
fn walk_llc_shared(mut sd: u64) -> u64 {
    let mut last = 0u64;
    for _ in 0..6 {
        if sd == 0 {
            break;
        }
        let sh = at::<u64>(sd, OFF_SD_SHARED.load()).unwrap_or(0);
        if sh != 0 {
            last = sh;
        } else if last != 0 {
            break;
        }
        sd = at0::<u64>(sd, OFF_SD_PARENT.load()).unwrap_or(0);
    }
    last
}

/// (nr_idle_scan, has_idle_cores) of an LLC's shared state, when readable.
#[inline(always)]
fn llc_inputs(cpu: u32, rq: u64) -> Option<(u32, u32)> {
    let sh = llc_shared(cpu, rq);
    let scan = at::<u32>(sh, OFF_SDS_NR_IDLE_SCAN.load())?;
    let cores = at::<u32>(sh, OFF_SDS_HAS_IDLE_CORES.load())?;
    Some((scan, cores))
}

pub fn entry(task: u64, prev_cpu: u64, wake_flags: u64) -> i32 {
    let Some(e) = SELECT_ENTRY.get_ptr_mut(0) else {
        return 0;
    };
    // SAFETY: valid per-CPU map value pointer, no concurrent user on this CPU (IRQs off).
    read_entry(unsafe { &mut *e }, task, prev_cpu as u32, wake_flags as u32);
    0
}

/// An entry with its stamp and every input unknown.
#[inline(always)]
fn stamp(task: u64, prev_cpu: u32, wake_flags: u32) -> Entry {
    Entry {
        // SAFETY: helper without preconditions.
        ts_ns: unsafe { bpf_ktime_get_ns() },
        idle_scan_start_ns: 0,
        pid: field::<u32>(Access::Direct, task, OFF_TASK_PID.load()).unwrap_or(0),
        prev_cpu,
        wake_flags,
        valid: 1,
        waker_nr_running: UNKNOWN_U32,
        nr_idle_scan: UNKNOWN_U32,
        has_idle_cores: UNKNOWN_U32,
        prev_nr_idle_scan: UNKNOWN_U32,
        prev_has_idle_cores: UNKNOWN_U32,
        exact_mask: 0,
        idle_scan_ns: UNKNOWN_U32,
        scan_cpus: 0,
        scan_path: 0,
        inputs: SelectInputs::default(),
        flips: SelectFlips::default(),
        mask: SelectMask::default(),
    }
}

/// Fills `v` with the entry state of a placement of `task` from `prev_cpu`: the stamp, and every
/// kernel input this kernel lets the probe read (in `current`'s context, the waker's).
///
/// `v` is the per-CPU map value, written in place because the verifier does not track what a
/// map value holds: the paths through the optional reads below meet again after each read. An
/// `Entry` built on the BPF stack and copied keeps every read's outcome in stack slots, so no two
/// paths compare equal and the verifier walks each combination of outcomes (for the
/// `sched_waking` program, close to its limit of one million instructions).
#[inline(always)]
fn read_entry(v: &mut Entry, task: u64, prev_cpu: u32, wake_flags: u32) {
    *v = stamp(task, prev_cpu, wake_flags);
    if READ_RQ.load() != 0 {
        // SAFETY: helper without preconditions.
        let cpu = unsafe { bpf_get_smp_processor_id() };
        // SAFETY: helper without preconditions. The BTF-typed `current` (5.11+, older than
        // fentry's users need) lets the input reads load its integer fields directly, which
        // the verifier checks against BTF, instead of one helper call each.
        let cur = unsafe { bpf_get_current_task_btf() } as u64;
        let cur_cfs = cfs_of_task(cur);
        let known = RQ_OF_CPU.get(cpu).copied().unwrap_or(0);
        let rq = if known != 0 {
            known
        } else {
            let rq = rq_of_cfs(cur_cfs);
            remember_rq(cpu, rq);
            rq
        };
        if let Some(n) = at::<u32>(rq, OFF_RQ_NR_RUNNING.load()) {
            v.waker_nr_running = n;
            v.exact_mask |= exact::NR_RUNNING;
        }
        if let Some((scan, cores)) = llc_inputs(cpu, rq) {
            v.nr_idle_scan = scan;
            v.has_idle_cores = cores;
            v.exact_mask |= exact::NR_IDLE_SCAN | exact::HAS_IDLE_CORES;
        }
        let prev_rq = RQ_OF_CPU.get(prev_cpu).copied().unwrap_or(0);
        if let Some((scan, cores)) = llc_inputs(prev_cpu, prev_rq) {
            v.prev_nr_idle_scan = scan;
            v.prev_has_idle_cores = cores;
            v.exact_mask |= exact::PREV_NR_IDLE_SCAN | exact::PREV_HAS_IDLE_CORES;
        }
        if READ_INPUTS.load() != 0 {
            let r = inputs::read(task, cur, cur_cfs, rq, prev_rq, &mut v.inputs, &mut v.mask);
            v.exact_mask |= r | exact::INPUTS;
            v.exact_mask |= inputs::read_flips(task, cur, &mut v.flips);
        }
    }
}

/// A task allowed one CPU: `select_task_rq()` takes that CPU without asking the class, so its
/// mask is the whole answer and the other reads (most of the probe's cost) are skipped.
#[inline(always)]
fn read_mask_only(task: u64, prev_cpu: u32, mask: Option<SelectMask>) -> Entry {
    let mut v = stamp(task, prev_cpu, SELECT_AT_WAKING);
    v.exact_mask = exact::INPUTS | exact::TASK_CPUS;
    v.inputs.task_nr_cpus_allowed = 1;
    if let Some(m) = mask {
        v.mask = m;
        v.exact_mask |= exact::MASK;
    }
    v
}

/// The allowed mask of the BTF-typed `task` when the mask block can hold every CPU (0..255, as
/// in `inputs::read`). Up to 64 CPUs, by one direct load: `cpus_ptr` loaded from a BTF-typed
/// task is itself BTF-typed, so the verifier checks the load against BTF, and every
/// `cpumask_t` has its first word; the probe then pays no `bpf_probe_read_kernel` on a pinned
/// wakeup. The bits past the machine's CPUs are not the task's (they stay zero here).
#[inline(always)]
fn mask_of(task: u64) -> Option<SelectMask> {
    let cpus = SELECT_ALL_CPUS.load();
    if cpus > 256 {
        return None;
    }
    if cpus > 64 {
        return at::<u64>(task, OFF_TASK_CPUS_PTR.load()).and_then(|ptr| at0::<SelectMask>(ptr, 0));
    }
    let ptr = field::<u64>(Access::Direct, task, OFF_TASK_CPUS_PTR.load())?;
    if ptr == 0 {
        return None;
    }
    // SAFETY: `ptr` is the task's `cpus_ptr`, a BTF-typed `struct cpumask *` the verifier
    // tracks from the load above and checks this load against; word 0 exists in every mask.
    let word = unsafe { core::ptr::read_volatile(ptr as *const u64) };
    Some(SelectMask {
        bits: [word, 0, 0, 0],
    })
}

/// What the last pinned at-waking record sent from this CPU for a pid said (`valid` 1): the
/// pid, the old CPU and the mask. The same record again carries nothing new, so it is not sent
/// (`wakeviz_common::PINNED_REPEATS_UNSENT_SINCE`); userspace keeps the same slots from the
/// records it reads.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct PinnedSent {
    valid: u32,
    pid: u32,
    prev_cpu: u32,
    has_mask: u32,
    mask: SelectMask,
}

#[map]
static PINNED_SENT: PerCpuArray<[PinnedSent; PINNED_SLOTS]> = PerCpuArray::with_max_entries(1, 0);

/// Whether this wakeup's record repeats its pid's slot on this CPU; otherwise the record it
/// will send becomes the slot's (pinned), or empties a slot holding the pid (`pinned` false).
#[inline(always)]
fn repeats_last(pinned: bool, pid: u32, prev_cpu: u32, mask: Option<SelectMask>) -> bool {
    let Some(slots) = PINNED_SENT.get_ptr_mut(0) else {
        return false;
    };
    // SAFETY: valid per-CPU map value pointer; its only users run in `sched_waking` on this
    // CPU with IRQs off, so nothing else touches it meanwhile. The index is masked in bounds.
    let last = unsafe { &mut (*slots)[pid as usize & (PINNED_SLOTS - 1)] };
    if !pinned {
        if last.pid == pid {
            last.valid = 0;
        }
        return false;
    }
    let has_mask = u32::from(mask.is_some());
    let mask = mask.unwrap_or_default();
    if last.valid != 0
        && last.pid == pid
        && last.prev_cpu == prev_cpu
        && last.has_mask == has_mask
        && last.mask == mask
    {
        return true;
    }
    *last = PinnedSent {
        valid: 1,
        pid,
        prev_cpu,
        has_mask,
        mask,
    };
    false
}

/// 1 in slot 0 when the `sched_waking` tp_btf probe reads the select inputs itself (userspace
/// sets it when the function probes are not attached; see `wakeviz_common::SELECT_AT_WAKING`).
#[map]
pub static WAKING_INPUTS: Array<u32> = Array::with_max_entries(1, 0);

/// The entry state of a wakeup read at `sched_waking` ([`waking`]); its own slot, so it never
/// meets a select call's.
#[map]
static WAKING_ENTRY: PerCpuArray<Entry> = PerCpuArray::with_max_entries(1, 0);

/// At `sched_waking` (tp_btf, so `task` is BTF-typed): the select inputs of this wakeup, sent as
/// a select record marked [`SELECT_AT_WAKING`] before the waking record, when userspace asked
/// for them, unless it would repeat this CPU's last pinned record of the task ([`PinnedSent`]).
/// Self-wakeups never reach `select_task_rq`, and the tracepoint fires with the task's `pi_lock`
/// held and IRQs off, so one per-CPU slot is enough.
pub fn waking(ctx: *mut core::ffi::c_void, task: u64) -> i32 {
    if WAKING_INPUTS.get(0).copied().unwrap_or(0) == 0 {
        return 0;
    }
    let waker_pid = aya_ebpf::helpers::bpf_get_current_pid_tgid() as u32;
    let pid = field::<u32>(Access::Direct, task, OFF_TASK_PID.load()).unwrap_or(0);
    let Some(prev_cpu) = field::<u32>(Access::Direct, task, OFF_TASK_CPU.load()) else {
        return 0;
    };
    if pid == waker_pid {
        return 0;
    }
    let Some(e) = WAKING_ENTRY.get_ptr_mut(0) else {
        return 0;
    };
    let one_cpu = field::<u32>(Access::Direct, task, OFF_TASK_NR_CPUS_ALLOWED.load()) == Some(1);
    let mask = if one_cpu { mask_of(task) } else { None };
    if repeats_last(one_cpu, pid, prev_cpu, mask) {
        return 0;
    }
    // SAFETY: valid per-CPU map value pointer, no concurrent user on this CPU (see above).
    let v = unsafe { &mut *e };
    if one_cpu {
        *v = read_mask_only(task, prev_cpu, mask);
    } else {
        read_entry(v, task, prev_cpu, SELECT_AT_WAKING | sync::flags(ctx));
    }
    send_record(v, pid, UNKNOWN_U32, waker_pid);
    0
}

pub fn exit(task: u64, ret: u64) -> i32 {
    let Some(e) = SELECT_ENTRY.get_ptr_mut(0) else {
        return 0;
    };
    // SAFETY: as in `entry`.
    let v = unsafe { &mut *e };
    let pid = field::<u32>(Access::Direct, task, OFF_TASK_PID.load()).unwrap_or(0);
    if v.valid == 0 || v.pid != pid {
        bump(stat::SELECT_UNPAIRED);
        return 0;
    }
    v.valid = 0;
    scan::close(v);
    let waker_pid = aya_ebpf::helpers::bpf_get_current_pid_tgid() as u32;
    send_record(v, pid, ret as u32, waker_pid);
    0
}

/// The select record of entry state `v`, stamped now, with the inputs that were read.
#[inline(always)]
fn send_record(v: &Entry, pid: u32, chosen_cpu: u32, waker_pid: u32) {
    let route = Route::by_current(waker_pid);
    let ev = SelectEvent {
        hdr: header(EventKind::Select, pid),
        entry_ts_ns: v.ts_ns,
        prev_cpu: v.prev_cpu,
        wake_flags: v.wake_flags,
        chosen_cpu,
        waker_pid,
        waker_nr_running: v.waker_nr_running,
        nr_idle_scan: v.nr_idle_scan,
        has_idle_cores: v.has_idle_cores,
        prev_nr_idle_scan: v.prev_nr_idle_scan,
        prev_has_idle_cores: v.prev_has_idle_cores,
        exact_mask: v.exact_mask,
        idle_scan_ns: v.idle_scan_ns,
        scan_cpus: v.scan_cpus,
        scan_path: v.scan_path,
    };
    // ABI 3 always appends the flips block after the inputs (zeros, without the FLIPS bit, when
    // the fields are absent), so a record's length follows from INPUTS and MASK alone.
    if v.exact_mask & exact::MASK != 0 {
        let (inputs, flips, mask) = (v.inputs, v.flips, v.mask);
        let r = SelectEventMaskedV3 {
            ev,
            inputs,
            flips,
            mask,
        };
        send(EventKind::Select, r, route);
    } else if v.exact_mask & exact::INPUTS != 0 {
        let (inputs, flips) = (v.inputs, v.flips);
        send(
            EventKind::Select,
            SelectEventV3 { ev, inputs, flips },
            route,
        );
    } else {
        send(EventKind::Select, ev, route);
    }
}

pub fn idle_scan_entry() -> i32 {
    if let Some(e) = SELECT_ENTRY.get_ptr_mut(0) {
        // SAFETY: as in `entry`; select_idle_cpu runs inside select_task_rq_fair on this CPU.
        unsafe { (*e).idle_scan_start_ns = bpf_ktime_get_ns() };
    }
    0
}

pub fn idle_scan_exit() -> i32 {
    if let Some(e) = SELECT_ENTRY.get_ptr_mut(0) {
        // SAFETY: as in `idle_scan_entry`.
        unsafe {
            let start = (*e).idle_scan_start_ns;
            if start != 0 {
                let d = bpf_ktime_get_ns().saturating_sub(start);
                (*e).idle_scan_ns = d.min(u64::from(u32::MAX - 1)) as u32;
                (*e).idle_scan_start_ns = 0;
            }
        }
    }
    0
}
