//! The dashboard's picture folds (time series, waker x chosen matrix, per-task table) on
//! hand-built streams, with every expected count worked out by hand from the fixture layouts.
mod analysis_support;

use analysis_support::{W, batch, header, names};
use wakeviz_core::{
    analysis::{Analysis, Filter, matrix::Axis, tasks::TaskSort},
    format::ScanSource,
    topology::Level,
};

const MS: u64 = 1_000_000;

fn w(ts: u64, waker_cpu: u32, waker_pid: u32, pid: u32, prev: u32, chosen: u32) -> W {
    W {
        waker_pid,
        ..W::new(ts, waker_cpu, pid, prev, chosen)
    }
}

/// 2 x 64C Zen3 NPS4 (256 CPUs): LLCs of 8 cores, named by their first CPU (0, 8, ..., 120);
/// CPU n + 128 is n's SMT sibling; package 1 starts at CPU 64.
fn zen3_stream() -> Vec<W> {
    vec![
        // pid 500 woken by 400 (CPU 0): same LLC (0 -> 129, sibling of 1), then across
        // packages (0 -> 64), then in LLC 8 (from its own CPU 8).
        w(50 * MS, 0, 400, 500, 129, 129).runs_after(10_000),
        w(60 * MS, 0, 400, 500, 129, 64).runs_after(30_000),
        w(150 * MS, 8, 400, 500, 64, 136)
            .select(900)
            .runs_after(2_000),
        // pid 501 woken by 500 on CPU 200 (LLC 72): to CPU 72, 200's SMT sibling.
        w(350 * MS, 200, 500, 501, 72, 72).select(300),
    ]
}

#[test]
fn zen3_nps4_matrix_is_llc_by_llc() {
    let h = header("zen3-nps4", ScanSource::SelectTaskRqFair);
    let mut a = Analysis::new(&h);
    a.on_batch(&batch(&zen3_stream()));
    let s = a.snapshot();
    let m = &s.matrix;
    assert_eq!(m.axis, Axis::Llc);
    assert_eq!(m.labels.len(), 16);
    let at = |id: u32| m.labels.iter().position(|&l| l == id).expect("llc id");
    assert_eq!(m.counts[at(0)][at(0)], 1, "0 -> 129");
    assert_eq!(m.counts[at(0)][at(64)], 1, "0 -> 64");
    assert_eq!(m.counts[at(8)][at(8)], 1, "8 -> 136");
    assert_eq!(m.counts[at(72)][at(72)], 1, "200 -> 72");
    assert_eq!((m.total, m.outside), (4, 0));
    assert_eq!(
        m.total, s.placement.wakeups.count,
        "one truth: the Placement count"
    );
}

#[test]
fn series_intervals_and_mix() {
    let h = header("zen3-nps4", ScanSource::SelectTaskRqFair);
    let mut a = Analysis::new(&h);
    a.on_batch(&batch(&zen3_stream()));
    let s = a.snapshot();
    let sr = &s.series;
    // 350 ms of 1 ms intervals do not fit in 256 points: one doubling, 2 ms each, from 50 ms
    // (the first event) rounded down to 1 ms.
    assert_eq!(sr.interval_ns, 2 * MS);
    assert_eq!(sr.points[0].start_ns, 50 * MS);
    assert_eq!(sr.points.len(), 151, "50 ms .. 350.0005 ms in 2 ms steps");
    let at = |ms: u64| &sr.points[((ms - 50) / 2) as usize];
    let busy: Vec<(u64, u64)> = sr
        .points
        .iter()
        .filter(|p| p.wakeups > 0)
        .map(|p| (p.start_ns / MS, p.wakeups))
        .collect();
    assert_eq!(busy, [(50, 1), (60, 1), (150, 1), (350, 1)]);
    assert_eq!(at(50).vs_waker.get(Level::SameLlc), 1, "0 -> 129");
    assert_eq!(at(60).vs_waker.get(Level::CrossPackage), 1, "0 -> 64");
    assert_eq!(at(50).wakeups_per_s, 500.0, "1 wakeup in 2 ms");
    // Latencies land where the wakee ran (10 us and 30 us after its wakeup).
    assert_eq!(at(50).wakeup_latency_n, 1);
    assert_eq!(at(60).wakeup_latency_p99_ns, Some(30_000));
    assert_eq!(at(50).scan_p99_ns, None, "no scan sample: null, not 0");
    let p150 = at(150);
    assert_eq!((p150.scan_n, p150.scan_p99_ns), (1, Some(900)));
    assert_eq!(p150.vs_waker.get(Level::SmtSibling), 1, "8 -> 136");
    assert_eq!(at(100).wakeup_latency_p99_ns, None);
    assert_eq!(at(350).vs_waker.get(Level::SmtSibling), 1, "200 -> 72");
    let total: u64 = sr.points.iter().map(|p| p.wakeups).sum();
    assert_eq!(total, s.placement.wakeups.count);
    // The last 3 ms (to 350.0005 ms) overlap [346, 348), [348, 350) and [350, 352).
    let to = s.placement.last_ts_ns;
    assert_eq!(to, 350 * MS + 500);
    assert_eq!(sr.last(Some(3 * MS), to).len(), 3);
    assert_eq!(sr.last(Some(400), to).len(), 1);
    assert_eq!(sr.last(None, to).len(), 151);
}

#[test]
fn tasks_wakers_and_wakees_follow_the_filter() {
    let h = header("zen3-nps4", ScanSource::SelectTaskRqFair);
    let mut a = Analysis::new(&h);
    let mut b = batch(&zen3_stream());
    b.tasks = names(&[(400, "producer"), (500, "worker"), (501, "worker")]);
    a.on_batch(&b);
    let s = a.snapshot();
    let t = &s.tasks;
    let row = |pid| t.rows.iter().find(|r| r.pid == Some(pid)).expect("row");
    let r500 = row(500);
    assert_eq!(r500.comm, "worker");
    // Received 3: one crossed packages (0 -> 64); moved twice (129 -> 64, 64 -> 136).
    assert_eq!((r500.wakeups, r500.cross_llc, r500.migrations), (3, 1, 2));
    assert_eq!(r500.wakeup_latency_p99_ns, Some(30_000));
    assert_eq!((r500.wakes, r500.wakes_cross_llc), (1, 0));
    let r400 = row(400);
    assert_eq!((r400.wakeups, r400.wakes, r400.wakes_cross_llc), (0, 3, 1));
    assert_eq!(row(501).wakeup_latency_p99_ns, None, "never ran: n/a");
    let worker = t
        .by_comm
        .iter()
        .find(|r| r.comm == "worker")
        .expect("worker");
    assert_eq!((worker.tasks, worker.wakeups), (2, 4));
    let order: Vec<_> = t.sorted(TaskSort::Wakes).iter().map(|r| r.pid).collect();
    assert_eq!(order, [Some(400), Some(500), Some(501)]);

    // Filtered to 501: it is the only wakee, 500 its only waker; the matrix follows.
    a.set_filter(Some(Filter::Pid(501)));
    let mut again = batch(&zen3_stream());
    again.tasks = b.tasks.clone();
    a.on_batch(&again);
    let s = a.snapshot();
    let pids: Vec<_> = s
        .tasks
        .rows
        .iter()
        .map(|r| (r.pid, r.wakeups, r.wakes))
        .collect();
    assert_eq!(pids, [(Some(501), 1, 0), (Some(500), 0, 1)]);
    assert_eq!(s.matrix.total, 1);
    assert_eq!(s.series.points.iter().map(|p| p.wakeups).sum::<u64>(), 1);
}

#[test]
fn json_has_the_new_sections_with_null_for_not_measured() {
    let h = header("xeon-e5-2690v3", ScanSource::SelectTaskRqFair);
    let mut a = Analysis::new(&h);
    a.on_batch(&batch(&[w(10, 0, 1, 7, 0, 12).runs_after(5_000)]));
    let j = a.report_json();
    assert_eq!(j["matrix"]["axis"], "cpu");
    assert_eq!(j["matrix"]["labels"].as_array().map(Vec::len), Some(48));
    assert_eq!(j["matrix"]["counts"][0][12], 1);
    assert_eq!(j["series"]["points"][0]["wakeups"], 1);
    assert!(j["series"]["points"][0]["scan_p99_ns"].is_null());
    assert_eq!(j["series"]["points"][0]["wakeup_latency_p99_ns"], 5_000);
    assert_eq!(j["tasks"]["rows"][0]["pid"], 7);
    assert_eq!(
        j["tasks"]["rows"][0]["cross_llc"], 1,
        "CPU 0 -> 12: the other socket"
    );
    assert!(j["tasks"]["other"]["pid"].is_null());
    let empty = Analysis::new(&h).report_json();
    assert_eq!(empty["series"]["points"].as_array().map(Vec::len), Some(0));
    assert_eq!(empty["matrix"]["total"], 0);
}
