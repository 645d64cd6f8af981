//! Task names as `ProcessTree` packets, the way Perfetto's process scraper reports them: what
//! the UI and trace_processor's `thread` table show, above the comms inside sched events.
use perfetto_protos::{
    process_tree::{ProcessTree, process_tree::Thread},
    trace_packet::TracePacket,
};
use wakeviz_core::event::TaskName;

/// One packet naming `tasks` at `ts` (BOOTTIME). A recording has no thread-group ids, so each
/// task is given as the main thread of its own process (tgid = tid); the idle task (pid 0) is
/// named per CPU by the sched events themselves and left out.
pub fn process_tree<'a>(
    tasks: impl IntoIterator<Item = &'a TaskName>,
    ts: u64,
    sequence: u32,
) -> Option<TracePacket> {
    let threads: Vec<Thread> = tasks
        .into_iter()
        .filter(|t| t.pid != 0)
        .filter_map(|t| {
            let tid = i32::try_from(t.pid).ok()?;
            let mut th = Thread::new();
            th.set_tid(tid);
            th.set_tgid(tid);
            th.set_name(t.comm.as_str().into_owned());
            Some(th)
        })
        .collect();
    if threads.is_empty() {
        return None;
    }
    let mut tree = ProcessTree::new();
    tree.threads = threads;
    let mut p = TracePacket::new();
    p.set_timestamp(ts);
    p.set_trusted_packet_sequence_id(sequence);
    p.set_process_tree(tree);
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wakeviz_core::event::Comm;

    #[test]
    fn names_every_task_but_idle() {
        let t = |pid, s| TaskName {
            pid,
            comm: Comm::new(s),
        };
        let tasks = [t(0, "swapper"), t(42, "ping"), t(43, "pong")];
        let p = process_tree(&tasks, 77, 2).unwrap();
        assert_eq!(p.timestamp(), 77);
        let got: Vec<(i32, i32, &str)> = p
            .process_tree()
            .threads
            .iter()
            .map(|th| (th.tid(), th.tgid(), th.name()))
            .collect();
        assert_eq!(got, [(42, 42, "ping"), (43, 43, "pong")]);
        assert!(process_tree(&tasks[..1], 1, 1).is_none());
    }
}
