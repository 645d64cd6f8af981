//! Screens of the Timeline, Matrix and Tasks views and of the Scan view's per-LLC histogram,
//! on the fixed recording the other UI tests use (and a 256-CPU NPS4 one for the LLC x LLC
//! matrix). 60x15 is drawn as the view body of a 60x15 terminal (its frame, which another
//! module owns, takes 5 rows), so these screens do not depend on the frame's layout.
use ratatui::{Terminal, backend::TestBackend, layout::Rect};
use wakeviz_core::topology::fixture::SysfsSpec;

use super::{tests::screen, view_body};
use crate::dashboard::app::{
    App, Msg, View,
    tests::{fixture, recording, replayed, topo, topo_of},
};

const NEW_VIEWS: [View; 3] = [View::Timeline, View::Matrix, View::Tasks];

/// The view alone in a `w` x `h` area.
fn body(app: &App, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("test terminal");
    term.draw(|f| view_body(f, Rect::new(0, 0, w, h), app))
        .expect("draw");
    term.backend().to_string()
}

#[test]
fn new_views_at_60x15_80x24_and_200x60() {
    let (_dir, mut app) = fixture();
    for v in NEW_VIEWS {
        app.update(Msg::Show(v));
        let name = v.tab().to_lowercase();
        insta::assert_snapshot!(format!("{name}_body_60x10"), body(&app, 60, 10));
        insta::assert_snapshot!(format!("{name}_80x24"), screen(&app, 80, 24));
        insta::assert_snapshot!(format!("{name}_200x60"), screen(&app, 200, 60));
    }
}

#[test]
fn the_main_figure_survives_small_areas() {
    let (_dir, mut app) = fixture();
    for v in NEW_VIEWS {
        app.update(Msg::Show(v));
        for (w, h) in [
            (1, 1),
            (5, 2),
            (20, 3),
            (30, 6),
            (60, 10),
            (79, 40),
            (300, 100),
        ] {
            let _ = body(&app, w, h);
        }
    }
    app.update(Msg::Show(View::Timeline));
    let s = body(&app, 60, 10);
    assert!(s.contains("wakeups/s"), "{s}");
    let tiny = body(&app, 60, 4);
    assert!(
        tiny.contains("wakeups/s") && tiny.contains("more ↓"),
        "{tiny}"
    );
    app.update(Msg::Show(View::Matrix));
    let s = body(&app, 60, 10);
    assert!(s.contains("more ↓") && s.contains("rows: waker CPU"), "{s}");
    app.update(Msg::Show(View::Tasks));
    let s = body(&app, 60, 10);
    assert!(s.contains("wakeups▼") && s.contains("more ↓"), "{s}");
}

#[test]
fn windows_and_sorting_show_in_the_views() {
    let (_dir, mut app) = fixture();
    app.update(Msg::Show(View::Timeline));
    app.update(Msg::CycleWindow);
    app.update(Msg::CycleWindow);
    let s = screen(&app, 80, 24);
    assert!(s.contains("[last 1 s]"), "{s}");
    insta::assert_snapshot!("timeline_last1s_80x24", s);
    app.update(Msg::Show(View::Matrix));
    assert!(screen(&app, 80, 24).contains("[cumulative]"));
    app.update(Msg::Show(View::Tasks));
    app.update(Msg::CycleSort);
    app.update(Msg::CycleSort);
    app.update(Msg::Move(3));
    let s = screen(&app, 80, 24);
    assert!(s.contains("p99▼") && s.contains("[cumulative]"), "{s}");
    insta::assert_snapshot!("tasks_by_p99_80x24", s);
}

#[test]
fn scan_histogram_follows_the_selection() {
    let (_dir, mut app) = fixture();
    app.update(Msg::Show(View::Scan));
    let all = screen(&app, 80, 24);
    app.update(Msg::Move(2));
    let s = screen(&app, 80, 24);
    let l = &app.data.snap.scan_latency.per_llc[1];
    assert!(
        s.contains(&format!("LLC {} (CPUs {}), cumulative", l.id, l.cpus)),
        "{s}"
    );
    assert_ne!(all, s);
    insta::assert_snapshot!("scan_llc1_80x24", s);
}

/// 2 x 64C Zen3 NPS4 (256 CPUs): the matrix is LLC x LLC.
#[test]
fn zen3_nps4_matrix_is_llc_by_llc() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = topo_of(&SysfsSpec::zen3(4));
    let path = recording(dir.path(), &t, 40_000);
    let mut app = replayed(&path);
    app.update(Msg::Show(View::Matrix));
    let s = screen(&app, 80, 24);
    assert!(s.contains("rows: waker LLC"), "{s}");
    insta::assert_snapshot!("matrix_zen3_nps4_80x24", s);
    insta::assert_snapshot!("matrix_zen3_nps4_200x60", screen(&app, 200, 60));
    insta::assert_snapshot!("matrix_zen3_nps4_body_60x10", body(&app, 60, 10));
}

/// Before any event (live, just started) the views say so instead of drawing empty axes.
#[test]
fn empty_views_say_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = recording(dir.path(), &topo(), 2_000);
    let src = wakeviz_core::source::ReplaySource::open(&path).expect("open");
    let mut app = App::new(
        wakeviz_core::source::EventSource::header(&src),
        crate::dashboard::app::SourceKind::Live { recording: None },
    );
    app.refresh();
    for v in NEW_VIEWS {
        app.update(Msg::Show(v));
        let s = body(&app, 60, 10);
        assert!(s.contains("no placed wakeups yet"), "{v:?}: {s}");
    }
}
