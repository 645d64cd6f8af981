//! The one event-stream interface: live capture and replay both implement [`EventSource`], so
//! every analysis, view and report runs the same code on both.
use std::{io::Read, time::Duration};

use crate::{
    event::{Event, SchedstatSample, TaskName},
    format::{CaptureStats, ChunkPayload, FormatError, Header, Reader},
};

/// What a source delivers in one go.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Batch {
    /// Names learnt since the previous batch; apply before `events`.
    pub tasks: Vec<TaskName>,
    pub events: Vec<Event>,
    /// `/proc/schedstat` samples taken before `events` were read; apply before `events`.
    pub schedstat: Vec<SchedstatSample>,
    /// Latest cumulative capture counters, when they changed.
    pub stats: Option<CaptureStats>,
}

#[derive(Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "one Poll per poll call, moved to the caller and never stored: boxing the batch would add an allocation per batch for no memory saved"
)]
pub enum Poll {
    Batch(Batch),
    /// Nothing arrived within the timeout (live only).
    Pending,
    /// The stream is over; no more batches.
    End,
}

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error(transparent)]
    Format(#[from] FormatError),
    #[error("capture: {0}")]
    Capture(String),
}

pub trait EventSource {
    /// Kernel, probes, topology of the capture.
    fn header(&self) -> &Header;
    /// Waits up to `timeout` for the next batch.
    fn poll(&mut self, timeout: Duration) -> Result<Poll, SourceError>;
    /// Problems that did not stop the stream (for example a damaged tail in a recording).
    fn warnings(&self) -> &[String];
    /// Ends the stream soon: what was already captured is still delivered, then `End`. Live
    /// capture detaches its probes and drains the ring buffer; a replay just ends.
    fn stop(&mut self);
    /// Capture counters (drops, offered), where the source has them beyond what its batches
    /// carry: live capture, read from the kernel at this moment.
    fn stats(&self) -> Option<&CaptureStats> {
        None
    }
    /// Hands a delivered batch back once every consumer is done with it, so the source can
    /// reuse its memory (a replay: the event vector and the select records' boxes). Optional.
    fn recycle(&mut self, _batch: Batch) {}
}

/// Replays a recording as fast as it is polled; pacing belongs to the consumer.
pub struct ReplaySource<R: Read> {
    reader: Reader<R>,
    stopped: bool,
    warnings: Vec<String>,
    good_chunks: u64,
    final_stats: Option<CaptureStats>,
}

impl<R: Read> ReplaySource<R> {
    pub const fn new(reader: Reader<R>) -> Self {
        Self {
            reader,
            stopped: false,
            warnings: Vec::new(),
            good_chunks: 0,
            final_stats: None,
        }
    }

    /// The END chunk's counters, once reached; `None` if the recording was cut short.
    pub fn final_stats(&self) -> Option<&CaptureStats> {
        self.final_stats.as_ref()
    }
}

impl ReplaySource<std::io::BufReader<std::fs::File>> {
    pub fn open(path: &std::path::Path) -> Result<Self, FormatError> {
        Ok(Self::new(Reader::open(path)?))
    }
}

impl<R: Read> EventSource for ReplaySource<R> {
    fn header(&self) -> &Header {
        self.reader.header()
    }

    fn poll(&mut self, _timeout: Duration) -> Result<Poll, SourceError> {
        if self.stopped {
            return Ok(Poll::End);
        }
        let mut batch = Batch::default();
        loop {
            match self.reader.next_chunk() {
                None => {
                    if self.final_stats.is_none() && self.warnings.is_empty() {
                        self.warnings.push(format!(
                            "{}: no END chunk: the recording was cut short; replaying the {} intact chunk(s)",
                            self.reader.path().display(),
                            self.good_chunks
                        ));
                    }
                    return Ok(end_or(batch));
                }
                Some(Err(e)) => {
                    if self.good_chunks == 0 {
                        return Err(e.into());
                    }
                    self.warnings.push(format!(
                        "{e}; replaying the {} intact chunk(s) before it",
                        self.good_chunks
                    ));
                    return Ok(end_or(batch));
                }
                Some(Ok(c)) => {
                    self.good_chunks += 1;
                    match c {
                        ChunkPayload::Tasks(t) => batch.tasks.extend(t),
                        ChunkPayload::Stats(s) => batch.stats = Some(s),
                        ChunkPayload::Schedstat(s) => batch.schedstat.push(s),
                        ChunkPayload::End(s) => {
                            if let Some(n) = self.reader.trailing_bytes() {
                                self.warnings.push(format!(
                                    "{}: {n} byte(s) after the END chunk (offset {}) ignored",
                                    self.reader.path().display(),
                                    self.reader.offset()
                                ));
                            }
                            self.final_stats = Some(s.clone());
                            batch.stats = Some(s);
                        }
                        ChunkPayload::Events(ev) => {
                            batch.events = ev;
                            return Ok(Poll::Batch(batch));
                        }
                    }
                }
            }
        }
    }

    fn warnings(&self) -> &[String] {
        &self.warnings
    }

    fn stop(&mut self) {
        self.stopped = true;
    }

    fn recycle(&mut self, batch: Batch) {
        self.reader.recycle(batch.events);
    }
}

fn end_or(batch: Batch) -> Poll {
    if batch == Batch::default() {
        Poll::End
    } else {
        Poll::Batch(batch)
    }
}
