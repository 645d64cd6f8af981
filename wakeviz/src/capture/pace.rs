//! The consumer's own schedule: when the main thread reads the per-CPU batches' stamps and the
//! quiet rings (see `drain`). Nothing else in a headless capture wakes it up, so this is what
//! an idle capture costs the machine: one wakeup per [`IDLE_EVERY`].
use std::{
    sync::atomic::{AtomicU64, Ordering},
    time::{Duration, Instant},
};

/// The pace while the machine is busy: the merge holds many events or a ring brought many
/// records. It matches the merge's grace, so the merge holds
/// about two of these of stream.
pub(super) const BUSY_EVERY: Duration = Duration::from_millis(20);

/// The pace of an idle machine, reached by doubling from [`BUSY_EVERY`] after each quiet
/// turn. A quiet CPU's last records reach the merge within this plus [`SLACK`], and leave it
/// one grace later (`wakeviz_core::merge::GRACE_NS`): at most 250 ms after their probe.
pub(super) const IDLE_EVERY: Duration = Duration::from_millis(185);

/// How late the consumer's thread lets its timers fire (`PR_SET_TIMERSLACK`): within that
/// window the kernel expires them with another interrupt of the same CPU, so most turns of an
/// idle capture add no timer interrupt of their own.
pub const SLACK: Duration = Duration::from_millis(45);

/// The consuming thread's timer slack before [`relax_timers`] (0: not changed).
static BEFORE: AtomicU64 = AtomicU64::new(0);

/// Lets this thread's timers fire up to [`SLACK`] late. Call it on the thread that consumes.
pub fn relax_timers() {
    // SAFETY: PR_GET_TIMERSLACK takes no argument and reads the calling thread's value.
    let before = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK) };
    if let Ok(b) = u64::try_from(before)
        && b > 0
    {
        let _ = BEFORE.compare_exchange(0, b, Ordering::Relaxed, Ordering::Relaxed);
    }
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer and affects only the calling thread.
    let r = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, SLACK.as_nanos() as libc::c_ulong) };
    if r != 0 {
        log::debug!("timer slack not set: {}", std::io::Error::last_os_error());
    }
}

/// A process forked by a thread whose timers are relaxed inherits the slack, and every sleep of
/// a benchmark would end up to [`SLACK`] late: the child gets the value from before back.
pub fn unrelaxed_child(c: &mut std::process::Command) {
    use std::os::unix::process::CommandExt as _;
    let before = BEFORE.load(Ordering::Relaxed);
    if before == 0 {
        return;
    }
    // SAFETY: the closure runs in the child between fork and exec, where only
    // async-signal-safe calls are allowed: prctl is, and building an io::Error from an errno
    // does not allocate.
    unsafe {
        c.pre_exec(move || {
            if libc::prctl(libc::PR_SET_TIMERSLACK, before as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Held events past which the pace is [`BUSY_EVERY`], to keep the merge's memory and the
/// stream's delay small under load.
pub(super) const BUSY_HELD: usize = 4096;

/// Records a ring may bring in one turn of the main thread before the next turn leaves it to
/// the ring's own thread instead (about 1 M records a second at [`BUSY_EVERY`]): one thread
/// decoding every ring of a large machine would not keep up.
pub(super) const DIRECT_MAX: u64 = 20_000;

pub(super) struct Pace {
    last: Option<Instant>,
    every: Duration,
}

impl Default for Pace {
    fn default() -> Self {
        Self {
            last: None,
            every: BUSY_EVERY,
        }
    }
}

impl Pace {
    /// How long until the next turn is due (zero: now).
    pub fn next_in(&self) -> Duration {
        self.last
            .map_or(Duration::ZERO, |t| self.every.saturating_sub(t.elapsed()))
    }

    /// A turn was taken now; `busy` says whether it found the machine busy.
    pub fn taken(&mut self, busy: bool) {
        self.last = Some(Instant::now());
        self.every = if busy {
            BUSY_EVERY
        } else {
            (self.every * 2).min(IDLE_EVERY)
        };
    }

    #[cfg(test)]
    fn every(&self) -> Duration {
        self.every
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quiet_machine_backs_off_to_the_idle_pace_and_a_busy_turn_comes_back() {
        let mut p = Pace::default();
        assert_eq!(p.next_in(), Duration::ZERO);
        let mut seen = Vec::new();
        for _ in 0..8 {
            p.taken(false);
            seen.push(p.every());
        }
        assert_eq!(seen.last(), Some(&IDLE_EVERY));
        assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
        assert!(p.next_in() > Duration::ZERO);
        p.taken(true);
        assert_eq!(p.every(), BUSY_EVERY);
    }

    #[test]
    fn the_idle_pace_its_slack_and_the_grace_stay_within_a_quarter_second() {
        let grace = Duration::from_nanos(wakeviz_core::merge::GRACE_NS);
        assert!(IDLE_EVERY + SLACK + grace <= Duration::from_millis(250));
    }
}
