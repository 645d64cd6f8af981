//! The EVENTS payload decoders on their own (what a zstd chunk decompresses to): the first four
//! bytes are the chunk's claimed `count`, the rest the payload, given to both layouts (format 1's
//! rows, format 2's columns; `seeds/events_codec/seed-columns-*` are columnar payloads). Never a
//! panic, and the claimed count never sizes an allocation beyond what the payload can hold.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wakeviz_core::format::{FORMAT_VERSION, codec, columns};
// The allocation limit (`wakeviz_fuzz::alloc_limit`) lives in the helpers' crate.
use wakeviz_fuzz as _;

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let count = u32::from_le_bytes([data[0], data[1], data[2], data[3]]);
    let mut out = Vec::new();
    let _ = codec::decode(&data[4..], count, &mut out, &mut Vec::new());
    let mut scratch = columns::Scratch::default();
    let _ = columns::decode(
        &data[4..],
        count,
        FORMAT_VERSION,
        &mut out,
        &mut Vec::new(),
        &mut scratch,
    );
});
