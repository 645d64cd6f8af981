//! `events.parquet`: every event of the recording, one wide table in stream order. A `kind`
//! column names the tracepoint; the columns of the other kinds are null (Parquet stores a run of
//! nulls in a few bytes), so one `WHERE kind = ...` selects a kind and one file per recording
//! keeps unions across recordings to one glob.
use std::sync::Arc;

use arrow_array::{
    ArrayRef,
    builder::{BooleanBuilder, Int32Builder, StringBuilder, UInt32Builder, UInt64Builder},
};
use arrow_schema::{DataType, Field, Schema};
use wakeviz_core::event::{Event, ScanMeasure, TaskTable};

use super::table::Rows;

const COLUMNS: [(&str, DataType, bool); 34] = [
    ("recording_id", DataType::Utf8, false),
    ("ts_ns", DataType::UInt64, false),
    ("kind", DataType::Utf8, false),
    ("cpu", DataType::UInt32, false),
    // The task the event is about: woken (waking/wakeup/wakeup_new), migrated, placed (select).
    ("pid", DataType::UInt32, true),
    ("comm", DataType::Utf8, true),
    // Its process (thread-group id), where the recording knows it.
    ("tgid", DataType::UInt32, true),
    ("target_cpu", DataType::UInt32, true),
    ("waker_pid", DataType::UInt32, true),
    ("prio", DataType::Int32, true),
    ("prev_pid", DataType::UInt32, true),
    ("prev_comm", DataType::Utf8, true),
    ("prev_state", DataType::UInt32, true),
    ("prev_prio", DataType::Int32, true),
    ("next_pid", DataType::UInt32, true),
    ("next_comm", DataType::Utf8, true),
    ("next_prio", DataType::Int32, true),
    ("orig_cpu", DataType::UInt32, true),
    ("dest_cpu", DataType::UInt32, true),
    ("entry_ts_ns", DataType::UInt64, true),
    ("prev_cpu", DataType::UInt32, true),
    ("wake_flags", DataType::UInt32, true),
    ("chosen_cpu", DataType::UInt32, true),
    ("waker_nr_running", DataType::UInt32, true),
    ("nr_idle_scan", DataType::UInt32, true),
    ("has_idle_cores", DataType::Boolean, true),
    ("prev_nr_idle_scan", DataType::UInt32, true),
    ("prev_has_idle_cores", DataType::Boolean, true),
    ("idle_scan_ns", DataType::UInt32, true),
    ("select_ns", DataType::UInt64, true),
    ("scan_ran", DataType::Boolean, true),
    ("scan_idle_tests", DataType::UInt32, true),
    ("scan_idle_core", DataType::Boolean, true),
    ("scan_smt", DataType::Boolean, true),
];

pub fn schema() -> Schema {
    Schema::new(
        COLUMNS
            .iter()
            .map(|(n, t, null)| Field::new(*n, t.clone(), *null))
            .collect::<Vec<_>>(),
    )
}

#[derive(Default)]
pub struct Events {
    id: String,
    n: usize,
    recording_id: StringBuilder,
    ts: UInt64Builder,
    kind: StringBuilder,
    cpu: UInt32Builder,
    pid: UInt32Builder,
    comm: StringBuilder,
    tgid: UInt32Builder,
    target_cpu: UInt32Builder,
    waker_pid: UInt32Builder,
    prio: Int32Builder,
    prev_pid: UInt32Builder,
    prev_comm: StringBuilder,
    prev_state: UInt32Builder,
    prev_prio: Int32Builder,
    next_pid: UInt32Builder,
    next_comm: StringBuilder,
    next_prio: Int32Builder,
    orig_cpu: UInt32Builder,
    dest_cpu: UInt32Builder,
    entry_ts: UInt64Builder,
    prev_cpu: UInt32Builder,
    wake_flags: UInt32Builder,
    chosen_cpu: UInt32Builder,
    waker_nr_running: UInt32Builder,
    nr_idle_scan: UInt32Builder,
    has_idle_cores: BooleanBuilder,
    prev_nr_idle_scan: UInt32Builder,
    prev_has_idle_cores: BooleanBuilder,
    idle_scan_ns: UInt32Builder,
    select_ns: UInt64Builder,
    scan_ran: BooleanBuilder,
    scan_idle_tests: UInt32Builder,
    scan_idle_core: BooleanBuilder,
    scan_smt: BooleanBuilder,
}

impl Events {
    pub fn new(id: &str) -> Self {
        Self {
            id: id.into(),
            ..Self::default()
        }
    }

    /// Names resolve through `tasks` as known at this point of the stream.
    pub fn push(&mut self, e: &Event, tasks: &TaskTable) {
        self.n += 1;
        self.recording_id.append_value(&self.id);
        self.ts.append_value(e.ts_ns());
        self.kind.append_value(e.kind().name());
        self.cpu.append_value(e.cpu());
        let (mut wake, mut sw, mut mig, mut sel) = (None, None, None, None);
        let pid = match e {
            Event::Waking(w) | Event::Wakeup(w) | Event::WakeupNew(w) => {
                wake = Some(w);
                Some(w.pid)
            }
            Event::Switch(s) => {
                sw = Some(s);
                None
            }
            Event::Migrate(m) => {
                mig = Some(m);
                Some(m.pid)
            }
            Event::Select(s) => {
                sel = Some(s);
                Some(s.pid)
            }
        };
        self.pid.append_option(pid);
        self.comm.append_option(pid.map(|p| tasks.comm(p)));
        self.tgid.append_option(pid.and_then(|p| tasks.tgid(p)));
        self.target_cpu.append_option(wake.map(|w| w.target_cpu));
        self.waker_pid
            .append_option(wake.map(|w| w.waker_pid).or(sel.map(|s| s.waker_pid)));
        self.prio.append_option(wake.map(|w| w.prio));
        self.prev_pid.append_option(sw.map(|s| s.prev_pid));
        self.prev_comm
            .append_option(sw.map(|s| tasks.comm(s.prev_pid)));
        self.prev_state.append_option(sw.map(|s| s.prev_state));
        self.prev_prio.append_option(sw.map(|s| s.prev_prio));
        self.next_pid.append_option(sw.map(|s| s.next_pid));
        self.next_comm
            .append_option(sw.map(|s| tasks.comm(s.next_pid)));
        self.next_prio.append_option(sw.map(|s| s.next_prio));
        self.orig_cpu.append_option(mig.map(|m| m.orig_cpu));
        self.dest_cpu.append_option(mig.map(|m| m.dest_cpu));
        self.entry_ts.append_option(sel.map(|s| s.entry_ts_ns));
        self.prev_cpu.append_option(sel.map(|s| s.prev_cpu));
        self.wake_flags.append_option(sel.map(|s| s.wake_flags));
        self.chosen_cpu.append_option(sel.and_then(|s| s.chosen()));
        self.waker_nr_running
            .append_option(sel.and_then(|s| s.waker_nr_running));
        self.nr_idle_scan
            .append_option(sel.and_then(|s| s.nr_idle_scan));
        self.has_idle_cores
            .append_option(sel.and_then(|s| s.has_idle_cores));
        self.prev_nr_idle_scan
            .append_option(sel.and_then(|s| s.prev_nr_idle_scan));
        self.prev_has_idle_cores
            .append_option(sel.and_then(|s| s.prev_has_idle_cores));
        self.idle_scan_ns
            .append_option(sel.and_then(|s| s.idle_scan_ns));
        self.select_ns
            .append_option(sel.filter(|s| !s.at_waking()).map(|s| s.duration_ns()));
        let scan = sel.and_then(|s| s.scan);
        self.scan_ran.append_option(scan.map(|m| m.ran()));
        self.scan_idle_tests
            .append_option(scan.map(|m| u32::from(m.cpus)));
        self.scan_idle_core
            .append_option(scan.map(ScanMeasure::core));
        self.scan_smt.append_option(scan.map(ScanMeasure::smt));
    }
}

impl Rows for Events {
    fn len(&self) -> usize {
        self.n
    }

    fn finish(&mut self) -> Vec<ArrayRef> {
        self.n = 0;
        vec![
            Arc::new(self.recording_id.finish()),
            Arc::new(self.ts.finish()),
            Arc::new(self.kind.finish()),
            Arc::new(self.cpu.finish()),
            Arc::new(self.pid.finish()),
            Arc::new(self.comm.finish()),
            Arc::new(self.tgid.finish()),
            Arc::new(self.target_cpu.finish()),
            Arc::new(self.waker_pid.finish()),
            Arc::new(self.prio.finish()),
            Arc::new(self.prev_pid.finish()),
            Arc::new(self.prev_comm.finish()),
            Arc::new(self.prev_state.finish()),
            Arc::new(self.prev_prio.finish()),
            Arc::new(self.next_pid.finish()),
            Arc::new(self.next_comm.finish()),
            Arc::new(self.next_prio.finish()),
            Arc::new(self.orig_cpu.finish()),
            Arc::new(self.dest_cpu.finish()),
            Arc::new(self.entry_ts.finish()),
            Arc::new(self.prev_cpu.finish()),
            Arc::new(self.wake_flags.finish()),
            Arc::new(self.chosen_cpu.finish()),
            Arc::new(self.waker_nr_running.finish()),
            Arc::new(self.nr_idle_scan.finish()),
            Arc::new(self.has_idle_cores.finish()),
            Arc::new(self.prev_nr_idle_scan.finish()),
            Arc::new(self.prev_has_idle_cores.finish()),
            Arc::new(self.idle_scan_ns.finish()),
            Arc::new(self.select_ns.finish()),
            Arc::new(self.scan_ran.finish()),
            Arc::new(self.scan_idle_tests.finish()),
            Arc::new(self.scan_idle_core.finish()),
            Arc::new(self.scan_smt.finish()),
        ]
    }
}
