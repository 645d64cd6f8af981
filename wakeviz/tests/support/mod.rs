//! What the live tests share. Each test crate compiles this module on its own and not every
//! one uses every helper, hence the `dead_code` allowances.

/// Whether this test can do what needs root (load BPF, write sysctls and scheduler features).
/// When it cannot, the test says on stderr that it was skipped and returns; CI runs as root,
/// so there a skip fails the test instead of passing silently.
#[allow(dead_code)]
pub fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    let name = std::thread::current().name().unwrap_or("?").to_string();
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{name}: CI runs as root: a test that needs root must not be skipped"
    );
    eprintln!("SKIPPED {name}: needs root");
    false
}

/// Whether the machine has at least `n` CPUs; when not, the test says it was skipped.
#[allow(dead_code)]
pub fn cpus(n: usize) -> bool {
    let have = std::thread::available_parallelism().map_or(1, usize::from);
    if have < n {
        let name = std::thread::current().name().unwrap_or("?").to_string();
        eprintln!("SKIPPED {name}: needs {n} CPUs, this machine has {have}");
    }
    have >= n
}

/// A pseudo-terminal of `cols` x `rows`: (master, slave), both close-on-exec so a child holds
/// only the copies it is given (a child holding the master would keep the terminal from ever
/// hanging up).
#[allow(dead_code)]
pub fn pty(cols: u16, rows: u16) -> (std::fs::File, std::fs::File) {
    use std::os::fd::FromRawFd as _;
    let (mut master, mut slave) = (-1, -1);
    let ws = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: two out-pointers to c_int; no name buffer; the window size is read only.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &ws,
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    for fd in [master, slave] {
        // SAFETY: fcntl on a descriptor openpty just returned.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    // SAFETY: openpty returned two open descriptors that nothing else owns.
    unsafe {
        (
            std::fs::File::from_raw_fd(master),
            std::fs::File::from_raw_fd(slave),
        )
    }
}

/// Makes `c`'s stdin (a pty slave) the controlling terminal of a new session, as under a
/// terminal emulator, so that closing the master hangs the child's terminal up.
#[allow(dead_code)]
pub fn controlling_terminal(c: &mut std::process::Command) {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: between fork and exec only setsid and ioctl run (async-signal-safe).
    unsafe {
        c.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}
