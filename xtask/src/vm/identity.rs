//! Task identity against the kernel's trace: every workload thread's process (tgid) in the
//! recording equals the one the kernel's ftrace gives it (`record-tgid`: each trace line names
//! the running task's process), and the workloads' multi-threaded processes are seen as such.
use std::collections::{BTreeMap, BTreeSet};

use super::check::{Findings, PREFIX, Stream};

/// pid -> tgid of the workload threads (final name `wvz-*`) as `source` states it; `of` gives an
/// event's (pid, tgid) where it names one.
fn workload_tgids(
    source: &Stream,
    of: impl Fn(&super::check::Ev) -> Option<(u32, u32)>,
) -> BTreeMap<u32, u32> {
    let names = source.final_names();
    source
        .events
        .iter()
        .filter_map(of)
        .filter(|(pid, _)| names.get(pid).is_some_and(|n| n.starts_with(PREFIX)))
        .collect()
}

/// Every workload thread both sources place in a process is in the same one, and at least one
/// process of several threads is among them (the ping-pong workloads run two threads each).
pub fn check(f: &mut Findings, recorded: &Stream, truth: &Stream) {
    // ftrace names the running task's process; the dump, the event's task's.
    let k = workload_tgids(truth, |e| Some((e.waker_pid?, e.tgid?)));
    let w = workload_tgids(recorded, |e| Some((e.pid, e.tgid?)));
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
