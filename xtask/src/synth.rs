//! `cargo xtask synth`: a synthetic recording for a saved sysfs tree, for machines this host is
//! not. The model lives in `wakeviz_core::synth` (see its module docs).
use std::{fs::File, io::BufWriter, path::PathBuf, time::Instant};

use anyhow::Context;
use wakeviz_core::{synth, topology};

#[derive(clap::Args)]
pub struct Args {
    /// A `devices/system`-like directory (cpu/, node/), or the name of a fixture machine the
    /// tests use (zen3-nps1, zen3-nps2, zen3-nps4, xeon-e5-2690v3, vm-2cpu, irregular).
    #[arg(long)]
    pub topology: PathBuf,
    /// Exact number of events to write.
    #[arg(long)]
    pub events: u64,
    /// Same seed and topology give a byte-identical file.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long)]
    pub out: PathBuf,
}

pub fn run(a: &Args) -> anyhow::Result<()> {
    let named = a
        .topology
        .to_str()
        .filter(|n| topology::fixture::SysfsSpec::NAMES.contains(n) && !a.topology.exists());
    let topo = match named {
        Some(name) => topology::fixture::named_topology(name),
        None => topology::from_sysfs(&a.topology),
    }
    .with_context(|| format!("reading topology {}", a.topology.display()))?;
    let cfg = synth::SynthConfig::new(a.events, a.seed);
    let f = File::create(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let (start, cpu0) = (Instant::now(), thread_cpu_ns());
    let s = synth::generate(&topo, &cfg, BufWriter::with_capacity(1 << 20, f))
        .with_context(|| format!("writing {}", a.out.display()))?;
    let secs = start.elapsed().as_secs_f64();
    // CPU time too: on a shared machine the wall-clock rate says more about the neighbours.
    let cpu = match (cpu0, thread_cpu_ns()) {
        (Some(a), Some(b)) if b > a => format!(
            ", {:.2} M/s of CPU time",
            s.events as f64 / (b - a) as f64 * 1e3
        ),
        _ => String::new(),
    };
    println!(
        "synth: {} events, {} bytes ({:.2} bytes/event), {:.2} M events/s generated ({:.2} s wall{cpu}), {} tasks, {:.3} s simulated on {} -> {}",
        s.events,
        s.bytes,
        s.bytes as f64 / s.events.max(1) as f64,
        s.events as f64 / secs.max(1e-9) / 1e6,
        secs,
        s.tasks,
        s.span_ns as f64 / 1e9,
        topo.summary(),
        a.out.display()
    );
    Ok(())
}

/// This thread's CPU time (Linux `schedstat`), if readable.
fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}
