//! Helpers shared by the fuzz targets: checksums fixed up so mutations reach the decoders
//! below the CRC, and small structured inputs built from libFuzzer's bytes; and the allocation
//! limit every target runs under (`alloc_limit`).
use libfuzzer_sys::arbitrary::{Result, Unstructured};

mod alloc_limit;

#[global_allocator]
static ALLOC: alloc_limit::Limited = alloc_limit::Limited;

/// Rewrites the header checksum and every chunk's checksum of a would-be recording in place, so
/// that a mutated byte is judged by the decoder and not just by the CRC check in front of it.
pub fn fix_checksums(f: &mut [u8]) {
    if f.len() < 20 || &f[..8] != b"WVZTRACE" {
        return;
    }
    let u32_at = |f: &[u8], o: usize| u32::from_le_bytes([f[o], f[o + 1], f[o + 2], f[o + 3]]);
    let len = u32_at(f, 12) as usize;
    let end = 20usize.saturating_add(len).min(f.len());
    let crc = crc32fast::hash(&f[20..end]);
    f[16..20].copy_from_slice(&crc.to_le_bytes());
    let mut o = end;
    while o + 24 <= f.len() {
        let stored = u32_at(f, o + 12) as usize;
        let pend = (o + 24).saturating_add(stored).min(f.len());
        let mut h = crc32fast::Hasher::new();
        h.update(&f[o..o + 20]);
        h.update(&f[o + 24..pend]);
        let crc = h.finalize();
        f[o + 20..o + 24].copy_from_slice(&crc.to_le_bytes());
        o = pend;
    }
}

/// A recording around `header` JSON: preamble with `version`, then `tail` as is.
pub fn recording(version: u32, header: &[u8], tail: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(20 + header.len() + tail.len());
    f.extend_from_slice(b"WVZTRACE");
    f.extend_from_slice(&version.to_le_bytes());
    f.extend_from_slice(&(header.len() as u32).to_le_bytes());
    f.extend_from_slice(&crc32fast::hash(header).to_le_bytes());
    f.extend_from_slice(header);
    f.extend_from_slice(tail);
    f
}

/// A number for a CPU, group index or id: mostly near `n`, sometimes anything.
pub fn num(u: &mut Unstructured, n: u32) -> Result<u32> {
    Ok(match u.int_in_range(0..=7u8)? {
        0 => u.arbitrary()?,
        1 => u.int_in_range(8000..=8300)?,
        _ => u.int_in_range(0..=n.saturating_add(2))?,
    })
}

/// A cpulist string: well-formed ranges around `n` mostly, sometimes free text.
pub fn cpulist(u: &mut Unstructured, n: u32) -> Result<String> {
    if u.ratio(1, 8)? {
        let s: &str = u.arbitrary()?;
        return Ok(s.chars().take(64).collect());
    }
    let parts = u.int_in_range(0..=4u8)?;
    let mut out = Vec::new();
    for _ in 0..parts {
        let a = num(u, n)?;
        if u.arbitrary()? {
            let b = a.saturating_add(num(u, n)? % 4096);
            out.push(format!("{a}-{b}"));
        } else {
            out.push(a.to_string());
        }
    }
    Ok(out.join(","))
}
