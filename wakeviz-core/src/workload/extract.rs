//! Folds a recording's events into its [`Shape`]. The tasks are those of the run's scope
//! (the recording's, or the reader's `--scope`), followed through forks the same way the
//! analyses follow them; wakeviz's own threads are never part of a workload.
//!
//! A task's state machine: a switch-in starts (or resumes, after a preemption) a run burst;
//! a switch-out with a blocking state ends it and starts a sleep; the `sched_waking` that
//! wakes it ends the sleep and names the waker. `WF_SYNC` is taken from the
//! `select_task_rq_fair` call that follows the waking (the function probes), so it is known
//! only where they ran.
use std::collections::HashMap;

use super::shape::{Dist, ProcessShape, SCHEMA, Shape, TaskShape, Waker, WakerShare};
use crate::{
    analysis::{filter::FilterState, latency::Hist},
    event::{Event, TaskTable, wf},
    format::Header,
    source::Batch,
    topology::CpuSet,
};

/// Most tasks described one by one (each costs two small histograms, about 8 KB).
pub const MAX_TASKS: usize = 4096;
/// Most wakers kept per task; the rest are counted together as [`Waker::Other`].
pub const MAX_WAKERS: usize = 16;
/// Most CPUs whose switch-ins are counted per task for its home CPU.
const MAX_HOMES: usize = 16;
/// Highest nice-able kernel priority (`MAX_RT_PRIO`): below it a task is real-time.
const NORMAL_PRIO_BASE: i32 = 120;

#[derive(Default)]
struct Edge {
    count: u64,
    sync: u64,
}

struct Acc {
    run: Hist,
    sleep: Hist,
    burst_ns: u64,
    on_since: Option<u64>,
    blocked_at: Option<u64>,
    woken: u64,
    wakers: Vec<(Waker, Edge)>,
    /// The waker of the latest waking, for the `WF_SYNC` of the call that follows it.
    last_waker: Option<Waker>,
    /// Wakeups whose `select_task_rq_fair` call was seen (their `WF_SYNC` is known).
    calls: u64,
    prio: Option<i32>,
    /// All its time on a CPU, and when it was first and last seen.
    cpu_ns: u64,
    seen: (u64, u64),
    allowed: Option<Vec<u32>>,
    cpus: Vec<u64>,
    /// Switch-ins per CPU, for the CPU it ran on most (at most [`MAX_HOMES`] CPUs counted).
    homes: Vec<(u32, u64)>,
}

impl Acc {
    fn new() -> Self {
        Self {
            run: Hist::tiny(),
            sleep: Hist::tiny(),
            burst_ns: 0,
            on_since: None,
            blocked_at: None,
            woken: 0,
            wakers: Vec::new(),
            last_waker: None,
            calls: 0,
            prio: None,
            cpu_ns: 0,
            seen: (u64::MAX, 0),
            allowed: None,
            cpus: Vec::new(),
            homes: Vec::new(),
        }
    }

    fn edge(&mut self, w: Waker) -> &mut Edge {
        let key = if self.wakers.iter().any(|(k, _)| *k == w) || self.wakers.len() < MAX_WAKERS {
            w
        } else {
            Waker::Other
        };
        match self.wakers.iter().position(|(k, _)| *k == key) {
            Some(i) => &mut self.wakers[i].1,
            None => {
                self.wakers.push((key, Edge::default()));
                let last = self.wakers.len() - 1;
                &mut self.wakers[last].1
            }
        }
    }

    fn saw(&mut self, ts: u64) {
        self.seen = (self.seen.0.min(ts), self.seen.1.max(ts));
    }

    fn ran_on(&mut self, cpu: u32) {
        if let Some(h) = self.homes.iter_mut().find(|h| h.0 == cpu) {
            h.1 += 1;
        } else if self.homes.len() < MAX_HOMES {
            self.homes.push((cpu, 1));
        }
        let (w, b) = (cpu as usize / 64, cpu % 64);
        // CPU numbers are bounded by the recording's topology check; a wild one is ignored.
        if w < 64 {
            if self.cpus.len() <= w {
                self.cpus.resize(w + 1, 0);
            }
            self.cpus[w] |= 1 << b;
        }
    }
}

/// The fold. Feed it every batch of a source ([`Extractor::on_batch`]), then
/// [`Extractor::finish`].
pub struct Extractor {
    filter: FilterState,
    own: Vec<u32>,
    tasks: TaskTable,
    acc: HashMap<u32, Acc>,
    /// Answers of the scope per pid, so a task that leaves it is not followed half-way.
    scoped: HashMap<u32, bool>,
    not_followed: u64,
    cpus: u32,
    kernel_release: String,
    scope: String,
    first_ts: Option<u64>,
    last_ts: u64,
    /// The select call's CPU mask width: wider masks are left unread.
    cpu_bound: usize,
}

impl Extractor {
    pub fn new(h: &Header) -> Self {
        let mut own = h.run.own_tids.clone();
        own.sort_unstable();
        Self {
            filter: FilterState::new(h.run.scope.clone(), &h.run.own_tids),
            own,
            tasks: TaskTable::default(),
            acc: HashMap::new(),
            scoped: HashMap::new(),
            not_followed: 0,
            cpus: u32::try_from(h.topology.nr_cpus()).unwrap_or(u32::MAX),
            kernel_release: h.kernel_release.clone(),
            scope: h
                .run
                .scope
                .as_ref()
                .map_or_else(|| "every task".to_owned(), |f| f.describe()),
            first_ts: None,
            last_ts: 0,
            cpu_bound: h.topology.cpu_bound(),
        }
    }

    pub fn on_batch(&mut self, b: &Batch) {
        for t in &b.tasks {
            if self.tasks.learn(*t) {
                self.filter.renamed(t.pid);
                self.scoped.remove(&t.pid);
            }
        }
        for e in &b.events {
            self.on_event(e);
        }
    }

    /// Whether `pid` is followed, creating its accumulator on first sight.
    fn follow(&mut self, pid: u32) -> bool {
        if pid == 0 || self.own.binary_search(&pid).is_ok() {
            return false;
        }
        if let Some(&s) = self.scoped.get(&pid) {
            return s;
        }
        let s = self.filter.in_scope(pid, &self.tasks);
        let s = if s && self.acc.len() >= MAX_TASKS && !self.acc.contains_key(&pid) {
            self.not_followed += 1;
            false
        } else {
            s
        };
        if self.scoped.len() < crate::pidmap::PID_BUDGET {
            self.scoped.insert(pid, s);
        }
        if s {
            self.acc.entry(pid).or_insert_with(Acc::new);
        }
        s
    }

    pub fn on_event(&mut self, e: &Event) {
        let ts = e.ts_ns();
        self.first_ts.get_or_insert(ts);
        self.last_ts = self.last_ts.max(ts);
        match e {
            Event::WakeupNew(w) => self.filter.forked(w.waker_pid, w.pid),
            Event::Waking(w) => {
                if !self.follow(w.pid) {
                    return;
                }
                let waker = if w.waker_pid == 0 {
                    Waker::Interrupt
                } else if self.follow(w.waker_pid) {
                    Waker::Task(w.waker_pid)
                } else {
                    Waker::Outside
                };
                let Some(a) = self.acc.get_mut(&w.pid) else {
                    return;
                };
                if let Some(b) = a.blocked_at.take() {
                    a.sleep.record(ts.saturating_sub(b));
                }
                a.woken += 1;
                a.saw(ts);
                a.prio = Some(w.prio);
                a.edge(waker).count += 1;
                a.last_waker = Some(waker);
            }
            Event::Select(s) => {
                let Some(a) = self.acc.get_mut(&s.pid) else {
                    return;
                };
                if s.inputs.task_nr_cpus_allowed.is_some() {
                    a.allowed = s.inputs.allowed.map(|m| {
                        (0..self.cpu_bound.min(256) as u32)
                            .filter(|&c| CpuSet::words_contain(&m, c))
                            .collect()
                    });
                }
                // Only a call follows its waking record; inputs read at sched_waking come
                // before it.
                if !s.at_waking()
                    && s.wake_flags & wf::TTWU != 0
                    && let Some(w) = a.last_waker.take()
                {
                    a.calls += 1;
                    a.edge(w).sync += u64::from(s.wake_flags & wf::SYNC != 0);
                }
            }
            Event::Switch(s) => {
                if self.follow(s.prev_pid)
                    && let Some(a) = self.acc.get_mut(&s.prev_pid)
                {
                    if let Some(on) = a.on_since.take() {
                        a.burst_ns += ts.saturating_sub(on);
                        a.cpu_ns += ts.saturating_sub(on);
                    }
                    a.saw(ts);
                    if s.prev_state != 0 {
                        if a.burst_ns > 0 {
                            a.run.record(a.burst_ns);
                        }
                        a.burst_ns = 0;
                        a.blocked_at = Some(ts);
                    }
                }
                if self.follow(s.next_pid)
                    && let Some(a) = self.acc.get_mut(&s.next_pid)
                {
                    a.on_since = Some(ts);
                    a.ran_on(s.cpu);
                    a.saw(ts);
                }
            }
            _ => {}
        }
    }

    pub fn finish(self) -> Shape {
        let mut tasks: Vec<TaskShape> = self
            .acc
            .iter()
            .map(|(&pid, a)| {
                let known = a.calls > 0;
                let mut woken_by: Vec<WakerShare> = a
                    .wakers
                    .iter()
                    .map(|(w, e)| WakerShare {
                        waker: *w,
                        count: e.count,
                        sync: known.then_some(e.sync),
                    })
                    .collect();
                woken_by.sort_by(|x, y| y.count.cmp(&x.count).then(x.waker.cmp(&y.waker)));
                TaskShape {
                    pid,
                    tgid: self.tasks.tgid(pid),
                    comm: self.tasks.comm(pid).into_owned(),
                    nice: a.prio.filter(|&p| p >= 100).map(|p| p - NORMAL_PRIO_BASE),
                    run: Dist::of(&a.run),
                    sleep: Dist::of(&a.sleep),
                    woken: a.woken,
                    woken_by,
                    allowed_cpus: a.allowed.clone(),
                    cpus_used: a.cpus.iter().map(|w| w.count_ones()).sum(),
                    home_cpu: a
                        .homes
                        .iter()
                        .max_by_key(|h| (h.1, std::cmp::Reverse(h.0)))
                        .map(|h| h.0),
                    cpu_us: a.cpu_ns as f64 / 1e3,
                    span_us: a.seen.1.saturating_sub(a.seen.0) as f64 / 1e3,
                }
            })
            .collect();
        tasks.sort_by(|a, b| b.woken.cmp(&a.woken).then(a.pid.cmp(&b.pid)));
        let processes = group(&tasks);
        Shape {
            schema: SCHEMA,
            kernel_release: self.kernel_release,
            cpus: self.cpus,
            duration_ns: self.first_ts.map_or(0, |f| self.last_ts.saturating_sub(f)),
            scope: self.scope,
            tasks,
            processes,
            tasks_not_followed: self.not_followed,
        }
    }
}

/// Tasks by process (tgid); without a tgid each task stands alone. Most wakeups first.
fn group(tasks: &[TaskShape]) -> Vec<ProcessShape> {
    let mut by: Vec<ProcessShape> = Vec::new();
    let mut index: HashMap<u32, usize> = HashMap::new();
    for t in tasks {
        let key = t.tgid.unwrap_or(t.pid);
        let i = *index.entry(key).or_insert_with(|| {
            by.push(ProcessShape {
                tgid: t.tgid,
                comm: String::new(),
                tasks: Vec::new(),
                wakeups: 0,
            });
            by.len() - 1
        });
        let p = &mut by[i];
        if t.tgid == Some(t.pid) || p.comm.is_empty() {
            p.comm.clone_from(&t.comm);
        }
        p.tasks.push(t.pid);
        p.wakeups += t.woken;
    }
    by.sort_by_key(|p| std::cmp::Reverse(p.wakeups));
    by
}
