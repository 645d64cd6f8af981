//! Any byte string as a ring-buffer record (one record, or a per-CPU batch of them): split and
//! decoded or rejected, never a panic. Ring records carry no checksum, so every mutation reaches
//! the splitter and the decoder.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wakeviz_core::decode::{decode_record, ring_records};
// The allocation limit (`wakeviz_fuzz::alloc_limit`) lives in the helpers' crate.
use wakeviz_fuzz as _;

fuzz_target!(|data: &[u8]| {
    let mut n = 0usize;
    // Each record is a non-empty slice inside `data`, and the records never cover more bytes
    // than the batch holds.
    for r in ring_records(data).flatten() {
        assert!(r.len() <= data.len());
        n += r.len();
        let _ = decode_record(r);
    }
    assert!(n <= data.len());
});
