//! Every input the fuzzers kept (their corpus) and every input that ever crashed them
//! (fuzz/regressions) goes through the decoders again on each test run: a fixed crash stays
//! fixed without needing the fuzzer.
use std::path::{Path, PathBuf};

use wakeviz_core::{
    decode::{decode_record, ring_records},
    format::Reader,
};

fn inputs(target: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let mut out = Vec::new();
    for dir in ["corpus", "regressions"] {
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
    assert!(
        !files.is_empty(),
        "the seed corpus is part of the repository"
    );
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
