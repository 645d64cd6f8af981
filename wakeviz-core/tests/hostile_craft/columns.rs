//! Crafted format-2 recordings: the columnar `EVENTS` payload (`format::columns`) with counts
//! that lie, columns cut short or too long, widths out of range, select flags and inputs that
//! disagree with their columns, and each layout put in a file of the other version.
use wakeviz_core::{
    event::{Event, Select, SelectInputs, WakeeFlips},
    format::{FORMAT_VERSION, columns},
};

use super::{ROWS, chunk, file_of, round, topology, wake};

/// Events as a columnar payload, and their count.
pub fn encode(evs: impl IntoIterator<Item = Event>) -> (Vec<u8>, u32) {
    let mut e = columns::Encoder::default();
    for ev in evs {
        e.push(&ev);
    }
    let n = e.count;
    let mut out = Vec::new();
    e.finish(&mut out);
    (out, n)
}

/// A whole format-2 file.
pub fn file(chunks: &[Vec<u8>]) -> Vec<u8> {
    file_of(FORMAT_VERSION, topology(4, 4), chunks)
}

/// A select record with every optional input and an ABI-3 inputs block.
pub fn select(ts_ns: u64) -> Event {
    Event::Select(Box::new(Select {
        ts_ns,
        entry_ts_ns: ts_ns - 900,
        cpu: 1,
        pid: 100,
        prev_cpu: 2,
        wake_flags: 0x18,
        chosen_cpu: 3,
        waker_pid: 7,
        waker_nr_running: Some(2),
        nr_idle_scan: Some(4),
        has_idle_cores: Some(true),
        prev_nr_idle_scan: Some(1),
        prev_has_idle_cores: Some(false),
        idle_scan_ns: Some(300),
        scan: None,
        inputs: SelectInputs {
            waker_load: Some(1024),
            allowed: Some([0b1110, 0, 0, 0]),
            flips: Some(WakeeFlips {
                waker: 3,
                wakee: 1,
                waker_decay_jiffies: 10,
                jiffies: 12,
                waker_last_wakee_is_task: true,
            }),
            ..SelectInputs::default()
        },
    }))
}

/// One select record laid out by hand, every column one byte wide but the flags (two): the
/// flags, the `select.optional` bytes and the inputs stream as given.
fn one_select(flags: u16, optional: &[u8], inputs: &[u8]) -> Vec<u8> {
    let mut widths = [1u8; columns::COLUMNS];
    widths[columns::col::SEL_FLAGS] = 2;
    let mut p = widths.to_vec();
    // kind, cpu, ts; pid, duration, prev_cpu, wake_flags, chosen_cpu, waker_pid.
    p.extend_from_slice(&[6, 1, 50, 100, 9, 2, 0x18, 3, 7]);
    p.extend_from_slice(&flags.to_le_bytes());
    p.extend_from_slice(optional);
    p.extend_from_slice(inputs);
    p
}

fn events_chunk(raw: &[u8], count: u32) -> Vec<u8> {
    chunk(chunk::KIND_EVENTS, raw, count, false)
}

/// The cases (name, file, refused): as `super::cases`, for the columnar layout.
pub fn cases() -> Vec<(&'static str, Vec<u8>, bool)> {
    let mut evs: Vec<Event> = round(0, 100, 4).into();
    evs.push(select(1_020_000));
    let (one, n) = encode(evs.clone());
    let with = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut p = one.clone();
        f(&mut p);
        file(&[events_chunk(&p, n)])
    };
    let kinds = columns::COLUMNS;
    let mut v = vec![
        ("columns-intact", file(&[events_chunk(&one, n)]), false),
        (
            "columns-count-0xffffffff",
            file(&[events_chunk(&one, u32::MAX)]),
            true,
        ),
        // More events than the kinds column holds: the other columns shift under it.
        (
            "columns-count-more",
            file(&[events_chunk(&one, n + 3)]),
            true,
        ),
        // Fewer: the last columns' bytes are left over.
        (
            "columns-count-fewer",
            file(&[events_chunk(&one, n - 1)]),
            true,
        ),
        (
            "columns-truncated",
            file(&[events_chunk(&one[..one.len() - 3], n)]),
            true,
        ),
        (
            "columns-cut-in-the-widths",
            file(&[events_chunk(&one[..10], 1)]),
            true,
        ),
        (
            "columns-too-long",
            with(&|p| p.extend_from_slice(&[0, 0])),
            true,
        ),
        ("columns-width-3", with(&|p| p[0] = 3), true),
        ("columns-width-0", with(&|p| p[5] = 0), true),
        (
            "columns-width-8-on-a-u32-column",
            with(&|p| p[columns::col::CPU] = 8),
            true,
        ),
        ("columns-unknown-kind", with(&|p| p[kinds + 2] = 9), true),
        ("columns-kind-0", with(&|p| p[kinds] = 0), true),
        // Flags: bits beyond the nine defined, a value bit without its presence bit.
        (
            "columns-select-flags-bit-9",
            file(&[events_chunk(&one_select(1 << 9, &[], &[]), 1)]),
            true,
        ),
        (
            "columns-select-flags-orphan-value",
            file(&[events_chunk(&one_select(1 << 7, &[], &[]), 1)]),
            true,
        ),
        (
            "columns-select-optional-missing",
            file(&[events_chunk(&one_select(0b11, &[5], &[]), 1)]),
            true,
        ),
        (
            "columns-select-optional-extra",
            file(&[events_chunk(&one_select(0b1, &[5, 6], &[]), 1)]),
            true,
        ),
        // An inputs block claiming a load value it does not carry.
        (
            "columns-select-inputs-truncated",
            file(&[events_chunk(&one_select(1 << 6, &[], &[1]), 1)]),
            true,
        ),
        (
            "columns-select-inputs-bad-bits",
            file(&[events_chunk(&one_select(1 << 6, &[], &[0x80, 0x40]), 1)]),
            true,
        ),
        (
            "columns-select-inputs-without-flag",
            file(&[events_chunk(&one_select(0, &[], &[0]), 1)]),
            true,
        ),
        (
            "columns-select-by-hand",
            file(&[events_chunk(&one_select(0x1ff, &[1, 2, 3, 4], &[1, 9]), 1)]),
            false,
        ),
        // Each layout in a file of the other version: refused, never misread.
        (
            "rows-in-a-format-2-file",
            file(&[chunk(
                chunk::KIND_EVENTS,
                &super::encode(evs.clone()).0,
                n,
                true,
            )]),
            true,
        ),
        (
            "columns-in-a-format-1-file",
            file_of(ROWS, topology(4, 4), &[events_chunk(&one, n)]),
            true,
        ),
    ];
    // A zstd chunk of more identical events than a chunk may hold, a few KB on disk.
    let waking = || Event::Waking(wake(0, 0, 1, 0, 1));
    let over = chunk::MAX_CHUNK_ENTRIES + 1;
    let (raw, _) = encode((0..over).map(|_| waking()));
    v.push((
        "columns-zstd-over-the-entry-limit",
        file(&[chunk(chunk::KIND_EVENTS, &raw, over, true)]),
        true,
    ));
    // At the limit, three times: accepted, memory one chunk (and its widened columns).
    let (raw, k) = encode((0..chunk::MAX_CHUNK_ENTRIES).map(|_| waking()));
    let full = chunk(chunk::KIND_EVENTS, &raw, k, true);
    v.push((
        "columns-zstd-chunks-at-the-limit",
        file(&[full.clone(), full.clone(), full]),
        false,
    ));
    v
}
