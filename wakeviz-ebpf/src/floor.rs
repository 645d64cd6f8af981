//! The cost floor (`wakeviz --floor-probes`, for `cargo xtask bench --only floor`): empty tp_btf
//! programs on the tracepoints the streaming probes use. What a run of the benchmark pays with
//! these attached (tracepoint dispatch into BPF, the trampoline, the mitigations' return thunks)
//! is a cost no tracer on these hooks can avoid, so the probes' added cost is judged against it
//! rather than against an untraced run. They never touch a map and never run beside the real
//! probes.
use aya_ebpf::{macros::btf_tracepoint, programs::BtfTracePointContext};

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
