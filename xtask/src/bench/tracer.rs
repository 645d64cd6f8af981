//! Starting the tracers the live sections compare, one way for every section, so the floor,
//! overhead and messaging figures all measure tracers started and settled alike.
use std::{
    ffi::OsStr,
    path::Path,
    process::Command,
    time::{Duration, Instant},
};

use anyhow::bail;

use super::Background;

/// Time every tracer gets, once it captures, before the benchmark starts.
pub const SETTLE: Duration = Duration::from_millis(300);

/// `timeout` as the tracer's parent: SIGINT stops the tracer through it, and a tracer that
/// ignores it is killed rather than hanging the bench.
pub fn timeout_cmd() -> Command {
    let mut c = Command::new("timeout");
    c.args(["--signal=INT", "--kill-after=30", "600"]);
    c
}

/// Starts `wakeviz ARGS` and waits until it prints `ready` (its "capturing" line).
pub fn wakeviz<S: AsRef<OsStr>>(
    bin: &Path,
    args: impl IntoIterator<Item = S>,
    ready: &str,
) -> anyhow::Result<Background> {
    let mut c = timeout_cmd();
    c.arg(bin).args(args);
    let bg = Background::start(&mut c)?;
    bg.wait_line(ready, Duration::from_secs(60))?;
    Ok(bg)
}

/// Starts `perf sched record -o file` and waits until it writes the file: perf opens its
/// events, then writes the file header, then enables the events.
pub fn perf_sched(file: &Path) -> anyhow::Result<Background> {
    let mut c = timeout_cmd();
    c.args(["perf", "sched", "record", "-o"]).arg(file);
    let bg = Background::start(&mut c)?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::metadata(file).map_or(0, |m| m.len()) == 0 {
        if Instant::now() > deadline {
            let f = bg.stop(Duration::from_secs(10));
            bail!("perf sched record did not start:\n{}", f.stderr);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(bg)
}

/// What a scheduler developer would run by hand: bpftrace counting the events wakeviz captures,
/// per probe and CPU, in a kernel map (printed at exit).
pub const BPFTRACE_PROGRAM: &str = "tracepoint:sched:sched_waking, tracepoint:sched:sched_wakeup, \
     tracepoint:sched:sched_wakeup_new, tracepoint:sched:sched_switch, \
     tracepoint:sched:sched_migrate_task { @[probe, cpu] = count(); }";

/// Starts `bpftrace -e BPFTRACE_PROGRAM` and waits until its probes are attached (it says so
/// on stdout, sent to stderr here where the wait reads).
pub fn bpftrace() -> anyhow::Result<Background> {
    let mut c = timeout_cmd();
    c.args(["sh", "-c", "exec bpftrace -e \"$0\" 1>&2", BPFTRACE_PROGRAM]);
    let bg = Background::start(&mut c)?;
    bg.wait_line("Attaching", Duration::from_secs(60))?;
    Ok(bg)
}
