//! Task filter: restricts every placement and latency figure to the tasks a user is chasing.
//! Matching by name needs the pid -> comm table, which changes as the stream goes on, so answers
//! are cached per pid and dropped when that pid is renamed.
use std::{fmt, str::FromStr};

use serde::Serialize;

use crate::event::TaskTable;
use crate::pidmap::PidMap;

/// Which wakees count.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Filter {
    /// Exactly this pid (the woken task).
    Pid(u32),
    /// Tasks whose comm contains this substring (case-sensitive, as `pgrep` without `-i`).
    Comm(String),
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FilterError {
    #[error("empty task filter")]
    Empty,
    #[error("bad pid in task filter: {0:?}")]
    BadPid(String),
}

impl FromStr for Filter {
    type Err = FilterError;

    /// `pid:123` or a bare number is a pid; `comm:name` or anything else is a comm substring.
    fn from_str(s: &str) -> Result<Self, FilterError> {
        let s = s.trim();
        if s.is_empty() {
            return Err(FilterError::Empty);
        }
        if let Some(p) = s.strip_prefix("pid:") {
            return p
                .trim()
                .parse()
                .map(Self::Pid)
                .map_err(|_| FilterError::BadPid(p.into()));
        }
        if let Some(c) = s.strip_prefix("comm:") {
            return if c.is_empty() {
                Err(FilterError::Empty)
            } else {
                Ok(Self::Comm(c.into()))
            };
        }
        if s.bytes().all(|b| b.is_ascii_digit()) {
            return s
                .parse()
                .map(Self::Pid)
                .map_err(|_| FilterError::BadPid(s.into()));
        }
        Ok(Self::Comm(s.into()))
    }
}

impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Pid(p) => write!(f, "pid:{p}"),
            Self::Comm(c) => write!(f, "comm:{c}"),
        }
    }
}

/// The filter plus its per-pid answer cache.
#[derive(Default)]
pub(crate) struct FilterState {
    filter: Option<Filter>,
    cache: PidMap<bool>,
}

impl FilterState {
    pub(crate) fn set(&mut self, f: Option<Filter>) {
        self.filter = f;
        self.cache.clear();
    }

    pub(crate) fn get(&self) -> Option<&Filter> {
        self.filter.as_ref()
    }

    /// A pid's name changed: its cached answer may be wrong now.
    pub(crate) fn renamed(&mut self, pid: u32) {
        if matches!(self.filter, Some(Filter::Comm(_))) {
            self.cache.remove(&pid);
        }
    }

    #[inline]
    pub(crate) fn matches(&mut self, pid: u32, tasks: &TaskTable) -> bool {
        match &self.filter {
            None => true,
            Some(Filter::Pid(p)) => *p == pid,
            Some(Filter::Comm(c)) => *self.cache.entry(pid).or_insert_with(|| {
                tasks
                    .get(pid)
                    .is_some_and(|n| n.as_str().contains(c.as_str()))
            }),
        }
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
        });
        let mut s = FilterState::default();
        s.set(Some(Filter::Comm("worker".into())));
        assert!(s.matches(5, &t) && !s.matches(6, &t));
        t.learn(TaskName {
            pid: 6,
            comm: Comm::new("worker2"),
        });
        s.renamed(6);
        assert!(s.matches(6, &t));
    }
}
