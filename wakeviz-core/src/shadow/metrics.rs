//! Per-policy counters, all fixed-size (no per-placement allocation).
use super::policy::Rule;
use strum::EnumCount;

use crate::topology::Level;

/// Probe counts below this have a bucket each; larger ones share power-of-two buckets (the
/// quantile then reads as the bucket's lower bound), so the histogram stays 2.1 KB per policy.
pub const PROBE_EXACT: usize = 256;
pub const PROBE_HIST: usize = PROBE_EXACT + 16;

#[inline]
fn probe_bucket(p: u32) -> usize {
    let p = p as usize;
    if p < PROBE_EXACT {
        p
    } else {
        let log = (usize::BITS - 1 - p.leading_zeros()) as usize; // >= 8
        (PROBE_EXACT + log - 8).min(PROBE_HIST - 1)
    }
}

#[inline]
fn bucket_value(i: usize) -> u32 {
    if i < PROBE_EXACT {
        i as u32
    } else {
        1u32 << (i - PROBE_EXACT + 8).min(31)
    }
}

/// When the waker left its CPU after a sync wakeup (the test of Mel Gorman's objection to
/// the WF_SYNC patch: "the waker does not necessarily go to sleep").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SleptHist {
    /// Blocked (`prev_state != 0`) within 10 us, 50 us, 200 us, 1 ms, later.
    pub slept: [u64; 5],
    /// Next switch-out was a preemption: the waker was still runnable.
    pub preempted: u64,
    /// No matching switch-out seen (stream ended, IRQ-context waker, overflow).
    pub unresolved: u64,
}

/// Upper bounds of [`SleptHist::slept`] buckets, ns (the last is open).
pub const SLEPT_BOUNDS_NS: [u64; 4] = [10_000, 50_000, 200_000, 1_000_000];
/// "Really went to sleep right after the wakeup": blocked within this long.
pub const SLEPT_THRESHOLD_NS: u64 = 50_000;

impl SleptHist {
    pub fn add_slept(&mut self, dt_ns: u64) {
        let i = SLEPT_BOUNDS_NS
            .iter()
            .position(|&b| dt_ns <= b)
            .unwrap_or(SLEPT_BOUNDS_NS.len());
        self.slept[i] += 1;
    }

    pub fn merge(&mut self, o: &Self) {
        for (a, b) in self.slept.iter_mut().zip(o.slept) {
            *a += b;
        }
        self.preempted += o.preempted;
        self.unresolved += o.unresolved;
    }

    pub fn total(&self) -> u64 {
        self.slept.iter().sum::<u64>() + self.preempted + self.unresolved
    }

    /// Share (percent of resolved cases) where the waker blocked within the threshold.
    pub fn slept_within_threshold_pct(&self) -> Option<f64> {
        let resolved = self.total() - self.unresolved;
        (resolved > 0).then(|| pct(self.slept[0] + self.slept[1], resolved))
    }
}

/// `a` as a percentage of `b`; `None` when `b` is 0 (no such share).
pub fn pct_of(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| 100.0 * a as f64 / b as f64)
}

pub fn pct(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

/// One policy's tallies.
#[derive(Clone, Debug)]
pub struct PolicyMetrics {
    pub evaluated: u64,
    pub agree: u64,
    pub idle: u64,
    pub stacked: u64,
    pub probes_sum: u64,
    pub probes_hist: Vec<u64>,
    pub migrations: u64,
    pub vs_waker: [u64; 6],
    pub vs_prev: [u64; 6],
    pub exact: u64,
    /// Sum of the chosen CPUs' run-queue lengths at decision time.
    pub queue_sum: u64,
    /// Decisions per rule slot ([`Rule::index`]).
    pub rules: [u64; Rule::SLOTS],
    /// Decisions that queued the wakee behind the waker (`Decision::behind_waker`).
    pub behind_waker: u64,
    /// Waker behaviour after the wakeups this policy queued behind it.
    pub slept: SleptHist,
    /// The cache-placement questions (see [`Cache`]).
    pub cache: Cache,
    /// The kernel's idle scan as the policy would run it (see [`Scan`]).
    pub scan: Scan,
}

/// Decisions that ran `select_idle_cpu`, and the CPUs those scans tested.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Scan {
    pub scans: u64,
    pub tests: u64,
}

impl Scan {
    #[inline]
    fn record(&mut self, o: &Outcome) {
        if let Some(n) = o.scan {
            self.scans += 1;
            self.tests += u64::from(n);
        }
    }

    fn merge(&mut self, o: &Self) {
        self.scans += o.scans;
        self.tests += o.tests;
    }
}

/// Counts behind the cache-placement figures: where the wakee's process prefers to run, idle
/// CPUs passed over, and how often a task's LLC changes between wakeups.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cache {
    /// Decisions whose wakee's process had a preferred LLC, and of those, placed in it.
    pub pref_known: u64,
    pub pref_in: u64,
    /// Stacked decisions with an idle CPU in the chosen CPU's LLC, and those idle CPUs summed.
    pub idle_left: u64,
    pub idle_left_cpus: u64,
    /// Decisions with a previous choice for the same task, and of those, in another LLC.
    pub moves_known: u64,
    pub moves: u64,
}

impl Cache {
    #[inline]
    fn record(&mut self, o: &Outcome) {
        if let Some(i) = o.in_pref {
            self.pref_known += 1;
            self.pref_in += u64::from(i);
        }
        if o.idle_left > 0 {
            self.idle_left += 1;
            self.idle_left_cpus += u64::from(o.idle_left);
        }
        if let Some(m) = o.llc_moved {
            self.moves_known += 1;
            self.moves += u64::from(m);
        }
    }

    fn merge(&mut self, o: &Self) {
        self.pref_known += o.pref_known;
        self.pref_in += o.pref_in;
        self.idle_left += o.idle_left;
        self.idle_left_cpus += o.idle_left_cpus;
        self.moves_known += o.moves_known;
        self.moves += o.moves;
    }
}

impl Default for PolicyMetrics {
    fn default() -> Self {
        Self {
            evaluated: 0,
            agree: 0,
            idle: 0,
            stacked: 0,
            probes_sum: 0,
            probes_hist: vec![0; PROBE_HIST],
            migrations: 0,
            vs_waker: [0; 6],
            vs_prev: [0; 6],
            exact: 0,
            queue_sum: 0,
            rules: [0; Rule::SLOTS],
            behind_waker: 0,
            slept: SleptHist::default(),
            cache: Cache::default(),
            scan: Scan::default(),
        }
    }
}

/// One evaluated decision, as recorded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub cpu: u32,
    pub probes: u32,
    pub rule: Rule,
    /// The chosen CPU was idle at decision time (reconstructed state).
    pub idle: bool,
    /// Only probe-read kernel inputs were used (besides the reconstructed idle map).
    pub exact: bool,
    /// `nr_running` of the chosen CPU at decision time (reconstructed).
    pub queue: u32,
    /// Queued behind the waker (see `Decision::behind_waker`).
    pub behind_waker: bool,
    /// The chosen CPU is in the wakee's process's preferred LLC (`None`: no preference known).
    pub in_pref: Option<bool>,
    /// Stacked while this many CPUs of the chosen CPU's LLC were idle (0 when not stacked).
    pub idle_left: u16,
    /// The chosen LLC differs from the policy's choice at the task's previous scored wakeup
    /// (`None`: none seen).
    pub llc_moved: Option<bool>,
    /// CPUs `select_idle_cpu` tested (`None`: it did not run).
    pub scan: Option<u32>,
}

impl PolicyMetrics {
    /// Counts one decision; `vs_waker`/`vs_prev` are the levels of `o.cpu` against the
    /// waker's and the previous CPU (computed by the caller, once per distinct CPU).
    /// Inlined: called for every policy of every scored placement, and the call itself (six
    /// arguments) cost a third of the body.
    #[inline]
    pub fn record(
        &mut self,
        o: &Outcome,
        kernel: u32,
        p: u32,
        vs_waker: Option<Level>,
        vs_prev: Option<Level>,
    ) {
        self.evaluated += 1;
        self.agree += u64::from(o.cpu == kernel);
        if o.idle {
            self.idle += 1;
        } else {
            self.stacked += 1;
        }
        self.probes_sum += u64::from(o.probes);
        self.probes_hist[probe_bucket(o.probes)] += 1;
        self.migrations += u64::from(o.cpu != p);
        if let Some(l) = vs_waker {
            self.vs_waker[l.index()] += 1;
        }
        if let Some(l) = vs_prev {
            self.vs_prev[l.index()] += 1;
        }
        self.exact += u64::from(o.exact);
        self.queue_sum += u64::from(o.queue);
        self.rules[o.rule.index()] += 1;
        self.behind_waker += u64::from(o.behind_waker);
        self.cache.record(o);
        self.scan.record(o);
    }

    pub fn agreement(&self) -> Option<f64> {
        (self.evaluated > 0).then(|| self.agree as f64 / self.evaluated as f64)
    }

    /// Mean probes per decision; `None` before the first one.
    pub fn probes_mean(&self) -> Option<f64> {
        mean(self.probes_sum, self.evaluated)
    }

    /// Share of decisions that ran `select_idle_cpu`, percent; `None` before the first one.
    pub fn scans_pct(&self) -> Option<f64> {
        (self.evaluated > 0).then(|| pct(self.scan.scans, self.evaluated))
    }

    /// Mean CPUs tested per `select_idle_cpu` run; `None` when none ran.
    pub fn cpus_per_scan(&self) -> Option<f64> {
        mean(self.scan.tests, self.scan.scans)
    }

    /// Mean CPUs `select_idle_cpu` tested per decision; `None` before the first one.
    pub fn scan_tests_mean(&self) -> Option<f64> {
        mean(self.scan.tests, self.evaluated)
    }

    /// Mean run-queue length of the chosen CPU; `None` before the first decision.
    pub fn queue_mean(&self) -> Option<f64> {
        mean(self.queue_sum, self.evaluated)
    }

    /// Probe-count quantile (a bucket's lower bound past [`PROBE_EXACT`]); `None` before the
    /// first decision.
    pub fn probes_quantile(&self, q: f64) -> Option<u32> {
        if self.evaluated == 0 {
            return None;
        }
        let want = ((self.evaluated as f64) * q).ceil().max(1.0) as u64;
        let mut acc = 0;
        for (i, &n) in self.probes_hist.iter().enumerate() {
            acc += n;
            if acc >= want {
                return Some(bucket_value(i));
            }
        }
        Some(bucket_value(PROBE_HIST - 1))
    }
}

/// Outcome flags of [`Counts::flags`]: one counter per combination.
const AGREE: usize = 1;
const IDLE: usize = 2;
const MIGRATED: usize = 4;
const EXACT: usize = 8;
const BEHIND: usize = 16;
/// A level slot per [`Level`], and one for "no level".
const LEVELS: usize = Level::COUNT + 1;

/// One policy's counters as the evaluator keeps them on the per-placement path, folded into
/// [`PolicyMetrics`] only when a report is made: a placement increments one counter for its
/// combination of yes/no outcomes (agree, idle, migrated, exact, behind the waker), one for
/// its pair of levels, one rule and one probe bucket, and adds its queue length, which is
/// about half the work of counting each figure on its own (`PolicyMetrics::record`, still used
/// for subsets). The folded figures are exactly the per-figure counts.
#[derive(Clone, Debug)]
pub struct Counts {
    flags: [u64; 32],
    /// `vs_waker * LEVELS + vs_prev`, `Level::COUNT` standing for none.
    levels: [u64; LEVELS * LEVELS],
    rules: [u64; Rule::SLOTS],
    probes_hist: [u64; PROBE_HIST],
    /// Probes of the decisions past [`PROBE_EXACT`] (the others' sum is in the histogram).
    probes_big: u64,
    queue_sum: u64,
    cache: Cache,
    scan: Scan,
}

impl Default for Counts {
    fn default() -> Self {
        Self {
            flags: [0; 32],
            levels: [0; LEVELS * LEVELS],
            rules: [0; Rule::SLOTS],
            probes_hist: [0; PROBE_HIST],
            probes_big: 0,
            queue_sum: 0,
            cache: Cache::default(),
            scan: Scan::default(),
        }
    }
}

impl Counts {
    /// Counts one decision, as [`PolicyMetrics::record`] would.
    #[inline]
    pub fn record(
        &mut self,
        o: &Outcome,
        kernel: u32,
        p: u32,
        vs_waker: Option<Level>,
        vs_prev: Option<Level>,
    ) {
        let f = (usize::from(o.cpu == kernel) * AGREE)
            | (usize::from(o.idle) * IDLE)
            | (usize::from(o.cpu != p) * MIGRATED)
            | (usize::from(o.exact) * EXACT)
            | (usize::from(o.behind_waker) * BEHIND);
        self.flags[f] += 1;
        let lw = vs_waker.map_or(Level::COUNT, Level::index);
        let lp = vs_prev.map_or(Level::COUNT, Level::index);
        self.levels[(lw * LEVELS + lp) % (LEVELS * LEVELS)] += 1;
        self.rules[o.rule.index()] += 1;
        let b = probe_bucket(o.probes);
        self.probes_hist[b] += 1;
        if b >= PROBE_EXACT {
            self.probes_big += u64::from(o.probes);
        }
        self.queue_sum += u64::from(o.queue);
        self.cache.record(o);
        self.scan.record(o);
    }

    /// Adds these counts to `m`.
    pub fn fold_into(&self, m: &mut PolicyMetrics) {
        for (f, &n) in self.flags.iter().enumerate() {
            let has = |bit: usize| if f & bit != 0 { n } else { 0 };
            m.evaluated += n;
            m.agree += has(AGREE);
            m.idle += has(IDLE);
            m.stacked += n - has(IDLE);
            m.migrations += has(MIGRATED);
            m.exact += has(EXACT);
            m.behind_waker += has(BEHIND);
        }
        for (i, &n) in self.levels.iter().enumerate() {
            let (lw, lp) = (i / LEVELS, i % LEVELS);
            if let Some(x) = m.vs_waker.get_mut(lw) {
                *x += n;
            }
            if let Some(x) = m.vs_prev.get_mut(lp) {
                *x += n;
            }
        }
        for (a, &b) in m.rules.iter_mut().zip(&self.rules) {
            *a += b;
        }
        for (i, (a, &b)) in m.probes_hist.iter_mut().zip(&self.probes_hist).enumerate() {
            *a += b;
            if i < PROBE_EXACT {
                m.probes_sum += i as u64 * b;
            }
        }
        m.probes_sum += self.probes_big;
        m.queue_sum += self.queue_sum;
        m.cache.merge(&self.cache);
        m.scan.merge(&self.scan);
    }
}

fn mean(sum: u64, n: u64) -> Option<f64> {
    (n > 0).then(|| sum as f64 / n as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The compact counts fold into exactly the figures counted one by one.
    #[test]
    fn folded_counts_equal_the_per_figure_counts() {
        let (mut c, mut m) = (Counts::default(), PolicyMetrics::default());
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            rng = rng
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let r = rng >> 16;
            let o = Outcome {
                cpu: (r % 8) as u32,
                probes: if r.is_multiple_of(7) {
                    (r % 5000) as u32
                } else {
                    (r % 40) as u32
                },
                rule: Rule::from_index((r >> 8) as usize % Rule::SLOTS).unwrap_or_default(),
                idle: r & 1 << 20 != 0,
                exact: r & 1 << 21 != 0,
                queue: (r >> 22) as u32 % 5,
                behind_waker: r & 1 << 30 != 0,
                in_pref: [None, Some(true), Some(false)]
                    .get((r >> 48) as usize % 3)
                    .copied()
                    .flatten(),
                idle_left: (r >> 50) as u16 % 3,
                llc_moved: [None, Some(true), Some(false)]
                    .get((r >> 52) as usize % 3)
                    .copied()
                    .flatten(),
                scan: (!(r >> 12).is_multiple_of(3)).then_some((r >> 14) as u32 % 20),
            };
            let lw = Level::ALL.get((r >> 32) as usize % 7).copied();
            let lp = Level::ALL.get((r >> 36) as usize % 7).copied();
            let (kernel, p) = ((r >> 40) as u32 % 8, (r >> 44) as u32 % 8);
            c.record(&o, kernel, p, lw, lp);
            m.record(&o, kernel, p, lw, lp);
        }
        let mut f = PolicyMetrics::default();
        c.fold_into(&mut f);
        assert_eq!(format!("{f:?}"), format!("{m:?}"));
        assert!(m.probes_hist[PROBE_EXACT..].iter().any(|&n| n > 0));
    }
}
