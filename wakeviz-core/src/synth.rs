//! Synthetic recordings: a small scheduler simulation that produces the event stream a live
//! capture would, on any topology (`cargo xtask synth`). Tests use it for machines this host is
//! not (2 x 64C Zen3 in NPS1/2/4, a Xeon, odd trees); benchmarks use it at 256 CPUs and 10^8
//! events, so it streams: memory depends on the number of CPUs and tasks, never on the number
//! of events.
//!
//! # Workload model
//!
//! Tasks (counts derive from the number of online CPUs `n`; see [`SynthConfig`]):
//! - **pipe pairs** (`pipe-<i>`, `n/4` pairs): two tasks ping-pong like `perf bench sched pipe`:
//!   the running one wakes its partner with `WF_SYNC` and blocks. Every 8th pair is pinned to one
//!   CPU (`taskset -c`); the rest may run anywhere.
//! - **fan-out groups** (`hackb-<g>`, `n/16` groups of one sender and `W` receivers, `W` = half an
//!   LLC, clamped to 2..=8): the sender wakes every receiver (no `WF_SYNC`, like a broadcast) and
//!   blocks; the last receiver to finish its work wakes the sender (`WF_SYNC`, a pipe reader
//!   waking the writer). Even groups start inside one NUMA node, odd ones spread over the
//!   machine, which is what keeps cross-node and cross-package wakeups in the mix.
//! - **per-CPU kworkers** (`kworker/<cpu>:1H`, pinned, prio 100): woken by a timer interrupt on
//!   their CPU every 2-6 ms; they preempt whatever runs there (`prev_state = 0` switch-out).
//! - **phases**: busy and idle phases of [`SynthConfig::phase_ns`] alternate. In a busy phase every
//!   pipe pair and group runs; in an idle phase only every 8th (rotating). A group that is switched
//!   off parks (its last runner blocks without waking anyone); when it is switched on again an
//!   interrupt wakes it (waker = whatever runs on the interrupted CPU, often idle, pid 0).
//!
//! Placement follows the `select_task_rq_fair` fast path of kernel/sched/fair.c, simplified:
//! `record_wakee`/`wake_wide`, an affine domain exists when the SLIT distance is at most 30
//! (`node_reclaim_distance`), `wake_affine_idle` then `wake_affine_weight` with run-queue lengths
//! as the load, and
//! `select_idle_sibling` (target, prev, `recent_used_cpu`, idle SMT sibling, and a SIS_UTIL-limited
//! `select_idle_cpu` wrap scan over the target's LLC, idle-core mode while the LLC hint is set).
//! `nr_idle_scan` comes from an LLC utilisation average refreshed every 4 ms, like the kernel's
//! periodic load balance. Pinned tasks (`nr_cpus_allowed == 1`) skip `select_task_rq_fair`
//! entirely, as in the kernel, so their wakeups carry no `Select` event. A CPU that goes idle
//! pulls a queued task (newidle balance: its LLC, sometimes one CPU of its node, rarely one
//! anywhere), the only source of `sched_migrate_task` outside wakeups. No forks:
//! `sched_wakeup_new` never occurs.
//!
//! Time is simulated: a timer heap (burst ends, interrupt kicks, phase and balance ticks) drives
//! the run queues, each task burst lasts a few to tens of microseconds, and a 256-CPU machine
//! produces about 12 million events per simulated second.
//!
//! # A deliberately independent model
//!
//! This placement model is a second, separate implementation of the kernel's fast path, not a
//! reuse of the shadow's stages (`shadow::policy`): it is the ground truth the shadow is
//! tested against (`tests/shadow_synth.rs` expects the SIS_UTIL shadow to reproduce its
//! choices). Sharing the stages would make that test pass by construction, whatever bug the
//! stages had. So it keeps its own `record_wakee` bookkeeping (`Flips` here, nanosecond decay,
//! per-task slots), its own run queues (idle = nothing running or queued, read from the queues,
//! not from an idle bitmap) and its own LLC walk over CPU lists; it reuses only the recording
//! format and the topology reader. Nothing here is plumbing the crate has elsewhere: there is
//! no CPU-relation classification (the one rule, `topology::LevelMap`, is for the readers of
//! the stream) and no CPU bitmap.
//!
//! # Consistency
//!
//! Per-CPU run queues are simulated, so the stream is what a kernel would emit: one wakeup is
//! `sched_waking` (waker CPU, `target_cpu` = previous CPU, `waker_pid` = task running on the waker
//! CPU), `select_task_rq_fair` (unpinned tasks only; exact inputs), `sched_migrate_task` if the CPU
//! changes, `sched_wakeup` (on the chosen CPU for the wake-list path, i.e. across LLCs or onto an
//! idle remote CPU, as `ttwu_queue_cond` decides; else on the waker CPU), and later the
//! `sched_switch` that runs the wakee. Timestamps strictly increase per CPU and never put a
//! switch-in before its wakeup; across CPUs they are ordered within a few tens of microseconds,
//! like a multi-CPU ring buffer. Everything derives from one seeded xoshiro256++ generator and
//! integer arithmetic, so a seed and a topology determine the output byte for byte.
use std::{
    cmp::Reverse,
    collections::{BinaryHeap, VecDeque},
    io::Write,
};

use crate::{
    event::{Comm, Event, Kind, Migrate, Select, Switch, TaskName, Wake, wf},
    format::{
        CaptureStats, FORMAT_VERSION, FormatError, Header, ProbeMode, ProbeState, ProbeStatus,
        Recorder, RecorderConfig, ScanSource,
    },
    topology::Topology,
};

/// First monotonic timestamp of a synthetic recording (1 s after "boot").
pub const START_TS_NS: u64 = 1_000_000_000;
/// pid of the first task; lower pids stay free so none collides with idle (0).
pub const FIRST_PID: u32 = 1000;
/// `node_reclaim_distance`: NUMA domains farther than this have no `SD_WAKE_AFFINE`.
const RECLAIM_DISTANCE: u32 = 30;
/// Period of the simulated load balance that refreshes `nr_idle_scan`.
const BALANCE_NS: u64 = 4_000_000;
const IDLE: u32 = u32::MAX;
const PRIO_NORMAL: i32 = 120;
const PRIO_KWORKER: i32 = 100;
/// Longest newidle-balance probe within the LLC (bounds the cost on huge LLCs).
const PULL_SCAN: usize = 16;
/// Most tasks a workload may have (pids stay far below `u32::MAX`).
const MAX_TASKS: usize = 1 << 22;

#[derive(Debug, thiserror::Error)]
pub enum SynthError {
    /// The topology cannot host a simulation (no CPUs, or indexes that point nowhere).
    #[error("topology unusable for synthesis: {0}")]
    Topology(String),
    /// Task counts beyond what pids and memory sensibly allow.
    #[error("workload too large: {0}")]
    Config(String),
    #[error(transparent)]
    Format(#[from] FormatError),
}

/// What to generate. `None` counts are derived from the topology (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SynthConfig {
    /// Events to produce (the iterator stops there; the recording holds exactly this many).
    pub events: u64,
    pub seed: u64,
    pub pipe_pairs: Option<usize>,
    pub fanout_groups: Option<usize>,
    /// Receivers per fan-out group.
    pub fanout_width: Option<usize>,
    /// Length of one busy or idle phase, simulated nanoseconds.
    pub phase_ns: u64,
    /// Per-CPU pinned kworkers woken by timer interrupts.
    pub kworkers: bool,
    /// Events per recording chunk (the recorder's default unless changed).
    pub chunk_events: u32,
    /// Known differences for comparison tests (`wakeviz diff`): of the unpinned wakeups that
    /// placement put in the waker's LLC, this many per million are moved to a random CPU of
    /// another package (as a patch that breaks wake-affine would). 0 (the default) is off;
    /// integers keep the output a pure function of the config.
    pub cross_package_ppm: u32,
    /// `select_task_rq_fair` durations (the scan latency) scaled by this percentage; 100 (the
    /// default) is the model as is.
    pub scan_scale_pct: u32,
}

impl SynthConfig {
    pub fn new(events: u64, seed: u64) -> Self {
        Self {
            events,
            seed,
            pipe_pairs: None,
            fanout_groups: None,
            fanout_width: None,
            phase_ns: 40_000_000,
            kworkers: true,
            chunk_events: RecorderConfig::default().chunk_events,
            cross_package_ppm: 0,
            scan_scale_pct: 100,
        }
    }
}

/// What [`generate`] wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SynthSummary {
    pub events: u64,
    /// File size: preamble, header and chunks.
    pub bytes: u64,
    /// Events per [`Kind::index`].
    pub per_kind: crate::event::PerKind<u64>,
    pub tasks: usize,
    /// Simulated time covered, first to last timestamp.
    pub span_ns: u64,
}

/// The generator's own record of one wakeup, for tests that check what the analyses derive from
/// the stream against what the simulation actually did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TruthPlacement {
    pub pid: u32,
    pub waker_cpu: u32,
    pub prev_cpu: u32,
    pub chosen_cpu: u32,
    pub sync: bool,
    pub pinned: bool,
    /// `sched_wakeup` was emitted on the chosen CPU (wake-list path).
    pub wake_list: bool,
    /// [`SynthConfig::cross_package_ppm`] moved this wakeup to another package.
    pub moved_cross_package: bool,
}

/// xoshiro256++ seeded through splitmix64: tiny, fast and the same on every platform.
#[derive(Clone, Debug)]
struct Rng([u64; 4]);

impl Rng {
    fn new(seed: u64) -> Self {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Self([next(), next(), next(), next()])
    }

    fn next_u64(&mut self) -> u64 {
        let s = &mut self.0;
        let r = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        r
    }

    /// Uniform in `0..n` (Lemire's multiply-high; the tiny bias is irrelevant here), 0 if n == 0.
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi.saturating_sub(lo))
    }

    fn idx(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Pipe { partner: u32 },
    Sender,
    Receiver,
    Kworker,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Sleeping,
    Queued,
    Running,
}

#[derive(Clone, Debug)]
struct Task {
    pid: u32,
    role: Role,
    group: u32,
    pinned: bool,
    prio: i32,
    state: State,
    /// Dense CPU index the task last ran on or was placed on (`task_cpu(p)`).
    cpu: u32,
    recent_used: u32,
    /// Time it became runnable: a switch-in never precedes it.
    ready_ts: u64,
}

#[derive(Clone, Debug)]
struct GroupState {
    /// Task indexes; the first is the one an interrupt wakes to restart a parked group.
    lead: u32,
    members: std::ops::Range<u32>,
    active: bool,
    /// All members asleep and nobody will wake them until a phase kick.
    parked: bool,
    /// Receivers still working on the current round (fan-out groups).
    pending: u32,
}

/// Who `record_wakee` bookkeeping belongs to: tasks, then one idle task per CPU. (The
/// shadow's `state::Flips` is the other, independent implementation: see the module docs.)
#[derive(Clone, Copy, Debug, Default)]
struct Flips {
    flips: u32,
    last_wakee: u32,
    decay_ts: u64,
}

#[derive(Clone, Debug)]
struct Cpu {
    /// Task index running, or [`IDLE`].
    curr: u32,
    queue: VecDeque<u32>,
    /// Queued plus running tasks (`rq->nr_running`; a pending wake-list entry counts too).
    nr: u32,
    /// Bumped whenever `curr` changes, to discard stale burst-end timers.
    epoch: u32,
    resched_pending: bool,
    last_ts: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
    /// The running task's burst is over: it acts (wakes others, blocks).
    BurstEnd {
        cpu: u32,
        epoch: u32,
    },
    /// An idle CPU with queued work switches to it (after IPI / idle exit).
    Resched {
        cpu: u32,
    },
    /// Interrupt-context wakeup of a sleeping task on `cpu`.
    Kick {
        task: u32,
        cpu: u32,
    },
    Phase,
    Balance,
}

/// The simulation; also an `Iterator` over its events, ending after [`SynthConfig::events`].
pub struct Synth {
    rng: Rng,
    cpu_no: Vec<u32>,
    cpu_llc: Vec<u32>,
    cpu_core: Vec<u32>,
    cpu_node: Vec<u32>,
    /// Position of each CPU in its LLC's list (for the wrap scan).
    cpu_llc_pos: Vec<u32>,
    llc_cpus: Vec<Vec<u32>>,
    core_cpus: Vec<Vec<u32>>,
    node_cpus: Vec<Vec<u32>>,
    distances: Vec<Vec<u32>>,
    smt: bool,
    llc_util: Vec<u32>,
    nr_idle_scan: Vec<u32>,
    has_idle_cores: Vec<bool>,
    core_seen: Vec<u32>,
    scan_gen: u32,
    tasks: Vec<Task>,
    names: Vec<TaskName>,
    groups: Vec<GroupState>,
    flips: Vec<Flips>,
    cpus: Vec<Cpu>,
    timers: BinaryHeap<Reverse<(u64, u64, Timer)>>,
    seq: u64,
    phase: u64,
    phase_ns: u64,
    /// Events of the current step, handed out front first (moved, not copied: `Event` is not
    /// `Copy`).
    out: VecDeque<Event>,
    remaining: u64,
    truth: Option<Vec<TruthPlacement>>,
    /// [`SynthConfig::cross_package_ppm`] and, per CPU index, the CPUs of other packages
    /// (empty unless the knob is on).
    cross_package_ppm: u32,
    other_package_cpus: Vec<Vec<u32>>,
    scan_scale_pct: u32,
}

impl Synth {
    pub fn new(topo: &Topology, cfg: &SynthConfig) -> Result<Self, SynthError> {
        let n = topo.cpus.len();
        if n == 0 {
            return Err(SynthError::Topology("no online CPUs".into()));
        }
        let bound = topo
            .cpus
            .iter()
            .map(|c| c.cpu as usize + 1)
            .max()
            .unwrap_or(0);
        let mut map = vec![u32::MAX; bound];
        for (i, c) in topo.cpus.iter().enumerate() {
            map[c.cpu as usize] = i as u32;
        }
        let bad = |what: &str, cpu: u32| {
            SynthError::Topology(format!("CPU {cpu}: {what} index out of range"))
        };
        let mut cpu_llc = Vec::with_capacity(n);
        let mut cpu_core = Vec::with_capacity(n);
        let mut cpu_node = Vec::with_capacity(n);
        for c in &topo.cpus {
            if c.llc as usize >= topo.llcs.len() {
                return Err(bad("LLC", c.cpu));
            }
            if c.core as usize >= topo.cores.len() {
                return Err(bad("core", c.cpu));
            }
            if c.node as usize >= topo.nodes.len() {
                return Err(bad("node", c.cpu));
            }
            cpu_llc.push(c.llc);
            cpu_core.push(c.core);
            cpu_node.push(c.node);
        }
        // Membership from each CPU's own indexes, so the sets agree with cpu_llc/cpu_core even on
        // a hand-edited topology.
        let mut llc_cpus = vec![Vec::new(); topo.llcs.len()];
        let mut core_cpus = vec![Vec::new(); topo.cores.len()];
        let mut node_cpus = vec![Vec::new(); topo.nodes.len()];
        let mut cpu_llc_pos = vec![0; n];
        for i in 0..n {
            cpu_llc_pos[i] = llc_cpus[cpu_llc[i] as usize].len() as u32;
            llc_cpus[cpu_llc[i] as usize].push(i as u32);
            core_cpus[cpu_core[i] as usize].push(i as u32);
            node_cpus[cpu_node[i] as usize].push(i as u32);
        }
        let cpu_no = topo.cpus.iter().map(|c| c.cpu).collect();
        let smt = core_cpus.iter().any(|c| c.len() > 1);
        let nl = llc_cpus.len();
        let mut s = Self {
            rng: Rng::new(cfg.seed),
            cpu_no,
            cpu_llc,
            cpu_core,
            cpu_node,
            cpu_llc_pos,
            nr_idle_scan: llc_cpus.iter().map(|l| l.len() as u32).collect(),
            llc_cpus,
            core_seen: vec![0; core_cpus.len()],
            core_cpus,
            node_cpus,
            distances: topo.distances.clone(),
            smt,
            llc_util: vec![0; nl],
            has_idle_cores: vec![smt; nl],
            scan_gen: 0,
            tasks: Vec::new(),
            names: Vec::new(),
            groups: Vec::new(),
            flips: Vec::new(),
            cpus: (0..n)
                .map(|_| Cpu {
                    curr: IDLE,
                    queue: VecDeque::new(),
                    nr: 0,
                    epoch: 0,
                    resched_pending: false,
                    last_ts: START_TS_NS,
                })
                .collect(),
            timers: BinaryHeap::new(),
            seq: 0,
            phase: 0,
            phase_ns: cfg.phase_ns.max(1_000_000),
            out: VecDeque::with_capacity(256),
            remaining: cfg.events,
            truth: None,
            cross_package_ppm: cfg.cross_package_ppm.min(1_000_000),
            other_package_cpus: if cfg.cross_package_ppm > 0 {
                topo.cpus
                    .iter()
                    .map(|a| {
                        (0..n as u32)
                            .filter(|&j| topo.cpus[j as usize].package != a.package)
                            .collect()
                    })
                    .collect()
            } else {
                Vec::new()
            },
            scan_scale_pct: cfg.scan_scale_pct,
        };
        s.spawn_tasks(cfg)?;
        if s.tasks.is_empty() {
            return Err(SynthError::Topology(
                "the workload has no tasks (all counts are zero)".into(),
            ));
        }
        s.flips = vec![Flips::default(); s.tasks.len() + n];
        s.arm(START_TS_NS, Timer::Phase);
        s.arm(START_TS_NS + BALANCE_NS, Timer::Balance);
        if cfg.kworkers {
            for t in 0..s.tasks.len() {
                if s.tasks[t].role == Role::Kworker {
                    let at = START_TS_NS + s.rng.range(100_000, 4_000_000);
                    let cpu = s.tasks[t].cpu;
                    s.arm(
                        at,
                        Timer::Kick {
                            task: t as u32,
                            cpu,
                        },
                    );
                }
            }
        }
        Ok(s)
    }

    /// Every task's name; feed them to `Recorder::learn_task` / a `TaskTable` before the events.
    pub fn tasks(&self) -> &[TaskName] {
        &self.names
    }

    /// Starts keeping a [`TruthPlacement`] per wakeup (memory grows with the stream: tests only).
    pub fn record_truth(&mut self) {
        self.truth.get_or_insert_with(Vec::new);
    }

    /// The wakeups recorded since the last call, in the order their `sched_wakeup` was emitted.
    pub fn take_truth(&mut self) -> Vec<TruthPlacement> {
        self.truth.as_mut().map(std::mem::take).unwrap_or_default()
    }

    fn add_task(&mut self, name: &str, role: Role, group: u32, pinned: bool, cpu: u32) -> u32 {
        let i = self.tasks.len() as u32;
        let pid = FIRST_PID + i;
        // A group's tasks are threads of one process, led by its first task (they are added
        // one after another); a kworker is its own process.
        let tgid = match self.tasks.last().zip(self.names.last()) {
            Some((t, n)) if group != u32::MAX && t.group == group => n.tgid,
            _ => pid,
        };
        let prio = if role == Role::Kworker {
            PRIO_KWORKER
        } else {
            PRIO_NORMAL
        };
        self.tasks.push(Task {
            pid,
            role,
            group,
            pinned,
            prio,
            state: State::Sleeping,
            cpu,
            recent_used: cpu,
            ready_ts: 0,
        });
        self.names.push(TaskName {
            pid,
            comm: Comm::new(name),
            tgid,
            cgroup: 0,
        });
        i
    }

    fn random_cpu_in(&mut self, set: &[u32]) -> u32 {
        // Sets are never empty: every LLC and node list was built from at least one CPU.
        set.get(self.rng.idx(set.len())).copied().unwrap_or(0)
    }

    fn spawn_tasks(&mut self, cfg: &SynthConfig) -> Result<(), SynthError> {
        let n = self.cpus.len();
        let pairs = cfg.pipe_pairs.unwrap_or((n / 4).max(1));
        let groups = cfg.fanout_groups.unwrap_or((n / 16).max(1));
        let llc_max = self.llc_cpus.iter().map(Vec::len).max().unwrap_or(1);
        let width = cfg.fanout_width.unwrap_or((llc_max / 2).clamp(2, 8)).max(1);
        // pids are u32 and every task costs memory: refuse absurd counts instead of wrapping.
        let total = pairs
            .checked_mul(2)
            .and_then(|p| groups.checked_mul(width.saturating_add(1))?.checked_add(p))
            .and_then(|t| t.checked_add(n))
            .filter(|&t| t <= MAX_TASKS);
        if total.is_none() {
            return Err(SynthError::Config(format!(
                "{pairs} pipe pairs and {groups} groups of {width} receivers exceed {MAX_TASKS} tasks"
            )));
        }
        for i in 0..pairs {
            let home = self.rng.idx(n) as u32;
            let llc = self.llc_cpus[self.cpu_llc[home as usize] as usize].clone();
            let pinned = i % 8 == 7;
            let other = if pinned {
                home
            } else {
                self.random_cpu_in(&llc)
            };
            let g = self.groups.len() as u32;
            let a = self.tasks.len() as u32;
            let name = if pinned {
                format!("pipepin-{i}")
            } else {
                format!("pipe-{i}")
            };
            self.add_task(&name, Role::Pipe { partner: a + 1 }, g, pinned, home);
            self.add_task(&name, Role::Pipe { partner: a }, g, pinned, other);
            self.groups.push(GroupState {
                lead: a,
                members: a..a + 2,
                active: false,
                parked: true,
                pending: 0,
            });
        }
        for i in 0..groups {
            // Even groups start inside one node, odd ones anywhere (processes forked by a shell
            // land all over a machine); placement then keeps or gathers them.
            let cpus = if i % 2 == 0 {
                let node = self.rng.idx(self.node_cpus.len());
                self.node_cpus[node].clone()
            } else {
                (0..n as u32).collect()
            };
            let g = self.groups.len() as u32;
            let name = format!("hackb-{i}");
            let c = self.random_cpu_in(&cpus);
            let lead = self.add_task(&name, Role::Sender, g, false, c);
            for _ in 0..width {
                let c = self.random_cpu_in(&cpus);
                self.add_task(&name, Role::Receiver, g, false, c);
            }
            self.groups.push(GroupState {
                lead,
                members: lead..lead + 1 + width as u32,
                active: false,
                parked: true,
                pending: 0,
            });
        }
        if cfg.kworkers {
            for c in 0..n {
                let name = format!("kworker/{}:1H", self.cpu_no[c]);
                self.add_task(&name, Role::Kworker, u32::MAX, true, c as u32);
            }
        }
        Ok(())
    }

    fn arm(&mut self, at: u64, t: Timer) {
        self.seq += 1;
        self.timers.push(Reverse((at, self.seq, t)));
    }

    /// Next timestamp on `cpu` at or after `desired`, strictly after the CPU's previous event.
    fn stamp(&mut self, cpu: u32, desired: u64) -> u64 {
        let c = &mut self.cpus[cpu as usize];
        let t = desired.max(c.last_ts + 1);
        c.last_ts = t;
        t
    }

    fn pid_of(&self, task: u32) -> u32 {
        if task == IDLE {
            0
        } else {
            self.tasks[task as usize].pid
        }
    }

    fn prio_of(&self, task: u32) -> i32 {
        if task == IDLE {
            PRIO_NORMAL
        } else {
            self.tasks[task as usize].prio
        }
    }

    fn idle(&self, cpu: u32) -> bool {
        let c = &self.cpus[cpu as usize];
        c.curr == IDLE && c.nr == 0
    }

    fn share_llc(&self, a: u32, b: u32) -> bool {
        self.cpu_llc[a as usize] == self.cpu_llc[b as usize]
    }

    fn distance(&self, a: u32, b: u32) -> u32 {
        let (na, nb) = (
            self.cpu_node[a as usize] as usize,
            self.cpu_node[b as usize] as usize,
        );
        if na == nb {
            return 10;
        }
        self.distances
            .get(na)
            .and_then(|r| r.get(nb))
            .copied()
            .unwrap_or(20)
    }

    fn flips_slot(&self, cpu: u32) -> usize {
        let curr = self.cpus[cpu as usize].curr;
        if curr == IDLE {
            self.tasks.len() + cpu as usize
        } else {
            curr as usize
        }
    }

    /// `record_wakee`: the waker's flip count, halved once per simulated second.
    fn record_wakee(&mut self, waker_cpu: u32, p: u32, now: u64) {
        let s = self.flips_slot(waker_cpu);
        let f = &mut self.flips[s];
        if now > f.decay_ts + 1_000_000_000 {
            f.flips >>= 1;
            f.decay_ts = now;
        }
        if f.last_wakee != p + 1 {
            f.last_wakee = p + 1;
            f.flips += 1;
        }
    }

    fn wake_wide(&self, waker_cpu: u32, p: u32) -> bool {
        let llc_size = self.llc_cpus[self.cpu_llc[waker_cpu as usize] as usize].len() as u64;
        let a = u64::from(self.flips[self.flips_slot(waker_cpu)].flips);
        let b = u64::from(self.flips[p as usize].flips);
        let (master, slave) = if a >= b { (a, b) } else { (b, a) };
        slave >= llc_size && master >= slave * llc_size
    }

    fn wake_affine(&self, w: u32, prev: u32, sync: bool) -> u32 {
        if self.idle(w) && self.share_llc(w, prev) {
            return if self.idle(prev) { prev } else { w };
        }
        let nr_w = self.cpus[w as usize].nr;
        if sync && nr_w == 1 {
            return w;
        }
        if self.idle(prev) {
            return prev;
        }
        // wake_affine_weight with one unit of load per runnable task; bias 108 for imbalance 117.
        let this_eff = (u64::from(nr_w.saturating_sub(u32::from(sync))) + 1) * 100;
        let prev_eff = u64::from(self.cpus[prev as usize].nr) * 108 + u64::from(sync);
        if this_eff < prev_eff { w } else { prev }
    }

    /// `select_idle_cpu`: `(cpu, probes)`.
    fn select_idle_cpu(
        &mut self,
        llc: usize,
        has_idle_core: bool,
        target: u32,
    ) -> (Option<u32>, u32) {
        let nr0 = self.nr_idle_scan[llc] + 1;
        if nr0 == 1 {
            return (None, 0);
        }
        let len = self.llc_cpus[llc].len();
        let start = self.cpu_llc_pos[target as usize] as usize + 1;
        let mut probes = 0;
        if has_idle_core {
            self.scan_gen = self.scan_gen.wrapping_add(1);
            if self.scan_gen == 0 {
                // Wrapped: old stamps could match again.
                self.core_seen.fill(0);
                self.scan_gen = 1;
            }
            let mut fallback = None;
            for k in 0..len {
                let cpu = self.llc_cpus[llc][(start + k) % len];
                let core = self.cpu_core[cpu as usize] as usize;
                if self.core_seen[core] == self.scan_gen {
                    continue;
                }
                self.core_seen[core] = self.scan_gen;
                let mut all_idle = true;
                for &s in &self.core_cpus[core] {
                    probes += 1;
                    if !self.idle(s) {
                        all_idle = false;
                        if fallback.is_none() {
                            continue;
                        }
                        break;
                    }
                    if fallback.is_none() && self.cpu_llc[s as usize] as usize == llc {
                        fallback = Some(s);
                    }
                }
                if all_idle {
                    return (Some(cpu), probes);
                }
            }
            self.has_idle_cores[llc] = false;
            (fallback, probes)
        } else {
            let mut nr = nr0;
            for k in 0..len {
                let cpu = self.llc_cpus[llc][(start + k) % len];
                nr -= 1;
                if nr == 0 {
                    return (None, probes);
                }
                probes += 1;
                if self.idle(cpu) {
                    return (Some(cpu), probes);
                }
            }
            (None, probes)
        }
    }

    /// `select_idle_sibling(p, prev, target)`: `(cpu, probes)`.
    fn select_idle_sibling(&mut self, p: u32, prev: u32, target: u32) -> (u32, u32) {
        if self.idle(target) {
            return (target, 1);
        }
        if prev != target && self.share_llc(prev, target) && self.idle(prev) {
            return (prev, 2);
        }
        let recent = self.tasks[p as usize].recent_used;
        self.tasks[p as usize].recent_used = prev;
        if recent != prev && recent != target && self.share_llc(recent, target) && self.idle(recent)
        {
            return (recent, 3);
        }
        let llc = self.cpu_llc[target as usize] as usize;
        let has_idle_core = self.smt && self.has_idle_cores[llc];
        if !has_idle_core && self.share_llc(prev, target) {
            let core = self.cpu_core[prev as usize] as usize;
            for &s in &self.core_cpus[core] {
                if s != prev && self.cpu_llc[s as usize] as usize == llc && self.idle(s) {
                    return (s, 4);
                }
            }
        }
        let (found, probes) = self.select_idle_cpu(llc, has_idle_core, target);
        (found.unwrap_or(target), 3 + probes)
    }

    /// `select_task_rq_fair` for an unpinned wakeup: `(cpu, probes)`.
    fn select(&mut self, p: u32, prev: u32, w: u32, sync: bool) -> (u32, u32) {
        let want_affine = !self.wake_wide(w, p);
        let mut target = prev;
        if want_affine && w != prev && self.distance(w, prev) <= RECLAIM_DISTANCE {
            target = self.wake_affine(w, prev, sync);
        }
        self.select_idle_sibling(p, prev, target)
    }

    fn emit(&mut self, e: Event) {
        self.out.push_back(e);
    }

    fn start_burst(&mut self, cpu: u32, task: u32, at: u64) {
        let len = match self.tasks[task as usize].role {
            Role::Pipe { .. } => self.rng.range(3_000, 30_000),
            Role::Sender => self.rng.range(2_000, 10_000),
            Role::Receiver => self.rng.range(10_000, 80_000),
            Role::Kworker => self.rng.range(3_000, 15_000),
        };
        let epoch = self.cpus[cpu as usize].epoch;
        self.arm(at + len, Timer::BurstEnd { cpu, epoch });
    }

    /// Makes `next` (a task index or [`IDLE`]) current on `cpu` with a `sched_switch`.
    fn switch(&mut self, cpu: u32, next: u32, prev_state: u32, desired: u64) -> u64 {
        let mut desired = desired;
        if next != IDLE {
            desired = desired.max(self.tasks[next as usize].ready_ts + 1);
        }
        let ts = self.stamp(cpu, desired);
        let prev = self.cpus[cpu as usize].curr;
        self.emit(Event::Switch(Switch {
            ts_ns: ts,
            cpu: self.cpu_no[cpu as usize],
            prev_pid: self.pid_of(prev),
            next_pid: self.pid_of(next),
            prev_state,
            prev_prio: self.prio_of(prev),
            next_prio: self.prio_of(next),
        }));
        let c = &mut self.cpus[cpu as usize];
        c.curr = next;
        c.epoch = c.epoch.wrapping_add(1);
        if next == IDLE {
            self.went_idle(cpu);
        } else {
            let t = &mut self.tasks[next as usize];
            t.state = State::Running;
            t.cpu = cpu;
            self.start_burst(cpu, next, ts);
        }
        ts
    }

    /// `__update_idle_core`: set the LLC's idle-core hint when this CPU's whole core is idle.
    fn went_idle(&mut self, cpu: u32) {
        let llc = self.cpu_llc[cpu as usize] as usize;
        if !self.smt || self.has_idle_cores[llc] {
            return;
        }
        let core = self.cpu_core[cpu as usize] as usize;
        if self.core_cpus[core]
            .iter()
            .all(|&s| s == cpu || self.idle(s))
        {
            self.has_idle_cores[llc] = true;
        }
    }

    /// Newidle balance: a queued, unpinned task from a busy CPU near `cpu`, if any.
    fn find_pull(&mut self, cpu: u32) -> Option<(u32, u32)> {
        let llc = self.cpu_llc[cpu as usize] as usize;
        let len = self.llc_cpus[llc].len();
        let start = self.cpu_llc_pos[cpu as usize] as usize + 1;
        let node = self.cpu_node[cpu as usize] as usize;
        let mut cands = [u32::MAX; PULL_SCAN + 2];
        for (k, slot) in cands.iter_mut().enumerate().take(len.min(PULL_SCAN)) {
            *slot = self.llc_cpus[llc][(start + k) % len];
        }
        // Farther pulls are rarer, as the kernel's newidle balance stops once the expected idle
        // time no longer covers a wider domain's cost.
        if self.rng.below(4) == 0 {
            let node_cpus = &self.node_cpus[node];
            cands[PULL_SCAN] = node_cpus[self.rng.idx(node_cpus.len())];
        }
        if self.rng.below(32) == 0 {
            cands[PULL_SCAN + 1] = self.rng.idx(self.cpus.len()) as u32;
        }
        for v in cands {
            if v == u32::MAX || v == cpu {
                continue;
            }
            let c = &self.cpus[v as usize];
            if c.curr == IDLE {
                continue;
            }
            if let Some(&t) = c.queue.back()
                && !self.tasks[t as usize].pinned
            {
                return Some((v, t));
            }
        }
        None
    }

    /// The running task on `cpu` blocks (`prev_state = 1`); the next queued task runs, else a
    /// pulled one, else idle.
    fn block(&mut self, cpu: u32, at: u64) {
        let c = &mut self.cpus[cpu as usize];
        let prev = c.curr;
        c.nr = c.nr.saturating_sub(1);
        if prev != IDLE {
            self.tasks[prev as usize].state = State::Sleeping;
        }
        let next = match self.cpus[cpu as usize].queue.pop_front() {
            Some(t) => t,
            None => match self.find_pull(cpu) {
                Some((victim, t)) => {
                    let v = &mut self.cpus[victim as usize];
                    v.queue.pop_back();
                    v.nr = v.nr.saturating_sub(1);
                    self.cpus[cpu as usize].nr += 1;
                    let ready = self.tasks[t as usize].ready_ts + 1;
                    let d = self.rng.range(500, 2_000);
                    let ts = self.stamp(cpu, at.max(ready) + d);
                    self.emit(Event::Migrate(Migrate {
                        ts_ns: ts,
                        cpu: self.cpu_no[cpu as usize],
                        pid: self.tasks[t as usize].pid,
                        orig_cpu: self.cpu_no[victim as usize],
                        dest_cpu: self.cpu_no[cpu as usize],
                    }));
                    self.tasks[t as usize].cpu = cpu;
                    t
                }
                None => IDLE,
            },
        };
        // The blocking task is not idle-eligible yet when `went_idle` checks siblings: curr is
        // reset inside `switch` before that check.
        self.switch(cpu, next, 1, at);
    }

    /// One wakeup of sleeping task `p` by whatever runs on `w`, starting at `at`. Returns the time
    /// the waker CPU is done with it.
    fn wake(&mut self, p: u32, w: u32, sync: bool, at: u64) -> u64 {
        debug_assert_eq!(self.tasks[p as usize].state, State::Sleeping);
        let prev = self.tasks[p as usize].cpu;
        let pinned = self.tasks[p as usize].pinned;
        let pid = self.tasks[p as usize].pid;
        let prio = self.tasks[p as usize].prio;
        let waker_pid = self.pid_of(self.cpus[w as usize].curr);
        let w_no = self.cpu_no[w as usize];
        let t0 = self.stamp(w, at);
        self.emit(Event::Waking(Wake {
            ts_ns: t0,
            cpu: w_no,
            pid,
            target_cpu: self.cpu_no[prev as usize],
            waker_pid,
            prio,
        }));
        let mut t = t0;
        let mut moved = false;
        let chosen = if pinned {
            prev
        } else {
            self.record_wakee(w, p, t0);
            let (wl, pl) = (
                self.cpu_llc[w as usize] as usize,
                self.cpu_llc[prev as usize] as usize,
            );
            let inputs = (
                self.cpus[w as usize].nr,
                self.nr_idle_scan[wl],
                self.has_idle_cores[wl],
                self.nr_idle_scan[pl],
                self.has_idle_cores[pl],
            );
            let (mut chosen, probes) = self.select(p, prev, w, sync);
            // The comparison knob draws from the generator only when on, so recordings without
            // it stay byte for byte what they were.
            if self.cross_package_ppm > 0 && self.share_llc(w, chosen) {
                let others = &self.other_package_cpus[w as usize];
                if !others.is_empty()
                    && self.rng.below(1_000_000) < u64::from(self.cross_package_ppm)
                {
                    chosen = others[self.rng.idx(others.len())];
                    moved = true;
                }
            }
            let d = self.rng.range(100, 300);
            let entry = self.stamp(w, t0 + d);
            let remote = if self.cpu_node[prev as usize] == self.cpu_node[w as usize] {
                0
            } else {
                300
            };
            let mut dur = 400 + 80 * u64::from(probes) + remote + self.rng.below(400);
            if self.scan_scale_pct != 100 {
                dur = dur * u64::from(self.scan_scale_pct) / 100;
            }
            let exit = self.stamp(w, entry + dur);
            self.emit(Event::Select(Box::new(Select {
                ts_ns: exit,
                entry_ts_ns: entry,
                cpu: w_no,
                pid,
                prev_cpu: self.cpu_no[prev as usize],
                wake_flags: wf::TTWU | if sync { wf::SYNC } else { 0 },
                chosen_cpu: self.cpu_no[chosen as usize],
                waker_pid,
                waker_nr_running: Some(inputs.0),
                nr_idle_scan: Some(inputs.1),
                has_idle_cores: Some(inputs.2),
                prev_nr_idle_scan: Some(inputs.3),
                prev_has_idle_cores: Some(inputs.4),
                idle_scan_ns: None,
                scan: None,
                inputs: Default::default(),
            })));
            t = exit;
            chosen
        };
        let chosen_no = self.cpu_no[chosen as usize];
        if chosen != prev {
            let d = self.rng.range(50, 150);
            t = self.stamp(w, t + d);
            self.emit(Event::Migrate(Migrate {
                ts_ns: t,
                cpu: w_no,
                pid,
                orig_cpu: self.cpu_no[prev as usize],
                dest_cpu: chosen_no,
            }));
        }
        // ttwu_queue_cond: the wake list across LLCs, or onto another CPU with nothing queued.
        let wake_list =
            !self.share_llc(w, chosen) || (chosen != w && self.cpus[chosen as usize].nr == 0);
        let target_idle = self.cpus[chosen as usize].curr == IDLE;
        let tw = if wake_list {
            let lat = self.rng.range(1_000, 3_000)
                + if target_idle {
                    self.rng.range(500, 8_000)
                } else {
                    0
                };
            self.stamp(chosen, t + lat)
        } else {
            let d = self.rng.range(200, 600);
            t = self.stamp(w, t + d);
            t
        };
        let on = if wake_list { chosen } else { w };
        self.emit(Event::Wakeup(Wake {
            ts_ns: tw,
            cpu: self.cpu_no[on as usize],
            pid,
            target_cpu: chosen_no,
            waker_pid: self.pid_of(self.cpus[on as usize].curr),
            prio,
        }));
        if let Some(truth) = &mut self.truth {
            truth.push(TruthPlacement {
                pid,
                waker_cpu: w_no,
                prev_cpu: self.cpu_no[prev as usize],
                chosen_cpu: chosen_no,
                sync,
                pinned,
                wake_list,
                moved_cross_package: moved,
            });
        }
        let task = &mut self.tasks[p as usize];
        task.cpu = chosen;
        task.state = State::Queued;
        task.ready_ts = tw;
        let c = &mut self.cpus[chosen as usize];
        c.nr += 1;
        if target_idle {
            c.queue.push_back(p);
            if !c.resched_pending {
                c.resched_pending = true;
                let at = tw + self.rng.range(300, 1_500);
                self.arm(at, Timer::Resched { cpu: chosen });
            }
        } else if self.tasks[p as usize].role == Role::Kworker {
            // Wakeup preemption: the kworker runs now, the preempted task is next.
            let curr = c.curr;
            c.queue.push_front(curr);
            self.tasks[curr as usize].state = State::Queued;
            self.tasks[curr as usize].ready_ts = tw;
            let at = tw + self.rng.range(200, 700);
            self.switch(chosen, p, 0, at);
        } else {
            c.queue.push_back(p);
        }
        t
    }

    fn set_phase_activity(&mut self, now: u64) {
        let busy = self.phase.is_multiple_of(2);
        for g in 0..self.groups.len() {
            let active = busy || (g as u64 + self.phase / 2).is_multiple_of(8);
            let grp = &mut self.groups[g];
            grp.active = active;
            if active && grp.parked {
                grp.parked = false;
                let lead = grp.lead;
                let at = now + self.rng.range(1_000, 1_000_000);
                // The interrupt lands on the task's CPU half the time, else anywhere in its node
                // or the machine (network/IO interrupts), so wakers vary.
                let prev = self.tasks[lead as usize].cpu;
                let cpu = match self.rng.below(4) {
                    0 | 1 => prev,
                    2 => {
                        let node = &self.node_cpus[self.cpu_node[prev as usize] as usize];
                        node[self.rng.idx(node.len())]
                    }
                    _ => self.rng.idx(self.cpus.len()) as u32,
                };
                self.arm(at, Timer::Kick { task: lead, cpu });
            }
        }
    }

    /// SIS_UTIL's `nr_idle_scan` from an exponentially averaged LLC utilisation.
    fn balance(&mut self) {
        for l in 0..self.llc_cpus.len() {
            let len = self.llc_cpus[l].len() as u64;
            let busy = self.llc_cpus[l]
                .iter()
                .filter(|&&c| self.cpus[c as usize].curr != IDLE)
                .count() as u64;
            let inst = busy * 1024 / len.max(1);
            let x = (u64::from(self.llc_util[l]) * 7 + inst) / 8;
            self.llc_util[l] = x as u32;
            let t = (x * x * 117 * 117 / (10_000 * 1024)).min(1024);
            self.nr_idle_scan[l] = ((1024 - t) * len / 1024) as u32;
        }
    }

    /// Runs the next timer; may emit nothing.
    fn step(&mut self) {
        let Some(Reverse((now, _, timer))) = self.timers.pop() else {
            // Unreachable: the phase and balance timers always re-arm.
            self.arm(START_TS_NS, Timer::Phase);
            return;
        };
        match timer {
            Timer::BurstEnd { cpu, epoch } => {
                let c = &self.cpus[cpu as usize];
                if c.epoch != epoch || c.curr == IDLE {
                    return;
                }
                self.act(cpu, c.curr, now);
            }
            Timer::Resched { cpu } => {
                let c = &mut self.cpus[cpu as usize];
                c.resched_pending = false;
                if c.curr != IDLE {
                    return;
                }
                if let Some(t) = c.queue.pop_front() {
                    self.switch(cpu, t, 0, now);
                }
            }
            Timer::Kick { task, cpu } => {
                let (role, state) = (
                    self.tasks[task as usize].role,
                    self.tasks[task as usize].state,
                );
                if role == Role::Kworker {
                    let at = now + self.rng.range(2_000_000, 6_000_000);
                    self.arm(at, Timer::Kick { task, cpu });
                }
                if state == State::Sleeping {
                    self.wake(task, cpu, false, now);
                }
            }
            Timer::Phase => {
                self.set_phase_activity(now);
                self.phase += 1;
                self.arm(now + self.phase_ns, Timer::Phase);
            }
            Timer::Balance => {
                self.balance();
                self.arm(now + BALANCE_NS, Timer::Balance);
            }
        }
    }

    /// The running task `t` on `cpu` finished its burst: its role decides whom it wakes.
    fn act(&mut self, cpu: u32, t: u32, now: u64) {
        let g = self.tasks[t as usize].group as usize;
        let mut at = now;
        match self.tasks[t as usize].role {
            Role::Pipe { partner } => {
                if self.groups[g].active {
                    at = self.wake(partner, cpu, true, at);
                } else {
                    self.groups[g].parked = true;
                }
            }
            Role::Sender => {
                if self.groups[g].active {
                    let members = self.groups[g].members.clone();
                    self.groups[g].pending = members.len() as u32 - 1;
                    for r in members.skip(1) {
                        let d = self.rng.range(800, 2_500);
                        at = self.wake(r, cpu, false, at + d);
                    }
                } else {
                    self.groups[g].parked = true;
                }
            }
            Role::Receiver => {
                let grp = &mut self.groups[g];
                grp.pending = grp.pending.saturating_sub(1);
                if grp.pending == 0 {
                    let lead = grp.lead;
                    at = self.wake(lead, cpu, true, at);
                }
            }
            Role::Kworker => {}
        }
        let d = self.rng.range(300, 1_200);
        self.block(cpu, at + d);
    }
}

impl Iterator for Synth {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        if self.remaining == 0 {
            return None;
        }
        loop {
            if let Some(e) = self.out.pop_front() {
                self.remaining -= 1;
                return Some(e);
            }
            self.step();
        }
    }
}

/// The simulation as an event iterator (plus [`Synth::tasks`] for the names).
pub fn events(topo: &Topology, cfg: &SynthConfig) -> Result<Synth, SynthError> {
    Synth::new(topo, cfg)
}

/// The recording header of a synthetic run: every probe "attached" in synthetic mode.
pub fn header(topo: &Topology, cfg: &SynthConfig, synth: &Synth) -> Header {
    let count = |f: &dyn Fn(&Role) -> bool| synth.tasks.iter().filter(|t| f(&t.role)).count();
    let pipes = count(&|r| matches!(r, Role::Pipe { .. }));
    let senders = count(&|r| *r == Role::Sender);
    let receivers = count(&|r| *r == Role::Receiver);
    let kworkers = count(&|r| *r == Role::Kworker);
    Header {
        format_version: FORMAT_VERSION,
        abi_version: wakeviz_common::ABI_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        kernel_release: "synthetic".into(),
        hostname: "synthetic".into(),
        realtime_offset_ns: 0,
        clocks: None,
        scan_points: None,
        start_ts_ns: START_TS_NS,
        probes: Kind::ALL
            .iter()
            .map(|k| ProbeStatus {
                name: k.name().into(),
                mode: Some(ProbeMode::Synthetic),
                state: ProbeState::Attached,
                fallbacks: Vec::new(),
            })
            .collect(),
        scan_source: ScanSource::SelectTaskRqFair,
        topology: topo.clone(),
        ringbuf_bytes: 0,
        comm_redacted: false,
        // The model pulls wakeups across NUMA nodes only up to distance 30 (the kernel's
        // default node_reclaim_distance), i.e. it behaves like a non-AMD machine.
        cpu_vendor: Some("synthetic".into()),
        notes: vec![
            format!(
                "synthetic recording (wakeviz_core::synth), seed {}, {} events, topology {}",
                cfg.seed,
                cfg.events,
                topo.summary()
            ),
            format!(
                "workload: {} pipe pairs (WF_SYNC ping-pong, every 8th pinned to one CPU), {} fan-out groups of 1 sender + {} receivers, {} pinned per-CPU kworkers on 2-6 ms timers",
                pipes / 2,
                senders,
                receivers.checked_div(senders).unwrap_or(0),
                kworkers
            ),
            format!(
                "phases: busy and idle phases of {} ms alternate (idle: 1 in 8 pairs/groups run); placement: simplified select_task_rq_fair (wake_wide, wake_affine, select_idle_sibling with SIS_UTIL), newidle pulls; no forks; pinned wakeups have no select_task_rq_fair event",
                synth.phase_ns / 1_000_000
            ),
            "timestamps are simulated monotonic time; no wall clock (realtime offset 0)".into(),
        ]
        .into_iter()
        .chain((cfg.cross_package_ppm > 0).then(|| {
            format!(
                "comparison knob: {} ppm of the wakeups placed in the waker's LLC moved to another package",
                cfg.cross_package_ppm
            )
        }))
        .chain((cfg.scan_scale_pct != 100).then(|| {
            format!(
                "comparison knob: select_task_rq_fair durations scaled to {} %",
                cfg.scan_scale_pct
            )
        }))
        .collect(),
        run: crate::run::RunMeta::default(),
    }
}

/// Writes a complete recording of `cfg.events` synthetic events to `out`.
pub fn generate<W: Write>(
    topo: &Topology,
    cfg: &SynthConfig,
    out: W,
) -> Result<SynthSummary, SynthError> {
    let mut synth = Synth::new(topo, cfg)?;
    let hdr = header(topo, cfg, &synth);
    let rcfg = RecorderConfig {
        chunk_events: cfg.chunk_events.max(1),
        // Only full chunks flush: wall-clock flushes would make the output depend on speed.
        flush_interval: std::time::Duration::MAX,
        ..RecorderConfig::default()
    };
    let chunk = u64::from(rcfg.chunk_events);
    let mut rec = Recorder::new(out, &hdr, rcfg)?;
    for t in synth.tasks() {
        rec.learn_task(*t);
    }
    let mut stats = CaptureStats::default();
    let (mut first, mut last) = (u64::MAX, 0);
    for e in synth.by_ref() {
        stats.offered[e.kind()] += 1;
        stats.delivered += 1;
        first = first.min(e.ts_ns());
        last = last.max(e.ts_ns());
        // The chunk this event completes is flushed inside `push`: give it current counters.
        if stats.delivered % chunk == 0 {
            rec.set_stats(&stats);
        }
        rec.push(&e)?;
    }
    let (mut w, bytes) = rec.finish(&stats)?;
    w.flush().map_err(FormatError::Write)?;
    Ok(SynthSummary {
        events: stats.delivered,
        bytes,
        per_kind: stats.offered,
        tasks: synth.tasks().len(),
        span_ns: last.saturating_sub(first.min(last)),
    })
}
