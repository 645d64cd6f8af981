//! Compact event encoding inside an `EVENTS` chunk (before zstd).
//!
//! Each event: `kind` (1 byte, the ABI tag), then varints: `cpu`, zigzag(ts_ns - previous ts_ns),
//! and the kind's fields (signed ones zigzagged). Timestamps are deltas because the ring buffer
//! is nearly time-ordered; they may go slightly backwards across CPUs, hence zigzag.
//! `select_task_rq_fair` stores its duration instead of its entry time.
use super::slots::{put, put_select};
use crate::event::{Event, Kind, MAX_WORDS, ScanMeasure, Select, SelectInputs, WakeeFlips};

#[inline]
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[inline]
pub(super) const fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline]
pub(super) const fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Cursor over an encoded payload; every read is bounds-checked (input may be hostile).
pub struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub const fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    pub const fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    #[inline]
    pub fn byte(&mut self) -> Result<u8, String> {
        match self.buf.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => Err(self.ends()),
        }
    }

    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        let end = end.ok_or_else(|| format!("payload ends inside a {n}-byte field"))?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    /// LEB128. Inlined with a one-byte fast path and the error text built out of line: this is
    /// the innermost loop of replay (about 8 varints per event), and a call plus a `String`-sized
    /// `Result` per varint halved decoding speed (measured with `cargo xtask bench --only replay`).
    #[inline(always)]
    pub fn varint(&mut self) -> Result<u64, String> {
        let buf = self.buf;
        let mut pos = self.pos;
        let Some(&b) = buf.get(pos) else {
            return Err(self.ends());
        };
        pos += 1;
        if b < 0x80 {
            self.pos = pos;
            return Ok(u64::from(b));
        }
        let mut v = u64::from(b & 0x7f);
        let mut shift = 7;
        while shift < 64 {
            let Some(&b) = buf.get(pos) else {
                self.pos = pos;
                return Err(self.ends());
            };
            pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                self.pos = pos;
                return Ok(v);
            }
            shift += 7;
        }
        self.pos = pos;
        Err(self.overlong())
    }

    #[cold]
    #[inline(never)]
    fn ends(&self) -> String {
        format!("payload ends at byte {}", self.pos)
    }

    #[cold]
    #[inline(never)]
    fn overlong(&self) -> String {
        format!("overlong varint at byte {}", self.pos)
    }

    #[cold]
    #[inline(never)]
    fn out_of_range(&self) -> String {
        format!("value out of range at byte {}", self.pos)
    }

    #[inline(always)]
    fn u32(&mut self) -> Result<u32, String> {
        let v = self.varint()?;
        u32::try_from(v).map_err(|_| self.out_of_range())
    }
}

/// Stateful encoder for one chunk.
#[derive(Default)]
pub struct Encoder {
    pub buf: Vec<u8>,
    pub count: u32,
    prev_ts: u64,
}

impl Encoder {
    pub fn clear(&mut self) {
        self.buf.clear();
        self.count = 0;
        self.prev_ts = 0;
    }

    pub fn push(&mut self, e: &Event) {
        let out = &mut self.buf;
        out.push(e.kind().abi() as u8);
        put_varint(out, u64::from(e.cpu()));
        let ts = e.ts_ns();
        put_varint(out, zigzag(ts.wrapping_sub(self.prev_ts) as i64));
        self.prev_ts = ts;
        match e {
            Event::Select(s) => {
                put_varint(out, u64::from(s.pid));
                put_varint(out, s.ts_ns.wrapping_sub(s.entry_ts_ns));
                put_varint(out, u64::from(s.prev_cpu));
                put_varint(out, u64::from(s.wake_flags));
                put_varint(out, u64::from(s.chosen_cpu));
                put_varint(out, u64::from(s.waker_pid));
                let present = u8::from(s.waker_nr_running.is_some())
                    | u8::from(s.nr_idle_scan.is_some()) << 1
                    | u8::from(s.has_idle_cores.is_some()) << 2
                    | u8::from(s.prev_nr_idle_scan.is_some()) << 3
                    | u8::from(s.prev_has_idle_cores.is_some()) << 4
                    | u8::from(s.idle_scan_ns.is_some()) << 5
                    | u8::from(s.inputs != SelectInputs::default()) << 6
                    | u8::from(s.scan.is_some()) << 7;
                out.push(present);
                if let Some(v) = s.waker_nr_running {
                    put_varint(out, u64::from(v));
                }
                if let Some(v) = s.nr_idle_scan {
                    put_varint(out, u64::from(v));
                }
                if let Some(v) = s.has_idle_cores {
                    out.push(u8::from(v));
                }
                if let Some(v) = s.prev_nr_idle_scan {
                    put_varint(out, u64::from(v));
                }
                if let Some(v) = s.prev_has_idle_cores {
                    out.push(u8::from(v));
                }
                if let Some(v) = s.idle_scan_ns {
                    put_varint(out, u64::from(v));
                }
                if s.inputs != SelectInputs::default() {
                    put_inputs(out, &s.inputs);
                }
                if let Some(m) = s.scan {
                    put_varint(out, u64::from(m.packed()));
                }
            }
            plain => {
                let words = plain.words().unwrap_or_default();
                for &w in words.iter().take(plain.kind().words()) {
                    put_varint(out, u64::from(w));
                }
            }
        }
        self.count += 1;
    }
}

/// The kinds format 1 knew (the first ones of [`Kind::ALL`]): a later kind in a row payload is
/// damage.
pub(crate) const ROW_KINDS: usize = 6;

/// Smallest encoded event: a migrate is a kind byte and five one-byte varints (cpu, ts delta,
/// pid, orig, dest). A chunk's `count` claiming more events than its bytes can hold is refused.
pub const MIN_EVENT_BYTES: usize = 6;

/// Decodes `count` events from a raw (decompressed) payload into `out`, replacing what it held.
///
/// `out` may hold an earlier chunk's events (see [`super::Reader::recycle`]): each is overwritten
/// in place, and a select record's box is reused, by a select record in the same slot or
/// through `spare`. A fresh allocation and free per select record cost more than the smaller
/// `Event` saved, and a separate pass to collect the boxes was 8 % of decoding (the old slot
/// is in cache here, as it is about to be written).
pub fn decode(
    payload: &[u8],
    count: u32,
    out: &mut Vec<Event>,
    spare: &mut Vec<Box<Select>>,
) -> Result<(), String> {
    let mut c = Cursor::new(payload);
    let mut prev_ts = 0u64;
    // `count` is a claim: reserve no more than the payload can hold.
    let want = (count as usize).min(payload.len() / MIN_EVENT_BYTES);
    out.reserve(want.saturating_sub(out.len()));
    for i in 0..count {
        let i_ = i as usize;
        let tag = c.byte()?;
        let kind = Kind::from_abi(u16::from(tag))
            .filter(|k| k.index() < ROW_KINDS)
            .ok_or_else(|| format!("event {i}: unknown kind {tag}"))?;
        let cpu = c.u32()?;
        let ts_ns = prev_ts.wrapping_add(unzigzag(c.varint()?) as u64);
        prev_ts = ts_ns;
        // Each arm builds its own variant; `put` stores it over the recycled slot, keeping a
        // select box that slot held, or appends it.
        match kind {
            Kind::Select => {
                let pid = c.u32()?;
                let dur = c.varint()?;
                let prev_cpu = c.u32()?;
                let wake_flags = c.u32()?;
                let chosen_cpu = c.u32()?;
                let waker_pid = c.u32()?;
                let present = c.byte()?;
                // Optional inputs, each present when its bit is set (see `Encoder::push`).
                let has = |bit: u8| present & bit != 0;
                let waker_nr_running = has(1).then(|| c.u32()).transpose()?;
                let nr_idle_scan = has(2).then(|| c.u32()).transpose()?;
                let has_idle_cores = has(4).then(|| c.byte().map(|b| b != 0)).transpose()?;
                let prev_nr_idle_scan = has(8).then(|| c.u32()).transpose()?;
                let prev_has_idle_cores = has(16).then(|| c.byte().map(|b| b != 0)).transpose()?;
                let idle_scan_ns = has(32).then(|| c.u32()).transpose()?;
                // Bit 6 (files written from ABI 2 on): the select inputs block.
                let inputs = if has(64) {
                    get_inputs(&mut c).map_err(|e| format!("event {i}: {e}"))?
                } else {
                    SelectInputs::default()
                };
                // Bit 7: the debug-info probes' measured scan.
                let scan = if has(128) {
                    let v = c.u32()?;
                    Some(
                        ScanMeasure::from_packed(v)
                            .ok_or_else(|| format!("event {i}: bad scan path {v:#x}"))?,
                    )
                } else {
                    None
                };
                let sel = Select {
                    ts_ns,
                    entry_ts_ns: ts_ns.wrapping_sub(dur),
                    cpu,
                    pid,
                    prev_cpu,
                    wake_flags,
                    chosen_cpu,
                    waker_pid,
                    waker_nr_running,
                    nr_idle_scan,
                    has_idle_cores,
                    prev_nr_idle_scan,
                    prev_has_idle_cores,
                    idle_scan_ns,
                    scan,
                    inputs,
                };
                put_select(out, i_, sel, spare);
            }
            plain => {
                let mut w = [0; MAX_WORDS];
                for v in w.iter_mut().take(plain.words()) {
                    *v = c.u32()?;
                }
                let e = Event::from_words(plain, ts_ns, cpu, &w).ok_or("not a plain kind")?;
                put(out, i_, e, spare);
            }
        }
    }
    if !c.is_empty() {
        return Err("trailing bytes after the last event".into());
    }
    out.truncate(count as usize);
    Ok(())
}

/// The ABI-2 select inputs: a varint of presence bits (the order below), then each present
/// value. Files from before have no block (presence bit 6 of the select record clear).
pub(super) fn put_inputs(out: &mut Vec<u8>, i: &SelectInputs) {
    let vals = [
        i.waker_load,
        i.prev_load,
        i.waker_capacity,
        i.prev_capacity,
        i.task_h_load,
        i.waker_h_load,
        i.waker_h_nr_delayed,
        i.waker_kthread.map(u32::from),
        i.waker_nr_cpus_allowed,
        i.task_nr_cpus_allowed,
    ];
    let mut bits = 0u64;
    for (k, v) in vals.iter().enumerate() {
        bits |= u64::from(v.is_some()) << k;
    }
    bits |= u64::from(i.task_in_group) << 10 | u64::from(i.allowed.is_some()) << 11;
    bits |= u64::from(i.flips.is_some()) << 12;
    put_varint(out, bits);
    for v in vals.into_iter().flatten() {
        put_varint(out, u64::from(v));
    }
    for w in i.allowed.iter().flatten() {
        put_varint(out, *w);
    }
    // Bit 12 (files from ABI 3 on): the record_wakee() state. The two jiffies go as the stamp
    // and its age, small numbers, rather than two full 32-bit values.
    if let Some(f) = i.flips {
        put_varint(out, u64::from(f.waker));
        put_varint(out, u64::from(f.wakee));
        put_varint(out, u64::from(f.jiffies));
        put_varint(
            out,
            u64::from(f.jiffies.wrapping_sub(f.waker_decay_jiffies)),
        );
        out.push(u8::from(f.waker_last_wakee_is_task));
    }
}

pub(super) fn get_inputs(c: &mut Cursor<'_>) -> Result<SelectInputs, String> {
    let bits = c.varint()?;
    if bits >> 13 != 0 {
        return Err(format!("bad select-input bits {bits:#x}"));
    }
    let mut vals = [None; 10];
    for (k, v) in vals.iter_mut().enumerate() {
        if bits & (1 << k) != 0 {
            *v = Some(c.u32()?);
        }
    }
    let allowed = if bits & (1 << 11) != 0 {
        let mut m = [0u64; 4];
        for w in &mut m {
            *w = c.varint()?;
        }
        Some(m)
    } else {
        None
    };
    let flips = if bits & (1 << 12) != 0 {
        let (waker, wakee, jiffies, age) = (c.u32()?, c.u32()?, c.u32()?, c.u32()?);
        let last = c.byte()?;
        if last > 1 {
            return Err(format!("bad last_wakee byte {last}"));
        }
        Some(WakeeFlips {
            waker,
            wakee,
            waker_decay_jiffies: jiffies.wrapping_sub(age),
            jiffies,
            waker_last_wakee_is_task: last == 1,
        })
    } else {
        None
    };
    Ok(SelectInputs {
        waker_load: vals[0],
        prev_load: vals[1],
        waker_capacity: vals[2],
        prev_capacity: vals[3],
        task_h_load: vals[4],
        waker_h_load: vals[5],
        waker_h_nr_delayed: vals[6],
        waker_kthread: vals[7].map(|v| v != 0),
        waker_nr_cpus_allowed: vals[8],
        task_nr_cpus_allowed: vals[9],
        task_in_group: bits & (1 << 10) != 0,
        allowed,
        flips,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Migrate, Switch, Wake};

    /// `n` events cycling through every kind, the select records at positions set by `phase`
    /// and some with their inputs block, so two sequences put selects in different slots.
    fn events(n: u32, phase: u32) -> Vec<Event> {
        (0..n)
            .map(|i| {
                let ts_ns = 1_000 + u64::from(i) * 700;
                let (cpu, pid) = (i % 7, 100 + i);
                let w = Wake {
                    ts_ns,
                    cpu,
                    pid,
                    target_cpu: i % 5,
                    waker_pid: pid + 1,
                    prio: 120,
                };
                match (i + phase) % 5 {
                    0 => Event::Select(Box::new(Select {
                        ts_ns,
                        entry_ts_ns: ts_ns - 300,
                        cpu,
                        pid,
                        prev_cpu: 1,
                        wake_flags: 0x18,
                        chosen_cpu: i % 3,
                        waker_pid: pid + 1,
                        waker_nr_running: Some(i % 4),
                        nr_idle_scan: None,
                        has_idle_cores: Some(i % 2 == 0),
                        prev_nr_idle_scan: None,
                        prev_has_idle_cores: None,
                        idle_scan_ns: None,
                        scan: None,
                        inputs: SelectInputs {
                            waker_load: (i % 3 == 0).then_some(i),
                            allowed: (i % 6 == 0).then_some([1, 2, 3, 4]),
                            ..SelectInputs::default()
                        },
                    })),
                    1 => Event::Waking(w),
                    2 => Event::Wakeup(w),
                    3 => Event::Switch(Switch {
                        ts_ns,
                        cpu,
                        prev_pid: pid,
                        next_pid: pid + 2,
                        prev_state: i % 2,
                        prev_prio: 120,
                        next_prio: 100,
                    }),
                    _ => Event::Migrate(Migrate {
                        ts_ns,
                        cpu,
                        pid,
                        orig_cpu: 0,
                        dest_cpu: 2,
                    }),
                }
            })
            .collect()
    }

    fn encode(evs: &[Event]) -> Vec<u8> {
        let mut enc = Encoder::default();
        evs.iter().for_each(|e| enc.push(e));
        enc.buf
    }

    /// Decoding over a recycled chunk (longer, shorter, selects in other slots) gives exactly
    /// what a fresh decode gives.
    #[test]
    fn decoding_over_a_recycled_chunk_is_a_fresh_decode() {
        let mut out = Vec::new();
        let mut spare = Vec::new();
        for (n, phase) in [(40, 0), (23, 2), (61, 1), (5, 0), (0, 0), (33, 4)] {
            let want = events(n, phase);
            decode(&encode(&want), n, &mut out, &mut spare).unwrap();
            assert_eq!(out, want, "{n} events, phase {phase}");
            let mut fresh = Vec::new();
            decode(&encode(&want), n, &mut fresh, &mut Vec::new()).unwrap();
            assert_eq!(fresh, want);
        }
    }

    /// The point of recycling: a chunk with as many select records as the one before gets
    /// them from the old chunk's boxes, none allocated anew.
    #[test]
    fn select_boxes_are_reused() {
        let boxes = |v: &[Event]| -> Vec<*const Select> {
            v.iter()
                .filter_map(|e| match e {
                    Event::Select(b) => Some(&raw const **b),
                    _ => None,
                })
                .collect()
        };
        let (mut out, mut spare) = (Vec::new(), Vec::new());
        decode(&encode(&events(40, 0)), 40, &mut out, &mut spare).unwrap();
        let mut before = boxes(&out);
        // Shifted by one: every select record lands in a slot that held another event, and the
        // eight old select slots are overwritten by seven records: one box is left over.
        decode(&encode(&events(36, 1)), 36, &mut out, &mut spare).unwrap();
        let mut after = boxes(&out);
        assert_eq!((before.len(), after.len(), spare.len()), (8, 7, 1));
        after.extend(spare.iter().map(|b| &raw const **b));
        before.sort_unstable();
        after.sort_unstable();
        assert_eq!(before, after);
    }
}
