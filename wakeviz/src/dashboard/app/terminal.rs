//! The terminal, restored on every way out: the guard's `Drop` covers quit, errors, Ctrl-C
//! (a key in raw mode) and SIGTERM (the run loops poll `signals::stop_requested` and return);
//! a panic hook restores it before the panic message prints, so the message is readable.
use std::{
    io::{self, Stdout, stdout},
    mem::ManuallyDrop,
    sync::{
        Once,
        atomic::{AtomicBool, Ordering},
    },
};

use ratatui::{
    Terminal,
    backend::CrosstermBackend,
    crossterm::{
        cursor::{Hide, Show},
        execute,
        terminal::{EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode},
    },
};

/// Whether the terminal is in our mode now (so restoring twice is harmless).
static ACTIVE: AtomicBool = AtomicBool::new(false);
static HOOK: Once = Once::new();

pub type Term = Terminal<CrosstermBackend<Stdout>>;

/// Raw mode + alternate screen for as long as it lives.
pub struct TerminalGuard {
    /// Dropped by hand: see the `Drop` below.
    pub term: ManuallyDrop<Term>,
}

impl TerminalGuard {
    pub fn enter() -> io::Result<Self> {
        install_panic_hook();
        crate::signals::on_forced_exit_terminal(restore);
        enable_raw_mode()?;
        ACTIVE.store(true, Ordering::SeqCst);
        if let Err(e) = execute!(stdout(), EnterAlternateScreen, Hide) {
            restore();
            return Err(e);
        }
        match Terminal::new(CrosstermBackend::new(stdout())) {
            Ok(term) => Ok(Self {
                term: ManuallyDrop::new(term),
            }),
            Err(e) => {
                restore();
                Err(e)
            }
        }
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        // ratatui's `Terminal`, dropped with its cursor hidden, shows it and `eprintln!`s a
        // failure, which panics when stderr is the terminal that died. So the cursor is shown
        // here; where that fails the terminal is gone and the `Terminal` is left undropped (a
        // screen buffer and a handle on stdout, reclaimed when the process ends).
        if self.term.show_cursor().is_ok() {
            // SAFETY: `term` is dropped once, here, and `self` is never used after its drop.
            unsafe { ManuallyDrop::drop(&mut self.term) };
        }
        restore();
    }
}

/// Leaves raw mode and the alternate screen, once.
pub fn restore() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        // Raw mode first: it has more side effects than the screen switch. Errors cannot be
        // reported anywhere better than stderr, which may itself be the broken terminal.
        let _ = disable_raw_mode();
        let _ = execute!(stdout(), LeaveAlternateScreen, Show);
    }
}

/// What waiting on the terminal's input found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// Bytes to read (keys, or a terminal reply).
    Ready,
    /// Nothing within the wait (or a signal interrupted it).
    Quiet,
    /// The terminal hung up (tmux killed, ssh dropped) or the descriptor broke.
    Gone,
}

/// Waits up to `wait` for input on the terminal, with poll(2) rather than crossterm: crossterm's
/// reader loops forever on a hung-up terminal (its read loop retries EOF and EIO), at 100 % CPU
/// and deaf to signals, so it is only asked for keys once input is known to be waiting.
pub fn wait_input(wait: std::time::Duration) -> Input {
    let Some(fd) = input_fd() else {
        std::thread::sleep(wait);
        return Input::Quiet;
    };
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = libc::c_int::try_from(wait.as_millis().min(60_000)).unwrap_or(60_000);
    // SAFETY: one valid, initialised pollfd and a count of 1; the timeout is bounded.
    let r = unsafe { libc::poll(&mut p, 1, ms) };
    if r <= 0 {
        return Input::Quiet;
    }
    if p.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
        Input::Gone
    } else {
        Input::Ready
    }
}

/// The descriptor crossterm reads keys from: stdin when it is a terminal, else /dev/tty.
fn input_fd() -> Option<libc::c_int> {
    static TTY: std::sync::OnceLock<Option<std::fs::File>> = std::sync::OnceLock::new();
    // SAFETY: isatty only inspects the descriptor.
    if unsafe { libc::isatty(libc::STDIN_FILENO) } == 1 {
        return Some(libc::STDIN_FILENO);
    }
    TTY.get_or_init(|| std::fs::File::open("/dev/tty").ok())
        .as_ref()
        .map(std::os::fd::AsRawFd::as_raw_fd)
}

/// The terminal went away: SIGHUP, or the screen's side of the pty reports a hang-up or an
/// error. A dashboard must then end, not spin.
pub fn gone() -> bool {
    crate::signals::hangup() || hung_up(libc::STDOUT_FILENO)
}

/// The input side hung up: checked right before every call into crossterm's reader, which
/// would otherwise spin on it.
pub fn input_gone() -> bool {
    input_fd().is_some_and(hung_up)
}

fn hung_up(fd: libc::c_int) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    };
    // SAFETY: one valid, initialised pollfd and a count of 1; a zero timeout never blocks.
    let r = unsafe { libc::poll(&mut p, 1, 0) };
    r > 0 && p.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0
}

fn install_panic_hook() {
    HOOK.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            prev(info);
        }));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hook must leave raw mode before the default hook prints, or the panic message lands
    /// on the alternate screen and vanishes with it. (No TTY here: `restore` still runs, its
    /// terminal calls fail harmlessly, and the state flag shows that it ran.)
    #[test]
    fn panic_hook_restores_the_terminal() {
        install_panic_hook();
        ACTIVE.store(true, Ordering::SeqCst);
        let joined = std::thread::spawn(|| panic!("deliberate panic in a test")).join();
        assert!(joined.is_err());
        assert!(
            !ACTIVE.load(Ordering::SeqCst),
            "the panic hook did not restore the terminal"
        );
        // Restoring twice is harmless.
        restore();
    }
}
