//! The kernel's own events as Perfetto ftrace data: one `FtraceEventBundle` per CPU and batch,
//! sched_switch and sched_waking in `CompactSched` (what perfetto's own recorder writes, and
//! what trace_processor turns into CPU slices, thread states and the waker marker),
//! sched_migrate_task and sched_wakeup_new as plain `FtraceEvent`s.
use std::collections::{BTreeMap, HashMap};

use perfetto_protos::{
    ftrace_event::FtraceEvent,
    ftrace_event_bundle::{FtraceEventBundle, ftrace_event_bundle::CompactSched},
    sched::{SchedMigrateTaskFtraceEvent, SchedWakeupNewFtraceEvent},
    trace_packet::TracePacket,
};
use wakeviz_core::event::{Event, Switch, TaskTable, Wake};

use super::clock::TimeBase;

/// A task's name as the kernel would print it: the idle task is `swapper/CPU`, a pid whose
/// name the recording never learnt is `<...>` (ftrace's own stand-in).
pub fn comm_of(tasks: &TaskTable, pid: u32, cpu: u32) -> String {
    if pid == 0 {
        return format!("swapper/{cpu}");
    }
    tasks
        .get(pid)
        .map_or_else(|| "<...>".to_string(), |c| c.as_str().into_owned())
}

/// Casts kernel ids into the proto's `int32` fields; pids and CPUs fit (pid_max is 2^22).
fn i32_of(v: u32) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}

/// Events of one CPU waiting for the next flush.
#[derive(Default)]
struct Pending {
    switches: Vec<(u64, Switch, String)>,
    wakings: Vec<(u64, Wake, String)>,
    others: Vec<(u64, FtraceEvent)>,
}

/// Builds per-CPU bundles from a stream of events; memory is one batch's worth.
#[derive(Default)]
pub struct Bundles {
    cpus: BTreeMap<u32, Pending>,
}

impl Bundles {
    /// Adds one event; returns false for kinds that are not ftrace data here (sched_wakeup
    /// and select_task_rq_fair reach Perfetto through wakeviz's own tracks; a kind with no
    /// ftrace message of its own is in the recording and the Parquet export only).
    pub fn push(&mut self, e: &Event, tasks: &TaskTable, tb: &TimeBase) -> bool {
        let ts = tb.boot(e.ts_ns());
        let cpu = e.cpu();
        let p = self.cpus.entry(cpu).or_default();
        match e {
            Event::Switch(s) => p.switches.push((ts, *s, comm_of(tasks, s.next_pid, cpu))),
            // The waker's CPU (the probe runs in waker context): trace_processor takes the
            // waker to be whatever last switched in on the bundle's CPU.
            Event::Waking(w) => p.wakings.push((ts, *w, comm_of(tasks, w.pid, cpu))),
            Event::WakeupNew(w) => {
                let mut n = SchedWakeupNewFtraceEvent::new();
                n.set_comm(comm_of(tasks, w.pid, cpu));
                n.set_pid(i32_of(w.pid));
                n.set_prio(w.prio);
                n.set_success(1);
                n.set_target_cpu(i32_of(w.target_cpu));
                let mut f = FtraceEvent::new();
                f.set_timestamp(ts);
                f.set_pid(w.waker_pid);
                f.set_sched_wakeup_new(n);
                p.others.push((ts, f));
            }
            Event::Migrate(m) => {
                let mut n = SchedMigrateTaskFtraceEvent::new();
                n.set_comm(comm_of(tasks, m.pid, cpu));
                n.set_pid(i32_of(m.pid));
                n.set_orig_cpu(i32_of(m.orig_cpu));
                n.set_dest_cpu(i32_of(m.dest_cpu));
                let mut f = FtraceEvent::new();
                f.set_timestamp(ts);
                f.set_sched_migrate_task(n);
                p.others.push((ts, f));
            }
            _ => return false,
        }
        true
    }

    /// One packet per CPU that has events, in CPU order; the builder is empty afterwards.
    /// Events are sorted by time within a bundle (CompactSched stores unsigned deltas).
    pub fn flush(&mut self, sequence: u32) -> Vec<TracePacket> {
        std::mem::take(&mut self.cpus)
            .into_iter()
            .map(|(cpu, p)| bundle_packet(cpu, p, sequence))
            .collect()
    }
}

/// Index of `s` in the bundle's intern table, adding it the first time.
fn intern(table: &mut Vec<String>, index: &mut HashMap<String, u32>, s: String) -> u32 {
    if let Some(&i) = index.get(&s) {
        return i;
    }
    let i = u32::try_from(table.len()).unwrap_or(u32::MAX);
    table.push(s.clone());
    index.insert(s, i);
    i
}

fn bundle_packet(cpu: u32, mut p: Pending, sequence: u32) -> TracePacket {
    p.switches.sort_by_key(|e| e.0);
    p.wakings.sort_by_key(|e| e.0);
    p.others.sort_by_key(|e| e.0);
    let mut cs = CompactSched::new();
    let mut index = HashMap::new();
    let mut last = 0;
    for (ts, s, comm) in p.switches {
        cs.switch_timestamp.push(ts - last);
        last = ts;
        cs.switch_prev_state.push(i64::from(s.prev_state));
        cs.switch_next_pid.push(i32_of(s.next_pid));
        cs.switch_next_prio.push(s.next_prio);
        let i = intern(&mut cs.intern_table, &mut index, comm);
        cs.switch_next_comm_index.push(i);
    }
    last = 0;
    for (ts, w, comm) in p.wakings {
        cs.waking_timestamp.push(ts - last);
        last = ts;
        cs.waking_pid.push(i32_of(w.pid));
        cs.waking_target_cpu.push(i32_of(w.target_cpu));
        cs.waking_prio.push(w.prio);
        let i = intern(&mut cs.intern_table, &mut index, comm);
        cs.waking_comm_index.push(i);
        // The probes do not read the irq/preempt flags; 0 claims none.
        cs.waking_common_flags.push(0);
    }
    let mut b = FtraceEventBundle::new();
    b.set_cpu(cpu);
    b.compact_sched = protobuf::MessageField::some(cs);
    b.event = p.others.into_iter().map(|(_, f)| f).collect();
    let mut packet = TracePacket::new();
    packet.set_trusted_packet_sequence_id(sequence);
    packet.set_ftrace_events(b);
    packet
}

#[cfg(test)]
mod tests {
    use super::*;
    use wakeviz_core::event::{Comm, Migrate, TaskName};

    fn tb() -> TimeBase {
        TimeBase::monotonic_for_test(1_000, 1_100)
    }

    fn sw(ts: u64, cpu: u32, prev: u32, next: u32) -> Event {
        Event::Switch(Switch {
            ts_ns: ts,
            cpu,
            prev_pid: prev,
            next_pid: next,
            prev_state: 1,
            prev_prio: 120,
            next_prio: 110,
        })
    }

    fn waking(ts: u64, cpu: u32, pid: u32, target: u32) -> Event {
        Event::Waking(Wake {
            ts_ns: ts,
            cpu,
            pid,
            target_cpu: target,
            waker_pid: 9,
            prio: 120,
        })
    }

    #[test]
    fn compact_sched_per_cpu_sorted_delta_encoded_and_interned() {
        let mut tasks = TaskTable::default();
        tasks.learn(TaskName {
            pid: 7,
            comm: Comm::new("pong"),
            tgid: 0,
            cgroup: 0,
        });
        let tb = tb();
        let mut b = Bundles::default();
        for e in [
            sw(300, 1, 0, 7),
            sw(200, 1, 7, 0),
            waking(250, 0, 7, 1),
            sw(500, 1, 0, 7),
            waking(260, 0, 8, 0),
        ] {
            assert!(b.push(&e, &tasks, &tb));
        }
        let select = Event::Wakeup(Wake {
            ts_ns: 1,
            cpu: 0,
            pid: 7,
            target_cpu: 0,
            waker_pid: 0,
            prio: 0,
        });
        assert!(!b.push(&select, &tasks, &tb));
        let packets = b.flush(3);
        assert!(b.flush(3).is_empty());
        assert_eq!(packets.len(), 2);
        let cpu1 = packets[1].ftrace_events();
        assert_eq!(cpu1.cpu(), 1);
        let cs = &cpu1.compact_sched;
        // 200, 300, 500 on BOOTTIME (+100): first absolute, then deltas.
        assert_eq!(cs.switch_timestamp, [300, 100, 200]);
        assert_eq!(cs.switch_next_pid, [0, 7, 7]);
        let names: Vec<&str> = cs
            .switch_next_comm_index
            .iter()
            .map(|&i| cs.intern_table[i as usize].as_str())
            .collect();
        assert_eq!(names, ["swapper/1", "pong", "pong"]);
        assert_eq!(cs.intern_table.len(), 2);
        let cpu0 = &packets[0].ftrace_events().compact_sched;
        assert_eq!(cpu0.waking_timestamp, [350, 10]);
        assert_eq!(cpu0.waking_target_cpu, [1, 0]);
        let waking_names: Vec<&str> = cpu0
            .waking_comm_index
            .iter()
            .map(|&i| cpu0.intern_table[i as usize].as_str())
            .collect();
        assert_eq!(waking_names, ["pong", "<...>"]);
        assert_eq!(cpu0.waking_common_flags.len(), 2);
    }

    #[test]
    fn migrate_and_new_task_are_ftrace_events_that_round_trip() {
        use protobuf::Message as _;
        let tasks = TaskTable::default();
        let tb = tb();
        let mut b = Bundles::default();
        b.push(
            &Event::Migrate(Migrate {
                ts_ns: 40,
                cpu: 2,
                pid: 11,
                orig_cpu: 2,
                dest_cpu: 3,
            }),
            &tasks,
            &tb,
        );
        b.push(
            &Event::WakeupNew(Wake {
                ts_ns: 30,
                cpu: 2,
                pid: 12,
                target_cpu: 1,
                waker_pid: 5,
                prio: 120,
            }),
            &tasks,
            &tb,
        );
        let p = &b.flush(1)[0];
        let bytes = p.write_to_bytes().unwrap();
        let back = TracePacket::parse_from_bytes(&bytes).unwrap();
        let ev = &back.ftrace_events().event;
        assert_eq!(ev.len(), 2);
        assert_eq!(ev[0].timestamp(), 130);
        assert_eq!(ev[0].pid(), 5);
        assert_eq!(ev[0].sched_wakeup_new().target_cpu(), 1);
        assert_eq!(ev[1].sched_migrate_task().dest_cpu(), 3);
        assert_eq!(ev[1].sched_migrate_task().comm(), "<...>");
    }
}
