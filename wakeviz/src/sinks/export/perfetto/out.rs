//! The trace file(s): packets appended as `Trace.packet` fields (a Perfetto trace is just
//! that sequence), cut into numbered parts when a size limit is set. Parts are written at
//! temporary names and moved into place together at the end, so a failed export leaves none.
use std::{
    fs::File,
    io::{BufWriter, Write as _},
    path::{Path, PathBuf},
};

use anyhow::Context as _;
use perfetto_protos::trace_packet::TracePacket;
use protobuf::CodedOutputStream;

use crate::sinks::{export::atomic, record};

/// `Trace.packet`.
const TRACE_PACKET_FIELD: u32 = 1;

/// `OUT.pftrace` part `n` is `OUT.n.pftrace`; a name without extension gets `.n` appended.
pub fn part_path(out: &Path, n: u32) -> PathBuf {
    match (out.file_stem(), out.extension()) {
        (Some(stem), Some(ext)) => {
            let mut name = stem.to_owned();
            name.push(format!(".{n}."));
            name.push(ext);
            out.with_file_name(name)
        }
        _ => {
            let mut s = out.as_os_str().to_owned();
            s.push(format!(".{n}"));
            PathBuf::from(s)
        }
    }
}

/// One packet as it goes into the file (tag, length, body).
pub fn encode(p: &TracePacket) -> anyhow::Result<Vec<u8>> {
    let mut buf = Vec::new();
    {
        let mut os = CodedOutputStream::vec(&mut buf);
        os.write_message(TRACE_PACKET_FIELD, p)
            .context("encoding a trace packet")?;
        os.flush().context("encoding a trace packet")?;
    }
    Ok(buf)
}

/// Where packets go. `limit` is the most bytes one part may hold (a part that starts with a
/// packet larger than that still gets it: packets are never split).
pub struct Output {
    out: PathBuf,
    limit: Option<u64>,
    force: bool,
    file: BufWriter<File>,
    path: PathBuf,
    /// The current part's temporary file.
    pending: atomic::Pending,
    /// Finished parts, waiting for [`Output::finish`].
    done: Vec<atomic::Pending>,
    part: u32,
    /// Bytes in the current part.
    bytes: u64,
    /// Bytes in the current part that are not its preamble: a part is never cut before it
    /// carries any data.
    data_bytes: u64,
    /// Every file written, with its size, in order.
    pub written: Vec<(PathBuf, u64)>,
}

impl Output {
    /// Checks that no output will be overwritten before anything is read: the single file,
    /// or with a limit the first part (later parts are checked as they are created).
    pub fn check(out: &Path, limit: Option<u64>, force: bool) -> anyhow::Result<()> {
        let first = if limit.is_some() {
            part_path(out, 1)
        } else {
            out.to_path_buf()
        };
        record::check_target(&first, force)
    }

    pub fn create(out: &Path, limit: Option<u64>, force: bool) -> anyhow::Result<Self> {
        let path = if limit.is_some() {
            part_path(out, 1)
        } else {
            out.to_path_buf()
        };
        let (file, pending) = atomic::create(&path)?;
        Ok(Self {
            out: out.to_path_buf(),
            limit,
            force,
            file: BufWriter::with_capacity(1 << 20, file),
            path,
            pending,
            done: Vec::new(),
            part: 1,
            bytes: 0,
            data_bytes: 0,
            written: Vec::new(),
        })
    }

    /// Whether `len` more bytes of data would overflow the current part.
    pub fn needs_new_part(&self, len: u64) -> bool {
        self.limit
            .is_some_and(|l| self.data_bytes > 0 && self.bytes + len > l)
    }

    /// Closes the current part and opens the next; the caller writes its preamble.
    pub fn next_part(&mut self) -> anyhow::Result<()> {
        self.part += 1;
        let path = part_path(&self.out, self.part);
        // Checked now, before more is written: a later part that exists is refused early.
        record::check_target(&path, self.force)?;
        let (file, pending) = atomic::create(&path)?;
        self.close_current()?;
        self.path = path;
        self.file = BufWriter::with_capacity(1 << 20, file);
        self.done
            .push(std::mem::replace(&mut self.pending, pending));
        self.bytes = 0;
        self.data_bytes = 0;
        Ok(())
    }

    /// Appends encoded packet bytes; `preamble` bytes do not count as data.
    pub fn write(&mut self, bytes: &[u8], preamble: bool) -> anyhow::Result<()> {
        self.file
            .write_all(bytes)
            .with_context(|| format!("writing {}", self.path.display()))?;
        self.bytes += bytes.len() as u64;
        if !preamble {
            self.data_bytes += bytes.len() as u64;
        }
        Ok(())
    }

    fn close_current(&mut self) -> anyhow::Result<()> {
        self.file
            .flush()
            .and_then(|()| self.file.get_ref().sync_all())
            .with_context(|| format!("writing {}", self.path.display()))?;
        self.written.push((self.path.clone(), self.bytes));
        Ok(())
    }

    /// Flushes the last part and moves every part into place; returns every file written
    /// with its size.
    pub fn finish(mut self) -> anyhow::Result<Vec<(PathBuf, u64)>> {
        self.close_current()?;
        let Self {
            pending,
            mut done,
            written,
            force,
            ..
        } = self;
        done.push(pending);
        for p in done {
            p.commit(force)?;
        }
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_names() {
        assert_eq!(
            part_path(Path::new("/t/out.pftrace"), 2),
            Path::new("/t/out.2.pftrace")
        );
        assert_eq!(part_path(Path::new("trace"), 1), Path::new("trace.1"));
        assert_eq!(
            part_path(Path::new("a.b.pftrace"), 10),
            Path::new("a.b.10.pftrace")
        );
    }

    #[test]
    fn cuts_only_after_data_and_refuses_existing_parts() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("t.pftrace");
        Output::check(&out, Some(10), false).unwrap();
        let mut o = Output::create(&out, Some(10), false).unwrap();
        o.write(&[0; 8], true).unwrap();
        // Preamble only: never cut, even past the limit.
        assert!(!o.needs_new_part(20));
        o.write(&[0; 4], false).unwrap();
        assert!(o.needs_new_part(1));
        o.next_part().unwrap();
        assert!(!o.needs_new_part(100));
        o.write(&[1; 3], false).unwrap();
        let files = o.finish().unwrap();
        assert_eq!(
            files,
            [
                (d.path().join("t.1.pftrace"), 12),
                (d.path().join("t.2.pftrace"), 3)
            ]
        );
        let e = Output::check(&out, Some(10), false).unwrap_err();
        assert!(e.to_string().contains("t.1.pftrace exists"), "{e}");
        assert!(Output::check(&out, None, false).is_ok());
    }
}
