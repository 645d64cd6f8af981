//! The events a merge holds until the watermark passes them, in buckets of 1 ms of stamp time.
//!
//! A binary heap of every held event cost a push and a pop per event, each a walk of
//! `log2(held)` cache-missing levels: 1.3 M events/s on one thread for the 256-CPU synthetic
//! stream (`cargo xtask bench --only ingest`), where that machine makes 8.5 M. Buckets cost an
//! append per event and one sort per bucket when it is released (the events of one ring
//! arrive almost in order, which the standard library's sort runs through in linear time).
//! Within a bucket and across buckets the release is in stamp order, equal stamps in arrival
//! order (the sort is stable).
use std::collections::VecDeque;

use crate::event::Event;

const BUCKET_NS: u64 = 1_000_000;
/// Buckets kept ahead of the first one (65 s): an event stamped further ahead (a clock gone
/// wrong) waits in `far` until the buckets catch up, rather than allocating buckets up to it.
const MAX_BUCKETS: u64 = 1 << 16;

fn bucket_of(ts_ns: u64) -> u64 {
    ts_ns / BUCKET_NS
}

#[derive(Default)]
pub(super) struct Held {
    buckets: VecDeque<Vec<Event>>,
    /// Bucket number (`stamp / BUCKET_NS`) of `buckets[0]`. An event stamped before it gets
    /// buckets opened down to its own, or (past the span bound) goes into the first bucket,
    /// which is released first either way.
    first: u64,
    far: Vec<Event>,
    len: usize,
    /// The first bucket is in stamp order (it was sorted for a partial release and nothing
    /// was added since): the watermark usually sits 20 ms behind the newest events, so later
    /// partial releases of the same bucket then need no sort.
    front_sorted: bool,
    /// Emptied buckets, reused.
    spare: Vec<Vec<Event>>,
}

impl Held {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn insert(&mut self, ev: Event) {
        let b = bucket_of(ev.ts_ns());
        if self.len == 0 {
            self.first = b;
        }
        self.len += 1;
        self.file(b, ev);
    }

    fn file(&mut self, b: u64, ev: Event) {
        // Stamped before the first bucket: open buckets down to it while the span stays in
        // bounds (releases go bucket by bucket, so an earlier bucket is still released first).
        if b < self.first {
            let last = self.first + self.buckets.len() as u64;
            if last - b < MAX_BUCKETS {
                while self.first > b {
                    self.buckets
                        .push_front(self.spare.pop().unwrap_or_default());
                    self.first -= 1;
                    self.front_sorted = false;
                }
            }
        }
        let slot = b.saturating_sub(self.first);
        if slot >= MAX_BUCKETS {
            self.far.push(ev);
            return;
        }
        let slot = slot as usize;
        if slot == 0 {
            self.front_sorted = false;
        }
        while self.buckets.len() <= slot {
            self.buckets.push_back(self.spare.pop().unwrap_or_default());
        }
        self.buckets[slot].push(ev);
    }

    /// Moves the far events that now fall within reach into buckets; with no bucket left,
    /// first moves up to the earliest of them.
    fn refile(&mut self) {
        if self.far.is_empty() {
            return;
        }
        if self.buckets.is_empty()
            && let Some(b) = self.far.iter().map(|e| bucket_of(e.ts_ns())).min()
        {
            self.first = b;
        }
        let far = std::mem::take(&mut self.far);
        for ev in far {
            self.file(bucket_of(ev.ts_ns()), ev);
        }
    }

    /// Releases the first bucket whole, sorted. None when nothing is held.
    fn pop_front(&mut self, out: &mut Vec<Event>) -> Option<()> {
        if self.buckets.is_empty() {
            if self.far.is_empty() {
                return None;
            }
            self.refile();
        }
        let mut front = self.buckets.pop_front()?;
        self.first += 1;
        if !std::mem::take(&mut self.front_sorted) {
            front.sort_by_cached_key(Event::ts_ns);
        }
        self.len -= front.len();
        out.append(&mut front);
        self.spare.push(front);
        self.refile();
        Some(())
    }

    /// Appends every event stamped at or below `w` to `out`, in stamp order.
    pub fn release_to(&mut self, w: u64, out: &mut Vec<Event>) {
        loop {
            if self.buckets.is_empty() {
                if self.far.is_empty() {
                    return;
                }
                self.refile();
            }
            let end = (self.first.saturating_add(1))
                .saturating_mul(BUCKET_NS)
                .saturating_sub(1);
            if end <= w {
                if self.pop_front(out).is_none() {
                    return;
                }
                continue;
            }
            // The bucket the watermark is in: release its part at or below `w`.
            let Some(front) = self.buckets.front_mut() else {
                return;
            };
            if !self.front_sorted {
                if !front.iter().any(|e| e.ts_ns() <= w) {
                    return;
                }
                front.sort_by_cached_key(Event::ts_ns);
                self.front_sorted = true;
            }
            let k = front.partition_point(|e| e.ts_ns() <= w);
            self.len -= k;
            out.extend(front.drain(..k));
            return;
        }
    }

    /// Releases the oldest events, whole buckets at a time, until at most `keep` remain.
    /// Returns how many went.
    pub fn release_oldest(&mut self, keep: usize, out: &mut Vec<Event>) -> u64 {
        let before = self.len;
        while self.len > keep && self.pop_front(out).is_some() {}
        (before - self.len) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Switch;

    fn ev(ts_ns: u64, id: u32) -> Event {
        Event::Switch(Switch {
            ts_ns,
            cpu: 0,
            prev_pid: id,
            next_pid: 0,
            prev_state: 0,
            prev_prio: 0,
            next_prio: 0,
        })
    }

    fn ids(v: &[Event]) -> Vec<u32> {
        v.iter()
            .map(|e| match e {
                Event::Switch(s) => s.prev_pid,
                _ => u32::MAX,
            })
            .collect()
    }

    /// Against the obvious reference (a stable sort of what is held, cut at the watermark),
    /// over stamps spread across many buckets, far-ahead stamps and stamps below the first
    /// bucket, with equal stamps in arrival order.
    #[test]
    fn releases_what_a_stable_sort_would_in_the_same_order() {
        let mut seed = 0x1234_5678_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..50 {
            let mut h = Held::default();
            let mut reference: Vec<Event> = Vec::new();
            let (mut out, mut want) = (Vec::new(), Vec::new());
            let mut w = 0u64;
            let mut id = 0;
            for _ in 0..40 {
                for _ in 0..(next() % 200) {
                    // Mostly near the watermark, some equal, a few 100 s ahead (far).
                    let ts = match next() % 20 {
                        0 => w + 100 * 1_000_000_000 + next() % 1_000_000,
                        1 => w + 5_000,
                        _ => w + next() % 30_000_000,
                    };
                    h.insert(ev(ts, id));
                    reference.push(ev(ts, id));
                    id += 1;
                }
                w += next() % 20_000_000;
                h.release_to(w, &mut out);
                reference.sort_by_key(Event::ts_ns);
                let k = reference.partition_point(|e| e.ts_ns() <= w);
                want.extend(reference.drain(..k));
                assert_eq!(ids(&out), ids(&want), "round {round}");
                assert_eq!(h.len(), reference.len());
            }
            h.release_to(u64::MAX, &mut out);
            reference.sort_by_key(Event::ts_ns);
            want.append(&mut reference);
            assert_eq!(ids(&out), ids(&want), "round {round}, at the end");
            assert_eq!(h.len(), 0);
        }
    }

    #[test]
    fn the_oldest_go_first_when_forced() {
        let mut h = Held::default();
        for (i, ts) in [5_000_000, 1_000, 3_500_000, 2_000_000]
            .into_iter()
            .enumerate()
        {
            h.insert(ev(ts, i as u32));
        }
        let mut out = Vec::new();
        // Whole buckets: 0 ms (id 1), then 2 ms (id 3) leaves two.
        assert_eq!(h.release_oldest(2, &mut out), 2);
        assert_eq!(ids(&out), [1, 3]);
        assert_eq!(h.len(), 2);
    }
}
