//! Latency histograms (scan latency, wakeup-to-run latency) and the two ways they are shown:
//! percentiles, and log2 buckets drawn like bpftrace's `hist()` (the style kernel developers
//! paste into LKML threads, e.g. seed 002's `select_idle_cpu` histogram).
use hdrhistogram::Histogram;
use serde::Serialize;

/// Largest value recorded exactly; larger ones saturate here (60 s is no longer a latency).
pub const MAX_NS: u64 = 60_000_000_000;

/// A histogram for whole-run figures: 3 significant digits (0.1 %).
pub fn fine() -> Histogram<u64> {
    new_hist(3)
}

/// A histogram for the many per-LLC, per-level and per-window copies: 2 significant digits
/// (1 %) keeps each around 30 KB instead of 200 KB.
pub fn coarse() -> Histogram<u64> {
    new_hist(2)
}

fn new_hist(sigfig: u8) -> Histogram<u64> {
    // Constant, valid bounds: no input can make this fail.
    Histogram::new_with_bounds(1, MAX_NS, sigfig).expect("constant histogram bounds are valid")
}

/// Adds `src` into `dst`; both come from [`fine`] or [`coarse`], whose ranges are equal, so
/// addition cannot fail except for counter overflow, which saturates.
pub fn merge(dst: &mut Histogram<u64>, src: &Histogram<u64>) {
    if dst.add(src).is_err() {
        for v in src.iter_recorded() {
            dst.saturating_record_n(v.value_iterated_to(), v.count_at_value());
        }
    }
}

/// Summary figures in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
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
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Self::default();
        }
        Self {
            count: h.len(),
            min: h.min(),
            p50: h.value_at_quantile(0.5),
            p90: h.value_at_quantile(0.9),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
            mean: (h.mean() * 10.0).round() / 10.0,
        }
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
pub fn log2_buckets(h: &Histogram<u64>, unit_ns: u64) -> Vec<Log2Bucket> {
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
    pub fn of(h: &Histogram<u64>, unit_ns: u64) -> Self {
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
        let mut h = fine();
        for v in [0, 1, 3, 9, 9, 15, 16, 1500, 2048] {
            h.record(v).unwrap();
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
        assert!(
            (2048..=2050).contains(&q.max),
            "max is the highest equivalent value"
        );
        assert!(log2_buckets(&fine(), 1).is_empty());
    }
}
