//! `--sched-feature NAME`: scheduler features set for one run and restored after it.
//!
//! debugfs `sched/features` lists every feature by name, `NO_X` for one that is off; writing
//! `X` or `NO_X` flips one. The order (and so the bit) of a feature changes between kernels,
//! so everything here goes by name. Every request is validated against the file before
//! anything is written, each write is read back, and what was changed is restored by a
//! [`Guard`] on every way out of the run: its `Drop` (normal end, errors, a stop signal that
//! ends the driver, a panic: the release profile unwinds) and the signal watchdog, which calls
//! [`restore_active`] before it exits the process. A run holds [`lock::Lock`] while anything
//! is changed, so runs never interleave, and a run that could not restore leaves a record the
//! next one finds.
use std::{
    fs::OpenOptions,
    io::{ErrorKind, IsTerminal as _, Read as _, Write as _},
    path::{Path, PathBuf},
    sync::{
        Mutex, PoisonError,
        atomic::{AtomicBool, Ordering},
    },
};

pub mod lock;

pub use crate::signals::EXIT_NOT_RESTORED;
/// Exit status of a run refused because the settings are not ours to change: another run holds
/// the lock, or an earlier run left settings changed (nothing was changed or run).
pub const EXIT_SETTINGS_BUSY: u8 = 5;

/// Something this process changed could not be put back: the exit status is then
/// [`EXIT_NOT_RESTORED`], whatever else happened.
static NOT_RESTORED: AtomicBool = AtomicBool::new(false);

pub fn not_restored() -> bool {
    NOT_RESTORED.load(Ordering::SeqCst)
}

/// Something else this process changed (a sysctl) could not be put back.
pub fn mark_not_restored() {
    NOT_RESTORED.store(true, Ordering::SeqCst);
}

/// Where the kernel has it, with debugfs on its usual mount point.
pub const DEBUGFS: &str = "/sys/kernel/debug";
pub const FEATURES: &str = "/sys/kernel/debug/sched/features";

/// Most read from the features file (it is a few hundred bytes).
const READ_BOUND: u64 = 64 << 10;
/// `DEBUGFS_MAGIC` from `include/uapi/linux/magic.h`.
const DEBUGFS_MAGIC: i64 = 0x6462_6720;

/// Why the features cannot be set; each is one line, and nothing was changed or run.
#[derive(Debug, thiserror::Error)]
pub enum FeatureError {
    #[error("--sched-feature needs root: it writes {}", .path.display())]
    NotRoot { path: PathBuf },
    #[error("{} does not exist: {hint}; nothing was run", .path.display())]
    Missing { path: PathBuf, hint: &'static str },
    #[error("cannot read {}: {why}{hint}; nothing was run", .path.display())]
    Unreadable {
        path: PathBuf,
        why: std::io::Error,
        hint: &'static str,
    },
    #[error("{} lists no features; nothing was run", .path.display())]
    Empty { path: PathBuf },
    #[error("{} is read-only ({why}); nothing was changed or run", .path.display())]
    ReadOnly { path: PathBuf, why: std::io::Error },
    #[error("cannot write {}: {why}{hint}; nothing was changed or run", .path.display())]
    NotWritable {
        path: PathBuf,
        why: std::io::Error,
        hint: &'static str,
    },
    #[error(
        "unknown scheduler feature {name:?}{close}; known: {known} (NO_X turns X off); nothing was changed or run"
    )]
    Unknown {
        name: String,
        close: String,
        known: String,
    },
    #[error("--sched-feature {a} and {b} contradict each other; nothing was changed or run")]
    Conflict { a: String, b: String },
    #[error("writing {token} to {}: {why}", .path.display())]
    Write {
        token: String,
        path: PathBuf,
        why: std::io::Error,
    },
    #[error("{token} did not take: {} reads {now} after the write", .path.display())]
    NotTaken {
        token: String,
        path: PathBuf,
        now: String,
    },
    #[error(
        "the scheduler settings are in use by another wakeviz run: {holder} (lock {}); nothing was changed or run",
        .path.display()
    )]
    Busy { path: PathBuf, holder: String },
    #[error(
        "a wakeviz run that could not restore them left scheduler features changed: {list} (recorded by {holder}); restore them with `{command}` or run again with --restore-leftovers; nothing was changed or run"
    )]
    Leftovers {
        list: String,
        holder: String,
        command: String,
    },
    #[error("the settings lock {}: {why}; nothing was changed or run", .path.display())]
    Lock { path: PathBuf, why: std::io::Error },
}

impl FeatureError {
    /// Why, without what it means for the run (for the line of a failed restore, which comes
    /// after the run).
    fn reason(&self) -> String {
        match self {
            FeatureError::Missing { path, .. } => format!("{} does not exist", path.display()),
            FeatureError::Unreadable { why, .. } | FeatureError::Write { why, .. } => {
                why.to_string()
            }
            FeatureError::NotTaken { now, .. } => format!("the file reads {now} after the write"),
            e => e.to_string(),
        }
    }
}

/// The features file: the kernel's, or (hidden `--sched-features-file`, for tests on kernels
/// without one) a plain file standing in for it, where a write of `X`/`NO_X` rewrites the list
/// the way the kernel's file then reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Store {
    Debugfs(PathBuf),
    Emulated(PathBuf),
}

impl Store {
    pub fn new(override_path: Option<&Path>) -> Self {
        override_path.map_or_else(
            || Store::Debugfs(PathBuf::from(FEATURES)),
            |p| Store::Emulated(p.to_path_buf()),
        )
    }

    pub fn path(&self) -> &Path {
        match self {
            Store::Debugfs(p) | Store::Emulated(p) => p,
        }
    }

    /// The file's text, debugfs mounted first where it is missing.
    pub fn read(&self) -> Result<String, FeatureError> {
        let path = self.path();
        if matches!(self, Store::Debugfs(_)) && !path.exists() {
            mount_debugfs();
        }
        let open = std::fs::File::open(path);
        let mut f = match open {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                return Err(FeatureError::Missing {
                    path: path.into(),
                    hint: self.missing_hint(),
                });
            }
            Err(why) => {
                return Err(FeatureError::Unreadable {
                    path: path.into(),
                    hint: denied_hint(&why),
                    why,
                });
            }
        };
        let mut buf = Vec::new();
        (&mut f)
            .take(READ_BOUND)
            .read_to_end(&mut buf)
            .map_err(|why| FeatureError::Unreadable {
                path: path.into(),
                hint: denied_hint(&why),
                why,
            })?;
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }

    fn missing_hint(&self) -> &'static str {
        match self {
            Store::Emulated(_) => "the --sched-features-file given",
            Store::Debugfs(_) if !is_debugfs(Path::new(DEBUGFS)) => {
                "debugfs is not mounted on /sys/kernel/debug and mounting it failed"
            }
            Store::Debugfs(_) => "this kernel has no sched/features (it needs CONFIG_SCHED_DEBUG)",
        }
    }

    /// Opens the file for writing without writing: a read-only mount or a lockdown refuses
    /// here, before any feature is touched.
    fn check_writable(&self) -> Result<(), FeatureError> {
        let path = self.path();
        match OpenOptions::new().write(true).open(path) {
            Ok(_) => Ok(()),
            Err(why) if why.raw_os_error() == Some(libc::EROFS) => Err(FeatureError::ReadOnly {
                path: path.into(),
                why,
            }),
            Err(why) => Err(FeatureError::NotWritable {
                path: path.into(),
                hint: denied_hint(&why),
                why,
            }),
        }
    }

    fn write(&self, token: &str) -> Result<(), FeatureError> {
        let err = |why| FeatureError::Write {
            token: token.into(),
            path: self.path().into(),
            why,
        };
        match self {
            Store::Debugfs(p) => OpenOptions::new()
                .write(true)
                .open(p)
                .and_then(|mut f| f.write_all(token.as_bytes()))
                .map_err(err),
            Store::Emulated(p) => {
                let mut list = parse(&self.read()?);
                let (base, on) = split(token);
                match list.iter_mut().find(|(n, _)| n == base) {
                    Some(e) => e.1 = on,
                    // The kernel answers an unknown name with EINVAL.
                    None => return Err(err(std::io::Error::from_raw_os_error(libc::EINVAL))),
                }
                std::fs::write(p, format!("{} \n", render(&list))).map_err(err)
            }
        }
    }
}

fn denied_hint(e: &std::io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => {
            " (kernel lockdown or a sandbox forbids debugfs here)"
        }
        _ => "",
    }
}

fn is_debugfs(p: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: statfs is plain old data, filled by the call.
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a valid pointer to a statfs.
    let rc = unsafe { libc::statfs(c.as_ptr(), &mut s) };
    #[allow(clippy::unnecessary_cast)]
    let magic = s.f_type as i64;
    rc == 0 && magic == DEBUGFS_MAGIC
}

/// Mounts debugfs on [`DEBUGFS`] where it is missing and we are root, as the tracefs code does
/// for tracefs; a failure is left to the reader of the file to report.
pub fn mount_debugfs() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || is_debugfs(Path::new(DEBUGFS)) {
        return;
    }
    let mounted = std::process::Command::new("mount")
        .args(["-t", "debugfs", "none", DEBUGFS])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    if !matches!(mounted, Ok(s) if s.success()) {
        log::info!("debugfs is not mounted on {DEBUGFS} and mounting it failed");
    }
}

/// `NO_X` -> (`X`, off), `X` -> (`X`, on).
fn split(token: &str) -> (&str, bool) {
    token
        .strip_prefix("NO_")
        .map_or((token, true), |base| (base, false))
}

fn token(base: &str, on: bool) -> String {
    if on {
        base.to_string()
    } else {
        format!("NO_{base}")
    }
}

/// The features file as (name, on), in the file's order.
pub fn parse(text: &str) -> Vec<(String, bool)> {
    text.split_whitespace()
        .map(|t| {
            let (b, on) = split(t);
            (b.to_string(), on)
        })
        .collect()
}

fn render(list: &[(String, bool)]) -> String {
    list.iter()
        .map(|(b, on)| token(b, *on))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The features as the file now reads (what a recording's metadata stores).
pub fn state(store: &Store) -> Result<Vec<String>, FeatureError> {
    Ok(store.read()?.split_whitespace().map(String::from).collect())
}

/// The requests as (name, on), each checked against `current` by name: unknown names are
/// refused with the close ones (or all), contradictions refused, repeats merged.
pub fn validate(
    requested: &[String],
    current: &[(String, bool)],
) -> Result<Vec<(String, bool)>, FeatureError> {
    let mut plan: Vec<(String, bool)> = Vec::new();
    for r in requested {
        let r = r.trim();
        let (base, on) = split(r);
        if !current.iter().any(|(n, _)| n == base) {
            return Err(unknown(r, current));
        }
        match plan.iter().find(|(n, _)| n == base) {
            Some((_, o)) if *o != on => {
                return Err(FeatureError::Conflict {
                    a: token(base, *o),
                    b: r.to_string(),
                });
            }
            Some(_) => {}
            None => plan.push((base.to_string(), on)),
        }
    }
    Ok(plan)
}

fn unknown(name: &str, current: &[(String, bool)]) -> FeatureError {
    let upper = name.to_ascii_uppercase();
    let mut close: Vec<(usize, String)> = current
        .iter()
        .flat_map(|(b, _)| [b.clone(), format!("NO_{b}")])
        .map(|c| (strsim::levenshtein(&upper, &c), c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 4))
        .collect();
    close.sort();
    let close = if close.is_empty() {
        String::new()
    } else {
        let names: Vec<String> = close.into_iter().take(3).map(|(_, c)| c).collect();
        format!(" (did you mean {}?)", names.join(", "))
    };
    let mut known: Vec<&str> = current.iter().map(|(b, _)| b.as_str()).collect();
    known.sort_unstable();
    FeatureError::Unknown {
        name: name.into(),
        close,
        known: known.join(" "),
    }
}

/// Root, the file there and readable, every name valid and the file writable: what must hold
/// before a run is started with `requested`, checked without writing anything.
pub fn check(store: &Store, requested: &[String]) -> Result<(), FeatureError> {
    preflight(store, requested).map(|_| ())
}

/// Features by name, on or off.
type States = Vec<(String, bool)>;

fn preflight(store: &Store, requested: &[String]) -> Result<(States, States), FeatureError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(FeatureError::NotRoot {
            path: store.path().into(),
        });
    }
    let current = parse(&store.read()?);
    if current.is_empty() {
        return Err(FeatureError::Empty {
            path: store.path().into(),
        });
    }
    let plan = validate(requested, &current)?;
    store.check_writable()?;
    Ok((current, plan))
}

/// Whether `e` means the settings were not ours to change ([`EXIT_SETTINGS_BUSY`]).
pub fn is_busy(e: &anyhow::Error) -> bool {
    matches!(
        e.downcast_ref::<FeatureError>(),
        Some(FeatureError::Busy { .. } | FeatureError::Leftovers { .. })
    )
}

/// Takes the settings lock and deals with what an earlier run left changed: restored when
/// `restore` (or when the user says so at a terminal), else refused with the command to run.
pub fn lock_and_check(store: &Store, restore: bool) -> Result<lock::Lock, FeatureError> {
    let l = lock::Lock::acquire(store)?;
    let current = parse(&store.read()?);
    let left = l.leftovers(&current);
    if left.is_empty() {
        return Ok(l);
    }
    let list = left
        .iter()
        .map(|x| format!("{} (was {})", token(&x.feature, !x.was_on), x.token()))
        .collect::<Vec<_>>()
        .join(", ");
    let command = lock::restore_command(store, &left);
    let holder = l.previous().holder();
    let restore = restore
        || {
            let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
            interactive
                && {
                    say!(
                        "wakeviz: a wakeviz run ({holder}) could not restore the scheduler features it changed: {list}; the command that restores them: {command}"
                    );
                    crate::signals::say_str("wakeviz: restore them now? [y/N] ");
                    let mut answer = String::new();
                    std::io::stdin().read_line(&mut answer).is_ok()
                        && answer.trim().eq_ignore_ascii_case("y")
                }
        };
    if !restore {
        return Err(FeatureError::Leftovers {
            list,
            holder,
            command,
        });
    }
    let mut l = l;
    let mut still = Vec::new();
    for x in &left {
        let t = x.token();
        match store
            .write(&t)
            .and_then(|()| confirm(store, &x.feature, x.was_on, &t))
        {
            Ok(()) => {
                say!("wakeviz: scheduler feature left changed by an earlier run restored: {t}")
            }
            Err(e) => {
                NOT_RESTORED.store(true, Ordering::SeqCst);
                say!(
                    "wakeviz: could not restore scheduler feature {t} ({}); restore it by hand: echo {t} > {}",
                    e.reason(),
                    store.path().display()
                );
                still.push(x.clone());
            }
        }
    }
    l.keep_only(&still)?;
    if still.is_empty() {
        Ok(l)
    } else {
        Err(FeatureError::Leftovers {
            list: still
                .iter()
                .map(|x| format!("{} (was {})", token(&x.feature, !x.was_on), x.token()))
                .collect::<Vec<_>>()
                .join(", "),
            holder,
            command: lock::restore_command(store, &still),
        })
    }
}

/// Puts the features that differ from `before` back, under the lock (`wakeviz experiment`
/// after a run left them changed). Prints what it restored and, for what it could not, the
/// command; `Ok(false)` if anything stayed changed, [`FeatureError::Busy`] if another run
/// holds the lock (its changes are its own to undo).
pub fn put_back(store: &Store, before: &[(String, bool)]) -> Result<bool, FeatureError> {
    let mut l = lock::Lock::acquire(store)?;
    let now = parse(&store.read()?);
    let drifted: Vec<lock::Leftover> = before
        .iter()
        .filter(|(n, on)| now.iter().any(|(m, o)| m == n && o != on))
        .map(|(n, on)| lock::Leftover {
            feature: n.clone(),
            was_on: *on,
        })
        .collect();
    let mut ok = true;
    for x in &drifted {
        let t = x.token();
        match store
            .write(&t)
            .and_then(|()| confirm(store, &x.feature, x.was_on, &t))
        {
            Ok(()) => {
                say!("wakeviz: scheduler feature restored to its value before the experiment: {t}")
            }
            Err(e) => {
                ok = false;
                NOT_RESTORED.store(true, Ordering::SeqCst);
                say!(
                    "wakeviz: could not restore scheduler feature {t} ({}); restore it by hand: echo {t} > {}",
                    e.reason(),
                    store.path().display()
                );
            }
        }
    }
    // What the experiment could not restore is nobody's to restore but the user's: the
    // record is left empty rather than claiming the originals of another run.
    l.keep_only(&[])?;
    Ok(ok)
}

/// `--restore-leftovers` on its own: restores what an earlier run left changed, and says
/// whether there was anything.
pub fn restore_leftovers(store: &Store) -> Result<(), FeatureError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(FeatureError::NotRoot {
            path: store.path().into(),
        });
    }
    let before = lock::Lock::acquire(store)?;
    let nothing = before.leftovers(&parse(&store.read()?)).is_empty();
    drop(before);
    lock_and_check(store, true)?;
    if nothing {
        say!(
            "wakeviz: no scheduler features left changed by an earlier run ({})",
            store.path().display()
        );
    }
    Ok(())
}

/// One feature wakeviz flipped, and the value it had before.
#[derive(Clone, Debug)]
struct Change {
    base: String,
    was_on: bool,
}

/// What is to be put back; global so that the signal watchdog, which exits the process without
/// unwinding, can restore it too.
struct Applied {
    store: Store,
    changes: Vec<Change>,
    /// Held until everything is back (or the process ends): closing it releases it.
    lock: Option<lock::Lock>,
}

static ACTIVE: Mutex<Option<Applied>> = Mutex::new(None);

/// Holds the features set for a run; restores the ones it changed when dropped.
#[derive(Debug)]
pub struct Guard {
    requested: Vec<String>,
}

impl Guard {
    /// The requests, normalised (`NO_SIS_UTIL`), as the recording's metadata stores them.
    pub fn requested(&self) -> &[String] {
        &self.requested
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        restore_active();
    }
}

/// Sets `requested` (`X` / `NO_X`) for the run. Validates every one before writing any; takes
/// the settings lock (see [`lock_and_check`] for `restore_leftovers`) and records the originals
/// in it; writes only those not already so, and reads each back. On an error, what was already
/// written is restored before returning.
pub fn apply(
    store: Store,
    requested: &[String],
    restore_leftovers: bool,
) -> Result<Guard, FeatureError> {
    preflight(&store, requested)?;
    let mut lock = lock_and_check(&store, restore_leftovers)?;
    // Read again under the lock: the values before it was taken may be another run's.
    let (current, plan) = preflight(&store, requested)?;
    let original: Vec<lock::Original> = plan
        .iter()
        .filter_map(|(base, on)| {
            let was_on = current.iter().any(|(n, o)| n == base && *o);
            (was_on != *on).then(|| lock::Original {
                feature: base.clone(),
                was_on,
            })
        })
        .collect();
    if !original.is_empty() {
        lock.record(&store, original)?;
    }
    crate::signals::before_forced_exit(restore_active);
    let guard = Guard {
        requested: plan.iter().map(|(b, on)| token(b, *on)).collect(),
    };
    *ACTIVE.lock().unwrap_or_else(PoisonError::into_inner) = Some(Applied {
        store: store.clone(),
        changes: Vec::new(),
        lock: Some(lock),
    });
    let mut set = Vec::new();
    for (base, on) in &plan {
        let was_on = current.iter().any(|(n, o)| n == base && *o);
        if was_on == *on {
            continue;
        }
        let t = token(base, *on);
        store.write(&t)?;
        if let Some(a) = ACTIVE
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
        {
            a.changes.push(Change {
                base: base.clone(),
                was_on,
            });
        }
        confirm(&store, base, *on, &t)?;
        set.push(format!("{t} (was {})", token(base, was_on)));
    }
    if set.is_empty() {
        say!(
            "wakeviz: scheduler features already as asked: {}",
            guard.requested.join(" ")
        );
    } else {
        say!(
            "wakeviz: scheduler features set for the run: {}",
            set.join(", ")
        );
    }
    Ok(guard)
}

fn confirm(store: &Store, base: &str, on: bool, t: &str) -> Result<(), FeatureError> {
    let now = parse(&store.read()?);
    match now.iter().find(|(n, _)| n == base) {
        Some((_, o)) if *o == on => Ok(()),
        found => Err(FeatureError::NotTaken {
            token: t.into(),
            path: store.path().into(),
            now: found.map_or_else(|| format!("no {base}"), |(n, o)| token(n, *o)),
        }),
    }
}

/// Restores what the current run changed (once: a second call finds nothing). Each failure is
/// one line with the command to run by hand. `false` if anything stayed changed.
pub fn restore_active() -> bool {
    let taken = ACTIVE.lock().unwrap_or_else(PoisonError::into_inner).take();
    let Some(mut a) = taken else {
        return true;
    };
    let mut ok = true;
    let mut done = Vec::new();
    let mut still = Vec::new();
    for c in a.changes.iter().rev() {
        let t = token(&c.base, c.was_on);
        let r = a
            .store
            .write(&t)
            .and_then(|()| confirm(&a.store, &c.base, c.was_on, &t));
        match r {
            Ok(()) => done.push(t),
            Err(e) => {
                ok = false;
                say!(
                    "wakeviz: could not restore scheduler feature {t} ({}); restore it by hand: echo {t} > {}",
                    e.reason(),
                    a.store.path().display()
                );
                still.push(lock::Leftover {
                    feature: c.base.clone(),
                    was_on: c.was_on,
                });
            }
        }
    }
    if !done.is_empty() {
        say!("wakeviz: scheduler features restored: {}", done.join(" "));
    }
    if !ok {
        NOT_RESTORED.store(true, Ordering::SeqCst);
    }
    // The record keeps what is still changed, for the next run to find; then the lock goes.
    if let Some(Err(e)) = a.lock.as_mut().map(|l| l.keep_only(&still)) {
        say!("wakeviz: warning: {e}");
    }
    drop(a.lock.take());
    ok
}

#[cfg(test)]
mod tests;
