//! Per-CPU batches of records (`wakeviz_common::batch`): one `bpf_ringbuf_output` per batch
//! instead of a reserve + submit per record.
//!
//! Why a batch never waits long, and why the merge's watermark stays right:
//! - an idle CPU holds none: records from the idle task's context go to the ring alone, and the
//!   switch into the idle task sends the batch;
//! - a record that finds the batch's oldest record older than `MAX_AGE_NS` sends it;
//! - a CPU that runs one task and makes no event is flushed by userspace, which runs
//!   [`flush_from_user`] on it when `BATCH_PENDING` shows an old batch there;
//! - `BATCH_PENDING` holds the stamp of each CPU's oldest held record, and userspace keeps the
//!   merge's watermark below it, so a held record is never overtaken.
use aya_ebpf::{
    helpers::{bpf_get_smp_processor_id, bpf_ktime_get_ns},
    macros::map,
    maps::PerCpuArray,
};
use wakeviz_common::{
    BatchHeader, EventKind,
    batch::{BYTES, FLUSH_BUSY, MAX_AGE_NS, MAX_RECORD},
    stat,
};

use crate::emit::{bump, bump_by, inner_ring, ring_ptr, wake_flags};

/// One CPU's batch. `hdr` and `buf` are contiguous: the ring record is `hdr` plus `len` bytes.
#[repr(C)]
pub struct Batch {
    /// Set while a program of this CPU writes the batch. A program that interrupts it (a
    /// wakeup from a hard IRQ, the flush program's IPI) sees it and leaves the batch alone. No
    /// atomics: only this CPU touches its slot, and an interrupt runs to completion before the
    /// interrupted program resumes.
    busy: u32,
    /// Records held, for the drop count when the ring refuses the batch.
    n: u32,
    /// Bytes of records held; always below `BYTES` between programs.
    len: u64,
    /// Stamp of the oldest record held (meaningless when `len` is 0).
    oldest_ns: u64,
    hdr: BatchHeader,
    /// `BYTES` plus room for the longest record: a write at an offset below `BYTES` always fits.
    buf: [u8; BYTES + MAX_RECORD],
}

#[map]
static BATCH: PerCpuArray<Batch> = PerCpuArray::with_max_entries(1, 0);

/// Per CPU: the stamp of its oldest held record, 0 when its batch is empty. Read by userspace
/// (8 bytes per CPU, where reading `BATCH` would copy every CPU's 2 KiB buffer).
#[map]
pub static BATCH_PENDING: PerCpuArray<u64> = PerCpuArray::with_max_entries(1, 0);

fn set_pending(ts_ns: u64) {
    if let Some(p) = BATCH_PENDING.get_ptr_mut(0) {
        // SAFETY: this CPU's slot; see `Batch::busy` for why nothing else writes it meanwhile.
        unsafe { *p = ts_ns };
    }
}

/// Hands the batch to this CPU's ring and empties it. `len` is passed by the caller, bounded in
/// a way the verifier can see, rather than reloaded from the map.
#[inline(always)]
fn flush(b: &mut Batch, len: usize) {
    if len == 0 {
        return;
    }
    b.hdr = BatchHeader {
        // SAFETY: helpers without preconditions.
        ts_ns: unsafe { bpf_ktime_get_ns() },
        kind: EventKind::Batch as u16,
        // SAFETY: as above.
        cpu: unsafe { bpf_get_smp_processor_id() } as u16,
        len: len as u32,
    };
    let size = (size_of::<BatchHeader>() + len) as u64;
    let data = (&raw mut b.hdr).cast::<core::ffi::c_void>();
    let map = ring_ptr(inner_ring());
    let flags = wake_flags(map);
    // SAFETY: `map` is a ring-buffer map (ours, or an inner map of RINGS); `data` points at the
    // header, followed in the same map value by `buf`, and `size` is at most the two together
    // (`len` < BYTES + MAX_RECORD). The helper copies; nothing is kept.
    let r = unsafe { aya_ebpf::helpers::bpf_ringbuf_output(map, data, size, flags) };
    if r < 0 {
        bump_by(stat::RINGBUF_DROPS, u64::from(b.n));
        bump_by(stat::BATCH_DROPS, u64::from(b.n));
    } else {
        bump(stat::BATCHES);
    }
    b.len = 0;
    b.n = 0;
    set_pending(0);
}

/// Why a record is sent now rather than held.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum After {
    /// Keep it in the batch.
    Hold,
    /// The CPU is about to run its idle task: send the batch with this record.
    Flush,
}

/// Adds `val` (stamped `ts_ns`) to this CPU's batch. False when the record must go to the ring
/// on its own: batching is off, the slot is missing, or another program of this CPU is
/// writing the batch (this one interrupted it).
#[inline(always)]
pub fn add<T: 'static>(val: &T, ts_ns: u64, after: After) -> bool {
    let Some(b) = BATCH.get_ptr_mut(0) else {
        return false;
    };
    // SAFETY: this CPU's slot; `busy` keeps an interrupting program off it.
    let b = unsafe { &mut *b };
    if b.busy != 0 {
        return false;
    }
    b.busy = 1;
    let off = (b.len as usize) & (BYTES - 1);
    if off == 0 {
        b.oldest_ns = ts_ns;
        set_pending(ts_ns);
    }
    // SAFETY: `off` < BYTES and size_of::<T>() <= MAX_RECORD, so the write stays inside `buf`;
    // records are multiples of 8 bytes long and `buf` starts 8-aligned, so `off` is 8-aligned.
    unsafe {
        b.buf
            .as_mut_ptr()
            .add(off)
            .cast::<T>()
            .write(core::ptr::read(val))
    };
    let len = off + size_of::<T>();
    b.n += 1;
    if len >= BYTES || after == After::Flush || ts_ns.wrapping_sub(b.oldest_ns) > MAX_AGE_NS {
        flush(b, len);
    } else {
        b.len = len as u64;
    }
    b.busy = 0;
    true
}

/// The flush program's body: sends this CPU's batch unless a program it interrupted is writing
/// it ([`FLUSH_BUSY`]: userspace tries again later).
#[inline(always)]
pub fn flush_from_user() -> u32 {
    let Some(b) = BATCH.get_ptr_mut(0) else {
        return 0;
    };
    // SAFETY: as in `add`.
    let b = unsafe { &mut *b };
    if b.busy != 0 {
        return FLUSH_BUSY;
    }
    b.busy = 1;
    let len = b.len as usize;
    // Bounded for the verifier (and against a slot that never held a batch).
    if len < BYTES + MAX_RECORD {
        flush(b, len);
    }
    b.busy = 0;
    0
}
