//! Latency histograms (scan latency, wakeup-to-run latency) and the two ways they are shown:
//! percentiles, and log2 buckets drawn like bpftrace's `hist()` (the style kernel developers
//! paste into LKML threads, e.g. seed 002's `select_idle_cpu` histogram).
use hdrhistogram::Histogram;
use serde::Serialize;

/// Largest value recorded exactly; larger ones saturate here (60 s is no longer a latency).
pub const MAX_NS: u64 = 60_000_000_000;

/// Significant digits of every histogram. One precision for all: a percentile is a bucket
/// bound, so two histograms of different precision holding the same samples gave different
/// p99.9s (seen by a user: with a filter, `all` and `cross_package` held the same 2539
/// samples, the whole-run histogram had 3 digits, the per-level one 2). 2 digits (under 1 %
/// error) keep each copy around 30 KB, which the many per-LLC, per-level and per-window
/// copies need.
const SIGFIG: u8 = 2;

/// A latency histogram plus the exact extremes and sum. hdrhistogram only knows bucket
/// bounds, and a bucket's upper bound shown as "max" let a subset's max exceed the overall max
/// (seen by a user: `same_cpu max 233.8ms` above `all max 233.0ms`); min, max and mean here
/// come from the values recorded, so a subset's extremes never lie outside the whole's.
///
/// The buckets (about 30 KB) are allocated at the first value: a topology can have thousands
/// of LLCs, each with its histograms, and only those that see a sample should cost memory
/// (a crafted 1 MB recording with 8192 LLCs otherwise spent 250 MB on empty ones).
#[derive(Clone, Debug)]
pub struct Hist {
    h: Option<Box<Histogram<u64>>>,
    sigfig: u8,
    min: u64,
    max: u64,
    sum: u128,
}

impl Default for Hist {
    fn default() -> Self {
        Self::new()
    }
}

impl Hist {
    pub fn new() -> Self {
        Self::with_sigfig(SIGFIG)
    }

    /// For the hundreds of per-interval and per-task copies (time series, task table): 1
    /// significant digit (about 6 % between bucket bounds) keeps each around 4 KB, which is
    /// plenty for a p99 drawn as a chart point or shown in a sortable table.
    pub fn tiny() -> Self {
        Self::with_sigfig(1)
    }

    fn with_sigfig(sigfig: u8) -> Self {
        Self {
            h: None,
            sigfig,
            min: u64::MAX,
            max: 0,
            sum: 0,
        }
    }

    /// Same as [`Hist::new`]: kept for callers written when whole-run histograms were finer.
    pub fn fine() -> Self {
        Self::new()
    }

    /// Same as [`Hist::new`] (see [`Hist::fine`]).
    pub fn coarse() -> Self {
        Self::new()
    }

    /// Records `v`; values past [`MAX_NS`] count in the top bucket but keep their exact max.
    #[inline]
    pub fn record(&mut self, v: u64) {
        self.buckets().saturating_record(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.sum += u128::from(v);
    }

    /// Adds `o` into `self`; every [`Hist`] has the same range, so addition cannot fail except
    /// for counter overflow, which saturates.
    pub fn merge(&mut self, o: &Self) {
        if let Some(oh) = o.h.as_deref().filter(|h| !h.is_empty()) {
            let h = self.buckets();
            if h.add(oh).is_err() {
                for v in oh.iter_recorded() {
                    h.saturating_record_n(v.value_iterated_to(), v.count_at_value());
                }
            }
        }
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.sum += o.sum;
    }

    pub fn reset(&mut self) {
        if let Some(h) = &mut self.h {
            h.reset();
        }
        self.min = u64::MAX;
        self.max = 0;
        self.sum = 0;
    }

    /// Exact mean of the values recorded, `None` when empty.
    pub fn mean(&self) -> Option<f64> {
        let n = self.len();
        (n > 0).then(|| self.sum as f64 / n as f64)
    }

    pub fn is_empty(&self) -> bool {
        self.h.as_ref().is_none_or(|h| h.is_empty())
    }

    pub fn len(&self) -> u64 {
        self.h.as_ref().map_or(0, |h| h.len())
    }

    /// Exact smallest and largest values recorded, `None` when empty.
    pub fn extremes(&self) -> Option<(u64, u64)> {
        (!self.is_empty()).then_some((self.min, self.max))
    }

    /// The bucketed distribution, for percentiles and log2 buckets.
    pub fn histogram(&self) -> &Histogram<u64> {
        static EMPTY: std::sync::OnceLock<Histogram<u64>> = std::sync::OnceLock::new();
        self.h
            .as_deref()
            .unwrap_or_else(|| EMPTY.get_or_init(|| buckets(SIGFIG)))
    }

    /// The buckets, allocated now if this is the first value.
    fn buckets(&mut self) -> &mut Histogram<u64> {
        let sigfig = self.sigfig;
        self.h.get_or_insert_with(|| Box::new(buckets(sigfig)))
    }
}

fn buckets(sigfig: u8) -> Histogram<u64> {
    // Constant, valid bounds: no input can make this fail.
    Histogram::new_with_bounds(1, MAX_NS, sigfig).expect("constant histogram bounds are valid")
}

impl Hist {}

/// Summary figures in nanoseconds. Without samples every figure but `count` is meaningless:
/// views and the text report print n/a, and the JSON has `null` (see the `Serialize` impl),
/// never a 0 that reads as a measured latency.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Quantiles {
    pub count: u64,
    pub min: u64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
    pub mean: f64,
}

impl Quantiles {
    /// Percentiles from the buckets (within the histogram's precision), min and max exact.
    pub fn of(hist: &Hist) -> Self {
        let Some((min, max)) = hist.extremes() else {
            return Self::default();
        };
        let h = hist.histogram();
        // A percentile is a bucket's bound: kept within the exact extremes, so p99.9 never
        // reads above max.
        let q = |x: f64| h.value_at_quantile(x).clamp(min, max);
        Self {
            count: h.len(),
            min,
            p50: q(0.5),
            p90: q(0.9),
            p99: q(0.99),
            p999: q(0.999),
            max,
            mean: (hist.mean().unwrap_or(0.0) * 10.0).round() / 10.0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

impl Serialize for Quantiles {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let some = |v: u64| (!self.is_empty()).then_some(v);
        let mut m = s.serialize_struct("Quantiles", 8)?;
        m.serialize_field("count", &self.count)?;
        m.serialize_field("min", &some(self.min))?;
        m.serialize_field("p50", &some(self.p50))?;
        m.serialize_field("p90", &some(self.p90))?;
        m.serialize_field("p99", &some(self.p99))?;
        m.serialize_field("p999", &some(self.p999))?;
        m.serialize_field("max", &some(self.max))?;
        m.serialize_field("mean", &(!self.is_empty()).then_some(self.mean))?;
        m.end()
    }
}

/// One power-of-two bucket `[lo, hi)` in display units; `lo == 0, hi == 1` is the `[0]` bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Log2Bucket {
    pub lo: u64,
    pub hi: u64,
    pub count: u64,
}

/// Log2 buckets of `h` with values divided by `unit_ns` first (1 for ns, 1000 for µs), from the
/// lowest to the highest non-empty bucket (empty ones in between kept, as bpftrace does).
pub fn log2_buckets(hist: &Hist, unit_ns: u64) -> Vec<Log2Bucket> {
    let h = hist.histogram();
    let unit = unit_ns.max(1);
    let mut counts = [0u64; 66];
    for v in h.iter_recorded() {
        // Sub-buckets never straddle a power of two, so the lowest equivalent value decides.
        let x = h.lowest_equivalent(v.value_iterated_to()) / unit;
        let i = if x == 0 { 0 } else { 1 + x.ilog2() as usize };
        counts[i] += v.count_at_value();
    }
    let (Some(first), Some(last)) = (
        counts.iter().position(|&c| c > 0),
        counts.iter().rposition(|&c| c > 0),
    ) else {
        return Vec::new();
    };
    (first..=last)
        .map(|i| {
            let (lo, hi) = if i == 0 {
                (0, 1)
            } else {
                (
                    1u64 << (i - 1),
                    1u64.checked_shl(i as u32).unwrap_or(u64::MAX),
                )
            };
            Log2Bucket {
                lo,
                hi,
                count: counts[i],
            }
        })
        .collect()
}

fn human(v: u64) -> String {
    const SUFFIX: [(u64, &str); 5] = [
        (1 << 50, "P"),
        (1 << 40, "T"),
        (1 << 30, "G"),
        (1 << 20, "M"),
        (1 << 10, "K"),
    ];
    for (d, s) in SUFFIX {
        if v >= d && v.is_multiple_of(d) {
            return format!("{}{s}", v / d);
        }
    }
    v.to_string()
}

/// Renders buckets as bpftrace does: `[8, 16)   4041924 |@@@@@@@@          |`, bars scaled to
/// the largest bucket over `width` columns. One line per bucket, each ending in `\n`.
pub fn render_log2(buckets: &[Log2Bucket], width: usize) -> String {
    let max = buckets.iter().map(|b| b.count).max().unwrap_or(0).max(1);
    let labels: Vec<String> = buckets
        .iter()
        .map(|b| {
            if b.hi - b.lo <= 1 {
                format!("[{}]", human(b.lo))
            } else {
                format!("[{}, {})", human(b.lo), human(b.hi))
            }
        })
        .collect();
    let lw = labels.iter().map(String::len).max().unwrap_or(0);
    let cw = buckets
        .iter()
        .map(|b| b.count.to_string().len())
        .max()
        .unwrap_or(1);
    let mut out = String::new();
    for (b, l) in buckets.iter().zip(labels) {
        let n = ((u128::from(b.count) * width as u128) / u128::from(max)) as usize;
        out.push_str(&format!(
            "{l:<lw$} {:>cw$} |{}{}|\n",
            b.count,
            "@".repeat(n),
            " ".repeat(width - n)
        ));
    }
    out
}

/// A latency figure ready for reports and the TUI.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LatencySummary {
    #[serde(flatten)]
    pub quantiles: Quantiles,
    pub log2: Vec<Log2Bucket>,
}

impl LatencySummary {
    pub fn of(h: &Hist, unit_ns: u64) -> Self {
        Self {
            quantiles: Quantiles::of(h),
            log2: log2_buckets(h, unit_ns),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_and_rendering() {
        let mut h = Hist::fine();
        for v in [0, 1, 3, 9, 9, 15, 16, 1500, 2048] {
            h.record(v);
        }
        let b = log2_buckets(&h, 1);
        let got: Vec<(u64, u64, u64)> = b.iter().map(|b| (b.lo, b.hi, b.count)).collect();
        assert_eq!(
            got[..5],
            [(0, 1, 1), (1, 2, 1), (2, 4, 1), (4, 8, 0), (8, 16, 3)]
        );
        assert_eq!(got.last(), Some(&(2048, 4096, 1)));
        assert_eq!(got.iter().map(|g| g.2).sum::<u64>(), 9);
        let s = render_log2(&b, 10);
        assert!(s.contains("\n[8, 16)    3 |@@@@@@@@@@|\n"), "{s}");
        assert!(s.contains("\n[1K, 2K)   1 |@@@       |\n"), "{s}");
        assert!(s.starts_with("[0]        1 |@@@       |\n"), "{s}");
        let q = Quantiles::of(&h);
        assert_eq!((q.count, q.min), (9, 0));
        assert_eq!(q.max, 2048, "max is the value recorded, not a bucket bound");
        assert!(log2_buckets(&Hist::fine(), 1).is_empty());
    }
}

#[cfg(test)]
mod extremes {
    use super::*;

    #[test]
    fn a_subset_max_never_exceeds_the_whole() {
        // 233_046_015 and 233_800_000 share a 2-digit bucket whose upper bound is above both.
        let (mut all, mut part) = (Hist::fine(), Hist::coarse());
        for v in [5, 233_046_015] {
            all.record(v);
        }
        part.record(233_046_015);
        let (qa, qp) = (Quantiles::of(&all), Quantiles::of(&part));
        assert_eq!((qa.min, qa.max), (5, 233_046_015));
        assert_eq!(qp.max, 233_046_015);
        assert!(
            part.histogram().max() > 233_046_015,
            "the bucket bound is above the value"
        );
        let mut merged = Hist::coarse();
        merged.merge(&part);
        merged.merge(&all);
        assert_eq!(merged.extremes(), Some((5, 233_046_015)));
        merged.reset();
        assert_eq!(merged.extremes(), None);
    }
}
