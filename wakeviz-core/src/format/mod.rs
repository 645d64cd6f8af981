//! The `.wvz` recording format.
//!
//! ```text
//! file   := preamble header_json chunk*
//! preamble (20 bytes, little endian):
//!          magic "WVZTRACE" | format_version u32 | header_len u32 | header_crc32 u32
//! header_json: [`Header`] as JSON (kernel, probe modes, the whole topology, clock, ABI version)
//! chunk  := chunk_header (28 bytes) payload
//! chunk_header: magic "WVZC" | kind u8 | codec u8 | reserved u16 | raw_len u32 |
//!               stored_len u32 | count u32 | first_ts_ns u64? (see below) ...
//! ```
//! Exact chunk header layout: see [`chunk`]. Every chunk carries its own CRC32 over header and
//! payload, so a torn or damaged chunk is detected on its own: the reader stops there, keeps
//! everything before it, and names the chunk index and byte offset.
//!
//! Chunk kinds:
//! - `TASKS`: pid -> comm (and, from format 5, tgid; from format 6, cgroup id) entries learnt since the previous chunk (always written before the
//!   event chunk that first references them), so the dictionary is incremental and survives a
//!   crash exactly as far as the events do;
//! - `EVENTS`: events, zstd-compressed, in the layout the format version names: version 2,
//!   columns of fixed-width byte planes ([`columns`], written now); version 1, rows of varints
//!   ([`codec`]: kind, CPU, zigzag-delta timestamp, the kind's fields), still read;
//! - `STATS`: cumulative capture counters (events offered per kind, kernel ring-buffer drops,
//!   userspace channel drops) at that moment, written with every flush;
//! - `SCHEDSTAT` (format 3 on): one `/proc/schedstat` sample, its time (`ts_ns`, u64) then the
//!   file's text; written after the events read before it, so a replay meets it where the
//!   live analysis did;
//! - `END`: the final counters; its absence means the recording was cut short.
//!
//! A recorder flushes at least once per second and whenever the pending chunk is full, so a
//! `kill -9` loses at most the last second.
pub mod chunk;
pub mod codec;
pub mod columns;
mod error;
mod header;
mod reader;
mod slots;
mod writer;

pub use error::FormatError;
pub(crate) use header::is_zero;
pub use header::{
    BatchStats, CGROUP_SINCE, CaptureStats, ClockSnapshot, FORMAT_VERSION, Header, MAGIC,
    ProbeClock, ProbeMode, ProbeState, ProbeStatus, RingStats, SCHEDSTAT_SINCE, ScanSource,
    TGID_SINCE,
};
pub use reader::{ChunkPayload, Reader, read_all};
pub use writer::{Recorder, RecorderConfig};
