//! What the live tests share. Each test crate compiles this module on its own and not every
//! one uses every helper, hence the `dead_code` allowances.

/// What `bin --replay file ARGS...` printed on stdout (`--dump jsonl`, `--report json`);
/// fails the test with its stderr when it does not succeed.
#[allow(dead_code)]
pub fn replay(bin: &str, file: &std::path::Path, args: &[&str]) -> Vec<u8> {
    let out = std::process::Command::new(bin)
        .arg("--replay")
        .arg(file)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{bin} --replay {} {args:?}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

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

/// A copy of the binary `bin` that any user can run, for the tests that run wakeviz
/// unprivileged: the build's own may sit under a directory only root can enter (a clone in
/// `/root`). Keep the directory until the command has run.
#[allow(dead_code)]
pub fn binary_for_anyone(bin: &std::path::Path) -> (tempfile::TempDir, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt as _;
    let d = tempfile::Builder::new()
        .prefix("wakeviz-bin")
        .tempdir()
        .expect("a temporary directory");
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755))
        .expect("chmod 755 the temporary directory");
    let copy = d.path().join("wakeviz");
    std::fs::copy(bin, &copy).expect("copy the wakeviz binary");
    (d, copy)
}

/// `c` as the unprivileged user `nobody` (uid and gid 65534), running a copy of its program
/// that user can run ([`binary_for_anyone`]); stdin is closed. Keep the directory until the
/// command has run.
#[allow(dead_code)]
pub fn as_nobody(c: &std::process::Command) -> (tempfile::TempDir, std::process::Command) {
    use std::os::unix::process::CommandExt as _;
    let (dir, copy) = binary_for_anyone(std::path::Path::new(c.get_program()));
    let mut n = std::process::Command::new(copy);
    n.args(c.get_args()).stdin(std::process::Stdio::null());
    for (k, v) in c.get_envs() {
        match v {
            Some(v) => n.env(k, v),
            None => n.env_remove(k),
        };
    }
    if let Some(cwd) = c.get_current_dir() {
        n.current_dir(cwd);
    }
    n.uid(65534).gid(65534);
    (dir, n)
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

/// A tracefs instance of the test's own (`/sys/kernel/tracing/instances/NAME`): the kernel's
/// own trace as the ground truth, apart from the global buffer. Dropping it switches off what
/// it enabled (events, options) and removes the instance.
#[allow(dead_code)]
pub struct TraceInstance {
    dir: std::path::PathBuf,
    enabled: Vec<String>,
    options: Vec<String>,
}

#[allow(dead_code)]
impl TraceInstance {
    /// Creates the instance (mounting tracefs first if needed), replacing a leftover one.
    pub fn new(name: &str) -> Self {
        let root = std::path::Path::new("/sys/kernel/tracing");
        if !root.join("instances").exists() {
            let _ = std::process::Command::new("mount")
                .args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"])
                .status();
        }
        let dir = root.join("instances").join(name);
        let _ = std::fs::remove_dir(&dir);
        std::fs::create_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        Self {
            dir,
            enabled: Vec::new(),
            options: Vec::new(),
        }
    }

    /// Sets `options/NAME` (switched off again on drop).
    pub fn option(&mut self, name: &str) {
        self.write(&format!("options/{name}"), "1");
        self.options.push(name.to_string());
    }

    /// Writes one of the instance's files (`buffer_size_kb`, `options/record-tgid`, ...).
    pub fn write(&self, file: &str, v: &str) {
        std::fs::write(self.dir.join(file), v).unwrap_or_else(|e| panic!("{file}: {e}"));
    }

    /// Enables `sched/EVENT` with `filter`.
    pub fn enable(&mut self, event: &str, filter: &str) {
        self.write(&format!("events/sched/{event}/filter"), filter);
        self.write(&format!("events/sched/{event}/enable"), "1");
        self.enabled.push(event.to_string());
    }

    pub fn on(&self) {
        self.write("tracing_on", "1");
    }

    /// Stops tracing and returns the trace's text.
    pub fn text(&self) -> String {
        self.write("tracing_on", "0");
        std::fs::read_to_string(self.dir.join("trace")).expect("reading the trace")
    }
}

impl Drop for TraceInstance {
    fn drop(&mut self) {
        let _ = std::fs::write(self.dir.join("tracing_on"), "0");
        for ev in &self.enabled {
            let _ = std::fs::write(self.dir.join(format!("events/sched/{ev}/enable")), "0");
        }
        for o in &self.options {
            let _ = std::fs::write(self.dir.join(format!("options/{o}")), "0");
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Checks the `bpf: verifier PROGRAM N` lines `--bpf-stats` printed in `stderr`: `program`
/// has one, and no program needed more than `wakeviz_common::PROBE_VERIFIER_BUDGET_INSNS`.
/// Says on stderr that it was skipped where the kernel does not count them (before 5.16).
#[allow(dead_code)]
pub fn assert_verifier_cost(stderr: &str, program: &str) {
    let verified: Vec<(&str, u32)> = stderr
        .lines()
        .filter_map(wakeviz_common::verifier::parse_line)
        .collect();
    if verified.is_empty() {
        eprintln!("SKIPPED verifier cost checks: no verified_insns before Linux 5.16\n{stderr}");
        return;
    }
    assert!(verified.iter().any(|(p, _)| *p == program), "{stderr}");
    for (p, n) in &verified {
        let budget = wakeviz_common::PROBE_VERIFIER_BUDGET_INSNS;
        assert!(
            *n <= budget,
            "{p}: {n} verified instructions, want at most {budget}\n{stderr}"
        );
    }
}
