//! Key handling and the fixtures the UI snapshot tests share: a 32-CPU NPS2 topology from a
//! fake sysfs tree and a deterministic synthetic recording of it.
use std::path::{Path, PathBuf};

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use wakeviz_core::{
    analysis::Filter,
    source::{EventSource, ReplaySource},
    synth::{self, SynthConfig},
    topology::{
        Topology,
        fixture::{Symmetric, SysfsSpec},
    },
};

use super::{App, Mode, Msg, SourceKind, View, Window, keymap, replay::Pacer};

/// 2 packages x 2 nodes (NPS2) x 2 LLCs x 2 cores x 2 threads.
pub fn spec() -> SysfsSpec {
    SysfsSpec::symmetric(Symmetric {
        packages: 2,
        cores_per_package: 8,
        threads_per_core: 2,
        cores_per_llc: 2,
        nodes_per_package: 2,
        local: 10,
        same_package: 12,
        remote: 32,
    })
}

pub fn topo_of(spec: &SysfsSpec) -> Topology {
    spec.read_back().expect("sysfs tree")
}

pub fn topo() -> Topology {
    topo_of(&spec())
}

/// `fixture.wvz` in `dir`: `events` synthetic events on `t`, seed 7.
pub fn recording(dir: &Path, t: &Topology, events: u64) -> PathBuf {
    let path = dir.join("fixture.wvz");
    let f = std::fs::File::create(&path).expect("create recording");
    synth::generate(t, &SynthConfig::new(events, 7), std::io::BufWriter::new(f)).expect("generate");
    path
}

/// `name` in `dir`: `events` synthetic events on `t` from `seed` (a second, different run).
pub fn recording_as(dir: &Path, name: &str, t: &Topology, events: u64, seed: u64) -> PathBuf {
    let path = dir.join(name);
    let f = std::fs::File::create(&path).expect("create recording");
    synth::generate(
        t,
        &SynthConfig::new(events, seed),
        std::io::BufWriter::new(f),
    )
    .expect("generate");
    path
}

/// `--compare`'s baseline as `main` builds it: the whole recording through the driver into
/// a headless analysis, kept as its snapshot.
pub fn baseline(path: &Path) -> super::data::Baseline {
    /// `main`'s `impl Sink for Analysis`, which the UI bench (compiling these modules by
    /// path) does not have.
    struct Fold(wakeviz_core::analysis::Analysis);
    impl crate::driver::Sink for Fold {
        fn on_batch(&mut self, b: &wakeviz_core::source::Batch) -> anyhow::Result<()> {
            self.0.on_batch(b);
            Ok(())
        }
    }
    let mut src = ReplaySource::open(path).expect("open baseline");
    let mut a = Fold(wakeviz_core::analysis::Analysis::new(src.header()));
    let out = crate::driver::run(
        &mut src,
        &mut [&mut a],
        &crate::driver::Options::default(),
        None,
    );
    assert!(out.error.is_none(), "{:?}", out.error);
    super::data::Baseline {
        path: path.to_path_buf(),
        snap: a.0.snapshot(),
        warnings: src.warnings().to_vec(),
    }
}

/// A replay dashboard of `cur` comparing against `base`.
pub fn compared(cur: &Path, base: &Path) -> App {
    let mut app = replayed(cur);
    app.baseline = Some(baseline(base));
    app
}

/// A replay dashboard that has folded the whole recording through its pacer.
pub fn replayed(path: &Path) -> App {
    let mut src = ReplaySource::open(path).expect("open recording");
    let mut app = App::new(
        src.header(),
        SourceKind::Replay {
            path: path.to_path_buf(),
        },
    );
    feed_all(&mut app, &mut src);
    app
}

/// The fixed replayed recording most view and key tests start from (30 000 events on
/// [`topo`]); the directory holds the file for the dashboard's later reopens.
pub fn fixture() -> (tempfile::TempDir, App) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = recording(dir.path(), &topo(), 30_000);
    let app = replayed(&path);
    (dir, app)
}

/// What the replay loop does after a filter change or a backward seek: reopen, fold again.
pub fn refeed(app: &mut App, path: &Path) {
    assert!(
        app.pacer.as_ref().is_some_and(|p| p.reopen),
        "nothing asked for a reopen"
    );
    let mut src = ReplaySource::open(path).expect("reopen recording");
    app.data.reset();
    feed_all(app, &mut src);
}

/// Folds all of `src` (a freshly opened source) through the driver, as the replay dashboard
/// does, with the pacer at the end of the recording.
pub fn feed_all(app: &mut App, src: &mut dyn EventSource) {
    /// The app as the driver sees it, minus staying on screen after the end.
    struct ToEnd<'a>(&'a mut App);
    impl crate::driver::Sink for ToEnd<'_> {
        fn on_batch(&mut self, b: &wakeviz_core::source::Batch) -> anyhow::Result<()> {
            self.0.on_batch(b)
        }
        fn on_turn(
            &mut self,
            src: &dyn EventSource,
            t: crate::driver::Turn,
        ) -> anyhow::Result<crate::driver::Flow> {
            self.0.on_turn(src, t)
        }
        fn limit_ns(&mut self, next: u64) -> Option<u64> {
            self.0.limit_ns(next)
        }
    }
    let p = app.pacer.get_or_insert_with(Default::default);
    p.reopened();
    p.seek_end();
    let out = crate::driver::run(
        src,
        &mut [&mut ToEnd(app)],
        &crate::driver::Options::default(),
        None,
    );
    assert!(out.error.is_none(), "{:?}", out.error);
    assert!(app.pacer.as_ref().is_some_and(|p| p.ended));
    app.refresh();
}

fn key(c: KeyCode) -> KeyEvent {
    KeyEvent::new(c, KeyModifiers::NONE)
}

/// A key as the keymap would deliver it in the app's current mode and view.
pub fn press(app: &mut App, c: KeyCode) {
    if let Some(m) = keymap::lookup(app.mode, app.view, app.is_replay(), key(c)) {
        app.update(m);
    }
}

fn live_app() -> App {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = topo();
    let path = recording(dir.path(), &t, 2_000);
    let src = ReplaySource::open(&path).expect("open");
    App::new(src.header(), SourceKind::Live { recording: None })
}

#[test]
fn views_switch_with_numbers_and_tab() {
    let mut app = live_app();
    press(&mut app, KeyCode::Char('2'));
    assert_eq!(app.view, View::Scan);
    press(&mut app, KeyCode::Char('8'));
    press(&mut app, KeyCode::Tab);
    assert_eq!(app.view, View::Overview);
    app.update(
        keymap::lookup(
            Mode::Normal,
            app.view,
            false,
            KeyEvent::new(KeyCode::BackTab, KeyModifiers::SHIFT),
        )
        .expect("backtab"),
    );
    assert_eq!(app.view, View::Tasks);
}

#[test]
fn filter_typing_does_not_trigger_keys() {
    let mut app = live_app();
    press(&mut app, KeyCode::Char('/'));
    assert_eq!(app.mode, Mode::Filter);
    for c in "pq 2".chars() {
        press(&mut app, KeyCode::Char(c));
    }
    press(&mut app, KeyCode::Backspace);
    press(&mut app, KeyCode::Backspace);
    assert_eq!(
        (app.filter_input.as_str(), app.quit, app.view),
        ("pq", false, View::Overview)
    );
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.mode, Mode::Normal);
    assert_eq!(app.data.filter(), Some(&Filter::Comm("pq".into())));
    // Enter on the filter in effect changes nothing (no fold again); Ctrl-U clears the line.
    let before = app.data.snap.events.total();
    press(&mut app, KeyCode::Char('/'));
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.data.filter(), Some(&Filter::Comm("pq".into())));
    assert_eq!(app.data.snap.events.total(), before, "not folded again");
    press(&mut app, KeyCode::Char('/'));
    let ctrl_u = KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL);
    app.update(keymap::lookup(app.mode, app.view, false, ctrl_u).expect("ctrl-u"));
    assert_eq!((app.mode, app.filter_input.as_str()), (Mode::Filter, ""));
    press(&mut app, KeyCode::Esc);
    // Editing starts from the current filter; an empty one clears it.
    press(&mut app, KeyCode::Char('/'));
    assert_eq!(app.filter_input, "pq");
    press(&mut app, KeyCode::Backspace);
    press(&mut app, KeyCode::Backspace);
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.data.filter(), None);
    // Esc cancels; a bad pid is reported and changes nothing.
    app.update(Msg::EditFilter);
    "123".chars().for_each(|c| app.update(Msg::FilterChar(c)));
    press(&mut app, KeyCode::Esc);
    assert_eq!((app.mode, app.data.filter()), (Mode::Normal, None));
    app.update(Msg::EditFilter);
    "pid:x".chars().for_each(|c| app.update(Msg::FilterChar(c)));
    app.update(Msg::FilterApply);
    assert_eq!(app.data.filter(), None);
    assert!(
        app.notice.as_deref().is_some_and(|n| n.contains("bad pid")),
        "{:?}",
        app.notice
    );
    app.update(Msg::EditFilter);
    "1234".chars().for_each(|c| app.update(Msg::FilterChar(c)));
    app.update(Msg::FilterApply);
    assert_eq!(app.data.filter(), Some(&Filter::Pid(1234)));
}

#[test]
fn help_pause_quit_and_ctrl_c() {
    let mut app = live_app();
    press(&mut app, KeyCode::Char('?'));
    assert_eq!(app.mode, Mode::Help);
    press(&mut app, KeyCode::Esc);
    assert_eq!(app.mode, Mode::Normal);
    press(&mut app, KeyCode::Char(' '));
    assert!(app.paused);
    press(&mut app, KeyCode::Char('?'));
    press(&mut app, KeyCode::Char('q'));
    assert!(app.quit);
    let mut app = live_app();
    app.update(Msg::EditFilter);
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert_eq!(
        keymap::lookup(app.mode, app.view, false, ctrl_c),
        Some(Msg::Quit)
    );
}

#[test]
fn view_keys_are_scoped() {
    let mut app = live_app();
    // Replay keys do nothing live; w only where there is a window.
    assert_eq!(
        keymap::lookup(Mode::Normal, View::Scan, false, key(KeyCode::Left)),
        None
    );
    assert_eq!(
        keymap::lookup(Mode::Normal, View::Overview, false, key(KeyCode::Char('w'))),
        None
    );
    press(&mut app, KeyCode::Char('2'));
    press(&mut app, KeyCode::Char('w'));
    assert_eq!(app.window, Window::Last10s);
    // The selection stops at the last LLC (row 0 is every LLC).
    for _ in 0..20 {
        press(&mut app, KeyCode::Down);
    }
    assert_eq!(
        app.sel[View::Scan.index()],
        app.data.header().topology.llcs.len()
    );
    press(&mut app, KeyCode::Char('3'));
    press(&mut app, KeyCode::PageDown);
    assert_eq!(app.sel[View::Placement.index()], 16);
    press(&mut app, KeyCode::Char('a'));
    assert!(!app.per_cpu_map);
    assert_eq!(app.sel[View::Placement.index()], 0);
    let footer = keymap::footer(View::Placement, false, Mode::Normal);
    assert!(footer.iter().any(|(k, _)| *k == "a") && !footer.iter().any(|(k, _)| *k == "g/G"));
}

#[test]
fn replay_keys_move_the_cursor() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = recording(dir.path(), &topo(), 2_000);
    let src = ReplaySource::open(&path).expect("open");
    let mut app = App::new(src.header(), SourceKind::Replay { path });
    let p = |a: &App| {
        a.pacer
            .as_ref()
            .map(|p| (p.cursor, p.reopen, p.speed_label()))
    };
    press(&mut app, KeyCode::Right);
    assert!(app.paused, "stepping pauses");
    assert_eq!(p(&app), Some((100_000_000, false, "1x".into())));
    press(&mut app, KeyCode::Char('j'));
    press(&mut app, KeyCode::Char('+'));
    assert_eq!(p(&app), Some((1_100_000_000, false, "2x".into())));
    press(&mut app, KeyCode::Char('-'));
    press(&mut app, KeyCode::Char('-'));
    assert_eq!(p(&app).map(|x| x.2), Some("0.5x".into()));
    press(&mut app, KeyCode::Char('G'));
    assert_eq!(p(&app).map(|x| x.0), Some(u64::MAX));
    if let Some(pc) = app.pacer.as_mut() {
        pc.origin = Some(0);
        pc.fed_ts = Some(2_000_000_000);
        pc.ended = true;
    }
    press(&mut app, KeyCode::Left);
    assert_eq!(p(&app).map(|x| (x.0, x.1)), Some((1_900_000_000, true)));
    press(&mut app, KeyCode::Char('g'));
    assert_eq!(p(&app).map(|x| (x.0, x.1)), Some((0, true)));
}

#[test]
fn reset_and_filter_restart_the_counts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = recording(dir.path(), &topo(), 5_000);
    let mut app = replayed(&path);
    assert!(app.data.snap.events.total() == 5_000 && app.data.snap.placement.landed_total() > 0);
    app.update(Msg::Reset);
    app.refresh();
    assert_eq!(
        (
            app.data.snap.events.total(),
            app.data.snap.placement.landed_total()
        ),
        (0, 0)
    );
    // Filtered per-CPU counts agree with the analysis' filtered placement count.
    let mut app = App::new(
        &app.data.header().clone(),
        SourceKind::Replay { path: path.clone() },
    );
    app.update(Msg::EditFilter);
    "pipe".chars().for_each(|c| app.update(Msg::FilterChar(c)));
    app.update(Msg::FilterApply);
    refeed(&mut app, &path);
    let w = &app.data.snap.placement.wakeups;
    assert!(w.count > 0);
    assert_eq!(app.data.snap.placement.landed_total(), w.count);
    // Live, a filter cannot look back: the figures restart and the notice says so.
    let mut live = live_app();
    live.update(Msg::EditFilter);
    live.update(Msg::FilterChar('x'));
    live.update(Msg::FilterApply);
    assert!(
        live.notice
            .as_deref()
            .is_some_and(|n| n.ends_with("restart from zero")),
        "{:?}",
        live.notice
    );
    let _ = Pacer::default();
}
