//! The figures benchmarks print, read from their output so a recording keeps the workload's own
//! result beside the placement figures. Each parser recognises its tool's own wording (as
//! printed by the tool's source, not guessed) and ignores everything else, so they can all run
//! on any output; a benchmark that prints interval tables (schbench) gives its last one, the
//! final result.
use super::Metric;

/// Every figure the built-in parsers find in `text` (a command's stdout or stderr), in the
/// order the parsers run; a name seen twice keeps its last value.
pub fn builtin_metrics(text: &str) -> Vec<Metric> {
    let mut out = Vec::new();
    perf_bench(text, &mut out);
    hackbench(text, &mut out);
    schbench(text, &mut out);
    tbench(text, &mut out);
    netperf(text, &mut out);
    out
}

/// Adds `m`, replacing an earlier figure of the same name (a later table supersedes it).
pub fn upsert(out: &mut Vec<Metric>, m: Metric) {
    match out.iter_mut().find(|o| o.name == m.name) {
        Some(o) => *o = m,
        None => out.push(m),
    }
}

fn num(s: &str) -> Option<f64> {
    s.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

/// `perf bench`: a `# Running 'sched/pipe' benchmark:` banner, then `Total time: 8.813 [sec]`,
/// `8.813985 usecs/op`, `113456 ops/sec` (pipe) or only `Total time` (messaging). The banner
/// names the figures (`pipe.usecs_per_op`, `messaging.time_s`).
fn perf_bench(text: &str, out: &mut Vec<Metric>) {
    let mut bench = "pipe".to_string();
    for line in text.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("# Running '") {
            if let Some(name) = rest.split('\'').next() {
                bench = name.rsplit('/').next().unwrap_or(name).to_string();
            }
        } else if let Some(rest) = line.strip_prefix("Total time:") {
            if let Some(v) = rest.trim().strip_suffix("[sec]").and_then(num) {
                let name = if bench == "messaging" {
                    "messaging.time_s".to_string()
                } else {
                    format!("{bench}.total_time_s")
                };
                upsert(out, Metric::new(&name, v, "s", false));
            }
        } else if let Some(v) = line.strip_suffix("usecs/op").and_then(num) {
            upsert(
                out,
                Metric::new(&format!("{bench}.usecs_per_op"), v, "us", false),
            );
        } else if let Some(v) = line.strip_suffix("ops/sec").and_then(num) {
            upsert(
                out,
                Metric::new(&format!("{bench}.ops_per_sec"), v, "ops/s", true),
            );
        }
    }
}

/// rt-tests hackbench: `Time: 0.061` (seconds).
fn hackbench(text: &str, out: &mut Vec<Metric>) {
    for line in text.lines() {
        if let Some(v) = line.trim().strip_prefix("Time:").and_then(num) {
            upsert(out, Metric::new("hackbench.time_s", v, "s", false));
        }
    }
}

/// schbench prints percentile tables to stderr, every interval and once at the end:
/// - current: `Wakeup Latencies percentiles (usec) runtime 30 (s) (1234 total samples)`, then
///   `\t  50.0th: 12         (617 samples)` and `\t* 99.0th: 40 ...`, likewise `Request
///   Latencies` and `RPS percentiles (requests)`, then `average rps: 1234.56`;
/// - older: `Latency percentiles (usec) runtime 30 (s) (1000 total samples)` with
///   `\t*99.0th: 338 (41 samples)`, and the oldest without the runtime and with
///   `50.0000th: 86`. Those measured wakeup latency only.
///
/// Percentiles kept: 50, 90, 99, 99.9 (`schbench.wakeup_p99_us`, `schbench.request_p999_us`,
/// `schbench.rps_p50`).
fn schbench(text: &str, out: &mut Vec<Metric>) {
    #[derive(Clone, Copy)]
    enum Table {
        Wakeup,
        Request,
        Rps,
    }
    let mut table: Option<Table> = None;
    for line in text.lines() {
        let t = line.trim();
        if t.contains(" percentiles (") || t.starts_with("Latency percentiles") {
            table = if t.starts_with("Wakeup Latencies") || t.starts_with("Latency percentiles") {
                Some(Table::Wakeup)
            } else if t.starts_with("Request Latencies") {
                Some(Table::Request)
            } else if t.starts_with("RPS") {
                Some(Table::Rps)
            } else {
                None
            };
            continue;
        }
        if let Some(v) = t.strip_prefix("average rps:").and_then(num) {
            upsert(out, Metric::new("schbench.rps_avg", v, "requests/s", true));
            table = None;
            continue;
        }
        let Some(tab) = table else { continue };
        let row = t.trim_start_matches(['*', ' ', '\t']);
        let Some((pct, rest)) = row.split_once("th:") else {
            if !t.starts_with("min=") {
                table = None;
            }
            continue;
        };
        let (Some(p), Some(v)) = (num(pct), rest.split_whitespace().next().and_then(num)) else {
            continue;
        };
        let tag = match p {
            x if (x - 50.0).abs() < 1e-6 => "p50",
            x if (x - 90.0).abs() < 1e-6 => "p90",
            x if (x - 99.0).abs() < 1e-6 => "p99",
            x if (x - 99.9).abs() < 1e-6 => "p999",
            _ => continue,
        };
        let m = match tab {
            Table::Wakeup => Metric::new(&format!("schbench.wakeup_{tag}_us"), v, "us", false),
            Table::Request => Metric::new(&format!("schbench.request_{tag}_us"), v, "us", false),
            Table::Rps => Metric::new(&format!("schbench.rps_{tag}"), v, "requests/s", true),
        };
        upsert(out, m);
    }
}

/// tbench (dbench's network variant): the final `Throughput 260.498 MB/sec  1 clients  1 procs
/// max_latency=1.301 ms`.
fn tbench(text: &str, out: &mut Vec<Metric>) {
    for line in text.lines() {
        let Some(rest) = line.trim().strip_prefix("Throughput ") else {
            continue;
        };
        let mut w = rest.split_whitespace();
        let (Some(v), Some("MB/sec")) = (w.next().and_then(num), w.next()) else {
            continue;
        };
        upsert(out, Metric::new("tbench.throughput_mb_s", v, "MB/s", true));
        if let Some(l) = rest
            .split_whitespace()
            .find_map(|f| f.strip_prefix("max_latency="))
            .and_then(num)
        {
            upsert(out, Metric::new("tbench.max_latency_ms", l, "ms", false));
        }
    }
}

/// netperf's classic result tables. Request/response tests (TCP_RR, UDP_RR, TCP_CRR) end with
/// a header whose last row is `bytes  Bytes  bytes    bytes   secs.    per sec`, then a row
/// `16384  131072 1        1       10.00    35227.31` (the 6th column: transactions per second).
/// Stream tests end with `bytes  bytes   bytes    secs.    10^6bits/sec` (the unit follows
/// `-f`) and a row whose 5th column is the throughput.
fn netperf(text: &str, out: &mut Vec<Metric>) {
    enum Want {
        None,
        Rr,
        Stream(String),
    }
    let mut want = Want::None;
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        let cols: Vec<&str> = t.split_whitespace().collect();
        if cols.first() == Some(&"bytes") {
            want = if t.ends_with("per sec") {
                Want::Rr
            } else if let Some(u) = cols.last().and_then(|u| u.strip_suffix("/sec")) {
                Want::Stream(format!("{u}/s"))
            } else {
                Want::None
            };
            continue;
        }
        let nums: Option<Vec<f64>> = cols.iter().map(|c| num(c)).collect();
        match (&want, nums) {
            (Want::Rr, Some(n)) if n.len() == 6 => {
                upsert(
                    out,
                    Metric::new("netperf.rr_trans_per_sec", n[5], "trans/s", true),
                );
                want = Want::None;
            }
            (Want::Stream(u), Some(n)) if n.len() == 5 => {
                upsert(out, Metric::new("netperf.stream_throughput", n[4], u, true));
                want = Want::None;
            }
            _ => want = Want::None,
        }
    }
}
