//! Every way a run ends leaves the machine as it found it: a file-size limit (SIGXFSZ/EFBIG),
//! any terminating signal, `kill -9` of wakeviz (CMD dies with it; the next run finds the
//! features left changed and can restore them), a second run while one holds the settings lock,
//! a restore that cannot be done, a terminal that hangs up under the dashboard. On a plain file
//! standing in for debugfs `sched/features`, with a real CMD. Needs root (BPF, features);
//! without root each test prints SKIPPED, and fails under CI=true.
//!
//! `WAKEVIZ_TEST_BIN` runs them against another build of wakeviz (to see them fail on an
//! older one).
mod support;

use std::{
    ffi::OsString,
    io::Read as _,
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Output, Stdio},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

static SERIAL: Mutex<()> = Mutex::new(());

/// The order and the values of a 6.12 kernel.
const LIST: &str = "PLACE_LAG RUN_TO_PARITY WAKEUP_PREEMPTION NO_HRTICK_DL TTWU_QUEUE SIS_UTIL \
    WA_IDLE WA_WEIGHT WA_BIAS UTIL_EST \n";

/// Documented exit statuses.
const EXIT_NOT_RESTORED: i32 = 4;
const EXIT_SETTINGS_BUSY: i32 = 5;

fn bin() -> OsString {
    std::env::var_os("WAKEVIZ_TEST_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_wakeviz").into())
}

fn features_file(dir: &Path) -> PathBuf {
    let p = dir.join("features");
    std::fs::write(&p, LIST).unwrap();
    p
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

/// A CMD that writes its pid to `pid` and runs until killed; `ignore` lists the signals it
/// ignores (as a workload that does not clean up on SIGTERM would).
fn cmd(pid: &Path, ignore: &str) -> Vec<String> {
    let trap = if ignore.is_empty() {
        String::new()
    } else {
        format!("trap '' {ignore}; ")
    };
    vec![
        "sh".into(),
        "-c".into(),
        format!(
            "{trap}echo $$ > {}.tmp; mv {0}.tmp {0}; while :; do sleep 0.1; done",
            pid.display()
        ),
    ]
}

/// `wakeviz --record REC --headless --sched-features-file F --sched-feature NO_SIS_UTIL -- CMD`
fn run_args(rec: &Path, feats: &Path, feature: &str, argv: &[String]) -> Vec<OsString> {
    let mut v: Vec<OsString> = vec![
        "--record".into(),
        rec.into(),
        "--headless".into(),
        "--sched-features-file".into(),
        feats.into(),
        "--sched-feature".into(),
        feature.into(),
        "--".into(),
    ];
    v.extend(argv.iter().map(OsString::from));
    v
}

fn spawn(args: &[OsString]) -> Child {
    Command::new(bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for CMD's pid file, which it writes once wakeviz has set the features and started it.
fn wait_pid(pid: &Path, child: &mut Child) -> i32 {
    let t = Instant::now();
    loop {
        if let Ok(p) = read(pid).trim().parse::<i32>() {
            return p;
        }
        if let Ok(Some(st)) = child.try_wait() {
            let mut e = String::new();
            if let Some(mut s) = child.stderr.take() {
                let _ = s.read_to_string(&mut e);
            }
            panic!("wakeviz ended ({st}) before CMD ran: {e}");
        }
        assert!(t.elapsed() < Duration::from_secs(60), "CMD never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Dead or a zombie waiting for a reaper that may not exist here.
fn dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

fn wait_dead(pid: i32, within: Duration) -> bool {
    let t = Instant::now();
    while t.elapsed() < within {
        if dead(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    dead(pid)
}

/// Kills a CMD that outlived the test (it failed): nothing is left running.
fn reap(pid: i32) {
    if !dead(pid) {
        // SAFETY: kill(2) on the pid of the CMD this test started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

fn wait_timeout(c: &mut Child, within: Duration) -> ExitStatus {
    let t = Instant::now();
    loop {
        if let Some(s) = c.try_wait().unwrap() {
            return s;
        }
        if t.elapsed() > within {
            let _ = c.kill();
            panic!("wakeviz still runs after {within:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn stderr_of(c: &mut Child) -> String {
    let mut e = String::new();
    if let Some(mut s) = c.stderr.take() {
        let _ = s.read_to_string(&mut e);
    }
    e
}

fn replay(rec: &Path) -> Output {
    Command::new(bin())
        .arg("--replay")
        .arg(rec)
        .output()
        .unwrap()
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) on the pid of a child of this test.
    unsafe { libc::kill(pid as i32, sig) };
}

/// Under a file-size limit the recording's writes fail with EFBIG (SIGXFSZ caught): the
/// capture stops with one line, the feature is restored, CMD is ended, the file is valid up to
/// its last complete chunk.
#[test]
fn a_file_size_limit_stops_the_run_in_order() {
    if !support::root() {
        return;
    }
    let _g = SERIAL.lock();
    let d = tempfile::tempdir().unwrap();
    let feats = features_file(d.path());
    let (rec, pid) = (d.path().join("f.wvz"), d.path().join("pid"));
    let mut c = Command::new("prlimit");
    c.arg("--fsize=30000")
        .arg(bin())
        .args(run_args(&rec, &feats, "NO_SIS_UTIL", &cmd(&pid, "")))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut w = c.spawn().unwrap();
    let p = wait_pid(&pid, &mut w);
    let st = wait_timeout(&mut w, Duration::from_secs(120));
    let err = stderr_of(&mut w);
    let cmd_dead = wait_dead(p, Duration::from_secs(3));
    reap(p);
    assert_eq!(st.code(), Some(1), "an error exit, not SIGXFSZ: {st} {err}");
    assert!(err.contains("File too large"), "{err}");
    assert!(err.contains("restored: SIS_UTIL"), "{err}");
    assert_eq!(read(&feats), LIST, "{err}");
    assert!(cmd_dead, "CMD outlived wakeviz: {err}");
    let r = replay(&rec);
    assert!(
        matches!(r.status.code(), Some(0 | 3)),
        "valid up to its last chunk: {r:?}"
    );
}

/// SIGUSR1, SIGALRM, SIGQUIT: each an orderly stop, like SIGTERM.
#[test]
fn any_terminating_signal_restores_ends_cmd_and_finalises() {
    if !support::root() {
        return;
    }
    let _g = SERIAL.lock();
    for (sig, name) in [
        (libc::SIGUSR1, "SIGUSR1"),
        (libc::SIGALRM, "SIGALRM"),
        (libc::SIGQUIT, "SIGQUIT"),
    ] {
        let d = tempfile::tempdir().unwrap();
        let feats = features_file(d.path());
        let (rec, pid) = (d.path().join("r.wvz"), d.path().join("pid"));
        let mut w = spawn(&run_args(&rec, &feats, "NO_SIS_UTIL", &cmd(&pid, "")));
        let p = wait_pid(&pid, &mut w);
        assert!(read(&feats).contains("NO_SIS_UTIL"), "{name}");
        signal(w.id(), sig);
        let st = wait_timeout(&mut w, Duration::from_secs(30));
        let err = stderr_of(&mut w);
        let cmd_dead = wait_dead(p, Duration::from_secs(3));
        reap(p);
        assert!(st.code().is_some(), "{name} killed wakeviz: {st} {err}");
        assert_eq!(read(&feats), LIST, "{name}: {err}");
        assert!(err.contains(&format!("stopped by {name}")), "{name}: {err}");
        assert!(cmd_dead, "{name}: CMD outlived wakeviz: {err}");
        let r = replay(&rec);
        assert_eq!(
            r.status.code(),
            Some(0),
            "{name}: the recording has its END chunk: {}",
            String::from_utf8_lossy(&r.stderr)
        );
    }
}

/// `kill -9` of wakeviz: CMD gets the parent-death signal; the next run finds the feature left
/// changed, refuses with the command that restores it, and `--restore-leftovers` restores it.
#[test]
fn kill_9_leaves_no_cmd_and_the_next_run_finds_the_leftovers() {
    if !support::root() {
        return;
    }
    let _g = SERIAL.lock();
    let d = tempfile::tempdir().unwrap();
    let feats = features_file(d.path());
    let (rec, pid) = (d.path().join("r.wvz"), d.path().join("pid"));
    let mut w = spawn(&run_args(
        &rec,
        &feats,
        "NO_SIS_UTIL",
        &cmd(&pid, "TERM HUP"),
    ));
    let p = wait_pid(&pid, &mut w);
    signal(w.id(), libc::SIGKILL);
    let _ = w.wait();
    let cmd_dead = wait_dead(p, Duration::from_secs(3));
    reap(p);
    assert!(cmd_dead, "CMD outlived a kill -9 of wakeviz");
    let left = LIST.replace("SIS_UTIL", "NO_SIS_UTIL");
    assert_eq!(read(&feats), left, "nothing could restore it");

    // The next run: refused before changing anything or running CMD.
    let marker = d.path().join("ran");
    let rec2 = d.path().join("r2.wvz");
    let touch = vec!["touch".to_string(), marker.display().to_string()];
    let o = Command::new(bin())
        .args(run_args(&rec2, &feats, "NO_WA_BIAS", &touch))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(EXIT_SETTINGS_BUSY), "{err}");
    assert!(
        err.contains("left scheduler features changed: NO_SIS_UTIL (was SIS_UTIL)"),
        "{err}"
    );
    assert!(
        err.contains(&format!("echo SIS_UTIL > {}", feats.display())),
        "{err}"
    );
    assert!(err.contains("--restore-leftovers"), "{err}");
    assert_eq!(read(&feats), left, "nothing changed");
    assert!(!marker.exists() && !rec2.exists(), "nothing run or created");

    // Restored on request, alone.
    let o = Command::new(bin())
        .arg("--restore-leftovers")
        .arg("--sched-features-file")
        .arg(&feats)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("restored: SIS_UTIL"), "{err}");
    assert_eq!(read(&feats), LIST);

    // And then a run goes through, and leaves nothing behind.
    let o = Command::new(bin())
        .args(run_args(&rec2, &feats, "NO_WA_BIAS", &touch))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(marker.exists());
    assert_eq!(read(&feats), LIST);
}

/// A second run while the first holds the settings: refused with the holder's pid, nothing
/// changed, nothing run; the first restores as usual.
#[test]
fn a_second_run_refuses_while_the_first_holds_the_settings() {
    if !support::root() {
        return;
    }
    let _g = SERIAL.lock();
    let d = tempfile::tempdir().unwrap();
    let feats = features_file(d.path());
    let (rec, pid) = (d.path().join("a.wvz"), d.path().join("pid"));
    let mut a = spawn(&run_args(&rec, &feats, "NO_SIS_UTIL", &cmd(&pid, "")));
    let p = wait_pid(&pid, &mut a);
    let during = read(&feats);
    let (rec_b, marker) = (d.path().join("b.wvz"), d.path().join("ran"));
    let touch = vec!["touch".to_string(), marker.display().to_string()];
    let b = Command::new(bin())
        .args(run_args(&rec_b, &feats, "NO_WA_BIAS", &touch))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err_b = String::from_utf8_lossy(&b.stderr).into_owned();
    let after_b = read(&feats);
    signal(a.id(), libc::SIGTERM);
    let st = wait_timeout(&mut a, Duration::from_secs(30));
    let err_a = stderr_of(&mut a);
    reap(p);
    assert_eq!(b.status.code(), Some(EXIT_SETTINGS_BUSY), "{err_b}");
    assert!(
        err_b.contains(&format!("pid {}", a.id())),
        "names the holder: {err_b}"
    );
    assert_eq!(after_b, during, "B changed nothing");
    assert!(!marker.exists() && !rec_b.exists(), "B ran nothing");
    assert!(st.code().is_some(), "{st}");
    assert_eq!(read(&feats), LIST, "A restored: {err_a}");
}

/// A restore that cannot be done (the file deleted, or its mount made read-only, mid-run):
/// the documented status and the exact command.
#[test]
fn a_failed_restore_exits_4_with_the_command() {
    if !support::root() {
        return;
    }
    let _g = SERIAL.lock();
    let d = tempfile::tempdir().unwrap();
    let feats = features_file(d.path());
    let rec = d.path().join("r.wvz");
    let rm = vec!["rm".to_string(), feats.display().to_string()];
    let o = Command::new(bin())
        .args(run_args(&rec, &feats, "NO_SIS_UTIL", &rm))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(EXIT_NOT_RESTORED), "{err}");
    assert!(
        err.contains(&format!(
            "restore it by hand: echo SIS_UTIL > {}",
            feats.display()
        )),
        "{err}"
    );

    // Read-only mid-run: a tmpfs remounted read-only by CMD.
    let mnt = d.path().join("ro");
    std::fs::create_dir(&mnt).unwrap();
    let sh = |c: &str| {
        Command::new("sh")
            .args(["-c", c])
            .status()
            .is_ok_and(|s| s.success())
    };
    if !sh(&format!(
        "mount -t tmpfs -o size=64k none {}",
        mnt.display()
    )) {
        eprintln!("SKIPPED (read-only half): cannot mount a tmpfs here");
        return;
    }
    let feats = features_file(&mnt);
    let ro = vec![
        "mount".to_string(),
        "-o".into(),
        "remount,ro".into(),
        mnt.display().to_string(),
    ];
    // The lock elsewhere: an open file on the mount would keep it from going read-only.
    let o = Command::new(bin())
        .args(run_args(
            &d.path().join("r2.wvz"),
            &feats,
            "NO_SIS_UTIL",
            &ro,
        ))
        .env("WAKEVIZ_SETTINGS_LOCK", d.path().join("settings.lock"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let content = read(&feats);
    assert!(sh(&format!("umount {}", mnt.display())));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(EXIT_NOT_RESTORED), "{err}");
    assert!(
        err.contains(&format!(
            "restore it by hand: echo SIS_UTIL > {}",
            feats.display()
        )),
        "{err}"
    );
    assert!(content.contains("NO_SIS_UTIL"), "{content}");
}

/// The dashboard's terminal hangs up mid-run (its pty master closed, as when tmux or ssh goes):
/// no panic, the recording is finalised, the feature restored, and a CMD that ignores SIGTERM
/// and SIGHUP is killed.
#[test]
fn a_hung_up_terminal_finalises_and_ends_a_stubborn_cmd() {
    if !support::root() {
        return;
    }
    let _g = SERIAL.lock();
    let d = tempfile::tempdir().unwrap();
    let feats = features_file(d.path());
    let (rec, pid) = (d.path().join("t.wvz"), d.path().join("pid"));
    let (master, slave) = support::pty(120, 40);
    let mut args = run_args(&rec, &feats, "NO_SIS_UTIL", &cmd(&pid, "TERM HUP INT"));
    args.retain(|a| a != "--headless");
    let mut c = Command::new(bin());
    c.args(&args)
        .env("TERM", "xterm")
        .stdin(slave.try_clone().unwrap())
        .stdout(slave.try_clone().unwrap())
        .stderr(slave.try_clone().unwrap());
    support::controlling_terminal(&mut c);
    let mut w = c.spawn().unwrap();
    drop(slave);
    // Drain the screen so wakeviz never blocks on a full pty, until told to hang up.
    let hang_up = Arc::new(AtomicBool::new(false));
    let h = Arc::clone(&hang_up);
    let reader = std::thread::spawn(move || {
        let mut m = master;
        let mut buf = [0u8; 4096];
        let fd = std::os::fd::AsRawFd::as_raw_fd(&m);
        while !h.load(Ordering::SeqCst) {
            let mut p = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd, a bounded timeout.
            if unsafe { libc::poll(&mut p, 1, 50) } > 0 && m.read(&mut buf).unwrap_or(0) == 0 {
                break;
            }
        }
        // Dropping the master hangs the terminal up.
    });
    let p = wait_pid(&pid, &mut w);
    std::thread::sleep(Duration::from_millis(1500));
    hang_up.store(true, Ordering::SeqCst);
    reader.join().unwrap();
    let st = wait_timeout(&mut w, Duration::from_secs(30));
    let cmd_dead = wait_dead(p, Duration::from_secs(3));
    reap(p);
    assert_ne!(
        st.code(),
        Some(101),
        "wakeviz panicked on the dead terminal"
    );
    assert!(st.code().is_some(), "wakeviz was killed: {st}");
    assert!(
        cmd_dead,
        "a CMD that ignores SIGTERM and SIGHUP outlived wakeviz"
    );
    assert_eq!(read(&feats), LIST);
    let r = replay(&rec);
    assert_eq!(
        r.status.code(),
        Some(0),
        "the recording has its END chunk: {}",
        String::from_utf8_lossy(&r.stderr)
    );
}

/// `experiment` finding the features changed after a run (here by the workload itself) puts
/// them back before it stops, and says so.
#[test]
fn experiment_restores_drift_before_stopping() {
    if !support::root() {
        return;
    }
    let _g = SERIAL.lock();
    let d = tempfile::tempdir().unwrap();
    let feats = features_file(d.path());
    let out_dir = d.path().join("exp");
    let o = Command::new(bin())
        .arg("experiment")
        .args(["--setting", "default", "--setting", "NO_SIS_UTIL"])
        .args(["--runs", "1", "--no-shadow", "--out"])
        .arg(&out_dir)
        .arg("--sched-features-file")
        .arg(&feats)
        .args(["--", "sed", "-i", "s/ WA_BIAS/ NO_WA_BIAS/"])
        .arg(&feats)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(read(&feats), LIST, "restored before stopping: {err}");
    assert!(
        err.contains("restored to its value before the experiment: WA_BIAS"),
        "{err}"
    );
    assert!(err.contains("were not as before the experiment"), "{err}");
    assert!(!out_dir.join("NO_SIS_UTIL-1.wvz").exists(), "stopped");
}

/// The watchdog: a run whose main thread is stuck after a stop signal (here, writing its
/// report to a pipe nobody reads) is ended by the watchdog after the grace period, with the
/// feature it set restored and one line saying why. The watchdog sleeps until a stop signal
/// wakes it, so it must still wake for one.
#[test]
fn a_run_stuck_after_a_stop_signal_is_ended_by_the_watchdog() {
    if !support::root() {
        return;
    }
    let _g = SERIAL.lock();
    let d = tempfile::tempdir().unwrap();
    let feats = features_file(d.path());
    let before = read(&feats);
    let mut c = Command::new(bin())
        .args(["--headless", "--report", "json"])
        .args(["--sched-feature", "NO_SIS_UTIL", "--sched-features-file"])
        .arg(&feats)
        .args(["--", "sleep", "1"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A one-page pipe: the report, printed when CMD ends after 1 s, fills it and blocks.
    let out = c
        .stdout
        .as_ref()
        .map(std::os::fd::AsRawFd::as_raw_fd)
        .unwrap();
    // SAFETY: fcntl on a pipe descriptor this test owns.
    assert!(unsafe { libc::fcntl(out, libc::F_SETPIPE_SZ, 4096) } >= 4096);
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(20) && read(&feats) == before {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_secs(3));
    assert!(c.try_wait().unwrap().is_none(), "stuck writing its report");
    assert!(
        read(&feats).contains("NO_SIS_UTIL"),
        "the feature is still set"
    );
    signal(c.id(), libc::SIGTERM);
    let st = wait_timeout(&mut c, Duration::from_secs(8));
    let err = stderr_of(&mut c);
    assert_eq!(st.code(), Some(1), "{err}");
    assert!(
        err.contains("still running 3 s after a stop signal"),
        "{err}"
    );
    assert_eq!(read(&feats), before, "restored by the watchdog");
}
