//! Prediction against reality on synthetic recordings whose scheduler-feature setting is
//! stamped on the snapshots (the generator's kernel always runs SIS_UTIL): which pairs get a
//! table, that every figure is the data's own mean and its error splits exactly into the
//! open-loop and shadow-input parts, that the parts point at the right cause when the workload
//! or the model is what differs, and the identity (A predicted from A by A's own kernel-flavour
//! policy leaves only the fidelity gap).
mod analysis_support;

use analysis_support::topology;
use wakeviz_core::{
    analysis::{Analysis, Snapshot},
    compare::{
        self, Group,
        predict::{self, Cause, MeasuredSource, Prediction},
    },
    format::Reader,
    sched_feature::SchedFeature,
    shadow::PolicyRow,
    source::{EventSource, Poll, ReplaySource},
    synth::{self, SynthConfig},
    topology::{Level, Topology},
};

const EVENTS: u64 = 150_000;
const PHASE_NS: u64 = 4_000_000;
const DEFAULT: &[&str] = &[
    "PLACE_LAG",
    "WAKEUP_PREEMPTION",
    "TTWU_QUEUE",
    "SIS_UTIL",
    "WA_IDLE",
    "WA_WEIGHT",
    "WA_BIAS",
];

fn features(flip: &[(&str, &str)]) -> Vec<String> {
    DEFAULT
        .iter()
        .map(|f| {
            flip.iter()
                .find(|x| x.0 == *f)
                .map_or(f.to_string(), |x| x.1.to_string())
        })
        .collect()
}

/// The synthetic recording folded, with `feats` stamped on the snapshot after the fold (the
/// shadow replays it with the default kernel rules).
fn run(t: &Topology, cfg: &SynthConfig, feats: &[String]) -> Snapshot {
    let mut s = fold(t, cfg, None);
    s.recording.run.sched_features = Some(feats.to_vec());
    s
}

/// The synthetic recording folded; `header_feats` stamped on its header first, so that the
/// shadow's kernel rules follow them.
fn fold(t: &Topology, cfg: &SynthConfig, header_feats: Option<&[String]>) -> Snapshot {
    let mut buf = Vec::new();
    synth::generate(t, cfg, &mut buf).unwrap();
    let r = Reader::new(std::io::Cursor::new(buf), std::path::Path::new("synth.wvz")).unwrap();
    let mut src = ReplaySource::new(r);
    let mut header = src.header().clone();
    if let Some(f) = header_feats {
        header.run.sched_features = Some(f.to_vec());
    }
    let mut a = Analysis::new(&header);
    loop {
        match src.poll(std::time::Duration::ZERO).unwrap() {
            Poll::Batch(b) => a.on_batch(&b),
            Poll::Pending => {}
            Poll::End => break,
        }
    }
    a.snapshot()
}

fn cfg(seed: u64) -> SynthConfig {
    let mut c = SynthConfig::new(EVENTS, seed);
    c.phase_ns = PHASE_NS;
    c
}

fn group(
    name: &str,
    t: &Topology,
    seeds: &[u64],
    feats: &[String],
    f: fn(&mut SynthConfig),
) -> Group {
    group_by(name, t, seeds, feats, f, run)
}

/// [`group`], each run folded by `fold_run` ([`run`] or [`run_stamped`]).
fn group_by(
    name: &str,
    t: &Topology,
    seeds: &[u64],
    feats: &[String],
    f: fn(&mut SynthConfig),
    fold_run: fn(&Topology, &SynthConfig, &[String]) -> Snapshot,
) -> Group {
    Group {
        name: name.into(),
        files: seeds.iter().map(|s| format!("seed{s}")).collect(),
        runs: seeds
            .iter()
            .map(|&s| {
                let mut c = cfg(s);
                f(&mut c);
                fold_run(t, &c, feats)
            })
            .collect(),
    }
}

/// LLCs mostly busy, one long busy phase: the scan limits matter.
fn busy(c: &mut SynthConfig) {
    c.pipe_pairs = Some(30);
    c.fanout_groups = Some(6);
    c.phase_ns = 1_000_000_000;
}

fn pol<'a>(s: &'a Snapshot, name: &str) -> &'a PolicyRow {
    let r = s.shadow.as_ref().unwrap();
    r.policies.iter().find(|p| p.name == name).unwrap()
}

fn share(r: &PolicyRow, l: Level) -> f64 {
    let c = &r.placement.vs_waker;
    c.get(l) as f64 * 100.0 / c.total() as f64
}

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = v.collect();
    v.iter().sum::<f64>() / v.len() as f64
}

fn fig<'a>(p: &'a Prediction, name: &str) -> &'a predict::PredictedFigure {
    p.figures.iter().find(|f| f.name == name).unwrap()
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-9)
}

#[test]
fn a_flipped_sis_util_gives_both_predictions_with_exact_parts() {
    let t = topology("xeon-e5-2690v3");
    let base = group("default", &t, &[1, 2, 3], &features(&[]), busy);
    let nosis = group(
        "nosis",
        &t,
        &[4, 5, 6],
        &features(&[("SIS_UTIL", "NO_SIS_UTIL")]),
        busy,
    );
    let rep = compare::diff(&[base.clone(), nosis.clone()], &[]);
    let text = compare::text::render(&rep);
    println!("{text}");
    assert_eq!(rep.predictions.len(), 2, "{:?}", rep.notes);
    let (fwd, back) = (&rep.predictions[0], &rep.predictions[1]);
    // Group order: the one predicting group 0 (default) comes with group 0 as the target.
    assert_eq!(
        (back.baseline.as_str(), back.target.as_str()),
        ("default", "nosis")
    );
    assert_eq!(back.policy, "full_scan");
    assert_eq!(back.target_setting, ["NO_SIS_UTIL"]);
    assert_eq!(back.baseline_setting, ["SIS_UTIL"]);
    assert_eq!(
        (fwd.baseline.as_str(), fwd.target.as_str()),
        ("nosis", "default")
    );
    assert_eq!(fwd.policy, "sis_util");

    // Every figure is the data's own mean, and the error its two parts' sum.
    let p = back;
    let f = fig(p, "vs_waker.same_llc.share");
    let pred = mean(
        base.runs
            .iter()
            .map(|s| share(pol(s, "full_scan"), Level::SameLlc)),
    );
    let meas = mean(
        nosis
            .runs
            .iter()
            .map(|s| share(pol(s, "observed"), Level::SameLlc)),
    );
    assert!(close(f.predicted, pred) && close(f.measured, meas), "{f:?}");
    for f in &p.figures {
        if let (Some(e), Some(o), Some(i)) = (f.error, f.open_loop, f.shadow_inputs) {
            assert!((e - (o + i)).abs() < 1e-9, "{f:?}");
        }
    }
    // Probes per wakeup: not observable, the model on B stands in (all open loop).
    let pr = fig(p, "probes_mean");
    assert_eq!(pr.measured_source, MeasuredSource::ProxyModelOnTarget);
    assert!(
        close(pr.shadow_inputs, 0.0) && pr.error == pr.open_loop,
        "{pr:?}"
    );
    assert!(matches!(
        fig(p, "scan.p99_ns").measured_source,
        MeasuredSource::ScanLatency(_)
    ));
    // Without the debug-info scan probes, the select_idle_cpu rows are proxies too.
    let sc = fig(p, "scan.tests_per_wakeup");
    assert_eq!(sc.measured_source, MeasuredSource::ProxyModelOnTarget);
    assert!(sc.measured.is_some_and(|m| m > 0.0), "{sc:?}");

    // sis_util predicting the default runs from the "NO_SIS_UTIL" ones: the same kernel and
    // workload on both sides, so the level shares are predicted within a few points.
    let topo = &base.runs[0].topology;
    for l in Level::ALL {
        let f = fig(fwd, &format!("vs_waker.{}.share", l.name()));
        if topo.level_exists(l) {
            assert!(f.error.is_some_and(|e| e.abs() < 3.0), "{f:?}");
        } else {
            assert!(
                f.predicted.is_none() && f.measured.is_none(),
                "n/a, never 0: {f:?}"
            );
        }
    }
    assert!(fwd.evidence.target_fidelity_policy == "sis_util");

    // JSON: the predictions key.
    let v = serde_json::to_value(&rep).unwrap();
    assert_eq!(v["schema_version"], 4);
    assert_eq!(v["predictions"][1]["policy"], "full_scan");
    assert_eq!(
        v["predictions"][1]["figures"][0]["name"],
        "vs_waker.same_cpu.share"
    );
    assert!(v["predictions"][1]["figures"][0]["error"].is_number());
    assert!(text.contains(
        "Prediction vs measurement: full_scan on default (3 runs) predicts nosis (3 runs)"
    ));
    assert!(
        text.lines()
            .all(|l| l.chars().count() <= compare::text::WIDTH),
        "{text}"
    );

    let mut snap = String::new();
    for p in &rep.predictions {
        predict::text::render(&mut snap, p);
    }
    predict::text::legend(&mut snap, &rep.predictions);
    insta::assert_snapshot!("predict_sis_util_flip", snap);
}

#[test]
fn a_model_that_misses_the_target_kernel_is_a_shadow_input_error() {
    let t = topology("xeon-e5-2690v3");
    // Stamped SIS_PROP, but the generator's kernel ran SIS_UTIL: sis_prop (the model of that
    // stamp) scans less than that kernel did, on any events, so it finds fewer idle CPUs on
    // the target's own recordings too.
    let base = group("default", &t, &[41, 42, 43], &features(&[]), busy);
    let mut feats = features(&[("SIS_UTIL", "NO_SIS_UTIL")]);
    feats.push("SIS_PROP".into());
    let prop = group("prop", &t, &[44, 45, 46], &feats, busy);
    let rep = compare::diff(&[base, prop.clone()], &[]);
    let p = rep
        .predictions
        .iter()
        .find(|p| p.policy == "sis_prop")
        .expect("sis_prop predicts the SIS_PROP runs");
    assert_eq!(p.target_setting, ["SIS_PROP", "NO_SIS_UTIL"]);
    let idle = fig(p, "idle.share");
    let on_b = mean(
        prop.runs
            .iter()
            .map(|s| pol(s, "sis_prop").idle_pct.unwrap()),
    );
    let obs = mean(
        prop.runs
            .iter()
            .map(|s| pol(s, "observed").idle_pct.unwrap()),
    );
    assert!(close(idle.shadow_inputs, on_b - obs), "{idle:?}");
    assert!(
        on_b - obs < -0.5,
        "SIS_PROP's budget finds fewer idle CPUs: {on_b} vs {obs}"
    );
    assert_eq!(idle.cause, Some(Cause::ShadowInputs), "{idle:?}");
    // sis_prop is not the fidelity policy of a 6.x recording: no buckets are borrowed.
    assert_eq!(p.evidence.target_fidelity_policy, "sis_util");
    assert!(p.evidence.target_fidelity_buckets.is_empty());
}

#[test]
fn a_workload_that_changes_with_the_setting_is_an_open_loop_error() {
    let t = topology("xeon-e5-2690v3");
    // The "NO_SIS_UTIL" runs carry a heavier workload (twice the pipe pairs): sis_util, the
    // model of the default setting, replayed on them meets a busier machine than the default
    // runs had; on the default runs' own events it reproduces their kernel.
    let heavy = group(
        "nosis",
        &t,
        &[11, 12, 13],
        &features(&[("SIS_UTIL", "NO_SIS_UTIL")]),
        |c| c.pipe_pairs = Some(24),
    );
    let light = group("default", &t, &[14, 15, 16], &features(&[]), |c| {
        c.pipe_pairs = Some(2);
    });
    let rep = compare::diff(&[heavy.clone(), light.clone()], &[]);
    let p = rep
        .predictions
        .iter()
        .find(|p| p.policy == "sis_util")
        .expect("sis_util predicts the default runs");
    assert_eq!(p.target, "default");
    let idle = fig(p, "idle.share");
    println!("{idle:?}\n{:?}", p.evidence);
    let (o, i) = (idle.open_loop.unwrap(), idle.shadow_inputs.unwrap());
    assert!(o.abs() > i.abs() && o.abs() > 1.0, "{idle:?}");
    assert_eq!(idle.cause, Some(Cause::OpenLoop));
    // The evidence shows the workload's difference.
    let [a, b] = p.evidence.wakeup_rate;
    assert!(a.unwrap() > b.unwrap(), "{:?}", p.evidence);
}

#[test]
fn predicting_a_group_from_itself_leaves_only_the_fidelity_gap() {
    let t = topology("xeon-e5-2690v3");
    let a = group("default", &t, &[21, 22], &features(&[]), |_| {});
    let kernel = a.runs[0].shadow.as_ref().unwrap().fidelity.policy;
    assert_eq!(kernel, "sis_util");
    let p = predict::predict_pair(&a, &a, kernel).unwrap();
    // The mean disagreement with the kernel bounds every share's error: a disagreement moves
    // one wakeup from one level (or idle state) to another, nothing else.
    let miss = mean(a.runs.iter().map(|s| {
        let f = &s.shadow.as_ref().unwrap().fidelity;
        (1.0 - f.agreement.unwrap()) * 100.0
    }));
    assert!(miss < 5.0, "fidelity on synth: {miss:.2} % missed");
    let mut checked = 0;
    for f in &p.figures {
        assert!(close(f.open_loop, 0.0) || f.open_loop.is_none(), "{f:?}");
        assert_eq!(f.error, f.shadow_inputs, "{f:?}");
        if f.unit == compare::Unit::Share && f.name.starts_with("vs_") {
            match f.error {
                Some(e) => assert!(e.abs() <= miss + 1e-9, "{f:?} vs {miss}"),
                // A level this topology cannot have: n/a on both sides, never 0.
                None => assert!(f.predicted.is_none() && f.measured.is_none(), "{f:?}"),
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 2 * Level::ALL.len());
    assert!(
        p.figures.iter().any(|f| f.error.is_some_and(|e| e != 0.0)),
        "the shadow is not the kernel: some gap remains"
    );
}

#[test]
fn no_table_without_a_modelled_feature_difference() {
    let t = topology("xeon-e5-2690v3");
    let same_a = group("a", &t, &[31, 32], &features(&[]), |_| {});
    let same_b = group("b", &t, &[33, 34], &features(&[]), |_| {});
    let rep = compare::diff(&[same_a.clone(), same_b.clone()], &[]);
    assert!(rep.predictions.is_empty());
    assert!(
        !rep.notes.iter().any(|n| n.contains("prediction")),
        "{:?}",
        rep.notes
    );
    assert!(!compare::text::render(&rep).contains("Prediction vs measurement"));

    // A feature no policy looks at: still nothing.
    let mut tq = same_b.clone();
    for s in &mut tq.runs {
        s.recording.run.sched_features = Some(features(&[("TTWU_QUEUE", "NO_TTWU_QUEUE")]));
    }
    let rep = compare::diff(&[same_a.clone(), tq], &[]);
    assert!(rep.predictions.is_empty());

    // A feature the policies take from the recording they replay and no model flips: no
    // table, a note for each direction.
    let mut nobias = same_b.clone();
    for s in &mut nobias.runs {
        s.recording.run.sched_features = Some(features(&[("WA_BIAS", "NO_WA_BIAS")]));
    }
    let rep = compare::diff(&[same_a.clone(), nobias], &[]);
    assert!(rep.predictions.is_empty(), "{:?}", rep.predictions);
    for (a, b, sa, sb) in [
        ("a", "b", "WA_BIAS", "NO_WA_BIAS"),
        ("b", "a", "NO_WA_BIAS", "WA_BIAS"),
    ] {
        let want = format!(
            "prediction {a} -> {b}: the shadow replays each recording with its own WA_BIAS ({a}: {sa}; {b}: {sb})"
        );
        assert!(
            rep.notes.iter().any(|n| n.starts_with(&want)),
            "{want}\n{:?}",
            rep.notes
        );
    }
    // WA_IDLE flipped with SIS_UTIL: the flipping policy is a SIS_UTIL kernel, so only the
    // direction whose target runs SIS_UTIL is predicted; the other gets the note.
    let mut nowa = same_b.clone();
    for s in &mut nowa.runs {
        s.recording.run.sched_features = Some(features(&[
            ("WA_IDLE", "NO_WA_IDLE"),
            ("SIS_UTIL", "NO_SIS_UTIL"),
        ]));
    }
    let rep = compare::diff(&[same_a.clone(), nowa.clone()], &[]);
    let got: Vec<_> = rep
        .predictions
        .iter()
        .map(|p| (p.baseline.as_str(), p.target.as_str(), p.policy.as_str()))
        .collect();
    assert_eq!(got, [("b", "a", "flip_wa_idle")], "{:?}", rep.notes);
    assert!(
        rep.notes.iter().any(|n| n.starts_with(
            "prediction a -> b: the shadow replays each recording with its own WA_IDLE"
        )),
        "{:?}",
        rep.notes
    );

    // --only without the shadow section: no prediction either.
    let rep = compare::diff(&[same_a.clone(), nowa], &[compare::Section::Placement]);
    assert!(rep.predictions.is_empty());

    // Unknown features: no table, and a note naming the group.
    let mut unknown = same_b;
    for s in &mut unknown.runs {
        s.recording.run.sched_features = None;
    }
    let rep = compare::diff(&[same_a, unknown], &[]);
    assert!(rep.predictions.is_empty());
    assert!(
        rep.notes
            .iter()
            .any(|n| n.contains("group b has no single recorded")),
        "{:?}",
        rep.notes
    );
}

#[test]
fn models_are_exclusive_and_cover_the_documented_pairs() {
    let set = |f: &[&str]| -> predict::Setting {
        f.iter()
            .map(|x| match x.strip_prefix("NO_") {
                Some(n) => (n.to_string(), false),
                None => (x.to_string(), true),
            })
            .collect()
    };
    let m = |f: &[&str]| predict::model_for(&set(f), &[]).map(|m| m.policy);
    assert_eq!(m(&["SIS_UTIL", "WA_IDLE"]), Some("sis_util"));
    assert_eq!(m(&["NO_SIS_UTIL", "WA_IDLE"]), Some("full_scan"));
    assert_eq!(m(&["NO_SIS_UTIL", "NO_SIS_PROP"]), Some("full_scan"));
    assert_eq!(m(&["SIS_PROP"]), Some("sis_prop"));
    assert_eq!(m(&["NO_SIS_PROP"]), Some("full_scan"));
    assert_eq!(m(&["SIS_UTIL", "SIS_NODE"]), Some("sis_node"));
    assert_eq!(
        m(&["SIS_UTIL", "SIS_PROP"]),
        None,
        "both limits at once: no model"
    );
    // The scan models keep the recording's WA_IDLE: the pair differs in the scan only.
    assert_eq!(m(&["SIS_UTIL", "NO_WA_IDLE"]), Some("sis_util"));
    assert_eq!(m(&[]), None);
    // A flip of a feature every policy keeps from its recording: only the flipping policy,
    // only on SIS_UTIL kernels, and none for WA_BIAS or for two such features at once.
    let flip = |f: &[&str], x: &[SchedFeature]| predict::model_for(&set(f), x).map(|m| m.policy);
    for on in [&["SIS_UTIL", "WA_IDLE"][..], &["SIS_UTIL", "NO_WA_IDLE"]] {
        assert_eq!(flip(on, &[SchedFeature::WaIdle]), Some("flip_wa_idle"));
        assert_eq!(flip(on, &[SchedFeature::WaWeight]), Some("flip_wa_weight"));
    }
    assert_eq!(
        flip(&["NO_SIS_UTIL", "WA_IDLE"], &[SchedFeature::WaIdle]),
        None
    );
    assert_eq!(
        flip(&["SIS_UTIL", "WA_BIAS"], &[SchedFeature::WaBias]),
        None
    );
    assert_eq!(
        flip(
            &["SIS_UTIL"],
            &[SchedFeature::WaIdle, SchedFeature::WaWeight]
        ),
        None
    );
    for f in [
        &["SIS_UTIL"][..],
        &["NO_SIS_UTIL"],
        &["SIS_PROP"],
        &["SIS_UTIL", "SIS_NODE"],
    ] {
        let s = set(f);
        let n = predict::MODELS
            .iter()
            .filter(|m| m.flips.is_empty())
            .filter(|m| {
                m.when.iter().all(|&(x, w)| {
                    let st = match s.get(x.name()) {
                        Some(true) => predict::State::On,
                        Some(false) => predict::State::Off,
                        None => predict::State::Absent,
                    };
                    w.holds(st)
                })
            })
            .count();
        assert_eq!(n, 1, "{f:?}");
    }
}

/// Writes 3 + 3 synthetic recordings stamped with the default features and with
/// `NO_SIS_UTIL`, for trying `wakeviz diff` (the example in docs/user/comparing.md):
/// `WAKEVIZ_PREDICT_DIR=DIR cargo test --release -p wakeviz-core --test compare_predict -- --ignored`.
#[test]
#[ignore]
fn write_recordings_for_the_readme() {
    use wakeviz_core::format::{CaptureStats, Recorder, RecorderConfig};
    let Some(dir) = std::env::var_os("WAKEVIZ_PREDICT_DIR") else {
        println!("WAKEVIZ_PREDICT_DIR not set: nothing written");
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    std::fs::create_dir_all(&dir).unwrap();
    let t = topology("xeon-e5-2690v3");
    let sets = [
        ("default", features(&[])),
        ("nosis", features(&[("SIS_UTIL", "NO_SIS_UTIL")])),
    ];
    for (k, (label, feats)) in sets.iter().enumerate() {
        for i in 1..=3u64 {
            let mut c = cfg(10 * k as u64 + i);
            busy(&mut c);
            let mut s = synth::events(&t, &c).unwrap();
            let mut hdr = synth::header(&t, &c, &s);
            hdr.run.label = Some((*label).into());
            hdr.run.sched_features = Some(feats.clone());
            let path = dir.join(format!("{label}-{i}.wvz"));
            let f = std::fs::File::create(&path).unwrap();
            let mut rec = Recorder::new(f, &hdr, RecorderConfig::default()).unwrap();
            for task in s.tasks() {
                rec.learn_task(*task);
            }
            let mut stats = CaptureStats::default();
            for e in s.by_ref() {
                stats.offered[e.kind()] += 1;
                stats.delivered += 1;
                rec.push(&e).unwrap();
            }
            rec.finish(&stats).unwrap();
            println!("wrote {}", path.display());
        }
    }
}

/// Every model names a policy the shadow evaluation runs: a model whose policy is not in the
/// registry would drop its prediction without a word.
#[test]
fn every_model_names_a_registered_policy() {
    let s = run(&topology("zen3-nps1"), &cfg(3), &features(&[]));
    let rows = &s
        .shadow
        .as_ref()
        .expect("the shadow is on by default")
        .policies;
    for m in predict::MODELS {
        assert!(
            rows.iter().any(|r| r.name == m.policy),
            "model {:?} names no registered policy",
            m.policy
        );
    }
}

/// With the debug-info scan probes (a guest recording), the select_idle_cpu rows are measured:
/// the observed row holds the kernel's scans as counted, on the decisions the model is scored
/// on, and the model's own scan stands beside it.
#[test]
fn measured_scan_rows_come_from_the_scan_probes() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/recordings/vm-nps1-scan-probes.wvz");
    let s = analysis_support::replay_snapshot(&path);
    let sh = s.shadow.as_ref().unwrap();
    let (obs, model) = (pol(&s, "observed"), pol(&s, sh.model));
    let sm = sh.scan_model.as_ref().expect("scan model comparison");
    // The probes watched nearly every evaluated decision (not those placed before the kprobes
    // were on, where the model's scan stands in): the observed scans are the probes' count
    // plus at most those.
    let unwatched = obs.evaluated - sm.decisions;
    assert!(
        sm.decisions > 900 && unwatched < 20,
        "{sm:?} {}",
        obs.evaluated
    );
    let count =
        |r: &PolicyRow| (r.scan.scans_pct.unwrap() * r.evaluated as f64 / 100.0).round() as u64;
    let kernel = sm.both_scanned + sm.kernel_only;
    assert!(
        (kernel..=kernel + unwatched).contains(&count(obs)),
        "{:?}",
        obs.scan
    );
    let modelled = sm.both_scanned + sm.model_only;
    assert!(
        (modelled..=modelled + unwatched).contains(&count(model)),
        "{:?}",
        model.scan
    );
    assert!(kernel > 100, "{sm:?}");

    let g = Group {
        name: "guest".into(),
        files: vec!["vm-nps1-scan-probes.wvz".into()],
        runs: vec![s.clone()],
    };
    let p = predict::predict_pair(&g, &g, sh.model).unwrap();
    for name in [
        "scan.scans.share",
        "scan.cpus_per_scan",
        "scan.tests_per_wakeup",
    ] {
        let f = fig(&p, name);
        assert_eq!(f.measured_source, MeasuredSource::ScanProbes, "{f:?}");
    }
    let f = fig(&p, "scan.scans.share");
    assert!(close(f.measured, obs.scan.scans_pct.unwrap()), "{f:?}");
    assert!(close(f.predicted, model.scan.scans_pct.unwrap()), "{f:?}");
    // The identity: no open loop, the whole error is the model's on the same decisions.
    assert!(close(f.open_loop, 0.0), "{f:?}");
    let mut text = String::new();
    predict::text::render(&mut text, &p);
    assert!(
        text.contains("measured by the debug-info scan probes"),
        "{text}"
    );
}

/// The closed-loop rows take the kernel-observable figures of the simulations the caller
/// hands back, with the baseline row (the simulated choices) as the value: handed the target's
/// own runs, the closed loop equals the measurement (error 0), and only on observed figures.
#[test]
fn closed_loop_rows_read_the_simulations_the_caller_returns() {
    let t = topology("xeon-e5-2690v3");
    let base = group("default", &t, &[1, 2], &features(&[]), busy);
    let nosis = group(
        "nosis",
        &t,
        &[4, 5],
        &features(&[("SIS_UTIL", "NO_SIS_UTIL")]),
        busy,
    );
    let groups = [base, nosis];
    let asked = std::cell::RefCell::new(Vec::new());
    let rep = compare::diff_with(&groups, &[], &|g: &Group, policy: &str| {
        asked.borrow_mut().push((g.name.clone(), policy.to_owned()));
        let other = groups.iter().find(|x| x.name != g.name).unwrap();
        other.runs.clone()
    });
    let mut asked = asked.into_inner();
    asked.sort();
    assert_eq!(
        asked,
        [
            ("default".to_owned(), "full_scan".to_owned()),
            ("nosis".to_owned(), "sis_util".to_owned())
        ]
    );
    for p in &rep.predictions {
        for f in &p.figures {
            if f.measured_source == predict::MeasuredSource::Observed {
                assert_eq!(f.closed_loop, f.measured, "{}: {f:?}", f.name);
                if f.measured.is_some() {
                    assert!(close(f.closed_loop_error, 0.0), "{f:?}");
                }
            } else {
                assert_eq!(f.closed_loop, None, "{}: only observed figures", f.name);
            }
        }
    }
    let mut text = String::new();
    for p in &rep.predictions {
        predict::text::render(&mut text, p);
    }
    assert!(text.contains("closed loop (default's workloads simulated under full_scan"));
}

/// `run`, with the features stamped on the recording's header before the analysis reads it.
fn run_stamped(t: &Topology, cfg: &SynthConfig, feats: &[String]) -> Snapshot {
    fold(t, cfg, Some(feats))
}

/// A flipping policy is the kernel model under the other setting: on one stream,
/// `flip_wa_idle` replayed under `NO_WA_IDLE` decides as `sis_util` does under `WA_IDLE`, and
/// the reverse. (The generator's select records carry no loads, so `WA_WEIGHT` decides
/// nothing here: `tests/shadow.rs` checks its flip wakeup by wakeup.) Not to the last
/// decision: the kernel model's own
/// choices clear the emulated idle-core hint, so the two replays' states part slightly. The
/// flip itself must move the figures far more than that, or the check proves nothing.
#[test]
fn a_flipping_policy_is_the_kernel_model_under_the_other_setting() {
    let t = topology("xeon-e5-2690v3");
    let mut c = cfg(41);
    busy(&mut c);
    let on = run_stamped(&t, &c, &features(&[]));
    // Largest gap between two rows, in points of the decisions: agreement, and the share of
    // each placement level against waker and prev.
    let gap = |a: &PolicyRow, b: &PolicyRow| -> f64 {
        assert_eq!(a.evaluated, b.evaluated);
        let n = a.evaluated as f64;
        let mut g = (a.agreement.unwrap() - b.agreement.unwrap()).abs() * 100.0;
        for (x, y) in [
            (&a.placement.vs_waker, &b.placement.vs_waker),
            (&a.placement.vs_prev, &b.placement.vs_prev),
        ] {
            for l in Level::ALL {
                g = g.max((x.get(l) as f64 - y.get(l) as f64).abs() * 100.0 / n);
            }
        }
        g
    };
    {
        let (feature, off, policy) = ("WA_IDLE", "NO_WA_IDLE", "flip_wa_idle");
        let offs = run_stamped(&t, &c, &features(&[(feature, off)]));
        let flip = gap(pol(&on, "sis_util"), pol(&offs, "sis_util"));
        for (x, y) in [(&on, &offs), (&offs, &on)] {
            assert!(pol(x, policy).evaluated > 10_000);
            let g = gap(pol(x, policy), pol(y, "sis_util"));
            println!(
                "{feature}: the flip moves {flip:.3} pt, {policy} is {g:.3} pt from the model"
            );
            assert!(
                g < 0.05 && flip > 20.0 * g,
                "{policy}: {g:.3} pt from sis_util with {feature} flipped; the flip moves {flip:.3} pt"
            );
        }
    }
}

/// Groups that differ in `WA_IDLE` alone, each replayed under its own setting: both
/// directions are predicted by the policy that flips it, from the other group's runs.
#[test]
fn a_flipped_wa_idle_is_predicted_both_ways_by_the_flipping_policy() {
    let t = topology("xeon-e5-2690v3");
    let g = |name: &str, seeds: &[u64], feats: Vec<String>| {
        group_by(name, &t, seeds, &feats, busy, run_stamped)
    };
    let on = g("default", &[51, 52], features(&[]));
    let off = g("nowa", &[53, 54], features(&[("WA_IDLE", "NO_WA_IDLE")]));
    let rep = compare::diff(&[on.clone(), off.clone()], &[]);
    println!("{}", compare::text::render(&rep));
    let got: Vec<_> = rep
        .predictions
        .iter()
        .map(|p| {
            (
                p.baseline.as_str(),
                p.target.as_str(),
                p.policy.as_str(),
                p.baseline_setting.clone(),
                p.target_setting.clone(),
            )
        })
        .collect();
    let v = |s: &str| vec![s.to_string()];
    assert_eq!(
        got,
        [
            (
                "nowa",
                "default",
                "flip_wa_idle",
                v("NO_WA_IDLE"),
                v("WA_IDLE")
            ),
            (
                "default",
                "nowa",
                "flip_wa_idle",
                v("WA_IDLE"),
                v("NO_WA_IDLE")
            ),
        ],
        "{:?}",
        rep.notes
    );
    // The prediction of the NO_WA_IDLE runs is the flipping policy's mean on the default runs.
    let f = fig(&rep.predictions[1], "vs_waker.same_cpu.share");
    let pred = mean(
        on.runs
            .iter()
            .map(|s| share(pol(s, "flip_wa_idle"), Level::SameCpu)),
    );
    let meas = mean(
        off.runs
            .iter()
            .map(|s| share(pol(s, "observed"), Level::SameCpu)),
    );
    assert!(close(f.predicted, pred) && close(f.measured, meas), "{f:?}");
    // The error splits against the kernel model on the target's own runs, under its own
    // setting: sis_util, not the flip (which on those runs would model the other setting).
    assert!(
        rep.predictions
            .iter()
            .all(|p| p.target_policy == "sis_util")
    );
    let model_on_b = mean(
        off.runs
            .iter()
            .map(|s| share(pol(s, "sis_util"), Level::SameCpu)),
    );
    assert!(close(f.shadow_inputs, model_on_b - meas), "{f:?}");
    assert!(close(f.open_loop, pred - model_on_b), "{f:?}");
}
