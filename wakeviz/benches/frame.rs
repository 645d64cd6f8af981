//! One dashboard frame at 256 CPUs (`cargo xtask bench --only frame` runs this):
//! `cargo bench -p wakeviz --bench frame --profile release`.
//!
//! A live dashboard on a synthetic 256-CPU Zen3 NPS4 stream: between frames a batch of events
//! is folded in (not timed, as in the capture loop), then a frame is timed as the run loop
//! draws it: `App::refresh` (display figures) + `ui::draw` into a ratatui `TestBackend`. Every
//! view, per-LLC map (the default at 256 CPUs) and per-CPU map, two terminal sizes. Prints the
//! median per case and the worst median, in wall time and in thread CPU time.
//!
use std::time::{Duration, Instant};

use ratatui::{Terminal, backend::TestBackend};
use wakeviz_core::{
    event::Event,
    source::Batch,
    synth::{self, SynthConfig},
    topology,
};

use wakeviz::dashboard::{
    app::{App, Msg, SourceKind, View},
    ui,
};

fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    // `cargo bench` passes `--bench`; ignore it.
    let frames: usize = std::env::var("FRAME_BENCH_FRAMES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    let topo = topology::fixture::named_topology("zen3-nps4").expect("the zen3-nps4 fixture");
    let per_frame = 5_000u64;
    // Warm-up stream (so every table has content) plus one batch per timed frame.
    let total = 400_000 + per_frame * (frames as u64 + 1) * 20;
    let cfg = SynthConfig::new(total, 1);
    let mut s = synth::events(&topo, &cfg).expect("synth");
    let header = synth::header(&topo, &cfg, &s);
    let tasks = s.tasks().to_vec();
    let mut app = App::new(&header, SourceKind::Live { recording: None });
    let mut next = |n: u64| -> Batch {
        Batch {
            tasks: Vec::new(),
            events: s.by_ref().take(n as usize).collect::<Vec<Event>>(),
            ..Batch::default()
        }
    };
    app.data.on_batch(&Batch {
        tasks,
        ..Batch::default()
    });
    app.data.on_batch(&next(400_000));
    println!(
        "frame: {} CPUs ({}), {frames} frames per case, {per_frame} new events folded between frames (not timed)",
        topo.nr_cpus(),
        topo.summary()
    );
    let mut worst: (f64, String) = (0.0, String::new());
    let mut worst_cpu = 0.0f64;
    for (w, h) in [(120u16, 40u16), (240, 70)] {
        let mut term = Terminal::new(TestBackend::new(w, h)).expect("test terminal");
        for per_cpu in [false, true] {
            if app.per_cpu_map != per_cpu {
                app.update(Msg::ToggleAggregate);
            }
            for v in View::ALL {
                app.update(Msg::Show(v));
                let mut wall = Vec::with_capacity(frames);
                let mut cpu = Vec::with_capacity(frames);
                let mut draw_only = Vec::with_capacity(frames);
                for _ in 0..frames {
                    app.data.on_batch(&next(per_frame));
                    let (t0, c0) = (Instant::now(), thread_cpu());
                    app.refresh();
                    let t1 = Instant::now();
                    term.draw(|f| ui::draw(f, &app)).expect("draw");
                    let (t2, c2) = (Instant::now(), thread_cpu());
                    wall.push((t2 - t0).as_secs_f64() * 1e3);
                    cpu.push((c2 - c0).as_secs_f64() * 1e3);
                    draw_only.push((t2 - t1).as_secs_f64() * 1e3);
                }
                let (mw, mc, md) = (median(&mut wall), median(&mut cpu), median(&mut draw_only));
                let case = format!(
                    "{:<9} {w}x{h} {} map",
                    v.tab(),
                    if app.per_cpu_map {
                        "per-CPU"
                    } else {
                        "per-LLC"
                    }
                );
                println!(
                    "frame: {case:<32} median {mw:.3} ms wall ({md:.3} ms of it drawing), {mc:.3} ms CPU"
                );
                if mw > worst.0 {
                    worst = (mw, case);
                }
                worst_cpu = worst_cpu.max(mc);
            }
        }
    }
    println!(
        "frame: worst median {:.3} ms wall ({}), worst median {worst_cpu:.3} ms CPU",
        worst.0, worst.1
    );
}
