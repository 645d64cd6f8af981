//! Memory within what a recording's bytes justify: a 1 MB recording whose topology has 8192
//! CPUs, each its own LLC, in every output (reports, diff, exports, the dashboard) must peak under
//! 256 MB and print under 10 MB, and each extra recording in a diff must cost a few MB. Peak
//! memory is the child's maximum resident set (wait4's rusage).
use std::{
    io::{Read as _, Write as _},
    os::unix::process::ExitStatusExt as _,
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

#[path = "../../wakeviz-core/tests/hostile_craft/mod.rs"]
mod hostile_craft;
mod support;

use hostile_craft::names;

const BIN: &str = env!("CARGO_BIN_EXE_wakeviz");
const PEAK_LIMIT: u64 = 256 << 20;
const OUTPUT_LIMIT: u64 = 10 << 20;

struct Run {
    code: Option<i32>,
    signal: Option<i32>,
    peak: u64,
    out_bytes: u64,
}

/// Runs wakeviz with `args`, its stdout counted (not kept), killed after `timeout`.
fn run(args: &[&str], timeout: Duration) -> Run {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn wakeviz");
    let mut out = child.stdout.take().expect("stdout");
    let counter = std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    wait_peak(child, counter, args, timeout)
}

/// Waits for `child` and returns its status, its peak resident memory and what `counter`
/// counted of its output. The child is reaped by `wait4`, which also gives its rusage.
fn wait_peak(
    child: std::process::Child,
    counter: std::thread::JoinHandle<std::io::Result<u64>>,
    args: &[&str],
    timeout: Duration,
) -> Run {
    let pid = i32::try_from(child.id()).expect("pid");
    let start = Instant::now();
    loop {
        let mut status = 0;
        // SAFETY: an all-zero rusage is a valid value for wait4 to fill.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: pid is our own unreaped child; status and ru are valid for writes.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
        assert!(r >= 0, "wait4: {}", std::io::Error::last_os_error());
        if r == pid {
            let st = std::process::ExitStatus::from_raw(status);
            let out_bytes = counter.join().expect("counter").expect("read stdout");
            return Run {
                code: st.code(),
                signal: st.signal(),
                peak: u64::try_from(ru.ru_maxrss).unwrap_or(0) * 1024,
                out_bytes,
            };
        }
        if start.elapsed() > timeout {
            // SAFETY: kill has no memory preconditions; pid is our own unreaped child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("{args:?}: still running after {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// 8192 CPUs, 8192 LLCs, and a few thousand events over them: about 1 MB.
fn write_wide(path: &Path) {
    let pids = (0..2_000).map(|i| i % 500 + 1);
    let bytes = hostile_craft::file(
        hostile_craft::topology(8192, 1),
        &hostile_craft::rounds(pids, 8192),
    );
    assert!(bytes.len() < 2 << 20, "{} bytes", bytes.len());
    std::fs::write(path, bytes).expect("write");
}

#[test]
fn a_wide_topology_costs_what_its_bytes_justify() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rec = dir.path().join("wide.wvz");
    write_wide(&rec);
    let r = rec.to_str().expect("utf-8");
    let trace = dir.path().join("t.pftrace");
    let pq = dir.path().join("pq");
    let (t, q) = (trace.to_str().expect("utf-8"), pq.to_str().expect("utf-8"));
    let mut failures = Vec::new();
    let mut diff_peaks = Vec::new();
    for (args, out_limit) in [
        (vec!["--replay", r, "--report", "json"], OUTPUT_LIMIT),
        (vec!["--replay", r, "--report", "text"], OUTPUT_LIMIT),
        (vec!["diff", "--base", r, "--new", r], OUTPUT_LIMIT),
        (
            vec!["diff", "--base", r, r, r, "--new", r, r, r],
            OUTPUT_LIMIT,
        ),
        (vec!["export", "--perfetto", t, r], OUTPUT_LIMIT),
        (vec!["export", "--parquet", q, r], OUTPUT_LIMIT),
    ] {
        let tm = Instant::now();
        let run = run(&args, Duration::from_secs(120));
        eprintln!(
            "{args:?}: exit {:?}/{:?}, peak {} MB, {} bytes out, {:?}",
            run.code,
            run.signal,
            run.peak >> 20,
            run.out_bytes,
            tm.elapsed()
        );
        if args[0] == "diff" {
            diff_peaks.push(run.peak);
        }
        if run.code != Some(0) || run.peak > PEAK_LIMIT || run.out_bytes > out_limit {
            failures.push(format!(
                "{args:?}: exit {:?}/{:?}, peak {} MB, {} bytes out",
                run.code,
                run.signal,
                run.peak >> 20,
                run.out_bytes
            ));
        }
    }
    // Four more recordings of this kind cost a few MB each at most: a diff keeps each run's
    // figures, not its per-CPU and per-LLC rows, and one LLC table per distinct topology.
    if let [two, six] = diff_peaks[..] {
        let per = six.saturating_sub(two) / 4;
        if per > 4 << 20 {
            failures.push(format!("diff: {} MB per extra recording", per >> 20));
        }
    }
    let len = std::fs::metadata(&trace).map_or(0, |m| m.len());
    if len > OUTPUT_LIMIT {
        failures.push(format!("{}: {len} bytes", trace.display()));
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// A small deterministic generator (xorshift64*), so a failing case can be named by its seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }
}

/// Crafted topologies (1 to 8192 CPUs, LLCs of any size) with name tables of up to two
/// million tasks and events over a part of them: every headless output stays under the peak
/// bound, the reports under the output bound, and each split Perfetto part near its size.
#[test]
fn crafted_topologies_and_name_tables_stay_within_the_bound() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut failures = Vec::new();
    for seed in 1..=6u64 {
        let mut g = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let ncpus = [1, 2, 64, 1000, 4096, 8192][g.below(6) as usize];
        let per_llc = 1 + g.below(u64::from(ncpus)) as u32;
        // Seed 1 is always the two-million-name table.
        let nnames = if seed == 1 {
            2_000_000
        } else {
            [0, 1_000, 100_000, 500_000][g.below(4) as usize]
        };
        let nrounds = g.below(20_000) as u32;
        let pids = (0..nrounds).map(|i| 1 + i % nnames.max(1));
        let mut chunks = names(1..=nnames);
        chunks.extend(hostile_craft::rounds(pids, ncpus));
        let rec = dir.path().join(format!("c{seed}.wvz"));
        std::fs::write(
            &rec,
            hostile_craft::file(hostile_craft::topology(ncpus, per_llc), &chunks),
        )
        .expect("write");
        let case = format!(
            "seed {seed}: {ncpus} CPUs, {per_llc} per LLC, {nnames} names, {nrounds} rounds, {} bytes",
            std::fs::metadata(&rec).map_or(0, |m| m.len())
        );
        let r = rec.to_str().expect("utf-8");
        let parts = dir.path().join(format!("p{seed}.pftrace"));
        let p = parts.to_str().expect("utf-8");
        for args in [
            vec!["--replay", r, "--report", "json"],
            vec!["--replay", r, "--report", "text"],
            vec!["export", "--perfetto", p, "--split-mb", "1", r],
        ] {
            let run = run(&args, Duration::from_secs(120));
            eprintln!(
                "{case}: {:?}: exit {:?}, peak {} MB, {} bytes out",
                &args[..args.len().min(4)],
                run.code,
                run.peak >> 20,
                run.out_bytes
            );
            // 3: finished with a warning, here that per-task entries were evicted (the
            // labelled degraded mode of a table larger than the budget).
            let ok = matches!(run.code, Some(0 | 3));
            if !ok || run.peak > PEAK_LIMIT || run.out_bytes > OUTPUT_LIMIT {
                failures.push(format!(
                    "{case}: {args:?}: exit {:?}/{:?}, peak {} MB, {} bytes out",
                    run.code,
                    run.signal,
                    run.peak >> 20,
                    run.out_bytes
                ));
            }
        }
        for e in std::fs::read_dir(dir.path()).expect("read_dir").flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let len = e.metadata().map_or(0, |m| m.len());
            if name.starts_with(&format!("p{seed}")) && len > 2 << 20 {
                failures.push(format!("{case}: part {name} is {len} bytes"));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The dashboard on the wide recording, on a 200x60 terminal, through every view (each with
/// its per-LLC or per-CPU rows drawn and scrolled), the landing map in both modes, then `q`:
/// the same memory bound as the headless outputs.
#[test]
fn the_dashboard_on_a_wide_topology_stays_within_the_bound() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rec = dir.path().join("wide.wvz");
    write_wide(&rec);
    let r = rec.to_str().expect("utf-8");
    let (master, slave) = support::pty(200, 60);
    let mut c = Command::new(BIN);
    c.args(["--replay", r])
        .env("TERM", "xterm")
        .stdin(slave.try_clone().expect("dup"))
        .stdout(slave.try_clone().expect("dup"))
        .stderr(slave.try_clone().expect("dup"));
    support::controlling_terminal(&mut c);
    let child = c.spawn().expect("spawn wakeviz");
    // The command holds copies of the slave: the master sees the terminal close only when
    // wakeviz's are the last.
    drop(c);
    drop(slave);
    let mut keys = master.try_clone().expect("dup");
    // Drains the screen (so wakeviz never blocks on a full pty) until the slave closes.
    let counter = std::thread::spawn(move || {
        let mut m = master;
        let mut buf = [0u8; 1 << 16];
        let mut n = 0u64;
        loop {
            match m.read(&mut buf) {
                Ok(0) | Err(_) => return Ok(n),
                Ok(k) => n += k as u64,
            }
        }
    });
    let pause = || std::thread::sleep(Duration::from_millis(300));
    pause();
    for view in b"12345678" {
        keys.write_all(&[*view]).expect("key");
        pause();
        // Down and PgDn through the rows, then the landing map's other mode.
        keys.write_all(b"\x1b[B\x1b[B\x1b[6~\x1b[6~").expect("keys");
        pause();
        if *view == b'3' {
            keys.write_all(b"a").expect("key");
            pause();
        }
    }
    keys.write_all(b"q").expect("key");
    let run = wait_peak(
        child,
        counter,
        &["--replay", r, "(dashboard)"],
        Duration::from_secs(60),
    );
    eprintln!(
        "dashboard: exit {:?}/{:?}, peak {} MB, {} bytes drawn",
        run.code,
        run.signal,
        run.peak >> 20,
        run.out_bytes
    );
    assert_eq!(run.code, Some(0), "the dashboard did not end on q");
    assert!(
        run.peak <= PEAK_LIMIT,
        "dashboard peak {} MB",
        run.peak >> 20
    );
}

/// Writes the wide recording to `$WAKEVIZ_WIDE`, to profile by hand:
/// `WAKEVIZ_WIDE=/tmp/wide.wvz cargo test --release -p wakeviz --test memory_bound -- --ignored`.
#[test]
#[ignore]
fn write_the_wide_recording() {
    let Some(p) = std::env::var_os("WAKEVIZ_WIDE") else {
        panic!("set WAKEVIZ_WIDE");
    };
    write_wide(Path::new(&p));
}
