//! Any byte string given to the recording reader: never a panic, never unbounded memory.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wakeviz_core::format::Reader;

fuzz_target!(|data: &[u8]| {
    let Ok(mut r) = Reader::new(data, std::path::Path::new("fuzz.wvz")) else {
        return;
    };
    let _ = r.header().topology.summary();
    while let Some(chunk) = r.next_chunk() {
        if chunk.is_err() {
            break;
        }
    }
});
