//! The recording reader under every crafted hostile case (see `hostile_craft`): each
//! refused file fails with one line naming the file (and the offset), each other one reads to
//! its end. The binary's side, under an address-space limit, is `wakeviz/tests/hostile.rs`.
use std::path::Path;

use wakeviz_core::format::{ChunkPayload, FormatError, Reader};

mod hostile_craft;

fn read(bytes: &[u8]) -> Result<usize, FormatError> {
    let mut r = Reader::new(bytes, Path::new("crafted.wvz"))?;
    let mut events = 0;
    while let Some(c) = r.next_chunk() {
        if let ChunkPayload::Events(e) = c? {
            events += e.len();
        }
    }
    Ok(events)
}

#[test]
fn every_crafted_case_is_refused_in_one_line_or_read() {
    for (name, bytes, refused) in hostile_craft::cases() {
        match read(&bytes) {
            Err(e) => {
                let msg = e.to_string();
                assert!(refused, "{name}: refused: {msg}");
                assert!(msg.starts_with("crafted.wvz: "), "{name}: {msg}");
                assert!(msg.contains("offset"), "{name}: no offset: {msg}");
                assert_eq!(msg.lines().count(), 1, "{name}: {msg}");
                assert!(
                    std::error::Error::source(&e).is_none(),
                    "{name}: printed twice"
                );
            }
            Ok(n) => assert!(!refused, "{name}: accepted, {n} events"),
        }
    }
}

#[test]
fn bytes_after_end_are_counted() {
    let mut f = hostile_craft::file(hostile_craft::topology(4, 4), &[]);
    f.extend_from_slice(&[0; 123]);
    let mut r = Reader::new(f.as_slice(), Path::new("t.wvz")).unwrap();
    while r.next_chunk().is_some() {}
    assert_eq!(r.trailing_bytes(), Some(123));
    let f = hostile_craft::file(hostile_craft::topology(4, 4), &[]);
    let mut r = Reader::new(f.as_slice(), Path::new("t.wvz")).unwrap();
    while r.next_chunk().is_some() {}
    assert_eq!(r.trailing_bytes(), None);
}

#[test]
fn colliding_pids_cost_what_distinct_ones_cost() {
    // Multiples of 2^15 all fell into one bucket run of the old fixed multiplicative hash.
    use wakeviz_core::pidmap::PidMap;
    let time = |keys: &dyn Fn(u32) -> u32| {
        let t = std::time::Instant::now();
        let mut m = PidMap::default();
        for i in 0..100_000 {
            *m.entry(keys(i)).or_insert(0u32) += 1;
        }
        for i in 0..100_000 {
            assert_eq!(m.get(&keys(i)), Some(&1));
        }
        t.elapsed()
    };
    let plain = time(&|i| i);
    let crafted = time(&|i| i << 15);
    assert!(
        crafted < plain * 5 + std::time::Duration::from_millis(20),
        "{crafted:?} vs {plain:?}"
    );
}
