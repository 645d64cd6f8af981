//! The noise test behind the `*` markers: Welch's two-sided t-test on per-run values, with
//! the Benjamini-Hochberg correction over every figure a diff compares (a diff tests a hundred
//! figures or more; at 5 % each, a handful would be marked by chance alone between two groups
//! of the same kernel).
//!
//! Written here rather than taken from a statistics crate: the test needs the Student t
//! distribution only, which is the regularized incomplete beta function below (Numerical
//! Recipes' continued fraction, `ln Γ` by Lanczos), about sixty lines with known test values.

/// Mean and sample standard deviation (`n - 1`); `None` for an empty slice, sd 0 for one value.
pub fn mean_sd(v: &[f64]) -> Option<(f64, f64)> {
    if v.is_empty() {
        return None;
    }
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 {
        v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    Some((m, var.sqrt()))
}

/// Two-sided p-value of Welch's t-test between `a` and `b`; `None` with fewer than two runs on
/// a side (no estimate of the noise). `resolution` is the granularity a value is known to (a
/// histogram bucket, a whole count): each side's variance is at least that of a uniform error
/// over it, so two identical-looking groups one bucket apart are not "infinitely" different.
pub fn welch_p(a: &[f64], b: &[f64], resolution: f64) -> Option<f64> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (ma, sa) = mean_sd(a)?;
    let (mb, sb) = mean_sd(b)?;
    let floor = resolution * resolution / 12.0;
    let (va, vb) = (
        (sa * sa).max(floor) / a.len() as f64,
        (sb * sb).max(floor) / b.len() as f64,
    );
    let se2 = va + vb;
    if se2 <= 0.0 || !se2.is_finite() {
        return Some(if ma == mb { 1.0 } else { 0.0 });
    }
    let t = (ma - mb) / se2.sqrt();
    // Welch-Satterthwaite degrees of freedom.
    let df = se2 * se2
        / (va * va / (a.len() as f64 - 1.0) + vb * vb / (b.len() as f64 - 1.0))
            .max(f64::MIN_POSITIVE);
    Some(t_two_sided_p(t, df))
}

/// `P(|T| >= |t|)` for Student's t with `df` degrees of freedom.
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return 0.0;
    }
    let x = df / (df + t * t);
    inc_beta(df / 2.0, 0.5, x).clamp(0.0, 1.0)
}

/// The two-sided critical value of Student's t: `|T| >= t` with probability `alpha`.
pub fn t_critical(alpha: f64, df: f64) -> f64 {
    // The p-value falls with t: bisect (60 halvings of [0, 1e6] are below 1e-12).
    let (mut lo, mut hi) = (0.0, 1e6);
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if t_two_sided_p(mid, df) > alpha {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Half-width of the 95 % confidence interval of `mean(a) - mean(b)`, unpaired (Welch); `None`
/// with fewer than two runs on a side.
pub fn welch_ci95(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (_, sa) = mean_sd(a)?;
    let (_, sb) = mean_sd(b)?;
    let (va, vb) = (sa * sa / a.len() as f64, sb * sb / b.len() as f64);
    let se2 = va + vb;
    if se2 <= 0.0 {
        return Some(0.0);
    }
    let df = se2 * se2
        / (va * va / (a.len() as f64 - 1.0) + vb * vb / (b.len() as f64 - 1.0))
            .max(f64::MIN_POSITIVE);
    Some(t_critical(0.05, df) * se2.sqrt())
}

/// Benjamini-Hochberg: which of `p` are significant, controlling the false discovery rate at
/// `alpha`. When nothing changed at all (two groups of one kernel) this is the probability of
/// marking anything, as with Holm's correction; when some figures did change, it keeps the
/// power to mark the others that moved with them (Holm's thresholds, `alpha / m`, are out of
/// reach of a t-test with 2 degrees of freedom, three runs a side).
pub fn benjamini_hochberg(p: &[f64], alpha: f64) -> Vec<bool> {
    let mut idx: Vec<usize> = (0..p.len()).collect();
    idx.sort_by(|&i, &j| p[i].total_cmp(&p[j]));
    let m = p.len();
    let last = idx
        .iter()
        .enumerate()
        .rev()
        .find(|(k, i)| p[**i] <= alpha * (*k + 1) as f64 / m as f64)
        .map(|(k, _)| k);
    let mut out = vec![false; m];
    if let Some(last) = last {
        for &i in &idx[..=last] {
            out[i] = true;
        }
    }
    out
}

fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 6] = [
        76.180_091_729_471_46,
        -86.505_320_329_416_77,
        24.014_098_240_830_91,
        -1.231_739_572_450_155,
        0.001_208_650_973_866_179,
        -0.000_005_395_239_384_953,
    ];
    let tmp = x + 5.5 - (x + 0.5) * (x + 5.5).ln();
    let mut ser = 1.000_000_000_190_015;
    for (j, g) in G.iter().enumerate() {
        ser += g / (x + 1.0 + j as f64);
    }
    -tmp + (2.506_628_274_631_000_5 * ser / x).ln()
}

/// Regularized incomplete beta `I_x(a, b)`.
fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(a, b, x) / a
    } else {
        1.0 - front * beta_cf(b, a, 1.0 - x) / b
    }
}

/// Continued fraction of the incomplete beta (modified Lentz).
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..300 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-12 {
            break;
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_distribution_matches_tables() {
        // Two-sided 95 % critical values of Student's t.
        for (t, df) in [
            (12.706_2, 1.0),
            (4.302_65, 2.0),
            (2.776_45, 4.0),
            (2.228_14, 10.0),
        ] {
            let p = t_two_sided_p(t, df);
            assert!((p - 0.05).abs() < 1e-4, "t={t} df={df}: p={p}");
        }
        assert!((t_two_sided_p(0.0, 3.0) - 1.0).abs() < 1e-12);
        assert!((t_two_sided_p(1.959_96, 1e7) - 0.05).abs() < 1e-4);
    }

    #[test]
    fn critical_values_and_intervals_match_tables() {
        for (t, df) in [(12.706_2, 1.0), (4.302_65, 2.0), (2.228_14, 10.0)] {
            assert!((t_critical(0.05, df) - t).abs() < 1e-3, "df={df}");
        }
        // scipy: a = [1, 2, 3], b = [4, 5, 6]: se = 0.8165, df = 4, t = 2.7764: 2.2669.
        let h = welch_ci95(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert!((h - 2.2669).abs() < 1e-3, "{h}");
        assert_eq!(welch_ci95(&[1.0], &[4.0, 5.0]), None);
        assert_eq!(welch_ci95(&[1.0, 1.0], &[4.0, 4.0]), Some(0.0));
    }

    #[test]
    fn welch_against_a_worked_example() {
        // scipy.stats.ttest_ind(a, b, equal_var=False): t = -3.6742, df = 4, p = 0.02131.
        let a = [1.0, 2.0, 3.0];
        let b = [4.0, 5.0, 6.0];
        let p = welch_p(&a, &b, 0.0).unwrap();
        assert!((p - 0.021_31).abs() < 1e-4, "{p}");
        // Unequal variances and sizes: t = -1.4882, df = 2.409, p = 0.2544 (numeric integral).
        let p = welch_p(&[1.0, 2.0, 3.0, 4.0], &[2.0, 6.0, 9.0], 0.0).unwrap();
        assert!((p - 0.2544).abs() < 1e-3, "{p}");
        assert_eq!(welch_p(&[1.0], &b, 0.0), None, "one run: no test");
        assert_eq!(welch_p(&[2.0, 2.0], &[2.0, 2.0], 0.0), Some(1.0));
        assert_eq!(welch_p(&[2.0, 2.0], &[3.0, 3.0], 0.0), Some(0.0));
        // One bucket apart with a 1 % bucket: not a certainty any more.
        let p = welch_p(&[100.0, 100.0, 100.0], &[101.0, 101.0, 101.0], 1.0).unwrap();
        assert!(p > 0.001 && p < 0.1, "{p}");
    }

    #[test]
    fn benjamini_hochberg_steps_up() {
        // m = 3: thresholds 0.0167, 0.0333, 0.05.
        assert_eq!(
            benjamini_hochberg(&[0.01, 0.04, 0.03], 0.05),
            [true, true, true]
        );
        assert_eq!(
            benjamini_hochberg(&[0.01, 0.04, 0.06], 0.05),
            [true, false, false]
        );
        assert_eq!(
            benjamini_hochberg(&[0.02, 0.04, 0.06], 0.05),
            [false, false, false]
        );
        assert_eq!(benjamini_hochberg(&[0.2, 0.001], 0.05), [false, true]);
        assert!(benjamini_hochberg(&[], 0.05).is_empty());
    }
}
