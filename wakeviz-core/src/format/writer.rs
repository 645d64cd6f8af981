use std::{
    io::Write,
    time::{Duration, Instant},
};

use super::{
    FormatError,
    chunk::{self, ChunkHeader},
    codec::put_varint,
    columns::Encoder,
    header::{CaptureStats, FORMAT_VERSION, Header, MAGIC},
};
use crate::event::{Event, SchedstatSample, TaskName, TaskTable};

#[derive(Clone, Debug)]
pub struct RecorderConfig {
    /// Events per chunk before a flush is forced.
    pub chunk_events: u32,
    /// Longest time events may wait in memory: bounds what a crash loses.
    pub flush_interval: Duration,
    pub zstd_level: i32,
}

impl Default for RecorderConfig {
    fn default() -> Self {
        Self {
            chunk_events: 1 << 16,
            flush_interval: Duration::from_secs(1),
            zstd_level: 3,
        }
    }
}

/// Streams a recording to `W`. Memory is one pending chunk plus the task dictionary, whatever
/// the length of the recording. Every chunk goes out in one `write_all`, so a crash or a full
/// disk leaves at worst one torn chunk at the end, which readers drop.
pub struct Recorder<W: Write> {
    out: W,
    cfg: RecorderConfig,
    enc: Encoder,
    known: TaskTable,
    pending_tasks: Vec<TaskName>,
    stats: CaptureStats,
    last_flush: Instant,
    bytes: u64,
    events: u64,
    /// Events in chunks that were written whole: what the file holds after a write error.
    events_on_file: u64,
    frame: Vec<u8>,
    /// The pending chunk's payload, laid out at flush.
    payload: Vec<u8>,
}

impl<W: Write> Recorder<W> {
    pub fn new(mut out: W, header: &Header, mut cfg: RecorderConfig) -> Result<Self, FormatError> {
        // Readers refuse bigger chunks.
        cfg.chunk_events = cfg.chunk_events.min(chunk::MAX_CHUNK_ENTRIES);
        // The layout of the chunks is this writer's, whatever version the caller's header names
        // (a header built for an older format would otherwise contradict the preamble).
        let header = Header {
            format_version: FORMAT_VERSION,
            ..header.clone()
        };
        let json = serde_json::to_vec(&header).map_err(|e| FormatError::Write(e.into()))?;
        let mut pre = Vec::with_capacity(20 + json.len());
        pre.extend_from_slice(MAGIC);
        pre.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        pre.extend_from_slice(&(json.len() as u32).to_le_bytes());
        pre.extend_from_slice(&crc32fast::hash(&json).to_le_bytes());
        pre.extend_from_slice(&json);
        out.write_all(&pre).map_err(FormatError::Write)?;
        out.flush().map_err(FormatError::Write)?;
        Ok(Self {
            out,
            cfg,
            enc: Encoder::default(),
            known: TaskTable::default(),
            pending_tasks: Vec::new(),
            stats: CaptureStats::default(),
            last_flush: Instant::now(),
            bytes: pre.len() as u64,
            events: 0,
            events_on_file: 0,
            frame: Vec::new(),
            payload: Vec::new(),
        })
    }

    /// Notes a task name; only new or changed names reach the file.
    pub fn learn_task(&mut self, t: TaskName) {
        if self.known.learn(t)
            && let Some(known) = self.known.fact(t.pid)
        {
            self.pending_tasks.push(known);
        }
    }

    /// Appends an event; flushes when the chunk is full or the flush interval has passed.
    pub fn push(&mut self, e: &Event) -> Result<(), FormatError> {
        self.enc.push(e);
        self.events += 1;
        if self.enc.count >= self.cfg.chunk_events {
            self.flush()?;
        }
        Ok(())
    }

    /// Records the latest cumulative capture counters (written with the next flush).
    pub fn set_stats(&mut self, s: &CaptureStats) {
        self.stats = s.clone();
    }

    /// Writes a `/proc/schedstat` sample after everything pushed so far, so a replay delivers
    /// it where the live stream did.
    pub fn schedstat(&mut self, s: &SchedstatSample) -> Result<(), FormatError> {
        self.flush()?;
        let mut raw = Vec::with_capacity(8 + s.text.len());
        raw.extend_from_slice(&s.ts_ns.to_le_bytes());
        raw.extend_from_slice(s.text.as_bytes());
        self.write_chunk(chunk::KIND_SCHEDSTAT, &raw, 1)?;
        self.out.flush().map_err(FormatError::Write)
    }

    /// Flushes if the flush interval has passed; call this periodically even when idle.
    pub fn tick(&mut self) -> Result<(), FormatError> {
        if self.last_flush.elapsed() >= self.cfg.flush_interval {
            self.flush()?;
        }
        Ok(())
    }

    fn write_chunk(&mut self, kind: u8, raw: &[u8], count: u32) -> Result<(), FormatError> {
        let (codec, stored) = if raw.len() > 64 {
            let z = zstd::bulk::compress(raw, self.cfg.zstd_level).map_err(FormatError::Write)?;
            (chunk::CODEC_ZSTD, z)
        } else {
            (chunk::CODEC_RAW, raw.to_vec())
        };
        let h = ChunkHeader::seal(kind, codec, raw.len() as u32, count, &stored);
        self.frame.clear();
        self.frame.extend_from_slice(&h.to_bytes());
        self.frame.extend_from_slice(&stored);
        self.out
            .write_all(&self.frame)
            .map_err(FormatError::Write)?;
        self.bytes += self.frame.len() as u64;
        Ok(())
    }

    /// Writes pending task names, events and counters as chunks and flushes the writer.
    pub fn flush(&mut self) -> Result<(), FormatError> {
        self.last_flush = Instant::now();
        if !self.pending_tasks.is_empty() {
            let mut raw = Vec::with_capacity(self.pending_tasks.len() * 12);
            for t in &self.pending_tasks {
                put_varint(&mut raw, u64::from(t.pid));
                let len = t.comm.0.iter().position(|&b| b == 0).unwrap_or(16);
                raw.push(len as u8);
                raw.extend_from_slice(&t.comm.0[..len]);
                put_varint(&mut raw, u64::from(t.tgid));
                put_varint(&mut raw, t.cgroup);
            }
            let n = self.pending_tasks.len() as u32;
            self.write_chunk(chunk::KIND_TASKS, &raw, n)?;
            self.pending_tasks.clear();
        }
        if self.enc.count > 0 {
            let n = self.enc.count;
            let mut buf = std::mem::take(&mut self.payload);
            buf.clear();
            self.enc.finish(&mut buf);
            let r = self.write_chunk(chunk::KIND_EVENTS, &buf, n);
            self.payload = buf;
            r?;
            self.events_on_file += u64::from(n);
        }
        let stats = serde_json::to_vec(&self.stats).map_err(|e| FormatError::Write(e.into()))?;
        self.write_chunk(chunk::KIND_STATS, &stats, 0)?;
        self.out.flush().map_err(FormatError::Write)
    }

    /// Flushes everything and writes the END chunk with the final counters.
    pub fn finish(mut self, stats: &CaptureStats) -> Result<(W, u64), FormatError> {
        self.stats = stats.clone();
        self.flush()?;
        let end = serde_json::to_vec(stats).map_err(|e| FormatError::Write(e.into()))?;
        self.write_chunk(chunk::KIND_END, &end, 0)?;
        self.out.flush().map_err(FormatError::Write)?;
        Ok((self.out, self.bytes))
    }

    /// Bytes written so far (preamble, header and chunks).
    pub fn bytes_written(&self) -> u64 {
        self.bytes
    }

    /// Events pushed so far (some may still wait in the pending chunk).
    pub fn events_pushed(&self) -> u64 {
        self.events
    }

    /// Events in chunks written whole: after a write error, what the file really holds.
    pub fn events_written(&self) -> u64 {
        self.events_on_file
    }

    pub fn get_ref(&self) -> &W {
        &self.out
    }
}
