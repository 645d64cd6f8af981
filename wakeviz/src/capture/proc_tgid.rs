//! A thread's process from `/proc`, for the probes that cannot read it: the classic
//! tracepoints' records carry no tgid. Read once per name fact the drain hands on (the first
//! sight of a task and each rename), so a process's threads are grouped in every mode.

/// `Tgid:` of `/proc/PID/status`; 0 (unknown) for pid 0, a task gone, or a file without it.
pub fn of(pid: u32) -> u32 {
    if pid == 0 {
        return 0;
    }
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| parse(&s))
        .unwrap_or(0)
}

fn parse(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_names_its_process() {
        assert_eq!(
            parse("Name:\tx\nUmask:\t0022\nTgid:\t41\nNgid:\t0\nPid:\t42\n"),
            Some(41)
        );
        assert_eq!(parse("Name:\tx\n"), None);
        assert_eq!(parse("Tgid:\tbad\n"), None);
        // This test's own thread belongs to this process.
        let me = std::process::id();
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() } as u32;
        assert_eq!(of(tid), me);
        assert_eq!(of(0), 0);
    }
}
