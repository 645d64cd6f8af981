//! The replay path end to end on synthetic recordings, pinned to committed golden files, so a
//! speed change in the reader, the decoder, the joiner or the shadow evaluator that alters any
//! figure fails here: a recording is written with the real `Recorder` (`synth::generate`),
//! replayed through `ReplaySource` into `Analysis` with every shadow policy, and the whole
//! `--report json` value is compared with `tests/fixtures/golden/`. Three inputs: the Zen3
//! NPS4 (256 CPUs) and the Xeon with select records, and the Zen3 NPS1 tracepoint-only (no
//! select records, so decisions happen at `sched_waking`). `WAKEVIZ_BLESS=1` rewrites the
//! goldens after an intended change of the figures (review the diff).
mod analysis_support;

use std::path::{Path, PathBuf};

use wakeviz_core::{
    event::Event,
    format::{ChunkPayload, ProbeState, Reader, Recorder, RecorderConfig},
    synth::{self, SynthConfig},
    topology::fixture,
};

fn golden_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/golden")
        .join(format!("{name}.json"))
}

/// Writes the synthetic run of `topo_name` to a file; `tracepoint_only` drops the select
/// records and marks their probe unavailable, as on a kernel that refuses fentry.
fn record(
    dir: &Path,
    topo_name: &str,
    events: u64,
    tracepoint_only: bool,
) -> (PathBuf, Vec<Event>) {
    let topo = fixture::named_topology(topo_name).expect("fixture topology");
    let cfg = SynthConfig::new(events, 3);
    let path = dir.join(format!("{topo_name}-{tracepoint_only}.wvz"));
    if !tracepoint_only {
        let f = std::fs::File::create(&path).expect("create");
        synth::generate(&topo, &cfg, std::io::BufWriter::new(f)).expect("generate");
        let evs: Vec<Event> = synth::events(&topo, &cfg).expect("synth").collect();
        return (path, evs);
    }
    let s = synth::events(&topo, &cfg).expect("synth");
    let mut hdr = synth::header(&topo, &cfg, &s);
    for p in &mut hdr.probes {
        if p.name == "select_task_rq_fair" {
            p.state = ProbeState::Unavailable("golden test: tracepoint-only".into());
        }
    }
    let tasks: Vec<_> = s.tasks().to_vec();
    let evs: Vec<Event> = s.filter(|e| !matches!(e, Event::Select(_))).collect();
    let f = std::fs::File::create(&path).expect("create");
    let rcfg = RecorderConfig {
        flush_interval: std::time::Duration::MAX,
        ..RecorderConfig::default()
    };
    let mut rec = Recorder::new(std::io::BufWriter::new(f), &hdr, rcfg).expect("recorder");
    for t in &tasks {
        rec.learn_task(*t);
    }
    for e in &evs {
        rec.push(e).expect("push");
    }
    let stats = wakeviz_core::format::CaptureStats {
        delivered: evs.len() as u64,
        ..Default::default()
    };
    let (mut w, _) = rec.finish(&stats).expect("finish");
    std::io::Write::flush(&mut w).expect("flush");
    (path, evs)
}

fn check(topo_name: &str, events: u64, tracepoint_only: bool) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, expected) = record(dir.path(), topo_name, events, tracepoint_only);
    // The decoder hands back exactly the events written, in order.
    let mut r = Reader::open(&path).expect("open");
    let mut decoded = Vec::with_capacity(expected.len());
    while let Some(c) = r.next_chunk() {
        if let ChunkPayload::Events(ev) = c.expect("chunk") {
            decoded.extend(ev);
        }
    }
    assert_eq!(decoded.len(), expected.len());
    assert!(decoded == expected, "{topo_name}: decoded events differ");

    let got =
        serde_json::to_string_pretty(&analysis_support::replay_report(&path)).expect("json") + "\n";
    let name = format!(
        "replay_{}{}",
        topo_name.replace('-', "_"),
        if tracepoint_only { "_tp" } else { "" }
    );
    let gp = golden_path(&name);
    if std::env::var_os("WAKEVIZ_BLESS").is_some() {
        std::fs::create_dir_all(gp.parent().expect("parent")).expect("mkdir");
        std::fs::write(&gp, &got).expect("write golden");
        return;
    }
    let want = std::fs::read_to_string(&gp)
        .unwrap_or_else(|e| panic!("{}: {e} (WAKEVIZ_BLESS=1 writes it)", gp.display()));
    if got != want {
        let p = dir.path().join(format!("{name}.json"));
        std::fs::write(&p, &got).expect("write");
        let line = got
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        let _ = dir.keep();
        panic!(
            "{name}: report differs from {} from line {} (new report kept at {})",
            gp.display(),
            line + 1,
            p.display()
        );
    }
}

#[test]
fn zen3_nps4_report_is_unchanged() {
    check("zen3-nps4", 300_000, false);
}

#[test]
fn xeon_report_is_unchanged() {
    check("xeon-e5-2690v3", 200_000, false);
}

#[test]
fn tracepoint_only_report_is_unchanged() {
    check("zen3-nps1", 200_000, true);
}
