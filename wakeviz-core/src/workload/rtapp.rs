//! A [`Shape`] as an `rt-app` file (the 1.0 grammar Debian packages; LISA and the sched_ext
//! simulator read the same format), so the recorded workload's shape runs again elsewhere.
//!
//! rt-app wakes a thread only through pthread condition variables, which have no memory: a
//! signal sent before its waiter waits is lost, and so is one sent while the waiter, already
//! signalled, waits for the mutex. Two patterns, by the size of a star:
//! - **One client** (a ping-pong pair): a handshake that loses no wakeup. The hub holds the
//!   pair's mutex except inside its wait for the answer, so the client can answer only while
//!   the hub waits; the client answers and waits in one critical section, so the hub can wake
//!   it only while it waits. Both run the recorded number of rounds and the file ends by
//!   itself (`global.duration` -1: rt-app 1.0 otherwise sleeps the whole duration even after
//!   its threads have finished). The client starts 50 ms late so that the hub holds the mutex
//!   first.
//! - **Several clients**: rounds that may lose a wakeup but never stall (see
//!   [`broadcast_star`]), for the recording's length (`global.duration`).
//!
//! Tasks outside any star sleep and run through their own quartiles; CPU-bound tasks run once
//! for their recorded CPU time. What rt-app cannot express is left out and said in
//! [`RtApp::notes`]: `WF_SYNC` (a futex wakeup never carries it, a pipe's does), wakeups
//! between tasks that are not a star, and how a hub's answers bunch up (the clients of a
//! several-client star share one mutex, and a client woken while another holds it is woken a
//! second time when it is handed over).
use std::collections::{BTreeMap, HashMap, HashSet};

use serde::{Serialize, Serializer, ser::SerializeMap};

use super::shape::{Shape, TaskShape, Waker};

/// Tasks woken fewer times are left out (too little to have a shape).
pub const MIN_WAKEUPS: u64 = 10;
/// Microseconds a client waits before its first round.
const CLIENT_DELAY_US: i64 = 50_000;

/// The generated file and what it does not reproduce.
pub struct RtApp {
    pub json: String,
    pub threads: usize,
    pub stars: usize,
    pub notes: Vec<String>,
}

/// A hub, its clients and the rounds they run.
#[derive(Debug, PartialEq, Eq)]
pub struct Star {
    pub hub: u32,
    pub clients: Vec<u32>,
    pub rounds: u64,
}

/// Which tasks form stars and which run alone.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Plan {
    pub stars: Vec<Star>,
    pub alone: Vec<u32>,
    /// CPU-bound tasks: one long run each.
    pub hogs: Vec<u32>,
    /// Woken fewer than [`MIN_WAKEUPS`] times, or never blocked.
    pub left_out: Vec<u32>,
}

/// The task whose wakeups make up at least half of `t`'s.
fn parent(t: &TaskShape) -> Option<u32> {
    match t.principal()? {
        (Waker::Task(p), share) if share >= 0.5 && p != t.pid => Some(p),
        _ => None,
    }
}

pub fn plan(shape: &Shape) -> Plan {
    let mut out = Plan::default();
    let by_pid: HashMap<u32, &TaskShape> = shape.tasks.iter().map(|t| (t.pid, t)).collect();
    let mut cands: Vec<&TaskShape> = Vec::new();
    for t in &shape.tasks {
        if t.woken >= MIN_WAKEUPS && t.run.n > 0 {
            cands.push(t);
        } else if t.cpu_bound() {
            out.hogs.push(t.pid);
        } else {
            out.left_out.push(t.pid);
        }
    }
    let cand: HashSet<u32> = cands.iter().map(|t| t.pid).collect();
    let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for t in &cands {
        if let Some(p) = parent(t).filter(|p| cand.contains(p)) {
            children.entry(p).or_default().push(t.pid);
        }
    }
    let mut order: Vec<(u32, usize)> = children.iter().map(|(&p, c)| (p, c.len())).collect();
    order.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut taken: HashSet<u32> = HashSet::new();
    for (hub, _) in order {
        if taken.contains(&hub) {
            continue;
        }
        let mut clients: Vec<u32> = children[&hub]
            .iter()
            .copied()
            .filter(|c| !taken.contains(c) && *c != hub)
            .collect();
        clients.sort_unstable();
        let Some(h) = by_pid.get(&hub) else { continue };
        let answers: u64 = clients.iter().map(|&c| h.woken_by_task(c)).sum();
        if clients.is_empty() || answers * 2 < h.woken {
            continue;
        }
        let sent: u64 = clients
            .iter()
            .filter_map(|c| by_pid.get(c))
            .map(|c| c.woken_by_task(hub))
            .sum();
        let rounds = (sent as f64 / clients.len() as f64).round().max(1.0) as u64;
        taken.insert(hub);
        taken.extend(clients.iter().copied());
        out.stars.push(Star {
            hub,
            clients,
            rounds,
        });
    }
    for t in cands {
        if !taken.contains(&t.pid) {
            if t.sleep.n > 0 {
                out.alone.push(t.pid);
            } else {
                out.left_out.push(t.pid);
            }
        }
    }
    out
}

/// A JSON object whose keys keep their order: rt-app runs a phase's events in file order.
#[derive(Default)]
struct Obj(Vec<(String, Val)>);

enum Val {
    Int(i64),
    Str(String),
    Bool(bool),
    Cpus(Vec<u32>),
    Obj(Obj),
}

impl Obj {
    fn put(&mut self, k: impl Into<String>, v: Val) -> &mut Self {
        self.0.push((k.into(), v));
        self
    }
}

impl Serialize for Obj {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl Serialize for Val {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Int(i) => s.serialize_i64(*i),
            Self::Str(x) => s.serialize_str(x),
            Self::Bool(b) => s.serialize_bool(*b),
            Self::Cpus(c) => c.serialize(s),
            Self::Obj(o) => o.serialize(s),
        }
    }
}

/// Events of one phase, numbered so their keys stay unique (rt-app reads the prefix).
#[derive(Default)]
struct Phase {
    obj: Obj,
    n: usize,
}

impl Phase {
    fn ev(&mut self, kind: &str, v: Val) -> &mut Self {
        self.n += 1;
        self.obj.put(format!("{kind}{}", self.n), v);
        self
    }

    fn wait(&mut self, cond: &str, mutex: &str) -> &mut Self {
        let mut o = Obj::default();
        o.put("ref", Val::Str(cond.into()))
            .put("mutex", Val::Str(mutex.into()));
        self.ev("wait", Val::Obj(o))
    }

    /// Repeats until rt-app stops (rt-app counts a phase's loops up from 0 and never reaches -1).
    fn forever(mut self) -> Val {
        self.obj.put("loop", Val::Int(-1));
        Val::Obj(self.obj)
    }

    fn done(mut self, loops: u64) -> Val {
        self.obj
            .put("loop", Val::Int(i64::try_from(loops).unwrap_or(i64::MAX)));
        Val::Obj(self.obj)
    }
}

fn us(v: f64) -> Val {
    Val::Int((v.round() as i64).max(1))
}

/// Thread names: the task's name cut to fit the kernel's 15 bytes with a unique suffix.
fn names(shape: &Shape) -> HashMap<u32, String> {
    shape
        .tasks
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let clean: String = t
                .comm
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .take(9)
                .collect();
            (t.pid, format!("{clean}-{i}"))
        })
        .collect()
}

/// A thread: its phases, after a first one that starts it on the CPU the task ran on most when
/// it may run anywhere (a task tends to stay where it runs, and where rt-app's thread creation
/// would put it is another matter); the later phases name no CPUs, so rt-app gives the thread
/// back its whole mask.
fn thread(t: &TaskShape, phases: Obj, delay_us: i64) -> Val {
    let mut o = Obj::default();
    o.put("loop", Val::Int(1));
    if delay_us > 0 {
        o.put("delay", Val::Int(delay_us));
    }
    let mut all = Obj::default();
    match (&t.allowed_cpus, t.home_cpu) {
        (Some(c), _) => {
            o.put("cpus", Val::Cpus(c.clone()));
        }
        (None, Some(first)) => {
            let mut p = Phase::default();
            p.obj.put("cpus", Val::Cpus(vec![first]));
            p.ev("runtime", Val::Int(1));
            all.put("place", p.done(1));
        }
        (None, None) => {}
    }
    all.0.extend(phases.0);
    o.put("phases", Val::Obj(all));
    Val::Obj(o)
}

/// Runtime per round: the task's CPU time spread over the rounds it ran.
fn per_round(t: &TaskShape, rounds: u64) -> Val {
    us(t.run.total_us / rounds as f64)
}

/// The lossless handshake (module docs), with a mutex per client: the hub holds them all
/// except inside its wait for that client's answer. Used for one client: with several, the
/// hub takes the answers one client at a time, which keeps the others from running.
fn star(s: &Star, by: &HashMap<u32, &TaskShape>, name: &HashMap<u32, String>, tasks: &mut Obj) {
    let (Some(h), Some(hn)) = (by.get(&s.hub), name.get(&s.hub)) else {
        return;
    };
    let clients: Vec<(&TaskShape, &String)> = s
        .clients
        .iter()
        .filter_map(|c| Some((*by.get(c)?, name.get(c)?)))
        .collect();
    let mutex = |cn: &str| format!("m-{cn}");
    let answer = |cn: &str| format!("a-{cn}");
    let wake = |cn: &str| format!("c-{cn}");
    let (mut start, mut rounds, mut end) = (Phase::default(), Phase::default(), Phase::default());
    for (_, cn) in &clients {
        start.ev("lock", Val::Str(mutex(cn)));
        rounds.wait(&answer(cn), &mutex(cn));
        end.ev("unlock", Val::Str(mutex(cn)));
    }
    rounds.ev("runtime", per_round(h, s.rounds));
    for (_, cn) in &clients {
        rounds.ev("signal", Val::Str(wake(cn)));
    }
    let mut phases = Obj::default();
    phases
        .put("start", start.done(1))
        .put("rounds", rounds.done(s.rounds))
        .put("end", end.done(1));
    tasks.put(hn.clone(), thread(h, phases, 0));
    for (t, cn) in clients {
        let mut p = Phase::default();
        p.ev("lock", Val::Str(mutex(cn)))
            .ev("signal", Val::Str(answer(cn)))
            .wait(&wake(cn), &mutex(cn))
            .ev("unlock", Val::Str(mutex(cn)))
            .ev("runtime", per_round(t, s.rounds));
        let mut phases = Obj::default();
        phases.put("rounds", p.done(s.rounds));
        tasks.put(cn.clone(), thread(t, phases, CLIENT_DELAY_US));
    }
}

/// A star of two or more clients, in rounds that may lose a wakeup but never stall: the hub
/// runs, wakes every client under one mutex and waits for the first answer; a client answers
/// and waits in one critical section, then runs. A client still running when the hub wakes
/// the others misses that wakeup and answers later, so the hub always has an answer to wait
/// for. Rounds run until `global.duration`, as long as the recording.
fn broadcast_star(
    s: &Star,
    by: &HashMap<u32, &TaskShape>,
    name: &HashMap<u32, String>,
    tasks: &mut Obj,
) {
    let (Some(h), Some(hn)) = (by.get(&s.hub), name.get(&s.hub)) else {
        return;
    };
    let mutex = format!("m-{hn}");
    let answer = format!("a-{hn}");
    let wake = |cn: &str| format!("c-{cn}");
    let mut rounds = Phase::default();
    rounds
        .ev("runtime", per_round(h, s.rounds))
        .ev("lock", Val::Str(mutex.clone()));
    for c in &s.clients {
        if let Some(cn) = name.get(c) {
            rounds.ev("signal", Val::Str(wake(cn)));
        }
    }
    rounds
        .wait(&answer, &mutex)
        .ev("unlock", Val::Str(mutex.clone()));
    let mut phases = Obj::default();
    phases.put("rounds", rounds.forever());
    tasks.put(hn.clone(), thread(h, phases, 0));
    for c in &s.clients {
        let (Some(t), Some(cn)) = (by.get(c), name.get(c)) else {
            continue;
        };
        let mut p = Phase::default();
        p.ev("lock", Val::Str(mutex.clone()))
            .ev("signal", Val::Str(answer.clone()))
            .wait(&wake(cn), &mutex)
            .ev("unlock", Val::Str(mutex.clone()))
            .ev("runtime", per_round(t, s.rounds));
        let mut phases = Obj::default();
        phases.put("rounds", p.forever());
        tasks.put(cn.clone(), thread(t, phases, CLIENT_DELAY_US));
    }
}

/// A task outside any star: four phases, one per quartile of its run and sleep lengths.
fn alone(t: &TaskShape, n: &str, tasks: &mut Obj) {
    let (r, z) = (&t.run, &t.sleep);
    let quarts = [
        (r.p10_us, z.p10_us),
        (r.p25_us.midpoint(r.p50_us), z.p25_us.midpoint(z.p50_us)),
        (r.p50_us.midpoint(r.p75_us), z.p50_us.midpoint(z.p75_us)),
        (r.p90_us, z.p90_us),
    ];
    let loops = (t.woken / 4).max(1);
    let mut phases = Obj::default();
    for (i, (run, sleep)) in quarts.into_iter().enumerate() {
        let mut p = Phase::default();
        p.ev("runtime", us(run)).ev("sleep", us(sleep));
        phases.put(format!("q{}", i + 1), p.done(loops));
    }
    tasks.put(n.to_owned(), thread(t, phases, 0));
}

pub fn rt_app(shape: &Shape) -> RtApp {
    let p = plan(shape);
    let by: HashMap<u32, &TaskShape> = shape.tasks.iter().map(|t| (t.pid, t)).collect();
    let name = names(shape);
    let mut tasks = Obj::default();
    for s in &p.stars {
        if s.clients.len() > 1 {
            broadcast_star(s, &by, &name, &mut tasks);
        } else {
            star(s, &by, &name, &mut tasks);
        }
    }
    for pid in &p.alone {
        if let (Some(t), Some(n)) = (by.get(pid), name.get(pid)) {
            alone(t, n, &mut tasks);
        }
    }
    for pid in &p.hogs {
        if let (Some(t), Some(n)) = (by.get(pid), name.get(pid)) {
            let mut ph = Phase::default();
            ph.ev("runtime", us(t.cpu_us));
            let mut phases = Obj::default();
            phases.put("run", ph.done(1));
            tasks.put(n.clone(), thread(t, phases, 0));
        }
    }
    let threads = tasks.0.len();
    let mut global = Obj::default();
    let timed = p.stars.iter().any(|s| s.clients.len() > 1);
    let secs = shape.duration_ns.div_ceil(1_000_000_000).max(1);
    global
        .put(
            "duration",
            Val::Int(if timed {
                i64::try_from(secs).unwrap_or(i64::MAX)
            } else {
                -1
            }),
        )
        .put("calibration", Val::Int(100))
        .put("default_policy", Val::Str("SCHED_OTHER".into()))
        .put("lock_pages", Val::Bool(false))
        .put("logdir", Val::Str("/tmp".into()))
        .put("log_basename", Val::Str("wakeviz-rtapp".into()))
        .put("log_size", Val::Str("disable".into()));
    let mut root = Obj::default();
    root.put("tasks", Val::Obj(tasks))
        .put("global", Val::Obj(global));
    let json = serde_json::to_string_pretty(&root).unwrap_or_default();
    RtApp {
        json,
        threads,
        stars: p.stars.len(),
        notes: notes(shape, &p),
    }
}

fn notes(shape: &Shape, p: &Plan) -> Vec<String> {
    let mut n = Vec::new();
    let in_star: HashSet<u32> = p
        .stars
        .iter()
        .flat_map(|s| std::iter::once(s.hub).chain(s.clients.iter().copied()))
        .collect();
    let (mut sync, mut calls, mut lost) = (0u64, 0u64, 0u64);
    for t in &shape.tasks {
        for w in &t.woken_by {
            if let Some(s) = w.sync {
                sync += s;
                calls += w.count;
            }
            if let Waker::Task(x) = w.waker
                && !(in_star.contains(&x) && in_star.contains(&t.pid))
            {
                lost += w.count;
            }
        }
    }
    if sync > 0 {
        n.push(format!(
            "{sync} of {calls} wakeups carried WF_SYNC; rt-app's futex wakeups never do"
        ));
    }
    if lost > 0 {
        n.push(format!(
            "{lost} wakeups between tasks outside a star are not reproduced (those tasks sleep and run on their own)"
        ));
    }
    if !p.left_out.is_empty() {
        n.push(format!(
            "{} tasks left out (woken fewer than {MIN_WAKEUPS} times, or never blocked)",
            p.left_out.len()
        ));
    }
    if shape.tasks.iter().any(|t| t.nice.is_some_and(|v| v != 0)) {
        n.push(
            "nice values are not set (rt-app 1.0 sets priorities only for real-time policies)"
                .into(),
        );
    }
    n
}
