//! Reads of kernel memory at runtime-supplied offsets.
use aya_ebpf::helpers::bpf_probe_read_kernel;

/// Reads a `T` at `base + off`; `None` for a null base, an unknown (0) offset or a failed read.
#[inline(always)]
pub fn at<T: Copy>(base: u64, off: u64) -> Option<T> {
    if base == 0 || off == 0 {
        return None;
    }
    // SAFETY: bpf_probe_read_kernel validates the address itself and fails cleanly on a bad one;
    // nothing is dereferenced directly.
    unsafe { bpf_probe_read_kernel((base + off) as *const T) }.ok()
}

/// Like [`at`] for fields that may legitimately sit at offset 0 (`sched_domain.parent`).
#[inline(always)]
pub fn at0<T: Copy>(base: u64, off: u64) -> Option<T> {
    if base == 0 {
        return None;
    }
    // SAFETY: as in `at`.
    unsafe { bpf_probe_read_kernel((base + off) as *const T) }.ok()
}
