//! A column's byte planes turned into values: straight loops over whole columns, so the
//! per-event pass reads each kind's fields as one row with one bounds check.
use super::{PLAIN, SLOTS};
use crate::event::MAX_WORDS;

/// One block of a chunk's columns as values, per kind of event, reused from block to block and
/// chunk to chunk (the [`crate::format::Reader`] keeps one). At most [`super::decode::BLOCK`]
/// events' rows; `flags` alone holds the whole chunk's.
#[derive(Default)]
pub struct Scratch {
    /// Absolute timestamps and CPUs of every event.
    pub(super) ts: Vec<u64>,
    pub(super) cpu: Vec<u32>,
    /// Each [`super::PLAIN`] layout's rows: its kinds' words (`Event::words`).
    pub(super) plain: [Vec<[u32; MAX_WORDS]>; PLAIN.len()],
    /// pid, prev_cpu, wake_flags, chosen_cpu, waker_pid, flags.
    pub(super) selects: Vec<[u32; 6]>,
    pub(super) durations: Vec<u64>,
    pub(super) optional: Vec<u32>,
    pub(super) flags: Vec<u32>,
    /// The block's positions by kind, and where each kind's start (`build::order`).
    pub(super) order: Vec<u16>,
    pub(super) kind_start: [usize; SLOTS + 1],
    /// Each event's row in its layout's columns, by position, when several kinds share it.
    pub(super) row: Vec<u16>,
    /// Positions of the select records in the output last decoded (`build::reclaim`).
    pub(super) select_at: Vec<u32>,
}

/// The byte planes of one column: `width` planes of `rows` bytes each.
#[derive(Clone, Copy)]
pub(super) struct Planes<'a> {
    pub bytes: &'a [u8],
    pub rows: usize,
}

impl Planes<'_> {
    /// Calls `set` with each of `dst` and the value of rows `start..start + len`, in one pass
    /// whatever the width (a loop per plane that ORs its byte in was twice the instructions:
    /// every value is loaded and stored once per plane). `dst` yields `len` items; a range
    /// beyond the column (which `decode` never asks for) yields fewer values, never a panic.
    #[inline(always)]
    pub fn widen<'d, T: 'd>(
        self,
        start: usize,
        len: usize,
        dst: impl Iterator<Item = &'d mut T>,
        mut set: impl FnMut(&mut T, u64),
    ) {
        let Some(rows) = std::num::NonZeroUsize::new(self.rows) else {
            return;
        };
        let width = self.bytes.len() / rows;
        let plane = |k: usize| {
            let at = k * rows.get() + start;
            self.bytes.get(at..at + len).unwrap_or_default()
        };
        match width {
            1 => dst.zip(plane(0)).for_each(|(d, &a)| set(d, a.into())),
            2 => {
                let (a, b) = (plane(0), plane(1));
                dst.zip(a.iter().zip(b))
                    .for_each(|(d, (&a, &b))| set(d, u16::from_le_bytes([a, b]).into()));
            }
            4 => {
                let (a, b, c, e) = (plane(0), plane(1), plane(2), plane(3));
                let abce = a.iter().zip(b).zip(c.iter().zip(e));
                dst.zip(abce).for_each(|(d, ((&a, &b), (&c, &e)))| {
                    set(d, u32::from_le_bytes([a, b, c, e]).into());
                });
            }
            // Timestamp gaps beyond 2^31 ns: a chunk that spans an idle second or two has its
            // whole gap column at 8 bytes (a generic loop here was a third of the 100 M
            // recording's decode time).
            8 => {
                let [a, b, c, e, f, g, h, i]: [&[u8]; 8] = std::array::from_fn(plane);
                let lo = a.iter().zip(b).zip(c.iter().zip(e));
                let hi = f.iter().zip(g).zip(h.iter().zip(i));
                dst.zip(lo.zip(hi)).for_each(
                    |(d, (((&a, &b), (&c, &e)), ((&f, &g), (&h, &i))))| {
                        set(d, u64::from_le_bytes([a, b, c, e, f, g, h, i]));
                    },
                );
            }
            // Other widths: not written by wakeviz, read for what a file says.
            w => {
                let all: Vec<&[u8]> = (0..w).map(plane).collect();
                for (j, d) in dst.enumerate() {
                    let v = all.iter().enumerate().fold(0u64, |v, (b, p)| {
                        v | u64::from(p.get(j).copied().unwrap_or(0)) << (8 * b)
                    });
                    set(d, v);
                }
            }
        }
    }
}

/// Field `f` of every row of `dst` from rows `start..` of `p`.
#[inline(always)]
pub(super) fn field<const N: usize>(dst: &mut [[u32; N]], f: usize, p: Planes<'_>, start: usize) {
    if f < N {
        p.widen(start, dst.len(), dst.iter_mut(), |d, v| d[f] = v as u32);
    }
}

/// Rows `start..start + len` of a u32 column into `dst`, resized to `len`.
pub(super) fn narrow(dst: &mut Vec<u32>, p: Planes<'_>, start: usize, len: usize) {
    resize(dst, len, 0);
    p.widen(start, len, dst.iter_mut(), |d, v| *d = v as u32);
}

/// Rows `start..start + len` of a u64 column into `dst`, resized to `len`.
pub(super) fn wide(dst: &mut Vec<u64>, p: Planes<'_>, start: usize, len: usize) {
    resize(dst, len, 0);
    p.widen(start, len, dst.iter_mut(), |d, v| *d = v);
}

/// `dst` with `rows` items, each about to be overwritten: only rows beyond its old length are
/// zeroed (clearing and refilling every chunk was a memset of 2 MiB per chunk).
pub(super) fn resize<T: Copy>(dst: &mut Vec<T>, rows: usize, zero: T) {
    dst.truncate(rows);
    dst.resize(rows, zero);
}
