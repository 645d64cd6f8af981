//! Task names as time-stamped facts. Each ring's drain learns names from the records it reads
//! (a record carries its task's `comm` at that moment) and hands on a name when it changes for
//! that ring, with the time of the record it came from. With several rings, a ring that saw a
//! task only before its rename (an exec, a `prctl(PR_SET_NAME)`) still holds the old name,
//! and its fact may reach the merge after the new one: the one table after the merge keeps the
//! newest fact per task, so a stale name never overwrites a later one.
use wakeviz_core::{
    event::{Comm, TaskName},
    pidmap::PidMap,
};

/// Per task, the newest name fact handed on so far and its time.
#[derive(Default)]
pub(super) struct LatestNames {
    names: PidMap<(u64, Comm)>,
}

impl LatestNames {
    /// Whether `t`, seen at `ts_ns`, is news for the stream: a task not named yet, or a name
    /// newer than the one it has. An older fact (another ring's, behind) is dropped.
    pub fn newer(&mut self, t: TaskName, ts_ns: u64) -> bool {
        match self.names.get_mut(&t.pid) {
            Some((at, _)) if *at > ts_ns => false,
            Some((at, comm)) if *comm == t.comm => {
                *at = ts_ns;
                false
            }
            _ => {
                self.names.insert(t.pid, (ts_ns, t.comm));
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(pid: u32, comm: &str) -> TaskName {
        TaskName {
            pid,
            comm: Comm::new(comm),
        }
    }

    #[test]
    fn a_stale_name_from_a_slower_ring_never_wins() {
        let mut n = LatestNames::default();
        // Ring 1 saw the task renamed at t=200; ring 0's fact from before (t=100) comes later.
        assert!(n.newer(name(7, "wvz-pp"), 200));
        assert!(!n.newer(name(7, "init"), 100));
        // The same name again, from any ring: nothing new.
        assert!(!n.newer(name(7, "wvz-pp"), 300));
        // A later rename is news; the earlier facts stay behind it.
        assert!(n.newer(name(7, "worker"), 400));
        assert!(!n.newer(name(7, "wvz-pp"), 350));
        assert!(n.newer(name(8, "other"), 10));
    }
}
