//! Seeded draws: a splitmix64 generator and durations from a recorded distribution.
use crate::workload::Dist;

pub struct Rng(u64);

impl Rng {
    pub const fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A duration in nanoseconds drawn from `d`: piecewise uniform between its quantiles (half
/// its p10 at 0, its max at 1); at least 1 µs, `None` for an empty distribution.
pub fn draw(d: &Dist, r: &mut Rng) -> Option<u64> {
    if d.n == 0 {
        return None;
    }
    let pts = [
        (0.0, d.p10_us / 2.0),
        (0.10, d.p10_us),
        (0.25, d.p25_us),
        (0.50, d.p50_us),
        (0.75, d.p75_us),
        (0.90, d.p90_us),
        (0.99, d.p99_us),
        (1.0, d.max_us.max(d.p99_us)),
    ];
    let u = r.unit();
    let us = pts.windows(2).find(|w| u < w[1].0).map_or(pts[7].1, |w| {
        let f = (u - w[0].0) / (w[1].0 - w[0].0);
        w[0].1 + f * (w[1].1 - w[0].1)
    });
    Some(((us * 1e3) as u64).max(1_000))
}
