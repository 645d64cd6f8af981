//! Which tasks an answer is about. The rule is the same everywhere: a wakeup is in scope when
//! its wakee is. Two filters apply: the run's scope, fixed when the fold starts (`--scope`, or
//! the scope a recording was made with: the `-- CMD` tree for a `-- CMD` capture), which every
//! published figure follows; and the dashboard's `/` view, which narrows the figures shown
//! within that scope and can change at any time.
//!
//! Matching by name needs the pid -> comm table, which changes as the stream goes on, so answers
//! are cached per pid and dropped when that pid is renamed. A process tree is followed through
//! `sched_wakeup_new`, which the kernel fires in the context of the task that forked: the new
//! task joins the tree of its creator (exec keeps the pid, so it stays).
use std::{fmt, str::FromStr};

use serde::Serialize;

use crate::event::TaskTable;
use crate::pidmap::PidMap;

/// Which wakees count.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Filter {
    /// Exactly this pid (the woken task).
    Pid(u32),
    /// Every thread of this process (thread-group id), as the probes read it: unknown, so
    /// matching nothing, in a capture by classic tracepoints, whose records carry no tgid.
    Process(u32),
    /// Tasks whose comm contains this substring (case-sensitive, as `pgrep` without `-i`).
    Comm(String),
    /// The tasks of the processes in this cgroup v2, by its id (the inode number of its
    /// directory), as the capture read each process's cgroup when it first saw it: the
    /// directory itself, not its descendants (cgroup v2 keeps processes in leaves).
    Cgroup(u64),
    /// This task and every task it, or a task of the tree, creates during the capture.
    Tree(u32),
    /// The tasks wakeviz's own threads create during the capture (the `-- CMD` it runs) and
    /// every task they create in turn.
    Command,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FilterError {
    #[error("empty task filter")]
    Empty,
    #[error("bad pid in task filter: {0:?}")]
    BadPid(String),
    #[error("bad cgroup in task filter: {0:?} (cgroup:ID, or a path where the capture runs)")]
    BadCgroup(String),
}

impl FromStr for Filter {
    type Err = FilterError;

    /// `pid:123` or a bare number is a pid; `tgid:123` a process; `tree:123` a process tree;
    /// `cmd` the `-- CMD` tree; `comm:name` or anything else is a comm substring.
    fn from_str(s: &str) -> Result<Self, FilterError> {
        let s = s.trim();
        if s.is_empty() {
            return Err(FilterError::Empty);
        }
        let pid = |p: &str| {
            p.trim()
                .parse::<u32>()
                .map_err(|_| FilterError::BadPid(p.into()))
        };
        if s == "cmd" {
            return Ok(Self::Command);
        }
        if let Some(p) = s.strip_prefix("tree:") {
            return pid(p).map(Self::Tree);
        }
        if let Some(p) = s.strip_prefix("pid:") {
            return pid(p).map(Self::Pid);
        }
        if let Some(p) = s.strip_prefix("tgid:") {
            return pid(p).map(Self::Process);
        }
        if let Some(c) = s.strip_prefix("cgroup:") {
            return c
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|&id| id != 0)
                .map(Self::Cgroup)
                .ok_or_else(|| FilterError::BadCgroup(c.into()));
        }
        if let Some(c) = s.strip_prefix("comm:") {
            return if c.is_empty() {
                Err(FilterError::Empty)
            } else {
                Ok(Self::Comm(c.into()))
            };
        }
        if s.bytes().all(|b| b.is_ascii_digit()) {
            return pid(s).map(Self::Pid);
        }
        Ok(Self::Comm(s.into()))
    }
}

impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Pid(p) => write!(f, "pid:{p}"),
            Self::Process(p) => write!(f, "tgid:{p}"),
            Self::Comm(c) => write!(f, "comm:{c}"),
            Self::Tree(p) => write!(f, "tree:{p}"),
            Self::Cgroup(id) => write!(f, "cgroup:{id}"),
            Self::Command => f.write_str("cmd"),
        }
    }
}

/// `--scope`: every task (`all`), or the tasks a filter matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scope(pub Option<Filter>);

impl FromStr for Scope {
    type Err = ScopeError;

    fn from_str(s: &str) -> Result<Self, ScopeError> {
        if s.trim() == "all" {
            return Ok(Self(None));
        }
        s.parse().map(|f| Self(Some(f))).map_err(ScopeError)
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}: expected all, cmd, tree:PID, tgid:PID, pid:PID, cgroup:ID or comm:TEXT")]
pub struct ScopeError(FilterError);

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            None => f.write_str("all"),
            Some(x) => write!(f, "{x}"),
        }
    }
}

impl Scope {
    /// The scope a fold of `run` uses: `given` when there is one, else the recording's.
    pub fn apply(given: Option<&Self>, run: &mut crate::run::RunMeta) {
        if let Some(s) = given {
            run.scope = s.0.clone();
        }
    }
}

impl Filter {
    /// The rule in words, for the reports.
    pub fn describe(&self) -> String {
        match self {
            Self::Pid(p) => format!("wakeups of pid {p}"),
            Self::Process(p) => format!("wakeups of the threads of process {p} (tgid)"),
            Self::Comm(c) => format!("wakeups of tasks whose name contains {c:?}"),
            Self::Tree(p) => format!("wakeups of pid {p} and the tasks its tree creates"),
            Self::Cgroup(id) => format!(
                "wakeups of the tasks of cgroup {id} (its processes as first seen; not its descendants)"
            ),
            Self::Command => {
                "wakeups of the -- CMD process tree (the tasks wakeviz started and their descendants)"
                    .into()
            }
        }
    }
}

/// One filter plus its per-pid answer cache and, for a tree, its members.
#[derive(Default)]
struct Matcher {
    filter: Option<Filter>,
    cache: PidMap<bool>,
    /// Members of a tree filter (bounded like every per-pid map).
    tree: PidMap<()>,
}

impl Matcher {
    fn new(filter: Option<Filter>) -> Self {
        let mut m = Self {
            filter,
            ..Self::default()
        };
        if let Some(Filter::Tree(p)) = m.filter {
            m.tree.insert(p, ());
        }
        m
    }

    /// `parent` created `child`; `own` tells wakeviz's threads.
    fn forked(&mut self, parent: u32, child: u32, own: &[u32]) {
        let joins = match self.filter {
            Some(Filter::Tree(_)) => self.tree.contains_key(&parent),
            Some(Filter::Command) => {
                self.tree.contains_key(&parent)
                    || (own.binary_search(&parent).is_ok() && own.binary_search(&child).is_err())
            }
            _ => false,
        };
        if joins {
            self.tree.insert(child, ());
        }
    }

    #[inline]
    fn matches(&mut self, pid: u32, tasks: &TaskTable) -> bool {
        match &self.filter {
            None => true,
            Some(Filter::Pid(p)) => *p == pid,
            Some(Filter::Tree(_) | Filter::Command) => self.tree.contains_key(&pid),
            Some(Filter::Process(g)) => *self
                .cache
                .entry(pid)
                .or_insert_with(|| tasks.tgid(pid) == Some(*g)),
            Some(Filter::Cgroup(id)) => *self
                .cache
                .entry(pid)
                .or_insert_with(|| tasks.cgroup(pid) == Some(*id)),
            Some(Filter::Comm(c)) => *self.cache.entry(pid).or_insert_with(|| {
                tasks
                    .get(pid)
                    .is_some_and(|n| n.as_str().contains(c.as_str()))
            }),
        }
    }

    /// A pid's name or process changed: a cached answer may be wrong now.
    fn renamed(&mut self, pid: u32) {
        if matches!(
            self.filter,
            Some(Filter::Comm(_) | Filter::Process(_) | Filter::Cgroup(_))
        ) {
            self.cache.remove(&pid);
        }
    }

    fn evicted(&self) -> u64 {
        self.cache.evicted() + self.tree.evicted()
    }
}

/// The run's scope and the dashboard's view within it.
#[derive(Default)]
pub(crate) struct FilterState {
    scope: Matcher,
    view: Matcher,
    /// wakeviz's threads as recorded (sorted), whatever `--include-self` says: a `-- CMD`
    /// tree starts with the tasks they create.
    own: Vec<u32>,
}

impl FilterState {
    pub(crate) fn new(scope: Option<Filter>, own_tids: &[u32]) -> Self {
        let mut own = own_tids.to_vec();
        own.sort_unstable();
        Self {
            scope: Matcher::new(scope),
            view: Matcher::default(),
            own,
        }
    }

    /// Sets the view; the scope stays. A tree view follows forks from here on.
    pub(crate) fn set(&mut self, f: Option<Filter>) {
        self.view = Matcher::new(f);
    }

    /// The view (the dashboard's `/` filter).
    pub(crate) fn get(&self) -> Option<&Filter> {
        self.view.filter.as_ref()
    }

    pub(crate) fn scope(&self) -> Option<&Filter> {
        self.scope.filter.as_ref()
    }

    /// A pid's name changed: its cached answer may be wrong now.
    pub(crate) fn renamed(&mut self, pid: u32) {
        self.scope.renamed(pid);
        self.view.renamed(pid);
    }

    /// A `sched_wakeup_new`: `parent` (the task running when it fired) created `child`.
    #[inline]
    pub(crate) fn forked(&mut self, parent: u32, child: u32) {
        self.scope.forked(parent, child, &self.own);
        self.view.forked(parent, child, &self.own);
    }

    /// In the run's scope.
    #[inline]
    pub(crate) fn in_scope(&mut self, pid: u32, tasks: &TaskTable) -> bool {
        self.scope.matches(pid, tasks)
    }

    /// In the scope and the view.
    #[inline]
    pub(crate) fn matches(&mut self, pid: u32, tasks: &TaskTable) -> bool {
        self.scope.matches(pid, tasks) && self.view.matches(pid, tasks)
    }

    /// Entries the per-pid tables dropped over their budget.
    pub(crate) fn evicted(&self) -> u64 {
        self.scope.evicted() + self.view.evicted()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Comm, TaskName};

    #[test]
    fn parse_and_match() {
        assert_eq!("123".parse(), Ok(Filter::Pid(123)));
        assert_eq!("pid: 7".parse(), Ok(Filter::Pid(7)));
        assert_eq!("comm:123".parse(), Ok(Filter::Comm("123".into())));
        assert_eq!("nginx".parse(), Ok(Filter::Comm("nginx".into())));
        assert_eq!("".parse::<Filter>(), Err(FilterError::Empty));
        assert!("pid:x".parse::<Filter>().is_err());
        let mut t = TaskTable::default();
        t.learn(TaskName {
            pid: 5,
            comm: Comm::new("nginx: worker"),
            tgid: 0,
            cgroup: 0,
        });
        let mut s = FilterState::default();
        s.set(Some(Filter::Comm("worker".into())));
        assert!(s.matches(5, &t) && !s.matches(6, &t));
        t.learn(TaskName {
            pid: 6,
            comm: Comm::new("worker2"),
            tgid: 0,
            cgroup: 0,
        });
        s.renamed(6);
        assert!(s.matches(6, &t));
    }

    #[test]
    fn a_process_is_its_threads_once_their_tgid_is_known() {
        assert_eq!("tgid:40".parse(), Ok(Filter::Process(40)));
        assert_eq!(Filter::Process(40).to_string(), "tgid:40");
        let mut t = TaskTable::default();
        let fact = |pid, tgid| TaskName {
            pid,
            comm: Comm::new("w"),
            tgid,
            cgroup: 0,
        };
        t.learn(fact(40, 40));
        t.learn(fact(41, 0));
        let mut s = FilterState::new(Some(Filter::Process(40)), &[]);
        assert!(s.in_scope(40, &t) && !s.in_scope(41, &t));
        // 41's process becomes known: the cached "no" is dropped with the change.
        assert!(t.learn(fact(41, 40)));
        s.renamed(41);
        assert!(s.in_scope(41, &t));
        // A record without a tgid keeps it.
        assert!(!t.learn(fact(41, 0)));
        assert_eq!(t.tgid(41), Some(40));
    }

    #[test]
    fn a_cgroup_is_the_tasks_its_processes_were_seen_in() {
        assert_eq!("cgroup:4242".parse(), Ok(Filter::Cgroup(4242)));
        assert_eq!(Filter::Cgroup(4242).to_string(), "cgroup:4242");
        for bad in [
            "cgroup:",
            "cgroup:0",
            "cgroup:/sys/fs/cgroup/x",
            "cgroup:-1",
        ] {
            assert!(
                matches!(bad.parse::<Filter>(), Err(FilterError::BadCgroup(_))),
                "{bad}"
            );
        }
        let mut t = TaskTable::default();
        let fact = |pid, cgroup| TaskName {
            pid,
            comm: Comm::new("w"),
            tgid: pid,
            cgroup,
        };
        t.learn(fact(50, 4242));
        t.learn(fact(51, 77));
        t.learn(fact(52, 0));
        let mut s = FilterState::new(Some(Filter::Cgroup(4242)), &[]);
        assert!(s.in_scope(50, &t) && !s.in_scope(51, &t) && !s.in_scope(52, &t));
        // 52's cgroup becomes known: the cached "no" goes with the change; a fact without one
        // keeps it.
        assert!(t.learn(fact(52, 4242)));
        s.renamed(52);
        assert!(s.in_scope(52, &t));
        assert!(!t.learn(fact(52, 0)));
        assert_eq!(t.cgroup(52), Some(4242));
    }

    #[test]
    fn trees_follow_forks() {
        assert_eq!("tree:9".parse(), Ok(Filter::Tree(9)));
        assert_eq!("cmd".parse(), Ok(Filter::Command));
        assert_eq!(Filter::Tree(9).to_string(), "tree:9");
        assert_eq!(Filter::Command.to_string(), "cmd");
        let t = TaskTable::default();
        let mut s = FilterState::new(Some(Filter::Tree(9)), &[]);
        assert!(s.in_scope(9, &t) && !s.in_scope(10, &t));
        s.forked(9, 10);
        s.forked(10, 11);
        s.forked(3, 12);
        assert!(s.in_scope(10, &t) && s.in_scope(11, &t) && !s.in_scope(12, &t));
        // The -- CMD tree: what wakeviz's threads (1, 2) create, not the threads themselves.
        let mut s = FilterState::new(Some(Filter::Command), &[2, 1]);
        s.forked(1, 2);
        s.forked(1, 50);
        s.forked(50, 51);
        s.forked(7, 52);
        assert!(!s.in_scope(1, &t) && !s.in_scope(2, &t));
        assert!(s.in_scope(50, &t) && s.in_scope(51, &t) && !s.in_scope(52, &t));
        // A view narrows the scope; it never widens it.
        s.set(Some(Filter::Pid(52)));
        assert!(!s.matches(52, &t) && !s.matches(50, &t));
        s.set(Some(Filter::Pid(51)));
        assert!(s.matches(51, &t) && s.in_scope(50, &t));
    }
}
