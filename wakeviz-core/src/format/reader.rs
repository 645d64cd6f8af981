use std::{
    fs::File,
    io::{BufReader, ErrorKind, Read},
    path::{Path, PathBuf},
};

use super::{
    FormatError,
    chunk::{self, ChunkHeader},
    codec::{self, Cursor},
    header::{CaptureStats, FORMAT_VERSION, Header, MAGIC},
};
use crate::event::{Comm, Event, TaskName};

/// One decoded chunk.
#[derive(Clone, Debug, PartialEq)]
pub enum ChunkPayload {
    Tasks(Vec<TaskName>),
    Events(Vec<Event>),
    Stats(CaptureStats),
    End(CaptureStats),
}

/// Reads a recording chunk by chunk. Memory is one chunk at a time.
pub struct Reader<R: Read> {
    inner: R,
    path: PathBuf,
    header: Header,
    offset: u64,
    index: u64,
    done: bool,
    stored: Vec<u8>,
    /// Reused across chunks: a fresh zstd context and output buffer per chunk cost a tenth of
    /// the decoding time.
    raw: Vec<u8>,
    zstd: Option<zstd::bulk::Decompressor<'static>>,
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

impl Reader<BufReader<File>> {
    pub fn open(path: &Path) -> Result<Self, FormatError> {
        let f = File::open(path).map_err(|source| FormatError::Io {
            path: path.to_owned(),
            source,
        })?;
        Self::new(BufReader::with_capacity(1 << 20, f), path)
    }
}

impl<R: Read> Reader<R> {
    /// Reads and checks the preamble and header; `path` is used in error messages.
    pub fn new(mut inner: R, path: &Path) -> Result<Self, FormatError> {
        let path = path.to_owned();
        let io = |source| FormatError::Io {
            path: path.clone(),
            source,
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
        let len = u32_at(12);
        if len > chunk::MAX_RAW_LEN {
            return Err(FormatError::BadHeader {
                path,
                offset: 12,
                msg: format!("implausible header length {len}"),
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
        let header = Header {
            topology: header.topology.clone().finish(),
            ..header
        };
        Ok(Self {
            inner,
            path,
            header,
            offset: 20 + u64::from(len),
            index: 0,
            done: false,
            stored: Vec::new(),
            raw: Vec::new(),
            zstd: None,
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
            Ok(Some(ChunkPayload::End(_))) => self.done = true,
            Ok(Some(_)) => {}
        }
        r.transpose()
    }

    fn read_chunk(&mut self) -> Result<Option<ChunkPayload>, FormatError> {
        let mut hb = [0u8; chunk::HEADER_LEN];
        let n = read_full(&mut self.inner, &mut hb).map_err(|source| FormatError::Io {
            path: self.path.clone(),
            source,
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
        self.stored.resize(h.stored_len as usize, 0);
        let got =
            read_full(&mut self.inner, &mut self.stored).map_err(|source| FormatError::Io {
                path: self.path.clone(),
                source,
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
                let mut tasks = Vec::with_capacity(h.count.min(1 << 20) as usize);
                for _ in 0..h.count {
                    let pid = u32::try_from(c.varint().map_err(|m| self.bad(m))?)
                        .map_err(|_| self.bad("pid out of range"))?;
                    let len = c.byte().map_err(|m| self.bad(m))? as usize;
                    if len > 16 {
                        return Err(self.bad("task name longer than 16 bytes"));
                    }
                    let mut comm = [0u8; 16];
                    comm[..len].copy_from_slice(c.bytes(len).map_err(|m| self.bad(m))?);
                    tasks.push(TaskName {
                        pid,
                        comm: Comm(comm),
                    });
                }
                ChunkPayload::Tasks(tasks)
            }
            chunk::KIND_EVENTS => {
                let mut evs = Vec::new();
                codec::decode(&raw, h.count, &mut evs).map_err(|m| self.bad(m))?;
                ChunkPayload::Events(evs)
            }
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
