//! The traced kernel's `CONFIG_HZ`, measured from the recording: ABI-3 select records carry
//! `jiffies` beside their timestamp, so two of them far enough apart give ticks per second.
//! `record_wakee()` halves a waker's flips once `HZ` jiffies have passed; a 1000 Hz kernel read
//! as 250 Hz would decay them four times too late.
use super::state::HZ;

/// The `CONFIG_HZ` values distribution kernels use; the measured rate snaps to the nearest.
const KNOWN_HZ: [u32; 4] = [100, 250, 300, 1000];
/// How far apart two samples must be before their rate is trusted: a jiffy of error is then
/// under 1 % at 250 Hz.
const MIN_SPAN_NS: u64 = 500_000_000;

#[derive(Clone, Debug)]
pub struct HzClock {
    anchor: Option<(u64, u32)>,
    hz: u32,
    measured: bool,
}

impl Default for HzClock {
    fn default() -> Self {
        Self {
            anchor: None,
            hz: HZ as u32,
            measured: false,
        }
    }
}

impl HzClock {
    /// Takes one (timestamp, jiffies) pair and returns HZ as known now (the assumed 250 until
    /// half a second of records has passed).
    pub fn observe(&mut self, ts_ns: u64, jiffies: u32) -> u32 {
        let Some((t0, j0)) = self.anchor else {
            self.anchor = Some((ts_ns, jiffies));
            return self.hz;
        };
        let span = ts_ns.saturating_sub(t0);
        if span >= MIN_SPAN_NS {
            let ticks = f64::from(jiffies.wrapping_sub(j0));
            let rate = ticks * 1e9 / span as f64;
            if let Some(&hz) = KNOWN_HZ.iter().min_by(|a, b| {
                (f64::from(**a) - rate)
                    .abs()
                    .total_cmp(&(f64::from(**b) - rate).abs())
            }) {
                self.hz = hz;
                self.measured = true;
            }
        }
        self.hz
    }

    /// HZ measured from the recording (`None`: not yet, or no ABI-3 records).
    pub fn measured(&self) -> Option<u32> {
        self.measured.then_some(self.hz)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snaps_to_the_kernels_rate() {
        for hz in KNOWN_HZ {
            let mut c = HzClock::default();
            assert_eq!(c.observe(1_000, 5), 250);
            // 0.8 s later, with the counter wrapped on the way.
            let j = 5u32.wrapping_add(hz * 8 / 10);
            assert_eq!(c.observe(1_000 + 800_000_000, j), hz);
            assert_eq!(c.measured(), Some(hz));
        }
    }

    #[test]
    fn too_short_a_span_keeps_the_assumption() {
        let mut c = HzClock::default();
        c.observe(0, 0);
        assert_eq!(c.observe(100_000_000, 100), 250);
        assert_eq!(c.measured(), None);
    }
}
