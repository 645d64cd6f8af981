//! Any byte string as a ring-buffer record: decoded or rejected, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = wakeviz_core::decode::decode_record(data);
});
