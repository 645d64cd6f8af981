//! libFuzzer's `-malloc_limit_mb` for a build without a sanitizer: the fuzz pass runs
//! uninstrumented (wakeviz-core has no `unsafe`), and libFuzzer learns of single allocations
//! only through a sanitizer's malloc hooks. A decoder that trusts a length in the file and
//! reserves that much may never touch the pages, so `-rss_limit_mb` alone would not see it:
//! this allocator aborts on any one allocation of [`LIMIT_BYTES`] or more, which libFuzzer
//! reports as a crash and saves the input for.
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;

/// The same bound as the fuzz pass's `-rss_limit_mb=512`.
pub const LIMIT_BYTES: usize = 512 << 20;

pub struct Limited;

#[cold]
fn over_limit() -> ! {
    // A fixed message: formatting could allocate inside the allocator.
    let _ = std::io::stderr()
        .write_all(b"wakeviz-fuzz: one allocation of 512 MiB or more (the malloc limit)\n");
    std::process::abort()
}

// SAFETY: every method forwards to `System` with the caller's own arguments, after a size check
// that can only abort; the contracts `GlobalAlloc` states are `System`'s.
unsafe impl GlobalAlloc for Limited {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() >= LIMIT_BYTES {
            over_limit();
        }
        // SAFETY: the caller's layout, as `GlobalAlloc::alloc` requires (non-zero size).
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() >= LIMIT_BYTES {
            over_limit();
        }
        // SAFETY: as in `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, which is `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size >= LIMIT_BYTES {
            over_limit();
        }
        // SAFETY: `ptr` came from `System` with `layout`; `new_size` is the caller's, as
        // `GlobalAlloc::realloc` requires.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
