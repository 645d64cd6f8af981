//! Splitting one ring-buffer record into the records it carries: itself, or the records of a
//! per-CPU batch (`wakeviz_common::batch`), which carry no length of their own.
//!
//! The bytes come from the kernel through a map other root processes can write to, and the
//! fuzzer feeds them at will: a batch's claimed length and every record's length are checked
//! against the bytes present, and a batch that cannot be split further ends with one error.
use wakeviz_common::{BatchHeader, EventHeader, EventKind, SelectEvent, record_len};
use zerocopy::FromBytes;

use super::DecodeError;

/// The records of one ring record, in order. Each item is a record to hand to
/// [`super::decode_record`], or the error that ended the batch.
pub struct RingRecords<'a> {
    /// A record that is not a batch, handed on whole (its own length is the ring's).
    single: Option<&'a [u8]>,
    /// What is left of a batch's records.
    rest: &'a [u8],
    /// Set once an error is returned: nothing after it can be found.
    failed: Option<DecodeError>,
}

/// Splits `bytes`, one ring record.
pub fn ring_records(bytes: &[u8]) -> RingRecords<'_> {
    let mut it = RingRecords {
        single: None,
        rest: &[],
        failed: None,
    };
    match EventHeader::read_from_prefix(bytes) {
        Ok((h, _)) if h.kind == EventKind::Batch as u16 => {
            match BatchHeader::read_from_prefix(bytes) {
                Ok((b, body)) => match body.get(..b.len as usize) {
                    Some(records) => it.rest = records,
                    None => {
                        it.failed = Some(DecodeError::BatchOverrun {
                            claimed: b.len as usize,
                            present: body.len(),
                        })
                    }
                },
                // Unreachable after the header read above; an error all the same.
                Err(_) => it.failed = Some(DecodeError::ShortHeader { len: bytes.len() }),
            }
        }
        // Not a batch (or too short to say): `decode_record` judges it.
        _ => it.single = Some(bytes),
    }
    it
}

/// Where a select record's `exact_mask` sits (its length depends on it).
const EXACT_MASK_AT: usize = core::mem::offset_of!(SelectEvent, exact_mask);

/// The length of the record at the start of `rest`, which is inside a batch.
fn next_len(rest: &[u8]) -> Result<usize, DecodeError> {
    let (h, _) = EventHeader::read_from_prefix(rest)
        .map_err(|_| DecodeError::ShortHeader { len: rest.len() })?;
    let kind = EventKind::from_u16(h.kind).ok_or(DecodeError::UnknownKind { kind: h.kind })?;
    let mask = match kind {
        EventKind::Select => rest
            .get(EXACT_MASK_AT..EXACT_MASK_AT + 4)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map(u32::from_ne_bytes)
            .ok_or(DecodeError::ShortRecord {
                kind: h.kind,
                len: rest.len(),
                expected: size_of::<SelectEvent>(),
            })?,
        _ => 0,
    };
    let len = record_len(kind, mask).ok_or(DecodeError::UnexpectedBatch)?;
    if len > rest.len() {
        return Err(DecodeError::ShortRecord {
            kind: h.kind,
            len: rest.len(),
            expected: len,
        });
    }
    Ok(len)
}

impl<'a> Iterator for RingRecords<'a> {
    type Item = Result<&'a [u8], DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(s) = self.single.take() {
            return Some(Ok(s));
        }
        if let Some(e) = self.failed.take() {
            self.rest = &[];
            return Some(Err(e));
        }
        if self.rest.is_empty() {
            return None;
        }
        match next_len(self.rest) {
            Ok(n) => {
                let (rec, rest) = self.rest.split_at(n);
                self.rest = rest;
                Some(Ok(rec))
            }
            Err(e) => {
                self.rest = &[];
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests;
