//! Text from a recording never reaches a terminal or a text file raw: a recording whose
//! metadata carries a screen clear (CSI 2J, also as the one-byte C1 CSI), a clipboard write
//! (OSC 52) and a bidi override goes through `--report text`, `--report json`, `wakeviz diff`
//! (text, JSON, `--fail-if` verdicts); every output must show those characters escaped.
use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
    sync::OnceLock,
};

use wakeviz_core::{
    format::{CaptureStats, Recorder, RecorderConfig},
    synth::{self, SynthConfig},
};

const CSI: &str = "\x1b[2J";
const OSC52: &str = "\x1b]52;c;aGFja2Vk\x07";
const C1_CSI: &str = "\u{9b}2J";
const RLO: &str = "\u{202e}";

/// What a terminal would act on: C0 but newline and tab, DEL, C1, bidi overrides/isolates
/// (spelt out here rather than taken from `safe_text`, so the test states the contract).
fn raw_control(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// One hostile string per field, each with all four sequences.
fn evil(field: &str) -> String {
    format!("{field}{CSI}{OSC52}{C1_CSI}{RLO}end")
}

struct Files {
    _dir: tempfile::TempDir,
    base: PathBuf,
    new: PathBuf,
}

fn write(path: &Path, seed: u64, label: &str) {
    let topo = wakeviz_core::topology::fixture::named_topology("xeon-e5-2690v3")
        .expect("fixture topology");
    let cfg = SynthConfig::new(20_000, seed);
    let mut s = synth::events(&topo, &cfg).expect("synth");
    let mut h = synth::header(&topo, &cfg, &s);
    h.hostname = evil("host");
    h.kernel_release = evil("kernel");
    h.cpu_vendor = Some(evil("vendor"));
    h.notes.push(evil("note"));
    h.run.label = Some(evil(label));
    h.run.command = Some(vec![evil("cmd"), evil("arg")]);
    h.run.cpu_model = Some(evil("model"));
    h.run.kernel_cmdline = Some(evil("cmdline"));
    h.run.sched_features = Some(vec![evil("FEATURE")]);
    h.run.sysctls = vec![(evil("kernel.sysctl"), evil("value"))];
    h.probes[0].fallbacks.push(evil("reason"));
    let f = std::fs::File::create(path).expect("create");
    let mut rec =
        Recorder::new(std::io::BufWriter::new(f), &h, RecorderConfig::default()).expect("recorder");
    for t in s.tasks().to_vec() {
        rec.learn_task(t);
    }
    let mut stats = CaptureStats::default();
    for e in s.by_ref() {
        stats.offered[e.kind()] += 1;
        stats.delivered += 1;
        rec.push(&e).expect("push");
    }
    rec.finish(&stats).expect("finish");
}

fn files() -> &'static Files {
    static F: OnceLock<Files> = OnceLock::new();
    F.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path().join("base.wvz");
        let new = dir.path().join("new.wvz");
        write(&base, 1, "base");
        write(&new, 2, "new");
        Files {
            base,
            new,
            _dir: dir,
        }
    })
}

fn wakeviz(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wakeviz"))
        .args(args)
        .output()
        .expect("run wakeviz")
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

/// No raw sequence in `out`, and the escaped form is there (the text is shown, not dropped).
fn assert_safe(what: &str, out: &[u8], must_show: &[&str]) {
    let s = String::from_utf8_lossy(out);
    let raw: Vec<char> = s.chars().filter(|&c| raw_control(c)).collect();
    assert!(
        raw.is_empty(),
        "{what}: raw {raw:?} in\n{}",
        s.escape_debug()
    );
    assert!(
        s.contains("\\u001b[2J"),
        "{what}: CSI not shown escaped:\n{s}"
    );
    assert!(
        s.contains("\\u001b]52;c;aGFja2Vk\\u0007"),
        "{what}: OSC 52:\n{s}"
    );
    assert!(s.contains("\\u009b2J"), "{what}: C1 CSI:\n{s}");
    assert!(s.contains("\\u202eend"), "{what}: bidi override:\n{s}");
    for m in must_show {
        assert!(s.contains(m), "{what}: {m} missing:\n{s}");
    }
}

#[test]
fn report_text_escapes_every_metadata_field() {
    let f = files();
    let o = wakeviz(&["--replay", path(&f.base), "--report", "text"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_safe(
        "--report text",
        &o.stdout,
        &[
            "host", "kernel", "base", "cmd", "model", "cmdline", "FEATURE", "note",
        ],
    );
}

#[test]
fn report_json_stays_json_and_escaped() {
    let f = files();
    let o = wakeviz(&["--replay", path(&f.base), "--report", "json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(!s.chars().any(raw_control), "{}", s.escape_debug());
    let v: serde_json::Value = serde_json::from_str(&s).expect("valid JSON");
    // The same value as the recording holds: escaping is JSON's own.
    let mut found = false;
    walk(&v, &mut |x| found |= x == evil("host"));
    assert!(found, "the hostname decodes to what was recorded");
}

fn walk(v: &serde_json::Value, f: &mut dyn FnMut(&str)) {
    match v {
        serde_json::Value::String(s) => f(s),
        serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, f)),
        serde_json::Value::Object(o) => o.values().for_each(|x| walk(x, f)),
        _ => {}
    }
}

#[test]
fn diff_text_headers_and_verdicts_are_escaped() {
    let f = files();
    let (b, n) = (path(&f.base), path(&f.new));
    // A condition that holds whatever the runs: its verdict line names both groups.
    let o = wakeviz(&[
        "diff",
        "--no-shadow",
        "--base",
        b,
        "--new",
        n,
        "--fail-if",
        "placement.vs_waker.cross_package.share > -200pt",
    ]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_safe("diff text", &o.stdout, &["base", "new"]);
    assert_safe("fail-if verdict", &o.stderr, &["HOLDS"]);
    let o = wakeviz(&[
        "diff",
        "--no-shadow",
        "--report",
        "json",
        "--base",
        b,
        "--new",
        n,
    ]);
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(!s.chars().any(raw_control), "{}", s.escape_debug());
    serde_json::from_str::<serde_json::Value>(&s).expect("valid JSON");
}
