//! Keys of the Timeline, Matrix and Tasks views and of the Scan view's per-LLC histograms.
use ratatui::crossterm::event::KeyCode;
use wakeviz_core::analysis::{Filter, tasks::TaskSort};

use super::{
    Mode, View,
    tests::{fixture, press, recording, refeed, replayed, topo},
};

#[test]
fn six_to_eight_switch_to_the_new_views() {
    let (_dir, mut app) = fixture();
    for (k, v) in [
        ('6', View::Timeline),
        ('7', View::Matrix),
        ('8', View::Tasks),
    ] {
        press(&mut app, KeyCode::Char(k));
        assert_eq!(app.view, v);
    }
    press(&mut app, KeyCode::Char('5'));
    press(&mut app, KeyCode::Tab);
    assert_eq!(app.view, View::Timeline);
    press(&mut app, KeyCode::Char('1'));
    press(&mut app, KeyCode::BackTab);
    assert_eq!(app.view, View::Tasks);
}

#[test]
fn o_cycles_the_sort_only_in_the_tasks_view() {
    let (_dir, mut app) = fixture();
    press(&mut app, KeyCode::Char('o'));
    assert_eq!(
        app.task_sort,
        TaskSort::Wakeups,
        "o means nothing on the Overview"
    );
    press(&mut app, KeyCode::Char('8'));
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Char('o'));
    assert_eq!(app.task_sort, TaskSort::CrossLlc);
    assert_eq!(
        app.sel[View::Tasks.index()],
        0,
        "a new sort starts at the top"
    );
    let t = &app.data.snap.tasks;
    let shares: Vec<f64> = t
        .sorted(app.task_sort)
        .iter()
        .filter_map(|r| r.cross_llc_share())
        .collect();
    assert!(shares.len() > 2, "{}", shares.len());
    assert!(shares.windows(2).all(|w| w[0] >= w[1]), "{shares:?}");
    for _ in 0..TaskSort::ALL.len() - 1 {
        press(&mut app, KeyCode::Char('o'));
    }
    assert_eq!(app.task_sort, TaskSort::Wakeups);
}

#[test]
fn enter_filters_every_view_to_the_selected_task_and_esc_clears() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = recording(dir.path(), &topo(), 30_000);
    let mut app = replayed(&path);
    press(&mut app, KeyCode::Char('8'));
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Down);
    let row = app.data.snap.tasks.sorted(app.task_sort)[2].clone();
    let pid = row.pid.expect("a task row");
    assert!(row.wakeups > 0, "{row:?}");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.data.filter(), Some(&Filter::Pid(pid)));
    refeed(&mut app, &path);
    let s = &app.data.snap;
    // One truth: the task's row before is the Placement view's count after.
    assert_eq!(s.placement.wakeups.count, row.wakeups);
    assert_eq!(s.matrix.total, row.wakeups);
    assert_eq!(
        s.series.points.iter().map(|p| p.wakeups).sum::<u64>(),
        row.wakeups
    );
    let wakees: Vec<_> = s.tasks.rows.iter().filter(|r| r.wakeups > 0).collect();
    assert_eq!(wakees.len(), 1);
    assert_eq!(wakees[0].pid, Some(pid));
    assert_eq!(wakees[0].cross_llc, row.cross_llc);
    press(&mut app, KeyCode::Esc);
    assert_eq!(app.data.filter(), None);
    assert_eq!(app.mode, Mode::Normal);
    refeed(&mut app, &path);
    assert!(app.data.snap.placement.wakeups.count > row.wakeups);
}

#[test]
fn the_scan_selection_moves_over_all_then_each_llc() {
    let (_dir, mut app) = fixture();
    press(&mut app, KeyCode::Char('2'));
    let llcs = app.data.header().topology.llcs.len();
    assert_eq!(app.list_len(View::Scan), llcs + 1);
    for _ in 0..llcs + 3 {
        press(&mut app, KeyCode::Down);
    }
    assert_eq!(app.sel[View::Scan.index()], llcs);
    press(&mut app, KeyCode::Char('7'));
    press(&mut app, KeyCode::Down);
    assert_eq!(app.sel[View::Matrix.index()], 1, "matrix rows scroll");
}
