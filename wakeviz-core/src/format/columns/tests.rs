//! The columnar layout against the row layout: every event kind and every optional select input
//! decodes to the same events, over fresh and recycled vectors, at every column width.
use super::{decode::decode_blocks, *};
use crate::{
    event::{Event, Kind, MAX_WORDS, Select, SelectInputs, WakeeFlips},
    format::{FORMAT_VERSION, codec},
};

/// A small deterministic generator (no dependency): xorshift64*, and the mask of the chunk's
/// numbers (so that a chunk's columns are 1, 2 or 4 bytes wide).
struct Rng(u64, u32);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Mostly small values, sometimes each width's extremes, so every column width occurs.
    fn num(&mut self) -> u32 {
        let v = match self.next() % 8 {
            0 => u32::MAX,
            1 => self.next() as u32,
            2 => (self.next() % 70_000) as u32,
            3 => 0,
            _ => (self.next() % 300) as u32,
        };
        v & self.1
    }

    fn opt(&mut self) -> Option<u32> {
        (!self.next().is_multiple_of(3)).then(|| self.num())
    }

    fn flag(&mut self) -> Option<bool> {
        [None, Some(false), Some(true)][(self.next() % 3) as usize]
    }
}

/// Select inputs with each field present or not, ABI-2 only or with ABI-3's flips.
fn inputs(r: &mut Rng) -> SelectInputs {
    match r.next() % 4 {
        0 => SelectInputs::default(),
        k => SelectInputs {
            waker_load: r.opt(),
            prev_load: r.opt(),
            waker_capacity: r.opt(),
            prev_capacity: r.opt(),
            task_h_load: r.opt(),
            waker_h_load: r.opt(),
            task_in_group: r.next().is_multiple_of(2),
            waker_h_nr_delayed: r.opt(),
            waker_kthread: r.flag(),
            waker_nr_cpus_allowed: r.opt(),
            task_nr_cpus_allowed: r.opt(),
            allowed: (r.next().is_multiple_of(2)).then(|| [r.next(), r.next(), 0, u64::MAX]),
            flips: (k == 3).then(|| WakeeFlips {
                waker: r.num(),
                wakee: r.num(),
                waker_decay_jiffies: r.num(),
                jiffies: r.num(),
                waker_last_wakee_is_task: r.next().is_multiple_of(2),
            }),
        },
    }
}

/// `n` events of every kind with random fields; timestamps mostly rising, sometimes going
/// back or jumping far, so the ts column takes every width.
fn events(seed: u64, n: usize) -> Vec<Event> {
    let mut r = Rng(seed | 1, [0xff, 0xffff, u32::MAX][(seed % 3) as usize]);
    // The largest step of this chunk's timestamps, back or forth: ts deltas of 8, 4, 2 or 1
    // byte(s) once zigzagged.
    let step = [u64::MAX, 1 << 30, 30_000, 60][(seed % 4) as usize];
    let mut ts = 0u64;
    (0..n)
        .map(|_| {
            ts = match r.next() % 8 {
                0 => ts.wrapping_sub(r.next() % step),
                _ => ts.wrapping_add(r.next() % step),
            };
            let cpu = r.num();
            let k = Kind::ALL[(r.next() % Kind::COUNT as u64) as usize];
            // Every plain kind from random words: each of its fields takes every width.
            let words: [u32; MAX_WORDS] = std::array::from_fn(|i| {
                let v = r.num();
                if i < k.words() { v } else { 0 }
            });
            match Event::from_words(k, ts, cpu, &words) {
                Some(plain) => plain,
                None => Event::Select(Box::new(Select {
                    ts_ns: ts,
                    entry_ts_ns: ts.wrapping_sub(
                        r.next() % [200, 60_000, 1 << 31, u64::MAX][(seed % 4) as usize],
                    ),
                    cpu,
                    pid: r.num(),
                    prev_cpu: r.num(),
                    wake_flags: r.num(),
                    chosen_cpu: r.num(),
                    waker_pid: r.num(),
                    waker_nr_running: r.opt(),
                    nr_idle_scan: r.opt(),
                    has_idle_cores: r.flag(),
                    prev_nr_idle_scan: r.opt(),
                    prev_has_idle_cores: r.flag(),
                    idle_scan_ns: r.opt(),
                    // The measured scan: any test count, any valid path bits.
                    scan: r.opt().map(|v| crate::event::ScanMeasure {
                        cpus: v as u16,
                        path: (v >> 16) as u16 & wakeviz_common::scan_path::ALL,
                    }),
                    inputs: inputs(&mut r),
                })),
            }
        })
        .collect()
}

fn columns(evs: &[Event]) -> Vec<u8> {
    let mut enc = Encoder::default();
    evs.iter().for_each(|e| enc.push(e));
    let mut out = Vec::new();
    enc.finish(&mut out);
    out
}

fn rows(evs: &[Event]) -> Vec<u8> {
    let mut enc = codec::Encoder::default();
    evs.iter().for_each(|e| enc.push(e));
    enc.buf
}

/// The property: for many random chunks, the columnar decoder gives back the events pushed,
/// which are also what the row layout gives back; decoding over the previous chunk's vector
/// (recycled boxes) changes nothing.
#[test]
fn columns_decode_as_rows_do() {
    let (mut out, mut spare, mut scratch) = (Vec::new(), Vec::new(), Scratch::default());
    for seed in 0..300u64 {
        let n = (seed * 37 % 500) as usize;
        let want = events(seed, n);
        let count = n as u32;
        // The row layout holds the kinds format 1 knew.
        let old: Vec<Event> = (want.iter())
            .filter(|e| e.kind().index() < codec::ROW_KINDS)
            .cloned()
            .collect();
        let mut by_rows = Vec::new();
        codec::decode(&rows(&old), old.len() as u32, &mut by_rows, &mut Vec::new()).unwrap();
        assert_eq!(by_rows, old, "seed {seed}: the row layout");
        decode(
            &columns(&want),
            count,
            FORMAT_VERSION,
            &mut out,
            &mut spare,
            &mut scratch,
        )
        .unwrap();
        assert_eq!(out, want, "seed {seed}: recycled");
        let mut fresh = Vec::new();
        decode(
            &columns(&want),
            count,
            FORMAT_VERSION,
            &mut fresh,
            &mut Vec::new(),
            &mut Scratch::default(),
        )
        .unwrap();
        assert_eq!(fresh, want, "seed {seed}: fresh");
        // Block edges anywhere: inside runs of one kind, between a select and its optional
        // values' neighbours, one event per block.
        let block = [1, 7, 64][seed as usize % 3];
        let payload = columns(&want);
        decode_blocks(
            &payload,
            count,
            FORMAT_VERSION,
            &mut out,
            &mut spare,
            &mut scratch,
            block,
        )
        .unwrap();
        assert_eq!(out, want, "seed {seed}: blocks of {block}");
    }
}

/// An encoder reused after `finish` starts from a clean chunk (timestamps from 0 again).
#[test]
fn encoder_restarts_after_finish() {
    let (a, b) = (events(1, 50), events(2, 70));
    let mut enc = Encoder::default();
    let (mut pa, mut pb) = (Vec::new(), Vec::new());
    a.iter().for_each(|e| enc.push(e));
    enc.finish(&mut pa);
    b.iter().for_each(|e| enc.push(e));
    assert_eq!(enc.count, 70);
    enc.finish(&mut pb);
    assert_eq!(pb, columns(&b));
    let mut out = Vec::new();
    decode(
        &pa,
        50,
        FORMAT_VERSION,
        &mut out,
        &mut Vec::new(),
        &mut Scratch::default(),
    )
    .unwrap();
    assert_eq!(out, a);
}

/// Every width a column can take occurs in the generated chunks (so each is decoded above).
#[test]
fn every_width_is_exercised() {
    let mut seen = [[false; 9]; COLUMNS];
    for seed in 0..300u64 {
        let p = columns(&events(seed, (seed * 37 % 500) as usize));
        for (c, &w) in p[..COLUMNS].iter().enumerate() {
            seen[c][usize::from(w)] = true;
        }
    }
    for (c, s) in seen.iter().enumerate() {
        // The flags hold 9 bits: never 4 bytes wide from the encoder.
        let want: &[usize] = match c {
            _ if is_wide(c) => &[1, 2, 4, 8],
            col::SEL_FLAGS => &[1, 2],
            _ => &[1, 2, 4],
        };
        for &w in want {
            assert!(s[w], "column {c} never {w} bytes wide");
        }
    }
}

/// A recycled vector the caller reordered: the select boxes are not where the last decode put
/// them, and the next decode is still exact (the boxes it cannot find are freed, not reused).
#[test]
fn recycled_vector_reordered_by_the_caller() {
    let (mut out, mut spare, mut scratch) = (Vec::new(), Vec::new(), Scratch::default());
    let (a, b) = (events(3, 400), events(4, 300));
    decode(
        &columns(&a),
        400,
        FORMAT_VERSION,
        &mut out,
        &mut spare,
        &mut scratch,
    )
    .unwrap();
    assert_eq!(out, a);
    out.reverse();
    out.truncate(250);
    decode(
        &columns(&b),
        300,
        FORMAT_VERSION,
        &mut out,
        &mut spare,
        &mut scratch,
    )
    .unwrap();
    assert_eq!(out, b);
}

/// [`PLAIN`] is the layout the module's table documents: every plain kind in exactly one
/// layout, a layout's kinds the same width, its columns its own and before or after the select
/// columns, never among them.
#[test]
fn the_plain_layouts_tile_their_columns() {
    use crate::event::Kind;
    let mut owner = [None; COLUMNS];
    for (g, p) in PLAIN.iter().enumerate() {
        let words = p.kinds[0].words();
        assert!(words > 0 && p.kinds.iter().all(|k| k.fields() == p.kinds[0].fields()));
        for (c, o) in owner.iter_mut().enumerate().skip(p.first).take(words) {
            assert!(o.is_none(), "column {c} in two layouts");
            assert!(!(col::SELECT..=col::SEL_OPTIONAL).contains(&c) && c > col::TS);
            *o = Some(g);
            assert_eq!(layout_of_column(c), Some(g));
        }
    }
    for k in Kind::ALL {
        let n = PLAIN.iter().filter(|p| p.kinds.contains(&k)).count();
        assert_eq!(n, usize::from(k != Kind::Select), "{k:?}");
        assert!(has_kind(FORMAT_VERSION, k.abi() as u8));
    }
    assert!(!has_kind(FORMAT_VERSION, 0) && !has_kind(FORMAT_VERSION, Kind::COUNT as u8 + 1));
    assert_eq!((PLAIN[0].first, PLAIN[1].first, PLAIN[2].first), (2, 6, 11));
}

/// A kind tag the file's version does not have is refused, naming the first event that has it.
#[test]
fn an_unknown_kind_names_its_first_event() {
    let evs = events(5, 40);
    for bad in [0u8, Kind::COUNT as u8 + 1, 0xff] {
        let mut p = columns(&evs);
        p[COLUMNS + 9] = bad;
        p[COLUMNS + 30] = bad;
        let err = decode(
            &p,
            40,
            FORMAT_VERSION,
            &mut Vec::new(),
            &mut Vec::new(),
            &mut Scratch::default(),
        )
        .expect_err("refused");
        assert_eq!(err, format!("event 9: unknown kind {bad}"));
    }
}
