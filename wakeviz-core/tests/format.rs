//! Recording format: round trips, and every kind of damage a file can suffer.
use std::{io::Write as _, path::Path};

use wakeviz_core::{
    event::{Comm, Event, Kind, Migrate, Select, Switch, TaskName, Wake},
    format::{
        CaptureStats, ChunkPayload, FORMAT_VERSION, FormatError, Header, ProbeMode, ProbeState,
        ProbeStatus, Reader, Recorder, RecorderConfig, ScanSource, read_all,
    },
    source::{EventSource, Poll, ReplaySource},
    topology::Topology,
};

fn topo() -> Topology {
    // Four CPUs, no SMT, one LLC/node/package; built through serde like a recording header.
    let cpus: Vec<_> = (0..4)
        .map(|c| serde_json::json!({"cpu": c, "package": 0, "die": 0, "core_id": c, "node": 0, "llc": 0, "core": c}))
        .collect();
    let cores: Vec<_> = (0..4)
        .map(|c| serde_json::json!({"id": c, "cpus": c.to_string()}))
        .collect();
    let t: Topology = serde_json::from_value(serde_json::json!({
        "cpus": cpus, "offline": "", "cores": cores,
        "llcs": [{"id": 0, "cpus": "0-3"}], "llc_level": 3,
        "nodes": [{"id": 0, "cpus": "0-3"}], "distances": [[10]],
        "packages": [{"id": 0, "cpus": "0-3"}]
    }))
    .unwrap();
    t.finish()
}

fn header() -> Header {
    Header {
        format_version: FORMAT_VERSION,
        abi_version: wakeviz_common::ABI_VERSION,
        tool_version: "test".into(),
        kernel_release: "6.18.0-test".into(),
        hostname: "h".into(),
        realtime_offset_ns: 0,
        clocks: None,
        scan_points: None,
        start_ts_ns: 0,
        probes: vec![ProbeStatus {
            name: "sched_waking".into(),
            mode: Some(ProbeMode::TpBtf),
            state: ProbeState::Attached,
            fallbacks: vec![],
        }],
        scan_source: ScanSource::None,
        topology: topo(),
        ringbuf_bytes: 1 << 20,
        comm_redacted: false,
        cpu_vendor: None,
        notes: vec![],
        run: Default::default(),
    }
}

/// A varied stream: every kind, backwards timestamps across CPUs, big values.
fn events(n: u64) -> Vec<Event> {
    (0..n)
        .map(|i| {
            let ts = 1_000_000 + i * 700 - (i % 3) * 50;
            let cpu = (i % 4) as u32;
            match i % 6 {
                0 => Event::Waking(Wake {
                    ts_ns: ts,
                    cpu,
                    pid: 100 + (i % 7) as u32,
                    target_cpu: 3,
                    waker_pid: 99,
                    prio: 120,
                }),
                1 => Event::Wakeup(Wake {
                    ts_ns: ts,
                    cpu,
                    pid: 100 + (i % 7) as u32,
                    target_cpu: 2,
                    waker_pid: 0,
                    prio: -1,
                }),
                2 => Event::WakeupNew(Wake {
                    ts_ns: ts,
                    cpu,
                    pid: u32::MAX - 1,
                    target_cpu: 1,
                    waker_pid: 5,
                    prio: 139,
                }),
                3 => Event::Switch(Switch {
                    ts_ns: ts,
                    cpu,
                    prev_pid: 0,
                    next_pid: 100,
                    prev_state: 1,
                    prev_prio: 120,
                    next_prio: 98,
                }),
                4 => Event::Migrate(Migrate {
                    ts_ns: ts,
                    cpu,
                    pid: 101,
                    orig_cpu: 0,
                    dest_cpu: 3,
                }),
                _ => Event::Select(Box::new(Select {
                    ts_ns: ts,
                    entry_ts_ns: ts - 1500,
                    cpu,
                    pid: 102,
                    prev_cpu: 1,
                    // Some are inputs read at sched_waking: the marker and the unknown
                    // chosen CPU round-trip.
                    wake_flags: if i % 4 == 3 {
                        wakeviz_core::event::wf::AT_WAKING
                    } else {
                        0x18
                    },
                    chosen_cpu: if i % 4 == 3 { u32::MAX } else { 2 },
                    waker_pid: 99,
                    waker_nr_running: (i % 2 == 0).then_some(1),
                    nr_idle_scan: Some(16),
                    has_idle_cores: (i % 4 == 1).then_some(true),
                    prev_nr_idle_scan: None,
                    prev_has_idle_cores: Some(false),
                    idle_scan_ns: (i % 3 == 0).then_some(812),
                    // The debug-info probes' scan on some: tests and path round-trip.
                    scan: (i % 6 < 2).then_some(wakeviz_core::event::ScanMeasure {
                        cpus: (i % 9) as u16,
                        path: if i % 6 == 0 { 1 | 2 } else { 0 },
                    }),
                    // ABI-2 inputs on some records, a mask on fewer: the block round-trips.
                    inputs: wakeviz_core::event::SelectInputs {
                        waker_load: (i % 5 != 0).then_some(1024 + i as u32),
                        prev_load: (i % 5 != 0).then_some(300),
                        task_h_load: (i % 5 == 1).then_some(511),
                        task_in_group: i % 7 == 0,
                        waker_kthread: (i % 5 == 2).then_some(true),
                        task_nr_cpus_allowed: (i % 5 == 3).then_some(2),
                        allowed: (i % 5 == 3).then_some([0b110, 0, 0, 1 << 63]),
                        // ABI 3: the record_wakee() state, jiffies wrapping on some.
                        flips: (i % 3 != 2).then_some(wakeviz_core::event::WakeeFlips {
                            waker: i as u32 % 40,
                            wakee: 5,
                            waker_decay_jiffies: u32::MAX - 3,
                            jiffies: (i as u32).wrapping_sub(7),
                            waker_last_wakee_is_task: i % 2 == 0,
                        }),
                        ..Default::default()
                    },
                })),
            }
        })
        .collect()
}

fn write(path: &Path, evs: &[Event], chunk_events: u32, finish: bool) -> CaptureStats {
    let f = std::fs::File::create(path).unwrap();
    let cfg = RecorderConfig {
        chunk_events,
        ..RecorderConfig::default()
    };
    let mut r = Recorder::new(f, &header(), cfg).unwrap();
    r.learn_task(TaskName {
        pid: 100,
        comm: Comm::new("pingpong"),
        tgid: 0,
        cgroup: 0,
    });
    // The process becomes known (a wake record), then a switch record (no tgid) repeats the
    // name: one more entry, carrying the tgid, and nothing for the repeat.
    r.learn_task(TaskName {
        pid: 100,
        comm: Comm::new("pingpong"),
        tgid: 98,
        cgroup: 0,
    });
    r.learn_task(TaskName {
        pid: 100,
        comm: Comm::new("pingpong"),
        tgid: 0,
        cgroup: 0,
    });
    let mut stats = CaptureStats::default();
    for e in evs {
        stats.offered[e.kind()] += 1;
        r.push(e).unwrap();
    }
    stats.kernel_drops = 3;
    stats.delivered = evs.len() as u64;
    if finish {
        r.finish(&stats).unwrap();
    } else {
        r.flush().unwrap();
    }
    stats
}

fn replay_events(path: &Path) -> (Vec<Event>, Vec<String>) {
    let mut src = ReplaySource::open(path).unwrap();
    let mut out = Vec::new();
    loop {
        match src.poll(std::time::Duration::ZERO).unwrap() {
            Poll::Batch(b) => out.extend(b.events),
            Poll::Pending => {}
            Poll::End => break,
        }
    }
    (out, src.warnings().to_vec())
}

#[test]
fn round_trip_every_kind() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.wvz");
    let evs = events(10_000);
    let stats = write(&p, &evs, 1000, true);
    let (h, chunks, err) = read_all(&p).unwrap();
    assert!(err.is_none(), "{err:?}");
    assert_eq!(h.topology.nr_cpus(), 4);
    assert_eq!(h.topology.level(0, 1), topo().level(0, 1));
    let got = events_in(&chunks);
    assert_eq!(got, evs);
    // The task appears twice (named, then its process learnt) though it was learnt three times.
    let names = tasks_in(&chunks);
    assert_eq!(names.len(), 2);
    assert_eq!(names[0].comm.as_str(), "pingpong");
    assert_eq!((names[0].tgid, names[1].tgid), (0, 98));
    assert_eq!(chunks.last(), Some(&ChunkPayload::End(stats)));
    let (replayed, warnings) = replay_events(&p);
    assert_eq!(replayed.len(), evs.len());
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        replayed.iter().filter(|e| e.kind() == Kind::Select).count(),
        evs.len() / 6
    );
}

#[test]
fn bytes_per_event_is_small_on_a_regular_stream() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.wvz");
    let evs = events(60_000);
    write(&p, &evs, 1 << 16, true);
    let size = std::fs::metadata(&p).unwrap().len();
    let per = size as f64 / evs.len() as f64;
    assert!(per < 16.0, "{per} bytes/event");
}

/// Damage at every offset of the chunk area: never a panic; what is returned before the
/// damage is exactly a prefix of the events written.
#[test]
fn truncation_anywhere_keeps_an_exact_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.wvz");
    let evs = events(3_000);
    write(&p, &evs, 500, true);
    let full = std::fs::read(&p).unwrap();
    let q = dir.path().join("cut.wvz");
    for cut in (0..full.len()).step_by(97) {
        std::fs::write(&q, &full[..cut]).unwrap();
        match Reader::open(&q) {
            Err(e) => {
                let msg = e.to_string();
                assert!(msg.contains("cut.wvz"), "{msg}");
                assert!(
                    matches!(
                        e,
                        FormatError::Truncated { .. } | FormatError::NotWakeviz { .. }
                    ),
                    "{msg}"
                );
            }
            Ok(mut r) => {
                let mut got = Vec::new();
                while let Some(c) = r.next_chunk() {
                    if let Ok(ChunkPayload::Events(e)) = c {
                        got.extend(e);
                    }
                }
                assert_eq!(got[..], evs[..got.len()]);
            }
        }
    }
}

#[test]
fn flipped_byte_in_a_chunk_is_detected_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.wvz");
    let evs = events(3_000);
    write(&p, &evs, 500, true);
    let mut bytes = std::fs::read(&p).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 0x40;
    std::fs::write(&p, &bytes).unwrap();
    let (_, chunks, err) = read_all(&p).unwrap();
    let err = err.expect("damage must be reported");
    let msg = err.to_string();
    assert!(msg.contains("chunk") && msg.contains("offset"), "{msg}");
    let got: usize = chunks
        .iter()
        .map(|c| match c {
            ChunkPayload::Events(e) => e.len(),
            _ => 0,
        })
        .sum();
    assert!(got > 0 && got < evs.len());
    // Replay uses the intact chunks and warns.
    let (replayed, warnings) = replay_events(&p);
    assert_eq!(replayed.len(), got);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
}

#[test]
fn unfinished_recording_replays_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.wvz");
    let evs = events(2_000);
    write(&p, &evs, 500, false);
    let (replayed, warnings) = replay_events(&p);
    assert_eq!(replayed, evs);
    assert!(warnings[0].contains("cut short"), "{warnings:?}");
}

#[test]
fn foreign_newer_and_missing_files_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let foreign = dir.path().join("perf.data");
    std::fs::write(&foreign, b"PERFILE2 and more bytes to be long enough").unwrap();
    let e = Reader::open(&foreign).err().unwrap();
    assert!(matches!(e, FormatError::NotWakeviz { .. }));
    assert!(e.to_string().contains("perf.data") && !e.to_string().contains('\n'));

    let p = dir.path().join("t.wvz");
    write(&p, &events(10), 500, true);
    let mut bytes = std::fs::read(&p).unwrap();
    bytes[8..12].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
    std::fs::write(&p, &bytes).unwrap();
    let e = Reader::open(&p).err().unwrap();
    assert!(matches!(e, FormatError::NewerVersion { .. }), "{e}");

    let e = Reader::open(&dir.path().join("missing.wvz")).err().unwrap();
    assert!(e.to_string().contains("missing.wvz"));

    let empty = dir.path().join("empty.wvz");
    std::fs::File::create(&empty).unwrap().flush().unwrap();
    assert!(Reader::open(&empty).is_err());
}

#[test]
fn header_corruption_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.wvz");
    write(&p, &events(10), 500, true);
    let mut bytes = std::fs::read(&p).unwrap();
    bytes[40] ^= 1;
    std::fs::write(&p, &bytes).unwrap();
    let e = Reader::open(&p).err().unwrap();
    assert!(matches!(e, FormatError::BadHeader { .. }), "{e}");
}

/// The events of every `EVENTS` chunk, in order.
fn events_in(chunks: &[ChunkPayload]) -> Vec<Event> {
    let evs = chunks.iter().filter_map(|c| match c {
        ChunkPayload::Events(e) => Some(e.clone()),
        _ => None,
    });
    evs.flatten().collect()
}

/// The names of every `TASKS` chunk, in order.
fn tasks_in(chunks: &[ChunkPayload]) -> Vec<TaskName> {
    let names = chunks.iter().filter_map(|c| match c {
        ChunkPayload::Tasks(t) => Some(t.clone()),
        _ => None,
    });
    names.flatten().collect()
}

/// Every chunk of a recording, events flattened, with its header's format version.
fn chunks_of(path: &Path) -> (u32, Vec<Event>, Vec<ChunkPayload>) {
    let (h, chunks, err) = read_all(path).unwrap();
    assert!(err.is_none(), "{}: {err:?}", path.display());
    (h.format_version, events_in(&chunks), chunks)
}

/// The demo recording (format 1, a live ABI-3 capture with select inputs) still reads as
/// before, and its events and task names written again by the `Recorder` (format 2, columns)
/// read back identical, in chunks of several sizes.
#[test]
fn a_format_1_recording_rewritten_as_columns_reads_back_identical() {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../wakeviz/assets/demo.wvz");
    let (version, evs, chunks) = chunks_of(&demo);
    assert_eq!((version, evs.len()), (1, 60_159));
    assert!(
        evs.iter()
            .any(|e| matches!(e, Event::Select(s) if s.inputs.flips.is_some()))
    );
    let tasks = tasks_in(&chunks);
    let dir = tempfile::tempdir().unwrap();
    for chunk_events in [1, 977, 65_536] {
        let p = dir.path().join(format!("demo-{chunk_events}.wvz"));
        let cfg = RecorderConfig {
            chunk_events,
            ..RecorderConfig::default()
        };
        let header = Reader::open(&demo).unwrap().header().clone();
        let mut r = Recorder::new(std::fs::File::create(&p).unwrap(), &header, cfg).unwrap();
        tasks.iter().for_each(|t| r.learn_task(*t));
        evs.iter().for_each(|e| r.push(e).unwrap());
        r.finish(&CaptureStats::default()).unwrap();
        let (version, again, chunks) = chunks_of(&p);
        assert_eq!(version, FORMAT_VERSION);
        assert!(
            again == evs,
            "{chunk_events} events per chunk: decoded events differ"
        );
        // Names learnt again are written once (the dictionary keeps the last of each pid).
        let names = tasks_in(&chunks).len();
        assert!(
            names > 0 && names <= tasks.len(),
            "{names} of {}",
            tasks.len()
        );
    }
}

/// What a replay delivers, in stream order: a sample's time as `S<ts>`, an event's as `E<ts>`.
fn stream_order(path: &Path) -> Vec<String> {
    let mut src = ReplaySource::open(path).unwrap();
    let mut out = Vec::new();
    while let Poll::Batch(b) = src.poll(std::time::Duration::ZERO).unwrap() {
        out.extend(b.schedstat.iter().map(|s| format!("S{}", s.ts_ns)));
        out.extend(b.events.iter().map(|e| format!("E{}", e.ts_ns())));
    }
    assert!(src.warnings().is_empty(), "{:?}", src.warnings());
    out
}

/// A `/proc/schedstat` sample is written after the events pushed before it, and a replay
/// delivers it there, text and time intact, whatever the chunk size.
#[test]
fn schedstat_samples_replay_where_they_were_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let evs = events(40);
    let sample = |ts_ns| wakeviz_core::event::SchedstatSample {
        ts_ns,
        text: format!("version 17\ntimestamp {ts_ns}\ncpu0 0 0 0 0 1 1 0 0 0\n"),
    };
    for chunk_events in [1, 7, 65_536] {
        let p = dir.path().join(format!("s-{chunk_events}.wvz"));
        let cfg = RecorderConfig {
            chunk_events,
            ..RecorderConfig::default()
        };
        let mut r = Recorder::new(std::fs::File::create(&p).unwrap(), &header(), cfg).unwrap();
        let mut want = Vec::new();
        for (i, e) in evs.iter().enumerate() {
            if i % 15 == 0 {
                let s = sample(1_000 + i as u64);
                r.schedstat(&s).unwrap();
                want.push(format!("S{}", s.ts_ns));
            }
            r.push(e).unwrap();
            want.push(format!("E{}", e.ts_ns()));
        }
        r.finish(&CaptureStats::default()).unwrap();
        assert_eq!(stream_order(&p), want, "{chunk_events} events per chunk");
        let (_, chunks, err) = read_all(&p).unwrap();
        assert!(err.is_none());
        let texts: Vec<_> = chunks
            .iter()
            .filter_map(|c| match c {
                ChunkPayload::Schedstat(s) => Some(s.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(texts, vec![sample(1_000), sample(1_015), sample(1_030)]);
    }
}
