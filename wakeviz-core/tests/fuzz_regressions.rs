//! Every committed fuzz input goes through the decoders again on each test run: the seeds
//! (fuzz/seeds: hand-made files and a minimised sample of what the fuzzers found) and every
//! input that ever crashed them, minimised (fuzz/regressions), so a fixed crash stays fixed
//! without needing the fuzzer. The fuzzers' growing corpus lives outside the tree
//! (`scripts/test.sh` keeps it under target/) and is not replayed here.
use std::path::{Path, PathBuf};

use wakeviz_core::{
    decode::{decode_record, ring_records},
    format::{FORMAT_VERSION, Reader, codec, columns},
};

fn inputs(target: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let mut out = Vec::new();
    for dir in ["seeds", "regressions"] {
        if let Ok(rd) = std::fs::read_dir(root.join(dir).join(target)) {
            out.extend(rd.flatten().map(|e| e.path()).filter(|p| p.is_file()));
        }
    }
    out.sort();
    out
}

#[test]
fn recording_inputs_never_panic() {
    let files = inputs("recording");
    assert!(!files.is_empty(), "the seeds are part of the repository");
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        let Ok(mut r) = Reader::new(bytes.as_slice(), &f) else {
            continue;
        };
        let _ = r.header().topology.summary();
        while let Some(c) = r.next_chunk() {
            if c.is_err() {
                break;
            }
        }
    }
}

#[test]
fn ringbuf_inputs_never_panic() {
    let files = inputs("ringbuf_record");
    assert!(!files.is_empty());
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        for rec in ring_records(&bytes).flatten() {
            let _ = decode_record(rec);
        }
    }
}

#[test]
fn events_codec_inputs_never_panic() {
    let files = inputs("events_codec");
    assert!(!files.is_empty());
    for f in files {
        // As the fuzz target reads them: the claimed count, then the payload for both layouts.
        let bytes = std::fs::read(&f).unwrap();
        let Some((count, payload)) = bytes.split_first_chunk::<4>() else {
            continue;
        };
        let count = u32::from_le_bytes(*count);
        let mut out = Vec::new();
        let _ = codec::decode(payload, count, &mut out, &mut Vec::new());
        let mut scratch = columns::Scratch::default();
        let _ = columns::decode(
            payload,
            count,
            FORMAT_VERSION,
            &mut out,
            &mut Vec::new(),
            &mut scratch,
        );
    }
}

#[test]
fn seed_recordings_are_valid() {
    // The hand-picked whole-file seeds (`seed-*`, not the fuzzer's own finds) must decode
    // completely, or the fuzzer starts from garbage.
    for f in inputs("recording") {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        if !name.starts_with("seed-") || name.contains("head") {
            continue;
        }
        let bytes = std::fs::read(&f).unwrap();
        let mut r = Reader::new(bytes.as_slice(), &f).unwrap();
        let mut n = 0;
        while let Some(c) = r.next_chunk() {
            c.unwrap_or_else(|e| panic!("{name}: {e}"));
            n += 1;
        }
        assert!(n > 0, "{name}");
    }
}
