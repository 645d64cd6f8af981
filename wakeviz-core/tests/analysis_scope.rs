//! The scope: a wakeup is in scope when its wakee is. The `-- CMD` tree grows with the tasks
//! wakeviz's threads create and their descendants, followed through `sched_wakeup_new` (which
//! fires in the forking task's context); every output says which scope its figures have and
//! how many wakeups fell outside; a recording's scope is the default of every replay.
mod analysis_support;

use analysis_support::{W, batch, header};
use wakeviz_core::{
    analysis::{Analysis, Filter, report},
    event::{Event, Wake},
    format::{Header, Recorder, RecorderConfig, ScanSource},
    source::{EventSource, Poll, ReplaySource},
};

/// `parent` forks `child` at `ts` (the new task's first wakeup, in the parent's context).
fn fork(ts: u64, parent: u32, child: u32) -> Event {
    Event::WakeupNew(Wake {
        ts_ns: ts,
        cpu: 0,
        pid: child,
        target_cpu: 1,
        waker_pid: parent,
        prio: 120,
    })
}

/// wakeviz (500, 501) starts CMD (600), which forks 601; a neighbour pair 700/701 ping-pongs
/// beside them; a task 800 that a neighbour forks is not CMD's.
fn stream() -> Vec<Event> {
    let mut ev = vec![
        fork(100, 500, 600),
        fork(200, 600, 601),
        fork(300, 700, 800),
    ];
    let w = |ts, pid, waker| W {
        waker_pid: waker,
        ..W::new(ts, 0, pid, 1, 2).select(300).runs_after(1_000)
    };
    ev.extend(
        batch(&[
            w(10_000, 600, 601),
            w(20_000, 601, 600),
            w(30_000, 700, 701),
            w(40_000, 701, 700),
            w(50_000, 700, 701),
            w(60_000, 800, 700),
        ])
        .events,
    );
    ev
}

fn with_scope(scope: Option<Filter>) -> Header {
    let mut h = header("xeon-e5-2690v3", ScanSource::SelectTaskRqFair);
    h.run.own_tids = vec![500, 501];
    h.run.scope = scope;
    h
}

fn fold(h: &Header) -> Analysis {
    let mut a = Analysis::new(h);
    for e in &stream() {
        a.on_event(e);
    }
    a
}

#[test]
fn the_command_tree_is_what_wakeviz_started_and_its_descendants() {
    let s = fold(&with_scope(Some(Filter::Command))).snapshot();
    assert_eq!(s.placement.wakeups.count, 2, "600 and 601 only");
    assert_eq!(s.scope.name, "cmd");
    assert_eq!(s.scope.outside_wakeups, 4, "700 twice, 701 and 800");
    assert_eq!(s.wakeup_latency.overall.quantiles.count, 2);
    let text = report::text(&s);
    assert!(
        text.contains("scope cmd: wakeups of the -- CMD process tree")
            && text.contains("4 wakeups outside it left out"),
        "{text}"
    );
    let j = serde_json::to_value(&s).unwrap();
    assert_eq!(j["scope"]["name"], "cmd");
    assert_eq!(j["scope"]["outside_wakeups"], 4);
    assert_eq!(
        j["figures"]["events.outside_scope_wakeups.count"]["value"],
        4.0
    );

    let all = fold(&with_scope(None)).snapshot();
    assert_eq!(all.placement.wakeups.count, 6);
    assert_eq!(
        (all.scope.name.as_str(), all.scope.outside_wakeups),
        ("all", 0)
    );

    let tree = fold(&with_scope(Some(Filter::Tree(700)))).snapshot();
    assert_eq!(
        tree.placement.wakeups.count, 3,
        "700 twice and its child 800"
    );
    assert_eq!(tree.scope.outside_wakeups, 3);
}

#[test]
fn the_view_narrows_the_scope_and_never_widens_it() {
    let mut a = Analysis::new(&with_scope(Some(Filter::Command)));
    a.set_filter(Some(Filter::Pid(700)));
    for e in &stream() {
        a.on_event(e);
    }
    let s = a.snapshot();
    assert_eq!(s.placement.wakeups.count, 0, "700 is outside the scope");
    assert_eq!(
        a.scope(),
        Some(&Filter::Command),
        "the view left the scope alone"
    );
    a.set_filter(Some(Filter::Pid(601)));
    for e in &stream() {
        a.on_event(e);
    }
    assert_eq!(a.snapshot().placement.wakeups.count, 1);
}

#[test]
fn a_recordings_scope_is_every_replays_default() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scoped.wvz");
    let h = with_scope(Some(Filter::Command));
    let f = std::fs::File::create(&path).unwrap();
    let mut r = Recorder::new(f, &h, RecorderConfig::default()).unwrap();
    for e in &stream() {
        r.push(e).unwrap();
    }
    r.finish(&Default::default()).unwrap();
    let mut src = ReplaySource::open(&path).unwrap();
    assert_eq!(src.header().run.scope, Some(Filter::Command));
    let mut a = Analysis::new(src.header());
    while let Ok(Poll::Batch(b)) = src.poll(std::time::Duration::ZERO) {
        a.on_batch(&b);
    }
    let s = a.snapshot();
    assert_eq!((s.placement.wakeups.count, s.scope.outside_wakeups), (2, 4));
    // A header written before the field existed: every task.
    let old: wakeviz_core::run::RunMeta = serde_json::from_str(r#"{"label":"tip"}"#).unwrap();
    assert_eq!(old.scope, None);
}
