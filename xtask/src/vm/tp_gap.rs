//! The tracepoint-only gap: how far the shadow that decides at `sched_waking` (the inputs read
//! there, `--no-function-probes`) is from the one with the select probe, on the same workload.
//!
//! One guest's pair of runs is one sample of a timing-dependent figure: the tracepoint-only
//! disagreements are races between the inputs read at `sched_waking` and the kernel's select a
//! little later, and under TCG that window stretches with the host's load, so one pair's gap
//! moves from run to run by about as much as the margin leaves. Each guest prints its pair;
//! the suite judges the gap of the decisions pooled over every guest it ran.

/// How far the tracepoint-only fidelity may be from the select probe's, pooled over the guests.
pub const TP_GAP_PT: f64 = 2.0;

/// One recording's fidelity: decisions that agreed with the kernel, of `n` evaluated.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Fid {
    pub agreed: u64,
    pub n: u64,
}

impl Fid {
    /// From the report's `agreement` share (0..1) and `evaluated` count.
    pub fn from_share(share: f64, n: u64) -> Self {
        // The share was agreed / n, so the rounding gives back the count.
        let agreed = (share.clamp(0.0, 1.0) * n as f64).round() as u64;
        Self { agreed, n }
    }

    fn share(self) -> Option<f64> {
        (self.n > 0).then(|| self.agreed as f64 / self.n as f64)
    }

    fn add(self, o: Self) -> Self {
        Self {
            agreed: self.agreed + o.agreed,
            n: self.n + o.n,
        }
    }
}

/// One guest's pair: the workload with the function probes and by the tracepoints alone.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pair {
    pub workload: &'static str,
    pub with: Fid,
    pub without: Fid,
}

/// The gap in points (function probes minus tracepoints alone), when both sides have decisions.
pub fn gap_pt(with: Fid, without: Fid) -> Option<f64> {
    Some((with.share()? - without.share()?) * 100.0)
}

/// The per-guest line.
pub fn line(p: &Pair) -> String {
    match gap_pt(p.with, p.without) {
        Some(g) => format!(
            "  tracepoint-only gap on {}: {g:+.2} pt (function probes minus tracepoints alone; \
             judged pooled over the guests, at most {TP_GAP_PT} pt)",
            p.workload
        ),
        None => format!("  tracepoint-only gap on {}: n/a (no decision)", p.workload),
    }
}

/// The suite's verdict per workload over every guest's pair (guest name, pair): report lines
/// and failures.
pub fn judge(pairs: &[(&str, Pair)]) -> (Vec<String>, Vec<String>) {
    let mut lines = Vec::new();
    let mut failures = Vec::new();
    let mut workloads: Vec<&str> = pairs.iter().map(|(_, p)| p.workload).collect();
    workloads.sort_unstable();
    workloads.dedup();
    for w in workloads {
        let of: Vec<&(&str, Pair)> = pairs.iter().filter(|(_, p)| p.workload == w).collect();
        let with = of.iter().fold(Fid::default(), |a, (_, p)| a.add(p.with));
        let without = of.iter().fold(Fid::default(), |a, (_, p)| a.add(p.without));
        let guests: Vec<String> = of
            .iter()
            .map(|(guest, p)| match gap_pt(p.with, p.without) {
                Some(g) => format!("{guest} {g:+.2}"),
                None => format!("{guest} n/a"),
            })
            .collect();
        let Some(gap) = gap_pt(with, without) else {
            failures.push(format!(
                "tracepoint-only gap on {w}: no decisions to compare"
            ));
            continue;
        };
        lines.push(format!(
            "tracepoint-only gap on {w}, pooled over {} guest(s): {gap:+.2} pt ({} of {} vs {} of \
             {} decisions agree; per guest: {}; at most {TP_GAP_PT} pt)",
            of.len(),
            with.agreed,
            with.n,
            without.agreed,
            without.n,
            guests.join(", ")
        ));
        if gap.abs() > TP_GAP_PT {
            failures.push(format!(
                "tracepoint-only gap on {w}, pooled over the guests: {gap:+.2} pt, want within \
                 {TP_GAP_PT} pt"
            ));
        }
    }
    (lines, failures)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(guest: &str, with: (u64, u64), without: (u64, u64)) -> (&str, Pair) {
        let pair = Pair {
            workload: "msg",
            with: Fid {
                agreed: with.0,
                n: with.1,
            },
            without: Fid {
                agreed: without.0,
                n: without.1,
            },
        };
        (guest, pair)
    }

    #[test]
    fn one_guest_over_the_margin_passes_when_the_pool_is_within() {
        let pairs = [
            pair("a", (9_900, 10_000), (9_600, 10_000)),
            pair("b", (9_900, 10_000), (9_800, 10_000)),
            pair("c", (9_900, 10_000), (9_810, 10_000)),
        ];
        let (lines, failures) = judge(&pairs);
        assert!(failures.is_empty(), "{failures:?}");
        assert!(
            lines[0].contains("pooled over 3 guest(s): +1.63 pt"),
            "{lines:?}"
        );
        assert!(lines[0].contains("a +3.00"), "{lines:?}");
        assert!(line(&pairs[0].1).contains("+3.00 pt"));
    }

    #[test]
    fn a_pooled_gap_over_the_margin_fails() {
        let pairs = [
            pair("a", (9_900, 10_000), (9_650, 10_000)),
            pair("b", (9_900, 10_000), (9_680, 10_000)),
        ];
        let (_, failures) = judge(&pairs);
        assert_eq!(failures.len(), 1);
        assert!(failures[0].contains("+2.35 pt"), "{failures:?}");
    }

    #[test]
    fn the_pool_weighs_guests_by_their_decisions() {
        let pairs = [
            pair("small", (100, 100), (50, 100)),
            pair("large", (9_900, 10_000), (9_900, 10_000)),
        ];
        let (lines, failures) = judge(&pairs);
        assert!(failures.is_empty(), "{failures:?}");
        assert!(lines[0].contains("+0.50 pt"), "{lines:?}");
    }

    #[test]
    fn no_decisions_fail_and_workloads_are_judged_apart() {
        let mut busy = pair("a", (990, 1_000), (985, 1_000));
        busy.1.workload = "busy";
        let pairs = [busy, pair("a", (0, 0), (10, 10))];
        let (lines, failures) = judge(&pairs);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].starts_with("tracepoint-only gap on busy"));
        assert_eq!(
            failures,
            ["tracepoint-only gap on msg: no decisions to compare"]
        );
    }

    #[test]
    fn a_share_gives_back_its_count() {
        assert_eq!(Fid::from_share(12_283.0 / 12_379.0, 12_379).agreed, 12_283);
        assert_eq!(Fid::from_share(1.5, 10).agreed, 10);
    }
}
