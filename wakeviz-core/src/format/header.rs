use serde::{Deserialize, Serialize};

use crate::{event::Kind, topology::Topology};

pub const MAGIC: &[u8; 8] = b"WVZTRACE";
/// Bumped whenever a file of this version could not be read whole by a reader of the previous
/// one, or would be folded into other figures by it (the rule: docs/reference/recording-format.md,
/// "Compatibility"). Version 8 may come from probes that leave a pinned task's repeated
/// at-waking record unsent (probe ABI 6, `wakeviz_common::PINNED_REPEATS_UNSENT_SINCE`), which
/// an older reader would not restore. Version 7 may carry the idle scan measured by kprobes placed from the
/// kernel's debug info (a select flag an older reader refuses) and says where the points came
/// from in the header. Version 6 may hold select records that are inputs read at `sched_waking`
/// (`wf::AT_WAKING`), which an older reader would count as calls, and ends each `TASKS` entry
/// with the process's cgroup id; version 5 gives each `TASKS` entry its thread-group id; version 4 records the run's scope (`run.scope`), which a replay folds with
/// by default; version 3 adds the `SCHEDSTAT` chunk; version 2 made `EVENTS` payloads columns
/// ([`super::columns`]); version 1 files (rows of varints, [`super::codec`]) are still read. A
/// reader refuses a newer version by this number instead of misreading its chunks.
///
/// A new event kind names the version whose payloads first hold it (`Kind::since`, which its
/// columns in [`super::columns::PLAIN`] take), and this one follows: a build cannot write
/// those columns under a version whose readers would take them for the select inputs that
/// follow.
pub const FORMAT_VERSION: u32 = {
    let latest = 8;
    let columns = super::columns::LATEST;
    if columns > latest { columns } else { latest }
};
/// The first format version with `SCHEDSTAT` chunks.
pub const SCHEDSTAT_SINCE: u32 = 3;
/// The first format version whose `TASKS` entries end with the task's tgid.
pub const TGID_SINCE: u32 = 5;
/// The first format version whose `TASKS` entries end with the process's cgroup id, after the
/// tgid.
pub const CGROUP_SINCE: u32 = 6;

/// How a probe is attached, best first within its group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeMode {
    TpBtf,
    RawTp,
    Tracepoint,
    Fentry,
    /// A kprobe at `symbol+offset` (the idle-scan points from the kernel's debug info).
    Kprobe,
    /// Recorded by `xtask synth`, not by probes.
    Synthetic,
}

impl ProbeMode {
    /// The name used in files, reports and the UI (`tp_btf`, `raw_tp`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Self::TpBtf => "tp_btf",
            Self::RawTp => "raw_tp",
            Self::Tracepoint => "tracepoint",
            Self::Fentry => "fentry",
            Self::Kprobe => "kprobe",
            Self::Synthetic => "synthetic",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "reason")]
pub enum ProbeState {
    Attached,
    /// Tried and refused; the reason says why (EPERM, verifier, ...).
    Failed(String),
    /// Not attempted: the kernel lacks the probe point (not in kernel, inlined).
    Unavailable(String),
}

/// One probe point and what happened to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeStatus {
    /// Kernel name: `sched_waking`, `select_task_rq_fair`, ...
    pub name: String,
    pub mode: Option<ProbeMode>,
    #[serde(flatten)]
    pub state: ProbeState,
    /// Earlier modes that were tried and failed, with reasons ("tp_btf: EPERM").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallbacks: Vec<String>,
}

impl ProbeState {
    pub fn reason(&self) -> Option<&str> {
        match self {
            Self::Attached => None,
            Self::Failed(r) | Self::Unavailable(r) => Some(r),
        }
    }
}

impl ProbeStatus {
    pub fn attached(&self) -> bool {
        self.state == ProbeState::Attached
    }
}

/// Where the scan-latency figures come from; shown next to every scan-latency number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScanSource {
    /// fentry/fexit on `select_idle_cpu` itself.
    SelectIdleCpu,
    /// `select_task_rq_fair` entry-to-exit: the whole placement, including the idle scan
    /// (`select_idle_cpu` is inlined in most kernels).
    SelectTaskRqFair,
    /// Neither function could be probed (tracepoint-only mode).
    None,
    /// `select_idle_cpu` inlined, watched by kprobes at addresses from the kernel's debug info
    /// ([`Header::scan_points`]): each scan from its entry to `select_task_rq_fair`'s exit, with
    /// the CPUs it tested and the path it took.
    DebugInfo,
}

impl ScanSource {
    pub const fn label(self) -> &'static str {
        match self {
            Self::SelectIdleCpu => "select_idle_cpu duration",
            Self::SelectTaskRqFair => "select_task_rq_fair duration (select_idle_cpu inlined)",
            Self::None => "unavailable: no function probes (tracepoint-only mode)",
            Self::DebugInfo => {
                "select_idle_cpu entry to select_task_rq_fair exit (measured, debug-info probes)"
            }
        }
    }
}

/// Cumulative capture counters. Drops are counted twice, where they happen. The END chunk also
/// carries what is known only once the capture is over (its duration, the workload's outcome).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CaptureStats {
    /// Events offered to the ring buffer by the probes, per kind (index = [`Kind::index`]).
    pub offered: crate::event::PerKind<u64>,
    /// Events lost in the kernel: `bpf_ringbuf_reserve` failed (ring buffer full).
    pub kernel_drops: u64,
    /// Events lost in userspace: the bounded channel to the consumer was full.
    pub user_drops: u64,
    /// Events that reached the consumer (and the recording, when recording).
    pub delivered: u64,
    /// fexit(select_task_rq_fair) without a matching fentry on that CPU.
    pub select_unpaired: u64,
    /// Ring-buffer records userspace could not decode (ABI mismatch; should stay 0).
    #[serde(default)]
    pub decode_errors: u64,
    /// Probe runs the kernel skipped because a BPF program was already running on that CPU
    /// (BPF programs do not nest: an interrupt that wakes a task while a probe runs). These
    /// events never reached a probe, so they are outside `offered`.
    #[serde(default)]
    pub probe_misses: u64,
    /// Events that reached userspace after the merge of several rings had already passed
    /// their timestamp: counted and left out of the stream rather than joined out of order.
    #[serde(default)]
    pub late_events: u64,
    /// Per ring buffer, when the capture used more than one (empty otherwise and in older
    /// files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rings: Vec<RingStats>,
    /// Per-CPU batching, when the capture batched records (absent otherwise and in older
    /// files). Boxed, as `workload`: every batch of events carries these counters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batches: Option<Box<BatchStats>>,
    /// The longest any event took from its probe's stamp to the analyses (drain polling, the
    /// merge's grace, batches): how far the live view can lag the kernel. Events stamped after
    /// the capture handed over its first batch only; 0 when not measured.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub max_hold_ns: u64,
    /// The same for events stamped before that first hand-over: until every ring has delivered
    /// and the first batch reading is in, the merge holds everything, so the start-up hold is
    /// kept apart from the steady-state lag above. 0 when not measured (and in older files).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub startup_hold_ns: u64,
    /// Wall time from the start of the capture to its end (END chunk only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture_duration_ns: Option<u64>,
    /// The `-- CMD` workload's exit and parsed figures (END chunk only). Absent in older files
    /// and in captures without a command. Boxed: every batch carries these counters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<Box<crate::run::WorkloadOutcome>>,
}

/// One ring buffer's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RingStats {
    /// The CPUs whose probes write to it, as a list (`0-15`).
    pub cpus: String,
    /// Failed reserves on those CPUs (ring full).
    pub kernel_drops: u64,
    /// Records its consumer thread read.
    pub delivered: u64,
    /// Records its consumer could not hand over (channel full).
    #[serde(default)]
    pub user_drops: u64,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
pub(crate) fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// How the probes' per-CPU batches went (`wakeviz_common::batch`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchStats {
    /// Batches handed to the rings.
    pub sent: u64,
    /// Records sent on their own: made in the idle task's context, or by a probe that
    /// interrupted another on its CPU.
    pub unbatched: u64,
    /// Batches wakeviz asked a CPU to send because it held one for more than a few ms without
    /// a scheduler event (a CPU running one task).
    pub flushed_by_wakeviz: u64,
    /// Records lost with batches a full ring refused (also in `kernel_drops`).
    pub dropped_records: u64,
}

impl BatchStats {
    /// One line for the summary and the text report.
    pub fn summary(&self) -> String {
        format!(
            "per-CPU batches: {} sent, {} flushed by wakeviz (a CPU quiet for 5 ms), {} records sent alone (idle context or nested), {} records lost with refused batches",
            self.sent, self.flushed_by_wakeviz, self.unbatched, self.dropped_records
        )
    }
}

impl CaptureStats {
    pub fn drops(&self) -> u64 {
        self.kernel_drops + self.user_drops
    }

    pub fn offered_of(&self, k: Kind) -> u64 {
        self.offered[k]
    }
}

/// Everything about a capture that is not an event. Stored once at the start of a recording.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub format_version: u32,
    /// `wakeviz_common::ABI_VERSION` of the probes that produced the events.
    pub abi_version: u32,
    pub tool_version: String,
    /// `uname -r` of the traced machine.
    pub kernel_release: String,
    pub hostname: String,
    /// CLOCK_REALTIME minus CLOCK_MONOTONIC at start, to print wall-clock times.
    pub realtime_offset_ns: i64,
    /// Monotonic time the capture started.
    pub start_ts_ns: u64,
    pub probes: Vec<ProbeStatus>,
    pub scan_source: ScanSource,
    pub topology: Topology,
    pub ringbuf_bytes: u64,
    /// Task names were replaced by stable hashes (`--redact-comm`).
    #[serde(default)]
    pub comm_redacted: bool,
    /// `/proc/cpuinfo` `vendor_id` (`AuthenticAMD`, `GenuineIntel`, ...): the kernel's
    /// `node_reclaim_distance`, which decides whether wakeups may be pulled across NUMA nodes,
    /// depends on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_vendor: Option<String>,
    /// Free-form notes (degraded modes, synthetic workload description).
    #[serde(default)]
    pub notes: Vec<String>,
    /// The conditions of the run, for comparisons (absent in older recordings: all unknown).
    #[serde(default)]
    pub run: crate::run::RunMeta,
    /// The clocks read back-to-back at capture start, so exports can put event times on the
    /// clock another tool expects (Perfetto: BOOTTIME). Absent in older recordings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clocks: Option<ClockSnapshot>,
    /// Where the idle-scan kprobes were placed and where those points came from (the
    /// debug-info file and its build id), when they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scan_points: Option<crate::scan_points::ScanPoints>,
}

/// One reading of the clocks that matter for timestamps, taken back-to-back (a few hundred ns
/// apart at most). Events carry [`ClockSnapshot::probe_clock`] times; BOOTTIME differs from
/// MONOTONIC by the time the machine spent suspended, which no other field tells.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockSnapshot {
    /// The clock event timestamps are on: the probes' `bpf_ktime_get_ns` is CLOCK_MONOTONIC.
    pub probe_clock: ProbeClock,
    pub monotonic_ns: u64,
    pub boottime_ns: u64,
    /// Nanoseconds since the Unix epoch (negative before 1970, as CLOCK_REALTIME can be).
    pub realtime_ns: i64,
}

/// The kernel clock behind event timestamps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeClock {
    /// `bpf_ktime_get_ns`: CLOCK_MONOTONIC (does not count suspend).
    Monotonic,
}

impl ClockSnapshot {
    /// BOOTTIME minus the probe clock at capture start.
    pub fn boot_minus_probe_ns(&self) -> i64 {
        self.boottime_ns as i64 - self.monotonic_ns as i64
    }
}

impl Header {
    /// Probes whose absence limits what the analyses can say, for "degraded" labels.
    pub fn degraded(&self) -> Vec<&ProbeStatus> {
        self.probes.iter().filter(|p| !p.attached()).collect()
    }

    pub fn probe(&self, name: &str) -> Option<&ProbeStatus> {
        self.probes.iter().find(|p| p.name == name)
    }
}
