//! The shadow evaluator on synthetic recordings (`wakeviz_core::synth`) of the fixture
//! machines: every policy runs, the fidelity is high where the inputs are exact, and (ignored,
//! run with `--release -- --ignored`) the throughput on the 256-CPU Zen3.
use std::time::Instant;

use wakeviz_core::{
    event::Event,
    join::Joiner,
    shadow::ShadowEval,
    synth::{self, SynthConfig},
    topology::{Topology, fixture},
};

fn fixture(name: &str) -> Topology {
    fixture::named_topology(name).expect("fixture topology")
}

/// Events of a synthetic run, with its header.
fn run(name: &str, events: u64) -> (wakeviz_core::format::Header, Vec<Event>) {
    let topo = fixture(name);
    let cfg = SynthConfig::new(events, 7);
    let s = synth::events(&topo, &cfg).expect("synth");
    let hdr = synth::header(&topo, &cfg, &s);
    (hdr, s.collect())
}

fn replay(hdr: &wakeviz_core::format::Header, events: &[Event]) -> (ShadowEval, u64) {
    let mut ev = ShadowEval::new(hdr);
    let mut j = Joiner::new();
    let mut placements = 0;
    for e in events {
        ev.on_event(e);
        if let Some(p) = j.on_event(e) {
            let _ = ev.on_placement(&p);
            placements += 1;
        }
    }
    (ev, placements)
}

#[test]
fn synthetic_zen3_and_xeon_replays_are_faithful() {
    for name in [
        "zen3-nps1",
        "zen3-nps4",
        "xeon-e5-2690v3",
        "vm-2cpu",
        "irregular",
    ] {
        let (hdr, events) = run(name, 200_000);
        let (ev, placements) = replay(&hdr, &events);
        assert!(ev.evaluated() > 0, "{name}: nothing evaluated");
        let f = ev.fidelity().expect("fidelity");
        let v = json(&ev);
        eprintln!(
            "{name}: {placements} placements, {} evaluated, fidelity {:.4}, buckets {}",
            ev.evaluated(),
            f,
            v["fidelity"]["disagreements"]
        );
        assert!(f > 0.8, "{name}: fidelity {f}");
        // The incremental idle-core counts equal a recount from the idle map.
        let (t, st) = (ev.topo(), ev.state());
        for l in 0..t.n_llcs() as u32 {
            let n = t
                .llc_cores(l)
                .iter()
                .filter(|&&c| st.core_idle(t, c))
                .count() as u32;
            assert_eq!(st.idle_cores(l), n, "{name}: LLC {l}");
        }
    }
}

#[test]
fn degraded_inputs_still_replay() {
    let (hdr, events) = run("zen3-nps1", 200_000);
    // Select records without the kernel's inputs: nr_running, nr_idle_scan, has_idle_cores
    // all emulated.
    let emulated: Vec<Event> = events
        .iter()
        .map(|e| match e {
            Event::Select(s) => Event::Select(Box::new(wakeviz_core::event::Select {
                waker_nr_running: None,
                nr_idle_scan: None,
                has_idle_cores: None,
                prev_nr_idle_scan: None,
                prev_has_idle_cores: None,
                ..**s
            })),
            e => e.clone(),
        })
        .collect();
    let (ev, _) = replay(&hdr, &emulated);
    let f = ev.fidelity().expect("fidelity");
    let v = json(&ev);
    eprintln!(
        "emulated inputs: fidelity {f:.4}, {}",
        v["fidelity"]["disagreements"]
    );
    assert_eq!(v["policies"]["sis_util"]["exact_inputs_pct"], 0.0);
    assert_eq!(v["policies"]["prev_only"]["exact_inputs_pct"], 100.0);
    assert!(f > 0.6, "emulated fidelity {f}");

    // Tracepoint-only: no select records at all, the probe marked unavailable.
    let mut tp_hdr = hdr.clone();
    for p in &mut tp_hdr.probes {
        if p.name == "select_task_rq_fair" {
            p.state = wakeviz_core::format::ProbeState::Unavailable("test".into());
        }
    }
    let tp: Vec<Event> = events
        .iter()
        .filter(|e| !matches!(e, Event::Select(_)))
        .cloned()
        .collect();
    let (ev, _) = replay(&tp_hdr, &tp);
    let f = ev.fidelity().expect("fidelity");
    let v = json(&ev);
    eprintln!(
        "tracepoint-only: {} evaluated, fidelity {f:.4}, {}",
        ev.evaluated(),
        v["fidelity"]["disagreements"]
    );
    assert_eq!(v["decision_time"], "sched_waking");
    assert!(ev.evaluated() > 0);
}

/// CPU time of this thread (ns), so the figure holds on a loaded machine.
fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[test]
#[ignore = "throughput benchmark; run with --release -- --ignored --nocapture"]
fn throughput_256_cpus() {
    let (hdr, events) = run("zen3-nps1", 3_000_000);
    // The joiner's share, to subtract: the shadow is what is measured.
    let mut j = Joiner::new();
    let placements: Vec<_> = events.iter().map(|e| j.on_event(e)).collect();
    let _ = replay(&hdr, &events[..events.len() / 10]);
    let (c0, t0) = (thread_cpu_ns(), Instant::now());
    let mut ev = ShadowEval::new(&hdr);
    let mut n = 0u64;
    for (e, p) in events.iter().zip(&placements) {
        ev.on_event(e);
        if let Some(p) = p {
            let _ = ev.on_placement(p);
            n += 1;
        }
    }
    let wall = t0.elapsed().as_secs_f64();
    let cpu = match (c0, thread_cpu_ns()) {
        (Some(a), Some(b)) => (b - a) as f64 / 1e9,
        _ => wall,
    };
    eprintln!(
        "{} events, {n} placements ({} evaluated) x {} policies: cpu {cpu:.3} s (wall {wall:.3} s) = {:.2} M placements/s, {:.2} M events/s per core",
        events.len(),
        ev.evaluated(),
        ev.policy_names().len(),
        n as f64 / cpu / 1e6,
        events.len() as f64 / cpu / 1e6
    );
    eprintln!(
        "{}",
        wakeviz_core::analysis::report::shadow::text(&ev.report(None))
    );
}

/// The `shadow` section of `--report json`: the typed report, serialized.
fn json(ev: &ShadowEval) -> serde_json::Value {
    serde_json::to_value(ev.report(None)).expect("shadow report serializes")
}
