//! `wakeviz diff` end to end: synthetic recordings written to files, the binary run on them.
//! The base family is seeds 1-3, the same family again seeds 4-6, and seeds 4-6 with 10 % of
//! the wakeups placed in the waker's LLC moved to the other package (`cross_package_ppm`).
use std::{
    path::PathBuf,
    process::{Command, Output},
    sync::OnceLock,
};

use wakeviz_core::{
    synth::{self, SynthConfig},
    topology::fixture,
};

const CROSS: &str = "placement.vs_waker.cross_package.share";

struct Files {
    _dir: tempfile::TempDir,
    base: Vec<PathBuf>,
    same: Vec<PathBuf>,
    moved: Vec<PathBuf>,
}

fn files() -> &'static Files {
    static F: OnceLock<Files> = OnceLock::new();
    F.get_or_init(|| {
        let topo = fixture::named_topology("xeon-e5-2690v3").expect("fixture topology");
        let dir = tempfile::tempdir().expect("tempdir");
        let make = |name: &str, seed: u64, ppm: u32| {
            let p = dir.path().join(format!("{name}{seed}.wvz"));
            let mut cfg = SynthConfig::new(400_000, seed);
            cfg.phase_ns = 4_000_000;
            cfg.cross_package_ppm = ppm;
            let f = std::fs::File::create(&p).expect("create");
            synth::generate(&topo, &cfg, std::io::BufWriter::new(f)).expect("generate");
            p
        };
        Files {
            base: (1..=3).map(|s| make("base", s, 0)).collect(),
            same: (4..=6).map(|s| make("same", s, 0)).collect(),
            moved: (4..=6).map(|s| make("moved", s, 100_000)).collect(),
            _dir: dir,
        }
    })
}

fn wakeviz(args: &[&str], base: &[PathBuf], new: &[PathBuf]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_wakeviz"));
    c.arg("diff")
        .arg("--no-shadow")
        .arg("--base")
        .args(base)
        .arg("--new")
        .args(new)
        .args(args);
    c.output().expect("run wakeviz")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn row<'a>(out: &'a str, label: &str) -> &'a str {
    out.lines()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no row {label:?} in\n{out}"))
}

#[test]
fn a_move_across_packages_is_marked_and_fails_the_gate() {
    let f = files();
    let gate = format!("{CROSS} > +2pt");
    // --only does not hide figures from the gate.
    let o = wakeviz(&["--only", "scan", "--fail-if", &gate], &f.base, &f.moved);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let o = wakeviz(
        &["--fail-if", &gate, "--fail-if", "scan.p99 > +50%"],
        &f.base,
        &f.moved,
    );
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    let r = row(&out, "vs waker cross_package [%]");
    assert!(r.ends_with(" *"), "significant: {r}");
    let holds: Vec<&str> = err.lines().filter(|l| l.contains("HOLDS")).collect();
    assert_eq!(holds.len(), 1, "one line per condition that holds: {err}");
    assert!(holds[0].contains(CROSS), "{err}");
    assert!(out.lines().all(|l| l.chars().count() <= 100), "{out}");
    assert!(
        out.contains("Welch's two-sided t-test"),
        "the test is stated: {out}"
    );
}

#[test]
fn a_gate_on_a_figure_on_show_is_significant_exactly_when_the_table_marks_it() {
    let f = files();
    for (new, only) in [
        (&f.moved, "placement"),
        (&f.same, "placement"),
        (&f.moved, "placement,latency"),
    ] {
        let gate = format!("{CROSS} > -100pt significant");
        let o = wakeviz(&["--only", only, "--fail-if", &gate], &f.base, new);
        let (out, err) = (text(&o.stdout), text(&o.stderr));
        let marked = out
            .lines()
            .find(|l| l.trim_start().starts_with("vs waker cross_package [%]"))
            .is_some_and(|l| l.ends_with(" *"));
        let said = err.lines().find(|l| l.contains("fail-if")).unwrap_or("");
        assert_eq!(said.contains(", significant)"), marked, "{out}\n{err}");
        assert_eq!(o.status.code(), Some(if marked { 1 } else { 0 }), "{err}");
    }
}

#[test]
fn the_same_family_marks_nothing_and_passes_the_gate() {
    let f = files();
    let o = wakeviz(&["--fail-if", &format!("{CROSS} > +2pt")], &f.base, &f.same);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", text(&o.stderr));
    let marked: Vec<&str> = out.lines().filter(|l| l.ends_with(" *")).collect();
    assert!(marked.is_empty(), "noise marked: {marked:?}");
    // The verdict is printed even when it does not hold, with its numbers.
    let err = text(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    for part in ["does not hold", "base ", "new ", "change ", "p="] {
        assert!(err.contains(part), "{part:?} in {err}");
    }
}

/// A figure these runs do not have (the shadow is off) cannot be judged: the gate fails and
/// says why, unless the user asks to skip such conditions. The JSON carries every verdict.
#[test]
fn a_gate_on_a_missing_figure_fails_closed_unless_skipped() {
    let f = files();
    let cond = "shadow.fidelity.agreement.share < -1pt";
    let o = wakeviz(&["--fail-if", cond], &f.base, &f.same);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot be evaluated"), "{err}");
    let o = wakeviz(&["--fail-if", cond, "--skip-unevaluable"], &f.base, &f.same);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("skipped"), "{err}");
    let o = wakeviz(
        &[
            "--fail-if",
            cond,
            "--fail-if",
            &format!("{CROSS} > +2pt"),
            "--report",
            "json",
        ],
        &f.base,
        &f.same,
    );
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let gates = j["gates"].as_array().expect("gates");
    assert_eq!(gates.len(), 2, "{j}");
    assert_eq!(gates[0]["outcome"], "cannot_evaluate");
    assert!(gates[0]["base"].is_null() && gates[0]["change"].is_null());
    assert_eq!(gates[1]["outcome"], "does_not_hold");
    assert!(gates[1]["p_value"].is_number(), "{}", gates[1]);
}

/// A bad name is refused before any recording is read: nothing on stdout.
#[test]
fn an_unknown_name_is_refused_before_anything_is_printed() {
    let f = files();
    let long = format!("placement.{}.share > +1pt", "x".repeat(130_000));
    for cond in ["scan.p99x > +10%", long.as_str()] {
        let o = wakeviz(&["--fail-if", cond], &f.base, &f.same);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(o.stdout.is_empty(), "printed before refusing");
        assert!(err.len() < 1000, "bounded: {} bytes", err.len());
    }
}

#[test]
fn bad_expressions_and_names_exit_2_with_one_line() {
    let f = files();
    for (cond, says) in [
        ("scan.p99 >> 10%", "is not a number"),
        ("scan.p99 10%", "expected `>`"),
        ("placement.nope.share > +1pt", "no figure named"),
        ("scan.p99 > +1pt", "`pt` applies to shares"),
    ] {
        let o = wakeviz(&["--fail-if", cond], &f.base[..1], &f.same[..1]);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{cond}: {err}");
        assert_eq!(err.lines().count(), 1, "{cond}: one line: {err}");
        assert!(err.contains(says), "{cond}: {err}");
    }
    let o = wakeviz(&["--only", "placement,bogus"], &f.base[..1], &f.same[..1]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("unknown section \"bogus\""));
}

#[test]
fn one_run_a_side_marks_nothing_and_says_why() {
    let f = files();
    let o = Command::new(env!("CARGO_BIN_EXE_wakeviz"))
        .args(["diff", "--no-shadow"])
        .arg(&f.base[0])
        .arg(&f.moved[0])
        .output()
        .expect("run");
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(!out.lines().any(|l| l.ends_with(" *")), "{out}");
    assert!(out.lines().all(|l| l.chars().count() <= 100), "{out}");
    assert!(
        out.contains("no * markers: a group has a single run"),
        "{out}"
    );
    // Groups are named after the files.
    assert!(
        out.starts_with("wakeviz diff: base1 (1 run) vs moved4 (1 run)"),
        "{out}"
    );
}

#[test]
fn json_carries_the_figures_of_the_text() {
    let f = files();
    let t = wakeviz(&["--only", "placement,scan"], &f.base, &f.moved);
    let j = wakeviz(
        &["--only", "placement,scan", "--report", "json"],
        &f.base,
        &f.moved,
    );
    let (out, json) = (text(&t.stdout), text(&j.stdout));
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(v["schema_version"], 4);
    assert_eq!(v["groups"][0]["runs"], 3);
    let rows = v["rows"].as_array().expect("rows");
    assert!(
        rows.iter()
            .all(|r| ["placement", "scan"].contains(&r["section"].as_str().unwrap_or("")))
    );
    for (name, label) in [
        (CROSS, "vs waker cross_package [%]"),
        ("scan.p99", "scan p99 [ns]"),
    ] {
        let r = rows.iter().find(|r| r["name"] == name).expect(name);
        let base = r["groups"][0]["mean"].as_f64().expect("base mean");
        let new = &r["groups"][1];
        let line = row(&out, label);
        let fmt = |x: f64| {
            if x.abs() >= 1000.0 {
                format!("{x:.0}")
            } else {
                format!("{x:.2}")
            }
        };
        let cells: Vec<&str> = line.trim_start()[label.len()..]
            .split_whitespace()
            .collect();
        assert_eq!(cells[0], fmt(base), "{line}");
        assert_eq!(
            cells[1],
            fmt(new["mean"].as_f64().expect("new mean")),
            "{line}"
        );
        assert_eq!(
            line.ends_with(" *"),
            new["significant"].as_bool().expect("bool"),
            "{line}"
        );
    }
}

/// Writes the recordings these tests use to `$WAKEVIZ_DIFF_DIR` (base1-3, same4-6, moved4-6),
/// to run `wakeviz diff` on them by hand:
/// `WAKEVIZ_DIFF_DIR=/tmp/d cargo test --release -p wakeviz --test diff -- --ignored`.
#[test]
#[ignore]
fn write_the_recordings() {
    let Some(dir) = std::env::var_os("WAKEVIZ_DIFF_DIR") else {
        panic!("set WAKEVIZ_DIFF_DIR");
    };
    let dir = PathBuf::from(dir);
    std::fs::create_dir_all(&dir).expect("mkdir");
    let f = files();
    for p in f.base.iter().chain(&f.same).chain(&f.moved) {
        let to = dir.join(p.file_name().expect("name"));
        std::fs::copy(p, &to).expect("copy");
        println!("{}", to.display());
    }
}
