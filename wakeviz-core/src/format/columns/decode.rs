//! Decoding a columnar `EVENTS` payload: the columns are located and checked first (their
//! lengths follow from the kinds column), then the chunk is decoded in blocks of [`BLOCK`]
//! events: each block's rows are widened into per-kind rows (`widen.rs`), then its events are
//! built one kind at a time (`build.rs`).
use super::{
    COLUMNS, PLAIN, SLOTS, build, col, flag, has_column, has_kind, is_wide, layout_of_column,
    widen::{self, Planes, Scratch},
};
use crate::{
    event::{Event, Kind, Select},
    format::codec::{Cursor, unzigzag},
};

/// Events per block: the widened rows of a block (about 130 KiB) instead of a whole chunk's
/// (64 Ki events, about 2 MiB) took 2 MiB off the decode's peak RSS (no speed change measured),
/// and a block's positions fit in u16 (`build.rs`).
pub(super) const BLOCK: usize = 4096;

/// Where a block starts in each kind's columns: rows of the blocks before it.
#[derive(Clone, Copy, Default)]
struct At {
    plain: [usize; PLAIN.len()],
    select: usize,
    optional: usize,
}

/// Decodes `count` events from a columnar payload of format `version` (the columns of kinds
/// added later are absent) into `out`, replacing what it held (over a recycled chunk as
/// [`crate::format::codec::decode`] does). `scratch` holds the widened columns; its contents
/// on entry do not matter.
pub fn decode(
    payload: &[u8],
    count: u32,
    version: u32,
    out: &mut Vec<Event>,
    spare: &mut Vec<Box<Select>>,
    scratch: &mut Scratch,
) -> Result<(), String> {
    decode_blocks(payload, count, version, out, spare, scratch, BLOCK)
}

/// [`decode`] with blocks of `block` events (tests use small ones, to cross block
/// edges).
#[expect(
    clippy::vec_box,
    reason = "the boxes move into `Event::Select` as they are"
)]
pub(super) fn decode_blocks(
    payload: &[u8],
    count: u32,
    version: u32,
    out: &mut Vec<Event>,
    spare: &mut Vec<Box<Select>>,
    scratch: &mut Scratch,
    block: usize,
) -> Result<(), String> {
    let n = count as usize;
    let present = (0..COLUMNS).filter(|&c| has_column(version, c)).count();
    let (widths, rest) = payload
        .split_at_checked(present)
        .ok_or("payload ends inside the column widths")?;
    let (kinds, rest) = rest
        .split_at_checked(n)
        .ok_or_else(|| format!("payload ends inside the kinds of {n} events"))?;
    let (cols, inputs) = locate(version, widths, kinds, rest, &mut scratch.flags)?;
    // Every event took at least 6 bytes of columns (kind, cpu, ts, three fields), so `n` is
    // bounded by the payload: sizing `out` to it allocates no more than the bytes justify.
    let mut select_at = std::mem::take(&mut scratch.select_at);
    build::reclaim(out, n, spare, &mut select_at);
    let mut inputs = Cursor::new(inputs);
    let (mut at, mut ts) = (At::default(), 0u64);
    // Positions within a block are u16.
    let block = block.clamp(1, 1 << 16);
    for (b, kinds) in kinds.chunks(block).enumerate() {
        let first = b * block;
        at = fill(scratch, &cols, first, kinds, at, &mut ts);
        build::build(scratch, first, out, spare, &mut inputs, &mut select_at)?;
    }
    scratch.select_at = select_at;
    if !inputs.is_empty() {
        return Err("trailing bytes after the last select-inputs block".into());
    }
    Ok(())
}

/// Checks the kinds and the widths and finds each column, sized from the kinds (and the select
/// flags for the optional values); returns the columns and the select-inputs stream after them.
fn locate<'a>(
    version: u32,
    widths: &[u8],
    kinds: &[u8],
    mut rest: &'a [u8],
    flags: &mut Vec<u32>,
) -> Result<([Planes<'a>; COLUMNS], &'a [u8]), String> {
    let mut per_kind = [0usize; 256];
    for &k in kinds {
        per_kind[usize::from(k)] += 1;
    }
    if (0..=255u8).any(|k| per_kind[usize::from(k)] > 0 && !has_kind(version, k)) {
        let (i, k) = (kinds.iter().enumerate())
            .find(|&(_, &k)| !has_kind(version, k))
            .unwrap_or((0, &0));
        return Err(format!("event {i}: unknown kind {k}"));
    }
    let empty = Planes {
        bytes: &[],
        rows: 0,
    };
    let mut cols = [empty; COLUMNS];
    let mut widths = widths.iter();
    for c in (0..COLUMNS).filter(|&c| has_column(version, c)) {
        let w = *widths
            .next()
            .ok_or("payload ends inside the column widths")?;
        if !(matches!(w, 1 | 2 | 4) || w == 8 && is_wide(c)) {
            return Err(format!("column {c}: width {w} bytes"));
        }
        let rows = match (c, layout_of_column(c)) {
            (col::CPU | col::TS, _) => kinds.len(),
            (_, Some(g)) => PLAIN[g]
                .kinds
                .iter()
                .map(|k| per_kind[usize::from(k.abi())])
                .sum(),
            (col::SEL_OPTIONAL, _) => optional_rows(cols[col::SEL_FLAGS], flags)?,
            _ => per_kind[usize::from(Kind::Select.abi())],
        };
        let len = rows * usize::from(w);
        let Some((bytes, after)) = rest.split_at_checked(len) else {
            return Err(format!(
                "column {c} needs {len} bytes ({rows} x {w}), {} left in the payload",
                rest.len()
            ));
        };
        cols[c] = Planes { bytes, rows };
        rest = after;
    }
    Ok((cols, rest))
}

/// Checks every select record's flags and counts the values they put in `select.optional`.
fn optional_rows(p: Planes<'_>, flags: &mut Vec<u32>) -> Result<usize, String> {
    widen::narrow(flags, p, 0, p.rows);
    let mut rows = 0;
    for (i, &f) in flags.iter().enumerate() {
        let orphan = f & flag::HAS_IDLE_CORES_TRUE != 0 && f & flag::HAS_IDLE_CORES == 0
            || f & flag::PREV_HAS_IDLE_CORES_TRUE != 0 && f & flag::PREV_HAS_IDLE_CORES == 0;
        if f & !flag::ALL != 0 || orphan {
            return Err(format!("select record {i}: bad flags {f:#x}"));
        }
        rows += (f & flag::OPTIONAL).count_ones() as usize;
    }
    Ok(rows)
}

/// Widens block `kinds` (starting at event `first`, and at `at` in each kind's columns) into
/// `s`: absolute timestamps (`ts` carries the last one from block to block), then each kind's
/// rows. Returns where the next block starts.
fn fill(
    s: &mut Scratch,
    cols: &[Planes<'_>; COLUMNS],
    first: usize,
    kinds: &[u8],
    at: At,
    ts: &mut u64,
) -> At {
    let mut per_kind = [0usize; SLOTS];
    for &k in kinds {
        per_kind[usize::from(k) & (SLOTS - 1)] += 1;
    }
    let selects = per_kind[usize::from(Kind::Select.abi())];
    let optional: usize = (s.flags.get(at.select..at.select + selects))
        .unwrap_or_default()
        .iter()
        .map(|f| (f & flag::OPTIONAL).count_ones() as usize)
        .sum();
    build::order(s, kinds, &per_kind);
    let n = kinds.len();
    widen::resize(&mut s.ts, n, 0);
    let mut prev = *ts;
    cols[col::TS].widen(first, n, s.ts.iter_mut(), |t, delta| {
        prev = prev.wrapping_add(unzigzag(delta) as u64);
        *t = prev;
    });
    *ts = prev;
    widen::narrow(&mut s.cpu, cols[col::CPU], first, n);
    let mut next = at;
    for (g, p) in PLAIN.iter().enumerate() {
        let len: usize = p.kinds.iter().map(|k| per_kind[usize::from(k.abi())]).sum();
        let these = &cols[p.first..p.first + p.kinds[0].words()];
        rows(&mut s.plain[g], these, at.plain[g], len);
        next.plain[g] += len;
    }
    widen::wide(
        &mut s.durations,
        cols[col::SEL_DURATION],
        at.select,
        selects,
    );
    let sel = &cols[col::SELECT..col::SEL_OPTIONAL];
    let narrow_sel = sel
        .iter()
        .enumerate()
        .filter(|&(k, _)| k != 1)
        .map(|(_, p)| *p);
    widen::resize(&mut s.selects, selects, [0; 6]);
    for (f, p) in narrow_sel.enumerate() {
        widen::field(&mut s.selects, f, p, at.select);
    }
    let opt = cols[col::SEL_OPTIONAL];
    widen::narrow(&mut s.optional, opt, at.optional, optional);
    next.select += selects;
    next.optional += optional;
    next
}

/// Rows `start..start + len` of one kind's columns (field `f` from `cols[f]`).
fn rows<const N: usize>(dst: &mut Vec<[u32; N]>, cols: &[Planes<'_>], start: usize, len: usize) {
    widen::resize(dst, len, [0; N]);
    for (f, p) in cols.iter().enumerate() {
        widen::field(dst, f, *p, start);
    }
}
