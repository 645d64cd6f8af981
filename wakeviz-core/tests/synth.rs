//! The synthetic generator: determinism, a readable recording, and a stream consistent with the
//! generator's own record of what it simulated.
use std::{collections::HashMap, path::Path, time::Duration};

use wakeviz_core::{
    event::{Event, Kind, wf},
    format::{ChunkPayload, ProbeMode, ProbeState, ScanSource, read_all},
    join::Joiner,
    source::{EventSource, Poll, ReplaySource},
    synth::{self, START_TS_NS, SynthConfig, TruthPlacement},
    topology::{
        Level, Topology,
        fixture::{self, SysfsSpec},
        from_sysfs,
    },
};

/// Shape of a hand-built sysfs tree, numbered like AMD: thread `t` of global core `k` is CPU
/// `k + t * cores`.
#[derive(Clone, Copy)]
struct Shape {
    packages: u32,
    nodes_per_pkg: u32,
    llcs_per_node: u32,
    cores_per_llc: u32,
    threads: u32,
}

impl Shape {
    /// 2 packages x 2 nodes (NPS2) x 2 LLCs x 2 cores x 2 threads = 32 CPUs.
    const NPS2: Self = Self {
        packages: 2,
        nodes_per_pkg: 2,
        llcs_per_node: 2,
        cores_per_llc: 2,
        threads: 2,
    };
    /// This VM: 2 CPUs, no SMT, one node.
    const VM2: Self = Self {
        packages: 1,
        nodes_per_pkg: 1,
        llcs_per_node: 1,
        cores_per_llc: 2,
        threads: 1,
    };

    fn cores(&self) -> u32 {
        self.packages * self.nodes_per_pkg * self.llcs_per_node * self.cores_per_llc
    }

    fn write(&self, root: &Path) {
        let w = |p: std::path::PathBuf, s: String| {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, s + "\n").unwrap();
        };
        let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
        let cores = self.cores();
        let n = cores * self.threads;
        w(root.join("cpu/online"), format!("0-{}", n - 1));
        let core_of = |cpu: u32| cpu % cores;
        let llc_of = |cpu: u32| core_of(cpu) / self.cores_per_llc;
        let node_of = |cpu: u32| llc_of(cpu) / self.llcs_per_node;
        let pkg_of = |cpu: u32| node_of(cpu) / self.nodes_per_pkg;
        for cpu in 0..n {
            let d = root.join(format!("cpu/cpu{cpu}"));
            let sib: Vec<u32> = (0..n).filter(|&c| core_of(c) == core_of(cpu)).collect();
            let llc: Vec<u32> = (0..n).filter(|&c| llc_of(c) == llc_of(cpu)).collect();
            w(
                d.join("topology/physical_package_id"),
                pkg_of(cpu).to_string(),
            );
            w(d.join("topology/die_id"), "0".into());
            w(
                d.join("topology/core_id"),
                (core_of(cpu) % (cores / self.packages)).to_string(),
            );
            w(d.join("topology/thread_siblings_list"), list(&sib));
            w(d.join("cache/index3/level"), "3".into());
            w(d.join("cache/index3/type"), "Unified".into());
            w(d.join("cache/index3/shared_cpu_list"), list(&llc));
        }
        let nodes = self.packages * self.nodes_per_pkg;
        for node in 0..nodes {
            let cpus: Vec<u32> = (0..n).filter(|&c| node_of(c) == node).collect();
            let d = root.join(format!("node/node{node}"));
            w(d.join("cpulist"), list(&cpus));
            let dist: Vec<String> = (0..nodes)
                .map(|o| {
                    if o == node {
                        "10"
                    } else if o / self.nodes_per_pkg == node / self.nodes_per_pkg {
                        "12"
                    } else {
                        "32"
                    }
                    .to_string()
                })
                .collect();
            w(d.join("distance"), dist.join(" "));
        }
    }

    fn topology(&self) -> Topology {
        let dir = tempfile::tempdir().unwrap();
        self.write(dir.path());
        from_sysfs(dir.path()).unwrap()
    }
}

fn gen_bytes(topo: &Topology, cfg: &SynthConfig) -> Vec<u8> {
    let mut buf = Vec::new();
    let s = synth::generate(topo, cfg, &mut buf).unwrap();
    assert_eq!(s.events, cfg.events);
    assert_eq!(s.bytes, buf.len() as u64);
    buf
}

#[test]
fn same_seed_same_bytes() {
    let topo = Shape::NPS2.topology();
    let mut cfg = SynthConfig::new(150_000, 7);
    cfg.chunk_events = 10_000;
    let a = gen_bytes(&topo, &cfg);
    let b = gen_bytes(&topo, &cfg);
    assert!(a == b, "same seed gave different files");
    cfg.seed = 8;
    assert!(
        gen_bytes(&topo, &cfg) != a,
        "different seeds gave the same file"
    );
}

#[test]
fn recording_reads_back_whole() {
    let topo = Shape::NPS2.topology();
    let mut cfg = SynthConfig::new(123_457, 3);
    cfg.chunk_events = 20_000;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.wvz");
    let sum = synth::generate(&topo, &cfg, std::fs::File::create(&path).unwrap()).unwrap();
    assert_eq!(sum.bytes, std::fs::metadata(&path).unwrap().len());

    let (hdr, chunks, err) = read_all(&path).unwrap();
    assert!(err.is_none(), "{err:?}");
    assert_eq!(hdr.kernel_release, "synthetic");
    assert_eq!(hdr.tool_version, env!("CARGO_PKG_VERSION"));
    assert_eq!(hdr.scan_source, ScanSource::SelectTaskRqFair);
    assert_eq!(hdr.topology, topo);
    assert_eq!(hdr.start_ts_ns, START_TS_NS);
    assert!(hdr.notes.iter().any(|n| n.contains("seed 3")));
    for k in Kind::ALL {
        let p = hdr
            .probe(k.name())
            .unwrap_or_else(|| panic!("probe {}", k.name()));
        assert_eq!(
            (p.mode, &p.state),
            (Some(ProbeMode::Synthetic), &ProbeState::Attached)
        );
    }
    let mut events = 0u64;
    let mut per_kind = wakeviz_core::event::PerKind::<u64>::default();
    let mut names = 0;
    let mut end = None;
    for c in &chunks {
        match c {
            ChunkPayload::Events(e) => {
                events += e.len() as u64;
                for ev in e {
                    per_kind[ev.kind()] += 1;
                }
            }
            ChunkPayload::Tasks(t) => names += t.len(),
            ChunkPayload::End(s) => end = Some(s.clone()),
            ChunkPayload::Stats(_) | ChunkPayload::Schedstat(_) => {}
        }
    }
    assert_eq!(events, cfg.events);
    assert_eq!(names, sum.tasks);
    let end = end.expect("END chunk");
    assert!(matches!(chunks.last(), Some(ChunkPayload::End(_))));
    assert_eq!(end.offered, per_kind);
    assert_eq!(end.offered, sum.per_kind);
    assert_eq!(
        (end.delivered, end.drops(), end.select_unpaired),
        (cfg.events, 0, 0)
    );
    assert_eq!(per_kind[Kind::WakeupNew], 0, "the model has no forks");

    let mut src = ReplaySource::open(&path).unwrap();
    let mut n = 0u64;
    loop {
        match src.poll(Duration::ZERO).unwrap() {
            Poll::Batch(b) => n += b.events.len() as u64,
            Poll::End => break,
            Poll::Pending => unreachable!(),
        }
    }
    assert_eq!(n, cfg.events);
    assert!(src.warnings().is_empty(), "{:?}", src.warnings());
    assert_eq!(src.final_stats().map(|s| s.delivered), Some(cfg.events));
}

/// Everything the stream says about one wakeup and the tasks' lives, checked as a kernel would
/// guarantee it.
struct Checked {
    placements: Vec<(wakeviz_core::join::Placement, TruthPlacement)>,
}

fn check_stream(topo: &Topology, cfg: &SynthConfig) -> Checked {
    let mut s = synth::events(topo, cfg).unwrap();
    s.record_truth();
    let tasks: HashMap<u32, String> = s
        .tasks()
        .iter()
        .map(|t| (t.pid, t.comm.as_str().into_owned()))
        .collect();
    let events: Vec<Event> = s.by_ref().collect();
    let truth = s.take_truth();
    assert_eq!(events.len() as u64, cfg.events);

    let mut joiner = Joiner::new();
    let mut placements = Vec::new();
    let mut last_ts: HashMap<u32, u64> = HashMap::new();
    let mut curr: HashMap<u32, u32> = HashMap::new();
    let mut running_on: HashMap<u32, u32> = HashMap::new();
    let mut woken_at: HashMap<u32, u64> = HashMap::new();
    let mut selects = 0;
    let mut waking_cpu: HashMap<u32, u32> = HashMap::new();
    let (mut high, mut disorder) = (0u64, 0u64);
    for (i, e) in events.iter().enumerate() {
        let cpu = e.cpu();
        disorder = disorder.max(high.saturating_sub(e.ts_ns()));
        high = high.max(e.ts_ns());
        let t = last_ts.entry(cpu).or_insert(0);
        assert!(
            e.ts_ns() > *t,
            "event {i}: CPU {cpu} time went from {t} to {}: {e:?}",
            e.ts_ns()
        );
        *t = e.ts_ns();
        assert!(topo.cpu(cpu).is_some(), "event {i} on unknown CPU {cpu}");
        match e {
            Event::Waking(w) => {
                assert!(tasks.contains_key(&w.pid));
                assert_eq!(
                    w.waker_pid,
                    *curr.get(&w.cpu).unwrap_or(&0),
                    "event {i}: waker is not the running task"
                );
                assert!(
                    !running_on.contains_key(&w.pid),
                    "event {i}: waking a running task"
                );
                waking_cpu.insert(w.pid, w.cpu);
            }
            Event::Select(sel) => {
                selects += 1;
                assert_eq!(sel.wake_flags & wf::TTWU, wf::TTWU);
                assert!(sel.entry_ts_ns < sel.ts_ns);
                let d = sel.duration_ns();
                assert!((300..=20_000).contains(&d), "select duration {d}");
                assert!(sel.waker_nr_running.is_some() && sel.nr_idle_scan.is_some());
                assert!(sel.has_idle_cores.is_some() && sel.prev_nr_idle_scan.is_some());
                assert!(sel.prev_has_idle_cores.is_some() && sel.idle_scan_ns.is_none());
                assert_eq!(
                    Some(&sel.cpu),
                    waking_cpu.get(&sel.pid),
                    "event {i}: select off the waker CPU"
                );
            }
            Event::Migrate(m) => {
                assert_ne!(m.orig_cpu, m.dest_cpu);
                match waking_cpu.get(&m.pid) {
                    // A wakeup migration happens in waker context...
                    Some(&w) => assert_eq!(m.cpu, w, "event {i}"),
                    // ...a newidle pull on the CPU that pulls.
                    None => assert_eq!(m.cpu, m.dest_cpu, "event {i}"),
                }
            }
            Event::Wakeup(w) => {
                woken_at.insert(w.pid, w.ts_ns);
                let waker = waking_cpu
                    .remove(&w.pid)
                    .expect("sched_wakeup without sched_waking");
                assert!(
                    w.cpu == waker || w.cpu == w.target_cpu,
                    "event {i}: wakeup on a third CPU"
                );
                assert_eq!(w.waker_pid, *curr.get(&w.cpu).unwrap_or(&0), "event {i}");
            }
            Event::Switch(sw) => {
                let c = curr.get(&sw.cpu).copied().unwrap_or(0);
                assert_eq!(
                    sw.prev_pid, c,
                    "event {i}: switch-out of a task not running on CPU {}",
                    sw.cpu
                );
                if sw.prev_pid != 0 {
                    running_on.remove(&sw.prev_pid);
                    assert!(sw.prev_state <= 1);
                }
                if sw.next_pid != 0 {
                    if let Some(other) = running_on.insert(sw.next_pid, sw.cpu) {
                        panic!(
                            "event {i}: pid {} runs on CPUs {other} and {}",
                            sw.next_pid, sw.cpu
                        );
                    }
                    if let Some(&wt) = woken_at.get(&sw.next_pid) {
                        assert!(sw.ts_ns > wt, "event {i}: switch-in before the wakeup");
                    }
                }
                curr.insert(sw.cpu, sw.next_pid);
            }
            other => panic!("event {i}: no {} in the model", other.kind().name()),
        }
        if let Some(p) = joiner.on_event(e) {
            placements.push(p);
        }
    }
    assert_eq!(joiner.unmatched_wakeups, 0);
    // Across CPUs the stream is ordered like a ring buffer: only slightly out of time order.
    assert!(
        disorder < 200_000,
        "events up to {disorder} ns out of order"
    );
    eprintln!("largest step back in time across CPUs: {disorder} ns");
    assert!(selects > 0);
    // Wakeups of the last simulated step can fall beyond the event limit: in the truth, not in
    // the stream (one step wakes at most a fan-out group).
    assert!(truth.len() >= placements.len() && truth.len() <= placements.len() + 9);
    let placements: Vec<_> = placements.into_iter().zip(truth).collect();
    for (i, (p, t)) in placements.iter().enumerate() {
        assert_eq!(p.pid, t.pid, "placement {i}");
        assert_eq!(
            (p.waker_cpu, p.prev_cpu, p.chosen_cpu),
            (t.waker_cpu, t.prev_cpu, t.chosen_cpu),
            "placement {i} of pid {}",
            p.pid
        );
        // Pinned tasks never reach select_task_rq_fair.
        assert_eq!(p.select.is_some(), !t.pinned, "placement {i}");
        if let Some(sel) = p.select {
            assert_eq!(sel.chosen_cpu, t.chosen_cpu);
            assert_eq!(p.sync(), Some(t.sync));
        }
        if t.pinned {
            assert_eq!(p.prev_cpu, p.chosen_cpu);
        }
    }
    Checked { placements }
}

#[test]
fn stream_is_consistent_and_joins_to_truth_nps2() {
    let topo = Shape::NPS2.topology();
    assert_eq!(topo.nps_mode(), "NPS2");
    let c = check_stream(&topo, &SynthConfig::new(300_000, 11));
    assert!(c.placements.len() > 30_000, "{}", c.placements.len());

    let mut by_waker: HashMap<Level, u64> = HashMap::new();
    let mut by_prev: HashMap<Level, u64> = HashMap::new();
    let (mut sync, mut pinned, mut wake_list) = (0, 0, 0);
    for (p, t) in &c.placements {
        *by_waker
            .entry(topo.level(p.waker_cpu, p.chosen_cpu).unwrap())
            .or_default() += 1;
        *by_prev
            .entry(topo.level(p.prev_cpu, p.chosen_cpu).unwrap())
            .or_default() += 1;
        sync += u64::from(t.sync);
        pinned += u64::from(t.pinned);
        wake_list += u64::from(t.wake_list);
    }
    eprintln!(
        "waker->chosen {by_waker:?}\nprev->chosen {by_prev:?}\nsync {sync} pinned {pinned} wake_list {wake_list} of {}",
        c.placements.len()
    );
    for l in Level::ALL {
        assert!(
            by_waker.get(&l).copied().unwrap_or(0) > 0,
            "waker->chosen never {}",
            l.name()
        );
    }
    for l in [
        Level::SameCpu,
        Level::SmtSibling,
        Level::SameLlc,
        Level::SameNode,
    ] {
        assert!(
            by_prev.get(&l).copied().unwrap_or(0) > 0,
            "prev->chosen never {}",
            l.name()
        );
    }
    let n = c.placements.len() as u64;
    assert!(sync > n / 10 && sync < n * 9 / 10, "sync {sync} of {n}");
    assert!(pinned > 0 && pinned < n / 2, "pinned {pinned} of {n}");
    assert!(
        wake_list > 0 && wake_list < n,
        "wake_list {wake_list} of {n}"
    );
}

#[test]
fn two_cpu_machine_without_smt() {
    let topo = Shape::VM2.topology();
    assert!(!topo.smt_active());
    let c = check_stream(&topo, &SynthConfig::new(50_000, 1));
    assert!(!c.placements.is_empty());
}

#[test]
fn empty_workload_is_an_error() {
    let topo = Shape::VM2.topology();
    let mut cfg = SynthConfig::new(10, 1);
    cfg.pipe_pairs = Some(0);
    cfg.fanout_groups = Some(0);
    cfg.kworkers = false;
    assert!(synth::events(&topo, &cfg).is_err());
    cfg.pipe_pairs = Some(usize::MAX);
    assert!(synth::events(&topo, &cfg).is_err());
}

/// Level counts of `(waker -> chosen, prev -> chosen)`, in [`Level::ALL`] order.
fn level_mix(topo: &Topology, c: &Checked) -> ([u64; 6], [u64; 6]) {
    let (mut w, mut p) = ([0u64; 6], [0u64; 6]);
    for (pl, _) in &c.placements {
        w[topo.level(pl.waker_cpu, pl.chosen_cpu).unwrap().index()] += 1;
        p[topo.level(pl.prev_cpu, pl.chosen_cpu).unwrap().index()] += 1;
    }
    (w, p)
}

/// The named fixture machines (written by `topology::fixture`): the stream stays consistent on
/// every one, sparse and offline CPUs included.
#[test]
fn consistent_on_fixture_trees() {
    for name in SysfsSpec::NAMES {
        let topo = fixture::named_topology(name).unwrap();
        let c = check_stream(&topo, &SynthConfig::new(200_000, 5));
        let (w, p) = level_mix(&topo, &c);
        eprintln!(
            "{name}: {} placements; waker->chosen {w:?}; prev->chosen {p:?}",
            c.placements.len()
        );
        assert!(c.placements.len() > 10_000, "{name}");
        if topo.packages.len() > 1 {
            assert!(
                w[Level::CrossPackage.index()] > 0,
                "{name}: no cross-package wakeups"
            );
        }
        if topo.nodes_per_package() > 1 {
            assert!(
                w[Level::SamePackage.index()] > 0,
                "{name}: no same-package wakeups"
            );
        }
    }
}

/// CPU time of this thread, so the figure means something on a loaded machine.
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// `cargo test --release -p wakeviz-core --test synth -- --ignored --nocapture speed`
#[test]
#[ignore = "a measurement: run in release"]
fn speed() {
    let topo = fixture::named_topology("zen3-nps4").unwrap();
    let n = 10_000_000;
    let cfg = SynthConfig::new(n, 1);
    let (t0, c0) = (std::time::Instant::now(), thread_cpu_ns());
    let mut x = 0u64;
    for e in synth::events(&topo, &cfg).unwrap() {
        x = x.wrapping_add(e.ts_ns());
    }
    let (wall, cpu) = (
        t0.elapsed().as_nanos() as f64,
        (thread_cpu_ns() - c0) as f64,
    );
    eprintln!(
        "iterator: {n} events on {} CPUs: {:.2} M events/s CPU time, {:.2} M/s wall ({x})",
        topo.nr_cpus(),
        n as f64 / cpu * 1e3,
        n as f64 / wall * 1e3
    );
    let (t0, c0) = (std::time::Instant::now(), thread_cpu_ns());
    let s = synth::generate(&topo, &cfg, std::io::sink()).unwrap();
    let (wall, cpu) = (
        t0.elapsed().as_nanos() as f64,
        (thread_cpu_ns() - c0) as f64,
    );
    eprintln!(
        "recording: {:.2} M events/s CPU time, {:.2} M/s wall, {:.2} bytes/event",
        n as f64 / cpu * 1e3,
        n as f64 / wall * 1e3,
        s.bytes as f64 / n as f64
    );
}
