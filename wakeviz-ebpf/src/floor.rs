//! The cost floors (`wakeviz --floor-probes`, for `cargo xtask bench --only floor`), two levels
//! on the tracepoints the streaming probes use:
//!
//! - `empty`: programs that return at once. What a run of the benchmark pays with these
//!   attached (tracepoint dispatch into BPF, the trampoline, the mitigations' return thunks) is
//!   a cost no tracer on these hooks can avoid.
//! - `stream`: programs that read the clock and reserve + submit one record of the size the
//!   real probe sends, and nothing else: the least any tracer that streams one timestamped
//!   record per hit pays. The distance from it to wakeviz is what the field reads, counters and
//!   ring selection cost; the distance from `empty` to it is the price of streaming itself.
//!
//! - `batch`: the same records written into a per-CPU buffer, handed to the ring 32 at a time
//!   with one `bpf_ringbuf_output`: what per-CPU batching could at best save on the ring's
//!   reserve + submit (a real one would also need a flush for idle CPUs, which this has not).
//!
//! None runs beside the real probes.
use aya_ebpf::{
    helpers::bpf_ktime_get_ns,
    macros::{btf_tracepoint, map},
    maps::PerCpuArray,
    programs::BtfTracePointContext,
};
use wakeviz_common::{MigrateEvent, SwitchEvent, WakeEvent};

use crate::emit::EVENTS;

const BPF_RB_NO_WAKEUP: u64 = 1;
const WAKE_WORDS: usize = size_of::<WakeEvent>() / 8;
const SWITCH_WORDS: usize = size_of::<SwitchEvent>() / 8;
const MIGRATE_WORDS: usize = size_of::<MigrateEvent>() / 8;

/// `N` words, the first the timestamp (as in every record's header), the rest zero, into the
/// ring; a full ring just drops (the floor counts nothing).
#[inline(always)]
fn stream<const N: usize>() -> i32 {
    if let Some(mut e) = EVENTS.reserve::<[u64; N]>(0) {
        let mut v = [0u64; N];
        // SAFETY: helper without preconditions.
        v[0] = unsafe { bpf_ktime_get_ns() };
        e.write(v);
        e.submit(BPF_RB_NO_WAKEUP);
    }
    0
}

/// Records per batch of the `batch` floor.
const BATCH: usize = 32;

/// One CPU's pending batch: `n` records written so far, the slots.
#[repr(C)]
pub struct Batch {
    n: u64,
    recs: [[u64; WAKE_WORDS]; BATCH],
}

#[map]
static FLOOR_BATCH: PerCpuArray<Batch> = PerCpuArray::with_max_entries(1, 0);

/// One 48-byte record into this CPU's batch; every `BATCH`-th hands the whole batch to the ring.
#[inline(always)]
fn batch() -> i32 {
    let Some(b) = FLOOR_BATCH.get_ptr_mut(0) else {
        return 0;
    };
    // SAFETY: this CPU's slot; tracepoint programs do not nest on one CPU, so nothing else
    // touches it meanwhile.
    let b = unsafe { &mut *b };
    let i = (b.n as usize) % BATCH;
    // SAFETY: helper without preconditions.
    b.recs[i] = [unsafe { bpf_ktime_get_ns() }, 0, 0, 0, 0, 0];
    b.n += 1;
    if i == BATCH - 1 {
        let _ = EVENTS.output::<[[u64; WAKE_WORDS]; BATCH]>(&b.recs, BPF_RB_NO_WAKEUP);
    }
    0
}

#[btf_tracepoint(function = "sched_waking")]
pub fn floor_sched_waking(_ctx: BtfTracePointContext) -> i32 {
    0
}

#[btf_tracepoint(function = "sched_wakeup")]
pub fn floor_sched_wakeup(_ctx: BtfTracePointContext) -> i32 {
    0
}

#[btf_tracepoint(function = "sched_wakeup_new")]
pub fn floor_sched_wakeup_new(_ctx: BtfTracePointContext) -> i32 {
    0
}

#[btf_tracepoint(function = "sched_switch")]
pub fn floor_sched_switch(_ctx: BtfTracePointContext) -> i32 {
    0
}

#[btf_tracepoint(function = "sched_migrate_task")]
pub fn floor_sched_migrate_task(_ctx: BtfTracePointContext) -> i32 {
    0
}

#[btf_tracepoint(function = "sched_waking")]
pub fn floor_stream_sched_waking(_ctx: BtfTracePointContext) -> i32 {
    stream::<WAKE_WORDS>()
}

#[btf_tracepoint(function = "sched_wakeup")]
pub fn floor_stream_sched_wakeup(_ctx: BtfTracePointContext) -> i32 {
    stream::<WAKE_WORDS>()
}

#[btf_tracepoint(function = "sched_wakeup_new")]
pub fn floor_stream_sched_wakeup_new(_ctx: BtfTracePointContext) -> i32 {
    stream::<WAKE_WORDS>()
}

#[btf_tracepoint(function = "sched_switch")]
pub fn floor_stream_sched_switch(_ctx: BtfTracePointContext) -> i32 {
    stream::<SWITCH_WORDS>()
}

#[btf_tracepoint(function = "sched_migrate_task")]
pub fn floor_stream_sched_migrate_task(_ctx: BtfTracePointContext) -> i32 {
    stream::<MIGRATE_WORDS>()
}

#[btf_tracepoint(function = "sched_waking")]
pub fn floor_batch_sched_waking(_ctx: BtfTracePointContext) -> i32 {
    batch()
}

#[btf_tracepoint(function = "sched_wakeup")]
pub fn floor_batch_sched_wakeup(_ctx: BtfTracePointContext) -> i32 {
    batch()
}

#[btf_tracepoint(function = "sched_wakeup_new")]
pub fn floor_batch_sched_wakeup_new(_ctx: BtfTracePointContext) -> i32 {
    batch()
}

#[btf_tracepoint(function = "sched_switch")]
pub fn floor_batch_sched_switch(_ctx: BtfTracePointContext) -> i32 {
    batch()
}

#[btf_tracepoint(function = "sched_migrate_task")]
pub fn floor_batch_sched_migrate_task(_ctx: BtfTracePointContext) -> i32 {
    batch()
}
