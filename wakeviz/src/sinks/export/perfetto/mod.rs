//! `wakeviz export --perfetto OUT IN.wvz`: a recording as a Perfetto trace, for
//! ui.perfetto.dev and trace_processor. The kernel's events become ftrace data (CPU tracks,
//! thread states, the waker marker come from Perfetto's own importer), names a ProcessTree,
//! and a ClockSnapshot puts it all on BOOTTIME; wakeviz's per-wakeup records become TrackEvent
//! tracks (see `track`). The recording is streamed batch by batch: memory is one batch plus
//! the analysis's bounded state, whatever the recording's length.
mod clock;
mod ftrace;
mod names;
mod out;
mod track;

use std::{collections::HashSet, path::Path, process::ExitCode};

use anyhow::{Context as _, bail};
use perfetto_protos::trace_packet::TracePacket;
use wakeviz_core::{
    analysis::Analysis,
    event::{Event, Kind, PerKind, TaskName, TaskTable},
    fields,
    pidmap::PidMap,
    source::{Batch, EventSource as _, ReplaySource},
};

use self::{clock::TimeBase, ftrace::Bundles, out::Output, track::Tracks};

/// Packet sequence of everything wakeviz writes from the kernel's events.
const SEQ_KERNEL: u32 = 1;

/// Events per slice of a chunk (see [`Exporter::write_batch`]): bundles of a few thousand events
/// keep CompactSched's interning effective.
const SLICE_EVENTS: usize = 4096;

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
        say!("wakeviz: note: {}: {n}", input.display());
    }
    let mut h = src.header().clone();
    wakeviz_core::analysis::Scope::apply(a.scope.as_ref(), &mut h.run);
    let mut analysis = Analysis::new(&h);
    analysis.keep_records(true);
    let cpus = src.header().topology.cpus.iter().map(|c| c.cpu).collect();
    let tracks = Tracks::new(analysis.record_policies(), cpus);
    let mut ex = Exporter {
        out: Output::create(out, limit, a.force)?,
        analysis,
        tracks,
        tb,
        tasks: TaskTable::default(),
        bundles: Bundles::default(),
        named: HashSet::new(),
        parents: PidMap::default(),
        used: Vec::new(),
        now: 0,
        per_kind: Default::default(),
        packets: 0,
    };
    ex.now = ex.tb.start_boot();
    ex.preamble()?;
    super::drive(&mut src, &mut ex)?;
    ex.finish()?;
    let (per_kind, packets, instants) = (ex.per_kind, ex.packets, ex.tracks.instants);
    let files = ex.out.finish()?;
    for w in src.warnings() {
        crate::say(format_args!("warning: {w}"));
    }
    let events: u64 = per_kind.total();
    for (path, bytes) in &files {
        say!("wakeviz: wrote {} ({bytes} bytes)", path.display());
    }
    say!(
        "wakeviz: {packets} packets, {events} events: {} sched_switch, {} sched_waking, {} sched_migrate_task, {} sched_wakeup_new; {instants} placements on the wakeviz tracks",
        per_kind[Kind::Switch],
        per_kind[Kind::Waking],
        per_kind[Kind::Migrate],
        per_kind[Kind::WakeupNew],
    );
    Ok(if src.warnings().is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::driver::EXIT_DAMAGED)
    })
}

impl crate::driver::Sink for Exporter {
    fn on_batch(&mut self, b: &Batch) -> anyhow::Result<()> {
        self.write_batch(b)
    }
}

struct Exporter {
    out: Output,
    analysis: Analysis,
    tracks: Tracks,
    tb: TimeBase,
    tasks: TaskTable,
    bundles: Bundles,
    /// Tasks named in the current part (as they are named now).
    named: HashSet<u32>,
    /// pid -> the task that forked it (`sched_wakeup_new` fires in the parent), for the
    /// process tree's parent processes.
    parents: PidMap<u32>,
    /// Tasks the slice being written refers to: what a part cut inside it must name.
    used: Vec<u32>,
    /// BOOTTIME of the latest batch's first event: when names learnt now take effect.
    now: u64,
    per_kind: PerKind<u64>,
    packets: u64,
}

impl Exporter {
    /// What every part starts with, so each one loads on its own: the clock snapshot and the
    /// names of the tasks the slice being written uses. A part names only the tasks its own
    /// events use (re-emitting every name known so far made parts of tens of MB from a table
    /// of millions of names, whatever the size limit).
    fn preamble(&mut self) -> anyhow::Result<()> {
        let mut packets = vec![self.tb.snapshot_packet(SEQ_KERNEL)];
        self.named.clear();
        let used = std::mem::take(&mut self.used);
        packets.extend(self.name_new(&used));
        self.used = used;
        packets.extend(self.tracks.preamble(self.now));
        for p in &packets {
            self.out.write(&out::encode(p)?, true)?;
            self.packets += 1;
        }
        Ok(())
    }

    /// A ProcessTree packet naming those of `pids` not yet named in this part (and known).
    fn name_new(&mut self, pids: &[u32]) -> Option<TracePacket> {
        let fresh: Vec<TaskName> = pids
            .iter()
            .filter(|&&pid| self.named.insert(pid))
            .filter_map(|&pid| self.tasks.fact(pid))
            .collect();
        let (tasks, parents) = (&self.tasks, &self.parents);
        let parent_tgid = |pid| {
            let pp = *parents.get(&pid)?;
            Some(tasks.tgid(pp).unwrap_or(pp))
        };
        names::process_tree(&fresh, parent_tgid, self.now, SEQ_KERNEL)
    }

    fn emit(&mut self, p: &TracePacket) -> anyhow::Result<()> {
        self.emit_group(std::slice::from_ref(p))
    }

    /// Writes packets that belong together (a wakeup's instant and its run, joined by a flow)
    /// into the same part.
    fn emit_group(&mut self, group: &[TracePacket]) -> anyhow::Result<()> {
        let bytes = group
            .iter()
            .map(out::encode)
            .collect::<anyhow::Result<Vec<_>>>()?;
        let len: usize = bytes.iter().map(Vec::len).sum();
        if self.out.needs_new_part(len as u64) {
            self.out.next_part()?;
            self.preamble()?;
        }
        for b in &bytes {
            self.out.write(b, false)?;
        }
        self.packets += group.len() as u64;
        Ok(())
    }

    /// One recording chunk, in slices of [`SLICE_EVENTS`]: the kernel data and the wakeviz
    /// tracks of the same moment land close together in the file, so in the same part.
    fn write_batch(&mut self, b: &Batch) -> anyhow::Result<()> {
        for t in &b.tasks {
            if self.tasks.learn(*t) {
                // Named again, with the new name, where it is next used.
                self.named.remove(&t.pid);
            }
        }
        if let Some(first) = b.events.iter().map(|e| e.ts_ns()).min() {
            self.now = self.now.max(self.tb.boot(first));
        }
        let mut slices: Vec<&[Event]> = b.events.chunks(SLICE_EVENTS).collect();
        if slices.is_empty() {
            slices.push(&[]);
        }
        let last = slices.len() - 1;
        for (i, events) in slices.into_iter().enumerate() {
            let sub = Batch {
                tasks: if i == 0 { b.tasks.clone() } else { Vec::new() },
                events: events.to_vec(),
                schedstat: if i == 0 {
                    b.schedstat.clone()
                } else {
                    Vec::new()
                },
                stats: if i == last { b.stats.clone() } else { None },
            };
            self.on_slice(&sub)?;
        }
        Ok(())
    }

    fn on_slice(&mut self, b: &Batch) -> anyhow::Result<()> {
        for e in &b.events {
            if let Event::WakeupNew(w) = e {
                self.parents.insert(w.pid, w.waker_pid);
            }
        }
        let mut used: Vec<u32> = b.events.iter().flat_map(fields::pids).collect();
        used.sort_unstable();
        used.dedup();
        self.used = used;
        let used = std::mem::take(&mut self.used);
        let names = self.name_new(&used);
        self.used = used;
        if let Some(p) = names {
            self.emit(&p)?;
        }
        for e in &b.events {
            if self.bundles.push(e, &self.tasks, &self.tb) {
                self.per_kind[e.kind()] += 1;
            }
        }
        for p in self.bundles.flush(SEQ_KERNEL) {
            self.emit(&p)
                .context("writing the Perfetto trace (ftrace bundles)")?;
        }
        self.analysis.on_batch(b);
        self.records()?;
        let latest = b.events.iter().map(|e| e.ts_ns()).max();
        if let Some(t) = latest {
            self.now = self.now.max(self.tb.boot(t));
            for p in self.tracks.counters(latest, &self.tb) {
                self.emit(&p)?;
            }
        }
        Ok(())
    }

    /// The analysis's finished per-wakeup records as TrackEvents.
    fn records(&mut self) -> anyhow::Result<()> {
        let records: Vec<_> = self.analysis.drain_records().collect();
        for r in &records {
            let group = self.tracks.record(r, &self.tasks, &self.tb);
            self.emit_group(&group)
                .context("writing the Perfetto trace (wakeviz tracks)")?;
        }
        Ok(())
    }

    /// End of the stream: the records still waiting for a switch-in and the last bins.
    fn finish(&mut self) -> anyhow::Result<()> {
        self.analysis.flush_records();
        self.records()?;
        for p in self.tracks.counters(None, &self.tb) {
            self.emit(&p)?;
        }
        Ok(())
    }
}
