//! Task names as time-stamped facts in the merged stream. Each ring's drain learns names from
//! the records it reads (a record carries its task's `comm` at that moment) and hands a name on
//! when it changes for that ring, with the time of the record it came from. The facts of all
//! rings wait here until the merged stream reaches their time, and a batch ends before an
//! event that a rename (an exec, a `prctl(PR_SET_NAME)`) must precede: every event is named as
//! the kernel named its task at that moment, whichever ring saw the rename, and one name table
//! is kept after the merge (a ring that saw a task only before its rename cannot name it for
//! the rest of the run).
//!
//! A fact always reaches the merge before its record's event is released (they travel in one
//! chunk, and the merge releases an event only once every ring is past it), so holding the
//! facts back to the released events' times loses none.
use std::{cmp::Reverse, collections::BinaryHeap, collections::VecDeque};

use wakeviz_core::{
    event::{Comm, Event, TaskName, TaskTable},
    source::Batch,
};

/// Most events handed on in one batch: a long run of released events is cut into batches the
/// consumers take one by one.
const MAX_BATCH: usize = 1 << 16;

/// A fact: its time, its arrival (to keep ties in order), the task, its name, its tgid and
/// its cgroup.
type Fact = Reverse<(u64, u64, u32, [u8; 16], u32, u64)>;

#[derive(Default)]
pub(super) struct Timeline {
    /// Each task's name and process as the stream handed on so far.
    named: TaskTable,
    /// Facts not applied yet, oldest first (ties in arrival order).
    facts: BinaryHeap<Fact>,
    seq: u64,
    /// Events the merge released, in order, not handed on yet.
    held: VecDeque<Event>,
}

impl Timeline {
    /// A ring's fact: `t` was the task's name at `ts_ns`.
    pub fn fact(&mut self, t: TaskName, ts_ns: u64) {
        self.seq += 1;
        self.facts.push(Reverse((
            ts_ns, self.seq, t.pid, t.comm.0, t.tgid, t.cgroup,
        )));
    }

    /// Events released by the merge, in time order; the batch to hand on now.
    pub fn release(&mut self, events: Vec<Event>, end: bool) -> Batch {
        if self.facts.is_empty() && self.held.is_empty() {
            // Nothing to place between them (the usual case: names change rarely).
            return Batch {
                events,
                ..Batch::default()
            };
        }
        self.held.extend(events);
        self.next(end)
    }

    /// Events are waiting to be handed on.
    pub fn has_events(&self) -> bool {
        !self.held.is_empty()
    }

    /// The next batch: the held events up to the first one a rename must precede, with the
    /// names due before them. At `end` (nothing more will be released) the facts after the last
    /// event are applied too.
    pub fn next(&mut self, end: bool) -> Batch {
        let mut out = Batch::default();
        while let Some(e) = self.held.front() {
            let ts = e.ts_ns();
            if !self.apply_until(ts, &mut out) || out.events.len() >= MAX_BATCH {
                return out;
            }
            if let Some(e) = self.held.pop_front() {
                out.events.push(e);
            }
        }
        if end {
            self.apply_until(u64::MAX, &mut out);
        }
        out
    }

    /// Applies the facts up to `ts`, the time of the next event; false (and the fact kept)
    /// where a rename (or a reused pid's new process) falls after events already in `out`,
    /// which must not carry it. A process learnt for a task already named is applied at once:
    /// a thread's tgid does not change while its pid lives.
    fn apply_until(&mut self, ts: u64, out: &mut Batch) -> bool {
        while let Some(Reverse((at, _, pid, comm, tgid, cgroup))) = self.facts.peek().copied() {
            if at > ts {
                break;
            }
            let fact = TaskName {
                pid,
                comm: Comm(comm),
                tgid,
                cgroup,
            };
            let renamed = self.named.fact(pid).is_some_and(|old| {
                old.comm != fact.comm || (tgid != 0 && old.tgid != 0 && old.tgid != tgid)
            });
            if renamed && !out.events.is_empty() {
                return false;
            }
            if self.named.learn(fact)
                && let Some(known) = self.named.fact(pid)
            {
                out.tasks.push(known);
            }
            self.facts.pop();
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wakeviz_core::event::Migrate;

    fn name(pid: u32, comm: &str) -> TaskName {
        TaskName {
            pid,
            comm: Comm::new(comm),
            tgid: 0,
            cgroup: 0,
        }
    }

    fn ev(ts_ns: u64, pid: u32) -> Event {
        Event::Migrate(Migrate {
            ts_ns,
            cpu: 0,
            pid,
            orig_cpu: 0,
            dest_cpu: 1,
        })
    }

    /// What a consumer sees from `first` on: each event with its task's name at that point.
    fn names_seen(first: Batch, t: &mut Timeline, end: bool) -> Vec<(u64, String)> {
        let mut table = std::collections::HashMap::new();
        let mut seen = Vec::new();
        let mut b = first;
        loop {
            if b.events.is_empty() && b.tasks.is_empty() {
                return seen;
            }
            for n in &b.tasks {
                table.insert(n.pid, n.comm.as_str().into_owned());
            }
            for e in &b.events {
                seen.push((e.ts_ns(), table.get(&e.pid()).cloned().unwrap_or_default()));
            }
            b = t.next(end);
        }
    }

    #[test]
    fn each_event_carries_the_name_of_its_moment_whatever_ring_said_it() {
        let mut t = Timeline::default();
        // Ring 1 saw the rename at 200 and reached the merge first; ring 0's fact from before
        // (100) comes after it.
        t.fact(name(7, "wvz-pp"), 200);
        t.fact(name(7, "sh"), 100);
        let first = t.release(vec![ev(100, 7), ev(150, 7), ev(200, 7), ev(300, 7)], false);
        let mut seen = names_seen(first, &mut t, false);
        assert_eq!(
            std::mem::take(&mut seen),
            [
                (100, "sh".into()),
                (150, "sh".into()),
                (200, "wvz-pp".into()),
                (300, "wvz-pp".into())
            ]
        );
        // The same name again, from any ring: nothing new, no cut.
        t.fact(name(7, "wvz-pp"), 350);
        let b = t.release(vec![ev(360, 7)], false);
        assert!(b.tasks.is_empty() && b.events.len() == 1);
        // No fact waiting: the released events pass as they are.
        let b = t.release(vec![ev(400, 7), ev(401, 9)], false);
        assert_eq!(b.events.len(), 2);
    }

    #[test]
    fn facts_after_the_last_event_wait_for_it_or_the_end() {
        let mut t = Timeline::default();
        t.fact(name(8, "a"), 10);
        t.fact(name(8, "b"), 500);
        let b = t.release(vec![ev(10, 8), ev(20, 8)], false);
        assert_eq!((b.tasks.len(), b.events.len()), (1, 2));
        assert!(t.next(false).tasks.is_empty(), "b is not due yet");
        let b = t.next(true);
        assert_eq!(b.tasks, [name(8, "b")]);
    }
}
