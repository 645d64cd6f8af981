//! `WF_SYNC` at `sched_waking`, where the function probes that would read it from
//! `select_task_rq_fair`'s arguments are unavailable: the waker's kernel stack says which
//! wake-up entry it came through (`__wake_up_sync_key` passes `WF_SYNC`, `__wake_up` does not).
//! Userspace fills [`WAKE_FRAMES`] from `/proc/kallsyms`; an empty table leaves the flag unknown.
use aya_ebpf::{
    helpers::generated::bpf_get_stack,
    macros::map,
    maps::{Array, PerCpuArray},
};
use wakeviz_common::{
    MAX_WAKE_FRAMES, WAKE_FLAGS_FROM_STACK, WAKE_STACK_DEPTH, WF_SYNC, WakeFrame,
};

/// The wake-up entries, innermost match wins; `lo_ip == 0` ends the table.
#[map]
pub static WAKE_FRAMES: Array<WakeFrame> = Array::with_max_entries(MAX_WAKE_FRAMES, 0);

/// Scratch for the return addresses (kept off the BPF stack, which the entry reads fill).
#[map]
static STACK: PerCpuArray<[u64; WAKE_STACK_DEPTH]> = PerCpuArray::with_max_entries(1, 0);

/// The wake flags [`wakeviz_common::WAKE_FLAGS_FROM_STACK`] promises, or 0 (unknown) when the
/// table is empty or the stack cannot be read. `ctx` is the tracepoint program's context.
#[inline(always)]
pub fn flags(ctx: *mut core::ffi::c_void) -> u32 {
    let Some(first) = WAKE_FRAMES.get(0) else {
        return 0;
    };
    if first.lo_ip == 0 {
        return 0;
    }
    let Some(buf) = STACK.get_ptr_mut(0) else {
        return 0;
    };
    const BYTES: u32 = (WAKE_STACK_DEPTH * 8) as u32;
    // SAFETY: `buf` is this CPU's map value of exactly BYTES bytes, not shared with another
    // program run on this CPU (tracepoint programs do not nest on a CPU); flags 0 = kernel stack.
    let n = unsafe { bpf_get_stack(ctx, buf.cast(), BYTES, 0) };
    if n <= 0 {
        return 0;
    }
    let frames = (n as usize / 8).min(WAKE_STACK_DEPTH);
    // SAFETY: as above; the helper wrote `n` bytes and the rest is stale but initialised.
    let ips = unsafe { &*buf };
    for ip in ips.iter().take(frames) {
        for i in 0..MAX_WAKE_FRAMES {
            let Some(f) = WAKE_FRAMES.get(i) else {
                break;
            };
            if f.lo_ip == 0 {
                break;
            }
            if *ip >= f.lo_ip && *ip < f.hi_ip {
                let sync = if f.sync != 0 { WF_SYNC } else { 0 };
                return WAKE_FLAGS_FROM_STACK | sync;
            }
        }
    }
    WAKE_FLAGS_FROM_STACK
}
