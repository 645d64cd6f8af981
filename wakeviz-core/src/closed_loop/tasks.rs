//! The simulated tasks: their roles from [`rtapp::plan`], their recorded lengths, their state.
use std::collections::HashMap;

use crate::workload::{Dist, Shape, TaskShape, rtapp};

pub(super) enum Role {
    Hub { clients: Vec<u32>, pending: usize },
    Client { hub: u32 },
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
        add(
            st.hub,
            Role::Hub {
                clients: st.clients.clone(),
                pending: 0,
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
