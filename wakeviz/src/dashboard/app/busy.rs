//! Live per-CPU busy %, from `sysinfo` (the kernel's /proc/stat counters, differenced between
//! two refreshes), so the map can say whether wakeups go to idle CPUs. A replay has no such
//! figure: the recording holds no CPU time accounting, and the views say n/a.
use std::time::{Duration, Instant};

use sysinfo::{CpuRefreshKind, RefreshKind, System};

/// Refresh period: the busy % is a difference of counters, meaningless over less than
/// sysinfo's minimum interval and noisy over a single frame.
const PERIOD: Duration = Duration::from_secs(1);

pub struct Busy {
    sys: Option<System>,
    last: Option<Instant>,
    /// Busy % per CPU number, once two refreshes apart.
    pct: Vec<Option<f32>>,
}

impl Default for Busy {
    fn default() -> Self {
        Self::new()
    }
}

impl Busy {
    pub fn new() -> Self {
        let sys = System::new_with_specifics(
            RefreshKind::nothing().with_cpu(CpuRefreshKind::nothing().with_usage()),
        )
        .ok();
        Self {
            sys,
            last: None,
            pct: Vec::new(),
        }
    }

    /// Takes a new reading when the last is [`PERIOD`] old; the first reading only primes.
    pub fn refresh(&mut self, now: Instant) {
        let Some(sys) = self.sys.as_mut() else {
            return;
        };
        if self
            .last
            .is_some_and(|t| now.saturating_duration_since(t) < PERIOD)
        {
            return;
        }
        let primed = self.last.is_some();
        self.last = Some(now);
        sys.refresh_cpu_usage();
        if !primed {
            return;
        }
        let mut pct = Vec::new();
        for c in sys.cpus() {
            // `cpu12` -> 12.
            let Some(n) = c
                .name()
                .strip_prefix("cpu")
                .and_then(|n| n.parse::<usize>().ok())
            else {
                continue;
            };
            if pct.len() <= n {
                pct.resize(n + 1, None);
            }
            pct[n] = Some(c.usage().clamp(0.0, 100.0));
        }
        self.pct = pct;
    }

    /// Busy % of `cpu` over the last period; `None` before two readings or for a CPU
    /// sysinfo does not list (offline).
    pub fn cpu(&self, cpu: u32) -> Option<f32> {
        self.pct.get(cpu as usize).copied().flatten()
    }

    /// Mean busy % over `cpus`, when every one is known.
    pub fn mean(&self, cpus: &[u32]) -> Option<f32> {
        let v: Option<Vec<f32>> = cpus.iter().map(|&c| self.cpu(c)).collect();
        let v = v?;
        (!v.is_empty()).then(|| v.iter().sum::<f32>() / v.len() as f32)
    }

    /// For tests: fixed readings.
    #[cfg(test)]
    pub fn fixed(pct: Vec<Option<f32>>) -> Self {
        Self {
            sys: None,
            last: None,
            pct,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two readings a period apart give a figure per online CPU, each within 0..=100.
    #[test]
    fn reads_this_machine() {
        let mut b = Busy::new();
        let t = Instant::now();
        b.refresh(t);
        assert_eq!(b.cpu(0), None, "one reading is not a rate");
        std::thread::sleep(sysinfo::MINIMUM_CPU_UPDATE_INTERVAL);
        b.refresh(t + PERIOD);
        let n = std::thread::available_parallelism().map_or(1, usize::from);
        let known = (0..n as u32).filter(|&c| b.cpu(c).is_some()).count();
        assert!(known >= 1, "no CPU busy % read");
        assert!(
            (0..n as u32)
                .filter_map(|c| b.cpu(c))
                .all(|p| (0.0..=100.0).contains(&p))
        );
        let f = Busy::fixed(vec![Some(10.0), Some(30.0), None]);
        assert_eq!(f.mean(&[0, 1]), Some(20.0));
        assert_eq!(f.mean(&[1, 2]), None);
    }
}
