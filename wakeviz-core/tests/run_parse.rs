//! The built-in benchmark parsers on real output: perf bench and hackbench as they print on
//! this machine (Debian perf 6.1, rt-tests), tbench from the seed messages, schbench and netperf
//! as their sources' printf formats print them (three schbench generations).
mod analysis_support;

use wakeviz_core::{
    analysis::Analysis,
    format::{CaptureStats, Recorder, RecorderConfig, ScanSource},
    run::{Metric, RunMeta, WorkloadOutcome, builtin_metrics},
    source::{EventSource as _, Poll, ReplaySource},
};

fn get<'a>(ms: &'a [Metric], name: &str) -> &'a Metric {
    ms.iter()
        .find(|m| m.name == name)
        .unwrap_or_else(|| panic!("no {name} in {ms:?}"))
}

#[test]
fn perf_bench_sched_pipe() {
    let out = "# Running 'sched/pipe' benchmark:\n# Executed 20000 pipe operations between two processes\n\n     Total time: 0.067 [sec]\n\n       3.377850 usecs/op\n         296046 ops/sec\n";
    let m = builtin_metrics(out);
    let u = get(&m, "pipe.usecs_per_op");
    assert_eq!(
        (u.value, u.unit.as_str(), u.higher_is_better),
        (3.37785, "us", false)
    );
    let o = get(&m, "pipe.ops_per_sec");
    assert_eq!((o.value, o.higher_is_better), (296046.0, true));
    assert_eq!(get(&m, "pipe.total_time_s").value, 0.067);
    assert_eq!(m.len(), 3, "{m:?}");
}

#[test]
fn perf_bench_sched_messaging_and_hackbench() {
    let perf = "# Running 'sched/messaging' benchmark:\n# 20 sender and receiver processes per group\n# 1 groups == 40 processes run\n\n     Total time: 0.060 [sec]\n";
    let m = builtin_metrics(perf);
    let t = get(&m, "messaging.time_s");
    assert_eq!(
        (t.value, t.unit.as_str(), t.higher_is_better),
        (0.06, "s", false)
    );
    assert_eq!(m.len(), 1);

    let hb = "Running in process mode with 1 groups using 40 file descriptors each (== 40 tasks)\nEach sender will pass 50 messages of 100 bytes\nTime: 0.061\n";
    let m = builtin_metrics(hb);
    assert_eq!(get(&m, "hackbench.time_s").value, 0.061);
    assert_eq!(m.len(), 1);
}

/// schbench today (`show_latencies` in stats.c): an interval table, then the final one.
#[test]
fn schbench_current_output_last_table_wins() {
    let interval = "Wakeup Latencies percentiles (usec) runtime 10 (s) (1000 total samples)\n\t  50.0th: 99         (500 samples)\n\t  90.0th: 99         (400 samples)\n\t* 99.0th: 99         (90 samples)\n\t  99.9th: 99         (9 samples)\n\t  min=1, max=120\ncurrent rps: 100.00\n";
    let last = "Wakeup Latencies percentiles (usec) runtime 30 (s) (30123 total samples)\n\t  50.0th: 12         (15062 samples)\n\t  90.0th: 18         (12021 samples)\n\t* 99.0th: 41         (2709 samples)\n\t  99.9th: 1234       (301 samples)\n\t  min=1, max=5012\nRequest Latencies percentiles (usec) runtime 30 (s) (30200 total samples)\n\t  50.0th: 8016       (15100 samples)\n\t  90.0th: 8048       (12080 samples)\n\t* 99.0th: 8080       (2718 samples)\n\t  99.9th: 10256      (302 samples)\n\t  min=7912, max=12033\nRPS percentiles (requests) runtime 30 (s) (31 total samples)\n\t  20.0th: 996        (7 samples)\n\t* 50.0th: 1004       (10 samples)\n\t  90.0th: 1012       (11 samples)\n\t  min=980, max=1020\naverage rps: 1003.27\nsched delay: message 3 (usec) worker 5 (usec)\n";
    let m = builtin_metrics(&format!("setting worker threads to 2\n{interval}{last}"));
    for (n, v) in [
        ("schbench.wakeup_p50_us", 12.0),
        ("schbench.wakeup_p90_us", 18.0),
        ("schbench.wakeup_p99_us", 41.0),
        ("schbench.wakeup_p999_us", 1234.0),
        ("schbench.request_p50_us", 8016.0),
        ("schbench.request_p99_us", 8080.0),
        ("schbench.request_p999_us", 10256.0),
        ("schbench.rps_p50", 1004.0),
        ("schbench.rps_p90", 1012.0),
        ("schbench.rps_avg", 1003.27),
    ] {
        assert_eq!(get(&m, n).value, v, "{n}");
    }
    assert!(!get(&m, "schbench.wakeup_p99_us").higher_is_better);
    assert!(get(&m, "schbench.rps_avg").higher_is_better);
    // 20th percentile rows are not kept.
    assert!(m.iter().all(|x| !x.name.contains("p20")), "{m:?}");
}

/// Two older generations: one table of wakeup latency.
#[test]
fn schbench_older_outputs() {
    let mid = "Latency percentiles (usec) runtime 30 (s) (1000 total samples)\n         50.0th: 180 (502 samples)\n         75.0th: 227 (251 samples)\n         90.0th: 268 (147 samples)\n         95.0th: 300 (50 samples)\n         *99.0th: 338 (41 samples)\n         99.5th: 344 (4 samples)\n         99.9th: 1186 (5 samples)\n         min=25, max=1185\n";
    let m = builtin_metrics(mid);
    assert_eq!(get(&m, "schbench.wakeup_p99_us").value, 338.0);
    assert_eq!(get(&m, "schbench.wakeup_p999_us").value, 1186.0);
    assert_eq!(m.len(), 4, "{m:?}");

    let oldest = "Latency percentiles (usec)\n\t50.0000th: 86\n\t75.0000th: 406\n\t90.0000th: 497\n\t95.0000th: 541\n\t*99.0000th: 2572\n\t99.5000th: 3724\n\t99.9000th: 6904\n\tmin=0, max=10007\n";
    let m = builtin_metrics(oldest);
    assert_eq!(get(&m, "schbench.wakeup_p50_us").value, 86.0);
    assert_eq!(get(&m, "schbench.wakeup_p90_us").value, 497.0);
    assert_eq!(get(&m, "schbench.wakeup_p99_us").value, 2572.0);
    assert_eq!(get(&m, "schbench.wakeup_p999_us").value, 6904.0);
}

#[test]
fn tbench_throughput() {
    let out = "   1     12345   260.12 MB/sec  execute 14 sec  latency 1.301 ms\nThroughput 260.498 MB/sec  1 clients  1 procs  max_latency=1.301 ms\n";
    let m = builtin_metrics(out);
    let t = get(&m, "tbench.throughput_mb_s");
    assert_eq!(
        (t.value, t.unit.as_str(), t.higher_is_better),
        (260.498, "MB/s", true)
    );
    assert_eq!(get(&m, "tbench.max_latency_ms").value, 1.301);
    assert_eq!(m.len(), 2);
}

#[test]
fn netperf_rr_and_stream() {
    let rr = "MIGRATED TCP REQUEST/RESPONSE TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to localhost () port 0 AF_INET : first burst 0\nLocal /Remote\nSocket Size   Request  Resp.   Elapsed  Trans.\nSend   Recv   Size     Size    Time     Rate         \nbytes  Bytes  bytes    bytes   secs.    per sec   \n\n16384  131072 1        1       10.00    35227.31   \n16384  131072\n";
    let m = builtin_metrics(rr);
    let r = get(&m, "netperf.rr_trans_per_sec");
    assert_eq!((r.value, r.higher_is_better), (35227.31, true));
    assert_eq!(m.len(), 1, "{m:?}");

    let stream = "MIGRATED TCP STREAM TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to localhost () port 0 AF_INET\nRecv   Send    Send                          \nSocket Socket  Message  Elapsed              \nSize   Size    Size     Time     Throughput  \nbytes  bytes   bytes    secs.    10^6bits/sec  \n\n131072  16384  16384    10.00    30571.85   \n";
    let m = builtin_metrics(stream);
    let s = get(&m, "netperf.stream_throughput");
    assert_eq!((s.value, s.unit.as_str()), (30571.85, "10^6bits/s"));
    assert_eq!(m.len(), 1, "{m:?}");
}

#[test]
fn unrelated_output_gives_nothing() {
    let text = "hello\nTime is up\nThroughput of the day\n50.0th: not a table\nbytes of junk\n1 2 3 4 5 6\n";
    assert!(builtin_metrics(text).is_empty());
}

/// The outcome written into the END chunk comes back in a replay's snapshot, and the text
/// report prints the benchmark's figure first, then the run's conditions.
#[test]
fn workload_outcome_round_trips_and_leads_the_report() {
    let mut h = analysis_support::header("xeon-e5-2690v3", ScanSource::SelectTaskRqFair);
    h.run = RunMeta {
        label: Some("tip".into()),
        start_utc: Some("2026-12-01T08:00:00.123Z".into()),
        kernel_cmdline: Some("quiet".into()),
        sched_features: None,
        sysctls: vec![("kernel.sched_rr_timeslice_ms".into(), "100".into())],
        cpu_model: Some("Some CPU".into()),
        command: Some(vec!["hackbench".into(), "-g".into(), "1".into()]),
        ..Default::default()
    };
    let outcome = WorkloadOutcome {
        exit_code: None,
        signal: Some(2),
        duration_ns: 1_500_000_000,
        metrics: builtin_metrics("Time: 0.419\n"),
    };
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("r.wvz");
    let f = std::fs::File::create(&path).unwrap();
    let rec = Recorder::new(f, &h, RecorderConfig::default()).unwrap();
    let stats = CaptureStats {
        capture_duration_ns: Some(1_600_000_000),
        workload: Some(Box::new(outcome.clone())),
        ..Default::default()
    };
    rec.finish(&stats).unwrap();

    let mut src = ReplaySource::open(&path).unwrap();
    let mut a = Analysis::new(src.header());
    while let Ok(Poll::Batch(b)) = src.poll(std::time::Duration::ZERO) {
        a.on_batch(&b);
    }
    let j = a.report_json();
    assert_eq!(j["recording"]["workload"]["signal"], 2);
    assert_eq!(
        j["recording"]["workload"]["metrics"][0]["name"],
        "hackbench.time_s"
    );
    assert_eq!(j["recording"]["capture_duration_ns"], 1_600_000_000u64);
    assert_eq!(j["recording"]["run"]["label"], "tip");
    let text = a.report_text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "== recording");
    assert_eq!(
        lines[1],
        "  workload `hackbench -g 1`: killed by signal 2, 1.500 s"
    );
    assert!(
        lines[2].contains("hackbench.time_s") && lines[2].contains("0.419"),
        "{text}"
    );
    for want in [
        "  label tip, started 2026-12-01T08:00:00.123Z, 1.600 s",
        "  sched features unknown",
        "  sysctls kernel.sched_rr_timeslice_ms=100",
        "  cpu Some CPU",
        "  cmdline quiet",
    ] {
        assert!(text.contains(want), "{want:?} missing:\n{text}");
    }
}
