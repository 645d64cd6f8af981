//! Columnar event encoding inside an `EVENTS` chunk of a format-2 recording (before zstd).
//!
//! Format 1 stored each event as a row of varints ([`super::codec`]): decoding spent about 210
//! instructions per event in a loop whose every branch depends on the byte before it. Here each
//! field of a chunk is one column of fixed-width integers, the width chosen per column and
//! chunk as the narrowest that holds its largest value, stored as byte planes (every value's
//! low byte, then every value's next byte, ...). zstd does the compression: the high planes of
//! small values are long runs of zeros, the low planes literals. The decoder widens whole
//! columns in straight loops (`widen.rs`) and then builds the events one kind at a time
//! (`build.rs`), so that no branch depends on the kind of the event at hand.
//!
//! ```text
//! payload := widths kinds column* inputs
//! widths  := one byte per numeric column below (1, 2 or 4; 8 also allowed for u64 columns)
//! kinds   := count bytes, the ABI tag of each event
//! column  := width planes of rows bytes (rows as in the table): bits 0-7 of every row, then
//!            bits 8-15, ...
//! inputs  := the select-input blocks (format 1's varint block, see `codec::put_inputs`), one
//!            per select record whose flag bit 6 is set, in record order, to the payload's end
//! ```
//!
//! | #  | column              | rows                   | type | value                          |
//! |----|---------------------|------------------------|------|--------------------------------|
//! |  0 | cpu                 | every event            | u32  | `cpu`                          |
//! |  1 | ts                  | every event            | u64  | zigzag(ts - previous ts)       |
//! |  2 | wake.pid            | waking/wakeup/new      | u32  | `pid`                          |
//! |  3 | wake.target_cpu     | waking/wakeup/new      | u32  |                                |
//! |  4 | wake.waker_pid      | waking/wakeup/new      | u32  |                                |
//! |  5 | wake.prio           | waking/wakeup/new      | u32  | zigzag(`prio`)                 |
//! |  6 | switch.prev_pid     | switch                 | u32  |                                |
//! |  7 | switch.next_pid     | switch                 | u32  |                                |
//! |  8 | switch.prev_state   | switch                 | u32  |                                |
//! |  9 | switch.prev_prio    | switch                 | u32  | zigzag                         |
//! | 10 | switch.next_prio    | switch                 | u32  | zigzag                         |
//! | 11 | migrate.pid         | migrate                | u32  |                                |
//! | 12 | migrate.orig_cpu    | migrate                | u32  |                                |
//! | 13 | migrate.dest_cpu    | migrate                | u32  |                                |
//! | 14 | select.pid          | select                 | u32  |                                |
//! | 15 | select.duration     | select                 | u64  | `ts_ns - entry_ts_ns`          |
//! | 16 | select.prev_cpu     | select                 | u32  |                                |
//! | 17 | select.wake_flags   | select                 | u32  |                                |
//! | 18 | select.chosen_cpu   | select                 | u32  |                                |
//! | 19 | select.waker_pid    | select                 | u32  |                                |
//! | 20 | select.flags        | select                 | u32  | [`flag`] bits                  |
//! | 21 | select.optional     | one per set OPTIONAL bit | u32 | the present optional inputs  |
//!
//! Columns 2 to 13 are the plain kinds' words ([`crate::event::Event::words`]), laid out by
//! [`PLAIN`] from the kinds' own declaration (`event.rs`): a new plain kind gets columns after
//! the last ones, which only files of the format version it names ([`Kind::since`]) have, so
//! that older files still decode without them.
//!
//! Rows of a kind's columns are that kind's events in chunk order; the decoder counts them from
//! the kinds column, so no length is stored: a column either has exactly its rows' bytes in the
//! payload or the chunk is refused, and after the last column only the inputs blocks remain.
//! `select.optional` holds, for each select record in turn, the values of its set bits 0, 1, 3,
//! 5 and 9 in that order. The smallest event (a migrate with one-byte columns) is 6 bytes, as in
//! format 1, so [`super::codec::MIN_EVENT_BYTES`] bounds a chunk's count for both layouts.
mod build;
mod decode;
mod encode;
mod widen;

pub use decode::decode;
pub use encode::Encoder;
pub use widen::Scratch;

use crate::event::Kind;

/// The columns of one or more plain kinds: rows in chunk order whatever the kind.
#[derive(Clone, Copy, Debug)]
pub struct Plain {
    pub kinds: &'static [Kind],
    /// The first of its `kinds[0].words()` consecutive columns.
    pub first: usize,
    /// The format version whose payloads have these columns (and their widths).
    pub since: u32,
}

const KINDS: &[Kind] = &Kind::ALL;

/// Whether `k` is plain and its words have columns of their own ([`Kind::columns`]).
const fn leads(k: Kind) -> bool {
    k.words() > 0 && k.columns() as usize == k as usize
}

/// How many layouts [`PLAIN`] has.
const LAYOUTS: usize = {
    let (mut n, mut i) = (0, 0);
    while i < Kind::COUNT {
        n += leads(Kind::ALL[i]) as usize;
        i += 1;
    }
    n
};

/// Every plain kind's columns, laid out from [`Kind::ALL`]: each kind whose words have columns
/// of their own gets the next ones, with the kinds stored in them right after it, and the
/// select record's columns sit where it is (columns [`col::SELECT`] to [`col::SEL_OPTIONAL`]),
/// so a kind added at the end gets columns after every existing one.
pub const PLAIN: [Plain; LAYOUTS] = {
    let empty = Plain {
        kinds: &[],
        first: 0,
        since: 0,
    };
    let mut out = [empty; LAYOUTS];
    let (mut g, mut next, mut i) = (0, col::PLAIN_FIRST, 0);
    while i < Kind::COUNT {
        let k = Kind::ALL[i];
        if k as usize == Kind::Select as usize {
            assert!(
                next == col::SELECT,
                "the select columns follow the earlier kinds'"
            );
            next = col::SEL_OPTIONAL + 1;
        } else if leads(k) {
            let mut n = 1;
            while i + n < Kind::COUNT && Kind::ALL[i + n].columns() as usize == k as usize {
                assert!(Kind::ALL[i + n].words() == k.words());
                n += 1;
            }
            out[g] = Plain {
                kinds: KINDS.split_at(i).1.split_at(n).0,
                first: next,
                since: k.since(),
            };
            next += k.words();
            g += 1;
            i += n - 1;
        }
        i += 1;
    }
    out
};

/// The latest format version that added a layout to [`PLAIN`].
pub const LATEST: u32 = {
    let (mut v, mut g) = (0, 0);
    while g < PLAIN.len() {
        if PLAIN[g].since > v {
            v = PLAIN[g].since;
        }
        g += 1;
    }
    v
};

/// Numeric columns (everything after the width table but the kinds and the inputs).
pub const COLUMNS: usize = {
    let mut n = col::SEL_OPTIONAL + 1;
    let mut g = 0;
    while g < PLAIN.len() {
        let end = PLAIN[g].first + PLAIN[g].kinds[0].words();
        if end > n {
            n = end;
        }
        g += 1;
    }
    n
};

/// Kind tags are below this (a power of two, to mask a checked tag into every table).
pub const SLOTS: usize = 8;
const _: () = assert!(Kind::COUNT < SLOTS);

/// The [`PLAIN`] entry of each kind tag ([`PLAIN`]'s length: a select record, or no kind).
pub const LAYOUT: [u8; SLOTS] = {
    let mut t = [PLAIN.len() as u8; SLOTS];
    let mut g = 0;
    while g < PLAIN.len() {
        let mut i = 0;
        while i < PLAIN[g].kinds.len() {
            t[PLAIN[g].kinds[i].abi() as usize] = g as u8;
            i += 1;
        }
        g += 1;
    }
    t
};

/// The first column of each plain kind tag's layout (the width table's end for any other tag,
/// which has none).
pub const FIRST_COLUMN: [usize; SLOTS] = {
    let mut t = [COLUMNS; SLOTS];
    let mut k = 0;
    while k < SLOTS {
        let g = LAYOUT[k] as usize;
        if g < PLAIN.len() {
            t[k] = PLAIN[g].first;
        }
        k += 1;
    }
    t
};

/// For each kind tag of a layout several kinds share, that layout's counter among the four
/// 16-bit row counters `build::order` keeps in one register ([`UNSHARED`], the fourth, for
/// every other tag). A kind alone in its layout needs no counter: its rows are its events in
/// order.
pub const SHARED: [u8; SLOTS] = {
    let mut t = [UNSHARED; SLOTS];
    let (mut g, mut n) = (0, 0u8);
    while g < PLAIN.len() {
        if PLAIN[g].kinds.len() > 1 {
            assert!(
                n < UNSHARED,
                "at most three layouts shared by several kinds"
            );
            let mut i = 0;
            while i < PLAIN[g].kinds.len() {
                t[PLAIN[g].kinds[i].abi() as usize] = n;
                i += 1;
            }
            n += 1;
        }
        g += 1;
    }
    t
};

/// [`SHARED`]'s value for a tag with no shared layout.
pub const UNSHARED: u8 = 3;

/// The [`PLAIN`] entry holding column `c`.
pub const fn layout_of_column(c: usize) -> Option<usize> {
    let mut g = 0;
    while g < PLAIN.len() {
        let p = &PLAIN[g];
        if c >= p.first && c < p.first + p.kinds[0].words() {
            return Some(g);
        }
        g += 1;
    }
    None
}

/// Whether format `version`'s payloads hold column `c`.
pub const fn has_column(version: u32, c: usize) -> bool {
    match layout_of_column(c) {
        Some(g) => PLAIN[g].since <= version,
        None => true,
    }
}

/// Whether format `version`'s payloads may hold events of kind tag `tag`.
pub fn has_kind(version: u32, tag: u8) -> bool {
    let Some(k) = Kind::from_abi(u16::from(tag)) else {
        return false;
    };
    match PLAIN.get(usize::from(LAYOUT[usize::from(tag) & (SLOTS - 1)])) {
        Some(p) => p.since <= version,
        None => k == Kind::Select,
    }
}

/// Column indices, in payload order.
pub mod col {
    pub const CPU: usize = 0;
    pub const TS: usize = 1;
    /// Where the plain kinds' columns start ([`super::PLAIN`]).
    pub const PLAIN_FIRST: usize = 2;
    pub const SELECT: usize = 14;
    pub const SEL_DURATION: usize = 15;
    pub const SEL_FLAGS: usize = 20;
    pub const SEL_OPTIONAL: usize = 21;
}

/// Bits of the `select.flags` column: bits 0 to 6 are format 1's presence bits.
pub mod flag {
    pub const WAKER_NR_RUNNING: u32 = 1 << 0;
    pub const NR_IDLE_SCAN: u32 = 1 << 1;
    pub const HAS_IDLE_CORES: u32 = 1 << 2;
    pub const PREV_NR_IDLE_SCAN: u32 = 1 << 3;
    pub const PREV_HAS_IDLE_CORES: u32 = 1 << 4;
    pub const IDLE_SCAN_NS: u32 = 1 << 5;
    /// A select-inputs block (ABI 2 and later) follows in the inputs stream.
    pub const INPUTS: u32 = 1 << 6;
    /// The value of `has_idle_cores` / `prev_has_idle_cores` when present.
    pub const HAS_IDLE_CORES_TRUE: u32 = 1 << 7;
    pub const PREV_HAS_IDLE_CORES_TRUE: u32 = 1 << 8;
    /// The debug-info probes' measured scan (format 7): `ScanMeasure::packed` in the
    /// `select.optional` column.
    pub const SCAN: u32 = 1 << 9;
    /// The bits whose value sits in the `select.optional` column.
    pub const OPTIONAL: u32 =
        WAKER_NR_RUNNING | NR_IDLE_SCAN | PREV_NR_IDLE_SCAN | IDLE_SCAN_NS | SCAN;
    pub const ALL: u32 = (1 << 10) - 1;
}

/// Whether column `c` holds u64 values (and so may be 8 bytes wide).
pub const fn is_wide(c: usize) -> bool {
    c == col::TS || c == col::SEL_DURATION
}

#[cfg(test)]
mod tests;
