//! `--record FILE`: the recording sink of the driver, its safe creation, and the closing
//! summary of a capture.
use std::{
    fs::{File, OpenOptions},
    io::ErrorKind,
    os::unix::fs::OpenOptionsExt as _,
    path::{Path, PathBuf},
    time::Duration,
};

use anyhow::{Context as _, bail};
use wakeviz_core::{
    event::Kind,
    format::{CaptureStats, Header, Recorder, RecorderConfig},
    source::{Batch, EventSource},
};

use crate::driver::{Flow, Sink, Turn};

/// Checks, before anything is attached, that the recording can be created at `path`: not a
/// symbolic link, not an existing file unless `force`. [`create_file`] checks again when it
/// creates (the answer may have changed in between, and `O_EXCL | O_NOFOLLOW` settle it).
pub fn check_target(path: &Path, force: bool) -> anyhow::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => bail!(
            "{} is a symbolic link: refusing to record through it (remove it or pick another name)",
            path.display()
        ),
        Ok(m) if !m.is_file() => bail!("{} exists and is not a regular file", path.display()),
        Ok(_) if !force => bail!(
            "{} exists: refusing to overwrite it (--force keeps it as {} and records anew)",
            path.display(),
            old_name(path).display()
        ),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot check {}", path.display())),
    }
}

/// Creates the recording for root safely: never through a symbolic link (`O_NOFOLLOW`), never
/// over an existing file (`O_EXCL`; with `force` the old file is first renamed to `FILE.old`,
/// perf's convention, so it is kept, not lost), always mode 0600 whatever existed before (task
/// names can be sensitive).
pub fn create_file(path: &Path, force: bool) -> anyhow::Result<File> {
    check_target(path, force)?;
    if force && std::fs::symlink_metadata(path).is_ok() {
        let old = old_name(path);
        std::fs::rename(path, &old)
            .with_context(|| format!("cannot keep {} as {}", path.display(), old.display()))?;
        say!(
            "wakeviz: kept the existing {} as {}",
            path.display(),
            old.display()
        );
    }
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))
}

pub fn old_name(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".old");
    PathBuf::from(s)
}

/// Streams every batch to the file; counters are refreshed from the live source each turn
/// and the file is flushed at least every second (a chunk per `write`, so a `kill -9` or a
/// full disk leaves a file valid up to its last complete chunk).
pub struct RecordSink {
    rec: Recorder<File>,
    path: PathBuf,
    delivered: u64,
    stats: CaptureStats,
    /// A write failed (full disk, EFBIG over a file-size limit): the file is valid up to its
    /// last complete chunk and nothing more may be written to it.
    failed: bool,
}

impl RecordSink {
    /// Writes the header to `f`, created by [`create_file`].
    pub fn new(f: File, path: &Path, header: &Header) -> anyhow::Result<Self> {
        let rec = Recorder::new(f, header, RecorderConfig::default())
            .with_context(|| format!("writing the header of {}", path.display()))?;
        Ok(Self {
            rec,
            path: path.to_path_buf(),
            delivered: 0,
            stats: CaptureStats::default(),
            failed: false,
        })
    }

    fn err(&mut self, e: impl std::error::Error + Send + Sync + 'static) -> anyhow::Error {
        self.failed = true;
        anyhow::Error::new(e).context(format!("writing {}", self.path.display()))
    }

    /// Writes the END chunk with the final counters; returns the events and bytes the file
    /// holds. After a write error of its own nothing more is written: the file is valid up to
    /// its last complete chunk, and the figures count only what reached it. Any other way the
    /// run ended (a dead terminal, a failed drain, a signal) still gets its END chunk.
    pub fn finish(self) -> anyhow::Result<Written> {
        let events = self.rec.events_written();
        if self.failed {
            return Ok(Written {
                events,
                bytes: self.rec.bytes_written(),
            });
        }
        let mut stats = self.stats.clone();
        stats.delivered = self.delivered;
        let path = self.path.clone();
        let (_, bytes) = self
            .rec
            .finish(&stats)
            .with_context(|| format!("finishing {}", path.display()))?;
        Ok(Written {
            events: self.delivered,
            bytes,
        })
    }
}

/// What reached the file.
#[derive(Clone, Copy, Debug, Default)]
pub struct Written {
    pub events: u64,
    pub bytes: u64,
}

impl RecordSink {
    /// A write to the file failed.
    pub fn failed(&self) -> bool {
        self.failed
    }
}

impl Sink for RecordSink {
    fn on_batch(&mut self, b: &Batch) -> anyhow::Result<()> {
        for t in &b.tasks {
            self.rec.learn_task(*t);
        }
        for s in &b.schedstat {
            if let Err(e) = self.rec.schedstat(s) {
                return Err(self.err(e));
            }
        }
        for e in &b.events {
            if let Err(e) = self.rec.push(e) {
                return Err(self.err(e));
            }
        }
        self.delivered += b.events.len() as u64;
        if let Some(s) = &b.stats {
            self.stats = s.clone();
        }
        Ok(())
    }

    fn on_turn(&mut self, src: &dyn EventSource, _t: Turn) -> anyhow::Result<Flow> {
        if let Some(s) = src.stats() {
            self.stats = s.clone();
        }
        let mut s = self.stats.clone();
        s.delivered = self.delivered;
        self.rec.set_stats(&s);
        if let Err(e) = self.rec.tick() {
            return Err(self.err(e));
        }
        Ok(Flow::Continue)
    }
}

/// The closing summary of a live capture.
pub struct Summary<'a> {
    pub per_kind: wakeviz_core::event::PerKind<u64>,
    pub events: u64,
    pub elapsed: Duration,
    pub stats: &'a CaptureStats,
    pub written: Option<(&'a Path, Written)>,
}

impl Summary<'_> {
    pub fn text(&self) -> String {
        let secs = self.elapsed.as_secs_f64().max(1e-9);
        let mut s = format!(
            "captured {} events in {:.1} s ({:.0} events/s)",
            self.events,
            secs,
            self.events as f64 / secs
        );
        for k in Kind::ALL {
            s.push_str(&format!("\n  {:<20} {}", k.name(), self.per_kind[k]));
        }
        s.push_str(&format!(
            "\n  drops: {} in the kernel (ring buffer full), {} in userspace (consumer behind)",
            self.stats.kernel_drops, self.stats.user_drops
        ));
        s.push_str(&format!(
            "\n  missed: {} probe runs skipped by the kernel (BPF programs do not nest, e.g. an interrupt waking a task while a probe ran)",
            self.stats.probe_misses
        ));
        let offered: u64 = self.stats.offered.total();
        s.push_str(&format!(
            "\n  accounting: offered {offered} = delivered {} + dropped {} + undecodable {}",
            self.events,
            self.stats.drops(),
            self.stats.decode_errors
        ));
        if !self.stats.rings.is_empty() || self.stats.batches.is_some() {
            let n = self.stats.rings.len().max(1);
            s.push_str(&format!(
                "\n  merge: {n} ring{}, late {} (arrived behind the watermark, left out of the stream); events reached the analyses at most {:.0} ms after their probe ({:.0} ms at start-up)",
                if n == 1 { "" } else { "s" },
                self.stats.late_events,
                self.stats.max_hold_ns as f64 / 1e6,
                self.stats.startup_hold_ns as f64 / 1e6
            ));
            for (i, r) in self.stats.rings.iter().enumerate() {
                s.push_str(&format!(
                    "\n  ring {i} cpus {}: delivered {}, drops kernel {} userspace {}",
                    r.cpus, r.delivered, r.kernel_drops, r.user_drops
                ));
            }
        }
        if let Some(b) = &self.stats.batches {
            s.push_str(&format!("\n  {}", b.summary()));
        }
        if let Some((p, w)) = self.written {
            // Without events the file is all header and metadata: no per-event size to give.
            let per_event = if w.events == 0 {
                "n/a".to_string()
            } else {
                format!("{:.2}", w.bytes as f64 / w.events as f64)
            };
            s.push_str(&format!(
                "\n  wrote {} events, {} bytes to {} ({per_event} bytes/event)",
                w.events,
                w.bytes,
                p.display(),
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(events: u64, bytes: u64) -> String {
        let stats = CaptureStats::default();
        Summary {
            per_kind: Default::default(),
            events,
            elapsed: Duration::from_secs(1),
            stats: &stats,
            written: Some((Path::new("r.wvz"), Written { events, bytes })),
        }
        .text()
    }

    #[test]
    fn an_empty_recording_has_no_bytes_per_event() {
        let s = summary(0, 3000);
        assert!(
            s.contains("wrote 0 events, 3000 bytes to r.wvz (n/a bytes/event)"),
            "{s}"
        );
        let s = summary(4, 3000);
        assert!(s.contains("(750.00 bytes/event)"), "{s}");
    }
}
