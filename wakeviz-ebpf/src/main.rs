//! wakeviz probes. Entry points only: each is a thin wrapper around a `try_*` body.
//!
//! Every tracepoint exists in three flavours (tp_btf, raw_tp, classic tracepoint) so userspace
//! can fall back one by one; the first two read `struct task_struct` fields at offsets that
//! userspace computes from the running kernel's BTF (Aya's Rust programs get no CO-RE), the
//! classic one reads the tracefs record at offsets from the event's `format` file.
#![no_std]
#![no_main]

mod aggregate;
mod batch;
mod emit;
mod floor;
mod globals;
mod kread;
mod select;

use aya_ebpf::{
    EbpfContext as _,
    macros::{btf_tracepoint, fentry, fexit, kprobe, raw_tracepoint, tracepoint},
    programs::{
        BtfTracePointContext, FEntryContext, FExitContext, ProbeContext, RawTracePointContext,
        TracePointContext,
    },
};
use kread::Access;
use wakeviz_common::EventKind;

// ---- sched_waking / sched_wakeup / sched_wakeup_new ------------------------------------------

#[btf_tracepoint(function = "sched_waking")]
pub fn btf_sched_waking(ctx: BtfTracePointContext) -> i32 {
    // The inputs first: the shadow decides when it meets the waking record.
    select::waking(ctx.as_ptr(), ctx.arg(0));
    emit::wake_from_task(Access::Direct, EventKind::Waking, ctx.arg(0))
}

#[btf_tracepoint(function = "sched_wakeup")]
pub fn btf_sched_wakeup(ctx: BtfTracePointContext) -> i32 {
    emit::wake_from_task(Access::Direct, EventKind::Wakeup, ctx.arg(0))
}

#[btf_tracepoint(function = "sched_wakeup_new")]
pub fn btf_sched_wakeup_new(ctx: BtfTracePointContext) -> i32 {
    emit::wake_from_task(Access::Direct, EventKind::WakeupNew, ctx.arg(0))
}

#[raw_tracepoint(tracepoint = "sched_waking")]
pub fn raw_sched_waking(ctx: RawTracePointContext) -> i32 {
    emit::wake_from_task(Access::Probe, EventKind::Waking, ctx.arg(0))
}

#[raw_tracepoint(tracepoint = "sched_wakeup")]
pub fn raw_sched_wakeup(ctx: RawTracePointContext) -> i32 {
    emit::wake_from_task(Access::Probe, EventKind::Wakeup, ctx.arg(0))
}

#[raw_tracepoint(tracepoint = "sched_wakeup_new")]
pub fn raw_sched_wakeup_new(ctx: RawTracePointContext) -> i32 {
    emit::wake_from_task(Access::Probe, EventKind::WakeupNew, ctx.arg(0))
}

#[tracepoint(category = "sched", name = "sched_waking")]
pub fn tp_sched_waking(ctx: TracePointContext) -> i32 {
    emit::wake_from_record(EventKind::Waking, &ctx)
}

#[tracepoint(category = "sched", name = "sched_wakeup")]
pub fn tp_sched_wakeup(ctx: TracePointContext) -> i32 {
    emit::wake_from_record(EventKind::Wakeup, &ctx)
}

#[tracepoint(category = "sched", name = "sched_wakeup_new")]
pub fn tp_sched_wakeup_new(ctx: TracePointContext) -> i32 {
    emit::wake_from_record(EventKind::WakeupNew, &ctx)
}

// ---- sched_switch ------------------------------------------------------------------------------

#[btf_tracepoint(function = "sched_switch")]
pub fn btf_sched_switch(ctx: BtfTracePointContext) -> i32 {
    emit::switch_from_tasks(Access::Direct, ctx.arg(1), ctx.arg(2), ctx.arg(3))
}

#[raw_tracepoint(tracepoint = "sched_switch")]
pub fn raw_sched_switch(ctx: RawTracePointContext) -> i32 {
    emit::switch_from_tasks(Access::Probe, ctx.arg(1), ctx.arg(2), ctx.arg(3))
}

#[tracepoint(category = "sched", name = "sched_switch")]
pub fn tp_sched_switch(ctx: TracePointContext) -> i32 {
    emit::switch_from_record(&ctx)
}

// ---- sched_migrate_task ------------------------------------------------------------------------

#[btf_tracepoint(function = "sched_migrate_task")]
pub fn btf_sched_migrate_task(ctx: BtfTracePointContext) -> i32 {
    emit::migrate_from_task(Access::Direct, ctx.arg(0), ctx.arg(1))
}

#[raw_tracepoint(tracepoint = "sched_migrate_task")]
pub fn raw_sched_migrate_task(ctx: RawTracePointContext) -> i32 {
    emit::migrate_from_task(Access::Probe, ctx.arg(0), ctx.arg(1))
}

#[tracepoint(category = "sched", name = "sched_migrate_task")]
pub fn tp_sched_migrate_task(ctx: TracePointContext) -> i32 {
    emit::migrate_from_record(&ctx)
}

// ---- select_task_rq_fair / select_idle_cpu -----------------------------------------------------

#[fentry(function = "select_task_rq_fair")]
pub fn fentry_select_task_rq_fair(ctx: FEntryContext) -> i32 {
    select::entry(ctx.arg(0), ctx.arg(1), ctx.arg(2))
}

#[fexit(function = "select_task_rq_fair")]
pub fn fexit_select_task_rq_fair(ctx: FExitContext) -> i32 {
    select::exit(ctx.arg(0), ctx.arg(3))
}

#[fentry(function = "select_idle_cpu")]
pub fn fentry_select_idle_cpu(_ctx: FEntryContext) -> i32 {
    select::idle_scan_entry()
}

#[fexit(function = "select_idle_cpu")]
pub fn fexit_select_idle_cpu(_ctx: FExitContext) -> i32 {
    select::idle_scan_exit()
}

// ---- the idle scan inside select_task_rq_fair (kprobes at debug-info addresses) -------------

#[kprobe]
pub fn kp_scan_entry(_ctx: ProbeContext) -> u32 {
    select::scan::entered()
}

#[kprobe]
pub fn kp_scan_idle_test(_ctx: ProbeContext) -> u32 {
    select::scan::tested(0)
}

#[kprobe]
pub fn kp_scan_idle_core(_ctx: ProbeContext) -> u32 {
    select::scan::tested(wakeviz_common::scan_path::CORE)
}

#[kprobe]
pub fn kp_scan_smt(_ctx: ProbeContext) -> u32 {
    select::scan::smt()
}

// ---- in-kernel aggregate mode (`aggregate.rs`) ------------------------------------------------

#[btf_tracepoint(function = "sched_waking")]
pub fn agg_btf_sched_waking(ctx: BtfTracePointContext) -> i32 {
    aggregate::waking(Access::Direct, ctx.arg(0))
}

#[raw_tracepoint(tracepoint = "sched_waking")]
pub fn agg_raw_sched_waking(ctx: RawTracePointContext) -> i32 {
    aggregate::waking(Access::Probe, ctx.arg(0))
}

#[btf_tracepoint(function = "sched_wakeup")]
pub fn agg_btf_sched_wakeup(ctx: BtfTracePointContext) -> i32 {
    aggregate::wakeup(Access::Direct, ctx.arg(0))
}

#[raw_tracepoint(tracepoint = "sched_wakeup")]
pub fn agg_raw_sched_wakeup(ctx: RawTracePointContext) -> i32 {
    aggregate::wakeup(Access::Probe, ctx.arg(0))
}

#[btf_tracepoint(function = "sched_wakeup_new")]
pub fn agg_btf_sched_wakeup_new(ctx: BtfTracePointContext) -> i32 {
    aggregate::wakeup_new(Access::Direct, ctx.arg(0))
}

#[raw_tracepoint(tracepoint = "sched_wakeup_new")]
pub fn agg_raw_sched_wakeup_new(ctx: RawTracePointContext) -> i32 {
    aggregate::wakeup_new(Access::Probe, ctx.arg(0))
}

#[btf_tracepoint(function = "sched_switch")]
pub fn agg_btf_sched_switch(ctx: BtfTracePointContext) -> i32 {
    aggregate::switch(Access::Direct, ctx.arg(1), ctx.arg(2))
}

#[raw_tracepoint(tracepoint = "sched_switch")]
pub fn agg_raw_sched_switch(ctx: RawTracePointContext) -> i32 {
    aggregate::switch(Access::Probe, ctx.arg(1), ctx.arg(2))
}

#[btf_tracepoint(function = "sched_migrate_task")]
pub fn agg_btf_sched_migrate_task(_ctx: BtfTracePointContext) -> i32 {
    aggregate::migrate()
}

#[raw_tracepoint(tracepoint = "sched_migrate_task")]
pub fn agg_raw_sched_migrate_task(_ctx: RawTracePointContext) -> i32 {
    aggregate::migrate()
}

// ---- calibration (`--bpf-stats` only) ------------------------------------------------------------

/// Does nothing. Attached next to the real `sched_waking` probe when run-time statistics are
/// on, its ns/run is the floor every program pays on this kernel (tracepoint dispatch, the
/// statistics' own clock reads, retpoline/return-thunk mitigations), so the cost report can
/// separate that floor from the probes' own work.
#[btf_tracepoint(function = "sched_waking")]
pub fn calib_empty(_ctx: BtfTracePointContext) -> i32 {
    0
}

/// Reads the clock and nothing else: minus `calib_empty`, the price of the one
/// `bpf_ktime_get_ns` every record needs (on a VM it can rival the rest of a probe).
#[btf_tracepoint(function = "sched_waking")]
pub fn calib_clock(_ctx: BtfTracePointContext) -> i32 {
    // SAFETY: helper without preconditions.
    let t = unsafe { aya_ebpf::helpers::bpf_ktime_get_ns() };
    // Return something derived from it so the call is not optimised away (the return value of
    // a tp_btf program is ignored).
    (t & 1) as i32
}

// ---- batching (`batch.rs`) ----------------------------------------------------------------------

/// Never attached: userspace runs it on one CPU (`BPF_PROG_TEST_RUN`, `BPF_F_TEST_RUN_ON_CPU`)
/// to send a batch that CPU has held too long. The tracepoint named is only the program's
/// section; a raw_tp program is the kind the kernel runs on a chosen CPU.
#[raw_tracepoint(tracepoint = "sched_switch")]
pub fn flush_batch(_ctx: RawTracePointContext) -> i32 {
    batch::flush_from_user() as i32
}

// ---- names userspace looks up -----------------------------------------------------------------

/// Names every program and map of the shared lists (`wakeviz_common::names`), so a list entry
/// without a program or map of that name here fails to compile. Never called, never emitted.
macro_rules! check_programs {
    (
        tracepoints { $($tp:ident: $btf:ident, $raw:ident, $classic:ident;)* }
        functions { $($fconst:ident = $func:ident: $fentry:ident, $fexit:ident;)* }
        calibration { $($cconst:ident = $calib:ident;)* }
        batching { $($bconst:ident = $bprog:ident;)* }
    ) => {
        fn _programs_exist() {
            $( let _ = ($btf, $raw, $classic); )*
            $( let _ = ($fentry, $fexit); )*
            $( let _ = $calib; )*
            $( let _ = $bprog; )*
        }
    };
}
wakeviz_common::for_each_program!(check_programs);

macro_rules! check_maps {
    ($($name:ident),* $(,)?) => {
        fn _maps_exist() {
            $( let _ = &maps::$name; )*
        }
    };
}
/// Where each map of the shared list lives.
mod maps {
    pub use crate::{
        batch::BATCH_PENDING,
        emit::{EVENTS, RING_OF_CPU, RINGS, STATS},
        select::WAKING_INPUTS,
        select::scan::SCAN_ON,
        select::sync::WAKE_FRAMES,
    };
}

macro_rules! check_scan_programs {
    ($($role:ident: $prog:ident;)*) => {
        fn _scan_programs_exist() {
            $( let _ = $prog; )*
        }
    };
}
wakeviz_common::for_each_scan_program!(check_scan_programs);
wakeviz_common::for_each_map!(check_maps);

macro_rules! check_aggregate_programs {
    ($($tp:ident: $btf:ident, $raw:ident;)*) => {
        fn _aggregate_programs_exist() {
            $( let _ = ($btf, $raw); )*
        }
    };
}
wakeviz_common::for_each_aggregate_program!(check_aggregate_programs);

macro_rules! check_aggregate_maps {
    ($($name:ident),* $(,)?) => {
        fn _aggregate_maps_exist() {
            $( let _ = &aggregate::$name; )*
        }
    };
}
wakeviz_common::for_each_aggregate_map!(check_aggregate_maps);

macro_rules! check_floor_programs {
    ($($tp:ident: $empty:ident, $clock:ident, $stream:ident, $batch:ident;)*) => {
        fn _floor_programs_exist() {
            $( let _ = (floor::$empty, floor::$clock, floor::$stream, floor::$batch); )*
        }
    };
}
wakeviz_common::for_each_floor_program!(check_floor_programs);

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo<'_>) -> ! {
    // The verifier rejects any program that could reach this ("last insn is not an exit or jmp"),
    // so it is never executed.
    loop {}
}

#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 4] = *b"GPL\0";
