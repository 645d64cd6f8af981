//! The binary under hostile recordings (the reading side): every crafted case from
//! `wakeviz-core/tests/hostile_craft`, non-regular files, and the worst amplifications, replayed
//! in each mode (`--report json`, `--dump jsonl`, counts) under a 1 GiB address-space limit and
//! a timeout, so an amplification fails here instead of passing slowly. Refused files must give
//! exit code 1 and one line naming the file; nothing may panic (101) or abort (134).
use std::{
    io::Read as _,
    os::unix::process::{CommandExt as _, ExitStatusExt as _},
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

#[path = "../../wakeviz-core/tests/hostile_craft/mod.rs"]
mod hostile_craft;

const BIN: &str = env!("CARGO_BIN_EXE_wakeviz");
const AS_LIMIT: u64 = 1 << 30;
const MODES: [&[&str]; 3] = [&["--report", "json"], &["--dump", "jsonl"], &[]];

struct Run {
    code: Option<i32>,
    signal: Option<i32>,
    stderr: String,
    took: Duration,
}

/// Runs `wakeviz --replay path args` with RLIMIT_AS = 1 GiB, killing it after `timeout`.
fn replay(path: &Path, args: &[&str], timeout: Duration) -> Run {
    let mut cmd = Command::new(BIN);
    cmd.arg("--replay").arg(path).args(args);
    limited(cmd, path, args, timeout)
}

/// `wakeviz workload extract path --scope all`, under the same limits.
fn extract(path: &Path, timeout: Duration) -> Run {
    let mut cmd = Command::new(BIN);
    cmd.args(["workload", "extract"])
        .arg(path)
        .args(["--scope", "all"]);
    limited(cmd, path, &["workload extract"], timeout)
}

/// `wakeviz workload simulate path --scope all --policy sis_util`, under the same limits.
fn simulate(path: &Path, timeout: Duration) -> Run {
    let mut cmd = Command::new(BIN);
    cmd.args(["workload", "simulate"])
        .arg(path)
        .args(["--scope", "all", "--policy", "sis_util"]);
    limited(cmd, path, &["workload simulate"], timeout)
}

fn limited(mut cmd: Command, path: &Path, args: &[&str], timeout: Duration) -> Run {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: between fork and exec only setrlimit runs, which is async-signal-safe and
    // touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: AS_LIMIT,
                rlim_max: AS_LIMIT,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let start = Instant::now();
    let mut child = cmd.spawn().expect("spawn wakeviz");
    let mut err = child.stderr.take().expect("piped stderr");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{} {args:?}: still running after {timeout:?} (hang or amplification)",
                path.display()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Run {
        code: status.code(),
        signal: status.signal(),
        stderr: reader.join().expect("stderr reader"),
        took: start.elapsed(),
    }
}

fn assert_refused(path: &Path, args: &[&str], r: &Run) {
    let what = format!("{} {args:?}: {:?}", path.display(), r.stderr);
    assert_eq!(r.signal, None, "killed by a signal: {what}");
    assert_eq!(r.code, Some(1), "exit code: {what}");
    let lines: Vec<&str> = r.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "not a one-line error: {what}");
    let name = path.file_name().unwrap().to_string_lossy();
    assert!(
        lines[0].contains(&*name),
        "error does not name the file: {what}"
    );
    assert!(!r.stderr.contains("panicked"), "{what}");
}

fn assert_replayed(path: &Path, args: &[&str], r: &Run) {
    let what = format!("{} {args:?}: {:?}", path.display(), r.stderr);
    assert_eq!(r.signal, None, "killed by a signal: {what}");
    assert!(!matches!(r.code, Some(101 | 134)), "panic or abort: {what}");
    // 3: replayed, with a warning about the file (damage, or bytes it ignored; docs/reference/exit-codes.md).
    match r.code {
        Some(0) => {}
        Some(3) => assert!(
            r.stderr.contains("warning:"),
            "exit 3 without a warning: {what}"
        ),
        c => panic!("exit code {c:?}: {what}"),
    }
}

/// A simulation of a readable file: a report, or, when its workload has no task to run, one
/// line that names the file.
fn assert_simulated(path: &Path, r: &Run) {
    if r.code == Some(1) && r.stderr.contains("no task that runs") {
        assert_refused(path, &["workload simulate"], r);
    } else {
        assert_replayed(path, &["workload simulate"], r);
    }
}

#[test]
fn crafted_recordings_are_refused_or_replayed_within_bounds() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes, refused) in hostile_craft::cases() {
        let path = dir.path().join(format!("{name}.wvz"));
        std::fs::write(&path, bytes).unwrap();
        for args in MODES {
            let r = replay(&path, args, Duration::from_secs(30));
            if refused {
                assert_refused(&path, args, &r);
            } else {
                assert_replayed(&path, args, &r);
            }
        }
        let r = extract(&path, Duration::from_secs(30));
        if refused {
            assert_refused(&path, &["workload extract"], &r);
        } else {
            assert_replayed(&path, &["workload extract"], &r);
        }
        let r = simulate(&path, Duration::from_secs(30));
        if refused {
            assert_refused(&path, &["workload simulate"], &r);
        } else {
            assert_simulated(&path, &r);
        }
    }
}

#[test]
fn data_after_end_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let (_, bytes, _) = hostile_craft::cases()
        .into_iter()
        .find(|c| c.0 == "data-after-end")
        .unwrap();
    let path = dir.path().join("tail.wvz");
    std::fs::write(&path, bytes).unwrap();
    let r = replay(&path, &["--report", "json"], Duration::from_secs(10));
    assert_replayed(&path, &[], &r);
    assert_eq!(
        r.code,
        Some(3),
        "bytes ignored: exit 3 (docs/reference/exit-codes.md)"
    );
    assert!(
        r.stderr.contains("1000 byte(s) after the END chunk"),
        "{:?}",
        r.stderr
    );
}

#[test]
fn fifos_devices_and_directories_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.wvz");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let zero = dir.path().join("zero.wvz");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let sub = dir.path().join("dir.wvz");
    std::fs::create_dir(&sub).unwrap();
    for path in [&fifo, &zero, &sub] {
        for args in MODES {
            let r = replay(path, args, Duration::from_secs(5));
            assert_refused(path, args, &r);
            assert!(r.stderr.contains("not a regular file"), "{:?}", r.stderr);
        }
    }
}

#[test]
fn os_errors_are_printed_once() {
    let path = Path::new("/nonexistent/h3-missing.wvz");
    let r = replay(path, &["--report", "json"], Duration::from_secs(5));
    assert_refused(path, &[], &r);
    assert_eq!(r.stderr.matches("os error 2").count(), 1, "{:?}", r.stderr);
}

#[test]
fn per_pid_state_stays_within_its_budget() {
    // A million wakings of distinct pids by distinct wakers, none ever woken up: every per-pid
    // map of the joiner, the analyses and the shadow state meets each of them.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pids.wvz");
    std::fs::write(&path, hostile_craft::pending_wakings(1_000_000)).unwrap();
    for args in MODES {
        let r = replay(&path, args, Duration::from_secs(60));
        assert_replayed(&path, args, &r);
    }
    let r = extract(&path, Duration::from_secs(60));
    assert_replayed(&path, &["workload extract"], &r);
    let r = simulate(&path, Duration::from_secs(60));
    assert_simulated(&path, &r);
    // The analyses' maps hit the budget: the report says so (a labelled degraded result).
    let r = replay(&path, &["--report", "json"], Duration::from_secs(60));
    assert_eq!(r.code, Some(3), "{:?}", r.stderr);
    assert!(
        r.stderr.contains("per-task entries were evicted"),
        "{:?}",
        r.stderr
    );
}

#[test]
fn a_report_at_the_cpu_limit_finishes_in_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("8192.wvz");
    let pids = (0..100_000).map(|i| i % 5000 + 1);
    let bytes = hostile_craft::file(
        hostile_craft::topology(8192, 16),
        &hostile_craft::rounds(pids, 8192),
    );
    std::fs::write(&path, bytes).unwrap();
    let r = replay(&path, &["--report", "json"], Duration::from_secs(30));
    assert_replayed(&path, &[], &r);
    // 0.8 s here; the setup used to be cubic in CPUs (30 s).
    assert!(r.took < Duration::from_secs(15), "took {:?}", r.took);
}
