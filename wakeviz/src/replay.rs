//! `--replay FILE` without a terminal: `--dump jsonl` and `--report`.
use std::{
    io::{BufWriter, Write},
    time::Duration,
};

use anyhow::Context as _;
use wakeviz_core::{
    dump,
    event::{Kind, TaskTable},
    source::{Batch, EventSource, Poll},
};

/// Feeds every batch of a finite source to `f`; returns the warnings met on the way.
pub fn for_each_batch(
    src: &mut dyn EventSource,
    mut f: impl FnMut(&Batch) -> anyhow::Result<()>,
) -> anyhow::Result<Vec<String>> {
    loop {
        match src.poll(Duration::ZERO)? {
            Poll::Batch(b) => f(&b)?,
            Poll::Pending => {}
            Poll::End => return Ok(src.warnings().to_vec()),
        }
    }
}

/// Writes one JSON line per event to stdout. A closed pipe (`| head`) ends quietly.
pub fn dump_jsonl(src: &mut dyn EventSource) -> anyhow::Result<Vec<String>> {
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut tasks = TaskTable::default();
    let r = for_each_batch(src, |b| {
        for t in &b.tasks {
            tasks.learn(*t);
        }
        dump::write_jsonl(&mut out, &b.events, &tasks).context("writing to stdout")
    });
    let flushed = out.flush();
    match r {
        Err(e) if is_broken_pipe(&e) => Ok(Vec::new()),
        Err(e) => Err(e),
        Ok(w) => {
            if let Err(e) = flushed
                && e.kind() != std::io::ErrorKind::BrokenPipe
            {
                return Err(e.into());
            }
            Ok(w)
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Per-kind counts of a recording (what `--record` printed at the end).
pub fn count(src: &mut dyn EventSource) -> anyhow::Result<([u64; 6], Vec<String>)> {
    let mut per = [0u64; 6];
    let w = for_each_batch(src, |b| {
        for e in &b.events {
            per[e.kind().index()] += 1;
        }
        Ok(())
    })?;
    Ok((per, w))
}

pub fn counts_text(per: &[u64; 6]) -> String {
    let total: u64 = per.iter().sum();
    let mut s = format!("{total} events");
    for k in Kind::ALL {
        s.push_str(&format!("\n  {:<20} {}", k.name(), per[k.index()]));
    }
    s
}
