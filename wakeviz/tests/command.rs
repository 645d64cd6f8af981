//! `wakeviz --record F -- CMD`: the workload's exit status passes through, its result reaches
//! the recording, a command that cannot start leaves nothing behind, and Ctrl-C stops both.
//! Needs root (BPF); without it each test prints SKIPPED.
mod support;

use std::{
    path::Path,
    process::{Command, Output, Stdio},
    sync::Mutex,
    time::{Duration, Instant},
};

const BIN: &str = env!("CARGO_BIN_EXE_wakeviz");
static SERIAL: Mutex<()> = Mutex::new(());

fn record(path: &Path, cmd: &[&str], extra: &[&str]) -> Output {
    Command::new(BIN)
        .arg("--record")
        .arg(path)
        .arg("--headless")
        .args(extra)
        .arg("--")
        .args(cmd)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn replay_json(path: &Path) -> serde_json::Value {
    replay_json_with(path, &[])
}

#[test]
fn exit_status_passes_through_and_is_recorded() {
    if !support::root() {
        return;
    }
    let _g = SERIAL.lock();
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("seven.wvz");
    let out = record(
        &f,
        &["sh", "-c", "echo to-stdout; echo to-stderr >&2; exit 7"],
        &["--label", "tip"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(7), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("to-stdout"));
    assert!(stderr.contains("to-stderr"), "{stderr}");
    let j = replay_json(&f);
    let r = &j["recording"];
    assert_eq!(r["workload"]["exit_code"], 7);
    assert_eq!(r["workload"]["signal"], serde_json::Value::Null);
    assert_eq!(r["run"]["label"], "tip");
    assert_eq!(r["run"]["command"][0], "sh");
    assert!(
        r["run"]["start_utc"]
            .as_str()
            .is_some_and(|s| s.ends_with('Z'))
    );
    assert!(r["capture_duration_ns"].as_u64().is_some_and(|n| n > 0));
}

#[test]
fn redact_comm_hides_the_hostname() {
    if !support::root() {
        return;
    }
    let _g = SERIAL.lock();
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("red.wvz");
    let out = record(&f, &["true"], &["--redact-comm"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j = replay_json(&f);
    let host = j["recording"]["hostname"].as_str().unwrap().to_string();
    assert!(host.starts_with("h-") && host.len() == 10, "{host}");
    let real = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let file = std::fs::read(&f).unwrap();
    // The header is plain JSON at the start of the file.
    let field = format!("\"hostname\":\"{}\"", real.trim());
    assert!(
        !file.windows(field.len()).any(|w| w == field.as_bytes()),
        "{field} is in the file"
    );
}

#[test]
fn a_command_that_cannot_start_leaves_no_recording() {
    if !support::root() {
        return;
    }
    let _g = SERIAL.lock();
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("none.wvz");
    let out = record(&f, &["/nonexistent"], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(127), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one clear line: {stderr}");
    assert!(stderr.contains("/nonexistent"), "{stderr}");
    assert!(!f.exists(), "no recording may be left behind");
}

#[test]
fn benchmark_result_reaches_the_recording() {
    if !support::root() {
        return;
    }
    if Command::new("hackbench").arg("--help").output().is_err() {
        eprintln!("SKIPPED: hackbench (rt-tests) is not installed");
        return;
    }
    let _g = SERIAL.lock();
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("hb.wvz");
    let out = record(
        &f,
        &["hackbench", "-g", "1", "-l", "200"],
        &["--metric", "msgs=pass ([0-9]+) messages"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The figure hackbench printed (passed through) is the one recorded.
    let printed: f64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Time:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("hackbench printed no Time:\n{stdout}"));
    let j = replay_json(&f);
    let ms = j["recording"]["workload"]["metrics"]
        .as_array()
        .unwrap()
        .clone();
    let time = ms.iter().find(|m| m["name"] == "hackbench.time_s").unwrap();
    assert_eq!(time["value"].as_f64(), Some(printed));
    assert_eq!(time["higher_is_better"], false);
    let user = ms.iter().find(|m| m["name"] == "msgs").unwrap();
    assert_eq!(user["value"].as_f64(), Some(200.0));
}

#[test]
fn sigint_stops_the_command_and_finalises() {
    if !support::root() {
        return;
    }
    let _g = SERIAL.lock();
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("int.wvz");
    let mut c = Command::new(BIN)
        .arg("--record")
        .arg(&f)
        .args(["--headless", "--", "sleep", "30"])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until it captures (the file has its header), then Ctrl-C.
    let t = Instant::now();
    while !f.exists() && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
    let t = Instant::now();
    let status = c.wait().unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "took {:?} to stop",
        t.elapsed()
    );
    // sleep died of the forwarded SIGINT: 128 + 2, as a shell reports it.
    assert_eq!(status.code(), Some(130));
    let j = replay_json(&f);
    assert_eq!(j["recording"]["workload"]["signal"], 2);
    assert!(j["recording"]["workload"]["duration_ns"].as_u64().unwrap() < 20_000_000_000);
}

/// The threads of a running process, with their names (`/proc/PID/task`).
fn threads(pid: u32) -> Vec<(u32, String)> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let tid: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
        let comm = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm")).ok()?;
        Some((tid, comm.trim().to_string()))
    })
    .collect()
}

/// Every thread wakeviz runs during a capture (drains, the signal watchdog, the command's
/// output copiers, the metrics endpoint while it is scraped) is on the recorded list of its
/// own threads, so none of their wakeups is counted as the workload's; the list is checked
/// against the kernel's `/proc/PID/task` while the capture runs.
#[test]
fn every_thread_wakeviz_runs_is_on_its_own_list() {
    if !support::root() {
        return;
    }
    let _g = SERIAL.lock();
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("own.wvz");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut child = Command::new(BIN)
        .arg("--record")
        .arg(&f)
        .args(["--headless", "--serve", &addr.to_string(), "--"])
        .args([
            "sh",
            "-c",
            "for i in $(seq 40); do echo line $i; echo err $i >&2; sleep 0.05; done",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut seen = std::collections::BTreeMap::new();
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(20) && matches!(child.try_wait(), Ok(None)) {
        // A scrape: the endpoint serves it while the capture runs.
        if let Ok(mut s) = std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
            use std::io::{Read as _, Write as _};
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let _ = s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n");
            let mut sink = Vec::new();
            let _ = s.read_to_end(&mut sink);
        }
        seen.extend(threads(pid));
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("line 40") && stderr.contains("err 40"),
        "the command's output was copied: {stderr}"
    );
    assert!(
        !stderr.contains("own-thread list"),
        "a thread was left off: {stderr}"
    );
    let names: std::collections::BTreeSet<&str> = seen.values().map(String::as_str).collect();
    // `comm` keeps 15 bytes of a name.
    for n in ["wakeviz-tee", "wakeviz-serve", "wakeviz-watchdo"] {
        assert!(names.contains(n), "{n} seen in /proc: {names:?}");
    }
    let j = replay_json(&f);
    let listed: Vec<u64> = j["own_threads"]["tids"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(serde_json::Value::as_u64)
        .collect();
    let missing: Vec<String> = seen
        .iter()
        .filter(|(t, _)| !listed.contains(&u64::from(**t)))
        .map(|(t, n)| format!("{t} {n}"))
        .collect();
    assert!(
        missing.is_empty(),
        "threads seen in /proc but not recorded as wakeviz's own: {missing:?} (listed {listed:?})"
    );
}

fn replay_json_with(path: &Path, extra: &[&str]) -> serde_json::Value {
    let out = Command::new(BIN)
        .arg("--replay")
        .arg(path)
        .args(["--report", "json"])
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "replay: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A neighbour that wakes a few hundred times a second, and forks: never the workload's.
fn spawn_neighbour() -> std::process::Child {
    let c = Command::new("sh")
        .args(["-c", "while :; do sleep 0.002; done"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    c
}

/// Each time one ping-pong thread blocked in its read, the other's write woke it: the kernel's
/// own count of those blocks (voluntary switches, printed by the workload) is the number of
/// the workload's wakeups.
fn kernel_blocks(out: &Output) -> u64 {
    let said = String::from_utf8_lossy(&out.stdout);
    let blocked: u64 = said
        .split("blocked ")
        .skip(1)
        .filter_map(|t| t.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    assert!(blocked > 1_000, "the workload's counts: {said}");
    blocked
}

/// A `-- CMD` capture is about CMD: an unrelated ping-pong beside it is counted outside the
/// scope, not in the placement figures; `--scope all` on the replay brings it back.
#[test]
fn a_command_capture_is_scoped_to_the_command_tree() {
    if !support::root() {
        return;
    }
    let _g = SERIAL.lock();
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("scoped.wvz");
    // A neighbour that wakes a few hundred times a second, and forks: its children are not
    // the command's either.
    let mut neighbour = spawn_neighbour();
    let out = record(
        &f,
        &[
            BIN,
            "workload",
            "pingpong",
            "--iterations",
            "5000",
            "--comm",
            "wvz-cmd",
        ],
        &[],
    );
    let _ = neighbour.kill();
    let _ = neighbour.wait();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let cmd = replay_json(&f);
    assert_eq!(cmd["recording"]["run"]["scope"], "command", "recorded");
    assert_eq!(cmd["scope"]["name"], "cmd");
    let placed = cmd["placement"]["wakeups"]["count"].as_u64().unwrap();
    let outside = cmd["scope"]["outside_wakeups"].as_u64().unwrap();
    let blocked = kernel_blocks(&out);
    // Never more (nothing of the neighbour's leaks in); fewer only by what the capture lost.
    let lost = cmd["drops"]["total"].as_u64().unwrap();
    assert!(
        placed <= blocked + 10 + blocked / 100 && placed + lost + 10 >= blocked,
        "the command's wakeups only: {placed} placed in the tree, {blocked} blocks by the kernel's count, {lost} events lost ({stderr})"
    );
    // The neighbour's count follows the capture's length (a 5000-round-trip ping-pong takes
    // 0.1-0.5 s here), so the bounds only ask for a clear presence.
    assert!(
        outside > 20,
        "the neighbour's wakeups are outside: {outside}"
    );
    let all = replay_json_with(&f, &["--scope", "all"]);
    assert_eq!(all["scope"]["name"], "all");
    let every = all["placement"]["wakeups"]["count"].as_u64().unwrap();
    assert!(
        every >= placed + outside,
        "all ({every}) holds the command's ({placed}) and the rest ({outside})"
    );
    let theirs = replay_json_with(&f, &["--scope", "comm:sleep"]);
    let n = theirs["placement"]["wakeups"]["count"].as_u64().unwrap();
    assert!(
        n > 10 && n <= outside,
        "the neighbour's sleeps alone: {n} of {outside} outside"
    );
}

/// Where cgroup v2 is mounted (`/proc/self/mountinfo`), read here without wakeviz's code.
fn cgroup2_mount() -> Option<std::path::PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    text.lines().find_map(|l| {
        let (pre, post) = l.split_once(" - ")?;
        (post.split_whitespace().next()? == "cgroup2")
            .then(|| pre.split_whitespace().nth(4).map(std::path::PathBuf::from))
            .flatten()
    })
}

/// A cgroup made for one test, removed when it ends (its tasks have exited by then).
struct TestCgroup(std::path::PathBuf);

impl Drop for TestCgroup {
    fn drop(&mut self) {
        // A cgroup can be removed only once the kernel has let go of its last exited task.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.0).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// `--scope cgroup:`: a workload moved into its own cgroup is the scope, the neighbour beside it
/// outside, whether the cgroup is named by its id or by its path; the kernel's own count of the
/// workload's blocks bounds the in-scope wakeups as for the command scope.
#[test]
fn a_cgroup_scope_is_the_tasks_of_that_cgroup() {
    if !support::root() {
        return;
    }
    let Some(mount) = cgroup2_mount() else {
        eprintln!("SKIPPED: no cgroup2 mount");
        return;
    };
    let _g = SERIAL.lock();
    let name = format!("wakeviz-test-{}", std::process::id());
    let cg = TestCgroup(mount.join(&name));
    std::fs::create_dir(&cg.0).unwrap();
    let id = {
        use std::os::unix::fs::MetadataExt as _;
        std::fs::metadata(&cg.0).unwrap().ino()
    };
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("cg.wvz");
    let mut neighbour = spawn_neighbour();
    let script = format!(
        "echo $$ > {}/cgroup.procs && exec {BIN} workload pingpong --iterations 5000 --comm wvz-cg",
        cg.0.display()
    );
    let out = record(&f, &["sh", "-c", &script], &["--scope", "all"]);
    let _ = neighbour.kill();
    let _ = neighbour.wait();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let blocked = kernel_blocks(&out);
    let by_id = replay_json_with(&f, &["--scope", &format!("cgroup:{id}")]);
    let by_path = replay_json_with(&f, &["--scope", &format!("cgroup:/{name}")]);
    assert_eq!(by_id["scope"]["name"], format!("cgroup:{id}"));
    assert_eq!(by_path["scope"]["name"], format!("cgroup:{id}"));
    let placed = by_id["placement"]["wakeups"]["count"].as_u64().unwrap();
    assert_eq!(
        placed,
        by_path["placement"]["wakeups"]["count"].as_u64().unwrap()
    );
    let outside = by_id["scope"]["outside_wakeups"].as_u64().unwrap();
    let lost = by_id["drops"]["total"].as_u64().unwrap();
    assert!(
        placed <= blocked + 10 + blocked / 100 && placed + lost + 10 >= blocked,
        "the cgroup's wakeups only: {placed} placed in it, {blocked} blocks by the kernel's count, {lost} events lost ({stderr})"
    );
    assert!(
        outside > 50,
        "the neighbour's wakeups are outside: {outside}"
    );
    // A cgroup that held nothing of the capture scopes to nothing.
    let root_id = {
        use std::os::unix::fs::MetadataExt as _;
        std::fs::metadata(&mount).unwrap().ino()
    };
    let none = replay_json_with(&f, &["--scope", &format!("cgroup:{}", root_id + 1_000_000)]);
    assert_eq!(none["placement"]["wakeups"]["count"], 0);
}

/// wakeviz lets its own timers fire late to wake the machine less; CMD must not inherit that,
/// or every sleep of the benchmark would end up to 45 ms late.
#[test]
fn the_command_keeps_the_timer_slack_wakeviz_found() {
    if !support::root() {
        return;
    }
    let _g = SERIAL.lock();
    let out = Command::new(BIN)
        .args(["--headless", "--duration", "30s", "--"])
        .args(["cat", "/proc/self/timerslack_ns"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // CMD's stdout is passed through to wakeviz's stderr when no report is asked for.
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    // SAFETY: PR_GET_TIMERSLACK takes no argument and reads the calling thread's value, the
    // one the wakeviz child started with.
    let own = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK) };
    let own = u64::try_from(own).unwrap();
    let cmd: Vec<u64> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
    assert_eq!(cmd, [own], "{text}");
}
