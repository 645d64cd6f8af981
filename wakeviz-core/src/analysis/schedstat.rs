//! `/proc/schedstat` (versions 15, 16, 17; Documentation/scheduler/sched-stats.rst) and the
//! cross-check of wakeviz's own placement counts against the kernel's wakeup counters.
//!
//! What the kernel counts (`ttwu_stat()`, core.c), on the runqueue of the CPU running
//! `try_to_wake_up()`, i.e. the waker CPU W, for a wakeup placed on CPU C:
//! - `ttwu_count` always; `ttwu_local` when C == W;
//! - otherwise `ttwu_wake_remote` of the lowest domain of W whose span contains C;
//! - `ttwu_move_affine` of the domain where `wake_affine()` chose W (the lowest
//!   SD_WAKE_AFFINE domain of W spanning the previous CPU).
//!
//! So the kernel's per-domain counts are wakeviz's waker -> chosen levels mapped onto W's
//! domain spans, which this module does per CPU from the spans in the file itself.
use serde::Serialize;

use super::placement::OurWakeCounts;
use crate::topology::{CpuSet, Level, Topology};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SchedstatError {
    #[error("no `version` line: not a /proc/schedstat file")]
    NoVersion,
    #[error("schedstat version {0} is not supported (15, 16 and 17 are)")]
    UnsupportedVersion(u32),
    #[error("line {line}: {msg}")]
    Parse { line: usize, msg: String },
    #[error("the two snapshots differ in shape ({0}): CPUs or sched domains changed in between")]
    ShapeChanged(String),
}

/// Counters of one `domain<N>` line that the cross-check uses (the load-balancing ones are
/// kept raw in `other`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DomainStat {
    pub index: u32,
    /// Kernel domain name (version 17+).
    pub name: Option<String>,
    pub span: CpuSet,
    pub ttwu_wake_remote: u64,
    pub ttwu_move_affine: u64,
    pub ttwu_move_balance: u64,
    pub other: Vec<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuStat {
    pub cpu: u32,
    pub yld_count: u64,
    pub sched_count: u64,
    pub sched_goidle: u64,
    pub ttwu_count: u64,
    pub ttwu_local: u64,
    pub rq_cpu_time: u64,
    pub run_delay: u64,
    pub pcount: u64,
    pub domains: Vec<DomainStat>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedstat {
    pub version: u32,
    /// Jiffies at the time of reading.
    pub timestamp: u64,
    pub cpus: Vec<CpuStat>,
}

/// Parses the kernel's `%*pb` cpumask: comma-separated 32-bit hex words, most significant first.
/// At most [`crate::topology::MAX_CPUS`] bits: a longer mask is no kernel's.
pub fn parse_cpumask(s: &str) -> Option<CpuSet> {
    let mut set = CpuSet::new();
    if s.trim().split(',').count() > (crate::topology::MAX_CPUS / 32) as usize {
        return None;
    }
    for (i, w) in s.trim().split(',').rev().enumerate() {
        let v = u32::from_str_radix(w, 16).ok()?;
        for b in 0..32 {
            if v & (1 << b) != 0 {
                set.insert(i as u32 * 32 + b);
            }
        }
    }
    Some(set)
}

fn nums(line: usize, toks: &[&str]) -> Result<Vec<u64>, SchedstatError> {
    toks.iter()
        .map(|t| {
            t.parse().map_err(|_| SchedstatError::Parse {
                line,
                msg: format!("expected a number, got {t:?}"),
            })
        })
        .collect()
}

/// A sched domain name as the kernel spells them (`SMT`, `CLS`, `MC`, `PKG`, `NODE`, `NUMA`):
/// short, letters, digits and `_`. A sample read from a recording is input: anything else
/// is refused rather than shown.
fn domain_name_ok(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Parses one snapshot of `/proc/schedstat`.
pub fn parse(text: &str) -> Result<Schedstat, SchedstatError> {
    let mut version = None;
    let mut timestamp = 0;
    let mut cpus: Vec<CpuStat> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let toks: Vec<&str> = raw.split_whitespace().collect();
        let Some(&head) = toks.first() else { continue };
        let perr = |msg: String| SchedstatError::Parse { line, msg };
        if head == "version" {
            let v: u32 = toks
                .get(1)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| perr("bad version line".into()))?;
            if !(15..=17).contains(&v) {
                return Err(SchedstatError::UnsupportedVersion(v));
            }
            version = Some(v);
        } else if head == "timestamp" {
            timestamp = toks
                .get(1)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| perr("bad timestamp line".into()))?;
        } else if let Some(n) = head.strip_prefix("cpu") {
            version.ok_or(SchedstatError::NoVersion)?;
            let cpu = n
                .parse()
                .map_err(|_| perr(format!("bad cpu label {head:?}")))?;
            let f = nums(line, &toks[1..])?;
            if f.len() < 9 {
                return Err(perr(format!("cpu line has {} fields, expected 9", f.len())));
            }
            cpus.push(CpuStat {
                cpu,
                yld_count: f[0],
                sched_count: f[2],
                sched_goidle: f[3],
                ttwu_count: f[4],
                ttwu_local: f[5],
                rq_cpu_time: f[6],
                run_delay: f[7],
                pcount: f[8],
                domains: Vec::new(),
            });
        } else if let Some(n) = head.strip_prefix("domain") {
            let v = version.ok_or(SchedstatError::NoVersion)?;
            let index = n
                .parse()
                .map_err(|_| perr(format!("bad domain label {head:?}")))?;
            let (name, rest) = if v >= 17 {
                let name = toks.get(1).copied().unwrap_or_default();
                if !domain_name_ok(name) {
                    return Err(perr(format!(
                        "domain name is not a kernel sched domain name ({} bytes)",
                        name.len()
                    )));
                }
                (Some(name.to_string()), toks.get(2..).unwrap_or(&[]))
            } else {
                (None, toks.get(1..).unwrap_or(&[]))
            };
            let (Some(mask), Some(counters)) = (rest.first(), rest.get(1..)) else {
                return Err(perr("domain line without cpumask".into()));
            };
            let span = parse_cpumask(mask).ok_or_else(|| perr(format!("bad cpumask {mask:?}")))?;
            let f = nums(line, counters)?;
            let expect = if v >= 17 { 45 } else { 36 };
            if f.len() != expect {
                return Err(perr(format!(
                    "domain line has {} counters, version {v} has {expect}",
                    f.len()
                )));
            }
            let cpu = cpus
                .last_mut()
                .ok_or_else(|| perr("domain line before any cpu line".into()))?;
            // The three try_to_wake_up() counters are the last three in every version.
            cpu.domains.push(DomainStat {
                index,
                name,
                span,
                ttwu_wake_remote: f[expect - 3],
                ttwu_move_affine: f[expect - 2],
                ttwu_move_balance: f[expect - 1],
                other: f[..expect - 3].to_vec(),
            });
        }
    }
    let version = version.ok_or(SchedstatError::NoVersion)?;
    Ok(Schedstat {
        version,
        timestamp,
        cpus,
    })
}

/// `end - start` of every counter (spans and names from `end`).
pub fn diff(start: &Schedstat, end: &Schedstat) -> Result<Schedstat, SchedstatError> {
    if start.version != end.version || start.cpus.len() != end.cpus.len() {
        return Err(SchedstatError::ShapeChanged(
            "versions or CPU counts differ".into(),
        ));
    }
    let d = |a: u64, b: u64| b.saturating_sub(a);
    let mut cpus = Vec::with_capacity(end.cpus.len());
    for (a, b) in start.cpus.iter().zip(&end.cpus) {
        if a.cpu != b.cpu || a.domains.len() != b.domains.len() {
            return Err(SchedstatError::ShapeChanged(format!("cpu{}", b.cpu)));
        }
        let domains = a
            .domains
            .iter()
            .zip(&b.domains)
            .map(|(x, y)| DomainStat {
                index: y.index,
                name: y.name.clone(),
                span: y.span.clone(),
                ttwu_wake_remote: d(x.ttwu_wake_remote, y.ttwu_wake_remote),
                ttwu_move_affine: d(x.ttwu_move_affine, y.ttwu_move_affine),
                ttwu_move_balance: d(x.ttwu_move_balance, y.ttwu_move_balance),
                other: x
                    .other
                    .iter()
                    .zip(&y.other)
                    .map(|(p, q)| d(*p, *q))
                    .collect(),
            })
            .collect();
        cpus.push(CpuStat {
            cpu: b.cpu,
            yld_count: d(a.yld_count, b.yld_count),
            sched_count: d(a.sched_count, b.sched_count),
            sched_goidle: d(a.sched_goidle, b.sched_goidle),
            ttwu_count: d(a.ttwu_count, b.ttwu_count),
            ttwu_local: d(a.ttwu_local, b.ttwu_local),
            rq_cpu_time: d(a.rq_cpu_time, b.rq_cpu_time),
            run_delay: d(a.run_delay, b.run_delay),
            pcount: d(a.pcount, b.pcount),
            domains,
        });
    }
    Ok(Schedstat {
        version: end.version,
        timestamp: d(start.timestamp, end.timestamp),
        cpus,
    })
}

/// Disagreements above this many percent of the kernel's count are flagged.
pub const THRESHOLD_PCT: f64 = 2.0;

/// One counter of one domain level, summed over all CPUs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ComparisonRow {
    /// Kernel domain name (v17) or the name derived from its span (v15/16); `cpu` for the
    /// per-runqueue counters.
    pub domain: String,
    /// wakeviz levels this domain's new CPUs fall in.
    pub levels: Vec<Level>,
    pub counter: &'static str,
    pub kernel: u64,
    pub wakeviz: u64,
    /// `(wakeviz - kernel) / kernel` in percent; `None` when the kernel counted nothing.
    pub diff_pct: Option<f64>,
    pub flagged: bool,
    /// False where wakeviz cannot observe the counter (affine moves inside one LLC).
    pub comparable: bool,
    /// A level's CPUs are split over several domains of this name (several NUMA distances
    /// inside one wakeviz level): counts were attributed to the lowest one.
    pub approximate: bool,
}

/// One CPU's `ttwu_count` and `ttwu_local` beside wakeviz's counts for that waker CPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CpuRow {
    pub cpu: u32,
    pub ttwu_count: u64,
    pub wakeviz_count: u64,
    pub ttwu_local: u64,
    pub wakeviz_local: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SchedstatComparison {
    pub version: u32,
    pub interval_jiffies: u64,
    pub threshold_pct: f64,
    pub flagged: usize,
    pub rows: Vec<ComparisonRow>,
    /// The two per-runqueue counters CPU by CPU (the waker's CPU), where a sum could hide
    /// CPUs that disagree in opposite directions.
    pub per_cpu: Vec<CpuRow>,
    pub notes: Vec<&'static str>,
}

impl SchedstatComparison {
    /// Whether another row counts the same counter in a domain of the same name (the NUMA
    /// levels of a multi-node package): such a row is named with the wakeviz levels it adds.
    pub fn name_shared(&self, r: &ComparisonRow) -> bool {
        self.rows
            .iter()
            .filter(|x| x.domain == r.domain && x.counter == r.counter)
            .count()
            > 1
    }
}

fn derived_name(t: &Topology, lowest: Level) -> &'static str {
    match lowest {
        Level::SameCpu | Level::SmtSibling => "SMT",
        Level::SameLlc => "MC",
        Level::SameNode if t.nodes_per_package() > 1 => "NODE",
        Level::SameNode => "PKG",
        Level::SamePackage | Level::CrossPackage => "NUMA",
    }
}

fn row(
    domain: String,
    levels: Vec<Level>,
    counter: &'static str,
    comparable: bool,
) -> ComparisonRow {
    ComparisonRow {
        domain,
        levels,
        counter,
        kernel: 0,
        wakeviz: 0,
        diff_pct: None,
        flagged: false,
        comparable,
        approximate: false,
    }
}

/// Compares the kernel's wakeup counters between two `/proc/schedstat` snapshots with
/// wakeviz's counts over the same interval.
pub fn compare(
    start: &str,
    end: &str,
    topo: &Topology,
    ours: &OurWakeCounts,
) -> Result<SchedstatComparison, SchedstatError> {
    Ok(compare_diff(
        &diff(&parse(start)?, &parse(end)?)?,
        topo,
        ours,
    ))
}

/// [`compare`] on the counters' increase `d` ([`diff`]).
pub fn compare_diff(d: &Schedstat, topo: &Topology, ours: &OurWakeCounts) -> SchedstatComparison {
    Plan::new(d, topo).compare(ours)
}

/// One domain of one waker CPU: the rows its two counters add to and the wakeviz levels it
/// adds (those no lower domain of that CPU had).
#[derive(Clone, Debug)]
struct DomainSlot {
    cpu: u32,
    wake_row: usize,
    affine_row: usize,
    fresh: Vec<Level>,
}

/// The comparison's shape and the kernel's side, from one counter increase: which rows exist,
/// which wakeviz levels each CPU's domains add, the kernel's sums. Building it walks every
/// domain's span, so it is built once per sample; [`Plan::compare`] then adds wakeviz's
/// counts in time proportional to CPUs x domains.
#[derive(Clone, Debug)]
pub struct Plan {
    version: u32,
    interval_jiffies: u64,
    rows: Vec<ComparisonRow>,
    slots: Vec<DomainSlot>,
    /// (cpu, ttwu_count, ttwu_local) of every CPU in the topology's range.
    cpus: Vec<(u32, u64, u64)>,
}

impl Plan {
    pub fn new(d: &Schedstat, topo: &Topology) -> Self {
        let lm = crate::topology::LevelMap::new(topo);
        let bound = topo.cpu_bound();
        let mut rows = vec![
            row("cpu".into(), vec![], "ttwu_count", true),
            row("cpu".into(), vec![Level::SameCpu], "ttwu_local", true),
        ];
        let mut slots = Vec::new();
        let mut cpus = Vec::with_capacity(d.cpus.len());
        for c in d.cpus.iter().filter(|c| (c.cpu as usize) < bound) {
            rows[0].kernel += c.ttwu_count;
            rows[1].kernel += c.ttwu_local;
            cpus.push((c.cpu, c.ttwu_count, c.ttwu_local));
            let mut seen: CpuSet = std::iter::once(c.cpu).collect();
            let mut assigned = [false; Level::ALL.len()];
            for dom in &c.domains {
                let mut levels: Vec<Level> = dom
                    .span
                    .iter()
                    .filter(|x| !seen.contains(*x))
                    .filter_map(|x| lm.level(c.cpu, x))
                    .collect();
                levels.sort();
                levels.dedup();
                for x in dom.span.iter() {
                    seen.insert(x);
                }
                let Some(&lowest) = levels.first() else {
                    continue;
                };
                let approximate = levels.iter().any(|l| assigned[l.index()]);
                let fresh: Vec<Level> = levels
                    .iter()
                    .copied()
                    .filter(|l| !assigned[l.index()])
                    .collect();
                for l in &fresh {
                    assigned[l.index()] = true;
                }
                let name = dom
                    .name
                    .clone()
                    .unwrap_or_else(|| derived_name(topo, lowest).into());
                let comparable_affine = levels.iter().any(|&l| l > Level::SameLlc);
                let mut at = |counter: &'static str, kernel: u64, comparable: bool| {
                    let i = match rows.iter().position(|r| {
                        r.domain == name && r.levels == levels && r.counter == counter
                    }) {
                        Some(i) => i,
                        None => {
                            rows.push(row(name.clone(), levels.clone(), counter, comparable));
                            rows.len() - 1
                        }
                    };
                    rows[i].kernel += kernel;
                    rows[i].approximate |= approximate;
                    i
                };
                let wake_row = at("ttwu_wake_remote", dom.ttwu_wake_remote, true);
                let affine_row = at("ttwu_move_affine", dom.ttwu_move_affine, comparable_affine);
                slots.push(DomainSlot {
                    cpu: c.cpu,
                    wake_row,
                    affine_row,
                    fresh,
                });
            }
        }
        Self {
            version: d.version,
            interval_jiffies: d.timestamp,
            rows,
            slots,
            cpus,
        }
    }

    /// The comparison with wakeviz's per-waker-CPU counts of the same interval.
    pub fn compare(&self, ours: &OurWakeCounts) -> SchedstatComparison {
        let mut rows = self.rows.clone();
        let none = crate::topology::LevelCounts::default();
        let mine = |cpu: u32| ours.by_waker.get(cpu as usize).unwrap_or(&none);
        let aff = |cpu: u32| ours.affine_by_waker.get(cpu as usize).unwrap_or(&none);
        let mut per_cpu = Vec::with_capacity(self.cpus.len());
        for &(cpu, ttwu_count, ttwu_local) in &self.cpus {
            let m = mine(cpu);
            rows[0].wakeviz += m.total();
            rows[1].wakeviz += m.get(Level::SameCpu);
            per_cpu.push(CpuRow {
                cpu,
                ttwu_count,
                wakeviz_count: m.total(),
                ttwu_local,
                wakeviz_local: m.get(Level::SameCpu),
            });
        }
        for s in &self.slots {
            let (m, a) = (mine(s.cpu), aff(s.cpu));
            rows[s.wake_row].wakeviz += s.fresh.iter().map(|&l| m.get(l)).sum::<u64>();
            rows[s.affine_row].wakeviz += s.fresh.iter().map(|&l| a.get(l)).sum::<u64>();
        }
        finish(self.version, self.interval_jiffies, rows, per_cpu)
    }
}

fn finish(
    version: u32,
    interval_jiffies: u64,
    mut rows: Vec<ComparisonRow>,
    per_cpu: Vec<CpuRow>,
) -> SchedstatComparison {
    let mut flagged = 0;
    for r in &mut rows {
        r.diff_pct = (r.kernel > 0).then(|| {
            ((r.wakeviz as f64 - r.kernel as f64) / r.kernel as f64 * 1000.0).round() / 10.0
        });
        r.flagged = r.comparable
            && match r.diff_pct {
                Some(p) => p.abs() > THRESHOLD_PCT,
                None => r.wakeviz > 0,
            };
        flagged += usize::from(r.flagged);
    }
    SchedstatComparison {
        version,
        interval_jiffies,
        threshold_pct: THRESHOLD_PCT,
        flagged,
        rows,
        per_cpu,
        notes: vec![
            "the kernel also counts self-wakeups and wakeups whose sched_waking was dropped; wakeviz counts joined placements only",
            "ttwu_move_affine inside one LLC is not observable from the outcome (see the affine definition) and is not compared",
        ],
    }
}
