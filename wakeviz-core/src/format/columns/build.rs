//! Building a block's events from its widened rows one kind at a time. Built in chunk order,
//! the event's kind decided a branch per event that the CPU often mispredicted (0.64 per event
//! on the 1 M synthetic recording, cachegrind); the same recording with each chunk's events
//! sorted by kind decoded 1.33x faster. So the kinds are counted into per-kind position lists
//! ([`order`]) and each kind's loop writes its events to their positions: 1.27 -> 0.48
//! mispredicts per event for the whole decode, +15 % events/s (CHANGELOG.md).
use super::{PLAIN, SHARED, SLOTS, UNSHARED, flag, widen::Scratch};
use crate::{
    event::{Event, Kind, MAX_WORDS, Migrate, ScanMeasure, Select},
    format::{
        codec::{Cursor, get_inputs},
        slots::boxed,
    },
};

/// What a slot holds before it is written: a plain event, so that writing over it frees nothing.
const FILLER: Event = Event::Migrate(Migrate {
    ts_ns: 0,
    cpu: 0,
    pid: 0,
    orig_cpu: 0,
    dest_cpu: 0,
});

/// Makes `out` `n` plain events. The select boxes of the chunk decoded into it last (at
/// `select_at`) go to `spare` first; a select anywhere else (a vector the caller changed) is
/// freed by the overwrite, which costs time, not correctness.
#[expect(
    clippy::vec_box,
    reason = "the boxes move into `Event::Select` as they are"
)]
pub(super) fn reclaim(
    out: &mut Vec<Event>,
    n: usize,
    spare: &mut Vec<Box<Select>>,
    select_at: &mut Vec<u32>,
) {
    for &p in select_at.iter() {
        if let Some(slot @ Event::Select(_)) = out.get_mut(p as usize)
            && let Event::Select(b) = std::mem::replace(slot, FILLER)
        {
            spare.push(b);
        }
    }
    select_at.clear();
    out.truncate(n);
    out.resize(n, FILLER);
}

/// Each kind tag's counter in `order`'s register: where it sits, and one more of it.
const ROW_SHIFT: [u32; SLOTS] = {
    let mut t = [0; SLOTS];
    let mut k = 0;
    while k < SLOTS {
        t[k] = 16 * SHARED[k] as u32;
        k += 1;
    }
    t
};
const ROW_STEP: [u64; SLOTS] = {
    let mut t = [0; SLOTS];
    let mut k = 0;
    while k < SLOTS {
        t[k] = 1 << ROW_SHIFT[k];
        k += 1;
    }
    t
};

/// Counts the block's kinds into `s.order` (positions of kind tag `k` at
/// `s.order[s.kind_start[k]..s.kind_start[k + 1]]`, ascending) and gives each plain event its
/// row in its layout's columns (kinds that share a layout share its rows, in chunk order).
/// `per_kind` counts `kinds`, whose values `locate` checked.
pub(super) fn order(s: &mut Scratch, kinds: &[u8], per_kind: &[usize; SLOTS]) {
    let mut start = [0usize; SLOTS + 1];
    for k in 1..=SLOTS {
        start[k] = start[k - 1] + per_kind[k - 1];
    }
    s.kind_start = start;
    super::widen::resize(&mut s.order, kinds.len(), 0);
    super::widen::resize(&mut s.row, kinds.len(), 0);
    let mut next = start;
    // Four 16-bit counters in a register: through memory, each event's count waited on the
    // store of the one before.
    let mut rows = 0u64;
    for (j, &k) in kinds.iter().enumerate() {
        let k = usize::from(k) & (SLOTS - 1);
        if let Some(o) = s.order.get_mut(next[k]) {
            *o = j as u16;
        }
        next[k] += 1;
        if let Some(r) = s.row.get_mut(j) {
            *r = (rows >> ROW_SHIFT[k]) as u16;
        }
        rows = rows.wrapping_add(ROW_STEP[k]);
    }
}

type PlainBuilder = fn(&Scratch, usize, &mut [Event], &[[u32; MAX_WORDS]]) -> Result<(), String>;

/// [`plain`] for each kind tag: called through this table with the tag a constant, each kind's
/// loop builds its variant directly (with the tag read at run time, every event went through
/// a jump table to its constructor).
const PLAIN_BUILDERS: [PlainBuilder; SLOTS] = [
    plain::<0>, plain::<1>, plain::<2>, plain::<3>, plain::<4>, plain::<5>, plain::<6>, plain::<7>,
];

/// Writes the block's events of plain kind tag `K` from their layout's `rows`: a kind alone in
/// its layout takes the rows in order, one that shares it the row `order` gave each event.
fn plain<const K: usize>(
    s: &Scratch,
    first: usize,
    out: &mut [Event],
    rows: &[[u32; MAX_WORDS]],
) -> Result<(), String> {
    let Some(k) = K.checked_sub(1).and_then(|i| Kind::ALL.get(i).copied()) else {
        return Ok(());
    };
    let lost = |j: usize| format!("event {}: no row left in its columns", first + j);
    let of = s
        .order
        .get(s.kind_start[K]..s.kind_start[K + 1])
        .unwrap_or_default();
    let mut put = |j: usize, words: Option<&[u32; MAX_WORDS]>| {
        let (Some(&ts_ns), Some(&cpu), Some(words)) = (s.ts.get(j), s.cpu.get(j), words) else {
            return Err(lost(j));
        };
        let e = Event::from_words(k, ts_ns, cpu, words).ok_or_else(|| lost(j))?;
        *out.get_mut(first + j).ok_or_else(|| lost(j))? = e;
        Ok(())
    };
    if SHARED[K] == UNSHARED {
        for (&j, words) in of.iter().zip(rows) {
            put(usize::from(j), Some(words))?;
        }
    } else {
        for &j in of {
            let j = usize::from(j);
            let row = s.row.get(j).map(|&r| usize::from(r));
            put(j, row.and_then(|r| rows.get(r)))?;
        }
    }
    Ok(())
}

/// Writes the block's events (event `first` on) into `out` (already [`reclaim`]ed), kind by
/// kind; select records record their positions in `select_at` for the next [`reclaim`]. Each
/// kind's rows were widened from the same counts as its positions (`decode::fill`), so the
/// loops pair them one to one.
#[expect(
    clippy::vec_box,
    reason = "the boxes move into `Event::Select` as they are"
)]
pub(super) fn build(
    s: &Scratch,
    first: usize,
    out: &mut [Event],
    spare: &mut Vec<Box<Select>>,
    inputs: &mut Cursor<'_>,
    select_at: &mut Vec<u32>,
) -> Result<(), String> {
    let lost = |j: usize| format!("event {}: no row left in its columns", first + j);
    let of = |k: usize| {
        let (a, b) = (s.kind_start[k], s.kind_start[k + 1]);
        s.order.get(a..b).unwrap_or_default()
    };
    let at = |j: usize| -> Option<(u64, u32)> { Some((*s.ts.get(j)?, *s.cpu.get(j)?)) };
    for (g, p) in PLAIN.iter().enumerate() {
        for &k in p.kinds {
            PLAIN_BUILDERS[usize::from(k.abi()) & (SLOTS - 1)](s, first, out, &s.plain[g])?;
        }
    }
    let mut opti = 0;
    let rows = s.selects.iter().zip(&s.durations);
    for (&j, (&[pid, prev_cpu, wake_flags, chosen_cpu, waker_pid, f], &duration)) in
        of(usize::from(Kind::Select.abi())).iter().zip(rows)
    {
        let j = usize::from(j);
        let (ts_ns, cpu) = at(j).ok_or_else(|| lost(j))?;
        let has = |bit: u32| f & bit != 0;
        let mut opt = |bit: u32| -> Result<Option<u32>, String> {
            if !has(bit) {
                return Ok(None);
            }
            opti += 1;
            s.optional
                .get(opti - 1)
                .copied()
                .map(Some)
                .ok_or_else(|| lost(j))
        };
        let waker_nr_running = opt(flag::WAKER_NR_RUNNING)?;
        let nr_idle_scan = opt(flag::NR_IDLE_SCAN)?;
        let prev_nr_idle_scan = opt(flag::PREV_NR_IDLE_SCAN)?;
        let idle_scan_ns = opt(flag::IDLE_SCAN_NS)?;
        let scan = match opt(flag::SCAN)? {
            Some(v) => Some(
                ScanMeasure::from_packed(v)
                    .ok_or_else(|| format!("event {}: bad scan path {v:#x}", first + j))?,
            ),
            None => None,
        };
        let inputs = has(flag::INPUTS)
            .then(|| get_inputs(inputs).map_err(|e| format!("event {}: {e}", first + j)))
            .transpose()?;
        let make = || Select {
            ts_ns,
            entry_ts_ns: ts_ns.wrapping_sub(duration),
            cpu,
            pid,
            prev_cpu,
            wake_flags,
            chosen_cpu,
            waker_pid,
            waker_nr_running,
            nr_idle_scan,
            has_idle_cores: has(flag::HAS_IDLE_CORES).then_some(has(flag::HAS_IDLE_CORES_TRUE)),
            prev_nr_idle_scan,
            prev_has_idle_cores: has(flag::PREV_HAS_IDLE_CORES)
                .then_some(has(flag::PREV_HAS_IDLE_CORES_TRUE)),
            idle_scan_ns,
            scan,
            inputs: inputs.unwrap_or_default(),
        };
        // Built in its box (built first and copied in, it cost 60 more instructions).
        let b = boxed(spare, make);
        let slot = out.get_mut(first + j).ok_or_else(|| lost(j))?;
        *slot = Event::Select(b);
        select_at.push((first + j) as u32);
    }
    Ok(())
}
