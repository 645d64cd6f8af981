//! The simulated tasks: their roles from [`rtapp::plan`], their recorded lengths, their state.
use std::collections::HashMap;

use crate::workload::{Dist, Shape, TaskShape, Waker, rtapp};

pub(super) enum Role {
    /// `answer_wakes`: the chance that an answer other than a round's last wakes the hub if it
    /// sleeps, from the recording ([`answer_wakes`]); the last answer always does.
    Hub {
        clients: Vec<u32>,
        pending: usize,
        answer_wakes: f64,
    },
    Client {
        hub: u32,
    },
    Alone,
    Hog,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum St {
    Sleeping,
    Waiting,
    Running,
}

pub(super) struct Task {
    pub(super) role: Role,
    pub(super) run: Dist,
    pub(super) sleep: Dist,
    pub(super) st: St,
    pub(super) cpu: u32,
    pub(super) allowed: Option<Vec<u32>>,
    /// Share of its recorded wakeups that carried `WF_SYNC`.
    pub(super) sync: f64,
    pub(super) left_ns: u64,
    pub(super) since_ns: u64,
    /// Wakeups it still issues (a hub: rounds; a task alone: timer wakeups); 0 = done.
    pub(super) budget: u64,
}

/// The simulated tasks, by their role in [`rtapp::plan`]; first CPUs spread in turn.
pub(super) fn build(shape: &Shape, cpus: &[u32]) -> HashMap<u32, Task> {
    let plan = rtapp::plan(shape);
    let by: HashMap<u32, &TaskShape> = shape.tasks.iter().map(|t| (t.pid, t)).collect();
    let mut out = HashMap::new();
    let mut next = 0usize;
    let mut add = |pid: u32, role: Role, budget: u64, out: &mut HashMap<u32, Task>| {
        let Some(t) = by.get(&pid) else { return };
        let cpu = t
            .home_cpu
            .filter(|c| cpus.contains(c))
            .or_else(|| t.allowed_cpus.as_ref().and_then(|a| a.first().copied()))
            .unwrap_or(cpus[next % cpus.len()]);
        next += 1;
        let (sync, n) = t
            .woken_by
            .iter()
            .filter_map(|w| w.sync.map(|s| (s, w.count)))
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        out.insert(
            pid,
            Task {
                role,
                run: t.run.clone(),
                sleep: t.sleep.clone(),
                st: St::Sleeping,
                cpu,
                allowed: t.allowed_cpus.clone(),
                sync: if n > 0 { sync as f64 / n as f64 } else { 0.0 },
                left_ns: 0,
                since_ns: 0,
                budget,
            },
        );
    };
    for st in &plan.stars {
        let answer_wakes = by.get(&st.hub).map_or(1.0, |h| answer_wakes(h, st));
        add(
            st.hub,
            Role::Hub {
                clients: st.clients.clone(),
                pending: 0,
                answer_wakes,
            },
            st.rounds,
            &mut out,
        );
        for &c in &st.clients {
            add(c, Role::Client { hub: st.hub }, 0, &mut out);
        }
    }
    for &p in &plan.alone {
        let n = by.get(&p).map_or(0, |t| t.woken);
        add(p, Role::Alone, n, &mut out);
    }
    for &p in &plan.hogs {
        add(p, Role::Hog, 0, &mut out);
    }
    out
}

/// How often a client's answer that is not its round's last woke the hub in the recording: a
/// hub that reads its answers as they come is woken by nearly each; one still busy with the
/// round when they arrive finds them waiting and is woken once. Its wakeups by its clients,
/// less one per round (the last answer's), over the other answers.
fn answer_wakes(hub: &TaskShape, st: &rtapp::Star) -> f64 {
    let by_clients: u64 = hub
        .woken_by
        .iter()
        .filter(|w| matches!(w.waker, Waker::Task(p) if st.clients.contains(&p)))
        .map(|w| w.count)
        .sum();
    let others = st.rounds * (st.clients.len() as u64).saturating_sub(1);
    if others == 0 {
        return 1.0;
    }
    (by_clients.saturating_sub(st.rounds) as f64 / others as f64).clamp(0.0, 1.0)
}
