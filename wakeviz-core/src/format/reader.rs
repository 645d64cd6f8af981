use std::{
    fs::File,
    io::{BufReader, ErrorKind, Read},
    path::{Path, PathBuf},
};

use super::{
    FormatError,
    chunk::{self, ChunkHeader},
    codec::{self, Cursor},
    columns,
    header::{
        CGROUP_SINCE, CaptureStats, FORMAT_VERSION, Header, MAGIC, SCHEDSTAT_SINCE, TGID_SINCE,
    },
};
use crate::event::{Comm, Event, SchedstatSample, Select, TaskName};

/// Longest JSON header accepted. A header with the largest topology allowed
/// ([`crate::topology::MAX_CPUS`] CPUs, [`crate::topology::MAX_NODES`] nodes with their distance
/// table) stays well below it; a real one is a few kilobytes to a few hundred.
pub const MAX_HEADER_LEN: u32 = 8 << 20;
/// Smallest encoding of a task-name entry: a one-byte pid varint and a zero length.
const MIN_TASK_BYTES: usize = 2;

/// One decoded chunk.
#[derive(Clone, Debug, PartialEq)]
pub enum ChunkPayload {
    Tasks(Vec<TaskName>),
    Events(Vec<Event>),
    Stats(CaptureStats),
    End(CaptureStats),
    Schedstat(SchedstatSample),
}

/// Reads a recording chunk by chunk. Memory is one chunk at a time.
pub struct Reader<R: Read> {
    inner: R,
    path: PathBuf,
    header: Header,
    /// The preamble's format version: it names the layout of the `EVENTS` payloads (1 = rows
    /// of varints, [`codec`]; 2 = columns, [`columns`]).
    version: u32,
    offset: u64,
    index: u64,
    done: bool,
    /// Bytes found after the END chunk (counted, not read into memory), once END was reached.
    trailing: Option<u64>,
    stored: Vec<u8>,
    /// Reused across chunks: a fresh zstd context and output buffer per chunk cost a tenth of
    /// the decoding time.
    raw: Vec<u8>,
    zstd: Option<zstd::bulk::Decompressor<'static>>,
    /// Handed back by [`Reader::recycle`]: the next chunk is decoded over it, so a replay stops
    /// allocating (and faulting in) a vector and a box per select record on every chunk.
    spare_events: Vec<Event>,
    /// Select boxes freed by that overwrite (a select slot that now holds another event).
    #[expect(
        clippy::vec_box,
        reason = "the boxes move into `Event::Select` as they are"
    )]
    spare_selects: Vec<Box<Select>>,
    /// The widened columns of the last format-2 chunk, reused.
    columns: columns::Scratch,
}

/// Fills `buf` completely; returns how many bytes were read before EOF.
fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Opens `path` for reading without blocking on a FIFO that has no writer (`O_NONBLOCK`), then
/// refuses anything but a regular file: a FIFO would hang a replay, a device (`/dev/zero`)
/// would feed it forever. The check is on the opened descriptor (`fstat`), so the file cannot be
/// swapped between the check and the read.
pub(crate) fn open_regular(path: &Path) -> Result<File, FormatError> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let io = |err| FormatError::Io {
        path: path.to_owned(),
        err,
    };
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(io)?;
    let ft = f.metadata().map_err(io)?.file_type();
    if ft.is_file() {
        return Ok(f);
    }
    let kind = if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "not a file"
    };
    Err(FormatError::NotRegular {
        path: path.to_owned(),
        kind,
    })
}

impl Reader<BufReader<File>> {
    pub fn open(path: &Path) -> Result<Self, FormatError> {
        let f = open_regular(path)?;
        Self::new(BufReader::with_capacity(1 << 20, f), path)
    }
}

impl<R: Read> Reader<R> {
    /// Reads and checks the preamble and header; `path` is used in error messages.
    pub fn new(mut inner: R, path: &Path) -> Result<Self, FormatError> {
        let path = path.to_owned();
        let io = |err| FormatError::Io {
            path: path.clone(),
            err,
        };
        let mut pre = [0u8; 20];
        let n = read_full(&mut inner, &mut pre).map_err(io)?;
        if n >= 8 && &pre[..8] != MAGIC || n < 8 && pre[..n] != MAGIC[..n] {
            return Err(FormatError::NotWakeviz { path });
        }
        if n < 20 {
            return Err(FormatError::Truncated {
                path,
                what: "preamble",
                offset: n as u64,
            });
        }
        let u32_at = |o: usize| u32::from_le_bytes([pre[o], pre[o + 1], pre[o + 2], pre[o + 3]]);
        let version = u32_at(8);
        if version > FORMAT_VERSION {
            return Err(FormatError::NewerVersion {
                path,
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        if version == 0 {
            return Err(FormatError::BadVersion {
                path,
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let len = u32_at(12);
        if len > MAX_HEADER_LEN {
            return Err(FormatError::BadHeader {
                path,
                offset: 12,
                msg: format!("header length {len} is beyond the limit of {MAX_HEADER_LEN} bytes"),
            });
        }
        let mut json = vec![0u8; len as usize];
        let got = read_full(&mut inner, &mut json).map_err(io)?;
        if got < json.len() {
            return Err(FormatError::Truncated {
                path,
                what: "header",
                offset: 20 + got as u64,
            });
        }
        if crc32fast::hash(&json) != u32_at(16) {
            return Err(FormatError::BadHeader {
                path,
                offset: 20,
                msg: "checksum mismatch".into(),
            });
        }
        let header: Header = serde_json::from_slice(&json).map_err(|e| FormatError::BadHeader {
            path: path.clone(),
            offset: 20,
            msg: e.to_string(),
        })?;
        if header.format_version != version {
            return Err(FormatError::BadHeader {
                path,
                offset: 20,
                msg: format!(
                    "header format_version {} differs from the preamble's {version}",
                    header.format_version
                ),
            });
        }
        header
            .topology
            .validate()
            .map_err(|msg| FormatError::BadHeader {
                path: path.clone(),
                offset: 20,
                msg: format!("topology: {msg}"),
            })?;
        let header = Header {
            topology: header.topology.clone().finish(),
            ..header
        };
        Ok(Self {
            inner,
            path,
            header,
            version,
            offset: 20 + u64::from(len),
            index: 0,
            done: false,
            trailing: None,
            stored: Vec::new(),
            raw: Vec::new(),
            zstd: None,
            spare_events: Vec::new(),
            spare_selects: Vec::new(),
            columns: columns::Scratch::default(),
        })
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Byte offset of the next chunk.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Index of the next chunk.
    pub fn chunk_index(&self) -> u64 {
        self.index
    }

    /// How many bytes follow the END chunk, once it was read and something does; such bytes
    /// are never decoded (the writer puts nothing there), but a replay says they exist.
    pub fn trailing_bytes(&self) -> Option<u64> {
        self.trailing.filter(|&n| n > 0)
    }

    /// Takes back a chunk's events once the caller is done with them; optional (without it
    /// every chunk allocates anew). The next chunk is decoded over them, reusing the vector
    /// and the select records' boxes (see [`codec::decode`]). One vector is kept, the
    /// largest: memory stays bounded by the largest chunk, live during its decoding anyway.
    pub fn recycle(&mut self, events: Vec<Event>) {
        if events.capacity() >= self.spare_events.capacity() {
            self.spare_events = events;
        }
    }

    fn bad(&self, msg: impl Into<String>) -> FormatError {
        FormatError::BadChunk {
            path: self.path.clone(),
            index: self.index,
            offset: self.offset,
            msg: msg.into(),
        }
    }

    /// The next chunk; `None` at a clean end. After an error, iteration stops: everything
    /// returned before it is intact (checksummed).
    pub fn next_chunk(&mut self) -> Option<Result<ChunkPayload, FormatError>> {
        if self.done {
            return None;
        }
        let r = self.read_chunk();
        match &r {
            Ok(None) | Err(_) => self.done = true,
            Ok(Some(ChunkPayload::End(_))) => {
                self.done = true;
                // Count, in bounded memory, whatever follows END; a read error just ends the count.
                let mut rest = (&mut self.inner).take(u64::MAX);
                self.trailing = std::io::copy(&mut rest, &mut std::io::sink()).ok();
            }
            Ok(Some(_)) => {}
        }
        r.transpose()
    }

    fn read_chunk(&mut self) -> Result<Option<ChunkPayload>, FormatError> {
        let mut hb = [0u8; chunk::HEADER_LEN];
        let n = read_full(&mut self.inner, &mut hb).map_err(|err| FormatError::Io {
            path: self.path.clone(),
            err,
        })?;
        if n == 0 {
            return Ok(None);
        }
        if n < hb.len() {
            return Err(FormatError::Truncated {
                path: self.path.clone(),
                what: "chunk header",
                offset: self.offset,
            });
        }
        let h = ChunkHeader::parse(&hb).map_err(|m| self.bad(m))?;
        // `count` is a claim: check it against the per-chunk limit and against what `raw_len`
        // bytes can hold before anything is sized from it.
        let min_entry = match h.kind {
            chunk::KIND_EVENTS => codec::MIN_EVENT_BYTES,
            chunk::KIND_TASKS => MIN_TASK_BYTES,
            _ => 0,
        };
        if min_entry > 0 {
            if h.count > chunk::MAX_CHUNK_ENTRIES {
                return Err(self.bad(format!(
                    "claims {} entries, beyond the limit of {} per chunk",
                    h.count,
                    chunk::MAX_CHUNK_ENTRIES
                )));
            }
            if u64::from(h.count) * min_entry as u64 > u64::from(h.raw_len) {
                return Err(self.bad(format!("claims {} entries in {} bytes", h.count, h.raw_len)));
            }
        }
        self.stored.resize(h.stored_len as usize, 0);
        let got = read_full(&mut self.inner, &mut self.stored).map_err(|err| FormatError::Io {
            path: self.path.clone(),
            err,
        })?;
        if got < self.stored.len() {
            return Err(FormatError::Truncated {
                path: self.path.clone(),
                what: "chunk payload",
                offset: self.offset,
            });
        }
        if h.crc_of(&self.stored) != h.crc {
            return Err(self.bad("checksum mismatch"));
        }
        let mut raw = std::mem::take(&mut self.raw);
        if h.codec == chunk::CODEC_ZSTD {
            let dctx = match &mut self.zstd {
                Some(d) => d,
                None => {
                    let d = zstd::bulk::Decompressor::new()
                        .map_err(|e| self.bad(format!("zstd: {e}")))?;
                    self.zstd.insert(d)
                }
            };
            raw.clear();
            raw.reserve(h.raw_len as usize);
            if let Err(e) = dctx.decompress_to_buffer(&self.stored, &mut raw) {
                return Err(self.bad(format!("zstd: {e}")));
            }
            if raw.len() != h.raw_len as usize {
                return Err(self.bad("decompressed length mismatch"));
            }
        } else {
            std::mem::swap(&mut raw, &mut self.stored);
        }
        let payload = match h.kind {
            chunk::KIND_TASKS => {
                let mut c = Cursor::new(&raw);
                let mut tasks = Vec::with_capacity(h.count as usize);
                for _ in 0..h.count {
                    let pid = u32::try_from(c.varint().map_err(|m| self.bad(m))?)
                        .map_err(|_| self.bad("pid out of range"))?;
                    let len = c.byte().map_err(|m| self.bad(m))? as usize;
                    if len > 16 {
                        return Err(self.bad("task name longer than 16 bytes"));
                    }
                    let mut comm = [0u8; 16];
                    comm[..len].copy_from_slice(c.bytes(len).map_err(|m| self.bad(m))?);
                    let tgid = if self.version >= TGID_SINCE {
                        u32::try_from(c.varint().map_err(|m| self.bad(m))?)
                            .map_err(|_| self.bad("tgid out of range"))?
                    } else {
                        0
                    };
                    let cgroup = if self.version >= CGROUP_SINCE {
                        c.varint().map_err(|m| self.bad(m))?
                    } else {
                        0
                    };
                    tasks.push(TaskName {
                        pid,
                        comm: Comm(comm),
                        tgid,
                        cgroup,
                    });
                }
                ChunkPayload::Tasks(tasks)
            }
            chunk::KIND_EVENTS => {
                let mut evs = std::mem::take(&mut self.spare_events);
                let (spare, scratch) = (&mut self.spare_selects, &mut self.columns);
                let r = if self.version == 1 {
                    codec::decode(&raw, h.count, &mut evs, spare)
                } else {
                    columns::decode(&raw, h.count, self.version, &mut evs, spare, scratch)
                };
                r.map_err(|m| self.bad(m))?;
                ChunkPayload::Events(evs)
            }
            chunk::KIND_SCHEDSTAT => ChunkPayload::Schedstat(self.schedstat(&raw, h.count)?),
            kind => {
                let s: CaptureStats =
                    serde_json::from_slice(&raw).map_err(|e| self.bad(format!("counters: {e}")))?;
                if kind == chunk::KIND_END {
                    ChunkPayload::End(s)
                } else {
                    ChunkPayload::Stats(s)
                }
            }
        };
        self.raw = raw;
        self.offset += (chunk::HEADER_LEN + h.stored_len as usize) as u64;
        self.index += 1;
        Ok(Some(payload))
    }
}

impl<R: Read> Reader<R> {
    /// A `SCHEDSTAT` payload: its time, then the file's text (UTF-8, as the kernel writes it).
    fn schedstat(&self, raw: &[u8], count: u32) -> Result<SchedstatSample, FormatError> {
        if self.version < SCHEDSTAT_SINCE {
            return Err(self.bad(format!(
                "schedstat chunk in a format-{} recording (they exist from format {SCHEDSTAT_SINCE})",
                self.version
            )));
        }
        if count != 1 {
            return Err(self.bad(format!("schedstat chunk claims {count} samples, not 1")));
        }
        let (Some(ts), Some(text)) = (raw.get(..8), raw.get(8..)) else {
            return Err(self.bad("schedstat chunk shorter than its 8-byte time"));
        };
        let mut b = [0u8; 8];
        b.copy_from_slice(ts);
        let text = std::str::from_utf8(text)
            .map_err(|e| self.bad(format!("schedstat text is not UTF-8: {e}")))?;
        Ok(SchedstatSample {
            ts_ns: u64::from_le_bytes(b),
            text: text.to_owned(),
        })
    }
}

/// Reads a whole recording into memory (tests, small files). The error, if any, is what stopped
/// the reading after the returned chunks.
pub fn read_all(
    path: &Path,
) -> Result<(Header, Vec<ChunkPayload>, Option<FormatError>), FormatError> {
    let mut r = Reader::open(path)?;
    let mut chunks = Vec::new();
    let mut err = None;
    while let Some(c) = r.next_chunk() {
        match c {
            Ok(c) => chunks.push(c),
            Err(e) => err = Some(e),
        }
    }
    Ok((r.header().clone(), chunks, err))
}
