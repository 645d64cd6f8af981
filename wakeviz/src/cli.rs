use std::{path::PathBuf, time::Duration};

use clap::{Parser, ValueEnum};

use crate::workload::Workload;

#[derive(Parser, Debug)]
#[command(
    name = "wakeviz",
    version,
    about = "Where the Linux scheduler puts every woken task, what it cost, and what other placement policies would have done",
    after_help = "Live needs root: `sudo wakeviz`. Recordings replay anywhere without root: `wakeviz --replay FILE`."
)]
pub struct Cli {
    /// Capture to FILE (streams to disk while capturing).
    #[arg(long, value_name = "FILE", conflicts_with = "replay")]
    pub record: Option<PathBuf>,
    /// Read a recording instead of the live kernel (no root, no BPF).
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,
    /// Replay the demo recording built into the binary.
    #[arg(long, conflicts_with_all = ["replay", "record"])]
    pub demo: bool,
    /// Stop a live capture after this long (e.g. 10s, 500ms, 2m).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// No terminal UI.
    #[arg(long)]
    pub headless: bool,
    /// Print the analysis report (with --replay: and exit; with --record --headless: at the end).
    #[arg(long, value_enum)]
    pub report: Option<ReportFormat>,
    /// Print every event of a recording, one JSON object per line.
    #[arg(long, value_enum)]
    pub dump: Option<DumpFormat>,
    /// Ring buffer size in MiB (rounded up to a power of two).
    #[arg(long, default_value_t = 16)]
    pub ringbuf_mb: u32,
    /// Exact ring buffer size in bytes (a power of two, at least one page); for drop tests.
    #[arg(long, hide = true)]
    pub ringbuf_bytes: Option<u32>,
    /// Read the CPU topology from a saved sysfs `devices/system` tree.
    #[arg(long, value_name = "DIR")]
    pub topology: Option<PathBuf>,
    /// Do not try fentry/fexit on select_task_rq_fair / select_idle_cpu.
    #[arg(long)]
    pub no_function_probes: bool,
    /// Replace task names with stable hashes in the recording.
    #[arg(long)]
    pub redact_comm: bool,
    /// Measure each probe's cost with the kernel's BPF run-time statistics and print it.
    #[arg(long)]
    pub bpf_stats: bool,
    /// Best tracepoint attach mode to try (lower modes are the fallbacks); for tests.
    #[arg(long, value_enum, default_value = "auto", hide = true)]
    pub tracepoint_mode: crate::probes::TracepointMode,
    #[command(subcommand)]
    pub workload: Option<Sub>,
}

#[derive(clap::Subcommand, Debug)]
pub enum Sub {
    /// Known workloads for tests and demos.
    #[command(subcommand, hide = true)]
    Workload(Workload),
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum ReportFormat {
    Text,
    Json,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum DumpFormat {
    Jsonl,
}

pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, mult) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = s.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("not a duration: {s:?} (try 10s, 500ms, 2m)"))?;
    if !(v.is_finite() && v >= 0.0) {
        return Err(format!("not a duration: {s:?}"));
    }
    Ok(Duration::from_secs_f64(v * mult))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("-1s").is_err());
    }
}
