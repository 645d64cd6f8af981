//! The idle scan measured by the debug-info probes: one definition of each figure, the same in
//! the snapshot, the registry, the text report and the JSON; only scans that ran are timed;
//! nothing of it without those probes.
mod analysis_support;

use analysis_support::{W, batch, header};
use wakeviz_common::scan_path::{CORE, SCAN};
use wakeviz_core::{
    analysis::{Analysis, report},
    format::ScanSource,
};

/// Ten placements from CPU 0 (zen3-nps1): four without a scan, six scans testing
/// 0, 0, 2, 3, 3, 4 CPUs, one of them an idle-core search.
fn watched() -> Vec<W> {
    let scans: [(u16, u16); 10] = [
        (0, 0),
        (0, 0),
        (0, 0),
        (0, 0),
        (0, SCAN),
        (0, SCAN),
        (2, SCAN),
        (3, SCAN | CORE),
        (3, SCAN),
        (4, SCAN),
    ];
    scans
        .iter()
        .enumerate()
        .map(|(i, &(cpus, path))| {
            let ns = (path & SCAN != 0).then_some(1_000 + 500 * u32::from(cpus));
            W::new(1_000_000 + i as u64 * 1_000_000, 0, 40 + i as u32, 1, 2)
                .select(20_000)
                .scanned(cpus, path, ns)
        })
        .collect()
}

#[test]
fn measured_scan_figures_have_one_definition() {
    let mut a = Analysis::new(&header("zen3-nps1", ScanSource::DebugInfo));
    a.on_batch(&batch(&watched()));
    let s = a.snapshot();
    let m = s.scan_latency.measured.as_ref().expect("measured section");
    assert_eq!((m.calls, m.scans, m.cpus_tested), (10, 6, 12));
    assert_eq!((m.core_scans, m.smt_calls), (1, 0));
    assert_eq!(m.by_cpus_tested, vec![2, 0, 1, 2, 1]);
    // Only the scans are timed: no select_task_rq_fair duration stands in for a missing scan.
    assert_eq!(s.scan_latency.overall.quantiles.count, 6);
    assert_eq!(s.scan_latency.overall.quantiles.max, 3_000);

    let fig = |n: &str| s.figures.get(n).and_then(|f| f.value);
    assert_eq!(fig("scan.measured.calls"), Some(10.0));
    assert_eq!(fig("scan.measured.scans.share"), Some(60.0));
    assert_eq!(fig("scan.measured.cpus_per_scan"), Some(2.0));
    assert_eq!(fig("scan.measured.smt.share"), Some(0.0));
    let core = fig("scan.measured.core.share").expect("core share");
    assert!((core - 100.0 / 6.0).abs() < 1e-9, "{core}");

    let text = report::text(&s);
    assert!(
        text.contains(
            "measured (debug-info probes): 10 placements watched, 60.00 % scanned, idle tests per scan 2.00 CPUs, idle-core search 16.67 %, SMT siblings first 0.00 %"
        ),
        "{text}"
    );
    assert!(
        text.contains("scans by idle tests made: 0:2 2:1 3:2 4:1"),
        "{text}"
    );
    assert!(text.contains("(measured, debug-info probes)"), "{text}");
    let json = report::json(&s);
    assert_eq!(json["scan_latency"]["measured"]["scans"], 6);
    assert_eq!(json["figures"]["scan.measured.cpus_per_scan"]["value"], 2.0);
}

#[test]
fn without_the_probes_there_is_no_measured_scan() {
    let mut a = Analysis::new(&header("zen3-nps1", ScanSource::SelectTaskRqFair));
    let plain: Vec<W> = watched()
        .into_iter()
        .map(|mut w| {
            w.scan = None;
            w
        })
        .collect();
    a.on_batch(&batch(&plain));
    let s = a.snapshot();
    assert!(s.scan_latency.measured.is_none());
    // The whole select_task_rq_fair stands in for every placement, labelled so.
    assert_eq!(s.scan_latency.overall.quantiles.count, 10);
    assert!(s.figures.get("scan.measured.calls").is_none());
    let json = report::json(&s);
    assert!(json["scan_latency"].get("measured").is_none());
}
