//! wakeviz's own knowledge as TrackEvent tracks under one "wakeviz" group: on a track per CPU,
//! an instant per placed wakeup at its `sched_waking` (on the waker's CPU, named by the level
//! waker -> chosen CPU, with the analysis's figures as args) and a "run" instant where the
//! wakee switched in, joined by a flow; counter tracks of the level mix in fixed time bins.
//! Everything comes from [`PlacementRecord`]s: nothing is classified or measured here.
use std::collections::BTreeMap;

use perfetto_protos::{
    counter_descriptor::{CounterDescriptor, counter_descriptor::Unit},
    debug_annotation::{DebugAnnotation, DebugAnnotationName},
    interned_data::InternedData,
    trace_packet::{TracePacket, trace_packet::SequenceFlags},
    track_descriptor::TrackDescriptor,
    track_event::{EventName, TrackEvent, track_event::Type},
};
use wakeviz_core::{analysis::PlacementRecord, event::TaskTable, topology::Level};

use super::{clock::TimeBase, ftrace::comm_of};

/// Packet sequence of the TrackEvent data (its interning is independent of the kernel data).
pub const SEQ_TRACKS: u32 = 2;

/// Width of a level-mix counter bin.
pub const BIN_NS: u64 = 10_000_000;

// Track uuids only need to be unique within the trace; small ones keep every event's varint
// short (a uuid is repeated in each of them).
const ROOT_UUID: u64 = 1;
const COUNTER_UUID: u64 = 16;
const CPU_UUID: u64 = 1 << 16;

/// The two level mixes: relative to the waker's CPU and to the task's previous CPU.
const MIXES: [&str; 2] = ["vs waker", "vs prev"];

/// Interned event names: iid 1.. = levels, then "unclassified", the same for forks, "run".
const UNCLASSIFIED: u64 = Level::ALL.len() as u64 + 1;
const FORK_BASE: u64 = UNCLASSIFIED;
const RUN: u64 = 2 * UNCLASSIFIED + 1;

fn event_name_iid(r: &PlacementRecord) -> u64 {
    let base = r.vs_waker.map_or(UNCLASSIFIED, |l| l.index() as u64 + 1);
    if r.placement.new_task {
        FORK_BASE + base
    } else {
        base
    }
}

/// The event names an iid stands for, in iid order from 1.
fn event_names() -> Vec<String> {
    let plain: Vec<String> = Level::ALL
        .iter()
        .map(|l| l.name().to_string())
        .chain(["unclassified".to_string()])
        .collect();
    let forks = plain.iter().map(|n| format!("fork: {n}"));
    plain
        .clone()
        .into_iter()
        .chain(forks)
        .chain(["run".to_string()])
        .collect()
}

/// Arg names, interned; iid = index + 1. Shadow policies follow as `shadow.NAME`. The level
/// vs the waker and whether it was a fork are the event's name; the waker's name is the
/// thread running on the waker's CPU in the CPU track above.
const ARGS: [&str; 15] = [
    "pid",
    "comm",
    "waker_pid",
    "waker_cpu",
    "prev_cpu",
    "chosen_cpu",
    "vs_prev",
    "sync",
    "select_ns",
    "scan_ns",
    "wakeup_to_run_ns",
    "scan_ran",
    "scan_idle_tests",
    "scan_idle_core",
    "scan_smt",
];

fn arg_iid(name: &str) -> u64 {
    ARGS.iter()
        .position(|a| *a == name)
        .map_or(0, |i| i as u64 + 1)
}

enum Val {
    Int(i64),
    Uint(u64),
    Str(String),
    Bool(bool),
}

fn arg(iid: u64, v: Val) -> DebugAnnotation {
    let mut a = DebugAnnotation::new();
    a.set_name_iid(iid);
    match v {
        Val::Int(i) => a.set_int_value(i),
        Val::Uint(u) => a.set_uint_value(u),
        Val::Str(s) => a.set_string_value(s),
        Val::Bool(b) => a.set_bool_value(b),
    }
    a
}

fn packet(ts: u64) -> TracePacket {
    let mut p = TracePacket::new();
    p.set_timestamp(ts);
    p.set_trusted_packet_sequence_id(SEQ_TRACKS);
    p.set_sequence_flags(SequenceFlags::SEQ_NEEDS_INCREMENTAL_STATE as u32);
    p
}

fn descriptor(ts: u64, uuid: u64, name: String, parent: Option<u64>) -> TracePacket {
    let mut d = TrackDescriptor::new();
    d.set_uuid(uuid);
    d.set_name(name);
    if let Some(p) = parent {
        d.set_parent_uuid(p);
    }
    let mut p = packet(ts);
    p.set_track_descriptor(d);
    p
}

fn counter_uuid(mix: usize, level: usize) -> u64 {
    COUNTER_UUID + (mix * Level::ALL.len() + level) as u64
}

/// A CPU outside the recording's topology (only a damaged or hostile file has one) goes on
/// this one track rather than on a track the part's preamble did not describe.
const OTHER_CPU_UUID: u64 = 2;

/// Builds the TrackEvent packets. Memory: the topology's CPU list and the counter bins of
/// the last [`wakeviz_core::horizons::WAKE_TO_RUN_NS`] (how late a record can come).
pub struct Tracks {
    policies: Vec<&'static str>,
    /// The topology's CPUs, ascending: each has a track described in every part's preamble.
    cpus: Vec<u32>,
    /// Bin start (probe clock) -> wakeups per mix and level.
    bins: BTreeMap<u64, [[u64; Level::ALL.len()]; 2]>,
    /// The last bin written, so the next sample after a gap can drop the counters to 0.
    last_bin: Option<u64>,
    next_flow: u64,
    pub instants: u64,
}

impl Tracks {
    pub fn new(policies: Vec<&'static str>, cpus: Vec<u32>) -> Self {
        Self {
            policies,
            cpus,
            bins: BTreeMap::new(),
            last_bin: None,
            next_flow: 1,
            instants: 0,
        }
    }

    /// The start of a part: interned names (the sequence's state is cleared, so every part
    /// decodes alone) and every track, so no packet after it depends on an earlier part.
    pub fn preamble(&self, ts: u64) -> Vec<TracePacket> {
        let mut data = InternedData::new();
        for (i, n) in event_names().into_iter().enumerate() {
            let mut e = EventName::new();
            e.set_iid(i as u64 + 1);
            e.set_name(n);
            data.event_names.push(e);
        }
        let policy_args = self.policies.iter().map(|p| format!("shadow.{p}"));
        for (i, n) in ARGS
            .iter()
            .map(|a| a.to_string())
            .chain(policy_args)
            .enumerate()
        {
            let mut d = DebugAnnotationName::new();
            d.set_iid(i as u64 + 1);
            d.set_name(n);
            data.debug_annotation_names.push(d);
        }
        let mut first = packet(ts);
        first.set_sequence_flags(
            SequenceFlags::SEQ_INCREMENTAL_STATE_CLEARED as u32
                | SequenceFlags::SEQ_NEEDS_INCREMENTAL_STATE as u32,
        );
        first.set_first_packet_on_sequence(true);
        first.interned_data = protobuf::MessageField::some(data);
        let mut out = vec![first, descriptor(ts, ROOT_UUID, "wakeviz".into(), None)];
        for &cpu in &self.cpus {
            out.push(descriptor(
                ts,
                CPU_UUID + u64::from(cpu),
                format!("wakeviz placements CPU {cpu}"),
                Some(ROOT_UUID),
            ));
        }
        out.push(descriptor(
            ts,
            OTHER_CPU_UUID,
            "wakeviz placements, CPUs outside the topology".into(),
            Some(ROOT_UUID),
        ));
        for (m, mix) in MIXES.iter().enumerate() {
            for l in Level::ALL {
                let mut p = descriptor(
                    ts,
                    counter_uuid(m, l.index()),
                    format!("wakeups/10ms {mix}: {}", l.name()),
                    Some(ROOT_UUID),
                );
                let mut c = CounterDescriptor::new();
                c.set_unit(Unit::UNIT_COUNT);
                p.mut_track_descriptor().counter = protobuf::MessageField::some(c);
                out.push(p);
            }
        }
        out
    }

    fn cpu_track(&self, cpu: u32) -> u64 {
        if self.cpus.binary_search(&cpu).is_ok() {
            CPU_UUID + u64::from(cpu)
        } else {
            OTHER_CPU_UUID
        }
    }

    /// The packets of one record: its instant on the waker's CPU and, when the wakee was seen
    /// switching in, the "run" instant on the chosen CPU with the flow between them.
    pub fn record(
        &mut self,
        r: &PlacementRecord,
        tasks: &TaskTable,
        tb: &TimeBase,
    ) -> Vec<TracePacket> {
        let p = &r.placement;
        let mut out = Vec::new();
        let bin = p.waking_ts_ns - p.waking_ts_ns % BIN_NS;
        let counts = self.bins.entry(bin).or_default();
        if let Some(l) = r.vs_waker {
            counts[0][l.index()] += 1;
        }
        if let Some(l) = r.vs_prev {
            counts[1][l.index()] += 1;
        }
        let ts = tb.boot(p.waking_ts_ns);
        let track = self.cpu_track(p.waker_cpu);
        let mut e = TrackEvent::new();
        e.set_type(Type::TYPE_INSTANT);
        e.set_track_uuid(track);
        e.set_name_iid(event_name_iid(r));
        let level = |l: Option<Level>| Val::Str(l.map_or("unclassified", Level::name).into());
        let mut args = vec![
            ("pid", Val::Uint(p.pid.into())),
            ("comm", Val::Str(comm_of(tasks, p.pid, p.chosen_cpu))),
            ("waker_pid", Val::Uint(p.waker_pid.into())),
            ("waker_cpu", Val::Uint(p.waker_cpu.into())),
            ("prev_cpu", Val::Uint(p.prev_cpu.into())),
            ("chosen_cpu", Val::Uint(p.chosen_cpu.into())),
            ("vs_prev", level(r.vs_prev)),
        ];
        if let Some(s) = p.sync() {
            args.push(("sync", Val::Bool(s)));
        }
        for (name, v) in [
            ("select_ns", r.select_ns),
            ("scan_ns", r.scan_ns),
            ("wakeup_to_run_ns", r.wakeup_to_run_ns),
        ] {
            if let Some(v) = v {
                args.push((name, Val::Uint(v)));
            }
        }
        if let Some(m) = r.scan {
            args.extend([
                ("scan_ran", Val::Bool(m.ran())),
                ("scan_idle_tests", Val::Uint(m.cpus.into())),
                ("scan_idle_core", Val::Bool(m.core())),
                ("scan_smt", Val::Bool(m.smt())),
            ]);
        }
        e.debug_annotations = args.into_iter().map(|(n, v)| arg(arg_iid(n), v)).collect();
        for (i, cpu) in r.shadow.iter().enumerate() {
            if let Some(cpu) = cpu {
                let iid = (ARGS.len() + i) as u64 + 1;
                e.debug_annotations
                    .push(arg(iid, Val::Int(i64::from(*cpu))));
            }
        }
        let run = r.wakeup_to_run_ns.map(|d| {
            let flow = self.next_flow;
            self.next_flow += 1;
            e.flow_ids.push(flow);
            (flow, tb.boot(p.wakeup_ts_ns.saturating_add(d)), d)
        });
        let mut pk = packet(ts);
        pk.set_track_event(e);
        out.push(pk);
        self.instants += 1;
        if let Some((flow, run_ts, d)) = run {
            let track = self.cpu_track(p.chosen_cpu);
            let mut e = TrackEvent::new();
            e.set_type(Type::TYPE_INSTANT);
            e.set_track_uuid(track);
            e.set_name_iid(RUN);
            e.terminating_flow_ids.push(flow);
            e.debug_annotations = vec![
                arg(arg_iid("pid"), Val::Uint(p.pid.into())),
                arg(arg_iid("wakeup_to_run_ns"), Val::Uint(d)),
            ];
            let mut pk = packet(run_ts);
            pk.set_track_event(e);
            out.push(pk);
        }
        out
    }

    /// Counter samples of every bin no record can reach any more: bins more than the record
    /// horizon before `now` (probe clock), or all of them with `None` (end of stream). Each
    /// bin sets all counters; the first empty bin after one drops them to 0.
    pub fn counters(&mut self, now: Option<u64>, tb: &TimeBase) -> Vec<TracePacket> {
        let mut out = Vec::new();
        let cutoff = now.map(|n| n.saturating_sub(wakeviz_core::horizons::WAKE_TO_RUN_NS + BIN_NS));
        while let Some(entry) = self.bins.first_entry() {
            let bin = *entry.key();
            if cutoff.is_some_and(|c| bin >= c) {
                break;
            }
            let counts = entry.remove();
            if let Some(last) = self.last_bin
                && bin > last + BIN_NS
            {
                self.samples(last + BIN_NS, &[[0; Level::ALL.len()]; 2], tb, &mut out);
            }
            self.samples(bin, &counts, tb, &mut out);
            self.last_bin = Some(bin);
        }
        if now.is_none()
            && let Some(last) = self.last_bin.take()
        {
            self.samples(last + BIN_NS, &[[0; Level::ALL.len()]; 2], tb, &mut out);
        }
        out
    }

    fn samples(
        &self,
        bin: u64,
        counts: &[[u64; Level::ALL.len()]; 2],
        tb: &TimeBase,
        out: &mut Vec<TracePacket>,
    ) {
        for (m, per_level) in counts.iter().enumerate() {
            for (l, &n) in per_level.iter().enumerate() {
                let mut e = TrackEvent::new();
                e.set_type(Type::TYPE_COUNTER);
                e.set_track_uuid(counter_uuid(m, l));
                e.set_counter_value(i64::try_from(n).unwrap_or(i64::MAX));
                let mut p = packet(tb.boot(bin));
                p.set_track_event(e);
                out.push(p);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wakeviz_core::join::Placement;

    fn tb() -> TimeBase {
        TimeBase::monotonic_for_test(0, 1_000)
    }

    fn record(
        ts: u64,
        vs_waker: Option<Level>,
        run: Option<u64>,
        new_task: bool,
    ) -> PlacementRecord {
        PlacementRecord {
            placement: Placement {
                pid: 42,
                waker_pid: 7,
                waking_ts_ns: ts,
                wakeup_ts_ns: ts + 100,
                waker_cpu: 1,
                prev_cpu: 2,
                chosen_cpu: 3,
                select: None,
                new_task,
            },
            vs_waker,
            vs_prev: Some(Level::SameLlc),
            select_ns: Some(900),
            scan_ns: None,
            scan: None,
            wakeup_to_run_ns: run,
            shadow: vec![Some(5), None],
        }
    }

    fn name(iid: u64) -> String {
        event_names()[iid as usize - 1].clone()
    }

    #[test]
    fn a_record_is_an_instant_with_args_and_a_flow_to_its_run() {
        let tb = tb();
        let mut t = Tracks::new(vec!["sis_util", "sis_prop"], vec![0, 1, 2, 3]);
        let pre = t.preamble(1_000);
        assert_eq!(pre[0].sequence_flags(), 3);
        let names = &pre[0].interned_data.debug_annotation_names;
        assert_eq!(names.last().unwrap().name(), "shadow.sis_prop");
        let described: Vec<(u64, &str)> = pre[1..]
            .iter()
            .map(|p| (p.track_descriptor().uuid(), p.track_descriptor().name()))
            .collect();
        assert!(described.contains(&(CPU_UUID + 1, "wakeviz placements CPU 1")));
        assert!(described.iter().any(|d| d.0 == OTHER_CPU_UUID));
        assert_eq!(described.len(), 1 + 4 + 1 + 12);
        let p = t.record(
            &record(5_000, Some(Level::SmtSibling), Some(400), false),
            &TaskTable::default(),
            &tb,
        );
        // The instant on the waker's CPU, then the run on the chosen one.
        assert_eq!(p.len(), 2);
        let e = p[0].track_event();
        assert_eq!(e.track_uuid(), CPU_UUID + 1);
        assert_eq!(p[0].timestamp(), 6_000);
        assert_eq!(name(e.name_iid()), "smt_sibling");
        let arg_of = |n: &str| {
            e.debug_annotations
                .iter()
                .find(|a| a.name_iid() == arg_iid(n))
        };
        assert_eq!(arg_of("select_ns").unwrap().uint_value(), 900);
        assert_eq!(arg_of("vs_prev").unwrap().string_value(), "same_llc");
        assert_eq!(arg_of("wakeup_to_run_ns").unwrap().uint_value(), 400);
        for unknown in ["scan_ns", "scan_ran", "scan_idle_tests"] {
            assert!(
                arg_of(unknown).is_none(),
                "unknown figures are left out, not 0: {unknown}"
            );
        }
        let shadow: Vec<_> = e
            .debug_annotations
            .iter()
            .filter(|a| a.name_iid() > ARGS.len() as u64)
            .collect();
        assert_eq!(shadow.len(), 1);
        assert_eq!(shadow[0].int_value(), 5);
        let run = p[1].track_event();
        assert_eq!(name(run.name_iid()), "run");
        assert_eq!(run.track_uuid(), CPU_UUID + 3);
        assert_eq!(p[1].timestamp(), 1_000 + 5_000 + 100 + 400);
        assert_eq!(run.terminating_flow_ids, e.flow_ids);
        assert_eq!(e.flow_ids.len(), 1);
        // No switch-in seen: no run, no flow; a CPU outside the topology: the catch-all track.
        let mut r = record(6_000, None, None, true);
        r.placement.waker_cpu = 99;
        let p = t.record(&r, &TaskTable::default(), &tb);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].track_event().track_uuid(), OTHER_CPU_UUID);
        assert_eq!(name(p[0].track_event().name_iid()), "fork: unclassified");
        assert!(p[0].track_event().flow_ids.is_empty());
        // A call the scan probes watched: its tests and path bits.
        let mut r = record(7_000, Some(Level::SameLlc), None, false);
        r.scan = Some(wakeviz_core::event::ScanMeasure {
            cpus: 6,
            path: wakeviz_common::scan_path::SCAN | wakeviz_common::scan_path::SMT,
        });
        let p = t.record(&r, &TaskTable::default(), &tb);
        let e = p[0].track_event();
        let arg_of = |n: &str| {
            e.debug_annotations
                .iter()
                .find(|a| a.name_iid() == arg_iid(n))
        };
        assert_eq!(arg_of("scan_idle_tests").unwrap().uint_value(), 6);
        assert!(arg_of("scan_ran").unwrap().bool_value());
        assert!(arg_of("scan_smt").unwrap().bool_value());
        assert!(!arg_of("scan_idle_core").unwrap().bool_value());
    }

    #[test]
    fn counters_wait_out_the_record_horizon_and_drop_to_zero_after_a_gap() {
        let tb = tb();
        let mut t = Tracks::new(Vec::new(), vec![1, 3]);
        let none = TaskTable::default();
        t.record(&record(1, Some(Level::SameCpu), None, false), &none, &tb);
        t.record(&record(2, Some(Level::SameCpu), None, false), &none, &tb);
        t.record(
            &record(5 * BIN_NS, Some(Level::CrossPackage), None, false),
            &none,
            &tb,
        );
        // Within the horizon of the first bin: nothing yet.
        assert!(
            t.counters(Some(wakeviz_core::horizons::WAKE_TO_RUN_NS), &tb)
                .is_empty()
        );
        let value = |ps: &[TracePacket], mix: usize, l: Level| -> Vec<(u64, i64)> {
            ps.iter()
                .filter(|p| p.track_event().track_uuid() == counter_uuid(mix, l.index()))
                .map(|p| (p.timestamp() - 1_000, p.track_event().counter_value()))
                .collect()
        };
        let all = t.counters(None, &tb);
        assert_eq!(all.len(), 4 * 12);
        assert_eq!(
            value(&all, 0, Level::SameCpu),
            [(0, 2), (BIN_NS, 0), (5 * BIN_NS, 0), (6 * BIN_NS, 0)]
        );
        assert_eq!(value(&all, 0, Level::CrossPackage)[2], (5 * BIN_NS, 1));
        assert_eq!(value(&all, 1, Level::SameLlc)[0], (0, 2));
    }
}
