//! Item 3, synthetic: can the userspace side keep up at 256 CPUs? Synthetic events of the
//! 256-CPU NPS4 topology are turned into the ring-buffer records the probes emit (the
//! `wakeviz-common` ABI structs, 8-byte aligned, as a BPF ring buffer lays them out), then one
//! thread runs what the live capture runs on them: `decode_record`, the task-name table,
//! batches, and `format::Recorder` (varint/delta encoding, zstd, chunk CRCs) writing to a sink.
use std::{
    path::PathBuf,
    time::{Duration, Instant},
};

use anyhow::Context as _;
use wakeviz_core::{
    decode::{decode_record, encode_record},
    event::{Comm, Event, TaskTable},
    format::{Recorder, RecorderConfig},
    source::Batch,
    synth::{self, FIRST_PID},
    topology,
};

use super::{Ctx, Summary, median, mega, rate, thread_cpu};

/// The 256-CPU Zen3 NPS4 machine's sysfs tree, written afresh under the bench's output
/// directory: a plain directory rather than a scratch one, because another build's binary
/// (`XTASK_BIN_B`) reads it too.
pub fn nps4_dir(ctx: &Ctx) -> anyhow::Result<PathBuf> {
    let dir = ctx.out.join("sysfs-zen3-nps4");
    let _ = std::fs::remove_dir_all(&dir);
    topology::fixture::SysfsSpec::named("zen3-nps4")
        .context("the zen3-nps4 fixture machine")?
        .write(&dir)
        .with_context(|| format!("writing {}", dir.display()))?;
    Ok(dir)
}
const BATCH_EVENTS: usize = 8192;

/// The record a probe would have emitted for `e`, framed as a ring buffer frames it.
fn encode(buf: &mut Vec<u8>, e: &Event, comm: &dyn Fn(u32) -> [u8; 16]) {
    let mut rec = Vec::with_capacity(64);
    encode_record(&mut rec, e, comm);
    buf.extend_from_slice(&(rec.len() as u32).to_le_bytes());
    buf.extend_from_slice(&0u32.to_le_bytes());
    buf.extend_from_slice(&rec);
    while !buf.len().is_multiple_of(8) {
        buf.push(0);
    }
}

struct Pass {
    events: u64,
    cpu: Duration,
    wall: Duration,
    bytes: u64,
}

/// One pass over the records: what the drain thread and the recorder do, on one thread.
fn pass(records: &[u8], header: &wakeviz_core::format::Header) -> anyhow::Result<Pass> {
    let (w0, c0) = (Instant::now(), thread_cpu());
    let mut rec = Recorder::new(std::io::sink(), header, RecorderConfig::default())?;
    let mut names = TaskTable::default();
    let mut batch = Batch::default();
    let mut events = 0u64;
    let hand = |batch: &mut Batch, rec: &mut Recorder<std::io::Sink>| -> anyhow::Result<()> {
        for t in &batch.tasks {
            rec.learn_task(*t);
        }
        for e in &batch.events {
            rec.push(e)?;
        }
        rec.tick()?;
        batch.tasks.clear();
        batch.events.clear();
        Ok(())
    };
    let mut off = 0;
    while off + 8 <= records.len() {
        let len = u32::from_le_bytes(records[off..off + 4].try_into()?) as usize;
        let item = &records[off + 8..off + 8 + len];
        off = (off + 8 + len).next_multiple_of(8);
        let (ev, name) = decode_record(item).map_err(|e| anyhow::anyhow!("{e}"))?;
        if let Some(n) = name
            && n.comm.0[0] != 0
            && names.learn(n)
        {
            batch.tasks.push(n);
        }
        batch.events.push(ev);
        events += 1;
        if batch.events.len() >= BATCH_EVENTS {
            hand(&mut batch, &mut rec)?;
        }
    }
    hand(&mut batch, &mut rec)?;
    let (_, bytes) = rec.finish(&Default::default())?;
    Ok(Pass {
        events,
        cpu: thread_cpu() - c0,
        wall: w0.elapsed(),
        bytes,
    })
}

pub fn run(ctx: &Ctx, sum: &mut Summary) -> anyhow::Result<()> {
    let (n, passes) = if ctx.quick {
        (2_000_000, 3)
    } else {
        (4_000_000, 5)
    };
    let topo_dir = nps4_dir(ctx)?;
    let topo = topology::from_sysfs(&topo_dir)
        .with_context(|| format!("reading {}", topo_dir.display()))?;
    println!(
        "\n[3] userspace ingest at {} CPUs ({}): {n} synthetic events as ABI ring-buffer records -> decode_record -> task names -> batches -> format::Recorder -> sink, one thread, {passes} passes",
        topo.nr_cpus(),
        topo.summary()
    );
    let cfg = synth::SynthConfig::new(n, 1);
    let mut s = synth::events(&topo, &cfg)?;
    let header = synth::header(&topo, &cfg, &s);
    let names: Vec<[u8; 16]> = s.tasks().iter().map(|t| t.comm.0).collect();
    let swapper = Comm::new("swapper").0;
    let comm = |pid: u32| {
        if pid == 0 {
            return swapper;
        }
        pid.checked_sub(FIRST_PID)
            .and_then(|i| names.get(i as usize))
            .copied()
            .unwrap_or([0; 16])
    };
    let mut records = Vec::with_capacity(n as usize * 64);
    let mut events = Vec::with_capacity(n as usize);
    for e in s.by_ref() {
        encode(&mut records, &e, &comm);
        events.push(e);
    }
    println!(
        "  {} bytes of records ({:.1} bytes/record)",
        records.len(),
        records.len() as f64 / n as f64
    );
    let mut cpu_rates = Vec::new();
    let mut wall_rates = Vec::new();
    for i in 1..=passes {
        let p = pass(&records, &header)?;
        let (rc, rw) = (rate(p.events as f64, p.cpu), rate(p.events as f64, p.wall));
        println!(
            "  pass {i}: {} events, {:.3} s CPU ({}), {:.3} s wall ({}), {:.2} bytes/event recorded",
            p.events,
            p.cpu.as_secs_f64(),
            mega(rc),
            p.wall.as_secs_f64(),
            mega(rw),
            p.bytes as f64 / p.events.max(1) as f64
        );
        cpu_rates.push(rc);
        wall_rates.push(rw);
    }
    let (mc, mw) = (median(&cpu_rates), median(&wall_rates));
    sum.add(
        "3",
        "userspace ingest, 256-CPU synthetic (decode+record, CPU time)",
        format!("{} ({} wall)", mega(mc), mega(mw)),
        ">= 2 M events/s",
        Some(mc >= 2e6),
    );
    let mut merge_rates = Vec::new();
    for (i, p) in super::merge::passes(&events, topo.nr_cpus(), passes)?
        .iter()
        .enumerate()
    {
        let r = rate(p.events as f64, p.cpu);
        println!(
            "  merge pass {}: {} events, {:.3} s CPU ({}), {} late",
            i + 1,
            p.events,
            p.cpu.as_secs_f64(),
            mega(r),
            p.late
        );
        merge_rates.push(r);
    }
    let mm = median(&merge_rates);
    sum.add(
        "3",
        "merge of 16 rings' per-CPU batches, 256-CPU synthetic (one thread, CPU time)",
        mega(mm),
        ">= 8.5 M events/s (the seeds' rate, docs/dev/capture.md)",
        Some(mm >= 8.5e6),
    );
    Ok(())
}
