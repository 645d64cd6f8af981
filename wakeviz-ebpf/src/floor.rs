//! The cost floors (`wakeviz --floor-probes`, for `cargo xtask bench --only floor`), four levels
//! on the tracepoints the streaming probes use:
//!
//! - `empty`: programs that return at once. What a run of the benchmark pays with these
//!   attached (tracepoint dispatch into BPF, the trampoline, the mitigations' return thunks) is
//!   a cost no tracer on these hooks can avoid.
//! - `clock`: programs that call `bpf_ktime_get_ns` and drop the result. Every event a tracer
//!   times needs that call (`sched_waking` runs before any run-queue clock is updated, so no
//!   cheaper stamp serves every point), so this is the floor of any tracer that timestamps
//!   each hit, before it writes anything.
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

/// One clock read, its value dropped: a helper call the compiler cannot remove.
#[inline(always)]
fn clock() -> i32 {
    // SAFETY: helper without preconditions.
    let _ = unsafe { bpf_ktime_get_ns() };
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

/// One record into this CPU's batch (every slot 48 bytes, the wake and switch records' size);
/// every `BATCH`-th hands the whole batch to the ring.
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

/// The four floors' programs of each tracepoint; the names are the shared list's
/// (`wakeviz_common::for_each_floor_program!`, checked in `main.rs`).
macro_rules! floor_programs {
    ($($tp:literal: $empty:ident, $clock:ident, $stream:ident => $words:expr, $batch:ident;)*) => {$(
        #[btf_tracepoint(function = $tp)]
        pub fn $empty(_ctx: BtfTracePointContext) -> i32 {
            0
        }

        #[btf_tracepoint(function = $tp)]
        pub fn $clock(_ctx: BtfTracePointContext) -> i32 {
            clock()
        }

        #[btf_tracepoint(function = $tp)]
        pub fn $stream(_ctx: BtfTracePointContext) -> i32 {
            stream::<{ $words }>()
        }

        #[btf_tracepoint(function = $tp)]
        pub fn $batch(_ctx: BtfTracePointContext) -> i32 {
            batch()
        }
    )*};
}

floor_programs! {
    "sched_waking": floor_sched_waking, floor_clock_sched_waking, floor_stream_sched_waking => WAKE_WORDS, floor_batch_sched_waking;
    "sched_wakeup": floor_sched_wakeup, floor_clock_sched_wakeup, floor_stream_sched_wakeup => WAKE_WORDS, floor_batch_sched_wakeup;
    "sched_wakeup_new": floor_sched_wakeup_new, floor_clock_sched_wakeup_new, floor_stream_sched_wakeup_new => WAKE_WORDS, floor_batch_sched_wakeup_new;
    "sched_switch": floor_sched_switch, floor_clock_sched_switch, floor_stream_sched_switch => SWITCH_WORDS, floor_batch_sched_switch;
    "sched_migrate_task": floor_sched_migrate_task, floor_clock_sched_migrate_task, floor_stream_sched_migrate_task => MIGRATE_WORDS, floor_batch_sched_migrate_task;
}
