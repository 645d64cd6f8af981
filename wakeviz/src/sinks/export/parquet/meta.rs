//! `metadata.parquet` (one row: where, when and how the recording was made, and what came of
//! it) and `cpus.parquet` (one row per online CPU: its place in the topology). Written at the
//! end, when the END chunk's workload outcome and the counters are known.
use std::sync::Arc;

use arrow_array::{
    ArrayRef, BooleanArray, Int32Array, Int64Array, StringArray, UInt32Array, UInt64Array,
    builder::{ListBuilder, StringBuilder},
};
use arrow_schema::{DataType, Field, Schema};
use wakeviz_core::{analysis::Snapshot, format::Header};

use super::table::Rows;

/// Columns computed up front: the whole table is one batch.
pub struct Ready {
    cols: Option<Vec<ArrayRef>>,
    rows: usize,
}

impl Rows for Ready {
    fn len(&self) -> usize {
        if self.cols.is_some() { self.rows } else { 0 }
    }

    fn finish(&mut self) -> Vec<ArrayRef> {
        self.cols.take().unwrap_or_default()
    }
}

/// What the metadata row says beyond the header and the snapshot.
pub struct Facts<'a> {
    pub id: &'a str,
    pub source_file: &'a str,
    pub placements: u64,
    /// Replay warnings (a damaged or cut-short recording): the tables cover the intact part.
    pub warnings: &'a [String],
}

fn list(items: Option<&[String]>) -> ArrayRef {
    let mut b = ListBuilder::new(StringBuilder::new());
    match items {
        Some(v) => {
            for s in v {
                b.values().append_value(s);
            }
            b.append(true);
        }
        None => b.append(false),
    }
    Arc::new(b.finish())
}

fn s(v: impl Into<String>) -> ArrayRef {
    Arc::new(StringArray::from(vec![v.into()]))
}

fn so(v: Option<impl Into<String>>) -> ArrayRef {
    Arc::new(StringArray::from(vec![v.map(Into::into)]))
}

fn u64c(v: Option<u64>) -> ArrayRef {
    Arc::new(UInt64Array::from(vec![v]))
}

fn u32c(v: u32) -> ArrayRef {
    Arc::new(UInt32Array::from(vec![v]))
}

fn field(n: &str, t: DataType) -> Field {
    let list = matches!(t, DataType::List(_));
    Field::new(
        n,
        t,
        list || !matches!(n, "recording_id" | "host" | "kernel"),
    )
}

fn list_type() -> DataType {
    DataType::List(Arc::new(Field::new("item", DataType::Utf8, true)))
}

pub fn metadata(h: &Header, snap: &Snapshot, f: &Facts<'_>) -> anyhow::Result<(Schema, Ready)> {
    let run = &h.run;
    let rec = &snap.recording;
    let t = &h.topology;
    let w = rec.workload.as_ref();
    let sysctls: serde_json::Map<_, _> = run
        .sysctls
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
        .collect();
    let metrics = w.map(|w| {
        serde_json::to_string(
            &w.metrics
                .iter()
                .map(|m| (m.name.clone(), serde_json::json!(m.value)))
                .collect::<serde_json::Map<_, _>>(),
        )
    });
    let metrics = metrics.transpose()?;
    let cols: Vec<(&str, DataType, ArrayRef)> = vec![
        (
            "schema_version",
            DataType::UInt32,
            u32c(super::SCHEMA_VERSION),
        ),
        ("recording_id", DataType::Utf8, s(f.id)),
        ("host", DataType::Utf8, s(&h.hostname)),
        ("kernel", DataType::Utf8, s(&h.kernel_release)),
        ("label", DataType::Utf8, so(run.label.as_deref())),
        ("start_utc", DataType::Utf8, so(run.start_utc.as_deref())),
        ("start_ts_ns", DataType::UInt64, u64c(Some(h.start_ts_ns))),
        (
            "realtime_offset_ns",
            DataType::Int64,
            Arc::new(Int64Array::from(vec![h.realtime_offset_ns])),
        ),
        (
            "capture_duration_ns",
            DataType::UInt64,
            u64c(rec.capture_duration_ns),
        ),
        (
            "kernel_cmdline",
            DataType::Utf8,
            so(run.kernel_cmdline.as_deref()),
        ),
        (
            "sched_features",
            list_type(),
            list(run.sched_features.as_deref()),
        ),
        (
            "sysctls_json",
            DataType::Utf8,
            s(serde_json::to_string(&sysctls)?),
        ),
        ("cpu_model", DataType::Utf8, so(run.cpu_model.as_deref())),
        ("cpu_vendor", DataType::Utf8, so(h.cpu_vendor.as_deref())),
        ("command", list_type(), list(run.command.as_deref())),
        ("tool_version", DataType::Utf8, s(&h.tool_version)),
        (
            "exporter_version",
            DataType::Utf8,
            s(env!("CARGO_PKG_VERSION")),
        ),
        ("format_version", DataType::UInt32, u32c(h.format_version)),
        ("abi_version", DataType::UInt32, u32c(h.abi_version)),
        (
            "comm_redacted",
            DataType::Boolean,
            Arc::new(BooleanArray::from(vec![h.comm_redacted])),
        ),
        ("topology_summary", DataType::Utf8, s(t.summary())),
        ("nr_cpus", DataType::UInt32, u32c(t.nr_cpus() as u32)),
        ("packages", DataType::UInt32, u32c(t.packages.len() as u32)),
        ("nodes", DataType::UInt32, u32c(t.nodes.len() as u32)),
        ("llcs", DataType::UInt32, u32c(t.llcs.len() as u32)),
        ("cores", DataType::UInt32, u32c(t.cores.len() as u32)),
        ("nps_mode", DataType::Utf8, s(t.nps_mode())),
        (
            "smt",
            DataType::Boolean,
            Arc::new(BooleanArray::from(vec![t.smt_active()])),
        ),
        ("llc_level", DataType::UInt32, u32c(t.llc_level)),
        (
            "scan_source",
            DataType::Utf8,
            s(serde_json::to_value(h.scan_source)?
                .as_str()
                .unwrap_or("unknown")),
        ),
        (
            "probes_json",
            DataType::Utf8,
            s(serde_json::to_string(&h.probes)?),
        ),
        ("notes", list_type(), list(Some(&h.notes))),
        (
            "workload_exit_code",
            DataType::Int32,
            Arc::new(Int32Array::from(vec![w.and_then(|w| w.exit_code)])),
        ),
        (
            "workload_signal",
            DataType::Int32,
            Arc::new(Int32Array::from(vec![w.and_then(|w| w.signal)])),
        ),
        (
            "workload_duration_ns",
            DataType::UInt64,
            u64c(w.map(|w| w.duration_ns)),
        ),
        ("workload_metrics_json", DataType::Utf8, so(metrics)),
        ("events", DataType::UInt64, u64c(Some(snap.events.total()))),
        ("placements", DataType::UInt64, u64c(Some(f.placements))),
        (
            "kernel_drops",
            DataType::UInt64,
            u64c(Some(snap.drops.kernel_drops)),
        ),
        (
            "user_drops",
            DataType::UInt64,
            u64c(Some(snap.drops.user_drops)),
        ),
        (
            "unmatched_wakeups",
            DataType::UInt64,
            u64c(Some(snap.drops.unmatched_wakeups)),
        ),
        (
            "switch_gaps",
            DataType::UInt64,
            u64c(snap.drops.switch_gaps),
        ),
        ("source_file", DataType::Utf8, s(f.source_file)),
        ("warnings", list_type(), list(Some(f.warnings))),
    ];
    let schema = Schema::new(
        cols.iter()
            .map(|(n, t, _)| field(n, t.clone()))
            .collect::<Vec<_>>(),
    );
    let cols = cols.into_iter().map(|(_, _, c)| c).collect();
    Ok((
        schema,
        Ready {
            cols: Some(cols),
            rows: 1,
        },
    ))
}

/// One row per online CPU, with the kernel's ids (node number, cache id; a core is
/// `(package, core_id)`) rather than wakeviz's indexes, so rows of different recordings mean
/// the same thing.
pub fn cpus(h: &Header, id: &str) -> (Schema, Ready) {
    let t = &h.topology;
    let n = t.cpus.len();
    let gid = |g: &[wakeviz_core::topology::Group], i: u32| g.get(i as usize).map(|g| g.id);
    let u32s = |f: &dyn Fn(&wakeviz_core::topology::CpuTopo) -> Option<u32>| -> ArrayRef {
        Arc::new(t.cpus.iter().map(f).collect::<UInt32Array>())
    };
    let cols: Vec<(&str, ArrayRef)> = vec![
        (
            "recording_id",
            Arc::new(StringArray::from(vec![id; n])) as ArrayRef,
        ),
        ("cpu", u32s(&|c| Some(c.cpu))),
        ("package", u32s(&|c| Some(c.package))),
        ("die", u32s(&|c| Some(c.die))),
        ("core_id", u32s(&|c| Some(c.core_id))),
        ("node", u32s(&|c| gid(&t.nodes, c.node))),
        ("llc_id", u32s(&|c| gid(&t.llcs, c.llc))),
    ];
    let schema = Schema::new(
        cols.iter()
            .map(|(name, c)| {
                Field::new(
                    *name,
                    c.data_type().clone(),
                    *name != "recording_id" && *name != "cpu",
                )
            })
            .collect::<Vec<_>>(),
    );
    let cols = cols.into_iter().map(|(_, c)| c).collect();
    (
        schema,
        Ready {
            cols: Some(cols),
            rows: n,
        },
    )
}
