"""Independent check of a `wakeviz export --perfetto` trace against the recording's own dump.

Reads the trace part(s) with the upstream Trace proto (the `perfetto` package's generated
perfetto_trace_pb2, not wakeviz's code) and `wakeviz --replay F --dump jsonl` output, then
compares per CPU: sched_switch and sched_waking (CompactSched, timestamps rebuilt from the
deltas), sched_migrate_task and sched_wakeup_new (FtraceEvents), each event's time on BOOTTIME
(dump time + the clock snapshot's BOOTTIME - MONOTONIC), and task names (ProcessTree against
the dump's comms, and each thread's process, its tgid, against the dump's). wakeviz's TrackEvent data is decoded and summarised (instants by name,
flows, counter sums by track name, args by name: count, true, sum) for the caller to compare with `--report json`; within each
part every track is described and every interned name defined before use. Prints a JSON
summary; exits 1 on any mismatch.

usage: perfetto_check.py [--structure-only] DUMP.jsonl TRACE [TRACE...]
  --structure-only: only what one part must satisfy on its own (clock snapshot first, array
  lengths, every named task in the part's own ProcessTree); no comparison with the dump.
"""
import collections
import json
import sys

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

BOOTTIME, MONOTONIC = 6, 3
KINDS = {
    "sched_switch": "switch",
    "sched_waking": "waking",
    "sched_migrate_task": "migrate",
    "sched_wakeup_new": "new_task",
}


def read_dump(path):
    times = collections.defaultdict(list)  # (kind, cpu) -> [mono ts]
    comms = {}  # pid -> latest comm
    tgids = {}  # pid -> tgid, where the recording knows it
    for line in open(path):
        e = json.loads(line)
        if e.get("tgid") is not None and e["pid"] != 0:
            tgids[e["pid"]] = e["tgid"]
        kind = KINDS.get(e["kind"])
        if kind is None:
            continue
        times[(kind, e["cpu"])].append(e["ts_ns"])
        for pid, comm in [(e["pid"], e["comm"])] + (
            [(e["next_pid"], e["next_comm"])] if kind == "switch" else []
        ):
            if pid != 0 and comm != "?":
                comms[pid] = comm
    return times, comms, tgids


def read_part(path, problems):
    trace = pb.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())
    times = collections.defaultdict(list)  # (kind, cpu) -> [boot ts]
    names = {}
    groups = {}  # tid -> tgid as the ProcessTree gives it
    processes = {}  # pid -> ppid
    offset = None
    seen = {}  # pid -> comm as the events carry it
    event_names, arg_names, tracks = {}, {}, {}
    te = {"instants": collections.Counter(), "flows": 0, "terminating": 0,
          "counters": collections.Counter(), "args": collections.Counter()}
    for i, p in enumerate(trace.packet):
        if p.HasField("interned_data"):
            if p.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED:
                event_names, arg_names = {}, {}
            for n in p.interned_data.event_names:
                event_names[n.iid] = n.name
            for n in p.interned_data.debug_annotation_names:
                arg_names[n.iid] = n.name
        which = p.WhichOneof("data")
        if which == "clock_snapshot":
            clocks = {c.clock_id: c.timestamp for c in p.clock_snapshot.clocks}
            offset = clocks[BOOTTIME] - clocks[MONOTONIC]
            if i != 0:
                problems.append(f"{path}: clock snapshot is packet {i}, not the first")
        elif which == "track_descriptor":
            tracks[p.track_descriptor.uuid] = p.track_descriptor.name
        elif which == "track_event":
            e = p.track_event
            if e.track_uuid not in tracks:
                problems.append(f"{path}: packet {i}: track {e.track_uuid} used before described")
            if e.type == pb.TrackEvent.TYPE_INSTANT:
                if e.name_iid not in event_names:
                    problems.append(f"{path}: packet {i}: event name {e.name_iid} not interned")
                te["instants"][event_names.get(e.name_iid, "?")] += 1
                te["flows"] += len(e.flow_ids)
                te["terminating"] += len(e.terminating_flow_ids)
                # Per arg name: how many events carry it, how many say true, and the sum of
                # its unsigned values.
                for a in e.debug_annotations:
                    n = arg_names.get(a.name_iid, "?")
                    te["args"][n + ".n"] += 1
                    v = a.WhichOneof("value")
                    if v == "bool_value" and a.bool_value:
                        te["args"][n + ".true"] += 1
                    elif v == "uint_value":
                        te["args"][n + ".sum"] += a.uint_value
            elif e.type == pb.TrackEvent.TYPE_COUNTER:
                te["counters"][tracks.get(e.track_uuid, "?")] += e.counter_value
        elif which == "process_tree":
            for t in p.process_tree.threads:
                names[t.tid] = t.name
                groups[t.tid] = t.tgid
            for pr in p.process_tree.processes:
                processes[pr.pid] = pr.ppid
        elif which == "ftrace_events":
            b = p.ftrace_events
            cs = b.compact_sched
            n = len(cs.switch_timestamp)
            for field in ("switch_prev_state", "switch_next_pid", "switch_next_prio",
                          "switch_next_comm_index"):
                if len(getattr(cs, field)) != n:
                    problems.append(f"{path}: cpu {b.cpu}: {field} has the wrong length")
            ts = 0
            for d, pid, ci in zip(cs.switch_timestamp, cs.switch_next_pid,
                                  cs.switch_next_comm_index):
                ts += d
                times[("switch", b.cpu)].append(ts)
                if ci >= len(cs.intern_table):
                    problems.append(f"{path}: comm index {ci} out of range")
                else:
                    seen[pid] = cs.intern_table[ci]
            ts = 0
            for d, pid, ci in zip(cs.waking_timestamp, cs.waking_pid, cs.waking_comm_index):
                ts += d
                times[("waking", b.cpu)].append(ts)
                if ci < len(cs.intern_table):
                    seen[pid] = cs.intern_table[ci]
            for ev in b.event:
                kind = ev.WhichOneof("event")
                if kind == "sched_migrate_task":
                    times[("migrate", b.cpu)].append(ev.timestamp)
                    seen[ev.sched_migrate_task.pid] = ev.sched_migrate_task.comm
                elif kind == "sched_wakeup_new":
                    times[("new_task", b.cpu)].append(ev.timestamp)
                    seen[ev.sched_wakeup_new.pid] = ev.sched_wakeup_new.comm
    if offset is None:
        problems.append(f"{path}: no clock snapshot")
        offset = 0
    # Names resolve through this part's own ProcessTree (each part stands alone): every task
    # the events name (not the idle task, not "<...>", a pid the recording never named).
    unresolved = sorted(p for p, c in seen.items() if p != 0 and c != "<...>" and p not in names)
    if unresolved:
        problems.append(f"{path}: pids without a ProcessTree name: {unresolved[:10]}")
    return times, names, offset, te, groups, processes


def main(argv):
    structure_only = "--structure-only" in argv
    argv = [a for a in argv if a != "--structure-only"]
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    dump_times, comms, tgids = read_dump(argv[1])
    problems = []
    trace_times = collections.defaultdict(list)
    offsets = set()
    parts = []
    all_names = set()
    track_events = {"instants": collections.Counter(), "flows": 0, "terminating": 0,
                    "counters": collections.Counter(), "args": collections.Counter()}
    last_names = {}
    all_groups, all_processes = {}, {}
    for path in argv[2:]:
        times, names, offset, te, groups, processes = read_part(path, problems)
        all_groups.update(groups)
        all_processes.update(processes)
        for k in ("instants", "counters", "args"):
            track_events[k].update(te[k])
        track_events["flows"] += te["flows"]
        track_events["terminating"] += te["terminating"]
        offsets.add(offset)
        for k, v in times.items():
            trace_times[k].extend(v)
        all_names.update(names.values())
        parts.append({"path": path, "threads": len(names), "events": sum(map(len, times.values()))})
        last_names = names
    if len(offsets) != 1:
        problems.append(f"parts disagree on the clock: {sorted(offsets)}")
    offset = offsets.pop() if offsets else 0
    # The last part's names are the latest: they must equal the dump's latest comms.
    wrong = sorted(p for p, n in last_names.items() if p in comms and comms[p] != n)
    if wrong:
        problems.append(f"names differ from the dump for pids {wrong[:10]}")
    # Threads are grouped by the tgid the recording knows; unknown, each is its own process.
    # (A part checked alone has no dump to say which.)
    wrong = sorted(t for t, g in all_groups.items() if g != tgids.get(t, t))
    if wrong and not structure_only:
        problems.append(f"thread groups differ from the dump for tids {wrong[:10]}")
    counts = {}
    if structure_only:
        dump_times = {}
    for key in sorted(set(dump_times) | set(trace_times)):
        kind, cpu = key
        want = sorted(t + offset for t in dump_times.get(key, []))
        got = sorted(trace_times.get(key, []))
        counts.setdefault(kind, {})[str(cpu)] = {"dump": len(want), "trace": len(got)}
        if structure_only:
            continue
        if len(want) != len(got):
            problems.append(f"{kind} on cpu {cpu}: dump {len(want)}, trace {len(got)}")
        elif want != got:
            bad = next(i for i, (a, b) in enumerate(zip(want, got)) if a != b)
            problems.append(f"{kind} on cpu {cpu}: time {bad} is {got[bad]}, dump says {want[bad]}")
    print(json.dumps({"parts": parts, "boot_minus_mono_ns": offset, "counts": counts,
                      "named_pids": len(comms), "thread_names": sorted(all_names),
                      "thread_tgids": {str(t): g for t, g in sorted(all_groups.items())},
                      "process_ppids": {str(p): pp for p, pp in sorted(all_processes.items())},
                      "track_events": track_events,
                      "problems": problems}, indent=1))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
