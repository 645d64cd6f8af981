//! `wakeviz --floor-probes` (hidden; for `cargo xtask bench --only floor`): attaches the empty
//! tp_btf programs of `wakeviz-ebpf/src/floor.rs` on every sched tracepoint the streaming probes
//! use, and nothing else, until SIGINT/SIGTERM. The benchmark's slowdown under them is the
//! floor a streaming tracer on these hooks cannot go below.
use std::time::Duration;

use anyhow::Context as _;
use aya::{Btf, Ebpf, EbpfLoader};
use wakeviz_common::names::floor_program;

use super::{LoadError, attach_tp_btf, load_object, raise_memlock};

/// Loads the object and attaches every floor program; any failure is an error, since a partial
/// floor would understate it.
pub fn attach() -> anyhow::Result<Ebpf> {
    raise_memlock();
    let btf = Btf::from_sys_fs().context("the floor needs the kernel's BTF (tp_btf programs)")?;
    let mut loader = EbpfLoader::new();
    loader.btf(Some(&btf));
    // The ring buffer is created with the object but never written: keep it small.
    loader.map_max_entries(wakeviz_common::names::map::EVENTS, 1 << 16);
    let mut ebpf = load_object(&mut loader, &[])?;
    for (tp, prog) in floor_program::ALL {
        attach_tp_btf(&mut ebpf, prog, tp, &btf)
            .map_err(|why| LoadError::Refused(format!("{tp}: {why}")))?;
    }
    Ok(ebpf)
}

/// Attaches the floor, says so on stderr, and holds it until a stop signal.
pub fn run() -> anyhow::Result<()> {
    crate::signals::install();
    let ebpf = attach()?;
    let points: Vec<&str> = floor_program::ALL.iter().map(|(tp, _)| *tp).collect();
    eprintln!(
        "wakeviz: floor probes attached (empty tp_btf programs on {}); Ctrl-C to detach",
        points.join(", ")
    );
    while !crate::signals::stop_requested() {
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(ebpf);
    eprintln!("wakeviz: floor probes detached");
    Ok(())
}
