//! What happens to a recording when things go wrong: kill -9, a full disk, signals, a ring
//! buffer too small for the load. Needs root (BPF, tmpfs); CI runs as root.
mod support;

use std::{
    io::{BufRead as _, BufReader, Read as _},
    os::unix::fs::PermissionsExt as _,
    path::Path,
    process::{Child, Command, Output, Stdio},
    sync::Mutex,
    time::Duration,
};

const BIN: &str = env!("CARGO_BIN_EXE_wakeviz");
static SERIAL: Mutex<()> = Mutex::new(());

#[expect(
    clippy::zombie_processes,
    reason = "the child is returned to the caller, which always waits for it"
)]
/// Starts `wakeviz --record path ...` and waits until it captures. Returns the child and the
/// stderr read so far (the rest stays in the pipe).
fn start(path: &Path, extra: &[&str]) -> (Child, BufReader<std::process::ChildStderr>, String) {
    let mut c = Command::new(BIN)
        .arg("--record")
        .arg(path)
        .args(["--headless", "--duration", "120s"])
        .args(extra)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(c.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut l = String::new();
        if err.read_line(&mut l).unwrap() == 0 {
            let _ = c.wait();
            panic!("wakeviz exited before capturing:\n{seen}");
        }
        seen.push_str(&l);
        if l.contains("capturing") {
            return (c, err, seen);
        }
    }
}

fn finish(
    mut c: Child,
    mut err: BufReader<std::process::ChildStderr>,
    mut seen: String,
) -> (bool, String) {
    let mut rest = String::new();
    err.read_to_string(&mut rest).unwrap();
    seen.push_str(&rest);
    (c.wait().unwrap().success(), seen)
}

fn signal(c: &Child, sig: i32) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(c.id() as i32, sig) };
}

fn workload(args: &[&str]) {
    let out = Command::new(BIN)
        .arg("workload")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn replay(path: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("--replay")
        .arg(path)
        .args(args)
        .output()
        .unwrap()
}

fn total_events(o: &Output) -> u64 {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Parses "accounting: offered A = delivered B + dropped C + undecodable D".
fn accounting(stderr: &str) -> (u64, u64, u64, u64) {
    let l = stderr
        .lines()
        .find(|l| l.contains("accounting:"))
        .unwrap_or_else(|| panic!("no accounting line:\n{stderr}"));
    let n: Vec<u64> = l
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|t| t.parse().ok())
        .collect();
    (n[0], n[1], n[2], n[3])
}

#[test]
fn sigterm_and_sigint_finalize_the_file_and_accounting_is_exact() {
    if !support::root() {
        return;
    }
    let _g = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.wvz");
        let (c, err, seen) = start(&p, &[]);
        workload(&["pingpong", "--iterations", "3000"]);
        signal(&c, sig);
        let (ok, stderr) = finish(c, err, seen);
        assert!(ok, "{stderr}");
        let (offered, delivered, dropped, bad) = accounting(&stderr);
        assert_eq!(offered, delivered + dropped + bad, "{stderr}");
        assert_eq!(bad, 0, "{stderr}");
        let r = replay(&p, &[]);
        assert!(r.status.success());
        // A finalized file has its END chunk: no "cut short" warning.
        assert!(
            r.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&r.stderr)
        );
        assert_eq!(total_events(&r), delivered);
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "recordings are private by default");
    }
}

#[test]
fn kill_9_leaves_a_file_that_replays_every_flushed_chunk() {
    if !support::root() {
        return;
    }
    let _g = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.wvz");
    let (c, _err, _seen) = start(&p, &[]);
    workload(&["pingpong", "--iterations", "5000"]);
    // Chunks are flushed at least every second: wait for one more flush, then kill.
    std::thread::sleep(Duration::from_millis(1500));
    let size_before_kill = std::fs::metadata(&p).unwrap().len();
    signal(&c, libc::SIGKILL);
    let mut c = c;
    let _ = c.wait();
    assert!(size_before_kill > 1000, "nothing was flushed within 1.5 s");
    let r = replay(&p, &[]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(
        r.status.code(),
        Some(3),
        "a replay of a damaged recording exits 3 (docs/reference/exit-codes.md): {err}"
    );
    assert!(
        err.contains("cut short") || err.contains("damaged") || err.contains("truncated"),
        "{err}"
    );
    assert!(
        total_events(&r) > 5000,
        "{}",
        String::from_utf8_lossy(&r.stdout)
    );
    // The dump of the same file works too.
    assert_eq!(replay(&p, &["--dump", "jsonl"]).status.code(), Some(3));
}

#[test]
fn full_disk_stops_with_one_clear_line_and_keeps_a_valid_file() {
    if !support::root() {
        return;
    }
    let _g = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=96k", "tmpfs"])
        .arg(&mnt)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("SKIPPED: cannot mount a tmpfs here");
        return;
    }
    let p = mnt.join("t.wvz");
    let (c, err, seen) = start(&p, &[]);
    // A first chunk fits and is flushed; then far more events than 96 KiB can hold (a chunk
    // is ~2.5 bytes per event: 256 KiB was not always filled).
    workload(&["pingpong", "--iterations", "2000"]);
    std::thread::sleep(Duration::from_millis(1500));
    workload(&[
        "fanout",
        "--groups",
        "2",
        "--receivers",
        "4",
        "--loops",
        "40000",
    ]);
    // The capture stops by itself at the first failed write: no signal is needed.
    let mut c = c;
    let start = std::time::Instant::now();
    let mut stopped_alone = false;
    while start.elapsed() < Duration::from_secs(5) {
        if c.try_wait().ok().flatten().is_some() {
            stopped_alone = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if !stopped_alone {
        signal(&c, libc::SIGINT);
    }
    let (ok, stderr) = finish(c, err, seen);
    let r = replay(&p, &[]);
    let _ = Command::new("umount").arg(&mnt).status();
    assert!(
        stopped_alone,
        "the capture ran on after the disk was full:\n{stderr}"
    );
    assert!(!ok, "a full disk must fail the capture:\n{stderr}");
    let last = stderr.trim().lines().last().unwrap_or("");
    assert!(
        last.contains("No space left") && last.contains("valid up to"),
        "{stderr}"
    );
    // No END chunk after a failed write: a replay of the intact chunks, exit 3.
    assert_eq!(
        r.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    let held = total_events(&r);
    assert!(held > 0);
    // The summary counts only what reached the file.
    let wrote: u64 = stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("wrote "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no 'wrote N events' line:\n{stderr}"));
    assert_eq!(
        wrote, held,
        "the summary claims events the file does not hold"
    );
}

#[test]
fn tiny_ring_buffer_counts_drops_and_loses_nothing_else() {
    if !support::root() {
        return;
    }
    let _g = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.wvz");
    let (c, err, seen) = start(&p, &["--ringbuf-bytes", "4096"]);
    workload(&[
        "fanout",
        "--groups",
        "4",
        "--receivers",
        "8",
        "--loops",
        "3000",
    ]);
    signal(&c, libc::SIGINT);
    let (ok, stderr) = finish(c, err, seen);
    assert!(ok, "{stderr}");
    let (offered, delivered, dropped, bad) = accounting(&stderr);
    assert!(
        dropped > 0,
        "a one-page ring buffer under fan-out load must drop:\n{stderr}"
    );
    assert_eq!(offered, delivered + dropped + bad, "{stderr}");
    let r = replay(&p, &[]);
    assert_eq!(total_events(&r), delivered);
    // Drops are in the recording, for every later report.
    let dump_ok = replay(&p, &["--dump", "jsonl"]).status.success();
    assert!(dump_ok);
}

#[test]
fn redact_comm_keeps_names_out_of_the_file() {
    if !support::root() {
        return;
    }
    let _g = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.wvz");
    let (c, err, seen) = start(&p, &["--redact-comm"]);
    workload(&["pingpong", "--iterations", "2000", "--comm", "secret-name"]);
    signal(&c, libc::SIGINT);
    let (ok, stderr) = finish(c, err, seen);
    assert!(ok, "{stderr}");
    let d = replay(&p, &["--dump", "jsonl"]);
    let text = String::from_utf8_lossy(&d.stdout);
    assert!(!text.contains("secret-name"));
    // Stable hash: the same name maps to the same stand-in everywhere.
    let stand_ins: std::collections::BTreeSet<&str> = text
        .lines()
        .filter(|l| l.contains("\"kind\":\"sched_waking\""))
        .filter_map(|l| l.split("\"comm\":\"").nth(1))
        .filter_map(|r| r.split('"').next())
        .filter(|c| c.starts_with("t-"))
        .collect();
    assert!(!stand_ins.is_empty());
}

/// `--record F` never writes through a symbolic link, never overwrites an existing file
/// without `--force`, keeps the old file as `F.old` with it, and creates F with mode 0600
/// whatever mode the old file had.
#[test]
fn record_never_clobbers_and_never_follows_symlinks() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let link = dir.path().join("x.wvz");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    for extra in [&[][..], &["--force"]] {
        let o = Command::new(BIN)
            .arg("--record")
            .arg(&link)
            .args(["--headless", "--duration", "1s"])
            .args(extra)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains("symbolic link"), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    }
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );

    let existing = dir.path().join("old.wvz");
    std::fs::write(&existing, b"an earlier recording").unwrap();
    std::fs::set_permissions(&existing, std::fs::Permissions::from_mode(0o644)).unwrap();
    let o = Command::new(BIN)
        .arg("--record")
        .arg(&existing)
        .args(["--headless", "--duration", "1s"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("exists") && err.contains("--force"), "{err}");
    assert_eq!(std::fs::read(&existing).unwrap(), b"an earlier recording");

    if !support::root() {
        return;
    }
    let _g = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let o = Command::new(BIN)
        .arg("--record")
        .arg(&existing)
        .args(["--headless", "--duration", "1s", "--force"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("old.wvz.old"), "{err}");
    let old = dir.path().join("old.wvz.old");
    assert_eq!(std::fs::read(&old).unwrap(), b"an earlier recording");
    let mode = std::fs::metadata(&existing).unwrap().permissions().mode() & 0o777;
    assert_eq!(
        mode, 0o600,
        "a new recording is 0600 whatever the old file was"
    );
    assert_eq!(replay(&existing, &[]).status.code(), Some(0));
}
