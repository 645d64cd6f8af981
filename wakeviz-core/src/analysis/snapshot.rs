//! A [`Snapshot`] is the analysis state reduced to display-ready figures (counts, percentiles,
//! log2 buckets): what the TUI draws each frame and what the reports print, so both show the
//! same numbers.
use serde::{Serialize, Serializer, ser::SerializeMap};

use super::{
    Analysis,
    latency::LatencySummary,
    placement::{Coverage, CpuCounts, PlacementCounts},
    schedstat::SchedstatComparison,
};
use crate::{
    event::Kind,
    format::{ProbeStatus, ScanSource},
    topology::{DomainRow, Group, Level, absent},
};

/// Version of the `--report json` tree (the serialised [`Snapshot`]). Bumped when a key is
/// renamed, removed or changes meaning; adding keys bumps it too, so a consumer can pin it.
/// 2: `schema_version`, `recording`, `placement.per_cpu`, exact `min`/`max`.
/// 3: `shadow.policies.*.probes_p50`.
/// 4: "not available" is `null`, never 0: an empty summary's `min`..`max` and `mean`, and
///    every level-keyed value of a level this topology cannot have (`smt_sibling` without SMT,
///    `same_node` with one LLC per node); `topology.levels`; `placement.coverage` (what the
///    placement figures and the shadow rows cover, and why not the rest); `own_threads`;
///    `shadow.excluded.no_select` / `runnable_at_waking`; percentiles at one precision;
///    `series`, `matrix`, `tasks`.
/// 5: `figures`: every registered figure by name, with its unit, kind and why it is n/a.
/// 6: `shadow.model`, `shadow.model_error`, each policy's `vs_model` (deltas against the
///    kernel's model) and `cannot_differ`.
/// 7: `placement.per_llc`, `placement.per_cpu` and `scan_latency.per_llc` list only the rows
///    where something was counted (`topology.llcs` lists every LLC).
/// 8: `scope` (which tasks the in-scope figures are about).
/// 9: `scan_latency.measured`: the idle scan counted by the debug-info probes.
/// 10: each shadow row's `scan` (its `select_idle_cpu` runs and depth); `shadow.scan_model`
///    covers the in-scope wakeups only.
pub const SCHEMA_VERSION: u32 = 10;

/// Scan latency is shown in nanoseconds, wakeup-to-run latency in microseconds (their natural
/// magnitudes); percentiles are always in nanoseconds.
pub const SCAN_UNIT_NS: u64 = 1;
pub const WAKE_UNIT_NS: u64 = 1_000;

/// Events per kernel kind name, plus `total`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventCounts(pub crate::event::PerKind<u64>);

impl EventCounts {
    pub fn total(&self) -> u64 {
        self.0.total()
    }
}

impl Serialize for EventCounts {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(7))?;
        for k in Kind::ALL {
            m.serialize_entry(k.name(), &self.0[k])?;
        }
        m.serialize_entry("total", &self.total())?;
        m.end()
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Drops {
    pub kernel_drops: u64,
    pub user_drops: u64,
    pub total: u64,
    /// Offered to the ring buffer by the probes, per kind.
    pub offered: EventCounts,
    pub delivered: u64,
    pub select_unpaired: u64,
    /// Ring-buffer records userspace could not decode.
    pub decode_errors: u64,
    /// `sched_wakeup`s without their `sched_waking` (dropped, skipped by the kernel, or before
    /// the capture started).
    pub unmatched_wakeups: u64,
    /// Probe runs the kernel skipped (BPF programs do not nest on a CPU).
    pub probe_misses: u64,
    /// Switches whose `prev` is not the task the CPU's previous switch put on it: switches the
    /// probes never saw (`None`: no switch in the stream).
    pub switch_gaps: Option<u64>,
    /// Events left out because they arrived behind the merge's watermark (several rings).
    pub late_events: u64,
    /// Per-task entries the fold dropped over its budget (more live tasks than a map holds):
    /// the figures of those tasks are joined or scored approximately.
    pub evicted_task_entries: u64,
    /// Per ring buffer, when there were several.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rings: Vec<crate::format::RingStats>,
    /// Per-CPU batching, when the capture batched records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batches: Option<crate::format::BatchStats>,
    /// The longest an event took from its probe to the analyses, live, once the capture had
    /// handed over its first batch (0: not measured).
    #[serde(skip_serializing_if = "crate::format::is_zero")]
    pub max_hold_ns: u64,
    /// The same for the events stamped before that first hand-over (the capture's start-up).
    #[serde(skip_serializing_if = "crate::format::is_zero")]
    pub startup_hold_ns: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TopologySection {
    pub summary: String,
    pub nr_cpus: usize,
    pub packages: usize,
    pub nps_mode: String,
    pub smt: bool,
    pub llc_level: u32,
    pub offline: String,
    pub nodes: Vec<Group>,
    pub memory_only_nodes: Vec<u32>,
    /// Shared: `wakeviz diff` keeps one copy for runs with the same LLCs.
    pub llcs: std::sync::Arc<[Group]>,
    pub distances: Vec<Vec<u32>>,
    pub domain_rows: Vec<DomainRow>,
    /// Whether two CPUs can stand in each relation on this machine: a level that cannot is
    /// n/a (JSON `null`) wherever a figure is keyed by level, never a 0 that reads as measured.
    #[serde(serialize_with = "level_flags")]
    pub levels: ByLevel<bool>,
}

impl TopologySection {
    pub fn level_exists(&self, l: Level) -> bool {
        self.levels.0.iter().any(|&(x, e)| x == l && e)
    }
}

/// wakeviz's own threads (the process and threads such as `wakeviz-drain`, recorded by the
/// live capture) and what leaving them out removed from the filtered figures.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OwnThreads {
    /// As recorded (empty in recordings made before the field existed).
    pub tids: Vec<u32>,
    /// False with `--include-self`, or when no tids are known.
    pub left_out: bool,
    /// `sched_waking` / `sched_wakeup` / `sched_wakeup_new` / select events left out.
    pub events: u64,
    /// Of those, wakeups (`sched_wakeup`s, forks apart).
    pub wakeups: u64,
}

/// Which tasks the in-scope figures are about: a wakeup is in scope when its wakee is (see
/// [`super::filter`]). The dashboard's view (`placement.filter`) narrows it further.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ScopeSection {
    /// `all`, `cmd`, `tree:PID`, `pid:PID` or `comm:TEXT`: what `--scope` takes.
    pub name: String,
    /// The rule in words.
    pub rule: String,
    /// Placed wakeups (forks apart) whose wakee was outside it, wakeviz's own apart.
    pub outside_wakeups: u64,
}

/// Where and how the stream was captured (the recording's header, without the topology and
/// probes, which have their own sections).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RecordingSection {
    pub format_version: u32,
    pub abi_version: u32,
    pub tool_version: String,
    pub kernel_release: String,
    pub hostname: String,
    pub cpu_vendor: Option<String>,
    /// CLOCK_MONOTONIC of the capture start, and the offset that turns it into UTC.
    pub start_ts_ns: u64,
    pub realtime_offset_ns: i64,
    pub ringbuf_bytes: u64,
    pub comm_redacted: bool,
    /// Degraded modes and other facts about the capture, one sentence each.
    pub notes: Vec<String>,
    /// Conditions of the run (label, features, sysctls, command).
    pub run: crate::run::RunMeta,
    /// The workload's exit and parsed figures, once the capture ended (`-- CMD`).
    pub workload: Option<crate::run::WorkloadOutcome>,
    /// Wall time of the whole capture, once it ended (null in older recordings and while live).
    pub capture_duration_ns: Option<u64>,
}

/// A per-CPU or per-LLC row that may be left out of the JSON when nothing happened there.
trait Row {
    fn is_empty(&self) -> bool;
}

impl Row for CpuRow {
    fn is_empty(&self) -> bool {
        self.counts.landed == 0 && self.counts.woke == 0
    }
}

impl Row for GroupCounts {
    fn is_empty(&self) -> bool {
        let c = &self.counts;
        c.count == 0 && c.unclassified == 0 && c.migrations == 0 && c.affine == 0
    }
}

impl Row for LlcLatency {
    fn is_empty(&self) -> bool {
        self.latency.quantiles.count == 0
    }
}

fn nonempty_rows<S: Serializer, R: Row + Serialize>(rows: &[R], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(rows.iter().filter(|r| !r.is_empty()))
}

/// Wakeups landed on and woken from one CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CpuRow {
    pub cpu: u32,
    #[serde(flatten)]
    pub counts: CpuCounts,
}

/// Placement counts of one group (a node or an LLC).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GroupCounts {
    pub id: u32,
    pub cpus: String,
    #[serde(flatten)]
    pub counts: PlacementCounts,
}

/// A row of the kernel-developer table (seed 000's "Wakeups on same SMT/MC/DIE/NUMA cpus").
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DomainTableRow {
    pub name: &'static str,
    pub levels: Vec<Level>,
    /// Wakeups whose waker -> chosen relation is one of `levels`.
    pub wakeups: u64,
    /// Affine wakeups whose waker -> previous relation is one of `levels`.
    pub affine: u64,
    /// False for rows inside one LLC, where an affine pick cannot be seen (always 0 there).
    pub affine_observable: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WindowSection {
    pub span_ns: u64,
    pub from_ns: u64,
    pub to_ns: u64,
    /// Every event of the window, per kind (unfiltered).
    pub events: EventCounts,
    pub placement: PlacementCounts,
    #[serde(skip)]
    pub scan: LatencySummary,
    #[serde(skip)]
    pub wakeup_latency: LatencySummary,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlacementSection {
    pub filter: Option<String>,
    pub affine_definition: &'static str,
    pub first_ts_ns: Option<u64>,
    pub last_ts_ns: u64,
    /// How many wakeups `wakeups` classifies, why the others are not, and how many of them
    /// the shadow rows cover.
    pub coverage: Coverage,
    pub wakeups: PlacementCounts,
    pub new_tasks: PlacementCounts,
    pub per_node: Vec<GroupCounts>,
    /// Every LLC of the topology; the JSON lists those with a placement (`topology.llcs` lists
    /// them all), so an 8192-LLC header costs the report what its events justify.
    #[serde(serialize_with = "nonempty_rows")]
    pub per_llc: Vec<GroupCounts>,
    /// Every CPU of the topology, in CPU order; the JSON lists those a wakeup landed on or
    /// was woken from.
    #[serde(serialize_with = "nonempty_rows")]
    pub per_cpu: Vec<CpuRow>,
    pub domain_table: Vec<DomainTableRow>,
    pub windows: Windows<WindowSection>,
}

impl PlacementSection {
    /// The counts of CPU `cpu` (rows are in ascending CPU order).
    pub fn cpu(&self, cpu: u32) -> Option<&CpuCounts> {
        self.per_cpu
            .binary_search_by_key(&cpu, |r| r.cpu)
            .ok()
            .map(|i| &self.per_cpu[i].counts)
    }

    /// Wakeups that landed on a CPU of the topology.
    pub fn landed_total(&self) -> u64 {
        self.per_cpu.iter().map(|r| r.counts.landed).sum()
    }
}

/// The two rolling windows, serialized as `{"1s": ..., "10s": ...}`.
#[derive(Clone, Debug, PartialEq)]
pub struct Windows<T> {
    pub w1s: T,
    pub w10s: T,
}

impl<T: Serialize> Serialize for Windows<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("1s", &self.w1s)?;
        m.serialize_entry("10s", &self.w10s)?;
        m.end()
    }
}

/// Values per [`Level`], serialized as a map keyed by the level names.
#[derive(Clone, Debug, PartialEq)]
pub struct ByLevel<T>(pub Vec<(Level, T)>);

impl<T: Serialize> Serialize for ByLevel<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (l, v) in &self.0 {
            m.serialize_entry(l.name(), &absent::unless(*l, v))?;
        }
        m.end()
    }
}

/// Whether each level can occur: written as it is, whatever the machine (it is what says
/// which levels are absent).
fn level_flags<S: Serializer>(v: &ByLevel<bool>, s: S) -> Result<S::Ok, S::Error> {
    let mut m = s.serialize_map(Some(v.0.len()))?;
    for (l, e) in &v.0 {
        m.serialize_entry(l.name(), e)?;
    }
    m.end()
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LlcLatency {
    pub id: u32,
    pub cpus: String,
    #[serde(flatten)]
    pub latency: LatencySummary,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScanSection {
    /// What is measured ([`ScanSource::label`]); shown next to every figure.
    pub source: &'static str,
    pub available: bool,
    /// Why not, when `available` is false.
    pub status: Option<&'static str>,
    /// Unit of the `log2` bucket bounds; percentiles are in ns.
    pub log2_unit: &'static str,
    pub overall: LatencySummary,
    /// Every LLC; the JSON lists those with a measured scan.
    #[serde(serialize_with = "nonempty_rows")]
    pub per_llc: Vec<LlcLatency>,
    pub windows: Windows<LatencySummary>,
    /// What the debug-info probes counted (absent without them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured: Option<MeasuredScan>,
}

/// The idle scan counted by kprobes placed from the kernel's debug info, over the in-scope
/// placements they watched (fork and exec placements excluded, as for the latency).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MeasuredScan {
    /// `select_task_rq_fair` calls watched.
    pub calls: u64,
    /// Calls in which `select_idle_cpu` ran.
    pub scans: u64,
    /// Scans that searched for an idle core (`select_idle_core`).
    pub core_scans: u64,
    /// Calls that tried prev's SMT siblings first (`select_idle_smt`).
    pub smt_calls: u64,
    /// Idle tests over all scans (a CPU per `__select_idle_cpu`, a core per
    /// `select_idle_core`).
    pub cpus_tested: u64,
    /// Scans by idle tests made (index = tests; the last bucket holds 256 and more).
    pub by_cpus_tested: Vec<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LatencySection {
    /// The placement relation used for `by_level`.
    pub relation: &'static str,
    pub log2_unit: &'static str,
    pub overall: LatencySummary,
    /// Keyed by the six level names, in order.
    pub by_level: ByLevel<LatencySummary>,
    pub new_task: LatencySummary,
    pub windows: Windows<LatencySummary>,
}

/// Everything the analyses know, at one moment of the stream: what the dashboard draws, what
/// `--report text` renders and, serialised as it is, `--report json` (every level-keyed value
/// of a level the machine cannot have is `null`: see [`crate::topology::absent`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    pub schema_version: u32,
    pub recording: RecordingSection,
    pub events: EventCounts,
    pub drops: Drops,
    pub own_threads: OwnThreads,
    pub scope: ScopeSection,
    pub probes: Vec<ProbeStatus>,
    pub topology: TopologySection,
    pub placement: PlacementSection,
    pub scan_latency: ScanSection,
    pub wakeup_latency: LatencySection,
    pub schedstat: Option<SchedstatComparison>,
    /// Why the stream's latest `/proc/schedstat` sample could not be compared.
    pub schedstat_error: Option<String>,
    pub shadow: Option<crate::shadow::ShadowReport>,
    /// The session per interval (follows the filter).
    pub series: super::series::SeriesSection,
    /// Waker x chosen, per CPU or per LLC (cumulative, follows the filter).
    pub matrix: super::matrix::MatrixSection,
    /// Wakers and wakees (cumulative, follows the filter).
    pub tasks: super::tasks::TaskSection,
    /// Every registered figure of this snapshot ([`crate::figures`]): what the diff, the gates,
    /// `/metrics` and the reports' figure lists read.
    pub figures: crate::figures::Figures,
}

impl Serialize for Snapshot {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        /// The fields, in order, serialised while this machine's absent levels are marked.
        #[derive(Serialize)]
        struct Fields<'a> {
            schema_version: u32,
            recording: &'a RecordingSection,
            events: &'a EventCounts,
            drops: &'a Drops,
            own_threads: &'a OwnThreads,
            scope: &'a ScopeSection,
            probes: &'a [ProbeStatus],
            topology: &'a TopologySection,
            placement: &'a PlacementSection,
            scan_latency: &'a ScanSection,
            wakeup_latency: &'a LatencySection,
            schedstat: &'a Option<SchedstatComparison>,
            #[serde(skip_serializing_if = "Option::is_none")]
            schedstat_error: &'a Option<String>,
            shadow: &'a Option<crate::shadow::ShadowReport>,
            series: &'a super::series::SeriesSection,
            matrix: &'a super::matrix::MatrixSection,
            tasks: &'a super::tasks::TaskSection,
            figures: &'a crate::figures::Figures,
        }
        let absent = Level::ALL
            .into_iter()
            .filter(|&l| !self.topology.level_exists(l));
        let _marked = absent::set(absent);
        Fields {
            schema_version: self.schema_version,
            recording: &self.recording,
            events: &self.events,
            drops: &self.drops,
            own_threads: &self.own_threads,
            scope: &self.scope,
            probes: &self.probes,
            topology: &self.topology,
            placement: &self.placement,
            scan_latency: &self.scan_latency,
            wakeup_latency: &self.wakeup_latency,
            schedstat: &self.schedstat,
            schedstat_error: &self.schedstat_error,
            shadow: &self.shadow,
            series: &self.series,
            matrix: &self.matrix,
            tasks: &self.tasks,
            figures: &self.figures,
        }
        .serialize(s)
    }
}

impl Snapshot {
    /// This snapshot without its per-CPU, per-LLC, per-task and per-interval rows, which a
    /// comparison never reads: what `wakeviz diff` keeps of each run, so that an extra run costs
    /// its figures rather than its topology. The figures are evaluated before the rows go.
    pub fn for_comparison(mut self) -> Self {
        self.placement.per_llc = Vec::new();
        self.placement.per_cpu = Vec::new();
        self.scan_latency.per_llc = Vec::new();
        self.matrix.labels = Vec::new();
        self.matrix.counts = Vec::new();
        self.tasks.rows = Vec::new();
        self.tasks.by_comm = Vec::new();
        self.series.points = Vec::new();
        self
    }

    /// Recomputes [`Snapshot::figures`] from the sections, after one was replaced (the
    /// in-kernel aggregate fills the latency sections from its own histograms).
    pub fn refresh_figures(&mut self) {
        self.figures = crate::figures::Figures(crate::figures::evaluate(self));
    }
}

pub const AFFINE_DEFINITION: &str = "chosen_cpu != prev_cpu and chosen_cpu shares an LLC with waker_cpu but not with prev_cpu \
     (the outcome of wake_affine() picking the waker's side; affine picks inside one LLC are not observable)";

/// One window: `fine` alone (1 s), or `coarse` plus `fine` (10 s: `coarse` holds what expired
/// from `fine`).
impl Analysis {
    /// Reduces the current state to display figures (allocates; call per frame, not per event):
    /// the fold's own sections, then each registered part's, then the figures of them all.
    pub fn snapshot(&self) -> Snapshot {
        let mut snap = self.skeleton();
        self.parts.fill(&self.ctx(), &mut snap);
        let available = snap.events.0[Kind::Select] > self.waking_inputs;
        let scan = &mut snap.scan_latency;
        scan.available = available;
        scan.status = (!available).then_some(match self.header.scan_source {
            ScanSource::None => "unavailable: tracepoint-only mode",
            _ => "unavailable: no select_task_rq_fair events in this stream",
        });
        snap.refresh_figures();
        snap
    }

    /// The sections the fold itself knows (the recording, the capture's counters, the
    /// topology, own threads), with empty ones for the parts to fill.
    fn skeleton(&self) -> Snapshot {
        let (h, t, s) = (&self.header, &self.header.topology, &self.stats);
        let empty = LatencySummary::default();
        let no_windows = || Windows {
            w1s: empty.clone(),
            w10s: empty.clone(),
        };
        let no_window = WindowSection {
            span_ns: 0,
            from_ns: 0,
            to_ns: 0,
            events: EventCounts::default(),
            placement: PlacementCounts::default(),
            scan: empty.clone(),
            wakeup_latency: empty.clone(),
        };
        Snapshot {
            schema_version: SCHEMA_VERSION,
            recording: RecordingSection {
                format_version: h.format_version,
                abi_version: h.abi_version,
                tool_version: h.tool_version.clone(),
                kernel_release: h.kernel_release.clone(),
                hostname: h.hostname.clone(),
                cpu_vendor: h.cpu_vendor.clone(),
                start_ts_ns: h.start_ts_ns,
                realtime_offset_ns: h.realtime_offset_ns,
                ringbuf_bytes: h.ringbuf_bytes,
                comm_redacted: h.comm_redacted,
                notes: h.notes.clone(),
                run: h.run.clone(),
                workload: self.workload.clone(),
                capture_duration_ns: s.capture_duration_ns,
            },
            events: EventCounts::default(),
            drops: Drops {
                kernel_drops: s.kernel_drops,
                user_drops: s.user_drops,
                total: s.drops(),
                offered: EventCounts(s.offered),
                delivered: s.delivered,
                select_unpaired: s.select_unpaired,
                decode_errors: s.decode_errors,
                unmatched_wakeups: self.joiner.unmatched_wakeups,
                probe_misses: s.probe_misses,
                switch_gaps: None,
                late_events: s.late_events,
                evicted_task_entries: self.evicted(),
                rings: s.rings.clone(),
                batches: s.batches.as_deref().cloned(),
                max_hold_ns: s.max_hold_ns,
                startup_hold_ns: s.startup_hold_ns,
            },
            own_threads: OwnThreads {
                tids: h.run.own_tids.clone(),
                left_out: !self.own.is_empty(),
                events: self.own_events,
                wakeups: self.own_wakeups,
            },
            scope: ScopeSection {
                name: self
                    .scope()
                    .map_or_else(|| "all".into(), ToString::to_string),
                rule: self
                    .scope()
                    .map_or_else(|| "every wakeup".into(), super::filter::Filter::describe),
                outside_wakeups: self.outside_wakeups,
            },
            probes: h.probes.clone(),
            topology: TopologySection {
                summary: t.summary(),
                nr_cpus: t.nr_cpus(),
                packages: t.packages.len(),
                nps_mode: t.nps_mode(),
                smt: t.smt_active(),
                llc_level: t.llc_level,
                offline: t.offline.to_list(),
                nodes: t.nodes.clone(),
                memory_only_nodes: t.memory_only_nodes.clone(),
                llcs: t.llcs.as_slice().into(),
                distances: t.distances.clone(),
                domain_rows: t.domain_rows(),
                levels: ByLevel(Level::ALL.iter().map(|&l| (l, t.level_exists(l))).collect()),
            },
            placement: PlacementSection {
                filter: self.filter().map(ToString::to_string),
                affine_definition: AFFINE_DEFINITION,
                first_ts_ns: None,
                last_ts_ns: 0,
                coverage: Coverage::default(),
                wakeups: PlacementCounts::default(),
                new_tasks: PlacementCounts::default(),
                per_node: Vec::new(),
                per_llc: Vec::new(),
                per_cpu: Vec::new(),
                domain_table: Vec::new(),
                windows: Windows {
                    w1s: no_window.clone(),
                    w10s: no_window,
                },
            },
            scan_latency: ScanSection {
                source: h.scan_source.label(),
                available: false,
                status: None,
                log2_unit: "ns",
                overall: empty.clone(),
                per_llc: Vec::new(),
                windows: no_windows(),
                measured: None,
            },
            wakeup_latency: LatencySection {
                relation: "waker_cpu -> chosen_cpu",
                log2_unit: "us",
                overall: empty.clone(),
                by_level: ByLevel(Vec::new()),
                new_task: empty.clone(),
                windows: no_windows(),
            },
            schedstat: None,
            schedstat_error: None,
            shadow: None,
            series: super::series::Series::default().section(0),
            matrix: super::matrix::MatrixSection::default(),
            tasks: super::tasks::TaskStats::default().section(&self.tasks),
            figures: crate::figures::Figures::default(),
        }
    }
}
