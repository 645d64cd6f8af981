//! The command line: every flag and subcommand, as clap parses them. The commands read their
//! arguments from here; nothing here calls a command.
mod diff;
mod experiment;
mod export;
mod scan_points;
mod workload;

pub use diff::DiffArgs;
pub use experiment::ExperimentArgs;
pub use export::ExportArgs;
pub use scan_points::ScanPointsArgs;

use std::{ffi::OsString, path::PathBuf, time::Duration};

use clap::{Parser, ValueEnum};

pub use wakeviz_core::analysis::Scope;

/// `--scope`: the core's syntax, with `cgroup:PATH` (a cgroup v2 directory, or a path as
/// `/proc/PID/cgroup` writes it) resolved on this machine to the cgroup's id.
pub fn parse_scope(s: &str) -> Result<Scope, String> {
    if let Some(p) = s.trim().strip_prefix("cgroup:")
        && p.trim_start().starts_with('/')
    {
        let mount = crate::capture::cgroup::mount()
            .ok_or_else(|| format!("{s}: this machine has no cgroup2 mount"))?;
        let id = crate::capture::cgroup::id_of_path(std::path::Path::new(p.trim()), &mount)?;
        return format!("cgroup:{id}")
            .parse()
            .map_err(|e: wakeviz_core::analysis::ScopeError| e.to_string());
    }
    s.parse()
        .map_err(|e: wakeviz_core::analysis::ScopeError| e.to_string())
}

pub use workload::Workload;

/// Options that only mean something to a live capture: with a recording they would be
/// silently ignored, so they are usage errors there.
const LIVE_ONLY: [&str; 2] = ["replay", "demo"];

/// Longest `--duration`: a bound, so no value can overflow a clock.
pub const MAX_DURATION: Duration = Duration::from_secs(30 * 24 * 3600);

#[derive(Parser, Debug)]
#[command(
    name = "wakeviz",
    version,
    about = "Where the Linux scheduler puts every woken task, what it cost, and what other placement policies would have done",
    after_help = "Live needs root: `sudo wakeviz`. Recordings replay anywhere without root: `wakeviz --replay FILE`. Guide and reference: docs/ in the source tree, `man wakeviz`.\n\n\
Every way wakeviz ends (CMD's end, q, --duration, any catchable signal such as SIGINT, SIGTERM, \
SIGHUP, SIGQUIT, SIGUSR1, SIGALRM or SIGXFSZ, a dead terminal, an error) restores the scheduler \
features it set, finalises the recording and ends CMD's process group (its stop signal, SIGKILL \
after 1 s). If wakeviz itself is killed, the kernel sends CMD SIGKILL (not with \
--keep-command-on-exit), and the next run that sets features finds what was left changed.\n\n\
Scheduler settings are changed under one lock (/run/wakeviz/settings.lock; WAKEVIZ_SETTINGS_LOCK \
overrides it), which records who holds it and the original values: a second run is refused \
while one holds it.\n\n\
Exit status: 0 success; 1 error; 2 usage; 3 a replay that met a damaged recording; with -- CMD, \
CMD's status (128+N if signal N killed it, 127 not found, 126 not executable); 4 scheduler \
settings could not be restored (the line before gives the command that restores them); \
5 refused before changing anything: another run holds the settings lock, or an earlier run left \
settings changed (--restore-leftovers puts them back)."
)]
pub struct Cli {
    /// Capture to FILE (streams to disk while capturing).
    #[arg(long, value_name = "FILE", conflicts_with = "replay")]
    pub record: Option<PathBuf>,
    /// Read a recording instead of the live kernel (no root, no BPF).
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,
    /// With --replay: show the recording BASE beside the replayed figures in every view of
    /// the dashboard (a Δ column, both histograms).
    #[arg(long, value_name = "BASE", requires = "replay",
          conflicts_with_all = ["report", "dump", "headless"])]
    pub compare: Option<PathBuf>,
    /// Replay the demo recording built into the binary.
    #[arg(long, conflicts_with_all = ["replay", "record"])]
    pub demo: bool,
    /// With --record: move an existing FILE to FILE.old instead of refusing to record.
    #[arg(long, requires = "record")]
    pub force: bool,
    /// Stop a live capture after this long (e.g. 10s, 500ms, 2m; at most 30 days).
    #[arg(long, value_parser = parse_duration, conflicts_with_all = ["replay", "demo"])]
    pub duration: Option<Duration>,
    /// No terminal UI.
    #[arg(long)]
    pub headless: bool,
    /// The dashboard's longest wait between two frames when the figures change (20 ms to 10
    /// s; default 250 ms). It draws at once on a key, and not at all while paused or while
    /// nothing changed (a live run's clock still moves once a second).
    #[arg(long, value_name = "DURATION", value_parser = parse_refresh,
          conflicts_with_all = ["headless", "report", "dump"])]
    pub refresh: Option<Duration>,
    /// Print the analysis report (with --replay: and exit; with --record --headless: at the end).
    #[arg(long, value_enum)]
    pub report: Option<ReportFormat>,
    /// Print every event of a recording, one JSON object per line.
    #[arg(long, value_enum, conflicts_with = "report")]
    pub dump: Option<DumpFormat>,
    /// Ring buffer size in MiB (rounded up to a power of two, 1 to 1024); live only.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024),
          conflicts_with_all = LIVE_ONLY)]
    pub ringbuf_mb: Option<u32>,
    /// Ring buffers to spread the CPUs over (1 to 64; default: one per LLC, LLCs of more
    /// than 16 CPUs split); each is `--ringbuf-mb` large and has its own consumer thread. Live only.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64),
          conflicts_with_all = LIVE_ONLY)]
    pub rings: Option<u32>,
    /// Exact ring buffer size in bytes (a power of two, at least one page); for drop tests.
    #[arg(long, hide = true, conflicts_with_all = LIVE_ONLY)]
    pub ringbuf_bytes: Option<u32>,
    /// Read the CPU topology from a saved sysfs `devices/system` tree (live only: a recording
    /// carries its own).
    #[arg(long, value_name = "DIR", conflicts_with_all = LIVE_ONLY)]
    pub topology: Option<PathBuf>,
    /// Do not try fentry/fexit on select_task_rq_fair / select_idle_cpu.
    #[arg(long, conflicts_with_all = LIVE_ONLY)]
    pub no_function_probes: bool,
    /// Where select_idle_cpu is inlined, measure the idle scan with kprobes placed from this
    /// kernel's debug info: a vmlinux with DWARF, or a points file from `wakeviz scan-points`
    /// (default: the running kernel's vmlinux where distributions install it). Live only.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["replay", "demo", "no_scan_points", "no_function_probes"])]
    pub scan_points: Option<PathBuf>,
    /// Do not look for the kernel's debug info (the scan figures then time the whole
    /// select_task_rq_fair where select_idle_cpu is inlined).
    #[arg(long, conflicts_with_all = LIVE_ONLY)]
    pub no_scan_points: bool,
    /// Send every record to its ring on its own instead of in per-CPU batches (each record
    /// then pays the ring's lock; for measuring what batching saves).
    #[arg(long, conflicts_with_all = LIVE_ONLY)]
    pub no_batch: bool,
    /// Keep wakeviz's own threads (`wakeviz`, `wakeviz-drain`) in the figures: by default
    /// their wakeups are left out, live and in replays of recordings that name them.
    #[arg(long)]
    pub include_self: bool,
    /// Which tasks the figures are about: all, cmd (the `-- CMD` process tree followed
    /// through fork and exec: the default of a capture with `-- CMD`), tree:PID, tgid:PID, pid:PID,
    /// cgroup:PATH|ID (a cgroup v2 directory or its id) or comm:TEXT. A wakeup is in scope when
    /// its wakee is. A live run records its scope; a
    /// replay folds with the recording's unless this is given. The dashboard's `/` filter
    /// narrows the view within it.
    #[arg(long, value_name = "SCOPE", value_parser = crate::cli::parse_scope)]
    pub scope: Option<Scope>,
    /// Replace task names with stable hashes in the recording.
    #[arg(long, conflicts_with_all = LIVE_ONLY)]
    pub redact_comm: bool,
    /// Do not sample /proc/schedstat, nor switch kernel.sched_schedstats on for the run (by
    /// default the kernel's own wakeup counters are recorded beside the events and compared).
    #[arg(long, conflicts_with_all = LIVE_ONLY)]
    pub no_schedstat: bool,
    /// Measure each probe's cost with the kernel's BPF run-time statistics and print it, with
    /// what loading each program cost the verifier.
    #[arg(long, conflicts_with_all = LIVE_ONLY)]
    pub bpf_stats: bool,
    /// Best tracepoint attach mode to try (lower modes are the fallbacks); for tests.
    #[arg(long, value_enum, hide = true, conflicts_with_all = LIVE_ONLY)]
    pub tracepoint_mode: Option<crate::probes::TracepointMode>,
    /// Name of the run in reports and comparisons (default: the recording's file name
    /// without its extension).
    #[arg(long, conflicts_with_all = LIVE_ONLY)]
    pub label: Option<String>,
    /// A figure of the command's own output: the first capture group of the last match of
    /// REGEX, as a number (`+NAME=...`: higher is better). Repeatable; needs `-- CMD`.
    #[arg(long = "metric", value_name = "NAME=REGEX",
          value_parser = crate::command::parse_metric, requires = "command")]
    pub metrics: Vec<crate::command::UserMetric>,
    /// Run CMD under the capture, which ends when it exits (`-- hackbench -g 1 -l 2000`);
    /// wakeviz exits with its status.
    #[arg(last = true, value_name = "CMD", value_parser = clap::value_parser!(OsString),
          conflicts_with_all = LIVE_ONLY)]
    pub command: Vec<OsString>,
    /// Let CMD run on if wakeviz itself is killed (SIGKILL, the OOM killer). By default CMD
    /// gets SIGKILL from the kernel when wakeviz dies; every other way out of wakeviz ends
    /// CMD's process group in order (its stop signal, SIGKILL after 1 s) either way.
    #[arg(long, requires = "command")]
    pub keep_command_on_exit: bool,
    /// Set a scheduler feature for the run (`NO_SIS_UTIL`, `SIS_UTIL`, ...; repeatable) through
    /// debugfs `sched/features`, restored when the run ends; needs `-- CMD`.
    #[arg(long = "sched-feature", value_name = "NAME", requires = "command",
          conflicts_with_all = LIVE_ONLY)]
    pub sched_features: Vec<String>,
    /// Put back the scheduler features an earlier run left changed (it was killed, or its
    /// restore failed), as the settings lock recorded them, before this run; alone (no
    /// `-- CMD`), restore them and exit.
    #[arg(long, conflicts_with_all = LIVE_ONLY)]
    pub restore_leftovers: bool,
    /// A plain file standing in for debugfs `sched/features` (tests on kernels without one):
    /// `--sched-feature` writes it, and the metadata reads it.
    #[arg(long, value_name = "PATH", hide = true, conflicts_with_all = LIVE_ONLY)]
    pub sched_features_file: Option<PathBuf>,
    /// Serve OpenMetrics at http://ADDR/metrics (e.g. 127.0.0.1:9345); live only.
    #[arg(long, value_name = "ADDR", conflicts_with_all = LIVE_ONLY)]
    pub serve: Option<std::net::SocketAddr>,
    /// Let --serve listen beyond loopback (0.0.0.0, [::], an interface's address): the
    /// endpoint then gives every task's scheduling data to anyone who can connect.
    #[arg(long, requires = "serve")]
    pub serve_public: bool,
    /// Count in the kernel instead of streaming events (what `--serve` does without --record
    /// and without the dashboard); with --report, print the aggregate's report at the end.
    #[arg(long, hide = true, conflicts_with_all = ["replay", "demo", "record", "aggregate_beside"])]
    pub aggregate: bool,
    /// For tests: attach the aggregate programs beside a streaming capture and write the
    /// aggregate's snapshot (as `--report json`) to FILE at the end.
    #[arg(long, hide = true, value_name = "FILE", conflicts_with_all = LIVE_ONLY)]
    pub aggregate_beside: Option<PathBuf>,
    /// For the benchmark: attach tp_btf programs on the sched tracepoints and nothing else
    /// until SIGINT: `empty` ones (the cost floor of any tracer on these hooks, the default),
    /// `clock` ones (one clock read per hit and nothing else: the floor of a tracer that
    /// timestamps each event), `stream` ones (a clock read and one record per hit: the floor of
    /// a streaming tracer) or `batch` ones (the same records sent 32 at a time from a per-CPU
    /// buffer).
    #[arg(
        long,
        hide = true,
        value_name = "FLOOR",
        num_args = 0..=1,
        default_missing_value = "empty",
        conflicts_with_all = ["replay", "demo", "record", "aggregate", "serve"]
    )]
    pub floor_probes: Option<crate::probes::floor::Floor>,
    /// Print the man page, a shell completion script or the Markdown CLI reference, and exit
    /// (for packagers and `scripts/install.sh`).
    #[arg(long, value_enum, value_name = "WHAT", hide = true, exclusive = true)]
    pub generate: Option<Generate>,
    #[command(subcommand)]
    pub workload: Option<Sub>,
}

#[derive(clap::Subcommand, Debug)]
pub enum Sub {
    /// A recording's workload shape and its rt-app replay (extract); known workloads for
    /// tests and demos (pingpong, fanout).
    #[command(subcommand)]
    Workload(Workload),
    /// Compare recordings (kernels, patches, repeated runs) side by side; gate CI with --fail-if.
    Diff(DiffArgs),
    /// Export recordings to Perfetto or Parquet.
    Export(ExportArgs),
    /// Run a workload under scheduler-feature settings in alternation and compare the runs.
    Experiment(ExperimentArgs),
    /// List every figure: the names reports, `diff`, `--fail-if` and /metrics use, with units.
    Figures,
    /// Find the idle-CPU scan's kprobe points in a debug vmlinux (kernels that inline
    /// select_idle_cpu).
    ScanPoints(ScanPointsArgs),
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

/// `--refresh`: a duration within the range a terminal can show and a person can follow.
fn parse_refresh(v: &str) -> Result<Duration, String> {
    let d = parse_duration(v)?;
    if !(Duration::from_millis(20)..=Duration::from_secs(10)).contains(&d) {
        return Err(format!("{v}: the refresh must be between 20ms and 10s"));
    }
    Ok(d)
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
    let secs = v * mult;
    if !(secs.is_finite() && secs >= 0.0) {
        return Err(format!("not a duration: {s:?}"));
    }
    if secs > MAX_DURATION.as_secs_f64() {
        return Err(format!("{s:?} is longer than the limit of 30 days"));
    }
    Ok(Duration::from_secs_f64(secs))
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
        assert!(parse_duration("1e300s").is_err());
        assert!(parse_duration("inf").is_err());
        assert!(parse_duration("NaNs").is_err());
        assert!(parse_duration("31d").is_err());
        assert_eq!(parse_duration("720h"), Ok(MAX_DURATION));
    }

    #[test]
    fn flags_a_recording_would_ignore_are_usage_errors() {
        use clap::Parser as _;
        for args in [
            &["wakeviz", "--replay", "f", "--topology", "d"][..],
            &["wakeviz", "--replay", "f", "--ringbuf-mb", "4"],
            &["wakeviz", "--replay", "f", "--duration", "1s"],
            &[
                "wakeviz", "--replay", "f", "--dump", "jsonl", "--report", "json",
            ],
            &["wakeviz", "--demo", "--redact-comm"],
            &["wakeviz", "--force"],
            &["wakeviz", "--ringbuf-mb", "0"],
        ] {
            let e = Cli::try_parse_from(args).expect_err(&format!("{args:?} must be refused"));
            assert_eq!(e.exit_code(), 2, "{args:?}: usage errors exit 2");
        }
        assert!(Cli::try_parse_from(["wakeviz", "--record", "f", "--force"]).is_ok());
        for args in [
            &["wakeviz", "--compare", "a"][..],
            &[
                "wakeviz",
                "--replay",
                "b",
                "--compare",
                "a",
                "--report",
                "text",
            ],
        ] {
            let e = Cli::try_parse_from(args).expect_err(&format!("{args:?} must be refused"));
            assert_eq!(e.exit_code(), 2, "{args:?}: usage errors exit 2");
        }
        assert!(Cli::try_parse_from(["wakeviz", "--replay", "b", "--compare", "a"]).is_ok());
    }

    #[test]
    fn commands_and_metrics() {
        use clap::Parser as _;
        let c = Cli::try_parse_from([
            "wakeviz",
            "--record",
            "f",
            "--metric",
            "+rps=rps ([0-9.]+)",
            "--",
            "hackbench",
            "-g",
            "1",
        ])
        .unwrap();
        assert_eq!(c.command, ["hackbench", "-g", "1"]);
        assert_eq!(c.metrics.len(), 1);
        for args in [
            &["wakeviz", "--metric", "x=([0-9]+", "--", "true"][..],
            &["wakeviz", "--metric", "x=([0-9]+)"],
            &["wakeviz", "--replay", "f", "--", "true"],
            &["wakeviz", "--replay", "f", "--label", "x"],
        ] {
            let e = Cli::try_parse_from(args).expect_err(&format!("{args:?} must be refused"));
            assert_eq!(e.exit_code(), 2, "{args:?}: usage errors exit 2");
        }
    }
}

/// What `--generate` prints.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum Generate {
    /// The man page `wakeviz.1` (roff), subcommands included.
    Man,
    Bash,
    Zsh,
    Fish,
    Elvish,
    /// The Markdown CLI reference (`docs/reference/cli.md`).
    Markdown,
}
