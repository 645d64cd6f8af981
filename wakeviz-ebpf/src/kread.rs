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

/// How task fields are read: `Probe` through `bpf_probe_read_kernel` (raw tracepoints), or
/// `Direct` loads, which tp_btf programs may do on BTF-typed pointers. Direct loads save one
/// helper call per field; the verifier accepts them only because the offsets are load-time
/// constants (frozen .rodata) and checks each access against the kernel's BTF layout.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Probe,
    Direct,
}

#[inline(always)]
pub fn field<T: Copy>(how: Access, base: u64, off: u64) -> Option<T> {
    match how {
        Access::Probe => at(base, off),
        Access::Direct => {
            if base == 0 || off == 0 {
                return None;
            }
            // SAFETY: `base` is a BTF-typed kernel pointer handed to a tp_btf program and `off`
            // a field offset from that kernel's BTF; the verifier checks the access.
            Some(unsafe { core::ptr::read_volatile((base + off) as *const T) })
        }
    }
}
