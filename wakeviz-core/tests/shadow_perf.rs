//! Throughput of the shadow evaluator alone (every policy) on a synthetic 256-CPU Zen3 NPS4
//! recording. Ignored by default; run with
//! `cargo test --release -p wakeviz-core --test shadow_perf -- --ignored --nocapture`
//! (`WAKEVIZ_PERF_EVENTS` sets the event count, default 2 000 000, seed 1).
use std::time::Instant;

use wakeviz_core::{
    event::Event,
    join::{Joiner, Placement},
    shadow::ShadowEval,
    synth::{self, SynthConfig},
    topology::fixture,
};

#[test]
#[ignore]
fn placements_per_second() {
    let topo = fixture::named_topology("zen3-nps4").expect("fixture topology");
    let n = std::env::var("WAKEVIZ_PERF_EVENTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000_000);
    let cfg = SynthConfig::new(n, 1);
    let s = synth::events(&topo, &cfg).expect("synth");
    let hdr = synth::header(&topo, &cfg, &s);
    let mut j = Joiner::new();
    let input: Vec<(Event, Option<Placement>)> = s
        .map(|e| {
            let p = j.on_event(&e);
            (e, p)
        })
        .collect();
    let placements = input.iter().filter(|x| x.1.is_some()).count();
    for round in 0..3 {
        let mut ev = ShadowEval::new(&hdr);
        let t = Instant::now();
        for (e, p) in &input {
            ev.on_event(e);
            if let Some(p) = p {
                let _ = ev.on_placement(p);
            }
        }
        let dt = t.elapsed().as_secs_f64();
        println!(
            "round {round}: {placements} placements, {} evaluated in {dt:.3} s: {:.3} M placements/s",
            ev.evaluated(),
            placements as f64 / dt / 1e6
        );
    }
}
