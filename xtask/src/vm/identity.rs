//! Task identity against the kernel's trace: every workload thread's process (tgid) in the
//! recording equals the one the kernel's ftrace gives it (`record-tgid`: each trace line names
//! the running task's process), and the workloads' multi-threaded processes are seen as such.
use std::collections::{BTreeMap, BTreeSet};

use super::check::{Findings, PREFIX, Stream};

/// pid -> tgid as each source states it, for the workload threads (final name `wvz-*`).
fn kernel_tgids(truth: &Stream) -> BTreeMap<u32, u32> {
    let names = truth.final_names();
    truth
        .events
        .iter()
        .filter_map(|e| Some((e.waker_pid?, e.tgid?)))
        .filter(|(pid, _)| names.get(pid).is_some_and(|n| n.starts_with(PREFIX)))
        .collect()
}

fn recorded_tgids(d: &Stream) -> BTreeMap<u32, u32> {
    let names = d.final_names();
    d.events
        .iter()
        .filter_map(|e| Some((e.pid, e.tgid?)))
        .filter(|(pid, _)| names.get(pid).is_some_and(|n| n.starts_with(PREFIX)))
        .collect()
}

/// Every workload thread both sources place in a process is in the same one, and at least one
/// process of several threads is among them (the ping-pong workloads run two threads each).
pub fn check(f: &mut Findings, recorded: &Stream, truth: &Stream) {
    let (k, w) = (kernel_tgids(truth), recorded_tgids(recorded));
    let both: Vec<(u32, u32, u32)> = k
        .iter()
        .filter_map(|(pid, kt)| Some((*pid, *kt, *w.get(pid)?)))
        .collect();
    let wrong: Vec<String> = both
        .iter()
        .filter(|(_, kt, wt)| kt != wt)
        .map(|(pid, kt, wt)| format!("{pid}: ftrace {kt}, wakeviz {wt}"))
        .collect();
    let mut threads: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
    for (pid, kt, _) in &both {
        threads.entry(*kt).or_default().insert(*pid);
    }
    let multi = threads.values().filter(|t| t.len() > 1).count();
    f.line(format!(
        "  task identity: {} workload threads in {} processes ({multi} of several threads) \
         compared with ftrace's record-tgid; {} differ ({} threads had a tgid in ftrace, {} in \
         the recording)",
        both.len(),
        threads.len(),
        wrong.len(),
        k.len(),
        w.len()
    ));
    if !wrong.is_empty() {
        f.fail(format!(
            "tgid differs from the kernel's: {}",
            wrong.iter().take(5).cloned().collect::<Vec<_>>().join("; ")
        ));
    }
    if multi == 0 {
        f.fail("no workload process of several threads was compared with ftrace's tgids");
    }
}
