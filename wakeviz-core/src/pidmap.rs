//! Pid-keyed maps for the per-event paths (joiner, analyses, shadow state, task names).
//!
//! A recording is input someone handed over, and every pid in it is a claim: a file of
//! millions of distinct pids must not grow these maps without end, and pids chosen to collide
//! must not turn lookups linear. Hence, in this one place:
//! - a per-process random seed ([`foldhash`]'s `RandomState`, about as fast as the fixed
//!   multiplicative hash it replaced, which pids chosen as multiples of a power of two
//!   degraded 15x);
//! - a budget of [`PID_BUDGET`] entries per map. A Linux pid is below 2^22 (PID_MAX_LIMIT), but
//!   live tasks are far fewer; what grows is tasks that exited long ago. When a map is full, the
//!   entries not touched since the previous time it filled are dropped (two generations: a cheap
//!   approximation of least-recently-used), counted per map and process-wide, so a report can
//!   say its per-task state was cut.
use std::collections::{HashMap, hash_map::Entry};

/// Hasher of every pid map: seeded once per process at random.
pub type PidBuild = foldhash::fast::RandomState;

/// Most entries one map holds. Two generations of at most half of it, each sized so that
/// hashbrown's table (7/8 load, power-of-two buckets) is exactly 2^18 buckets: about 16 MiB per
/// map for a 56-byte value at the limit, whatever the file claims.
pub const PID_BUDGET: usize = 2 * GENERATION;
pub(crate) const GENERATION: usize = (1 << 18) / 8 * 7;

/// `HashMap<u32, V>` with a random seed and a budget of [`PID_BUDGET`] entries; the methods
/// used on the hot paths keep `HashMap`'s names and meaning (`entry` returns std's [`Entry`]).
/// A key lives in at most one generation; touching an old entry moves it to the current one.
#[derive(Clone, Debug)]
pub struct PidMap<V> {
    cur: HashMap<u32, V, PidBuild>,
    old: HashMap<u32, V, PidBuild>,
    evicted: u64,
}

impl<V> Default for PidMap<V> {
    fn default() -> Self {
        Self {
            cur: HashMap::default(),
            old: HashMap::default(),
            evicted: 0,
        }
    }
}

impl<V> PidMap<V> {
    /// Entries this map dropped to stay within the budget.
    pub const fn evicted(&self) -> u64 {
        self.evicted
    }

    /// Drops the old generation (each entry handed to `dropped`) and makes the current one
    /// old. The allocation is reused.
    #[cold]
    fn rotate(&mut self, mut dropped: impl FnMut(u32, V)) {
        std::mem::swap(&mut self.cur, &mut self.old);
        let n = self.cur.len() as u64;
        self.evicted += n;
        for (k, v) in self.cur.drain() {
            dropped(k, v);
        }
    }

    /// Makes room for `k` in the current generation, moving it there if it is old.
    #[inline]
    fn admit(&mut self, k: u32, dropped: impl FnMut(u32, V)) {
        if !self.old.is_empty()
            && !self.cur.contains_key(&k)
            && let Some(v) = self.old.remove(&k)
        {
            if self.cur.len() >= GENERATION {
                self.rotate(dropped);
            }
            self.cur.insert(k, v);
            return;
        }
        if self.cur.len() >= GENERATION && !self.cur.contains_key(&k) {
            self.rotate(dropped);
        }
    }

    /// [`PidMap::insert`] for values that own something outside the map (a slot in a pool):
    /// entries dropped to stay within the budget are handed to `dropped` instead of vanishing.
    #[inline]
    pub fn insert_evicting(&mut self, k: u32, v: V, dropped: impl FnMut(u32, V)) -> Option<V> {
        self.admit(k, dropped);
        self.cur.insert(k, v)
    }

    /// `k`'s entry in one lookup when admitting it can neither move nor drop anything (no old
    /// generation, room in the current one), as on every map below half its budget; `None`
    /// otherwise, and the caller takes the general path.
    #[inline]
    pub fn entry_if_no_eviction(&mut self, k: u32) -> Option<Entry<'_, u32, V>> {
        (self.old.is_empty() && self.cur.len() < GENERATION).then(|| self.cur.entry(k))
    }

    #[inline]
    pub fn entry(&mut self, k: u32) -> Entry<'_, u32, V> {
        self.admit(k, |_, _| {});
        self.cur.entry(k)
    }

    #[inline]
    pub fn insert(&mut self, k: u32, v: V) -> Option<V> {
        self.admit(k, |_, _| {});
        self.cur.insert(k, v)
    }

    #[inline]
    pub fn get(&self, k: &u32) -> Option<&V> {
        match self.cur.get(k) {
            Some(v) => Some(v),
            None if self.old.is_empty() => None,
            None => self.old.get(k),
        }
    }

    #[inline]
    pub fn get_mut(&mut self, k: &u32) -> Option<&mut V> {
        if !self.old.is_empty() {
            self.admit(*k, |_, _| {});
        }
        self.cur.get_mut(k)
    }

    #[inline]
    pub fn contains_key(&self, k: &u32) -> bool {
        self.get(k).is_some()
    }

    #[inline]
    pub fn remove(&mut self, k: &u32) -> Option<V> {
        match self.cur.remove(k) {
            Some(v) => Some(v),
            None if self.old.is_empty() => None,
            None => self.old.remove(k),
        }
    }

    pub fn retain(&mut self, mut f: impl FnMut(&u32, &mut V) -> bool) {
        self.cur.retain(&mut f);
        self.old.retain(f);
    }

    pub fn len(&self) -> usize {
        self.cur.len() + self.old.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cur.is_empty() && self.old.is_empty()
    }

    pub fn clear(&mut self) {
        self.cur.clear();
        self.old.clear();
    }

    pub fn iter(&self) -> impl Iterator<Item = (&u32, &V)> {
        self.cur.iter().chain(self.old.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stays_within_budget_and_keeps_recent_entries() {
        let mut m = PidMap::default();
        let n = (PID_BUDGET * 3) as u32;
        for pid in 0..n {
            m.insert(pid, pid);
            // A long-lived task touched all along survives every rotation.
            *m.entry(u32::MAX).or_default() += 1;
            assert!(m.len() <= PID_BUDGET);
        }
        assert_eq!(m.get(&u32::MAX), Some(&n));
        assert_eq!(m.get(&(n - 1)), Some(&(n - 1)));
        assert_eq!(m.get(&0), None);
        assert!(m.evicted() >= u64::from(n) - PID_BUDGET as u64);
    }

    #[test]
    fn evicted_entries_are_handed_back() {
        let mut m = PidMap::default();
        let mut back = 0u64;
        for pid in 0..(PID_BUDGET * 2) as u32 {
            m.insert_evicting(pid, 1u64, |_, v| back += v);
        }
        assert_eq!(back, m.evicted());
        assert!(back > 0);
        assert_eq!(back + m.len() as u64, (PID_BUDGET * 2) as u64);
    }

    #[test]
    fn behaves_like_a_map_below_the_budget() {
        let mut m = PidMap::default();
        assert_eq!(m.insert(7, 1), None);
        assert_eq!(m.insert(7, 2), Some(1));
        *m.entry(8).or_default() += 5;
        assert_eq!(m.get_mut(&8).copied(), Some(5));
        m.retain(|k, _| *k == 8);
        assert_eq!((m.len(), m.get(&7)), (1, None));
        assert_eq!(m.remove(&8), Some(5));
        assert!(m.is_empty());
        assert_eq!(m.evicted(), 0);
    }
}
