//! The crate's one CPU set: a bitmap of `u64` words, bit `c % 64` of word `c / 64` = CPU `c`.
//! No fixed 64/256-bit limit, so 1024+ CPU machines work. The topology uses it as a growable
//! set; the shadow's hot path uses it dense (sized once with [`CpuSet::with_bound`]) and
//! reaches the words directly for the scans (`for_each_cpu_wrap` order, bit-parallel), so a
//! scan costs per word, not per CPU. Flat pools of same-sized sets (the shadow's parked idle
//! maps) use the same word layout through the `words_*` functions.
use serde::{Deserialize, Serialize};

#[derive(Clone, Default, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct CpuSet {
    words: Vec<u64>,
}

/// Equality and hashing ignore trailing zero words: a dense set and a grown one with the
/// same CPUs are the same set.
impl PartialEq for CpuSet {
    fn eq(&self, o: &Self) -> bool {
        self.trimmed() == o.trimmed()
    }
}

impl Eq for CpuSet {}

impl std::hash::Hash for CpuSet {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.trimmed().hash(h);
    }
}

impl CpuSet {
    /// The empty set, as a constant (for `static` fallbacks).
    pub const EMPTY: Self = Self { words: Vec::new() };

    pub fn new() -> Self {
        Self::default()
    }

    /// An empty set with its words allocated for CPUs below `bound`, for in-place updates
    /// with [`CpuSet::set`] that never allocate.
    pub fn with_bound(bound: usize) -> Self {
        Self {
            words: vec![0; bound.div_ceil(64)],
        }
    }

    fn trimmed(&self) -> &[u64] {
        let n = self
            .words
            .iter()
            .rposition(|&w| w != 0)
            .map_or(0, |i| i + 1);
        &self.words[..n]
    }

    /// The bitmap words (bit `c % 64` of word `c / 64`).
    #[inline]
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    #[inline]
    pub fn words_mut(&mut self) -> &mut [u64] {
        &mut self.words
    }

    /// Sets or clears `cpu` in place; a CPU beyond the allocated words is ignored (use
    /// [`CpuSet::insert`] to grow).
    #[inline]
    pub fn set(&mut self, cpu: u32, v: bool) {
        Self::words_set(&mut self.words, cpu, v);
    }

    /// Whether `cpu` is set in a bitmap of this layout.
    #[inline]
    pub fn words_contain(words: &[u64], cpu: u32) -> bool {
        words
            .get((cpu >> 6) as usize)
            .is_some_and(|w| (w >> (cpu & 63)) & 1 != 0)
    }

    /// Sets or clears `cpu` in a bitmap of this layout (ignored beyond its words).
    #[inline]
    pub fn words_set(words: &mut [u64], cpu: u32, v: bool) {
        if let Some(w) = words.get_mut((cpu >> 6) as usize) {
            let m = 1u64 << (cpu & 63);
            if v {
                *w |= m;
            } else {
                *w &= !m;
            }
        }
    }

    /// `|self & o|`.
    #[inline]
    pub fn count_and(&self, o: &Self) -> u32 {
        self.words
            .iter()
            .zip(&o.words)
            .map(|(x, y)| (x & y).count_ones())
            .sum()
    }

    /// The `k`-th segment of a wrap-order walk starting at bit `start` over `nw` words: first
    /// the start word from `start` up, then the following words, then the start word below
    /// `start`. This is `for_each_cpu_wrap(cpu, mask, start)`'s order: ascending from
    /// `start`, wrapping.
    #[inline]
    pub fn wrap_segment(nw: usize, start: u32, k: usize) -> Option<(usize, u64)> {
        if nw == 0 {
            return None;
        }
        let start = (start as usize) % (nw * 64);
        let (sw, sb) = (start / 64, start % 64);
        if k == 0 {
            Some((sw, !0u64 << sb))
        } else if k < nw {
            Some(((sw + k) % nw, !0u64))
        } else if k == nw && sb > 0 {
            Some((sw, (1u64 << sb) - 1))
        } else {
            None
        }
    }

    /// Walks `self` in wrap order from `start` and returns the first CPU also in `want`, and
    /// how many candidates were examined (the hit included). At most `limit` candidates are
    /// examined: a hit beyond that is a miss with `limit` probes, like the kernel's
    /// `--nr <= 0`. Bit-parallel: cost is per word, not per CPU.
    #[inline]
    pub fn wrap_first(&self, want: &Self, start: u32, limit: u32) -> (Option<u32>, u32) {
        let (cand, want) = (&self.words, &want.words);
        let nw = cand.len().min(want.len());
        let mut probes = 0u32;
        let mut k = 0;
        while let Some((w, mask)) = Self::wrap_segment(nw, start, k) {
            k += 1;
            let m = cand[w] & mask;
            if m == 0 {
                // Nothing to examine (the words of other LLCs): skip the population count.
                continue;
            }
            let hit = m & want[w];
            if hit != 0 {
                let b = hit.trailing_zeros();
                let pos = probes + (m & ((1u64 << b) - 1)).count_ones() + 1;
                if pos > limit {
                    return (None, limit);
                }
                return (Some(w as u32 * 64 + b), pos);
            }
            probes += m.count_ones();
            if probes >= limit {
                return (None, limit);
            }
        }
        (None, probes)
    }

    /// Makes `self` a copy of `o`, reusing its words (no allocation once sized).
    #[inline]
    pub fn copy_from(&mut self, o: &Self) {
        self.words.clear();
        self.words.extend_from_slice(&o.words);
    }

    pub fn insert(&mut self, cpu: u32) {
        let w = (cpu / 64) as usize;
        if self.words.len() <= w {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= 1 << (cpu % 64);
    }

    pub fn remove(&mut self, cpu: u32) {
        if let Some(w) = self.words.get_mut((cpu / 64) as usize) {
            *w &= !(1 << (cpu % 64));
        }
    }

    #[inline]
    pub fn contains(&self, cpu: u32) -> bool {
        Self::words_contain(&self.words, cpu)
    }

    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let b = w.trailing_zeros();
                w &= w - 1;
                Some(i as u32 * 64 + b)
            })
        })
    }

    pub fn first(&self) -> Option<u32> {
        self.iter().next()
    }

    /// Parses the kernel's cpulist format (`0-3,8,10-11`); empty input is the empty set. CPU
    /// numbers must be below [`super::MAX_CPUS`] (the set's size follows its highest number)
    /// and the text at most 64 KiB: input may come from a hostile file.
    pub fn parse_list(s: &str) -> Result<Self, String> {
        /// Longest list accepted: the worst real list of 8192 CPUs ("0,2,4,...") is ~19 KiB.
        const MAX_LIST_LEN: usize = 64 << 10;
        if s.len() > MAX_LIST_LEN {
            return Err(format!(
                "cpu list of {} bytes, beyond the limit of {MAX_LIST_LEN}",
                s.len()
            ));
        }
        let mut set = Self::new();
        for part in s.trim().split(',').filter(|p| !p.is_empty()) {
            let (a, b) = match part.split_once('-') {
                Some((a, b)) => (a, b),
                None => (part, part),
            };
            let a: u32 = a
                .trim()
                .parse()
                .map_err(|_| format!("bad cpu list item {part:?}"))?;
            let b: u32 = b
                .trim()
                .parse()
                .map_err(|_| format!("bad cpu list item {part:?}"))?;
            if b < a {
                return Err(format!("bad cpu range {part:?}"));
            }
            if b >= super::MAX_CPUS {
                return Err(format!(
                    "cpu {b} in {part:?} is beyond the limit of {}",
                    super::MAX_CPUS - 1
                ));
            }
            for c in a..=b {
                set.insert(c);
            }
        }
        Ok(set)
    }

    /// The kernel's cpulist format.
    pub fn to_list(&self) -> String {
        let mut out = String::new();
        let mut it = self.iter().peekable();
        while let Some(start) = it.next() {
            let mut end = start;
            while it.peek() == Some(&(end + 1)) {
                end += 1;
                it.next();
            }
            if !out.is_empty() {
                out.push(',');
            }
            if start == end {
                out.push_str(&start.to_string());
            } else {
                out.push_str(&format!("{start}-{end}"));
            }
        }
        out
    }
}

impl FromIterator<u32> for CpuSet {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
        let mut s = Self::new();
        for c in iter {
            s.insert(c);
        }
        s
    }
}

impl std::fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{{{}}}", self.to_list())
    }
}

impl From<CpuSet> for String {
    fn from(s: CpuSet) -> Self {
        s.to_list()
    }
}

impl TryFrom<String> for CpuSet {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        Self::parse_list(&s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_first_counts_probes_in_kernel_order() {
        // Candidates 0..8 and 128..136 (an AMD-style LLC), idle: 2 and 130.
        let mut cand = CpuSet::with_bound(256);
        let mut idle = CpuSet::with_bound(256);
        for c in (0..8).chain(128..136) {
            cand.set(c, true);
        }
        idle.set(2, true);
        idle.set(130, true);
        // From 4: 4,5,6,7,128,129,130 -> hit at the 7th probe.
        assert_eq!(cand.wrap_first(&idle, 4, u32::MAX), (Some(130), 7));
        // Budget 3: miss after 3 probes.
        assert_eq!(cand.wrap_first(&idle, 4, 3), (None, 3));
        // From 131: 131..135, then 0,1,2 -> hit at the 8th probe.
        assert_eq!(cand.wrap_first(&idle, 131, u32::MAX), (Some(2), 8));
        // Nothing idle: every candidate examined once.
        let none = CpuSet::with_bound(256);
        assert_eq!(cand.wrap_first(&none, 3, u32::MAX), (None, 16));
        assert_eq!(cand.count_and(&idle), 2);
    }

    #[test]
    fn dense_and_grown_sets_are_equal() {
        let mut d = CpuSet::with_bound(512);
        d.set(3, true);
        d.set(700, true); // beyond the words: ignored
        let g: CpuSet = [3].into_iter().collect();
        assert_eq!(d, g);
        assert_eq!(d.to_list(), "3");
        d.set(3, false);
        assert!(d.is_empty() && d == CpuSet::new());
    }

    #[test]
    fn list_round_trip_beyond_64() {
        let s = CpuSet::parse_list("0-3,8,10-11,1000-1023").unwrap();
        assert_eq!(s.len(), 4 + 1 + 2 + 24);
        assert!(s.contains(1023) && !s.contains(1024) && !s.contains(9));
        assert_eq!(s.to_list(), "0-3,8,10-11,1000-1023");
        assert_eq!(CpuSet::parse_list("").unwrap().len(), 0);
        assert!(CpuSet::parse_list("3-1").is_err());
        assert!(CpuSet::parse_list("x").is_err());
    }
}
