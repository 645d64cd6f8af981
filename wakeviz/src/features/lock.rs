//! One lock for the kernel settings wakeviz changes, so two runs cannot interleave (the second
//! would take the first one's setting for the original and "restore" it for good).
//!
//! The lock is `flock(2)` on a file ([`path`]): the kernel drops it when the holder dies,
//! however it dies. The file also records who holds it and the ORIGINAL value of every setting
//! before it is changed, and is emptied only once they are all back: a run that could not
//! restore (SIGKILL, a reset, a failed write) leaves that record behind, and the next run that
//! takes the lock compares it with the kernel's values to find what was left changed.
use std::{
    fs::{File, OpenOptions},
    io::{Read as _, Seek as _, SeekFrom, Write as _},
    os::{fd::AsRawFd as _, unix::fs::OpenOptionsExt as _},
    path::PathBuf,
};

use serde::{Deserialize, Serialize};

use super::{FeatureError, Store, token};

/// Where the lock lives for the kernel's own features file.
pub const DEFAULT_PATH: &str = "/run/wakeviz/settings.lock";
/// Overrides [`DEFAULT_PATH`] (and the stand-in's own lock), for tests and unusual layouts.
pub const ENV: &str = "WAKEVIZ_SETTINGS_LOCK";
/// Most read from a lock file (its record is a few hundred bytes).
const READ_BOUND: u64 = 64 << 10;

/// The lock file for `store`: the kernel's features share one machine-wide lock; a stand-in
/// file (`--sched-features-file`) has its own beside it, so tests on separate stand-ins never
/// contend.
pub fn path(store: &Store) -> PathBuf {
    if let Some(p) = std::env::var_os(ENV).filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    match store {
        Store::Debugfs(_) => PathBuf::from(DEFAULT_PATH),
        Store::Emulated(p) => {
            let mut s = p.as_os_str().to_owned();
            s.push(".wakeviz-lock");
            PathBuf::from(s)
        }
    }
}

/// What the lock file holds while settings are changed.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Record {
    pub pid: u32,
    pub command: String,
    /// When the holder took the lock, UTC.
    pub started: String,
    /// The features file the settings were written to.
    pub store: PathBuf,
    /// Each feature about to be changed, with the value it had before.
    pub original: Vec<Original>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Original {
    pub feature: String,
    pub was_on: bool,
}

impl Record {
    /// `pid 123 (`wakeviz --record t.wvz ...`), since 2026-12-04 22:01:02 UTC`
    pub fn holder(&self) -> String {
        format!(
            "pid {} (`{}`), since {}",
            self.pid, self.command, self.started
        )
    }
}

/// A setting a run left changed: its feature, the value to put back, the command that does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leftover {
    pub feature: String,
    pub was_on: bool,
}

impl Leftover {
    pub fn token(&self) -> String {
        token(&self.feature, self.was_on)
    }
}

/// The exact shell command that puts `left` back in `store`.
pub fn restore_command(store: &Store, left: &[Leftover]) -> String {
    left.iter()
        .map(|l| format!("echo {} > {}", l.token(), store.path().display()))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The lock, held until dropped (closing the file releases it).
#[derive(Debug)]
pub struct Lock {
    file: File,
    path: PathBuf,
    record: Record,
}

impl Lock {
    /// Takes the lock without waiting: a lock held by another run is [`FeatureError::Busy`],
    /// with the holder as its record names it.
    pub fn acquire(store: &Store) -> Result<Self, FeatureError> {
        let path = path(store);
        let err = |why: std::io::Error| FeatureError::Lock {
            path: path.clone(),
            why,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(err)?;
        }
        // Never through a symbolic link, readable by root alone; O_CLOEXEC (std's default)
        // keeps it out of CMD, so the lock ends with wakeviz, never with what it started.
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(err)?;
        // SAFETY: flock on a descriptor we own; no memory is involved.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let why = std::io::Error::last_os_error();
            if why.raw_os_error() == Some(libc::EWOULDBLOCK) {
                let holder = read_record(&mut file)
                    .map_or_else(|| "another wakeviz run".to_string(), |r| r.holder());
                return Err(FeatureError::Busy { path, holder });
            }
            return Err(err(why));
        }
        let previous = read_record(&mut file).unwrap_or_default();
        Ok(Self {
            file,
            path,
            record: previous,
        })
    }

    /// The record a previous holder left behind (empty when it restored everything).
    pub fn previous(&self) -> &Record {
        &self.record
    }

    /// The settings the previous holder left changed: those whose value now differs from the
    /// original it recorded.
    pub fn leftovers(&self, current: &[(String, bool)]) -> Vec<Leftover> {
        self.record
            .original
            .iter()
            .filter(|o| {
                current
                    .iter()
                    .any(|(n, on)| *n == o.feature && *on != o.was_on)
            })
            .map(|o| Leftover {
                feature: o.feature.clone(),
                was_on: o.was_on,
            })
            .collect()
    }

    /// Records this run as the holder, with the originals of what it is about to change;
    /// written and synced before the first change, so a crash at any point leaves it behind.
    pub fn record(&mut self, store: &Store, original: Vec<Original>) -> Result<(), FeatureError> {
        self.record = Record {
            pid: std::process::id(),
            command: std::env::args_os()
                .map(|a| a.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" "),
            started: now_utc(),
            store: store.path().to_path_buf(),
            original,
        };
        let text = serde_json::to_string(&self.record).unwrap_or_default();
        self.write(text.as_bytes())
    }

    /// Keeps only `still` in the record (what could not be restored).
    pub fn keep_only(&mut self, still: &[Leftover]) -> Result<(), FeatureError> {
        self.record
            .original
            .retain(|o| still.iter().any(|l| l.feature == o.feature));
        if self.record.original.is_empty() {
            return self.write(b"");
        }
        let text = serde_json::to_string(&self.record).unwrap_or_default();
        self.write(text.as_bytes())
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), FeatureError> {
        let f = &mut self.file;
        f.set_len(0)
            .and_then(|()| f.seek(SeekFrom::Start(0)))
            .and_then(|_| f.write_all(bytes))
            .and_then(|()| f.sync_data())
            .map_err(|why| FeatureError::Lock {
                path: self.path.clone(),
                why,
            })
    }
}

fn read_record(f: &mut File) -> Option<Record> {
    let mut buf = Vec::new();
    f.seek(SeekFrom::Start(0)).ok()?;
    f.take(READ_BOUND).read_to_end(&mut buf).ok()?;
    if buf.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    serde_json::from_slice(&buf).ok()
}

/// `2026-12-04 22:01:02 UTC`
fn now_utc() -> String {
    let t = time::OffsetDateTime::now_utc();
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}
