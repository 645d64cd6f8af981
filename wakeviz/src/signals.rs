//! Every catchable signal whose default action ends the process (SIGINT, SIGTERM, SIGHUP, but
//! also SIGQUIT, SIGUSR1, SIGALRM, SIGXFSZ, ...) becomes a flag the driver polls, so every way
//! out finalises the recording (END chunk), detaches the probes, restores the terminal and the
//! scheduler features and ends CMD; a watchdog covers the case where the main thread cannot get
//! back to polling (a read stuck on a dead terminal); a panic hook does what can be done
//! without the main thread's state. Output after the terminal may have died goes through
//! [`say!`], which never panics.
use std::{
    sync::{
        Arc, LazyLock,
        atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering},
    },
    time::Duration,
};

/// A line to stderr that ignores write errors: `eprintln!` panics when stderr fails (EIO on a
/// hung-up terminal), which would skip the restores and the END chunk that follow it.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::signals::say_args(format_args!($($arg)*))
    };
}

/// What [`say!`] expands to.
/// Made terminal-safe on the way (messages quote names, paths and text from recordings).
pub fn say_args(args: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    let text = args.to_string();
    let mut e = std::io::stderr().lock();
    let _ = e
        .write_all(wakeviz_core::safe_text::escape(&text).as_bytes())
        .and_then(|()| e.write_all(b"\n"));
}

/// Text as it is (no newline added), ignoring write errors as [`say!`] does.
#[allow(dead_code)]
pub fn say_str(s: &str) {
    use std::io::Write as _;
    let s = wakeviz_core::safe_text::escape(s);
    let _ = std::io::stderr().lock().write_all(s.as_bytes());
}

static STOP: LazyLock<Arc<AtomicBool>> = LazyLock::new(Arc::default);
static HANGUP: LazyLock<Arc<AtomicBool>> = LazyLock::new(Arc::default);
/// The last stop signal received, so `-- CMD` can be given the matching one.
static LAST: LazyLock<Arc<AtomicUsize>> = LazyLock::new(Arc::default);
/// The process group of `-- CMD` (its pid), 0 when none runs: what a forced exit or a panic
/// kills, since they cannot reach the `Workload` on the main thread's stack.
static CHILD_GROUP: AtomicI32 = AtomicI32::new(0);

/// Signals whose default action ends the process and that a handler may catch. Left out:
/// SIGKILL and SIGSTOP (uncatchable), the synchronous faults (SIGSEGV, SIGBUS, SIGILL, SIGFPE,
/// SIGABRT, SIGSYS, SIGTRAP: their handler cannot return safely), and SIGPIPE, which the Rust
/// runtime ignores so that a vanished reader is a write error (EPIPE) handled where it occurs.
/// SIGXFSZ is caught rather than ignored: an ignored signal stays ignored across exec, and CMD
/// must get the default. Caught, a write over the file-size limit fails with EFBIG and the
/// recording stops as on a full disk.
pub fn stop_signals() -> Vec<libc::c_int> {
    let mut v = vec![
        libc::SIGINT,
        libc::SIGTERM,
        libc::SIGHUP,
        libc::SIGQUIT,
        libc::SIGUSR1,
        libc::SIGUSR2,
        libc::SIGALRM,
        libc::SIGVTALRM,
        libc::SIGPROF,
        libc::SIGXCPU,
        libc::SIGXFSZ,
        libc::SIGIO,
        libc::SIGPWR,
        libc::SIGSTKFLT,
    ];
    v.extend(libc::SIGRTMIN()..=libc::SIGRTMAX());
    v
}

/// Exit status of a run that changed kernel settings and could not put them back (the line
/// before says which and the command that does it). Here, not with the features, because the
/// watchdog's forced exit needs it and the benches compile this module alone.
pub const EXIT_NOT_RESTORED: u8 = 4;

/// Registers `f` for the watchdog's forced exit and for a panic (once per function); `f`
/// returns whether everything was restored.
pub fn before_forced_exit(f: fn() -> bool) {
    let mut fs = BEFORE_FORCED_EXIT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !fs.iter().any(|g| std::ptr::fn_addr_eq(*g, f)) {
        fs.push(f);
    }
}

/// Run by the watchdog before it exits the process (which does not unwind, so no `Drop` runs)
/// and by the panic hook: `--sched-feature` restores the kernel's features through it, the
/// schedstat sampler the `kernel.sched_schedstats` sysctl.
static BEFORE_FORCED_EXIT: std::sync::Mutex<Vec<fn() -> bool>> = std::sync::Mutex::new(Vec::new());

/// Puts the terminal back (the dashboard's, registered when it takes the terminal): first
/// thing on a forced exit, so whatever is said after it is readable.
static TERMINAL: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();

/// Registers the dashboard's terminal restore for the watchdog's forced exit and a panic.
pub fn on_forced_exit_terminal(f: fn()) {
    let _ = TERMINAL.set(f);
}

fn restore_terminal() {
    if let Some(f) = TERMINAL.get() {
        f();
    }
}

/// Runs every registered restore; whether all of them restored everything.
fn restore_all() -> bool {
    let fs = BEFORE_FORCED_EXIT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    // Every one runs, whatever an earlier one returned.
    let mut ok = true;
    for f in &fs {
        ok &= f();
    }
    ok
}

/// How long the process may take to wind down after a stop signal before the watchdog ends it.
pub const GRACE: Duration = Duration::from_secs(3);

pub fn install() {
    install_flags();
    spawn_watchdog();
}

/// The flags alone, without the watchdog: for a parent (`wakeviz experiment`) that must wait
/// for its child to wind down, however long that takes.
pub fn install_flags() {
    install_panic_hook();
    for sig in stop_signals() {
        // The flag handlers only store atomics (async-signal-safe). A signal the kernel
        // refuses to let us catch keeps its default; nothing better can be done about it.
        let r = signal_hook::flag::register_usize(sig, Arc::clone(&LAST), sig as usize)
            .and_then(|_| signal_hook::flag::register(sig, Arc::clone(&STOP)));
        if let Err(e) = r {
            log::warn!("cannot catch signal {sig}: {e}");
        }
    }
    if let Err(e) = signal_hook::flag::register(libc::SIGHUP, Arc::clone(&HANGUP)) {
        log::warn!("cannot catch SIGHUP: {e}");
    }
}

pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// The last stop signal received, if any.
pub fn last() -> Option<i32> {
    i32::try_from(LAST.load(Ordering::SeqCst))
        .ok()
        .filter(|&s| s != 0)
}

/// The signal to pass on to CMD for the stop signal we got: Ctrl-C, SIGTERM and SIGHUP as they
/// are (CMD may handle them), SIGTERM for the others (SIGXFSZ or SIGQUIT would make CMD dump
/// core, SIGUSR1 means something else to every program).
pub fn for_child() -> i32 {
    match last() {
        Some(s @ (libc::SIGINT | libc::SIGTERM | libc::SIGHUP)) => s,
        _ => libc::SIGTERM,
    }
}

/// `SIGUSR1` for 10, for the line that says why the run stopped.
#[allow(dead_code)]
pub fn name(sig: i32) -> String {
    let known = [
        (libc::SIGINT, "SIGINT"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGHUP, "SIGHUP"),
        (libc::SIGQUIT, "SIGQUIT"),
        (libc::SIGUSR1, "SIGUSR1"),
        (libc::SIGUSR2, "SIGUSR2"),
        (libc::SIGALRM, "SIGALRM"),
        (libc::SIGVTALRM, "SIGVTALRM"),
        (libc::SIGPROF, "SIGPROF"),
        (libc::SIGXCPU, "SIGXCPU"),
        (libc::SIGXFSZ, "SIGXFSZ"),
        (libc::SIGIO, "SIGIO"),
        (libc::SIGPWR, "SIGPWR"),
        (libc::SIGSTKFLT, "SIGSTKFLT"),
    ];
    known
        .iter()
        .find(|(n, _)| *n == sig)
        .map_or_else(|| format!("signal {sig}"), |(_, s)| (*s).to_string())
}

/// SIGHUP arrived: the controlling terminal went away.
pub fn hangup() -> bool {
    HANGUP.load(Ordering::SeqCst)
}

/// `-- CMD` runs in the process group `pgid` (0: none any more).
#[allow(dead_code)]
pub fn set_child_group(pgid: i32) {
    CHILD_GROUP.store(pgid, Ordering::SeqCst);
}

/// SIGKILL to CMD's process group, for the ways out that cannot wait for it to stop.
fn kill_child_group() {
    let pgid = CHILD_GROUP.swap(0, Ordering::SeqCst);
    if pgid > 0 {
        // SAFETY: kill(2) has no memory preconditions; the group is our own child's.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
}

/// On a panic of the main thread the unwinding drops the guards (terminal, features) but
/// cannot end CMD, which it does not own; the hook ends it and restores what a guard would,
/// first, in case the unwinding itself fails. A panic on another thread is left to the main
/// thread, which sees the thread's end as an error and winds down in order.
fn install_panic_hook() {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().name() == Some("main") {
                restore_terminal();
                kill_child_group();
                restore_all();
            }
            prev(info);
        }));
    });
}

/// Once a stop was requested, the driver detaches the probes and finalises the recording in
/// well under a second. If the main thread is stuck instead (in a terminal read that a dead
/// pty never answers), this thread restores the terminal and exits after [`GRACE`]: the kernel
/// detaches the probes when the process's file descriptors close, and the recording stays
/// valid up to its last complete chunk (flushed at least every second).
///
/// It sleeps in a read of a pipe that the stop signals' handlers write a byte to, so it never
/// wakes while nothing happens (a tracer's own wakeups disturb what it measures); where the
/// pipe cannot be set up it looks at the stop flag ten times a second instead.
fn spawn_watchdog() {
    let woken = stop_pipe();
    if woken.is_none() {
        log::warn!("no stop-signal pipe: the watchdog polls");
    }
    let spawned = std::thread::Builder::new()
        .name("wakeviz-watchdog".into())
        .spawn(move || {
            match woken {
                Some(mut r) => {
                    use std::io::Read as _;
                    let mut byte = [0u8; 1];
                    // Only a stop signal writes; an error or the end (never expected) falls
                    // back to the flag.
                    while !matches!(r.read(&mut byte), Ok(1)) && !stop_requested() {
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
                None => {
                    while !stop_requested() {
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
            }
            std::thread::sleep(GRACE);
            restore_terminal();
            // Exiting does not unwind: what a guard would undo is undone here.
            kill_child_group();
            let restored = restore_all();
            say!(
                "wakeviz: still running {} s after a stop signal: exiting (a recording is valid up to its last complete chunk)",
                GRACE.as_secs()
            );
            std::process::exit(if restored {
                1
            } else {
                i32::from(EXIT_NOT_RESTORED)
            });
        });
    if let Err(e) = spawned {
        log::warn!("no signal watchdog: {e}");
    }
}

/// A pipe whose write end every stop signal's handler writes a byte to (a non-blocking write,
/// async-signal-safe); its read end.
fn stop_pipe() -> Option<std::os::unix::net::UnixStream> {
    let (r, w) = std::os::unix::net::UnixStream::pair().ok()?;
    w.set_nonblocking(true).ok()?;
    for sig in stop_signals() {
        let w = w.try_clone().ok()?;
        if let Err(e) = signal_hook::low_level::pipe::register(sig, w) {
            log::warn!("cannot wake the watchdog on signal {sig}: {e}");
        }
    }
    Some(r)
}
