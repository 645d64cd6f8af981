//! Sinks for a recording without a terminal: `--dump jsonl`, `--report`, and the per-kind counts
//! of a bare `--replay F`. The driver feeds them like any other sink.
use std::io::{BufWriter, ErrorKind, Stdout, Write};

use anyhow::Context as _;
use wakeviz_core::{
    analysis::Analysis,
    dump,
    event::{Kind, PerKind, TaskTable},
    source::Batch,
};

use crate::driver::Sink;

/// One JSON line per event on stdout, like `perf script`. A closed pipe (`| head`) ends the run
/// quietly ([`Dump::closed`]).
pub struct Dump {
    out: BufWriter<Stdout>,
    tasks: TaskTable,
    pub closed: bool,
}

impl Dump {
    /// Task-name entries dropped over the budget (the names of those tasks may be missing).
    pub fn evicted(&self) -> u64 {
        self.tasks.evicted()
    }

    pub fn new() -> Self {
        Self {
            out: BufWriter::with_capacity(1 << 16, std::io::stdout()),
            tasks: TaskTable::default(),
            closed: false,
        }
    }

    pub fn finish(mut self) -> anyhow::Result<()> {
        match self.out.flush() {
            Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
            r => r.context("writing to stdout"),
        }
    }
}

impl Sink for Dump {
    fn on_batch(&mut self, b: &Batch) -> anyhow::Result<()> {
        for t in &b.tasks {
            self.tasks.learn(*t);
        }
        match dump::write_jsonl(&mut self.out, &b.events, &self.tasks) {
            Err(e) if e.kind() == ErrorKind::BrokenPipe => {
                self.closed = true;
                Err(e.into())
            }
            r => r.context("writing to stdout"),
        }
    }
}

/// The analyses, for `--report`.
impl Sink for Analysis {
    fn on_batch(&mut self, b: &Batch) -> anyhow::Result<()> {
        Analysis::on_batch(self, b);
        Ok(())
    }
}

/// Per-kind counts of what was delivered.
#[derive(Debug, Default)]
pub struct Counter(pub PerKind<u64>);

impl Sink for Counter {
    fn on_batch(&mut self, b: &Batch) -> anyhow::Result<()> {
        for e in &b.events {
            self.0[e.kind()] += 1;
        }
        Ok(())
    }
}

pub fn counts_text(per: &PerKind<u64>) -> String {
    let total = per.total();
    let mut s = format!("{total} events");
    for k in Kind::ALL {
        s.push_str(&format!("\n  {:<20} {}", k.name(), per[k]));
    }
    s
}
