//! `wakeviz workload`'s command line (the workloads themselves: `crate::commands::workload`).

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
}
