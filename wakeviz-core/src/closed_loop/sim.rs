//! The event loop: wakeups, bursts, slices and timers in time order (see the module docs).
use std::{cmp::Reverse, collections::BinaryHeap, collections::HashMap};

use super::{
    cpu::Cpu,
    sample::{Rng, draw},
    tasks::{Role, St, Task, build},
};
use crate::{
    event::{Comm, Event, Migrate, Select, SelectInputs, Switch, TaskName, Wake, wf},
    format::Header,
    shadow::ShadowEval,
    topology::CpuSet,
    workload::Shape,
};

/// What to simulate.
#[derive(Clone, Debug)]
pub struct Config {
    /// A shadow policy's registry name (`sis_util`, `prev_only`, ...).
    pub policy: String,
    pub seed: u64,
    /// Simulated time after which the run stops even if work is left (a safety bound: the
    /// run ends when every hub has run its rounds and every lone task its wakeups).
    pub duration_ns: u64,
    /// Stop after this many events, whatever the simulated time (bounds time and memory).
    pub max_events: u64,
    /// How long a running task keeps its CPU while others wait.
    pub slice_ns: u64,
}

impl Config {
    /// `policy`, for the recording's work: bounded by ten times its length and four times
    /// its events.
    pub fn new(policy: &str, shape: &Shape, recorded_events: u64) -> Self {
        Self {
            policy: policy.to_owned(),
            seed: 1,
            duration_ns: shape.duration_ns.saturating_mul(10).max(1_000_000_000),
            max_events: recorded_events.saturating_mul(4).max(10_000),
            slice_ns: 3_000_000,
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SimError {
    #[error("no shadow policy named {0:?} (known: {1})")]
    UnknownPolicy(String, String),
    #[error("{0} is the recorded kernel's own choice, which a simulation does not have")]
    Observed(String),
    #[error("the workload has no task that runs")]
    Empty,
}

/// What a simulation did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub events: u64,
    pub wakeups: u64,
    pub simulated_ns: u64,
    /// Stopped by [`Config::max_events`] or [`Config::duration_ns`] with work left.
    pub truncated: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// The running task's burst or slice ends on this CPU (stale if `epoch` moved on).
    Stop { cpu: u32, epoch: u64 },
    /// A sleeping task's timer fires.
    Timer { pid: u32 },
}

const FOREVER_NS: u64 = u64::MAX / 4;

struct Sim<'a> {
    now: u64,
    clock: u64,
    cpus: Vec<Cpu>,
    stop_at: Vec<u64>,
    llc: Vec<u32>,
    tasks: HashMap<u32, Task>,
    heap: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    seq: u64,
    rng: Rng,
    brain: ShadowEval,
    policy: usize,
    slice: u64,
    /// Hubs and lone tasks with wakeups still to issue: the run ends when none is left.
    active: usize,
    sum: Summary,
    sink: &'a mut dyn FnMut(&Event),
}

/// The names of the tasks a simulation of `shape` runs, for the analysis that folds its
/// events ([`Event`]s do not carry names).
pub fn names(shape: &Shape) -> Vec<TaskName> {
    shape
        .tasks
        .iter()
        .map(|t| TaskName {
            pid: t.pid,
            comm: Comm::new(&t.comm),
            tgid: t.tgid.unwrap_or(0),
            cgroup: 0,
        })
        .collect()
}

/// Runs `shape` under `cfg.policy` on `header`'s topology, handing every simulated event to
/// `sink` in time order.
pub fn simulate(
    shape: &Shape,
    header: &Header,
    cfg: &Config,
    sink: &mut dyn FnMut(&Event),
) -> Result<Summary, SimError> {
    let mut brain = ShadowEval::new(header);
    let known = brain.policy_names();
    let policy = known
        .iter()
        .position(|n| *n == cfg.policy)
        .ok_or_else(|| SimError::UnknownPolicy(cfg.policy.clone(), known.join(", ")))?;
    if Some(policy) == observed_index(&brain) {
        return Err(SimError::Observed(cfg.policy.clone()));
    }
    let cpu_ids: Vec<u32> = header.topology.cpus.iter().map(|c| c.cpu).collect();
    let bound = header.topology.cpu_bound();
    let mut llc = vec![u32::MAX; bound];
    for c in &header.topology.cpus {
        if let Some(slot) = llc.get_mut(c.cpu as usize) {
            *slot = c.llc;
        }
    }
    let tasks = build(shape, &cpu_ids);
    if tasks.is_empty() || cpu_ids.is_empty() {
        return Err(SimError::Empty);
    }
    for f in names(shape) {
        brain.on_task(&f);
    }
    let mut s = Sim {
        now: 0,
        clock: 0,
        cpus: (0..bound).map(|_| Cpu::default()).collect(),
        stop_at: vec![0; bound],
        llc,
        tasks,
        heap: BinaryHeap::new(),
        seq: 0,
        rng: Rng::new(cfg.seed),
        brain,
        policy,
        slice: cfg.slice_ns.max(1_000),
        active: 0,
        sum: Summary::default(),
        sink,
    };
    s.active = s.tasks.values().filter(|t| t.budget > 0).count();
    s.start();
    while s.active > 0
        && let Some(Reverse((t, _, ev))) = s.heap.pop()
    {
        if t >= cfg.duration_ns {
            s.sum.truncated = true;
            break;
        }
        if s.sum.events >= cfg.max_events {
            s.sum.truncated = true;
            break;
        }
        s.now = t;
        match ev {
            Ev::Stop { cpu, epoch } => s.on_stop(cpu, epoch),
            Ev::Timer { pid } => s.on_timer(pid),
        }
    }
    s.sum.simulated_ns = s.now;
    Ok(s.sum)
}

fn observed_index(b: &ShadowEval) -> Option<usize> {
    b.policy_names()
        .iter()
        .position(|n| *n == crate::shadow::policies::name::OBSERVED)
}

impl Sim<'_> {
    fn push(&mut self, at: u64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, ev)));
    }

    /// Hands `e` on, stamped after every event before it; the brain sees it unless `private`.
    fn emit(&mut self, mut e: Event, to_brain: bool) {
        self.clock = (self.clock + 1).max(self.now);
        let ts = self.clock;
        e.set_ts_ns(ts);
        if let Event::Select(s) = &mut e {
            s.entry_ts_ns = ts;
        }
        if to_brain {
            self.brain.on_event(&e);
        }
        (self.sink)(&e);
        self.sum.events += 1;
    }

    fn start(&mut self) {
        let mut pids: Vec<u32> = self
            .tasks
            .iter()
            .filter(|(_, t)| !matches!(t.role, Role::Client { .. }))
            .map(|(&p, _)| p)
            .collect();
        pids.sort_unstable();
        for pid in pids {
            let left = self.burst(pid);
            let Some(t) = self.tasks.get_mut(&pid) else {
                continue;
            };
            t.left_ns = left;
            let cpu = t.cpu;
            self.enqueue(cpu, pid);
        }
    }

    fn burst(&mut self, pid: u32) -> u64 {
        let Some(t) = self.tasks.get(&pid) else {
            return 1_000;
        };
        if matches!(t.role, Role::Hog) {
            return FOREVER_NS;
        }
        let run = t.run.clone();
        draw(&run, &mut self.rng).unwrap_or(1_000)
    }

    /// `pid` becomes runnable on `cpu`: it runs at once on an idle CPU, else waits.
    fn enqueue(&mut self, cpu: u32, pid: u32) {
        let c = cpu as usize;
        if self.cpus[c].cur == 0 {
            self.run(cpu, pid, 0, 0);
            return;
        }
        self.cpus[c].queue.push_back(pid);
        if let Some(t) = self.tasks.get_mut(&pid) {
            t.st = St::Waiting;
        }
        if self.stop_at[c] > self.now + self.slice {
            self.arm(cpu, self.now + self.slice);
        }
    }

    fn arm(&mut self, cpu: u32, at: u64) {
        let c = cpu as usize;
        self.cpus[c].epoch += 1;
        self.stop_at[c] = at;
        let epoch = self.cpus[c].epoch;
        self.push(at, Ev::Stop { cpu, epoch });
    }

    /// Switches `cpu` from `prev` (0: idle) to `pid`.
    fn run(&mut self, cpu: u32, pid: u32, prev: u32, prev_state: u32) {
        self.emit(
            Event::Switch(Switch {
                ts_ns: 0,
                cpu,
                prev_pid: prev,
                next_pid: pid,
                prev_state,
                prev_prio: 120,
                next_prio: 120,
            }),
            true,
        );
        let now = self.now;
        let c = cpu as usize;
        self.cpus[c].cur = pid;
        let waiting = !self.cpus[c].queue.is_empty();
        let Some(t) = self.tasks.get_mut(&pid) else {
            return;
        };
        t.st = St::Running;
        t.cpu = cpu;
        t.since_ns = now;
        let end = now.saturating_add(t.left_ns);
        let at = if waiting {
            end.min(now + self.slice)
        } else {
            end
        };
        self.arm(cpu, at);
    }

    fn on_stop(&mut self, cpu: u32, epoch: u64) {
        let c = cpu as usize;
        if self.cpus[c].epoch != epoch || self.cpus[c].cur == 0 {
            return;
        }
        let pid = self.cpus[c].cur;
        let now = self.now;
        let Some(t) = self.tasks.get_mut(&pid) else {
            return;
        };
        t.left_ns = t.left_ns.saturating_sub(now - t.since_ns);
        if t.left_ns > 0 {
            // The slice ran out: to the back of the queue.
            t.st = St::Waiting;
            self.cpus[c].queue.push_back(pid);
            self.next(cpu, pid, 0);
            return;
        }
        t.st = St::Sleeping;
        self.act(pid, cpu);
        self.next(cpu, pid, 1);
    }

    /// What `pid` does at the end of a burst, before it sleeps.
    fn act(&mut self, pid: u32, cpu: u32) {
        let Some(t) = self.tasks.get_mut(&pid) else {
            return;
        };
        match &mut t.role {
            Role::Hub {
                clients, pending, ..
            } => {
                if *pending == 0 && t.budget > 0 {
                    t.budget -= 1;
                    if t.budget == 0 {
                        self.active -= 1;
                    }
                    *pending = clients.len();
                    let clients = clients.clone();
                    for cl in clients {
                        self.wake(cl, pid, cpu);
                    }
                }
            }
            Role::Client { hub } => {
                let hub = *hub;
                let mut wakes = true;
                if let Some(Task {
                    role:
                        Role::Hub {
                            pending,
                            answer_wakes,
                            ..
                        },
                    ..
                }) = self.tasks.get_mut(&hub)
                {
                    *pending = pending.saturating_sub(1);
                    wakes = *pending == 0 || self.rng.unit() < *answer_wakes;
                }
                if wakes {
                    self.wake(hub, pid, cpu);
                }
            }
            Role::Alone => {
                if t.budget == 0 {
                    return;
                }
                t.budget -= 1;
                if t.budget == 0 {
                    self.active -= 1;
                }
                let sleep = t.sleep.clone();
                let d = draw(&sleep, &mut self.rng).unwrap_or(1_000_000);
                self.push(self.now + d, Ev::Timer { pid });
            }
            Role::Hog => {}
        }
    }

    /// `cpu`'s next task after `prev` stopped (`prev_state` 0: preempted, else asleep); an
    /// empty queue pulls a waiting task from the busiest CPU of the LLC.
    fn next(&mut self, cpu: u32, prev: u32, prev_state: u32) {
        let c = cpu as usize;
        self.cpus[c].cur = 0;
        if let Some(n) = self.cpus[c].queue.pop_front() {
            self.run(cpu, n, prev, prev_state);
            return;
        }
        if let Some(n) = self.pull(cpu) {
            self.run(cpu, n, prev, prev_state);
            return;
        }
        self.emit(
            Event::Switch(Switch {
                ts_ns: 0,
                cpu,
                prev_pid: prev,
                next_pid: 0,
                prev_state,
                prev_prio: 120,
                next_prio: 120,
            }),
            true,
        );
        self.cpus[c].epoch += 1;
    }

    fn pull(&mut self, cpu: u32) -> Option<u32> {
        let llc = *self.llc.get(cpu as usize)?;
        let from = (0..self.cpus.len())
            .filter(|&o| o != cpu as usize && self.llc[o] == llc)
            .filter(|&o| !self.cpus[o].queue.is_empty())
            .max_by_key(|&o| (self.cpus[o].load(), Reverse(o)))?;
        let i = self.cpus[from].queue.iter().position(|p| {
            self.tasks
                .get(p)
                .is_some_and(|t| t.allowed.as_ref().is_none_or(|a| a.contains(&cpu)))
        })?;
        let pid = self.cpus[from].queue.remove(i)?;
        self.emit(
            Event::Migrate(Migrate {
                ts_ns: 0,
                cpu,
                pid,
                orig_cpu: from as u32,
                dest_cpu: cpu,
            }),
            true,
        );
        Some(pid)
    }

    fn on_timer(&mut self, pid: u32) {
        let Some(t) = self.tasks.get(&pid) else {
            return;
        };
        let cpu = t.cpu;
        let waker = self.cpus.get(cpu as usize).map_or(0, |c| c.cur);
        self.wake(pid, waker, cpu);
    }

    /// `waker` (0: an interrupt on an idle CPU) on `wcpu` wakes `pid`, if it sleeps; the
    /// policy places it.
    fn wake(&mut self, pid: u32, waker: u32, wcpu: u32) {
        let u = self.rng.unit();
        let Some(t) = self.tasks.get(&pid) else {
            return;
        };
        if t.st != St::Sleeping {
            return;
        }
        let prev = t.cpu;
        let flags = wf::TTWU
            | if waker != 0 && u < t.sync {
                wf::SYNC
            } else {
                0
            };
        let allowed = t.allowed.clone();
        let wake = Wake {
            ts_ns: 0,
            cpu: wcpu,
            pid,
            target_cpu: prev,
            waker_pid: waker,
            prio: 120,
        };
        self.emit(Event::Waking(wake), true);
        let select = |chosen| Select {
            ts_ns: 0,
            entry_ts_ns: 0,
            cpu: wcpu,
            pid,
            prev_cpu: prev,
            wake_flags: flags,
            chosen_cpu: chosen,
            waker_pid: waker,
            waker_nr_running: None,
            nr_idle_scan: None,
            has_idle_cores: None,
            prev_nr_idle_scan: None,
            prev_has_idle_cores: None,
            idle_scan_ns: None,
            scan: None,
            inputs: SelectInputs {
                task_nr_cpus_allowed: allowed.as_ref().map(|a| a.len() as u32),
                allowed: allowed.as_ref().map(|a| {
                    let mut m = [0u64; 4];
                    for &c in a {
                        CpuSet::words_set(&mut m, c, true);
                    }
                    m
                }),
                ..SelectInputs::default()
            },
        };
        self.brain
            .on_event(&Event::Select(Box::new(select(u32::MAX))));
        let mut cpu = self.brain.take_choice(pid, self.policy).unwrap_or(prev);
        if (cpu as usize) >= self.cpus.len() || self.llc[cpu as usize] == u32::MAX {
            cpu = prev;
        }
        if let Some(a) = &allowed
            && !a.contains(&cpu)
        {
            cpu = a.first().copied().unwrap_or(prev);
        }
        self.emit(Event::Select(Box::new(select(cpu))), false);
        if cpu != prev {
            self.emit(
                Event::Migrate(Migrate {
                    ts_ns: 0,
                    cpu: wcpu,
                    pid,
                    orig_cpu: prev,
                    dest_cpu: cpu,
                }),
                true,
            );
        }
        self.emit(
            Event::Wakeup(Wake {
                cpu,
                target_cpu: cpu,
                ..wake
            }),
            true,
        );
        self.sum.wakeups += 1;
        let left = self.burst(pid);
        if let Some(t) = self.tasks.get_mut(&pid) {
            t.left_ns = left;
            t.cpu = cpu;
        }
        self.enqueue(cpu, pid);
    }
}
