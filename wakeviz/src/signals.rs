//! SIGINT / SIGTERM / SIGHUP as flags the driver polls, so every exit path finalises the
//! recording (END chunk), detaches the probes and restores the terminal; and a watchdog for the
//! case where the main thread cannot get back to polling (a read stuck on a dead terminal).
use std::{
    sync::atomic::{AtomicBool, AtomicI32, Ordering},
    time::{Duration, Instant},
};

static STOP: AtomicBool = AtomicBool::new(false);
static HANGUP: AtomicBool = AtomicBool::new(false);
/// The last stop signal received, so `-- CMD` can be given the same one.
static LAST: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    // Only atomic stores: async-signal-safe.
    if sig == libc::SIGHUP {
        HANGUP.store(true, Ordering::SeqCst);
    }
    LAST.store(sig, Ordering::SeqCst);
    STOP.store(true, Ordering::SeqCst);
}

/// Run by the watchdog before it exits the process (which does not unwind, so no `Drop` runs):
/// `--sched-feature` restores the kernel's features through it.
static BEFORE_FORCED_EXIT: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();

/// Registers `f` for the watchdog's forced exit (the first registration holds).
#[allow(dead_code)] // The benches compile this module without the features.
pub fn before_forced_exit(f: fn()) {
    let _ = BEFORE_FORCED_EXIT.set(f);
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
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: installing a handler that only performs atomic stores, which are
        // async-signal-safe; the function pointer has the C ABI signal handlers need.
        unsafe {
            libc::signal(sig, on_signal as *const () as libc::sighandler_t);
        }
    }
}

pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// The last stop signal received (SIGINT, SIGTERM or SIGHUP), if any.
pub fn last() -> Option<i32> {
    Some(LAST.load(Ordering::SeqCst)).filter(|&s| s != 0)
}

/// SIGHUP arrived: the controlling terminal went away.
pub fn hangup() -> bool {
    HANGUP.load(Ordering::SeqCst)
}

/// Once a stop was requested, the driver detaches the probes and finalises the recording in
/// well under a second. If the main thread is stuck instead (in a terminal read that a dead
/// pty never answers), this thread restores the terminal and exits after [`GRACE`]: the kernel
/// detaches the probes when the process's file descriptors close, and the recording stays
/// valid up to its last complete chunk (flushed at least every second).
fn spawn_watchdog() {
    let spawned = std::thread::Builder::new()
        .name("wakeviz-watchdog".into())
        .spawn(|| {
            let mut since: Option<Instant> = None;
            loop {
                std::thread::sleep(Duration::from_millis(100));
                if !stop_requested() {
                    continue;
                }
                let t = *since.get_or_insert_with(Instant::now);
                if t.elapsed() >= GRACE {
                    crate::app::terminal::restore();
                    // Exiting does not unwind: what a guard would undo is undone here.
                    if let Some(f) = BEFORE_FORCED_EXIT.get() {
                        f();
                    }
                    eprintln!(
                        "wakeviz: still running {} s after a stop signal: exiting (a recording is valid up to its last complete chunk)",
                        GRACE.as_secs()
                    );
                    std::process::exit(1);
                }
            }
        });
    if let Err(e) = spawned {
        log::warn!("no signal watchdog: {e}");
    }
}
