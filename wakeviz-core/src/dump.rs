//! `--dump jsonl`: one JSON object per event, like `perf script` for perf.data. Field names are
//! the kernel's; in wake events `pid`/`comm`/`tgid` are the woken task's and the waker has its own
//! fields. Unknown kernel inputs are `null`, never a made-up value; a select record with the
//! probe's ABI-2/3 reads has them under `inputs` (the allowed mask as a CPU list of the bits read).
use std::io::{self, Write};

use serde_json::{Map, Value, json};

use crate::{
    event::{Event, SelectInputs, TaskTable, wf},
    topology::CpuSet,
};

pub fn event_json(e: &Event, tasks: &TaskTable) -> Value {
    let mut m = Map::new();
    m.insert("kind".into(), json!(e.kind().name()));
    m.insert("ts_ns".into(), json!(e.ts_ns()));
    m.insert("cpu".into(), json!(e.cpu()));
    m.insert("pid".into(), json!(e.pid()));
    m.insert("comm".into(), json!(tasks.comm(e.pid())));
    m.insert("tgid".into(), json!(tasks.tgid(e.pid())));
    match e {
        Event::Waking(w) | Event::Wakeup(w) | Event::WakeupNew(w) => {
            m.insert("target_cpu".into(), json!(w.target_cpu));
            m.insert("prio".into(), json!(w.prio));
            m.insert("waker_pid".into(), json!(w.waker_pid));
            m.insert("waker_comm".into(), json!(tasks.comm(w.waker_pid)));
        }
        Event::Switch(s) => {
            m.insert("prev_pid".into(), json!(s.prev_pid));
            m.insert("prev_comm".into(), json!(tasks.comm(s.prev_pid)));
            m.insert("prev_prio".into(), json!(s.prev_prio));
            m.insert("prev_state".into(), json!(s.prev_state));
            m.insert("next_pid".into(), json!(s.next_pid));
            m.insert("next_comm".into(), json!(tasks.comm(s.next_pid)));
            m.insert("next_prio".into(), json!(s.next_prio));
        }
        Event::Migrate(mg) => {
            m.insert("orig_cpu".into(), json!(mg.orig_cpu));
            m.insert("dest_cpu".into(), json!(mg.dest_cpu));
        }
        Event::Select(s) => {
            m.insert("waker_cpu".into(), json!(s.cpu));
            m.insert("waker_pid".into(), json!(s.waker_pid));
            m.insert("waker_comm".into(), json!(tasks.comm(s.waker_pid)));
            m.insert("prev_cpu".into(), json!(s.prev_cpu));
            m.insert("wake_flags".into(), json!(s.wake_flags));
            m.insert(
                "sync".into(),
                json!(s.wake_flags_known().then_some(s.wake_flags & wf::SYNC != 0)),
            );
            m.insert("chosen_cpu".into(), json!(s.chosen()));
            m.insert("entry_ts_ns".into(), json!(s.entry_ts_ns));
            m.insert(
                "duration_ns".into(),
                json!((!s.at_waking()).then(|| s.duration_ns())),
            );
            m.insert("at_sched_waking".into(), json!(s.at_waking()));
            m.insert("waker_nr_running".into(), json!(s.waker_nr_running));
            m.insert("nr_idle_scan".into(), json!(s.nr_idle_scan));
            m.insert("has_idle_cores".into(), json!(s.has_idle_cores));
            m.insert("prev_nr_idle_scan".into(), json!(s.prev_nr_idle_scan));
            m.insert("prev_has_idle_cores".into(), json!(s.prev_has_idle_cores));
            m.insert("idle_scan_ns".into(), json!(s.idle_scan_ns));
            if let Some(x) = s.scan {
                m.insert(
                    "scan".into(),
                    json!({
                        "ran": x.ran(),
                        "idle_tests": x.cpus,
                        "idle_core": x.core(),
                        "smt": x.smt(),
                    }),
                );
            }
            let i = &s.inputs;
            if *i != SelectInputs::default() {
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
                let v = json!({
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
                });
                m.insert("inputs".into(), v);
            }
        }
    }
    Value::Object(m)
}

/// Writes one line per event.
pub fn write_jsonl<W: Write>(out: &mut W, events: &[Event], tasks: &TaskTable) -> io::Result<()> {
    for e in events {
        serde_json::to_writer(&mut *out, &event_json(e, tasks))?;
        out.write_all(b"\n")?;
    }
    Ok(())
}
