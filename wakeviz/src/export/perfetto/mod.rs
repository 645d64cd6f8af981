//! `wakeviz export --perfetto OUT IN.wvz`: a recording as a Perfetto trace, for
//! ui.perfetto.dev and trace_processor. The kernel's events become ftrace data (CPU tracks,
//! thread states, the waker marker come from Perfetto's own importer), names a ProcessTree,
//! and a ClockSnapshot puts it all on BOOTTIME. The recording is streamed batch by batch:
//! memory is one batch plus the task-name table, whatever the recording's length.
mod clock;
mod ftrace;
mod names;
mod out;

use std::{path::Path, process::ExitCode, time::Duration};

use anyhow::{Context as _, bail};
use perfetto_protos::trace_packet::TracePacket;
use wakeviz_core::{
    event::{Kind, TaskName, TaskTable},
    source::{Batch, EventSource as _, Poll, ReplaySource},
};

use self::{clock::TimeBase, ftrace::Bundles, out::Output};

/// Packet sequence of everything wakeviz writes from the kernel's events.
const SEQ_KERNEL: u32 = 1;

/// Exit status of an export from a damaged recording (as for a replay; README "Exit status").
const EXIT_DAMAGED: u8 = 3;

pub fn export(a: &super::ExportArgs, out: &Path) -> anyhow::Result<ExitCode> {
    let [input] = a.inputs.as_slice() else {
        bail!(
            "--perfetto exports one recording into one trace; got {} recordings",
            a.inputs.len()
        );
    };
    let limit = a.split_mb.map(|mb| mb << 20);
    Output::check(out, limit, a.force)?;
    let mut src = ReplaySource::open(input)?;
    let (tb, note) = TimeBase::from_header(src.header());
    if let Some(n) = note {
        eprintln!("wakeviz: note: {}: {n}", input.display());
    }
    let mut ex = Exporter {
        out: Output::create(out, limit, a.force)?,
        tb,
        tasks: TaskTable::default(),
        bundles: Bundles::default(),
        now: 0,
        per_kind: [0; 6],
        packets: 0,
    };
    ex.now = ex.tb.start_boot();
    ex.preamble()?;
    loop {
        match src.poll(Duration::ZERO)? {
            Poll::Batch(b) => ex.on_batch(&b)?,
            Poll::Pending => {}
            Poll::End => break,
        }
    }
    let (per_kind, packets) = (ex.per_kind, ex.packets);
    let files = ex.out.finish()?;
    for w in src.warnings() {
        eprintln!("wakeviz: warning: {w}");
    }
    let events: u64 = per_kind.iter().sum();
    for (path, bytes) in &files {
        eprintln!("wakeviz: wrote {} ({bytes} bytes)", path.display());
    }
    eprintln!(
        "wakeviz: {packets} packets, {events} events: {} sched_switch, {} sched_waking, {} sched_migrate_task, {} sched_wakeup_new",
        per_kind[Kind::Switch.index()],
        per_kind[Kind::Waking.index()],
        per_kind[Kind::Migrate.index()],
        per_kind[Kind::WakeupNew.index()],
    );
    Ok(if src.warnings().is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_DAMAGED)
    })
}

struct Exporter {
    out: Output,
    tb: TimeBase,
    tasks: TaskTable,
    bundles: Bundles,
    /// BOOTTIME of the latest batch's first event: when names learnt now take effect.
    now: u64,
    per_kind: [u64; 6],
    packets: u64,
}

impl Exporter {
    /// What every part starts with, so each one loads on its own: the clock snapshot and
    /// every name known so far.
    fn preamble(&mut self) -> anyhow::Result<()> {
        let mut packets = vec![self.tb.snapshot_packet(SEQ_KERNEL)];
        let known: Vec<TaskName> = self
            .tasks
            .iter()
            .map(|(pid, comm)| TaskName { pid, comm: *comm })
            .collect();
        packets.extend(names::process_tree(&known, self.now, SEQ_KERNEL));
        for p in &packets {
            self.out.write(&out::encode(p)?, true)?;
            self.packets += 1;
        }
        Ok(())
    }

    fn emit(&mut self, p: &TracePacket) -> anyhow::Result<()> {
        let bytes = out::encode(p)?;
        if self.out.needs_new_part(bytes.len() as u64) {
            self.out.next_part()?;
            self.preamble()?;
        }
        self.out.write(&bytes, false)?;
        self.packets += 1;
        Ok(())
    }

    fn on_batch(&mut self, b: &Batch) -> anyhow::Result<()> {
        if let Some(first) = b.events.iter().map(|e| e.ts_ns()).min() {
            self.now = self.now.max(self.tb.boot(first));
        }
        let renamed: Vec<TaskName> = b
            .tasks
            .iter()
            .copied()
            .filter(|t| self.tasks.learn(*t))
            .collect();
        if let Some(p) = names::process_tree(&renamed, self.now, SEQ_KERNEL) {
            self.emit(&p)?;
        }
        for e in &b.events {
            if self.bundles.push(e, &self.tasks, &self.tb) {
                self.per_kind[e.kind().index()] += 1;
            }
        }
        for p in self.bundles.flush(SEQ_KERNEL) {
            self.emit(&p)
                .context("writing the Perfetto trace (ftrace bundles)")?;
        }
        Ok(())
    }
}
