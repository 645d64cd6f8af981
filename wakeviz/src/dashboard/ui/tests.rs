//! Screens of every view from a fixed synthetic recording (TestBackend + insta). Nothing in them
//! depends on the wall clock: rates and positions are in stream time, and the recording is a
//! seeded simulation on a topology read from a generated sysfs tree.
use ratatui::{Terminal, backend::TestBackend};
use wakeviz_core::{
    event::Event,
    format::{ProbeState, ScanSource},
    source::{Batch, EventSource, Poll, ReplaySource},
    topology::fixture::SysfsSpec,
};

use super::draw;
use crate::dashboard::app::{
    App, Msg, SourceKind, View,
    tests::{compared, fixture, recording, recording_as, refeed, replayed, topo, topo_of},
};

/// The whole dashboard drawn into a `w` x `h` test terminal.
pub(super) fn screen(app: &App, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("test terminal");
    term.draw(|f| draw(f, app)).expect("draw");
    term.backend().to_string()
}

#[test]
fn every_view_at_80x24() {
    let (_dir, mut app) = fixture();
    for v in View::ALL {
        app.update(Msg::Show(v));
        insta::assert_snapshot!(
            format!("view_{}_80x24", v.tab().to_lowercase()),
            screen(&app, 80, 24)
        );
    }
}

/// The three sizes the issue names: the smallest supported, the classic, a big screen.
const SIZES: [(u16, u16); 3] = [(60, 15), (80, 24), (200, 60)];

#[test]
fn every_view_at_every_size() {
    let (_dir, mut app) = fixture();
    for v in View::ALL {
        app.update(Msg::Show(v));
        for (w, h) in SIZES {
            let s = screen(&app, w, h);
            assert!(!s.contains("too small"), "{v:?} {w}x{h}:\n{s}");
            insta::assert_snapshot!(format!("size_{}_{w}x{h}", v.tab().to_lowercase()), s);
        }
    }
}

/// A 256-CPU machine (2 x 64C Zen3, SMT, NPS4) at every size: the map aggregates by LLC.
#[test]
fn every_view_on_256_cpus_nps4() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = topo_of(&SysfsSpec::zen3(4));
    assert_eq!(t.nr_cpus(), 256);
    let path = recording(dir.path(), &t, 40_000);
    let mut app = replayed(&path);
    for v in View::ALL {
        app.update(Msg::Show(v));
        for (w, h) in SIZES {
            insta::assert_snapshot!(
                format!("nps4_{}_{w}x{h}", v.tab().to_lowercase()),
                screen(&app, w, h)
            );
        }
    }
}

/// Lines of the screen that are not blank.
fn rows(s: &str) -> Vec<&str> {
    s.lines()
        .filter(|l| !l.trim_matches(['"', ' ']).is_empty())
        .collect()
}

#[test]
fn legend_toggles_with_l() {
    let (_dir, mut app) = fixture();
    app.update(Msg::Show(View::Placement));
    let before = screen(&app, 80, 24);
    assert!(!before.contains("legend "), "{before}");
    app.update(
        crate::dashboard::app::keymap::lookup(
            crate::dashboard::app::Mode::Normal,
            View::Placement,
            true,
            ratatui::crossterm::event::KeyEvent::from(ratatui::crossterm::event::KeyCode::Char(
                'l',
            )),
        )
        .expect("l is bound"),
    );
    let after = screen(&app, 80, 24);
    assert!(after.contains("legend "), "{after}");
    assert!(after.contains("vs waker / vs prev"), "{after}");
    insta::assert_snapshot!("legend_placement_80x24", after);
    app.update(Msg::ToggleLegend);
    assert_eq!(rows(&screen(&app, 80, 24)), rows(&before));
}

#[test]
fn help_scrolls_and_marks_its_cut() {
    let (_dir, mut app) = fixture();
    app.update(Msg::ToggleHelp);
    let s = screen(&app, 60, 15);
    assert!(s.contains("more ↓ (↑↓ scroll)"), "{s}");
    app.update(Msg::Move(100));
    let end = screen(&app, 60, 15);
    assert!(end.contains(" 0 more ↓"), "{end}");
    assert!(end.contains("Ctrl-C also quits"), "{end}");
    insta::assert_snapshot!("help_60x15_scrolled", end);
}

#[test]
fn small_and_tiny_terminals() {
    let (_dir, mut app) = fixture();
    let s = screen(&app, 79, 24);
    assert!(!s.contains("too small"), "{s}");
    let s = screen(&app, 39, 8);
    assert!(s.contains("too small (39x8; need 40x8) q quits"), "{s}");
    // Every view at odd sizes: no panic, the footer keeps q and ?.
    for v in View::ALL {
        app.update(Msg::Show(v));
        for (w, h) in [
            (1, 1),
            (20, 5),
            (40, 8),
            (60, 15),
            (79, 40),
            (160, 20),
            (61, 16),
        ] {
            let s = screen(&app, w, h);
            if w >= 40 && h >= 8 {
                let last = s.lines().last().unwrap_or_default();
                assert!(
                    last.contains("q quit") && last.contains("? help"),
                    "{v:?} {w}x{h}: {last}"
                );
            }
        }
    }
}

#[test]
fn every_view_at_120x40() {
    let (_dir, mut app) = fixture();
    for v in View::ALL {
        app.update(Msg::Show(v));
        insta::assert_snapshot!(
            format!("view_{}_120x40", v.tab().to_lowercase()),
            screen(&app, 120, 40)
        );
    }
}

#[test]
fn overlays_windows_and_selection() {
    let (dir, mut app) = fixture();
    app.update(Msg::ToggleHelp);
    insta::assert_snapshot!("help_80x24", screen(&app, 80, 24));
    app.update(Msg::ToggleHelp);
    app.update(Msg::Show(View::Placement));
    app.update(Msg::EditFilter);
    "hackb".chars().for_each(|c| app.update(Msg::FilterChar(c)));
    insta::assert_snapshot!("filter_prompt_80x24", screen(&app, 80, 24));
    app.update(Msg::FilterApply);
    refeed(&mut app, &dir.path().join("fixture.wvz"));
    let w = app.data.snap.placement.wakeups.count;
    assert!(
        w > 0 && w < 5_949 && app.data.snap.placement.landed_total() == w,
        "filtered {w}"
    );
    app.update(Msg::Show(View::Shadow));
    let s = screen(&app, 80, 24);
    assert!(s.contains("rows: comm:hackb wakees only"), "{s}");
    let rows = &app.data.snap.shadow.as_ref().expect("shadow on").policies;
    assert!(
        rows.first()
            .is_some_and(|r| r.evaluated > 0 && r.evaluated <= w),
        "{rows:?}"
    );
    insta::assert_snapshot!("shadow_filtered_80x24", s);
    app.update(Msg::Show(View::Placement));
    app.update(Msg::Move(5));
    app.update(Msg::ToggleAggregate);
    app.update(Msg::Move(3));
    insta::assert_snapshot!("placement_llc_map_80x24", screen(&app, 80, 24));
    app.update(Msg::Show(View::Scan));
    app.update(Msg::CycleWindow);
    app.update(Msg::CycleWindow);
    insta::assert_snapshot!("scan_last1s_80x24", screen(&app, 80, 24));
}

/// A 2 x 64C Zen3 in NPS4: the map aggregates by LLC, four node lines per package.
#[test]
fn large_machine_map_is_aggregated() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = topo_of(&SysfsSpec::zen3(4));
    let path = recording(dir.path(), &t, 40_000);
    let mut app = replayed(&path);
    assert!(!app.per_cpu_map);
    app.update(Msg::Show(View::Placement));
    app.update(Msg::Move(9));
    insta::assert_snapshot!("placement_zen3_nps4_80x24", screen(&app, 80, 24));
    app.update(Msg::ToggleAggregate);
    app.update(Msg::Move(200));
    insta::assert_snapshot!("placement_zen3_nps4_per_cpu_120x40", screen(&app, 120, 40));
}

/// What the live machine shows when only tracepoints attach: labelled, no scan figures.
#[test]
fn tracepoint_only_mode_is_labelled() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = recording(dir.path(), &topo(), 20_000);
    let mut src = ReplaySource::open(&path).expect("open");
    let mut h = src.header().clone();
    h.scan_source = ScanSource::None;
    for p in &mut h.probes {
        if p.name == "select_task_rq_fair" {
            p.mode = None;
            p.state =
                ProbeState::Unavailable("fentry: not permitted by this kernel (lockdown)".into());
        }
    }
    let mut app = App::new(&h, SourceKind::Live { recording: None });
    while let Ok(Poll::Batch(mut b)) = src.poll(std::time::Duration::ZERO) {
        b.events.retain(|e| !matches!(e, Event::Select(_)));
        app.data.on_batch(&b);
    }
    app.refresh();
    let s = screen(&app, 160, 24);
    assert!(
        s.contains("LIVE · tracepoints only: fentry not permitted by this kernel"),
        "{s}"
    );
    insta::assert_snapshot!("overview_tracepoint_only_80x24", screen(&app, 80, 24));
    app.update(Msg::Show(View::Scan));
    let s = screen(&app, 80, 24);
    assert!(s.contains("unavailable: tracepoint-only mode"), "{s}");
    insta::assert_snapshot!("scan_tracepoint_only_80x24", s);
}

/// One truth per figure: for the same recording and filter, the dashboard's snapshot is the
/// `--report json` tree, and the numbers the views and the text report print are its numbers.
#[test]
fn dashboard_text_report_and_json_show_the_same_figures() {
    use wakeviz_core::analysis::{Analysis, Filter};

    let (dir, mut app) = fixture();
    let path = dir.path().join("fixture.wvz");
    let filter: Filter = "hackb".parse().expect("filter");
    app.update(Msg::EditFilter);
    "hackb".chars().for_each(|c| app.update(Msg::FilterChar(c)));
    app.update(Msg::FilterApply);
    refeed(&mut app, &path);

    // The headless report of the same recording with the same filter, through the driver.
    let mut src = ReplaySource::open(&path).expect("open");
    let mut a = Analysis::new(src.header());
    a.set_filter(Some(filter));
    let out = crate::driver::run(
        &mut src,
        &mut [&mut a],
        &crate::driver::Options::default(),
        None,
    );
    assert!(out.error.is_none(), "{:?}", out.error);
    let json = a.report_json();
    let ui = serde_json::to_value(&app.data.snap).expect("snapshot serialises");
    assert_eq!(ui, json, "the dashboard's snapshot is the JSON report");

    // And what is printed is that: spot checks across views and the text report.
    let text = a.report_text();
    let n = json["placement"]["wakeups"]["count"]
        .as_u64()
        .expect("count");
    assert!(n > 0);
    assert!(
        text.contains(&format!(
            "== placement: {n} wakeups, scope all, filter comm:hackb"
        )),
        "{text}"
    );
    let fid = json["shadow"]["fidelity"]["agreement"]
        .as_f64()
        .expect("fidelity");
    let fid = format!("{:.2}%", 100.0 * fid);
    app.update(Msg::Show(View::Shadow));
    let shadow_screen = screen(&app, 120, 40);
    assert!(
        shadow_screen.contains(&format!("Fidelity {fid}")),
        "{shadow_screen}"
    );
    assert!(text.contains(&fid), "{text}");
    let shadow_n = json["shadow"]["evaluated"].as_u64().expect("evaluated");
    assert!(
        shadow_screen.contains(&super::fmt::count(shadow_n)),
        "{shadow_screen}"
    );
    let q = &json["wakeup_latency"]["overall"];
    let count = q["count"].as_u64().expect("latency count");
    app.update(Msg::Show(View::Latency));
    let lat_screen = screen(&app, 120, 40);
    assert!(
        lat_screen.contains(&count.to_string()),
        "latency n={count} not on screen:\n{lat_screen}"
    );
    assert!(
        text.contains(&format!("n={count} ")),
        "latency n={count} not in the text report"
    );
}

/// A `-- CMD` recording: the Overview names the run and shows the benchmark's own figures.
#[test]
fn overview_shows_the_run_and_its_result() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = recording(dir.path(), &topo(), 5_000);
    let mut src = ReplaySource::open(&path).expect("open");
    let mut h = src.header().clone();
    h.run = wakeviz_core::run::RunMeta {
        label: Some("tip".into()),
        start_utc: Some("2026-12-01T08:00:00.123Z".into()),
        sched_features: None,
        command: Some(vec!["hackbench".into(), "-g".into(), "1".into()]),
        ..Default::default()
    };
    let mut app = App::new(&h, SourceKind::Replay { path: path.clone() });
    while let Ok(Poll::Batch(b)) = src.poll(std::time::Duration::ZERO) {
        app.data.on_batch(&b);
    }
    let mut stats = src.stats().cloned().unwrap_or_default();
    stats.workload = Some(Box::new(wakeviz_core::run::WorkloadOutcome {
        exit_code: Some(0),
        signal: None,
        duration_ns: 1_234_000_000,
        metrics: vec![wakeviz_core::run::Metric::new(
            "hackbench.time_s",
            0.419,
            "s",
            false,
        )],
    }));
    app.data.on_batch(&Batch {
        stats: Some(stats),
        ..Default::default()
    });
    app.refresh();
    let s = screen(&app, 80, 24);
    assert!(
        s.contains("tip · started 2026-12-01T08:00:00.123Z · features unknown"),
        "{s}"
    );
    assert!(
        s.contains("`hackbench -g 1` exited 0 after 1.23 s · hackbench.time_s 0.419 s"),
        "{s}"
    );
    insta::assert_snapshot!("overview_run_80x24", s);
}

/// Compare mode: the fixture (30 000 events, seed 7) against a baseline run of the same
/// machine (24 000 events, seed 11).
fn compare_fixture() -> (tempfile::TempDir, App) {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = topo();
    let cur = recording(dir.path(), &t, 30_000);
    let base = recording_as(dir.path(), "baseline.wvz", &t, 24_000, 11);
    let app = compared(&cur, &base);
    (dir, app)
}

#[test]
fn every_view_compared_at_80x24_and_120x40() {
    let (_dir, mut app) = compare_fixture();
    for v in View::ALL {
        app.update(Msg::Show(v));
        for (w, h) in [(80, 24), (120, 40)] {
            let s = screen(&app, w, h);
            assert!(s.contains("COMPARE vs baseline.wvz"), "{s}");
            assert!(s.contains("no significance marker"), "{s}");
            assert!(!s.contains("shares only"), "same machine: {s}");
            insta::assert_snapshot!(format!("compare_{}_{w}x{h}", v.tab().to_lowercase()), s);
        }
    }
}

/// The compared Scan view numbers its rows as the single-run view does (0 = every LLC), so
/// the highlighted row, the histogram and the CPU line are the selection's, not the next LLC's.
#[test]
fn compared_scan_rows_follow_the_single_run_numbering() {
    let (_dir, mut app) = compare_fixture();
    app.update(Msg::Show(View::Scan));
    let llcs = app.data.snap.scan_latency.per_llc.len();
    assert!(llcs >= 2, "fixture has {llcs} LLCs");
    let s = screen(&app, 120, 40);
    assert!(!s.contains("LLC 0 = CPUs"), "row 0 is every LLC: {s}");
    assert!(
        !s.contains("LLC 0 (CPUs"),
        "row 0 shows the overall histogram: {s}"
    );
    app.update(Msg::Move(1));
    let s = screen(&app, 120, 40);
    let l0 = &app.data.snap.scan_latency.per_llc[0];
    assert!(
        s.contains(&format!("LLC {} = CPUs {}", l0.id, l0.cpus)),
        "{s}"
    );
    assert!(
        s.contains(&format!("LLC {} (CPUs {})", l0.id, l0.cpus)),
        "{s}"
    );
    for _ in 0..llcs + 3 {
        app.update(Msg::Move(1));
    }
    let s = screen(&app, 120, 40);
    let last = &app.data.snap.scan_latency.per_llc[llcs - 1];
    assert!(
        s.contains(&format!("LLC {} = CPUs {}", last.id, last.cpus)),
        "the last LLC is reachable: {s}"
    );
}

/// A share's Δ on screen is the current snapshot's share minus the baseline snapshot's, read
/// from their JSON trees (the `--report json` of each run).
#[test]
fn a_share_delta_is_the_difference_of_the_two_snapshots() {
    use wakeviz_core::topology::Level;

    use super::compare::placement::{Side, level_share_delta};

    let (dir, mut app) = compare_fixture();
    let base = app.baseline.as_ref().expect("baseline").snap.clone();
    let (ja, jb) = (
        serde_json::to_value(&app.data.snap).expect("json"),
        serde_json::to_value(&base).expect("json"),
    );
    let share = |j: &serde_json::Value, side: &str, l: Level| {
        let m = &j["placement"]["wakeups"][side];
        let n = m[l.name()].as_u64().expect("level count") as f64;
        let total: f64 = Level::ALL
            .iter()
            .map(|x| m[x.name()].as_u64().expect("count") as f64)
            .sum();
        100.0 * n / total
    };
    let mut moved = 0;
    for (side, key) in [(Side::Waker, "vs_waker"), (Side::Prev, "vs_prev")] {
        for l in Level::ALL {
            let got = level_share_delta(&app.data.snap, &base, side, l);
            if !base.topology.level_exists(l) {
                assert_eq!(got, None, "{key} {l:?}: n/a on this topology, never 0");
                continue;
            }
            let want = share(&ja, key, l) - share(&jb, key, l);
            let got = got.expect("both runs have wakeups");
            assert!((got - want).abs() < 1e-9, "{key} {l:?}: {got} != {want}");
            if want.abs() >= 0.05 {
                moved += 1;
            }
        }
    }
    assert!(
        moved > 0,
        "the two runs differ somewhere, or the test proves nothing"
    );
    app.update(Msg::Show(View::Placement));
    let s = screen(&app, 80, 24);
    let d = share(&ja, "vs_waker", Level::SameLlc) - share(&jb, "vs_waker", Level::SameLlc);
    let text = super::delta::pt_text(Some(d));
    let row = s
        .lines()
        .find(|r| r.contains("same_llc"))
        .expect("same_llc row");
    assert!(row.contains(&text), "{text} not in {row}");
    // A filter narrows the current side only, and the header says so.
    app.update(Msg::EditFilter);
    "pipe".chars().for_each(|c| app.update(Msg::FilterChar(c)));
    app.update(Msg::FilterApply);
    refeed(&mut app, &dir.path().join("fixture.wvz"));
    let s = screen(&app, 80, 24);
    assert!(
        s.contains("filter comm:pipe applies to the current run only"),
        "{s}"
    );
}

/// A baseline from another machine: shares only, said once; counts and per-LLC rows are not
/// compared.
#[test]
fn a_different_topology_compares_shares_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cur = recording(dir.path(), &topo(), 30_000);
    let base = recording_as(
        dir.path(),
        "zen3.wvz",
        &topo_of(&SysfsSpec::zen3(4)),
        30_000,
        7,
    );
    let mut app = compared(&cur, &base);
    for v in View::ALL {
        app.update(Msg::Show(v));
        let s = screen(&app, 80, 24);
        assert_eq!(
            s.matches("different topologies: shares only").count(),
            1,
            "{s}"
        );
        if v == View::Overview {
            let all = s.lines().find(|l| l.contains("\"all ")).expect("all row");
            assert!(all.contains("n/a"), "counts are not compared: {all}");
        }
        if v == View::Scan {
            assert!(s.contains("not compared: the LLC layouts differ"), "{s}");
        }
        if v == View::Placement {
            assert!(s.contains("pt"), "shares still compare: {s}");
        }
    }
    app.update(Msg::Show(View::Placement));
    insta::assert_snapshot!(
        "compare_other_topology_placement_80x24",
        screen(&app, 80, 24)
    );
}

/// The built-in demo (a real 19.6 s VM recording) as `dir/fixture.wvz`, replayed to its end:
/// long enough for 100 ms steps and 1 s jumps (the synthetic fixture lasts 15 ms).
fn long_fixture() -> (tempfile::TempDir, App) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("fixture.wvz");
    std::fs::write(&path, include_bytes!("../../../assets/demo.wvz")).expect("write demo");
    let app = replayed(&path);
    (dir, app)
}

/// What the replay loop does after a seek, up to the pacer's cursor (paused): reopen, restart,
/// fold the events up to the cursor through the app's own `on_batch` (which applies the range).
fn fold_to_cursor(app: &mut App, path: &std::path::Path) {
    use crate::driver::Sink as _;
    let mut src = ReplaySource::open(path).expect("reopen");
    app.restart();
    app.paused = true;
    while let Ok(Poll::Batch(b)) = src.poll(std::time::Duration::ZERO) {
        let Some(first) = b.events.first().map(Event::ts_ns) else {
            continue;
        };
        let limit = app.limit_ns(first).expect("a replay paces");
        let events: Vec<Event> = b
            .events
            .iter()
            .filter(|e| e.ts_ns() <= limit)
            .cloned()
            .collect();
        let held = b.events.get(events.len()).map(Event::ts_ns);
        app.on_batch(&Batch {
            tasks: b.tasks,
            events,
            ..b
        })
        .expect("fold");
        if let Some(next) = held {
            // The driver asks again with the first event held back: caught up.
            let _ = app.limit_ns(next);
            break;
        }
    }
    app.refresh();
}

/// Events of the recording whose stream time from the first event is in `[a, b]`: the
/// independent count the range must give.
fn events_between(path: &std::path::Path, a: u64, b: u64) -> u64 {
    let mut src = ReplaySource::open(path).expect("open");
    let mut origin = None;
    let mut n = 0;
    while let Ok(Poll::Batch(batch)) = src.poll(std::time::Duration::ZERO) {
        for e in &batch.events {
            let o = *origin.get_or_insert(e.ts_ns());
            let rel = e.ts_ns().saturating_sub(o);
            n += u64::from(rel >= a && rel <= b);
        }
    }
    n
}

#[test]
fn steps_are_100_ms_and_the_status_says_so() {
    let (dir, mut app) = long_fixture();
    let path = dir.path().join("fixture.wvz");
    let len = app
        .pacer
        .as_ref()
        .and_then(|p| p.length_ns)
        .expect("length known at end");
    assert!(len > 1_000_000_000, "the fixture is long enough: {len}");
    app.update(Msg::ToStart);
    fold_to_cursor(&mut app, &path);
    for _ in 0..7 {
        app.update(Msg::Step(1));
    }
    app.update(Msg::Step(-1));
    fold_to_cursor(&mut app, &path);
    let s = screen(&app, 80, 24);
    assert!(
        s.contains(&format!("+0.600 / {:.3} s", len as f64 / 1e9)),
        "{s}"
    );
    assert_eq!(
        app.data.snap.events.total(),
        events_between(&path, 0, 600_000_000)
    );
}

/// `r` in replay counts from here; a jump back before that point does not bring the old
/// counts back: the start follows the jump, and the status says from where.
#[test]
fn reset_then_jump_back_does_not_resurrect_counts() {
    let (dir, mut app) = long_fixture();
    let path = dir.path().join("fixture.wvz");
    app.update(Msg::ToStart);
    fold_to_cursor(&mut app, &path);
    for _ in 0..3 {
        app.update(Msg::Jump(1));
    }
    fold_to_cursor(&mut app, &path);
    assert!(app.data.snap.events.total() > 0);
    app.update(Msg::Reset);
    app.refresh();
    assert_eq!(app.data.snap.events.total(), 0);
    assert!(screen(&app, 80, 24).contains("from +3.000 s"));
    app.update(Msg::Jump(-1));
    assert!(
        app.pacer.as_ref().is_some_and(|p| p.reopen),
        "back: a refold"
    );
    fold_to_cursor(&mut app, &path);
    let s = screen(&app, 80, 24);
    assert!(s.contains("from +2.000 s"), "{s}");
    assert_eq!(
        app.data.snap.events.total(),
        events_between(&path, 2_000_000_000, 2_000_000_000)
    );
    // Forward again from there: only what lies after the new start.
    app.update(Msg::Step(5));
    fold_to_cursor(&mut app, &path);
    assert_eq!(
        app.data.snap.events.total(),
        events_between(&path, 2_000_000_000, 2_500_000_000)
    );
}

/// `[` and `]` mark a range; the views and the saved report cover exactly it; `s` writes the
/// three files next to the recording, never over an earlier save.
#[test]
fn range_marks_and_save() {
    let (dir, mut app) = long_fixture();
    let path = dir.path().join("fixture.wvz");
    app.update(Msg::ToStart);
    fold_to_cursor(&mut app, &path);
    app.update(Msg::Jump(1));
    fold_to_cursor(&mut app, &path);
    app.update(Msg::MarkStart);
    for _ in 0..5 {
        app.update(Msg::Step(1));
    }
    app.update(Msg::MarkEnd);
    fold_to_cursor(&mut app, &path);
    let want = events_between(&path, 1_000_000_000, 1_500_000_000);
    assert!(want > 0);
    assert_eq!(app.data.snap.events.total(), want);
    let s = screen(&app, 80, 24);
    assert!(s.contains("range +1.000 s–+1.500 s"), "{s}");
    insta::assert_snapshot!("range_overview_80x24", s.clone());
    // Every view's title names the range, not "cumulative".
    for v in View::ALL {
        app.update(Msg::Show(v));
        let t = screen(&app, 120, 40);
        let title = t.lines().nth(2).unwrap_or_default();
        assert!(!title.contains("cumulative"), "{v:?}: {title}");
    }
    app.update(Msg::Show(View::Overview));
    // Playing on past `]` folds nothing more.
    app.update(Msg::Jump(1));
    fold_to_cursor(&mut app, &path);
    assert_eq!(app.data.snap.events.total(), want);

    app.update(Msg::Save);
    assert!(app.save_wanted);
    app.save(&s);
    assert!(!app.save_wanted);
    let notice = app.notice.clone().unwrap_or_default();
    assert!(notice.contains("fixture.report.txt"), "{notice}");
    // The directory in full, never ".".
    let full = std::path::absolute(dir.path()).expect("absolute");
    assert!(notice.ends_with(&full.display().to_string()), "{notice}");
    let text = std::fs::read_to_string(dir.path().join("fixture.report.txt")).expect("text");
    assert!(text.starts_with("== range +1.000 s–+1.500 s"), "{text}");
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("fixture.report.json")).expect("json"),
    )
    .expect("valid JSON");
    assert_eq!(json["range"]["from_ns"], 1_000_000_000u64);
    assert_eq!(json["range"]["to_ns"], 1_500_000_000u64);
    let total = json["events"]["total"].as_u64().expect("events total");
    assert_eq!(total, want, "{}", json["events"]);
    let cap = std::fs::read_to_string(dir.path().join("fixture.screen.txt")).expect("screen");
    assert_eq!(cap, s);
    // A second save does not overwrite the first.
    app.save("second");
    assert!(dir.path().join("fixture-1.screen.txt").exists());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("fixture.screen.txt")).expect("screen"),
        s
    );
    // g clears the range.
    app.update(Msg::ToStart);
    assert!(app.range_ns().is_none());
}

/// The header says what the capture lost, and nothing when only the inlined select_idle_cpu
/// is missing (the demo's case).
#[test]
fn honest_status_badges() {
    let (_dir, app) = fixture();
    let h = app.data.header();
    let s = screen(&app, 120, 40);
    if super::status::degradations(h).is_empty() {
        assert!(!s.contains("DEGRADED"), "{s}");
    }
    let demo = ReplaySource::new(
        wakeviz_core::format::Reader::new(
            std::io::Cursor::new(include_bytes!("../../../assets/demo.wvz").as_slice()),
            std::path::Path::new("demo.wvz"),
        )
        .expect("demo"),
    );
    let dh = demo.header();
    assert!(
        dh.probe("select_idle_cpu").is_some_and(|p| !p.attached()),
        "the demo has the inlined select_idle_cpu this test is about"
    );
    assert!(
        super::status::degradations(dh).is_empty(),
        "{:?}",
        super::status::degradations(dh)
    );
    let mut live = App::new(dh, SourceKind::Live { recording: None });
    live.refresh();
    let s = screen(&live, 80, 24);
    assert!(s.contains("LIVE"), "{s}");
    assert!(s.contains("elapsed"), "{s}");
    assert!(!s.contains("DEGRADED"), "{s}");
}

/// At 80x24 the Overview's columns scroll: every line the 200x60 screen shows of them can be
/// brought into view with ↓, and ↑ goes back to the top.
#[test]
fn the_overview_scrolls_to_every_line() {
    let (_dir, mut app) = fixture();
    app.warnings = (0..12).map(|i| format!("test warning {i}")).collect();
    app.update(Msg::Show(View::Overview));
    let first = screen(&app, 80, 24);
    assert!(first.contains("more ↓"), "{first}");
    let mut seen = first.clone();
    for _ in 0..60 {
        crate::dashboard::app::tests::press(&mut app, ratatui::crossterm::event::KeyCode::Down);
        let s = screen(&app, 80, 24);
        seen.push_str(&s);
        if !s.contains("more ↓") {
            break;
        }
    }
    let last = screen(&app, 80, 24);
    assert!(!last.contains("more ↓") && last.contains("↑ "), "{last}");
    let big = screen(&app, 200, 60);
    for key in ["delivered", "kernel drops", "decode errors"] {
        if big.contains(key) {
            assert!(seen.contains(key), "{key} never shown at 80x24");
        }
    }
    for _ in 0..200 {
        crate::dashboard::app::tests::press(&mut app, ratatui::crossterm::event::KeyCode::Up);
    }
    assert_eq!(screen(&app, 80, 24), first);
}

/// A recording with `/proc/schedstat` samples (a VM capture, format 3): the Placement view
/// shows the kernel's counters beside wakeviz's on replay.
#[test]
fn the_kernel_counters_show_on_replay() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../wakeviz-core/tests/fixtures/recordings/vm-nps1-smt-pingpong.wvz");
    let mut app = replayed(&path);
    app.update(Msg::Show(View::Placement));
    let s = screen(&app, 120, 40);
    assert!(
        s.contains("Kernel counters · schedstat v16 · 2 disagree")
            && s.contains("SMT       remote       1006      1006"),
        "{s}"
    );
    insta::assert_snapshot!("placement_kernel_counters_120x40", s);
}
