//! A growable CPU bitmap: no fixed 64/256-bit limit, so 1024+ CPU machines work.
use serde::{Deserialize, Serialize};

#[derive(Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct CpuSet {
    words: Vec<u64>,
}

impl CpuSet {
    pub fn new() -> Self {
        Self::default()
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

    pub fn contains(&self, cpu: u32) -> bool {
        self.words
            .get((cpu / 64) as usize)
            .is_some_and(|w| w & (1 << (cpu % 64)) != 0)
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
