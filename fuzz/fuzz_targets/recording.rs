//! Any byte string given to the recording reader: never a panic, never unbounded memory. The
//! checksums are fixed up first (`fix_checksums`), so mutations reach the header parser and the
//! chunk decoders instead of stopping at the CRC check. The seeds hold files of both formats
//! (`seed-*-columns*.wvz` are format 2, columnar `EVENTS` chunks), so both decoders are reached.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wakeviz_core::format::Reader;

fuzz_target!(|data: &[u8]| {
    let mut f = data.to_vec();
    wakeviz_fuzz::fix_checksums(&mut f);
    let Ok(mut r) = Reader::new(f.as_slice(), std::path::Path::new("fuzz.wvz")) else {
        return;
    };
    let _ = r.header().topology.summary();
    while let Some(chunk) = r.next_chunk() {
        if chunk.is_err() {
            break;
        }
    }
});
