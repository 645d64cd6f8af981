//! `wakeviz --floor-probes [empty|clock|stream|batch]` (hidden; for `cargo xtask bench --only
//! floor`): attaches one of the floors of `wakeviz-ebpf/src/floor.rs` on every sched tracepoint
//! the streaming probes use, and nothing else, until SIGINT/SIGTERM. `empty` is the floor no
//! tracer on these hooks can go below; `clock` (one `bpf_ktime_get_ns` per hit, nothing sent)
//! the floor of any tracer that timestamps each event; `stream` (a clock read and one record
//! per hit, drained and thrown away here as wakeviz's drain threads would read it) is the floor
//! of any tracer that streams one timestamped record per hit; `batch` the same records sent 32 at a time (the
//! drain counts ring records, so batches there).
use std::time::Duration;

use anyhow::Context as _;
use aya::{Btf, Ebpf, EbpfLoader, maps::RingBuf};
use wakeviz_common::names::{floor_program, map};

use super::{LoadError, attach_tp_btf, load_object, raise_memlock};

/// Which floor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Floor {
    /// Programs that return at once.
    Empty,
    /// Programs that read the clock and send nothing.
    Clock,
    /// Programs that read the clock and send one record of the real probe's size.
    Stream,
    /// The same records, buffered per CPU and sent 32 at a time.
    Batch,
}

impl Floor {
    fn programs(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Self::Empty => floor_program::EMPTY,
            Self::Clock => floor_program::CLOCK,
            Self::Stream => floor_program::STREAM,
            Self::Batch => floor_program::BATCH,
        }
    }

    /// Whether its programs write the ring (which then needs room and a drain).
    const fn sends(self) -> bool {
        matches!(self, Self::Stream | Self::Batch)
    }
}

/// Loads the object and attaches every program of `floor`; any failure is an error, since a
/// partial floor would understate it.
pub fn attach(floor: Floor) -> anyhow::Result<Ebpf> {
    raise_memlock();
    let btf = Btf::from_sys_fs().context("the floor needs the kernel's BTF (tp_btf programs)")?;
    let mut loader = EbpfLoader::new();
    loader.btf(Some(&btf));
    // A floor that never writes the ring keeps it small. The sending ones get wakeviz's
    // default size, so they drop nothing between two polls either.
    let ring = if floor.sends() { 16 << 20 } else { 1 << 16 };
    loader.map_max_entries(map::EVENTS, ring);
    let mut ebpf = load_object(&mut loader, &[])?;
    for (tp, prog) in floor.programs() {
        attach_tp_btf(&mut ebpf, prog, tp, &btf)
            .map_err(|why| LoadError::Refused(format!("{tp}: {why}")))?;
    }
    Ok(ebpf)
}

/// Attaches the floor, says so on stderr, and holds it until a stop signal, draining the ring
/// every 10 ms (wakeviz's poll interval) for the streaming floor.
pub fn run(floor: Floor) -> anyhow::Result<()> {
    crate::signals::install();
    let mut ebpf = attach(floor)?;
    let mut ring = if floor.sends() {
        let m = ebpf
            .take_map(map::EVENTS)
            .context("the object has no EVENTS map")?;
        Some(RingBuf::try_from(m).context("EVENTS is not a ring buffer")?)
    } else {
        None
    };
    let points: Vec<&str> = floor.programs().iter().map(|(tp, _)| *tp).collect();
    say!(
        "wakeviz: floor probes attached ({} tp_btf programs on {}); Ctrl-C to detach",
        match floor {
            Floor::Empty => "empty",
            Floor::Clock => "clock-only",
            Floor::Stream => "streaming",
            Floor::Batch => "batching",
        },
        points.join(", ")
    );
    let mut records = 0u64;
    while !crate::signals::stop_requested() {
        if let Some(r) = ring.as_mut() {
            while let Some(item) = r.next() {
                std::hint::black_box(&*item);
                records += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(ebpf);
    if floor.sends() {
        say!("wakeviz: floor probes detached; {records} records drained");
    } else {
        say!("wakeviz: floor probes detached");
    }
    Ok(())
}
