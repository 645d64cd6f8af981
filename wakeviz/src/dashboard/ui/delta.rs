//! Δ between the current figures and a baseline recording's: plain arithmetic on two snapshot
//! values, never a recomputed figure. Shares differ in percentage points (`+2.3pt`), counts,
//! rates and latencies relatively (`+12.0%`); a side with no samples makes the Δ `n/a`
//! (a missing figure is not a zero).

/// `n` out of `d` in percent; `None` when there is nothing to divide by.
pub fn share(n: u64, d: u64) -> Option<f64> {
    (d > 0).then(|| n as f64 * 100.0 / d as f64)
}

/// Difference of two shares in percentage points.
pub fn points(cur: Option<f64>, base: Option<f64>) -> Option<f64> {
    Some(cur? - base?)
}

/// Relative change of a count-like value in percent; `None` where either side is zero.
pub fn relative(cur: f64, base: f64) -> Option<f64> {
    (cur > 0.0 && base > 0.0 && cur.is_finite() && base.is_finite())
        .then(|| (cur - base) * 100.0 / base)
}

/// `+2.3pt`, or `n/a`.
pub fn pt_text(d: Option<f64>) -> String {
    d.map_or_else(|| "n/a".into(), |d| format!("{:+.1}pt", clean(d)))
}

/// `+12.0%`, or `n/a`.
pub fn rel_text(d: Option<f64>) -> String {
    d.map_or_else(|| "n/a".into(), |d| format!("{:+.1}%", clean(d)))
}

/// A share as the views print it (`61.5%`, `-` without samples).
pub fn share_text(s: Option<f64>) -> String {
    s.map_or_else(|| "-".into(), |s| format!("{s:.1}%"))
}

/// No `-0.0`: a rounding to zero prints as `+0.0`.
fn clean(d: f64) -> f64 {
    if d.abs() < 0.05 { 0.0 } else { d }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count_text(cur: u64, base: u64) -> String {
        rel_text(relative(cur as f64, base as f64))
    }

    #[test]
    fn deltas() {
        assert_eq!(pt_text(points(share(25, 100), share(1, 4))), "+0.0pt");
        assert_eq!(pt_text(points(share(30, 100), share(1, 4))), "+5.0pt");
        assert_eq!(pt_text(points(share(3, 100), None)), "n/a");
        assert_eq!(count_text(112, 100), "+12.0%");
        assert_eq!(count_text(90, 100), "-10.0%");
        assert_eq!(count_text(0, 100), "n/a");
        assert_eq!(count_text(5, 0), "n/a");
        assert_eq!(share_text(share(1, 0)), "-");
        assert_eq!(pt_text(Some(-0.01)), "+0.0pt");
    }
}
