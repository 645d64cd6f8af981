//! A level the topology cannot have (no SMT, one package) is n/a in every view, single and
//! compared, never a 0 that reads as measured.
use wakeviz_core::topology::{
    Level,
    fixture::{Symmetric, SysfsSpec},
};

use super::tests::screen;
use crate::dashboard::app::{
    App, Msg, View,
    tests::{compared, recording, recording_as, replayed, topo_of},
};

/// No SMT, one package of one node: `smt_sibling`, `same_package` and `cross_package` cannot
/// occur.
fn small() -> SysfsSpec {
    SysfsSpec::symmetric(Symmetric {
        packages: 1,
        cores_per_package: 8,
        threads_per_core: 1,
        cores_per_llc: 4,
        nodes_per_package: 1,
        local: 10,
        same_package: 12,
        remote: 32,
    })
}

fn screens(app: &mut App) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for v in View::ALL {
        app.update(Msg::Show(v));
        for (w, h) in [(80, 24), (120, 40), (200, 60)] {
            out.push((format!("{} {w}x{h}", v.tab()), screen(app, w, h)));
        }
    }
    out
}

/// The labels the views give a level: its name, and the short forms of the narrow rows.
fn labels(l: Level) -> &'static [&'static str] {
    match l {
        Level::SmtSibling => &["smt_sibling", "smt"],
        Level::SamePackage => &["same_package", "pkg"],
        Level::CrossPackage => &["cross_package", "xpkg"],
        Level::SameCpu => &["same_cpu", "cpu"],
        Level::SameLlc => &["same_llc", "llc"],
        Level::SameNode => &["same_node", "node"],
    }
}

/// Every time a view names a level this topology cannot have, the next cell says n/a.
#[test]
fn an_impossible_level_is_na_in_every_view_single_and_compared() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = topo_of(&small());
    let cur = recording(dir.path(), &t, 20_000);
    let base = recording_as(dir.path(), "baseline.wvz", &t, 16_000, 11);
    let gone: Vec<&str> = Level::ALL
        .iter()
        .filter(|&&l| !t.level_exists(l))
        .flat_map(|&l| labels(l).iter().copied())
        .collect();
    assert_eq!(
        gone,
        [
            "smt_sibling",
            "smt",
            "same_package",
            "pkg",
            "cross_package",
            "xpkg"
        ]
    );
    let mut seen = 0;
    for mut app in [replayed(&cur), compared(&cur, &base)] {
        for (name, s) in screens(&mut app) {
            for line in s.lines() {
                let words: Vec<&str> = line
                    .split(|c: char| c.is_whitespace() || c == '"')
                    .filter(|w| !w.is_empty())
                    .collect();
                for (i, w) in words.iter().enumerate() {
                    if gone.contains(w) {
                        seen += 1;
                        assert_eq!(
                            words.get(i + 1).copied(),
                            Some("n/a"),
                            "{name}: {w} is not n/a in {line:?}"
                        );
                    }
                }
            }
        }
    }
    // Every view that shows levels was looked at: placement tables, latency rows, the shadow
    // rows' level mix, single and compared.
    assert!(seen > 50, "only {seen} level cells seen");
}
