//! `wakeviz --record F -- CMD ARGS`: runs the workload under the capture, as `perf record --
//! CMD` does. CMD runs in its own process group, so a stop reaches everything it started; its
//! stdout and stderr are teed (passed through, and the last [`TAIL`] bytes of each kept for the
//! benchmark parsers); the capture ends when it exits, through [`Supervisor`], a driver sink.
use std::{
    ffi::OsString,
    io::Write as _,
    os::unix::{ffi::OsStrExt as _, fs::PermissionsExt as _, process::CommandExt as _},
    path::{Path, PathBuf},
    process::{Child, ExitStatus, Stdio},
    sync::{Arc, Mutex, mpsc::SyncSender},
    time::{Duration, Instant},
};

use anyhow::Context as _;
use wakeviz_core::{
    run::{Metric, WorkloadOutcome, builtin_metrics, parse::upsert},
    source::{Batch, EventSource},
};

use crate::{
    driver::{Flow, Sink, Turn},
    signals,
};

/// Output kept per stream for the parsers: benchmarks print their result last.
const TAIL: usize = 1 << 20;
/// How long CMD may take to exit after it was told to stop, before SIGKILL: well inside the
/// signal watchdog's grace, so the recording is still finalised.
const STOP_GRACE: Duration = Duration::from_millis(1000);

/// Exit status of a command that could not be started, as a shell's: 127 not found, 126 found
/// but not executable.
#[derive(Debug, thiserror::Error)]
#[error("cannot run {name:?}: {why}")]
pub struct SpawnError {
    pub name: String,
    pub why: String,
    pub code: u8,
}

/// `--metric NAME=REGEX`: the first capture group of the last match, as a number. A `+`
/// before the name marks a figure where higher is better (default: lower is better).
#[derive(Clone, Debug)]
pub struct UserMetric {
    pub name: String,
    pub higher_is_better: bool,
    pub re: regex::Regex,
}

pub fn parse_metric(s: &str) -> Result<UserMetric, String> {
    let (name, re) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: expected NAME=REGEX"))?;
    let (name, higher_is_better) = match name.strip_prefix('+') {
        Some(n) => (n, true),
        None => (name, false),
    };
    if name.is_empty() {
        return Err(format!("{s:?}: the metric needs a name"));
    }
    let re = regex::Regex::new(re).map_err(|e| format!("{s:?}: {e}"))?;
    if re.captures_len() < 2 {
        return Err(format!(
            "{s:?}: the regex needs a capture group around the number, e.g. 'rps: ([0-9.]+)'"
        ));
    }
    Ok(UserMetric {
        name: name.to_string(),
        higher_is_better,
        re,
    })
}

/// Resolves CMD as `execvp` would, so a command that cannot start is refused before anything
/// is attached or created.
pub fn check(argv: &[OsString]) -> Result<(), SpawnError> {
    let name = argv
        .first()
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_default();
    let err = |why: &str, code| SpawnError {
        name: name.clone(),
        why: why.into(),
        code,
    };
    let Some(arg0) = argv.first() else {
        return Err(err("no command after --", 127));
    };
    let candidates: Vec<PathBuf> = if arg0.as_bytes().contains(&b'/') {
        vec![PathBuf::from(arg0)]
    } else {
        std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).map(|d| d.join(arg0)).collect())
            .unwrap_or_default()
    };
    let mut found_non_exec = false;
    for c in &candidates {
        match std::fs::metadata(c) {
            Ok(m) if m.is_file() && m.permissions().mode() & 0o111 != 0 => return Ok(()),
            Ok(_) => found_non_exec = true,
            Err(_) => {}
        }
    }
    if found_non_exec {
        Err(err("not an executable file", 126))
    } else if arg0.as_bytes().contains(&b'/') {
        Err(err("no such file", 127))
    } else {
        Err(err("command not found in PATH", 127))
    }
}

/// The last [`TAIL`] bytes a stream produced.
#[derive(Default)]
struct Tail(Vec<u8>);

impl Tail {
    fn push(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
        if self.0.len() > 2 * TAIL {
            let cut = self.0.len() - TAIL;
            self.0.drain(..cut);
        }
    }

    fn text(&self) -> String {
        let s = &self.0[self.0.len().saturating_sub(TAIL)..];
        String::from_utf8_lossy(s).into_owned()
    }
}

/// The two threads that copy CMD's stdout and stderr. They start with the session, before the
/// capture, so they are in the recorded list of wakeviz's own threads (their wakeups are never
/// counted as the workload's); each waits for its pipe, and ends unused when this is dropped.
pub struct Tees {
    out: Option<SyncSender<Pipe>>,
    err: Option<SyncSender<Pipe>>,
}

impl Tees {
    pub fn start() -> Self {
        Self {
            out: tee_thread(),
            err: tee_thread(),
        }
    }
}

/// One pipe to copy, and where.
struct Pipe {
    from: Box<dyn std::io::Read + Send>,
    to_stderr: bool,
    pass: bool,
    tail: Arc<Mutex<Tail>>,
}

impl Pipe {
    /// Copies `from` to our stdout or stderr (when `pass`), keeping its tail. Writing errors (a
    /// reader gone) do not stop the copy: CMD must never block on a full pipe.
    fn run(mut self) {
        let mut buf = vec![0u8; 64 << 10];
        loop {
            let n = match self.from.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            if self.pass {
                let _ = if self.to_stderr {
                    std::io::stderr().lock().write_all(&buf[..n])
                } else {
                    let mut o = std::io::stdout().lock();
                    o.write_all(&buf[..n]).and_then(|()| o.flush())
                };
            }
            if let Ok(mut g) = self.tail.lock() {
                g.push(&buf[..n]);
            }
        }
    }
}

fn tee_thread() -> Option<SyncSender<Pipe>> {
    let (tx, rx) = std::sync::mpsc::sync_channel::<Pipe>(1);
    let spawned = std::thread::Builder::new()
        .name("wakeviz-tee".into())
        .spawn(move || {
            if let Ok(c) = rx.recv() {
                c.run();
            }
        });
    match spawned {
        Ok(_) => Some(tx),
        Err(e) => {
            log::warn!("cannot copy the command's output: {e}");
            None
        }
    }
}

/// Hands `from` to a tee thread; the tail it fills (empty without the thread: the pipe is
/// closed, as CMD's output cannot be read).
fn tee(
    thread: Option<&SyncSender<Pipe>>,
    from: impl std::io::Read + Send + 'static,
    to_stderr: bool,
    pass: bool,
) -> Arc<Mutex<Tail>> {
    let tail = Arc::new(Mutex::new(Tail::default()));
    if let Some(tx) = thread {
        let _ = tx.send(Pipe {
            from: Box::new(from),
            to_stderr,
            pass,
            tail: Arc::clone(&tail),
        });
    }
    tail
}

/// A running workload.
pub struct Workload {
    child: Child,
    argv: Vec<String>,
    start: Instant,
    status: Option<ExitStatus>,
    out: Arc<Mutex<Tail>>,
    err: Arc<Mutex<Tail>>,
    /// The dashboard owns the terminal: the output is printed after it closes instead.
    pass: bool,
    /// A stop signal wakeviz got was passed on to CMD's process group.
    forwarded: bool,
}

impl Workload {
    /// Starts CMD in its own process group, its output copied by `tees`. With `pass` false
    /// (the dashboard is up) its output is kept, not shown, and its stdin is /dev/null. With
    /// `stdout_to_stderr` (a `--report` goes to stdout) its stdout is passed to our stderr, so
    /// stdout holds the report alone.
    /// Unless `keep`, CMD gets SIGKILL if wakeviz dies without ending it (see [`die_with_parent`]).
    pub fn spawn(
        argv: &[OsString],
        tees: Tees,
        pass: bool,
        stdout_to_stderr: bool,
        keep: bool,
    ) -> Result<Self, SpawnError> {
        let name = argv.first().cloned().unwrap_or_default();
        let mut c = std::process::Command::new(&name);
        c.args(&argv[1..])
            .stdin(if pass {
                Stdio::inherit()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        crate::capture::pace::unrelaxed_child(&mut c);
        if !keep {
            die_with_parent(&mut c, libc::SIGKILL);
        }
        let mut child = c.spawn().map_err(|e| SpawnError {
            name: name.to_string_lossy().into_owned(),
            code: if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            },
            why: e.to_string(),
        })?;
        if let Ok(pid) = i32::try_from(child.id()) {
            signals::set_child_group(pid);
        }
        let (out, err) = match (child.stdout.take(), child.stderr.take()) {
            (Some(o), Some(e)) => (
                tee(tees.out.as_ref(), o, stdout_to_stderr, pass),
                tee(tees.err.as_ref(), e, true, pass),
            ),
            _ => (Arc::default(), Arc::default()),
        };
        Ok(Self {
            child,
            argv: argv
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            start: Instant::now(),
            status: None,
            out,
            err,
            pass,
            forwarded: false,
        })
    }

    fn poll(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            match self.child.try_wait() {
                Ok(s) => self.status = s,
                Err(e) => log::warn!("waiting for {:?}: {e}", self.argv),
            }
        }
        self.status
    }

    fn signal_group(&self, sig: i32) {
        let Ok(pid) = i32::try_from(self.child.id()) else {
            return;
        };
        // SAFETY: kill(2) on the process group of our own child (its pgid is its pid).
        unsafe { libc::kill(-pid, sig) };
    }

    /// Ends CMD if it still runs (the capture ended first: a signal, `--duration`, `q`): the
    /// stop signal wakeviz got (SIGTERM otherwise) to its process group, then SIGKILL after
    /// [`STOP_GRACE`]. Returns how it ended, with the figures parsed from its output.
    pub fn finish(mut self, user: &[UserMetric]) -> WorkloadOutcome {
        if self.poll().is_none() {
            if !self.forwarded {
                self.signal_group(signals::for_child());
            }
            let t = Instant::now();
            while self.poll().is_none() && t.elapsed() < STOP_GRACE {
                std::thread::sleep(Duration::from_millis(10));
            }
            if self.poll().is_none() {
                self.signal_group(libc::SIGKILL);
                self.status = self.child.wait().ok();
            }
        }
        signals::set_child_group(0);
        let duration_ns = u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        // The pipes close when CMD and its children exit; a daemon it left behind may keep
        // them open, so wait a little, then take what arrived.
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(300)
            && (Arc::strong_count(&self.out) > 1 || Arc::strong_count(&self.err) > 1)
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        let text = |t: &Arc<Mutex<Tail>>| t.lock().map(|g| g.text()).unwrap_or_default();
        let (out, err) = (text(&self.out), text(&self.err));
        if !self.pass {
            // The dashboard has closed: show what CMD printed (its last part).
            let _ = std::io::stdout().lock().write_all(out.as_bytes());
            let _ = std::io::stderr().lock().write_all(err.as_bytes());
        }
        let mut metrics = builtin_metrics(&out);
        for m in builtin_metrics(&err) {
            upsert(&mut metrics, m);
        }
        for u in user {
            match user_value(u, &out).or_else(|| user_value(u, &err)) {
                Some(v) => upsert(
                    &mut metrics,
                    Metric::new(&u.name, v, "", u.higher_is_better),
                ),
                None => say!(
                    "wakeviz: note: --metric {} matched nothing in the command's output",
                    u.name
                ),
            }
        }
        use std::os::unix::process::ExitStatusExt as _;
        let (exit_code, signal) = match self.status {
            Some(s) => (s.code(), s.signal()),
            None => (None, None),
        };
        WorkloadOutcome {
            exit_code,
            signal,
            duration_ns,
            metrics,
        }
    }
}

/// Makes the kernel send `sig` to the child when wakeviz dies (a `kill -9`, an OOM kill), so
/// CMD never runs on without the capture it was started for. It reaches the child alone, not
/// what CMD started in its group: those the orderly ways out kill by group. The signal is tied
/// to the thread that forks, so this is called from the main thread, which lives as long as
/// the process.
pub fn die_with_parent(c: &mut std::process::Command, sig: libc::c_int) {
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the child between fork and exec, where only
    // async-signal-safe calls are allowed: prctl, getppid and building an io::Error from an
    // errno (no allocation) are.
    unsafe {
        c.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, sig as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // wakeviz may have died between the fork and the prctl: then the signal will
            // never come, and the child is an orphan already (reparented to another pid).
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// The first capture group of the last match of `u` in `text`, as a number.
fn user_value(u: &UserMetric, text: &str) -> Option<f64> {
    u.re.captures_iter(text)
        .filter_map(|c| c.get(1)?.as_str().trim().parse::<f64>().ok())
        .filter(|v| v.is_finite())
        .last()
}

/// wakeviz's exit status for CMD's: its own code, or 128 + the signal that killed it (as a
/// shell reports it).
pub fn exit_status(w: &WorkloadOutcome) -> u8 {
    match (w.exit_code, w.signal) {
        (Some(c), _) => u8::try_from(c & 0xff).unwrap_or(1),
        (None, Some(s)) => u8::try_from(128 + (s & 0x7f)).unwrap_or(1),
        (None, None) => 1,
    }
}

/// How CMD ended, for the dashboard's finished badge: `exit 0`, `SIGKILL`.
pub fn ended(w: &WorkloadOutcome) -> String {
    match (w.exit_code, w.signal) {
        (Some(c), _) => format!("exit {c}"),
        (None, Some(s)) => crate::signals::name(s),
        (None, None) => "ended".into(),
    }
}

/// The driver sink that ends the capture when CMD exits.
pub struct Supervisor<'a> {
    pub workload: &'a mut Workload,
}

impl Sink for Supervisor<'_> {
    fn on_batch(&mut self, _b: &Batch) -> anyhow::Result<()> {
        Ok(())
    }

    fn on_turn(&mut self, _src: &dyn EventSource, _t: Turn) -> anyhow::Result<Flow> {
        // CMD has its own process group, so a Ctrl-C at the terminal reaches only us: pass it
        // on at once, while the capture drains.
        let w = &mut *self.workload;
        if signals::stop_requested() && !w.forwarded && w.status.is_none() {
            w.signal_group(signals::for_child());
            w.forwarded = true;
        }
        Ok(if self.workload.poll().is_some() {
            Flow::Stop
        } else {
            Flow::Continue
        })
    }
}

/// The default label: the recording's file stem (`tip` for `tip.wvz`).
pub fn default_label(record: Option<&Path>) -> Option<String> {
    record
        .and_then(Path::file_stem)
        .map(|s| s.to_string_lossy().into_owned())
}

/// Removes a recording whose command could not start: nothing half-made is left behind.
pub fn discard(path: &Path) -> anyhow::Result<()> {
    std::fs::remove_file(path).with_context(|| format!("removing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_flags() {
        let m = parse_metric("+rps=rps: ([0-9.]+)").unwrap();
        assert!(m.higher_is_better);
        assert_eq!(m.name, "rps");
        assert_eq!(user_value(&m, "rps: 1\nrps: 2.5\n"), Some(2.5));
        assert_eq!(user_value(&m, "nothing"), None);
        assert!(!parse_metric("lat=([0-9]+) us").unwrap().higher_is_better);
        assert!(parse_metric("bad=([0-9]+").is_err());
        assert!(parse_metric("noname").is_err());
        assert!(parse_metric("=x(1)").is_err());
        assert!(parse_metric("nogroup=[0-9]+").is_err());
    }

    #[test]
    fn exit_statuses() {
        let w = |c, s| WorkloadOutcome {
            exit_code: c,
            signal: s,
            ..Default::default()
        };
        assert_eq!(exit_status(&w(Some(7), None)), 7);
        assert_eq!(exit_status(&w(Some(0), None)), 0);
        assert_eq!(exit_status(&w(None, Some(9))), 137);
        assert_eq!(exit_status(&w(None, Some(2))), 130);
    }

    #[test]
    fn tails_are_bounded() {
        let mut t = Tail::default();
        for _ in 0..5 {
            t.push(&vec![b'x'; TAIL]);
        }
        t.push(b"Time: 1.5\n");
        assert!(t.0.len() <= 2 * TAIL);
        assert!(t.text().ends_with("Time: 1.5\n"));
        assert_eq!(t.text().len(), TAIL);
    }

    #[test]
    fn commands_are_resolved_like_execvp() {
        assert!(check(&["sh".into()]).is_ok());
        assert_eq!(check(&["/nonexistent".into()]).unwrap_err().code, 127);
        assert_eq!(check(&["no-such-cmd-wvz".into()]).unwrap_err().code, 127);
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("data");
        std::fs::write(&f, "not a program").unwrap();
        assert_eq!(check(&[f.into_os_string()]).unwrap_err().code, 126);
        assert!(check(&[]).is_err());
    }
}
