//! `placements.parquet`: one row per placed wakeup, from the analysis's own
//! [`PlacementRecord`]s (the same classification and latencies the reports count).
use std::sync::Arc;

use arrow_array::{
    ArrayRef,
    builder::{BooleanBuilder, StringBuilder, UInt32Builder, UInt64Builder},
};
use arrow_schema::{DataType, Field, Schema};
use wakeviz_core::{analysis::PlacementRecord, event::TaskTable};

use super::table::Rows;

/// Columns before the per-policy ones, with their types and nullability.
const FIXED: [(&str, DataType, bool); 19] = [
    ("recording_id", DataType::Utf8, false),
    ("host", DataType::Utf8, false),
    ("ts_ns", DataType::UInt64, false),
    ("waking_ts_ns", DataType::UInt64, false),
    ("waker_pid", DataType::UInt32, false),
    ("waker_comm", DataType::Utf8, false),
    ("waker_cpu", DataType::UInt32, false),
    ("wakee_pid", DataType::UInt32, false),
    ("wakee_comm", DataType::Utf8, false),
    ("prev_cpu", DataType::UInt32, false),
    ("chosen_cpu", DataType::UInt32, false),
    ("level_vs_waker", DataType::Utf8, true),
    ("level_vs_prev", DataType::Utf8, true),
    ("sync", DataType::Boolean, true),
    ("new_task", DataType::Boolean, false),
    ("wake_flags", DataType::UInt32, true),
    ("select_ns", DataType::UInt64, true),
    ("scan_ns", DataType::UInt64, true),
    ("wakeup_to_run_ns", DataType::UInt64, true),
];

/// `shadow_<policy>_cpu` for each policy of the registry, in its order.
pub fn schema(policies: &[&str]) -> Schema {
    let fixed = FIXED
        .iter()
        .map(|(n, t, null)| Field::new(*n, t.clone(), *null));
    let shadow = policies
        .iter()
        .map(|p| Field::new(format!("shadow_{p}_cpu"), DataType::UInt32, true));
    Schema::new(fixed.chain(shadow).collect::<Vec<_>>())
}

pub struct Placements {
    id: String,
    host: String,
    n: usize,
    recording_id: StringBuilder,
    host_col: StringBuilder,
    ts: UInt64Builder,
    waking_ts: UInt64Builder,
    waker_pid: UInt32Builder,
    waker_comm: StringBuilder,
    waker_cpu: UInt32Builder,
    pid: UInt32Builder,
    comm: StringBuilder,
    prev_cpu: UInt32Builder,
    chosen_cpu: UInt32Builder,
    vs_waker: StringBuilder,
    vs_prev: StringBuilder,
    sync: BooleanBuilder,
    new_task: BooleanBuilder,
    wake_flags: UInt32Builder,
    select_ns: UInt64Builder,
    scan_ns: UInt64Builder,
    run_ns: UInt64Builder,
    shadow: Vec<UInt32Builder>,
}

impl Placements {
    pub fn new(id: &str, host: &str, policies: usize) -> Self {
        Self {
            id: id.into(),
            host: host.into(),
            n: 0,
            recording_id: StringBuilder::new(),
            host_col: StringBuilder::new(),
            ts: UInt64Builder::new(),
            waking_ts: UInt64Builder::new(),
            waker_pid: UInt32Builder::new(),
            waker_comm: StringBuilder::new(),
            waker_cpu: UInt32Builder::new(),
            pid: UInt32Builder::new(),
            comm: StringBuilder::new(),
            prev_cpu: UInt32Builder::new(),
            chosen_cpu: UInt32Builder::new(),
            vs_waker: StringBuilder::new(),
            vs_prev: StringBuilder::new(),
            sync: BooleanBuilder::new(),
            new_task: BooleanBuilder::new(),
            wake_flags: UInt32Builder::new(),
            select_ns: UInt64Builder::new(),
            scan_ns: UInt64Builder::new(),
            run_ns: UInt64Builder::new(),
            shadow: (0..policies).map(|_| UInt32Builder::new()).collect(),
        }
    }

    pub fn push(&mut self, r: &PlacementRecord, tasks: &TaskTable) {
        let p = &r.placement;
        self.n += 1;
        self.recording_id.append_value(&self.id);
        self.host_col.append_value(&self.host);
        self.ts.append_value(p.wakeup_ts_ns);
        self.waking_ts.append_value(p.waking_ts_ns);
        self.waker_pid.append_value(p.waker_pid);
        self.waker_comm.append_value(tasks.comm(p.waker_pid));
        self.waker_cpu.append_value(p.waker_cpu);
        self.pid.append_value(p.pid);
        self.comm.append_value(tasks.comm(p.pid));
        self.prev_cpu.append_value(p.prev_cpu);
        self.chosen_cpu.append_value(p.chosen_cpu);
        self.vs_waker.append_option(r.vs_waker.map(|l| l.name()));
        self.vs_prev.append_option(r.vs_prev.map(|l| l.name()));
        self.sync.append_option(p.sync());
        self.new_task.append_value(p.new_task);
        self.wake_flags
            .append_option(p.select.map(|s| s.wake_flags));
        self.select_ns.append_option(r.select_ns);
        self.scan_ns.append_option(r.scan_ns);
        self.run_ns.append_option(r.wakeup_to_run_ns);
        for (i, b) in self.shadow.iter_mut().enumerate() {
            b.append_option(r.shadow.get(i).copied().flatten());
        }
    }
}

impl Rows for Placements {
    fn len(&self) -> usize {
        self.n
    }

    fn finish(&mut self) -> Vec<ArrayRef> {
        self.n = 0;
        let fixed: [ArrayRef; 19] = [
            Arc::new(self.recording_id.finish()),
            Arc::new(self.host_col.finish()),
            Arc::new(self.ts.finish()),
            Arc::new(self.waking_ts.finish()),
            Arc::new(self.waker_pid.finish()),
            Arc::new(self.waker_comm.finish()),
            Arc::new(self.waker_cpu.finish()),
            Arc::new(self.pid.finish()),
            Arc::new(self.comm.finish()),
            Arc::new(self.prev_cpu.finish()),
            Arc::new(self.chosen_cpu.finish()),
            Arc::new(self.vs_waker.finish()),
            Arc::new(self.vs_prev.finish()),
            Arc::new(self.sync.finish()),
            Arc::new(self.new_task.finish()),
            Arc::new(self.wake_flags.finish()),
            Arc::new(self.select_ns.finish()),
            Arc::new(self.scan_ns.finish()),
            Arc::new(self.run_ns.finish()),
        ];
        let shadow = self
            .shadow
            .iter_mut()
            .map(|b| Arc::new(b.finish()) as ArrayRef);
        fixed.into_iter().chain(shadow).collect()
    }
}
