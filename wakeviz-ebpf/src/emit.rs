//! Building records and handing them to the ring buffer, with drop accounting.
use aya_ebpf::{
    btf_maps::{ArrayOfMaps, RingBuf as InnerRing},
    helpers::{
        bpf_get_current_pid_tgid, bpf_get_smp_processor_id, bpf_ktime_get_ns, bpf_ringbuf_query,
    },
    macros::{btf_map, map},
    maps::{PerCpuArray, RingBuf},
    programs::TracePointContext,
};
use wakeviz_common::{
    COMM_LEN, EventHeader, EventKind, MAX_RINGS, MigrateEvent, Record, SwitchEvent, UNKNOWN_U32,
    WakeEvent, stat,
};

use crate::{
    batch::{self, After},
    globals::*,
    kread::{Access, field},
};

/// Userspace resizes this at load time (`--ringbuf-mb`).
#[map]
pub static EVENTS: RingBuf = RingBuf::with_byte_size(16 << 20, 0);

/// Rings 1.. of a capture with several (ring 0 is `EVENTS`), created and stored by userspace
/// before attaching. The inner definition is only the template the kernel checks types
/// against; ring buffers in a map-in-map may differ in size.
#[btf_map]
pub static RINGS: ArrayOfMaps<InnerRing<u8, 4096>, { MAX_RINGS as usize }> = ArrayOfMaps::new();

/// This CPU's ring index (0 = `EVENTS`), written per CPU by userspace before attaching. A
/// per-CPU slot rather than an array indexed by CPU number: the lookup needs no CPU number and
/// the verifier inlines it.
#[map]
pub static RING_OF_CPU: PerCpuArray<u32> = PerCpuArray::with_max_entries(1, 0);

/// Per-CPU counters, layout in `wakeviz_common::stat`.
#[map]
pub static STATS: PerCpuArray<u64> = PerCpuArray::with_max_entries(stat::LEN, 0);

#[inline(always)]
pub fn bump(idx: u32) {
    bump_by(idx, 1);
}

#[inline(always)]
pub fn bump_by(idx: u32, n: u64) {
    if let Some(p) = STATS.get_ptr_mut(idx) {
        // SAFETY: per-CPU slot. A program that interrupts another on this CPU (a hard-IRQ
        // wakeup) could lose one increment of the interrupted one's read-modify-write; the
        // counters are statistics, and such nesting is rare (the sched tracepoints mostly run
        // with interrupts off).
        unsafe { *p += n };
    }
}

#[inline(always)]
pub fn header(kind: EventKind, pid: u32) -> EventHeader {
    EventHeader {
        // SAFETY: helper without preconditions.
        ts_ns: unsafe { bpf_ktime_get_ns() },
        kind: kind as u16,
        // SAFETY: helper without preconditions.
        cpu: unsafe { bpf_get_smp_processor_id() } as u16,
        pid,
    }
}

const BPF_RB_NO_WAKEUP: u64 = 1;
const BPF_RB_FORCE_WAKEUP: u64 = 2;
const BPF_RB_AVAIL_DATA: u64 = 0;

/// This CPU's ring as the helpers take it.
#[inline(always)]
pub fn ring_ptr(inner: Option<&'static InnerRing<u8, 4096>>) -> *mut core::ffi::c_void {
    match inner {
        None => (&raw const EVENTS).cast_mut().cast(),
        Some(rb) => core::ptr::from_ref(rb).cast_mut().cast(),
    }
}

/// The submit flags for `ring`: its reader is woken only once the ring holds `WAKE_BYTES`.
/// A wakeup per record would make the reader's thread a scheduler workload of its own (every
/// traced wakeup causing one more); below the fill level userspace reads the ring on its own
/// schedule, from the ring's positions, without waking a thread per ring.
#[inline(always)]
pub fn wake_flags(ring: *mut core::ffi::c_void) -> u64 {
    let at = WAKE_BYTES.load();
    // SAFETY: `ring` is a ring-buffer map (`ring_ptr`); the query only reads its positions.
    if at != 0 && unsafe { bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) } >= at {
        BPF_RB_FORCE_WAKEUP
    } else {
        BPF_RB_NO_WAKEUP
    }
}

/// How a record travels (see `batch`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// To the ring on its own: made in the idle task's context, where the CPU may stay idle
    /// and must not hold a batch.
    Alone,
    /// Into this CPU's batch.
    Batch(After),
}

impl Route {
    /// Alone when the task running here is the idle task.
    #[inline(always)]
    pub fn by_current(current_pid: u32) -> Self {
        if current_pid == 0 {
            Self::Alone
        } else {
            Self::Batch(After::Hold)
        }
    }
}

/// This CPU's ring when it is one of `RINGS`, `None` for ring 0 (`EVENTS`). Ring 0 (every
/// CPU's with a single ring) keeps the direct path: no map-in-map lookup.
#[inline(always)]
pub fn inner_ring() -> Option<&'static InnerRing<u8, 4096>> {
    let ring = RING_OF_CPU.get(0).copied().unwrap_or(0);
    if ring == 0 { None } else { RINGS.get(ring) }
}

/// Offers one record; a full ring buffer is counted, never silent. The reader is woken only
/// past the ring's fill level ([`wake_flags`]).
#[inline(always)]
pub fn send<T: Record>(kind: EventKind, val: T, route: Route) {
    bump(stat::offered(kind));
    if BATCHING.load() != 0 {
        if let Route::Batch(after) = route
            && batch::add(&val, val.ts_ns(), after)
        {
            return;
        }
        bump(stat::UNBATCHED);
    }
    let inner = inner_ring();
    let flags = wake_flags(ring_ptr(inner));
    let entry = match inner {
        None => EVENTS.reserve::<T>(0),
        Some(rb) => rb.reserve_untyped::<T>(0),
    };
    match entry {
        Some(mut e) => {
            e.write(val);
            e.submit(flags);
        }
        None => bump(stat::RINGBUF_DROPS),
    }
}

#[inline(always)]
fn current_pid() -> u32 {
    bpf_get_current_pid_tgid() as u32
}

#[inline(always)]
fn comm_of(how: Access, task: u64) -> [u8; COMM_LEN] {
    field::<[u8; COMM_LEN]>(how, task, OFF_TASK_COMM.load()).unwrap_or([0; COMM_LEN])
}

#[inline(always)]
fn cpu_of(how: Access, task: u64) -> u32 {
    field::<u32>(how, task, OFF_TASK_CPU.load()).unwrap_or(UNKNOWN_U32)
}

#[inline(always)]
fn pid_of(how: Access, task: u64) -> u32 {
    field::<u32>(how, task, OFF_TASK_PID.load()).unwrap_or(0)
}

/// The task's thread-group id; 0 (unknown) when this kernel's BTF had no `tgid` offset.
#[inline(always)]
fn tgid_of(how: Access, task: u64) -> u32 {
    field::<u32>(how, task, OFF_TASK_TGID.load()).unwrap_or(0)
}

#[inline(always)]
fn prio_of(how: Access, task: u64) -> i32 {
    field::<i32>(how, task, OFF_TASK_PRIO.load()).unwrap_or(0)
}

#[inline(always)]
pub fn wake_from_task(how: Access, kind: EventKind, task: u64) -> i32 {
    let waker_pid = current_pid();
    send(
        kind,
        WakeEvent {
            hdr: header(kind, pid_of(how, task)),
            target_cpu: cpu_of(how, task),
            waker_pid,
            prio: prio_of(how, task),
            tgid: tgid_of(how, task),
            comm: comm_of(how, task),
        },
        Route::by_current(waker_pid),
    );
    0
}

#[inline(always)]
fn rec<T: Copy + Default>(ctx: &TracePointContext, off: u64) -> T {
    if off == 0 {
        return T::default();
    }
    // SAFETY: `off` comes from this event's tracefs format file, inside the record.
    unsafe { ctx.read_at::<T>(off as usize) }.unwrap_or_default()
}

pub fn wake_from_record(kind: EventKind, ctx: &TracePointContext) -> i32 {
    let pid: u32 = rec(ctx, TP_WAKE_PID.load());
    let waker_pid = current_pid();
    send(
        kind,
        WakeEvent {
            hdr: header(kind, pid),
            target_cpu: rec(ctx, TP_WAKE_TARGET_CPU.load()),
            waker_pid,
            prio: rec(ctx, TP_WAKE_PRIO.load()),
            // The classic record has no tgid.
            tgid: 0,
            comm: rec(ctx, TP_WAKE_COMM.load()),
        },
        Route::by_current(waker_pid),
    );
    0
}

/// A switch leaves the idle task (its CPU is busy from now: batch it) or enters it (send the
/// batch with it, so the idle CPU holds none).
#[inline(always)]
fn switch_route(next_pid: u32) -> Route {
    Route::Batch(if next_pid == 0 {
        After::Flush
    } else {
        After::Hold
    })
}

#[inline(always)]
pub fn switch_from_tasks(how: Access, prev: u64, next: u64, prev_state: u64) -> i32 {
    let next_pid = pid_of(how, next);
    send(
        EventKind::Switch,
        SwitchEvent {
            hdr: header(EventKind::Switch, pid_of(how, prev)),
            next_pid,
            prev_state: prev_state as u32,
            prev_prio: prio_of(how, prev),
            next_prio: prio_of(how, next),
            next_comm: comm_of(how, next),
        },
        switch_route(next_pid),
    );
    0
}

pub fn switch_from_record(ctx: &TracePointContext) -> i32 {
    let prev_pid: u32 = rec(ctx, TP_SW_PREV_PID.load());
    // The classic record stores prev_state as a long.
    let prev_state: u64 = rec(ctx, TP_SW_PREV_STATE.load());
    let next_pid: u32 = rec(ctx, TP_SW_NEXT_PID.load());
    send(
        EventKind::Switch,
        SwitchEvent {
            hdr: header(EventKind::Switch, prev_pid),
            next_pid,
            prev_state: prev_state as u32,
            prev_prio: rec(ctx, TP_SW_PREV_PRIO.load()),
            next_prio: rec(ctx, TP_SW_NEXT_PRIO.load()),
            next_comm: rec(ctx, TP_SW_NEXT_COMM.load()),
        },
        switch_route(next_pid),
    );
    0
}

#[inline(always)]
pub fn migrate_from_task(how: Access, task: u64, dest_cpu: u64) -> i32 {
    send(
        EventKind::Migrate,
        MigrateEvent {
            hdr: header(EventKind::Migrate, pid_of(how, task)),
            // The tracepoint fires before the move: the task's CPU is still the old one.
            orig_cpu: cpu_of(how, task),
            dest_cpu: dest_cpu as u32,
        },
        // Load balancing also runs on idle CPUs (nohz balancing, in softirq).
        Route::by_current(current_pid()),
    );
    0
}

pub fn migrate_from_record(ctx: &TracePointContext) -> i32 {
    let pid: u32 = rec(ctx, TP_MIG_PID.load());
    send(
        EventKind::Migrate,
        MigrateEvent {
            hdr: header(EventKind::Migrate, pid),
            orig_cpu: rec(ctx, TP_MIG_ORIG_CPU.load()),
            dest_cpu: rec(ctx, TP_MIG_DEST_CPU.load()),
        },
        Route::by_current(current_pid()),
    );
    0
}
