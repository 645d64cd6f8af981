//! Per-task records addressed by pid for the hottest per-event paths (the shadow state, its
//! parked decisions, the joiner): values live in one dense vector of slots, and a pid finds
//! its slot through a paged direct index instead of a hash table.
//!
//! A pid lookup on these paths happens a dozen times per placed wakeup; hashing, probing and
//! the two generations of [`crate::pidmap::PidMap`] made each cost about 40 instructions, the
//! direct index about 8. What `PidMap` guarantees against hostile input holds here too:
//! - memory: the index has one page of [`PAGE`] slot numbers per range of pids that ever held a
//!   live task (at most 16 MiB for every pid below 2^22, `PID_MAX_LIMIT`); pids above that, which
//!   Linux never hands out but a file can claim, go to a seeded hash map; and the slots obey the
//!   same budget as `PidMap` ([`PID_BUDGET`] entries in two generations, the older dropped when
//!   the newer fills, counted by each table's `evicted`);
//! - time: an index lookup is the same whatever the pids, so none can be chosen to collide.
//!
//! Touching an entry (every `&mut` access) moves it to the current generation, as `PidMap`'s
//! mutable accessors do; `get` does not.
use std::collections::HashMap;

use crate::pidmap::{GENERATION, PID_BUDGET, PidBuild};

/// Pids per index page (16 KiB of slot numbers).
pub const PAGE: usize = 4096;
/// Pids below this use the direct index (Linux's `PID_MAX_LIMIT`).
pub const DIRECT_PIDS: u32 = 1 << 22;

const _: () =
    assert!((DIRECT_PIDS as usize).is_multiple_of(PAGE) && PID_BUDGET < u32::MAX as usize);

/// A slot's generation when it is free.
const FREE: u32 = u32::MAX;

#[derive(Clone, Debug)]
struct Slot<V> {
    pid: u32,
    /// The generation that last touched it, or [`FREE`].
    gen_: u32,
    value: V,
}

/// pid -> `V`, stored densely; see the module docs.
#[derive(Clone, Debug)]
pub struct PidSlab<V> {
    /// Per page of pids: slot number + 1 of each pid (0: none).
    pages: Vec<Option<Box<[u32; PAGE]>>>,
    far: HashMap<u32, u32, PidBuild>,
    slots: Vec<Slot<V>>,
    free: Vec<u32>,
    /// The current generation, and how many live slots it and the previous one hold.
    gen_: u32,
    cur: usize,
    old: usize,
    evicted: u64,
}

impl<V> Default for PidSlab<V> {
    fn default() -> Self {
        Self {
            pages: Vec::new(),
            far: HashMap::default(),
            slots: Vec::new(),
            free: Vec::new(),
            gen_: 0,
            cur: 0,
            old: 0,
            evicted: 0,
        }
    }
}

impl<V: Default> PidSlab<V> {
    /// `pid`'s slot, if it has one (does not touch it).
    #[inline]
    pub fn slot(&self, pid: u32) -> Option<u32> {
        if pid < DIRECT_PIDS {
            let page = self.pages.get(pid as usize / PAGE)?.as_ref()?;
            page[pid as usize % PAGE].checked_sub(1)
        } else {
            self.far.get(&pid).copied()
        }
    }

    #[inline]
    pub fn get(&self, pid: u32) -> Option<&V> {
        let s = self.slot(pid)?;
        Some(&self.slots[s as usize].value)
    }

    /// `pid`'s value, touched (moved to the current generation).
    #[inline]
    pub fn get_mut(&mut self, pid: u32) -> Option<&mut V> {
        let s = self.slot(pid)?;
        self.touch(s);
        Some(&mut self.slots[s as usize].value)
    }

    /// `pid`'s slot, touched; a new one holding `V::default()` if it had none.
    #[inline]
    pub fn slot_or_default(&mut self, pid: u32) -> u32 {
        match self.slot(pid) {
            Some(s) => {
                self.touch(s);
                s
            }
            None => self.insert_new(pid),
        }
    }

    /// `pid`'s value, touched; `V::default()` inserted if it had none (`entry().or_default()`).
    #[inline]
    pub fn get_or_default(&mut self, pid: u32) -> &mut V {
        let s = self.slot_or_default(pid);
        &mut self.slots[s as usize].value
    }

    /// The value in slot `s` (a slot number this map handed out).
    #[inline]
    pub fn at(&self, s: u32) -> &V {
        &self.slots[s as usize].value
    }

    #[inline]
    pub fn at_mut(&mut self, s: u32) -> &mut V {
        &mut self.slots[s as usize].value
    }

    /// Drops `pid`'s entry and returns the slot it had: its value stays readable through
    /// [`Self::at`] until the slot is handed out again.
    pub fn remove(&mut self, pid: u32) -> Option<u32> {
        let s = self.slot(pid)?;
        self.unlink(s);
        Some(s)
    }

    /// Keeps the entries for which `keep` holds.
    pub fn retain(&mut self, mut keep: impl FnMut(&V) -> bool) {
        for s in 0..self.slots.len() as u32 {
            let slot = &self.slots[s as usize];
            if slot.gen_ != FREE && !keep(&slot.value) {
                self.unlink(s);
            }
        }
    }

    /// Every value held, in slot order.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.slots
            .iter()
            .filter(|s| s.gen_ != FREE)
            .map(|s| &s.value)
    }

    pub const fn len(&self) -> usize {
        self.cur + self.old
    }

    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entries this map dropped to stay within the budget.
    pub const fn evicted(&self) -> u64 {
        self.evicted
    }

    /// Moves slot `s` to the current generation, making room as `PidMap` does: an entry of
    /// the old generation leaves it before the current one (if full) becomes the old one.
    #[inline]
    fn touch(&mut self, s: u32) {
        if self.slots[s as usize].gen_ == self.gen_ {
            return;
        }
        self.old -= 1;
        if self.cur >= GENERATION {
            self.rotate(s);
        }
        self.slots[s as usize].gen_ = self.gen_;
        self.cur += 1;
    }

    #[cold]
    #[inline(never)]
    fn insert_new(&mut self, pid: u32) -> u32 {
        if self.cur >= GENERATION {
            self.rotate(FREE);
        }
        let slot = Slot {
            pid,
            gen_: self.gen_,
            value: V::default(),
        };
        let s = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = slot;
                s
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as u32
            }
        };
        self.cur += 1;
        if pid < DIRECT_PIDS {
            let i = pid as usize / PAGE;
            if self.pages.len() <= i {
                self.pages.resize_with(i + 1, || None);
            }
            self.pages[i].get_or_insert_with(|| Box::new([0; PAGE]))[pid as usize % PAGE] = s + 1;
        } else {
            self.far.insert(pid, s);
        }
        s
    }

    /// Frees slot `s` (live) and forgets its pid.
    fn unlink(&mut self, s: u32) {
        let slot = &mut self.slots[s as usize];
        if slot.gen_ == self.gen_ {
            self.cur -= 1;
        } else {
            self.old -= 1;
        }
        slot.gen_ = FREE;
        let pid = slot.pid;
        if pid < DIRECT_PIDS {
            if let Some(Some(page)) = self.pages.get_mut(pid as usize / PAGE) {
                page[pid as usize % PAGE] = 0;
            }
        } else {
            self.far.remove(&pid);
        }
        self.free.push(s);
    }

    /// Drops the old generation (all of it but slot `keep`, which is being touched) and makes
    /// the current one old.
    #[cold]
    fn rotate(&mut self, keep: u32) {
        let mut n = 0u64;
        for s in 0..self.slots.len() as u32 {
            let g = self.slots[s as usize].gen_;
            if g != FREE && g != self.gen_ && s != keep {
                self.unlink(s);
                n += 1;
            }
        }
        self.evicted += n;
        // What is left of the old generation is `keep`, about to join the new current one.
        self.gen_ = self.gen_.wrapping_add(1) % FREE;
        self.old = self.cur;
        self.cur = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pidmap::PidMap;

    /// The same operations on a `PidMap` and a `PidSlab` keep the same entries, evict the same
    /// number of them, and stay within the budget, with pids far apart, near and above the
    /// direct range.
    #[test]
    fn keeps_and_evicts_like_a_pid_map() {
        let mut m: PidMap<u64> = PidMap::default();
        let mut s: PidSlab<u64> = PidSlab::default();
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let n = PID_BUDGET * 3;
        for i in 0..n as u64 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let pid = match rng % 4 {
                0 => (rng >> 32) as u32,
                1 => DIRECT_PIDS - 1 - (rng >> 40) as u32 % 1000,
                2 => 7,
                _ => (i as u32).wrapping_mul(4096),
            };
            match (rng >> 8) % 8 {
                0 => assert_eq!(m.get(&pid), s.get(pid)),
                1 => assert_eq!(m.remove(&pid).is_some(), s.remove(pid).is_some()),
                // (`PidMap::get_mut` of an absent pid may rotate; only present ones compare.)
                2 if m.contains_key(&pid) => {
                    assert_eq!(m.get_mut(&pid).copied(), s.get_mut(pid).copied());
                }
                _ => {
                    *m.entry(pid).or_default() += i;
                    *s.get_or_default(pid) += i;
                }
            }
            assert_eq!(m.len(), s.len());
            assert!(s.len() <= PID_BUDGET);
        }
        assert_eq!(m.evicted(), s.evicted());
        assert!(s.evicted() > 0);
        for (k, v) in m.iter() {
            assert_eq!(s.get(*k), Some(v), "pid {k}");
        }
        let mut seen = 0;
        s.retain(|_| {
            seen += 1;
            true
        });
        assert_eq!(seen, m.len());
    }

    #[test]
    fn a_removed_slot_keeps_its_value_until_reused() {
        let mut s: PidSlab<u32> = PidSlab::default();
        *s.get_or_default(5) = 50;
        let slot = s.remove(5).expect("present");
        assert_eq!((s.get(5), *s.at(slot)), (None, 50));
        assert_eq!(s.slot_or_default(9), slot);
        assert_eq!(*s.at(slot), 0);
        s.retain(|&v| v != 0);
        assert!(s.is_empty());
    }
}
