//! Chunk framing: a fixed 24-byte header, then `stored_len` bytes of payload.
//!
//! ```text
//! off size field
//!  0   4   magic "WVZC"
//!  4   1   kind (TASKS=1, EVENTS=2, STATS=3, END=4, SCHEDSTAT=5 from format 3)
//!  5   1   codec (0 = raw, 1 = zstd)
//!  6   2   reserved, 0
//!  8   4   raw_len: payload length before compression
//! 12   4   stored_len: payload length in the file
//! 16   4   count: entries in the payload (events, tasks)
//! 20   4   crc32 of bytes 0..20 followed by the stored payload
//! ```
pub const MAGIC: &[u8; 4] = b"WVZC";
pub const HEADER_LEN: usize = 24;
/// Refuse chunks claiming more than this (a corrupt length must not allocate gigabytes). The
/// writer's chunks are at most [`crate::format::RecorderConfig`]'s default 65 536 events of at most
/// ~80 encoded bytes, about 5 MiB, so this leaves ample room.
pub const MAX_RAW_LEN: u32 = 16 << 20;
/// Refuse chunks claiming more entries (events, task names) than this: decoded events take
/// ~10x their encoded size, so a tiny zstd chunk of millions of identical events would
/// otherwise cost a gigabyte. 16x the writer's default chunk; the writer never exceeds it.
pub const MAX_CHUNK_ENTRIES: u32 = 1 << 20;

pub const KIND_TASKS: u8 = 1;
pub const KIND_EVENTS: u8 = 2;
pub const KIND_STATS: u8 = 3;
pub const KIND_END: u8 = 4;
/// One `/proc/schedstat` sample: `ts_ns` (u64, little endian), then the file's text.
pub const KIND_SCHEDSTAT: u8 = 5;

pub const CODEC_RAW: u8 = 0;
pub const CODEC_ZSTD: u8 = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkHeader {
    pub kind: u8,
    pub codec: u8,
    pub raw_len: u32,
    pub stored_len: u32,
    pub count: u32,
    pub crc: u32,
}

impl ChunkHeader {
    fn prefix(&self) -> [u8; 20] {
        let mut b = [0u8; 20];
        b[0..4].copy_from_slice(MAGIC);
        b[4] = self.kind;
        b[5] = self.codec;
        b[8..12].copy_from_slice(&self.raw_len.to_le_bytes());
        b[12..16].copy_from_slice(&self.stored_len.to_le_bytes());
        b[16..20].copy_from_slice(&self.count.to_le_bytes());
        b
    }

    pub fn crc_of(&self, payload: &[u8]) -> u32 {
        let mut h = crc32fast::Hasher::new();
        h.update(&self.prefix());
        h.update(payload);
        h.finalize()
    }

    /// Builds a header for `stored` payload bytes, CRC included.
    pub fn seal(kind: u8, codec: u8, raw_len: u32, count: u32, stored: &[u8]) -> Self {
        let mut h = Self {
            kind,
            codec,
            raw_len,
            stored_len: stored.len() as u32,
            count,
            crc: 0,
        };
        h.crc = h.crc_of(stored);
        h
    }

    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[..20].copy_from_slice(&self.prefix());
        b[20..24].copy_from_slice(&self.crc.to_le_bytes());
        b
    }

    pub fn parse(b: &[u8; HEADER_LEN]) -> Result<Self, String> {
        if &b[0..4] != MAGIC {
            return Err("bad chunk magic".into());
        }
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let h = Self {
            kind: b[4],
            codec: b[5],
            raw_len: u32_at(8),
            stored_len: u32_at(12),
            count: u32_at(16),
            crc: u32_at(20),
        };
        if !(KIND_TASKS..=KIND_SCHEDSTAT).contains(&h.kind) {
            return Err(format!("unknown chunk kind {}", h.kind));
        }
        if h.codec > CODEC_ZSTD {
            return Err(format!("unknown codec {}", h.codec));
        }
        if h.raw_len > MAX_RAW_LEN || h.stored_len > MAX_RAW_LEN {
            return Err(format!(
                "chunk length {} beyond the limit of {MAX_RAW_LEN} bytes",
                h.raw_len.max(h.stored_len)
            ));
        }
        if h.codec == CODEC_RAW && h.raw_len != h.stored_len {
            return Err(format!(
                "uncompressed chunk with raw length {} but stored length {}",
                h.raw_len, h.stored_len
            ));
        }
        Ok(h)
    }
}
