//! Pid-keyed maps for the per-event paths (joiner, analyses, shadow state).
use std::{
    collections::HashMap,
    hash::{BuildHasherDefault, Hasher},
};

/// A cheap multiplicative hasher for pid keys: SipHash's DoS resistance buys nothing against
/// kernel-assigned pids, and it cost more than the rest of an event's processing.
#[derive(Default, Clone, Copy)]
pub struct PidHasher(u64);

impl Hasher for PidHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u32(&mut self, i: u32) {
        self.0 = u64::from(i).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

pub type PidBuild = BuildHasherDefault<PidHasher>;

/// `HashMap<u32, V>` with [`PidHasher`].
pub type PidMap<V> = HashMap<u32, V, PidBuild>;
