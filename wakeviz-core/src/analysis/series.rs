//! Time series across the whole session: per interval of stream time, the placed wakeups, their
//! placement mix (level of waker CPU -> chosen CPU), and the p99 of scan latency and of
//! wakeup-to-run latency. The rolling windows answer "what now"; this answers "when did it
//! change", which is what a scheduler developer looks for on a timeline.
//!
//! Memory is bounded whatever the length of the run: at most [`MAX_POINTS`] intervals are kept,
//! and when one more would be needed every two neighbours are merged (the interval doubles).
//! The intervals start at [`BASE_INTERVAL_NS`] (1 ms), so a 20 ms benchmark burst still has a
//! shape, and double as the run grows: 2 ms past 256 ms, about 1 s past 4 minutes, 16 s at an
//! hour; always 129 to 256 points once the run is longer than 256 ms.
use serde::Serialize;

use super::part::{Ctx, Part, Placed, Ran, ScanSample};
use super::{
    latency::{Hist, Quantiles},
    placement::Classified,
};
use crate::format::Header;
use crate::topology::LevelCounts;

/// Most intervals kept; reaching it doubles the interval.
pub const MAX_POINTS: usize = 256;
/// The starting interval (1 ms).
pub const BASE_INTERVAL_NS: u64 = 1_000_000;

/// One interval's raw figures.
#[derive(Clone, Debug)]
struct Interval {
    wakeups: u64,
    vs_waker: LevelCounts,
    scan: Hist,
    wakeup_latency: Hist,
}

impl Interval {
    fn new() -> Self {
        Self {
            wakeups: 0,
            vs_waker: LevelCounts::default(),
            scan: Hist::tiny(),
            wakeup_latency: Hist::tiny(),
        }
    }

    fn merge(&mut self, o: &Self) {
        self.wakeups += o.wakeups;
        self.vs_waker.merge(&o.vs_waker);
        self.scan.merge(&o.scan);
        self.wakeup_latency.merge(&o.wakeup_latency);
    }
}

/// The fold. Timestamps before the first interval (per-CPU buffers interleave slightly) count
/// in the first one.
#[derive(Clone, Debug)]
pub struct Series {
    interval_ns: u64,
    /// Start of `points[0]`: the first timestamp seen, rounded down to [`BASE_INTERVAL_NS`].
    origin: Option<u64>,
    points: Vec<Interval>,
    max_points: usize,
}

impl Default for Series {
    fn default() -> Self {
        Self::with_limits(BASE_INTERVAL_NS, MAX_POINTS)
    }
}

impl Series {
    /// A series starting at `interval_ns` intervals and keeping at most `max_points` (at least
    /// 2, so coarsening always makes room).
    pub fn with_limits(interval_ns: u64, max_points: usize) -> Self {
        Self {
            interval_ns: interval_ns.max(1),
            origin: None,
            points: Vec::new(),
            max_points: max_points.max(2),
        }
    }

    pub fn interval_ns(&self) -> u64 {
        self.interval_ns
    }

    /// The interval `ts` falls in, created (and the series coarsened) as needed.
    fn at(&mut self, ts: u64) -> &mut Interval {
        let base = self.interval_ns;
        let origin = *self.origin.get_or_insert(ts - ts % base);
        let mut idx = ts.saturating_sub(origin) / self.interval_ns;
        while idx >= self.max_points as u64 {
            self.coarsen();
            idx = ts.saturating_sub(origin) / self.interval_ns;
        }
        let idx = idx as usize;
        while self.points.len() <= idx {
            self.points.push(Interval::new());
        }
        &mut self.points[idx]
    }

    /// Merges neighbours pairwise: half the points, twice the interval. The origin stays, so
    /// the new boundaries are old ones.
    fn coarsen(&mut self) {
        let old = std::mem::take(&mut self.points);
        let mut it = old.into_iter();
        while let Some(mut a) = it.next() {
            if let Some(b) = it.next() {
                a.merge(&b);
            }
            self.points.push(a);
        }
        self.interval_ns = self.interval_ns.saturating_mul(2);
    }

    /// A placed wakeup (not a fork), at its `sched_wakeup` time.
    #[inline]
    pub fn placement(&mut self, ts: u64, c: &Classified) {
        let p = self.at(ts);
        p.wakeups += 1;
        if let Some(l) = c.vs_waker {
            p.vs_waker.add(l);
        }
    }

    /// A scan-latency sample, at the select's exit time.
    #[inline]
    pub fn scan(&mut self, ts: u64, v: u64) {
        self.at(ts).scan.record(v);
    }

    /// A wakeup-to-run latency sample, at the wakee's switch-in time.
    #[inline]
    pub fn wakeup_latency(&mut self, ts: u64, v: u64) {
        self.at(ts).wakeup_latency.record(v);
    }

    /// The display figures; `last_ts` closes the last interval (its rate covers only the part
    /// of it the stream has reached).
    pub fn section(&self, last_ts: u64) -> SeriesSection {
        let Some(origin) = self.origin else {
            return SeriesSection {
                interval_ns: self.interval_ns,
                points: Vec::new(),
            };
        };
        let n = self.points.len();
        let points = self
            .points
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let start_ns = origin + i as u64 * self.interval_ns;
                let span_ns = if i + 1 == n {
                    last_ts.saturating_sub(start_ns).clamp(1, self.interval_ns)
                } else {
                    self.interval_ns
                };
                let p99 = |h: &Hist| (!h.is_empty()).then(|| Quantiles::of(h).p99);
                SeriesPoint {
                    start_ns,
                    span_ns,
                    wakeups: p.wakeups,
                    wakeups_per_s: p.wakeups as f64 * 1e9 / span_ns as f64,
                    vs_waker: p.vs_waker,
                    scan_n: p.scan.len(),
                    scan_p99_ns: p99(&p.scan),
                    wakeup_latency_n: p.wakeup_latency.len(),
                    wakeup_latency_p99_ns: p99(&p.wakeup_latency),
                }
            })
            .collect();
        SeriesSection {
            interval_ns: self.interval_ns,
            points,
        }
    }
}

/// One interval of the series.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SeriesPoint {
    pub start_ns: u64,
    /// Stream time the interval covers: the interval, or less for the last one.
    pub span_ns: u64,
    /// Placed wakeups (not forks) under the filter: the Placement view's count, per interval.
    pub wakeups: u64,
    pub wakeups_per_s: f64,
    /// Those wakeups by level of waker CPU -> chosen CPU.
    pub vs_waker: LevelCounts,
    pub scan_n: u64,
    /// `null` when the interval has no sample (never 0 for "not measured").
    pub scan_p99_ns: Option<u64>,
    pub wakeup_latency_n: u64,
    pub wakeup_latency_p99_ns: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SeriesSection {
    /// Length of every interval but the last (grows by doubling on long runs).
    pub interval_ns: u64,
    pub points: Vec<SeriesPoint>,
}

impl SeriesSection {
    /// The points that overlap the last `span_ns` before `to_ns` (`None`: all of them).
    pub fn last(&self, span_ns: Option<u64>, to_ns: u64) -> &[SeriesPoint] {
        let Some(span) = span_ns else {
            return &self.points;
        };
        let from = to_ns.saturating_sub(span);
        let first = self
            .points
            .partition_point(|p| p.start_ns + p.span_ns <= from);
        &self.points[first..]
    }
}

impl Part for Series {
    fn new(_: &Header) -> Self {
        Self::default()
    }

    #[inline]
    fn on_scan(&mut self, _: &Ctx, s: &ScanSample) {
        if let Some(ns) = s.ns {
            self.scan(s.ts_ns, ns);
        }
    }

    #[inline]
    fn on_placement(&mut self, _: &Ctx, pl: &Placed) {
        self.placement(pl.p.wakeup_ts_ns, pl.class);
    }

    #[inline]
    fn on_ran(&mut self, _: &Ctx, r: &Ran) {
        self.wakeup_latency(r.ts_ns, r.latency_ns);
    }

    fn rescope(&mut self, _: &Ctx) {
        *self = Self::default();
    }

    fn fill(&self, cx: &Ctx, s: &mut super::Snapshot) {
        s.series = self.section(cx.last_ts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::Level;

    fn placed(l: Level) -> Classified {
        Classified {
            vs_waker: Some(l),
            vs_prev: Some(Level::SameCpu),
            waker_prev: Some(l),
            affine: false,
        }
    }

    #[test]
    fn intervals_hold_their_events() {
        let mut s = Series::with_limits(100, 8);
        // origin 1000: [1000,1100) [1100,1200) [1200,1300)
        s.placement(1_050, &placed(Level::SameLlc));
        s.placement(1_099, &placed(Level::CrossPackage));
        s.placement(990, &placed(Level::SameCpu)); // before the origin: first interval
        s.placement(1_250, &placed(Level::SameLlc));
        s.scan(1_110, 700);
        s.wakeup_latency(1_260, 5_000);
        let sec = s.section(1_275);
        assert_eq!(sec.interval_ns, 100);
        let got: Vec<(u64, u64, u64)> = sec
            .points
            .iter()
            .map(|p| (p.start_ns, p.span_ns, p.wakeups))
            .collect();
        assert_eq!(got, [(1_000, 100, 3), (1_100, 100, 0), (1_200, 75, 1)]);
        let p0 = &sec.points[0];
        assert_eq!(p0.vs_waker.get(Level::SameLlc), 1);
        assert_eq!(p0.vs_waker.get(Level::CrossPackage), 1);
        assert_eq!(p0.vs_waker.get(Level::SameCpu), 1);
        assert_eq!(p0.wakeups_per_s, 3.0 * 1e9 / 100.0);
        assert_eq!(p0.scan_p99_ns, None, "no sample is null, not 0");
        assert_eq!(sec.points[1].scan_p99_ns, Some(700));
        assert_eq!(sec.points[1].scan_n, 1);
        // The last interval's rate covers the 75 ns reached so far.
        assert_eq!(sec.points[2].wakeups_per_s, 1e9 / 75.0);
        assert_eq!(sec.points[2].wakeup_latency_p99_ns, Some(5_000));
    }

    #[test]
    fn long_runs_coarsen_and_keep_every_count() {
        let mut s = Series::with_limits(10, 4);
        for ts in (0..100).map(|i| i * 10 + 5) {
            s.placement(ts, &placed(Level::SameCpu));
        }
        let sec = s.section(1_000);
        // 100 intervals of 10 do not fit in 4: 4 -> 8 -> ... -> 320 (4 * 320 > 1000).
        assert_eq!(sec.interval_ns, 320);
        assert!(sec.points.len() <= 4);
        assert_eq!(sec.points.iter().map(|p| p.wakeups).sum::<u64>(), 100);
        assert_eq!(sec.points[0].wakeups, 32);
        assert_eq!(sec.points[3].start_ns, 960);
        assert_eq!(sec.points[3].wakeups, 4);
    }

    #[test]
    fn last_span_picks_the_overlapping_points() {
        let mut s = Series::with_limits(100, 64);
        for ts in [0, 150, 250, 350, 450] {
            s.placement(ts, &placed(Level::SameCpu));
        }
        let sec = s.section(460);
        assert_eq!(sec.last(None, 460).len(), 5);
        let l = sec.last(Some(200), 460);
        assert_eq!(
            l.iter().map(|p| p.start_ns).collect::<Vec<_>>(),
            [200, 300, 400]
        );
        assert!(Series::default().section(5).points.is_empty());
    }
}
