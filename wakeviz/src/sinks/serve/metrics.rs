//! The OpenMetrics text of one published [`Snapshot`], encoded by `prometheus-client` through a
//! [`Collector`] that reads the snapshot at scrape time. Every figure is read from the snapshot
//! (the same numbers the dashboard and `--report json` show); the only arithmetic is regrouping
//! per-CPU rows by their LLC and node, turning log2 buckets into seconds, and percent into
//! ratios. Labels are bounded by the topology and the level, policy and probe names: never a
//! pid or a task name, so a fleet's series count does not grow with its workloads.
use std::{collections::BTreeMap, fmt, sync::Arc};

use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, EncodeMetric as _, NoLabelSet},
    metrics::{MetricType, counter::ConstCounter, gauge::ConstGauge},
    registry::{Registry, Unit},
};
use wakeviz_core::{
    analysis::{
        Snapshot, TopologySection,
        latency::LatencySummary,
        placement::{CpuCounts, LevelCounts},
    },
    event::Kind,
    topology::Level,
};

/// Content type of the body [`encode`] returns.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Highest log2 bucket exported (as `le`, in the histogram's own unit): 2^36 ns is past the
/// 60 s at which the analysis saturates latencies, 2^26 µs as well. A fixed bucket set, not
/// the snapshot's non-empty range, so `histogram_quantile` sees the same `le`s every scrape.
const SCAN_TOP_LOG2: u32 = 36;
const WAKE_TOP_LOG2: u32 = 26;

/// A snapshot as served: `seq` counts publications, so a scraper can tell two scrapes of the
/// same snapshot (identical figures) from two snapshots.
#[derive(Clone, Debug)]
pub struct Published {
    pub seq: u64,
    pub snap: Arc<Snapshot>,
}

/// Encodes `p` as a complete OpenMetrics exposition (ending in `# EOF`).
pub fn encode(p: &Published) -> Result<String, fmt::Error> {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(SnapshotCollector(p.clone())));
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, &registry)?;
    Ok(out)
}

#[derive(Debug)]
struct SnapshotCollector(Published);

type Labels = Vec<(&'static str, String)>;

impl Collector for SnapshotCollector {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), fmt::Error> {
        let s = &*self.0.snap;
        info(
            &mut e,
            "wakeviz_build",
            "The wakeviz binary serving these metrics",
            &[vec![("version", env!("CARGO_PKG_VERSION").to_string())]],
        )?;
        info(
            &mut e,
            "wakeviz_capture",
            "What is captured: kernel, scan-latency source, topology, the tasks in scope",
            &[vec![
                ("kernel_release", s.recording.kernel_release.clone()),
                ("scan_source", s.scan_latency.source.to_string()),
                ("topology", s.topology.summary.clone()),
                // Which tasks the figures are about (`--scope`): all, cmd, tree:PID, ...
                ("scope", s.scope.name.clone()),
            ]],
        )?;
        let probes: Vec<Labels> = s
            .probes
            .iter()
            .map(|p| {
                vec![
                    ("probe", p.name.clone()),
                    ("mode", p.mode.map_or("none", |m| m.name()).to_string()),
                    ("attached", p.attached().to_string()),
                ]
            })
            .collect();
        info(
            &mut e,
            "wakeviz_probe",
            "How each probe point is attached (mode none: not attached)",
            &probes,
        )?;
        counters(
            &mut e,
            "wakeviz_snapshots_published",
            "Snapshots published to this endpoint; equal values mean identical figures",
            &[(vec![], self.0.seq)],
        )?;
        let events: Vec<(Labels, u64)> = Kind::ALL
            .iter()
            .map(|k| (vec![("kind", k.name().to_string())], s.events.0[*k]))
            .collect();
        counters(
            &mut e,
            "wakeviz_events",
            "Events delivered by kind",
            &events,
        )?;
        counters(
            &mut e,
            "wakeviz_dropped_events",
            "Events lost: in the kernel (ring buffer full) or in userspace",
            &[
                (vec![("where", "kernel".into())], s.drops.kernel_drops),
                (vec![("where", "user".into())], s.drops.user_drops),
            ],
        )?;
        rings(&mut e, s)?;
        placement(&mut e, s)?;
        latency(&mut e, s)?;
        shadow(&mut e, s)?;
        figures(&mut e, s)
    }
}

/// Every registered figure with a value, under its registry name as the `figure` label (the
/// name `wakeviz diff` and `--fail-if` take), one family per unit: counts as counters, shares
/// as ratios, latencies in seconds, rates per second, anything else as a value with its unit.
/// A figure that is n/a has no series, rather than a false 0.
fn figures(e: &mut DescriptorEncoder, s: &Snapshot) -> Result<(), fmt::Error> {
    use wakeviz_core::figures::{FigureKind, Unit as FigUnit};
    let mut counts: Vec<(Labels, u64)> = Vec::new();
    let mut ratios: Vec<(Labels, f64)> = Vec::new();
    let mut seconds: Vec<(Labels, f64)> = Vec::new();
    let mut rates: Vec<(Labels, f64)> = Vec::new();
    let mut values: Vec<(Labels, f64)> = Vec::new();
    for f in &s.figures.0 {
        let Some(v) = f.value else { continue };
        let label = vec![("figure", f.name.clone())];
        match (&f.unit, f.def.kind) {
            (FigUnit::Count, FigureKind::Count) => counts.push((label, v as u64)),
            (FigUnit::Share, _) => ratios.push((label, v / 100.0)),
            (FigUnit::Ns, _) => seconds.push((label, v / 1e9)),
            (FigUnit::Us, _) => seconds.push((label, v / 1e6)),
            (FigUnit::PerSec, _) => rates.push((label, v)),
            (u, _) => {
                let mut l = label;
                l.push(("unit", u.label().to_string()));
                values.push((l, v));
            }
        }
    }
    counters(
        e,
        "wakeviz_figure_count",
        "Counted figures by registry name (`wakeviz figures` lists them)",
        &counts,
    )?;
    gauges(
        e,
        "wakeviz_figure_share",
        "Share figures by registry name, as a ratio (the reports print percent)",
        &ratios,
    )?;
    typed_gauges(
        e,
        "wakeviz_figure_latency",
        "Latency figures (percentiles, means) by registry name, in seconds",
        Some(&Unit::Seconds),
        &seconds,
    )?;
    typed_gauges(
        e,
        "wakeviz_figure_rate",
        "Rate figures by registry name, per second of stream time",
        None,
        &rates,
    )?;
    typed_gauges(
        e,
        "wakeviz_figure_value",
        "Other figures by registry name (workload metrics, probe counts) in the unit labelled",
        None,
        &values,
    )
}

/// Per ring buffer (several rings only: one ring is the totals above) and the merge's late
/// events, so a fleet sees which CPU group loses records on a big host.
fn rings(e: &mut DescriptorEncoder, s: &Snapshot) -> Result<(), fmt::Error> {
    counters(
        e,
        "wakeviz_late_events",
        "Events that arrived behind the multi-ring merge's watermark, left out of the stream",
        &[(vec![], s.drops.late_events)],
    )?;
    if s.drops.rings.is_empty() {
        return Ok(());
    }
    let label = |i: usize, cpus: &str| vec![("ring", i.to_string()), ("cpus", cpus.to_string())];
    let delivered: Vec<(Labels, u64)> = s
        .drops
        .rings
        .iter()
        .enumerate()
        .map(|(i, r)| (label(i, &r.cpus), r.delivered))
        .collect();
    counters(
        e,
        "wakeviz_ring_events",
        "Records read from each ring buffer by its consumer thread",
        &delivered,
    )?;
    let mut drops = Vec::new();
    for (i, r) in s.drops.rings.iter().enumerate() {
        for (w, n) in [("kernel", r.kernel_drops), ("user", r.user_drops)] {
            let mut l = label(i, &r.cpus);
            l.push(("where", w.to_string()));
            drops.push((l, n));
        }
    }
    counters(
        e,
        "wakeviz_ring_dropped_events",
        "Records lost per ring buffer: in the kernel (that ring full) or in userspace",
        &drops,
    )
}

fn placement(e: &mut DescriptorEncoder, s: &Snapshot) -> Result<(), fmt::Error> {
    let p = &s.placement;
    counters(
        e,
        "wakeviz_wakeups",
        "Placed wakeups (sched_waking joined with sched_wakeup), forks excluded",
        &[(vec![], p.wakeups.count)],
    )?;
    counters(
        e,
        "wakeviz_wakeup_placements",
        "Placed wakeups by the level of the chosen CPU relative to the waker's CPU (relation \
         vs_waker) or to the task's previous CPU (vs_prev), by the chosen CPU's LLC and node",
        &by_chosen_group(s),
    )?;
    counters(
        e,
        "wakeviz_migrations",
        "Wakeups placed off the task's previous CPU, by the level of previous -> chosen",
        &levels(&s.topology, &[], &p.wakeups.migrations_by_level, true),
    )?;
    counters(
        e,
        "wakeviz_affine_wakeups",
        "Wakeups pulled to the waker's LLC away from the previous CPU's, by the level of \
         waker -> previous",
        &levels(&s.topology, &[], &p.wakeups.affine_by_waker_prev, false),
    )?;
    let t = &s.topology;
    let mut new_tasks = levels(t, &[("relation", "vs_waker")], &p.new_tasks.vs_waker, false);
    new_tasks.extend(levels(
        t,
        &[("relation", "vs_prev")],
        &p.new_tasks.vs_prev,
        false,
    ));
    counters(
        e,
        "wakeviz_new_task_placements",
        "First placements of new tasks (sched_wakeup_new) by level vs the forking CPU \
         (vs_waker) and vs the previous CPU (vs_prev)",
        &new_tasks,
    )
}

/// Wakeups landed per (level, relation, LLC, node) of the chosen CPU: the snapshot's per-CPU
/// rows summed over the CPUs of each (LLC, node) pair, which stays exact where an LLC spans
/// nodes (Intel SNC), unlike `per_llc` (chosen CPU) and `per_node` (waker CPU).
fn by_chosen_group(s: &Snapshot) -> Vec<(Labels, u64)> {
    let mut groups: BTreeMap<(String, String), CpuCounts> = BTreeMap::new();
    for row in &s.placement.per_cpu {
        let g = groups.entry(group_of(&s.topology, row.cpu)).or_default();
        g.vs_waker.merge(&row.counts.vs_waker);
        g.vs_prev.merge(&row.counts.vs_prev);
    }
    let mut out = Vec::new();
    for ((llc, node), c) in &groups {
        for (rel, counts) in [("vs_waker", &c.vs_waker), ("vs_prev", &c.vs_prev)] {
            // A level no two CPUs stand at has no series (a 0 would read as measured).
            for l in Level::ALL
                .into_iter()
                .filter(|l| s.topology.level_exists(*l))
            {
                out.push((
                    vec![
                        ("relation", rel.to_string()),
                        ("level", l.name().to_string()),
                        ("llc", llc.clone()),
                        ("node", node.clone()),
                    ],
                    counts.get(l),
                ));
            }
        }
    }
    out
}

/// The ids of the LLC and the node holding `cpu` (`unknown` outside the topology).
fn group_of(t: &TopologySection, cpu: u32) -> (String, String) {
    let id = |groups: &[wakeviz_core::topology::Group]| {
        groups
            .iter()
            .find(|g| g.cpus.contains(cpu))
            .map_or_else(|| "unknown".to_string(), |g| g.id.to_string())
    };
    (id(&t.llcs), id(&t.nodes))
}

/// One series per level (`same_cpu` left out where it cannot occur, e.g. migrations).
fn levels(
    t: &TopologySection,
    fixed: &[(&'static str, &'static str)],
    c: &LevelCounts,
    skip_same_cpu: bool,
) -> Vec<(Labels, u64)> {
    Level::ALL
        .iter()
        .filter(|&&l| !(skip_same_cpu && l == Level::SameCpu) && t.level_exists(l))
        .map(|&l| {
            let mut labels: Labels = fixed.iter().map(|&(k, v)| (k, v.to_string())).collect();
            labels.push(("level", l.name().to_string()));
            (labels, c.get(l))
        })
        .collect()
}

fn latency(e: &mut DescriptorEncoder, s: &Snapshot) -> Result<(), fmt::Error> {
    let scan = &s.scan_latency;
    // Unavailable (tracepoint-only mode) is absent, not a histogram of zeros.
    if let (true, Some(unit)) = (scan.available, unit_ns(scan.log2_unit)) {
        let help = format!("Idle-scan latency, measured as {}", scan.source);
        histograms(
            e,
            "wakeviz_scan_latency",
            &help,
            unit,
            SCAN_TOP_LOG2,
            &[(vec![], &scan.overall)],
        )?;
        let per_llc: Vec<(Labels, &LatencySummary)> = scan
            .per_llc
            .iter()
            .map(|l| (vec![("llc", l.id.to_string())], &l.latency))
            .collect();
        histograms(
            e,
            "wakeviz_scan_latency_by_llc",
            &format!("{help}, by the chosen CPU's LLC"),
            unit,
            SCAN_TOP_LOG2,
            &per_llc,
        )?;
    }
    let w = &s.wakeup_latency;
    let Some(us) = unit_ns(w.log2_unit) else {
        return Ok(());
    };
    histograms(
        e,
        "wakeviz_wakeup_to_run",
        "From sched_wakeup to the wakee's next switch-in, every wakeup",
        us,
        WAKE_TOP_LOG2,
        &[(vec![], &w.overall)],
    )?;
    let by_level: Vec<(Labels, &LatencySummary)> = w
        .by_level
        .0
        .iter()
        .filter(|(l, h)| s.topology.level_exists(*l) || h.quantiles.count > 0)
        .map(|(l, h)| (vec![("level", l.name().to_string())], h))
        .collect();
    histograms(
        e,
        "wakeviz_wakeup_to_run_by_level",
        "Wakeup-to-run latency by the level of waker CPU -> chosen CPU",
        us,
        WAKE_TOP_LOG2,
        &by_level,
    )?;
    histograms(
        e,
        "wakeviz_new_task_wakeup_to_run",
        "From sched_wakeup_new to the new task's first switch-in",
        us,
        WAKE_TOP_LOG2,
        &[(vec![], &w.new_task)],
    )
}

/// Nanoseconds per unit of a snapshot's `log2_unit`.
fn unit_ns(unit: &str) -> Option<u64> {
    match unit {
        "ns" => Some(1),
        "us" => Some(1_000),
        "ms" => Some(1_000_000),
        _ => None,
    }
}

fn shadow(e: &mut DescriptorEncoder, s: &Snapshot) -> Result<(), fmt::Error> {
    let Some(sh) = &s.shadow else {
        return Ok(());
    };
    let policy = |name: &str| vec![("policy", name.to_string())];
    let evaluated: Vec<(Labels, u64)> = sh
        .policies
        .iter()
        .map(|r| (policy(r.name), r.evaluated))
        .collect();
    counters(
        e,
        "wakeviz_shadow_evaluated",
        "Wakeups each shadow policy re-decided",
        &evaluated,
    )?;
    // Nothing evaluated yet: no ratio rather than a false 0.
    let agreement: Vec<(Labels, f64)> = sh
        .policies
        .iter()
        .filter_map(|r| Some((policy(r.name), r.agreement?)))
        .collect();
    gauges(
        e,
        "wakeviz_shadow_agreement",
        "Share of wakeups where the policy chose the kernel's CPU",
        &agreement,
    )?;
    let idle: Vec<(Labels, f64)> = sh
        .policies
        .iter()
        .filter_map(|r| Some((policy(r.name), r.idle_pct? / 100.0)))
        .collect();
    gauges(
        e,
        "wakeviz_shadow_idle_hit",
        "Share of wakeups where the policy's CPU was idle",
        &idle,
    )
}

fn info(
    e: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    sets: &[Labels],
) -> Result<(), fmt::Error> {
    let mut m = e.encode_descriptor(name, help, None, MetricType::Info)?;
    for labels in sets {
        m.encode_info(labels)?;
    }
    Ok(())
}

fn counters(
    e: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: &[(Labels, u64)],
) -> Result<(), fmt::Error> {
    let mut m = e.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (labels, v) in series {
        ConstCounter::new(*v).encode(m.encode_family(labels)?)?;
    }
    Ok(())
}

fn gauges(
    e: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: &[(Labels, f64)],
) -> Result<(), fmt::Error> {
    let unit = Unit::Other("ratio".into());
    let mut m = e.encode_descriptor(name, help, Some(&unit), MetricType::Gauge)?;
    for (labels, v) in series {
        ConstGauge::new(*v).encode(m.encode_family(labels)?)?;
    }
    Ok(())
}

fn typed_gauges(
    e: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    series: &[(Labels, f64)],
) -> Result<(), fmt::Error> {
    let mut m = e.encode_descriptor(name, help, unit, MetricType::Gauge)?;
    for (labels, v) in series {
        ConstGauge::new(*v).encode(m.encode_family(labels)?)?;
    }
    Ok(())
}

/// Histograms in seconds from log2 buckets in units of `unit_ns`: bucket `[lo, hi)` is counted
/// under `le = hi` (its exclusive bound; with integer nanoseconds the only difference from
/// `<=` is a value of exactly `hi`). `_sum` is the snapshot's mean times its count.
fn histograms(
    e: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit_ns: u64,
    top_log2: u32,
    series: &[(Labels, &LatencySummary)],
) -> Result<(), fmt::Error> {
    let mut m = e.encode_descriptor(name, help, Some(&Unit::Seconds), MetricType::Histogram)?;
    for (labels, h) in series {
        let (count, sum, buckets) = seconds_buckets(h, unit_ns, top_log2);
        m.encode_family(labels)?
            .encode_histogram::<NoLabelSet>(sum, count, &buckets, None)?;
    }
    Ok(())
}

/// `(count, sum in s, [(le in s, count in that bucket)])` ending with `+Inf`: fixed bounds
/// `2^0 .. 2^top` units; buckets above `2^top` are counted in `+Inf` only.
fn seconds_buckets(h: &LatencySummary, unit_ns: u64, top: u32) -> (u64, f64, Vec<(f64, u64)>) {
    let mut per = vec![0u64; top as usize + 1];
    let mut placed = 0;
    for b in &h.log2 {
        // `hi` is 1 for the [0] bucket, else a power of two.
        let i = b.hi.max(1).ilog2();
        if let Some(slot) = per.get_mut(i as usize) {
            *slot += b.count;
            placed += b.count;
        }
    }
    let q = &h.quantiles;
    let unit_s = unit_ns as f64 / 1e9;
    let mut buckets: Vec<(f64, u64)> = per
        .iter()
        .enumerate()
        .map(|(i, &n)| ((1u64 << i) as f64 * unit_s, n))
        .collect();
    buckets.push((f64::INFINITY, q.count.saturating_sub(placed)));
    (q.count, q.mean * q.count as f64 / 1e9, buckets)
}

#[cfg(test)]
pub(super) mod tests;
