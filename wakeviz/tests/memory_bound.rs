//! Memory within what a recording's bytes justify: a 1 MB recording whose topology has 8192
//! CPUs, each its own LLC, in every headless output (reports, diff, exports) must peak under
//! 256 MB and print under 10 MB (the JSON report: linear in the header), and each extra
//! recording in a diff must cost a few MB. Peak memory is the child's maximum resident set
//! (wait4's rusage).
use std::{
    os::unix::process::ExitStatusExt as _,
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

#[path = "../../wakeviz-core/tests/hostile_craft/mod.rs"]
mod hostile_craft;

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
#[expect(
    clippy::zombie_processes,
    reason = "reaped by wait4 below, which also gives its rusage"
)]
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
    let size = std::fs::metadata(&rec).expect("stat").len();
    let r = rec.to_str().expect("utf-8");
    let trace = dir.path().join("t.pftrace");
    let pq = dir.path().join("pq");
    let (t, q) = (trace.to_str().expect("utf-8"), pq.to_str().expect("utf-8"));
    let mut failures = Vec::new();
    let mut diff_peaks = Vec::new();
    for (args, out_limit) in [
        // The JSON lists every CPU and LLC the header claims (placement and scan rows, empty
        // or not): linear in the header, about 14 bytes out per byte in.
        (vec!["--replay", r, "--report", "json"], 16 * size),
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
    // Four more recordings of this kind cost a few MB each (their snapshots' per-CPU and
    // per-LLC rows, about 9 MB at 8192 of each), not hundreds.
    if let [two, six] = diff_peaks[..] {
        let per = six.saturating_sub(two) / 4;
        if per > 16 << 20 {
            failures.push(format!("diff: {} MB per extra recording", per >> 20));
        }
    }
    let len = std::fs::metadata(&trace).map_or(0, |m| m.len());
    if len > OUTPUT_LIMIT {
        failures.push(format!("{}: {len} bytes", trace.display()));
    }
    assert!(failures.is_empty(), "{failures:#?}");
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
