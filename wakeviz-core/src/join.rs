//! Joins `sched_waking` -> `select_task_rq_fair` -> `sched_wakeup` per task into one
//! [`Placement`]. The waker CPU always comes from waker context (`sched_waking` or the select
//! probe), never from the CPU a `sched_wakeup` program ran on: on the wake-list path that is the
//! target CPU.

use crate::event::{Event, Select, Wake};
use crate::pidslab::PidSlab;

/// One placed wakeup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    pub pid: u32,
    pub waker_pid: u32,
    /// `sched_waking` time (or the select entry time for fork placements).
    pub waking_ts_ns: u64,
    /// `sched_wakeup` / `sched_wakeup_new` time.
    pub wakeup_ts_ns: u64,
    pub waker_cpu: u32,
    /// The task's previous CPU (`prev_cpu` argument, else `sched_waking.target_cpu`).
    pub prev_cpu: u32,
    /// Where the task was enqueued (`sched_wakeup.target_cpu`).
    pub chosen_cpu: u32,
    /// The `select_task_rq_fair` call, when the function probes saw it.
    pub select: Option<Select>,
    /// First wakeup of a new task (`sched_wakeup_new`, fork placement).
    pub new_task: bool,
}

impl Placement {
    pub fn sync(&self) -> Option<bool> {
        self.select
            .map(|s| s.wake_flags & crate::event::wf::SYNC != 0)
    }
}

#[derive(Default, Clone, Copy)]
struct Pending {
    /// In flight (a vacant slot keeps its pid for the task's next wakeup).
    live: bool,
    waking: Option<Wake>,
    select: Option<Select>,
    /// `sched_waking` of the running task itself (`p == current`): the kernel emits
    /// `sched_wakeup` for it without any placement.
    self_wake: bool,
}

impl Pending {
    fn last_ts(&self) -> u64 {
        self.waking
            .map_or(0, |w| w.ts_ns)
            .max(self.select.map_or(0, |s| s.ts_ns))
    }
}

/// The tasks in flight, one dense slot each. A `Pending` is about 250 bytes (a select
/// record's inputs): kept in a [`PidSlab`], nothing moves it, and the pid lookup is an index,
/// not a hash probe (three per placed wakeup). A completed wakeup only marks its slot vacant:
/// the same task's next wakeup, usually soon, takes it back without unlinking and relinking
/// its pid; vacant slots count against the slab's budget like live ones and go at the next
/// purge.
#[derive(Default)]
struct InFlight {
    slots: PidSlab<Pending>,
}

impl InFlight {
    fn evicted(&self) -> u64 {
        self.slots.evicted()
    }

    /// `pid`'s pending wakeup, a fresh (default) one if it has none.
    #[inline]
    fn slot(&mut self, pid: u32) -> &mut Pending {
        let p = self.slots.get_or_default(pid);
        if !p.live {
            *p = Pending {
                live: true,
                ..Pending::default()
            };
        }
        p
    }

    #[inline]
    fn remove(&mut self, pid: u32) -> Option<&Pending> {
        let s = self.slots.slot(pid)?;
        let p = self.slots.at_mut(s);
        if !p.live {
            return None;
        }
        p.live = false;
        Some(p)
    }

    /// Keeps the live entries for which `keep` holds; frees every vacant slot.
    fn retain(&mut self, mut keep: impl FnMut(&Pending) -> bool) {
        self.slots.retain(|p| p.live && keep(p));
    }
}

#[derive(Default)]
pub struct Joiner {
    pending: InFlight,
    seen: u64,
    /// Wakeups whose `sched_waking` was never seen (dropped, or before the capture started).
    pub unmatched_wakeups: u64,
    /// Wakeups of the running task itself (no placement).
    pub self_wakeups: u64,
}

impl Joiner {
    /// Per-task entries dropped over the budget (see [`crate::pidmap`]).
    pub fn evicted(&self) -> u64 {
        self.pending.evicted()
    }

    pub fn new() -> Self {
        Self::default()
    }

    /// Tasks with a wakeup in flight.
    pub fn in_flight(&self) -> usize {
        self.pending.slots.values().filter(|p| p.live).count()
    }

    /// Feeds one event; a placement when it completes one. Inlined into the caller for the
    /// switches and migrations (half the stream), which only count: the wakeup records take
    /// the out-of-line path.
    #[inline]
    pub fn on_event(&mut self, e: &Event) -> Option<Placement> {
        self.seen += 1;
        if self.seen.is_multiple_of(1 << 16) {
            self.purge(e.ts_ns());
        }
        match e {
            Event::Waking(_) | Event::Wakeup(_) | Event::WakeupNew(_) | Event::Select(_) => {
                self.on_wake(e)
            }
            _ => None,
        }
    }

    #[cold]
    fn purge(&mut self, now: u64) {
        self.pending
            .retain(|p| now.saturating_sub(p.last_ts()) < crate::horizons::JOIN_WAKING_NS);
    }

    #[inline(never)]
    fn on_wake(&mut self, e: &Event) -> Option<Placement> {
        match e {
            Event::Waking(w) => {
                let self_wake = w.pid == w.waker_pid;
                let p = self.pending.slot(w.pid);
                p.waking = (!self_wake).then_some(*w);
                p.select = None;
                p.self_wake = self_wake;
                None
            }
            // Inputs read at sched_waking are the shadow's, not a placement's select call.
            Event::Select(s) if s.at_waking() => None,
            Event::Select(s) => {
                self.pending.slot(s.pid).select = Some(**s);
                None
            }
            Event::Wakeup(w) => {
                let Some(p) = self.pending.remove(w.pid) else {
                    self.unmatched_wakeups += 1;
                    return None;
                };
                if p.self_wake {
                    self.self_wakeups += 1;
                    return None;
                }
                let Some(waking) = p.waking else {
                    self.unmatched_wakeups += 1;
                    return None;
                };
                let select = p.select.filter(|s| s.entry_ts_ns >= waking.ts_ns);
                Some(Placement {
                    pid: w.pid,
                    waker_pid: waking.waker_pid,
                    waking_ts_ns: waking.ts_ns,
                    wakeup_ts_ns: w.ts_ns,
                    waker_cpu: waking.cpu,
                    prev_cpu: select.map_or(waking.target_cpu, |s| s.prev_cpu),
                    chosen_cpu: w.target_cpu,
                    select,
                    new_task: false,
                })
            }
            Event::WakeupNew(w) => {
                // Fork placement runs in the parent's context without sched_waking; the
                // wakeup_new probe runs there too, so its CPU is the parent's.
                let select = self.pending.remove(w.pid).and_then(|p| p.select);
                Some(Placement {
                    pid: w.pid,
                    waker_pid: w.waker_pid,
                    waking_ts_ns: select.map_or(w.ts_ns, |s| s.entry_ts_ns),
                    wakeup_ts_ns: w.ts_ns,
                    waker_cpu: select.map_or(w.cpu, |s| s.cpu),
                    prev_cpu: select.map_or(w.cpu, |s| s.prev_cpu),
                    chosen_cpu: w.target_cpu,
                    select,
                    new_task: true,
                })
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wake(ts: u64, cpu: u32, pid: u32, target: u32, waker: u32) -> Wake {
        Wake {
            ts_ns: ts,
            cpu,
            pid,
            target_cpu: target,
            waker_pid: waker,
            prio: 120,
        }
    }

    #[test]
    fn waker_cpu_comes_from_waking_not_wakeup() {
        let mut j = Joiner::new();
        assert!(j.on_event(&Event::Waking(wake(10, 0, 5, 1, 4))).is_none());
        // The wakeup is delivered on the target CPU 3 (wake-list path).
        let p = j.on_event(&Event::Wakeup(wake(20, 3, 5, 3, 0))).unwrap();
        assert_eq!(
            (p.waker_cpu, p.prev_cpu, p.chosen_cpu, p.waker_pid),
            (0, 1, 3, 4)
        );
        assert_eq!(j.in_flight(), 0);
    }

    #[test]
    fn select_in_between_supplies_prev_and_flags() {
        let mut j = Joiner::new();
        j.on_event(&Event::Waking(wake(10, 2, 5, 1, 4)));
        let s = select_of(5, 12);
        j.on_event(&Event::Select(Box::new(s)));
        let p = j.on_event(&Event::Wakeup(wake(20, 2, 5, 2, 4))).unwrap();
        assert_eq!(p.select, Some(s));
        assert_eq!(p.sync(), Some(true));
    }

    #[test]
    fn a_reused_slot_carries_nothing_of_its_previous_task() {
        let mut j = Joiner::new();
        let mut s = select_of(5, 12);
        j.on_event(&Event::Waking(wake(10, 2, 5, 1, 4)));
        j.on_event(&Event::Select(Box::new(s)));
        assert!(j.on_event(&Event::Wakeup(wake(20, 2, 5, 2, 4))).is_some());
        // Pid 7 takes pid 5's freed slot with a select record but no sched_waking: its
        // wakeup is an orphan, not pid 5's waking joined again.
        s.pid = 7;
        j.on_event(&Event::Select(Box::new(s)));
        assert!(j.on_event(&Event::Wakeup(wake(30, 2, 7, 2, 4))).is_none());
        assert_eq!(j.unmatched_wakeups, 1);
        // And a waking after a stale select drops the select.
        j.on_event(&Event::Select(Box::new(s)));
        j.on_event(&Event::Waking(wake(40, 3, 7, 1, 4)));
        let p = j.on_event(&Event::Wakeup(wake(50, 3, 7, 1, 4))).unwrap();
        assert_eq!((p.select, p.waker_cpu, p.prev_cpu), (None, 3, 1));
        assert_eq!(j.in_flight(), 0);
    }

    fn select_of(pid: u32, entry: u64) -> Select {
        Select {
            ts_ns: entry + 3,
            entry_ts_ns: entry,
            cpu: 2,
            pid,
            prev_cpu: 1,
            wake_flags: 0x18,
            chosen_cpu: 2,
            waker_pid: 4,
            waker_nr_running: None,
            nr_idle_scan: None,
            has_idle_cores: None,
            prev_nr_idle_scan: None,
            prev_has_idle_cores: None,
            idle_scan_ns: None,
            scan: None,
            inputs: Default::default(),
        }
    }

    #[test]
    fn self_wakeup_and_orphan_wakeup_are_not_placements() {
        let mut j = Joiner::new();
        j.on_event(&Event::Waking(wake(10, 0, 5, 0, 5)));
        assert!(j.on_event(&Event::Wakeup(wake(11, 0, 5, 0, 5))).is_none());
        assert!(j.on_event(&Event::Wakeup(wake(12, 0, 6, 0, 5))).is_none());
        assert_eq!(j.unmatched_wakeups, 1);
        assert_eq!(j.self_wakeups, 1);
    }
}
