//! `wakeviz workload`'s command line (the workloads themselves: `crate::commands::workload`;
//! the extraction: `crate::commands::extract`).
use std::path::PathBuf;

#[derive(clap::Subcommand, Debug, Clone)]
pub enum Workload {
    /// Two threads ping-pong one byte over a pair of pipes (pipe wakeups are WF_SYNC).
    Pingpong {
        /// Pin the first thread (the one that starts) to this CPU.
        #[arg(long)]
        waker_cpu: Option<usize>,
        /// Pin the second thread to this CPU.
        #[arg(long)]
        wakee_cpu: Option<usize>,
        #[arg(long, default_value_t = 10_000)]
        iterations: u64,
        /// Task name of both threads (15 bytes at most, as the kernel keeps it).
        #[arg(long, default_value = "wvz-pingpong")]
        comm: String,
        /// The first thread sleeps this long after each round trip: a light, steady source of
        /// wakeups (a neighbour that costs little CPU) instead of one that runs flat out.
        #[arg(long, value_name = "US", default_value_t = 0)]
        pause_us: u64,
    },
    /// hackbench-like fan-out: in each group one sender writes to R receivers, L loops.
    Fanout {
        #[arg(long, default_value_t = 2)]
        groups: usize,
        #[arg(long, default_value_t = 4)]
        receivers: usize,
        #[arg(long, default_value_t = 2_000)]
        loops: u64,
        #[arg(long, default_value = "wvz-fanout")]
        comm: String,
        /// Each receiver answers every message and the sender waits for all answers before
        /// the next round: two wakeups per receiver per loop, where without it the pipe
        /// buffer lets the sender run ahead and most messages wake no one.
        #[arg(long)]
        ack: bool,
    },
    /// Describe a recording's workload: per task, its run and sleep lengths and who wakes it,
    /// grouped by process; optionally as JSON and as an rt-app file that runs the same shape.
    Extract {
        /// The recording.
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// The tasks to describe (default: the recording's scope, the `-- CMD` tree for a
        /// capture with one; `all` for every task).
        #[arg(long, value_name = "SCOPE", value_parser = crate::cli::parse_scope)]
        scope: Option<super::Scope>,
        /// Write the shape as JSON.
        #[arg(long, value_name = "OUT")]
        json: Option<PathBuf>,
        /// Write an rt-app (1.0) file that replays the shape: `rt-app OUT`.
        #[arg(long = "rt-app", value_name = "OUT")]
        rt_app: Option<PathBuf>,
        /// Replace existing output files (the old one is kept as FILE.old).
        #[arg(long)]
        force: bool,
    },
    /// Run a recording's workload again in simulation under one shadow policy, the workload
    /// reacting to its placements (closed loop), and report the figures it would produce.
    Simulate {
        /// The recording.
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// The shadow policy that places the wakeups (`wakeviz figures` lists them as
        /// `shadow.{policy}`: sis_util, prev_only, sis_node, ...).
        #[arg(long)]
        policy: String,
        /// The tasks whose workload is simulated (default: the recording's scope).
        #[arg(long, value_name = "SCOPE", value_parser = crate::cli::parse_scope)]
        scope: Option<super::Scope>,
        /// Seed of the run and sleep draws: the same seed gives the same events.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long, value_enum, default_value = "text")]
        report: super::ReportFormat,
    },
}
