//! Task names as `ProcessTree` packets, the way Perfetto's process scraper reports them: what
//! the UI and trace_processor's `thread` and `process` tables show, above the comms inside
//! sched events.
use perfetto_protos::{
    process_tree::{
        ProcessTree,
        process_tree::{Process, Thread},
    },
    trace_packet::TracePacket,
};
use wakeviz_core::event::TaskName;

/// One packet naming `tasks` at `ts` (BOOTTIME). Each thread is put in its process (its
/// recorded tgid); a task whose tgid the recording does not know (a classic-tracepoint
/// capture, an older recording) is given as the main thread of its own process (tgid = tid).
/// A process leader among `tasks` is also given as a process, named by its comm, with the
/// process that forked it (`parent_tgid`) where the recording saw the fork. The idle task
/// (pid 0) is named per CPU by the sched events themselves and left out.
pub fn process_tree<'a>(
    tasks: impl IntoIterator<Item = &'a TaskName>,
    parent_tgid: impl Fn(u32) -> Option<u32>,
    ts: u64,
    sequence: u32,
) -> Option<TracePacket> {
    let mut tree = ProcessTree::new();
    for t in tasks.into_iter().filter(|t| t.pid != 0) {
        let Ok(tid) = i32::try_from(t.pid) else {
            continue;
        };
        let tgid = if t.tgid == 0 {
            tid
        } else {
            i32::try_from(t.tgid).unwrap_or(tid)
        };
        let name = t.comm.as_str().into_owned();
        if tgid == tid {
            let mut p = Process::new();
            p.set_pid(tid);
            if let Some(pp) = parent_tgid(t.pid).and_then(|p| i32::try_from(p).ok()) {
                p.set_ppid(pp);
            }
            p.cmdline = vec![name.clone()];
            p.set_cmdline_is_comm(true);
            tree.processes.push(p);
        }
        let mut th = Thread::new();
        th.set_tid(tid);
        th.set_tgid(tgid);
        th.set_name(name);
        tree.threads.push(th);
    }
    if tree.threads.is_empty() {
        return None;
    }
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
    fn names_every_task_but_idle_in_its_process() {
        let t = |pid, s, tgid| TaskName {
            pid,
            comm: Comm::new(s),
            tgid,
            cgroup: 0,
        };
        let tasks = [
            t(0, "swapper", 0),
            t(42, "ping", 42),
            t(43, "pong", 42),
            t(50, "old", 0),
        ];
        let p = process_tree(&tasks, |pid| (pid == 42).then_some(7), 77, 2).unwrap();
        assert_eq!(p.timestamp(), 77);
        let tree = p.process_tree();
        let threads: Vec<(i32, i32, &str)> = tree
            .threads
            .iter()
            .map(|th| (th.tid(), th.tgid(), th.name()))
            .collect();
        assert_eq!(
            threads,
            [(42, 42, "ping"), (43, 42, "pong"), (50, 50, "old")]
        );
        let procs: Vec<(i32, i32, &[String])> = tree
            .processes
            .iter()
            .map(|p| (p.pid(), p.ppid(), p.cmdline.as_slice()))
            .collect();
        assert_eq!(
            procs,
            [
                (42, 7, &["ping".to_string()][..]),
                (50, 0, &["old".to_string()][..])
            ]
        );
        assert!(process_tree(&tasks[..1], |_| None, 1, 1).is_none());
    }
}
