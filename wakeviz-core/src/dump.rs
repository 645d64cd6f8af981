//! `--dump jsonl`: one JSON object per event, like `perf script` for perf.data. The keys are
//! the event's fields as [`crate::fields`] defines them (the Parquet export's column names);
//! unknown values are `null`, never a made-up value. A select record with the probe's ABI-2/3
//! reads also has them under `inputs` (the allowed mask as a CPU list of the bits read).
use std::io::{self, Write};

use serde_json::{Map, Value, json};

use crate::{
    event::{Event, SelectInputs, TaskTable},
    fields::{self, Val},
    topology::CpuSet,
};

pub fn event_json(e: &Event, tasks: &TaskTable) -> Value {
    let mut m = Map::new();
    fields::visit(e, tasks, |f, v| {
        m.insert(f.name().into(), v.map_or(Value::Null, json_of));
    });
    if let Event::Select(s) = e
        && let Some(v) = inputs_json(&s.inputs)
    {
        m.insert("inputs".into(), v);
    }
    Value::Object(m)
}

fn json_of(v: Val<'_>) -> Value {
    match v {
        Val::U32(x) => json!(x),
        Val::I32(x) => json!(x),
        Val::U64(x) => json!(x),
        Val::Bool(x) => json!(x),
        Val::Str(x) => json!(x),
    }
}

/// The select inputs, when the record has any.
fn inputs_json(i: &SelectInputs) -> Option<Value> {
    if *i == SelectInputs::default() {
        return None;
    }
    let allowed = i.allowed.map(|words| {
        let mut set = CpuSet::with_bound(256);
        for cpu in 0..256u32 {
            set.set(cpu, words[cpu as usize / 64] & (1 << (cpu % 64)) != 0);
        }
        set.to_list()
    });
    let flips = i.flips.map(|f| {
        json!({
            "waker_wakee_flips": f.waker,
            "task_wakee_flips": f.wakee,
            "waker_flip_decay_jiffies": f.waker_decay_jiffies,
            "jiffies": f.jiffies,
            "waker_last_wakee_is_task": f.waker_last_wakee_is_task,
        })
    });
    Some(json!({
        "waker_load": i.waker_load,
        "prev_load": i.prev_load,
        "waker_capacity": i.waker_capacity,
        "prev_capacity": i.prev_capacity,
        "task_h_load": i.task_h_load,
        "waker_h_load": i.waker_h_load,
        "task_in_group": i.task_in_group,
        "waker_h_nr_delayed": i.waker_h_nr_delayed,
        "waker_kthread": i.waker_kthread,
        "waker_nr_cpus_allowed": i.waker_nr_cpus_allowed,
        "task_nr_cpus_allowed": i.task_nr_cpus_allowed,
        // As read: bits past the kernel's nr_cpu_ids are stale and the kernel ignores them.
        "cpus_ptr_0_255": allowed,
        "record_wakee": flips,
    }))
}

/// Writes one line per event.
pub fn write_jsonl<W: Write>(out: &mut W, events: &[Event], tasks: &TaskTable) -> io::Result<()> {
    for e in events {
        serde_json::to_writer(&mut *out, &event_json(e, tasks))?;
        out.write_all(b"\n")?;
    }
    Ok(())
}
