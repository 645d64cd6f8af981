//! `cargo xtask bench [--quick] [--only NAME[,NAME..]]`: every figure of the performance issue,
//! each printed with its target and `met` / `NOT MET`, measured in one run.
//!
//! Machines are shared and noisy, so:
//! - configurations that are compared run in alternation (A/B/C, A/B/C, ...) in the same run
//!   and the median of the rounds is used;
//! - besides wall time, CPU time of the measured thing is taken where it can be (the benchmark
//!   processes' `wait4` rusage, the measuring thread's `CLOCK_THREAD_CPUTIME_ID`);
//! - nothing here is tuned to pass: a target that is missed is printed as `NOT MET`.
//!
//! Sections (`--only`): `overhead` (item 1), `bpf` (2), `drops` (3, live), `ingest` (3,
//! synthetic 256-CPU userspace path), `size` (4; uses the overhead rounds' files), `replay` (5),
//! `frame` (6), `aggregate` (the in-kernel aggregate mode vs streaming, live),
//! `floor` (the pinned pipe against empty tp_btf programs and perf, live),
//! `messaging` (`perf bench sched messaging` under wakeviz, live), `own` (each tracer's own
//! wakeups and the interrupts it adds at idle, its own wakeups under messaging, cyclictest's
//! latency under each, live).
use std::{
    fmt::Write as _,
    io::{BufRead as _, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex, mpsc},
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};

mod floor;
mod frame;
mod ingest;
mod latency;
mod live;
mod merge;
mod own;
mod replay;
mod tracer;

#[derive(clap::Args)]
pub struct Args {
    /// Shorter runs (fewer rounds, 10 s drop test, 1 M / 10 M event replays).
    #[arg(long)]
    pub quick: bool,
    /// Only these sections (comma separated): overhead, bpf, drops, ingest, size, replay, frame,
    /// aggregate, floor, messaging, own.
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Rounds of the floor and messaging sections (default 9, 5 with --quick), of the own
    /// section (default 6, 3 with --quick), and of the replay section on its smaller file
    /// (default 3).
    #[arg(long)]
    pub rounds: Option<usize>,
    /// Use target/release/wakeviz as it is instead of running `cargo build --release -p wakeviz`.
    #[arg(long)]
    pub no_build: bool,
    /// Internal: replay FILE in this process for one stage and print one `BENCH-CHILD` line.
    #[arg(long, hide = true, value_name = "FILE")]
    pub replay_child: Option<PathBuf>,
    /// Internal: the stage for --replay-child (decode, analysis, shadow, full).
    #[arg(long, hide = true, default_value = "decode")]
    pub stage: String,
}

pub const SECTIONS: [&str; 11] = [
    "overhead",
    "bpf",
    "drops",
    "ingest",
    "size",
    "replay",
    "frame",
    "aggregate",
    "floor",
    "messaging",
    "own",
];

/// One figure against its target.
pub struct Row {
    pub item: &'static str,
    pub what: String,
    pub value: String,
    pub target: String,
    /// `None`: informational, or not measured.
    pub met: Option<bool>,
}

#[derive(Default)]
pub struct Summary {
    rows: Vec<Row>,
    notes: Vec<String>,
}

impl Summary {
    pub fn add(
        &mut self,
        item: &'static str,
        what: impl Into<String>,
        value: impl Into<String>,
        target: impl Into<String>,
        met: Option<bool>,
    ) {
        let r = Row {
            item,
            what: what.into(),
            value: value.into(),
            target: target.into(),
            met,
        };
        println!("  => {}", fmt_row(&r));
        self.rows.push(r);
    }

    pub fn note(&mut self, s: impl Into<String>) {
        let s = s.into();
        println!("  note: {s}");
        self.notes.push(s);
    }

    fn print(&self) {
        println!("\n==== summary (every figure measured in this run) ====");
        let mut rows: Vec<&Row> = self.rows.iter().collect();
        rows.sort_by_key(|r| r.item);
        for r in rows {
            println!("{}", fmt_row(r));
        }
        let met = self.rows.iter().filter(|r| r.met == Some(true)).count();
        let not = self.rows.iter().filter(|r| r.met == Some(false)).count();
        println!("targets: {met} met, {not} NOT MET");
        for n in &self.notes {
            println!("note: {n}");
        }
    }
}

fn fmt_row(r: &Row) -> String {
    let verdict = match r.met {
        Some(true) => "met",
        Some(false) => "NOT MET",
        None => "-",
    };
    format!(
        "[{:<3}] {:<58} {:>28}  target {:<26} {}",
        r.item, r.what, r.value, r.target, verdict
    )
}

/// Settings shared by the sections.
pub struct Ctx {
    pub quick: bool,
    pub root: PathBuf,
    pub out: PathBuf,
    pub wakeviz: PathBuf,
}

pub fn run(a: &Args) -> anyhow::Result<()> {
    if let Some(f) = &a.replay_child {
        return replay::child(f, &a.stage);
    }
    for s in &a.only {
        if !SECTIONS.contains(&s.as_str()) {
            bail!("unknown section {s:?}; known: {}", SECTIONS.join(", "));
        }
    }
    let want = |s: &str| a.only.is_empty() || a.only.iter().any(|o| o == s);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("xtask has no parent directory")?
        .to_path_buf();
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let out = root.join("target").join("bench");
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let ctx = Ctx {
        quick: a.quick,
        wakeviz: std::env::var_os("WAKEVIZ_BIN")
            .map_or_else(|| target.join("release").join("wakeviz"), PathBuf::from),
        root,
        out,
    };
    println!(
        "wakeviz bench{}: {} online CPUs, kernel {}, {}; started {}",
        if a.quick { " --quick" } else { "" },
        online_cpus(),
        kernel_release(),
        loadavg(),
        utc_now()
    );
    let mut sum = Summary::default();
    let live_wanted = [
        "overhead",
        "bpf",
        "drops",
        "size",
        "aggregate",
        "floor",
        "messaging",
        "own",
    ]
    .iter()
    .any(|s| want(s));
    let mut live_ok = false;
    if live_wanted {
        match live::preflight(&ctx, a.no_build) {
            Ok(()) => live_ok = true,
            Err(e) => {
                println!("\nlive sections skipped: {e:#}");
                sum.note(format!(
                    "live sections (items 1-4 on this machine) not measured: {e:#}"
                ));
            }
        }
    }
    if live_ok {
        let mut files = None;
        if want("overhead") || want("size") {
            files = Some(live::overhead(&ctx, &mut sum, !want("overhead"))?);
        }
        if want("bpf") {
            live::bpf_stats(&ctx, &mut sum)?;
        }
        if want("drops") {
            live::drops(&ctx, &mut sum)?;
        }
        if want("aggregate") {
            live::aggregate(&ctx, &mut sum)?;
        }
        if want("floor") {
            floor::floor(&ctx, &mut sum, a.rounds)?;
        }
        if want("messaging") {
            floor::messaging(&ctx, &mut sum, a.rounds)?;
        }
        if want("own") {
            own::run(&ctx, &mut sum, a.rounds)?;
        }
        if want("size")
            && let Some(f) = &files
        {
            live::trace_size(&ctx, &mut sum, f)?;
        }
    }
    if want("ingest") {
        ingest::run(&ctx, &mut sum)?;
    }
    if want("replay") {
        replay::run(&ctx, &mut sum, a.rounds)?;
    }
    if want("frame") {
        frame::run(&ctx, &mut sum)?;
    }
    sum.print();
    println!("finished {}", utc_now());
    Ok(())
}

// ---- measurement helpers -------------------------------------------------------------------

/// CPU time of the calling thread.
pub fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Peak resident set of this process (`VmHWM`), KiB.
pub fn vm_hwm_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// A distribution-free 95% confidence interval of the median: the order statistics
/// `[X(k), X(n-k+1)]` with the largest `k` whose coverage, `1 - 2 P(Binomial(n, 1/2) < k)`, is
/// still at least 95%. `None` below 6 values, where no such `k` exists. Why: one median of a
/// dozen noisy rounds says nothing about whether a 2% target is met; the interval does.
pub fn median_ci95(v: &[f64]) -> Option<(f64, f64)> {
    let n = v.len();
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    // P(B = i) for B ~ Binomial(n, 1/2), built up term by term.
    let mut p = 0.5f64.powi(i32::try_from(n).ok()?);
    let (mut below, mut k) = (0.0, 0);
    for i in 0..n / 2 {
        below += p;
        if 2.0 * below > 0.05 {
            break;
        }
        k = i + 1;
        p *= (n - i) as f64 / (i + 1) as f64;
    }
    (k > 0).then(|| (s[k - 1], s[n - k]))
}

fn online_cpus() -> usize {
    std::thread::available_parallelism().map_or(0, std::num::NonZero::get)
}

fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map_or_else(|_| "?".into(), |s| s.trim().into())
}

pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg").map_or_else(
        |_| "load ?".into(),
        |s| {
            format!(
                "load {}",
                s.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
            )
        },
    )
}

pub fn utc_now() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (h, m, s) = ((t / 3600) % 24, (t / 60) % 60, t % 60);
    format!("{h:02}:{m:02}:{s:02} UTC")
}

/// A finished child: output, wall time, and CPU time (user + sys of it and its waited-for
/// descendants, from `wait4`).
pub struct Finished {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
    pub wall: Duration,
    pub cpu: Duration,
    pub max_rss_kb: u64,
    pub timed_out: bool,
}

impl Finished {
    pub fn ok(&self) -> bool {
        !self.timed_out && libc::WIFEXITED(self.status) && libc::WEXITSTATUS(self.status) == 0
    }

    /// Exited 0, or died of the SIGINT it was stopped with (perf re-raises it).
    pub fn ok_after_sigint(&self) -> bool {
        self.ok()
            || (!self.timed_out
                && libc::WIFSIGNALED(self.status)
                && libc::WTERMSIG(self.status) == libc::SIGINT)
    }
}

fn rusage_cpu(ru: &libc::rusage) -> Duration {
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Waits for `pid` with `wait4`, up to `timeout`; SIGKILLs it after that.
fn wait_pid(pid: i32, timeout: Duration) -> (i32, libc::rusage, bool) {
    let deadline = Instant::now() + timeout;
    // SAFETY: rusage is plain data; zeroed is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let mut status = 0;
    let mut timed_out = false;
    loop {
        // SAFETY: valid pointers to locals; pid is our own child.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
        if r == pid || r < 0 {
            return (status, ru, timed_out);
        }
        if Instant::now() >= deadline && !timed_out {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            timed_out = true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn reader<R: std::io::Read + Send + 'static>(r: Option<R>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut r) = r {
            let _ = r.read_to_string(&mut s);
        }
        s
    })
}

/// Starts `cmd` with no stdin and both outputs piped (for the measuring readers).
fn spawn_piped(cmd: &mut Command) -> anyhow::Result<Child> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {cmd:?}"))
}

/// Runs a command to completion (bounded by `timeout`) and measures it.
pub fn run_measured(cmd: &mut Command, timeout: Duration) -> anyhow::Result<Finished> {
    let start = Instant::now();
    let mut child = spawn_piped(cmd)?;
    let out = reader(child.stdout.take());
    let err = reader(child.stderr.take());
    let (status, ru, timed_out) = wait_pid(child.id() as i32, timeout);
    let wall = start.elapsed();
    Ok(Finished {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        wall,
        cpu: rusage_cpu(&ru),
        max_rss_kb: ru.ru_maxrss as u64,
        timed_out,
    })
}

/// A background process (a tracer) whose stderr is collected line by line.
pub struct Background {
    child: Child,
    stderr: Arc<Mutex<String>>,
    lines: mpsc::Receiver<String>,
    out_reader: std::thread::JoinHandle<String>,
    err_reader: std::thread::JoinHandle<()>,
    pub started: Instant,
}

impl Background {
    pub fn start(cmd: &mut Command) -> anyhow::Result<Self> {
        let mut child = spawn_piped(cmd)?;
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, lines) = mpsc::channel();
        let e = child.stderr.take();
        let acc = Arc::clone(&stderr);
        let err_reader = std::thread::spawn(move || {
            let Some(e) = e else { return };
            for l in BufReader::new(e).lines() {
                let Ok(l) = l else { break };
                if let Ok(mut s) = acc.lock() {
                    s.push_str(&l);
                    s.push('\n');
                }
                let _ = tx.send(l);
            }
        });
        let out_reader = reader(child.stdout.take());
        Ok(Self {
            child,
            stderr,
            lines,
            out_reader,
            err_reader,
            started: Instant::now(),
        })
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Not ended yet (a zombie has ended).
    pub fn running(&self) -> bool {
        std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().next())
                != Some("Z")
        })
    }

    /// Waits for a stderr line containing `needle`.
    pub fn wait_line(&self, needle: &str, timeout: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) if l.contains(needle) => return Ok(()),
                Ok(_) => {}
                Err(_) => bail!(
                    "no {needle:?} on stderr within {:.0} s; stderr so far:\n{}",
                    timeout.as_secs_f64(),
                    self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
                ),
            }
        }
    }

    /// Sends SIGINT and waits (bounded) for the exit.
    pub fn stop(self, timeout: Duration) -> Finished {
        let pid = self.pid();
        // SAFETY: signalling our own child.
        unsafe { libc::kill(pid, libc::SIGINT) };
        let (status, ru, timed_out) = wait_pid(pid, timeout);
        let _ = self.err_reader.join();
        let stdout = self.out_reader.join().unwrap_or_default();
        let stderr = self.stderr.lock().map(|s| s.clone()).unwrap_or_default();
        drop(self.child);
        Finished {
            status,
            stdout,
            stderr,
            wall: self.started.elapsed(),
            cpu: rusage_cpu(&ru),
            max_rss_kb: ru.ru_maxrss as u64,
            timed_out,
        }
    }
}

/// "1.23 M/s" style.
pub fn rate(n: f64, d: Duration) -> f64 {
    n / d.as_secs_f64().max(1e-12)
}

pub fn mega(v: f64) -> String {
    format!("{:.2} M/s", v / 1e6)
}

pub fn indent(s: &str) -> String {
    let mut o = String::new();
    for l in s.lines() {
        let _ = writeln!(o, "      | {l}");
    }
    o
}

#[cfg(test)]
mod tests {
    use super::median_ci95;

    #[test]
    fn median_interval_uses_binomial_order_statistics() {
        let v: Vec<f64> = (1..=15).rev().map(f64::from).collect();
        // n = 15: P(B <= 3) = 0.0176, P(B <= 4) = 0.0592, so X(4) .. X(12).
        assert_eq!(median_ci95(&v), Some((4.0, 12.0)));
        // n = 6: only the extremes (coverage 1 - 2/64).
        assert_eq!(
            median_ci95(&[3.0, 1.0, 2.0, 6.0, 5.0, 4.0]),
            Some((1.0, 6.0))
        );
        assert_eq!(median_ci95(&[1.0, 2.0, 3.0, 4.0, 5.0]), None);
        // n = 100: the textbook X(40) .. X(61).
        let w: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(median_ci95(&w), Some((40.0, 61.0)));
    }
}
