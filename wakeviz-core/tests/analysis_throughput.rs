//! Throughput of the analysis fold (shadow evaluation off) on a 256-CPU topology. Ignored by
//! default; run with
//! `cargo test --release -p wakeviz-core --test analysis_throughput -- --ignored --nocapture`.
mod analysis_support;

use analysis_support::{W, batch, header};
use wakeviz_core::{analysis::Analysis, format::ScanSource};

#[test]
#[ignore]
fn events_per_second() {
    let h = header("zen3-nps4", ScanSource::SelectTaskRqFair);
    let mut a = Analysis::new(&h);
    a.set_shadow(None);
    // 2 000 tasks spread over the machine, 4 events per wakeup.
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut rnd = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let ws: Vec<W> = (0..250_000u64)
        .map(|i| {
            let r = rnd();
            let pid = 1000 + (r % 2000) as u32;
            W::new(
                i * 400,
                (r >> 12) as u32 % 256,
                pid,
                (r >> 24) as u32 % 256,
                (r >> 36) as u32 % 256,
            )
            .select(500 + (r >> 48) % 4000)
            .runs_after(1000 + (r >> 40) % 50_000)
        })
        .collect();
    let b = batch(&ws);
    let n = b.events.len() as u64;
    let rounds = 8;
    let t = std::time::Instant::now();
    for _ in 0..rounds {
        a.on_batch(&b);
    }
    let dt = t.elapsed().as_secs_f64();
    println!(
        "{:.1} M events/s ({} events in {dt:.3} s)",
        (n * rounds) as f64 / dt / 1e6,
        n * rounds
    );
    assert_eq!(a.snapshot().placement.wakeups.count, 250_000 * rounds);
    // For scale: the joiner alone (part of the fold above).
    let mut j = wakeviz_core::join::Joiner::new();
    let t = std::time::Instant::now();
    let mut placed = 0u64;
    for _ in 0..rounds {
        for e in &b.events {
            placed += u64::from(j.on_event(e).is_some());
        }
    }
    let dt = t.elapsed().as_secs_f64();
    println!(
        "joiner alone: {:.1} M events/s ({placed} placements)",
        (n * rounds) as f64 / dt / 1e6
    );
    // And with the shadow-policy evaluation on (Analysis::new's default), for scale.
    let mut with_shadow = Analysis::new(&h);
    let t = std::time::Instant::now();
    with_shadow.on_batch(&b);
    let dt = t.elapsed().as_secs_f64();
    println!(
        "with shadow evaluation: {:.1} M events/s",
        n as f64 / dt / 1e6
    );
}
