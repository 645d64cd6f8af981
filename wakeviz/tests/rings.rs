//! Two ring buffers on this machine (`--rings 2`: CPU 0 and CPU 1 each their own), checked
//! against the kernel's own trace: a ping-pong pinned across the two CPUs, so every wakeup's
//! `sched_waking` goes through one ring and its `sched_wakeup` through the other. Needs root.
mod support;

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_wakeviz");
const COMM: &str = "wvz-rings";

/// The ground truth: a tracefs instance with sched_waking and sched_wakeup filtered on the
/// workload's comm (the woken task's, as in wakeviz's dump).
struct Trace(support::TraceInstance);

impl Trace {
    fn start() -> Self {
        let mut t = support::TraceInstance::new("wvz-rings-test");
        t.write("buffer_size_kb", "16384");
        for ev in ["sched_waking", "sched_wakeup"] {
            t.enable(ev, &format!("comm == \"{COMM}\""));
        }
        t.on();
        Trace(t)
    }

    /// Counts per event, after checking the buffer lost nothing, and the `sched_wakeup` lines
    /// taken while a task of `unseen` was the current one.
    fn counts(&self, unseen: &[u32]) -> (u64, u64, u64) {
        let text = self.0.text();
        let header = text
            .lines()
            .find(|l| l.contains("entries-in-buffer/entries-written"))
            .unwrap_or_default();
        let nums: Vec<&str> = header
            .split(|c: char| !c.is_ascii_digit())
            .filter(|s| !s.is_empty())
            .collect();
        assert!(
            nums.len() >= 2 && nums[0] == nums[1],
            "trace lost events: {header}"
        );
        let of = |ev: &'static str| {
            let tag = format!(" {ev}: ");
            text.lines().filter(move |l| l.contains(&tag))
        };
        // A line starts with its context task, `comm-pid [cpu]`.
        let context_pid = |l: &str| -> Option<u32> {
            l.split(" [")
                .next()?
                .trim()
                .rsplit_once('-')?
                .1
                .parse()
                .ok()
        };
        let under_unseen = of("sched_wakeup")
            .filter(|l| context_pid(l).is_some_and(|p| unseen.contains(&p)))
            .count() as u64;
        (
            of("sched_waking").count() as u64,
            of("sched_wakeup").count() as u64,
            under_unseen,
        )
    }
}

/// The threads of PID 1. The kernel this suite runs on in CI never runs BPF programs while a
/// thread of its PID 1 (the sandbox's control agent) is the current task, and traces none of
/// their switches out: a wakeup of the workload that an interrupt delivers while one of them
/// runs is in tracefs and in no BPF tracer's output. On other machines PID 1 is an init whose
/// threads the probes see like any other, and the allowance below is never used.
fn pid1_threads() -> Vec<u32> {
    std::fs::read_dir("/proc/1/task")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn two_rings_merge_in_order_and_match_the_kernel_trace() {
    if !support::root() || !support::cpus(2) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let wvz = dir.path().join("rings.wvz");
    let trace = Trace::start();
    let out = Command::new(BIN)
        .args(["--rings", "2", "--headless", "--record"])
        .arg(&wvz)
        .args([
            "--",
            BIN,
            "workload",
            "pingpong",
            "--waker-cpu",
            "0",
            "--wakee-cpu",
            "1",
        ])
        .args(["--iterations", "20000", "--comm", COMM])
        .output()
        .unwrap();
    let (truth_waking, truth_wakeup, unseen_wakeups) = trace.counts(&pid1_threads());
    drop(trace);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("merge: 2 rings, late 0"), "{stderr}");
    assert!(stderr.contains("drops: 0 in the kernel"), "{stderr}");
    assert!(stderr.contains("0 in userspace"), "{stderr}");
    for ring in ["ring 0 cpus 0: delivered", "ring 1 cpus 1: delivered"] {
        let n: u64 = stderr
            .split(ring)
            .nth(1)
            .and_then(|r| r.split(',').next())
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("no `{ring}` in {stderr}"));
        assert!(
            n > 20_000,
            "{ring} {n}: both rings carry the ping-pong\n{stderr}"
        );
    }
    let dump = support::replay(BIN, &wvz, &["--dump", "jsonl"]);
    let (mut waking, mut wakeup, mut prev, mut n) = (0u64, 0u64, 0u64, 0u64);
    for l in String::from_utf8_lossy(&dump).lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let ts = v["ts_ns"].as_u64().unwrap();
        assert!(
            ts >= prev,
            "recording out of timestamp order at event {n}: {prev} then {ts}"
        );
        prev = ts;
        n += 1;
        if v["comm"] == COMM {
            match v["kind"].as_str() {
                Some("sched_waking") => waking += 1,
                Some("sched_wakeup") => wakeup += 1,
                _ => {}
            }
        }
    }
    // The workload's own count of its blocks (voluntary switches in its loops, each ended by
    // one waking): how many of the 40000 reads slept depends on the host's timing (one CI
    // run had 89 %), so "the workload ran" is judged against that, not a share of the reads.
    let so = String::from_utf8_lossy(&out.stdout);
    let blocked = |key: &str| -> u64 {
        so.split(key)
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no `{key}` in the workload's output: {so}"))
    };
    let blocks = blocked("waker blocked ") + blocked("wakee blocked ");
    assert!(
        blocks >= 20_000 && waking >= blocks,
        "the workload ran: {waking} wakings recorded for {blocks} blocks (each ended by one)"
    );
    // sched_waking against the kernel's trace. wakeviz must have every line the trace has.
    // The trace is not exact the other way on this machine: its instance can lose lines
    // without counting them (`entries-written` equal to `entries-in-buffer`, 0 overruns, 0
    // dropped in `per_cpu/cpu*/stats`). Measured: 1-6 % of the `sched_wakeup` lines, and 2 of
    // 39673 `sched_waking` lines in one CI run (docs/dev/capture.md). So a surplus
    // of at most 0.5 % is the trace's loss; more would be wakeviz inventing events.
    assert!(
        waking >= truth_waking && waking - truth_waking <= truth_waking / 200,
        "sched_waking: wakeviz {waking} vs the kernel's trace {truth_waking}"
    );
    assert!(
        wakeup <= waking && waking - wakeup <= unseen_wakeups,
        "every workload wakeup recorded: {wakeup} sched_wakeup for {waking} sched_waking; \
         tracefs showed {truth_wakeup} sched_wakeup, {unseen_wakeups} of them taken while a \
         thread of PID 1 ran"
    );
    assert!(
        truth_wakeup <= wakeup + unseen_wakeups,
        "tracefs saw wakeups wakeviz missed: {truth_wakeup}"
    );
    // Every wakeup of the workload joined: the report's unmatched count stays at what the
    // capture's first instants can leave (a sched_wakeup whose sched_waking came before it).
    let report = support::replay(BIN, &wvz, &["--report", "json"]);
    let j: serde_json::Value = serde_json::from_slice(&report).unwrap();
    assert_eq!(j["drops"]["late_events"], 0);
    assert_eq!(j["drops"]["rings"].as_array().map(Vec::len), Some(2));
    // `unmatched_wakeups` counts every task, background ones included, and a wakeup whose
    // sched_waking fired while the programs were still being attached one by one is unmatched
    // without any loss in the merge (late_events is 0 above, and the workload's own wakeups and
    // wakings are equal above). CI saw 5 of 40671 once; a merge that mis-ordered rings would
    // leave thousands.
    let unmatched = j["drops"]["unmatched_wakeups"].as_u64().unwrap();
    let wakeups = j["events"]["sched_wakeup"].as_u64().unwrap_or(0);
    assert!(unmatched <= 2 + wakeups / 2000, "{}", j["drops"]);
}
