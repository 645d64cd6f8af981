//! The figure registry: every figure a snapshot carries is defined once, n/a is never 0 in any
//! output, and a figure added in one place reaches every output.
use wakeviz_core::{
    analysis::{Analysis, Snapshot, report},
    compare::{self, Group, gate},
    figures::{self, Family, NotAvailable, testing::TestFamily},
    source::Batch,
    synth::{self, SynthConfig},
    topology::{
        Level,
        fixture::{Symmetric, SysfsSpec},
        from_sysfs,
    },
};

fn layout(packages: u32, threads: u32, nodes: u32, cores_per_llc: u32) -> Symmetric {
    Symmetric {
        packages,
        cores_per_package: 8,
        threads_per_core: threads,
        cores_per_llc,
        nodes_per_package: nodes,
        local: 10,
        same_package: 12,
        remote: 32,
    }
}

/// Every level occurs.
fn full() -> Symmetric {
    layout(2, 2, 2, 2)
}

/// No SMT, one package of one node: smt_sibling, same_package and cross_package cannot occur.
fn small() -> Symmetric {
    layout(1, 1, 1, 4)
}

fn snapshot_of(spec: Symmetric, events: u64, seed: u64) -> Snapshot {
    let dir = tempfile::tempdir().expect("tempdir");
    SysfsSpec::symmetric(spec).write(dir.path()).expect("sysfs");
    let topo = from_sysfs(dir.path()).expect("topology");
    let cfg = SynthConfig::new(events, seed);
    let s = synth::events(&topo, &cfg).expect("synth");
    let mut a = Analysis::new(&synth::header(&topo, &cfg, &s));
    a.on_batch(&Batch {
        tasks: s.tasks().to_vec(),
        ..Default::default()
    });
    for e in s {
        a.on_event(&e);
    }
    a.snapshot()
}

#[test]
fn every_figure_has_one_definition() {
    for spec in [full(), small()] {
        let s = snapshot_of(spec, 20_000, 3);
        assert!(s.figures.0.len() > 100, "{} figures", s.figures.0.len());
        let mut names = std::collections::HashSet::new();
        for f in &s.figures.0 {
            assert!(names.insert(f.name.clone()), "{} twice", f.name);
            let d = figures::lookup(&f.name).unwrap_or_else(|| panic!("{} not registered", f.name));
            assert!(
                std::ptr::eq(d, f.def),
                "{} resolves to {}, made by {}",
                f.name,
                d.name,
                f.def.name
            );
            assert_eq!(f.unit, d.unit.unit(), "{}", f.name);
            assert_eq!(
                f.value.is_none(),
                f.na.is_some(),
                "{}: a value or a reason",
                f.name
            );
        }
    }
}

/// Which levels cannot occur in `s`'s topology, by name.
fn absent(s: &Snapshot) -> Vec<&'static str> {
    Level::ALL
        .iter()
        .filter(|l| !s.topology.level_exists(**l))
        .map(|l| l.name())
        .collect()
}

fn has_level(name: &str, levels: &[&str]) -> bool {
    name.split('.').any(|c| levels.contains(&c))
}

#[test]
fn a_level_the_topology_cannot_have_is_na_in_every_output() {
    let (a, b) = (
        snapshot_of(small(), 20_000, 3),
        snapshot_of(small(), 20_000, 4),
    );
    let gone = absent(&a);
    assert_eq!(gone, ["smt_sibling", "same_package", "cross_package"]);
    let level_figures: Vec<&figures::Figure> = a
        .figures
        .0
        .iter()
        .filter(|f| has_level(&f.name, &gone))
        .collect();
    assert!(level_figures.len() > 30);
    for f in &level_figures {
        // A latency at an impossible level has no samples either way; everything else says why.
        assert_eq!(f.value, None, "{}", f.name);
        if !f.name.starts_with("wakeup_latency") {
            assert_eq!(f.na, Some(NotAvailable::NotOnTopology), "{}", f.name);
        }
    }
    // The JSON: the figures are null, and so is every level-keyed value of those levels.
    let j = report::json(&a);
    for f in &level_figures {
        assert!(j["figures"][&f.name]["value"].is_null(), "{}", f.name);
    }
    for l in &gone {
        assert!(j["placement"]["wakeups"]["vs_waker"][l].is_null(), "{l}");
    }
    // The text report's figure list.
    let text = report::text(&a);
    for f in &level_figures {
        let line = text
            .lines()
            .find(|x| x.split_whitespace().next() == Some(f.name.as_str()))
            .unwrap_or_else(|| panic!("{} not in the text report", f.name));
        assert!(line.contains("n/a"), "{line}");
    }
    // The diff: text and JSON rows have no value, and a gate on them cannot pass silently.
    let groups = [
        Group {
            name: "a".into(),
            files: vec![],
            runs: vec![a.clone()],
        },
        Group {
            name: "b".into(),
            files: vec![],
            runs: vec![b],
        },
    ];
    let rep = compare::diff(&groups, &[]);
    for f in &level_figures {
        if let Some(r) = rep.row(&f.name) {
            assert!(r.groups.iter().all(|c| c.mean.is_none()), "{}", f.name);
        }
    }
    let dj = serde_json::to_value(&rep).expect("json");
    for r in dj["rows"].as_array().expect("rows") {
        let name = r["name"].as_str().expect("name");
        if has_level(name, &gone) {
            for c in r["groups"].as_array().expect("groups") {
                assert!(c["mean"].is_null(), "{name}: {c}");
            }
        }
    }
    let dt = compare::text::render(&rep);
    for line in dt.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.len() > 1 && gone.contains(&words[words.len().saturating_sub(1)]) {
            panic!("an absent level printed with a value: {line}");
        }
    }
    // The prediction table: the same two runs stamped with the default features and with
    // NO_SIS_UTIL, so sis_util's model predicts the second from the first.
    let feats = |x: &str| {
        [
            "PLACE_LAG",
            "TTWU_QUEUE",
            x,
            "WA_IDLE",
            "WA_WEIGHT",
            "WA_BIAS",
        ]
        .map(String::from)
        .to_vec()
    };
    let mut stamped = groups.clone();
    stamped[0].runs[0].recording.run.sched_features = Some(feats("SIS_UTIL"));
    stamped[1].runs[0].recording.run.sched_features = Some(feats("NO_SIS_UTIL"));
    let prep = compare::diff(&stamped, &[]);
    assert!(
        !prep.predictions.is_empty(),
        "a modelled flip gives a table"
    );
    let mut predicted_levels = 0;
    for p in &prep.predictions {
        for f in p.figures.iter().filter(|f| has_level(&f.name, &gone)) {
            predicted_levels += 1;
            let all = [
                f.predicted,
                f.measured,
                f.error,
                f.open_loop,
                f.shadow_inputs,
            ];
            assert!(all.iter().all(Option::is_none), "{}: {f:?}", f.name);
        }
    }
    assert!(predicted_levels > 0, "the table has level rows");
    let pj = serde_json::to_value(&prep).expect("json");
    for p in pj["predictions"].as_array().expect("predictions") {
        for f in p["figures"].as_array().expect("figures") {
            if has_level(f["name"].as_str().expect("name"), &gone) {
                assert!(f["predicted"].is_null() && f["measured"].is_null(), "{f}");
            }
        }
    }
    let pt = compare::text::render(&prep);
    for line in pt.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if let Some(i) = words
            .iter()
            .position(|w| gone.iter().any(|g| w.contains(g)))
        {
            // Every cell after the label of an impossible level says n/a.
            assert!(
                words[i + 1..]
                    .iter()
                    .all(|w| *w == "n/a" || w.starts_with('[') || *w == "%" || *w == "pt"),
                "{line}"
            );
        }
    }
    let c = gate::parse("placement.vs_waker.cross_package.share > +2pt").expect("parse");
    gate::check_name(&c).expect("a registered name");
    let v = gate::evaluate(&rep, &c).expect("evaluated");
    assert!(v.change.is_none(), "{v}");
    // It fails closed, and says why; skipping it is the caller's choice.
    assert!(
        matches!(&v.outcome, gate::Outcome::CannotEvaluate(w) if w.contains("n/a")),
        "{v}"
    );
    assert!(v.fails(false) && !v.fails(true), "{v}");
    let j = serde_json::to_value(&v).expect("json");
    assert!(j["change"].is_null() && j["base"].is_null(), "{j}");
}

#[test]
fn a_figure_added_in_one_place_reaches_every_output() {
    let fams: Vec<&dyn Family> = figures::FAMILIES
        .iter()
        .copied()
        .chain([&TestFamily as &dyn Family])
        .collect();
    let with = |mut s: Snapshot| {
        s.figures = figures::Figures(figures::evaluate_with(&s, &fams));
        s
    };
    let a = with(snapshot_of(full(), 20_000, 5));
    let b = with(snapshot_of(full(), 40_000, 6));
    let name = "placement.test_doubled.count";
    let want = a.placement.wakeups.count as f64 * 2.0;
    assert!(want > 0.0);
    assert_eq!(
        report::json(&a)["figures"][name]["value"],
        serde_json::json!(want)
    );
    assert!(
        report::text(&a)
            .lines()
            .any(|l| l.trim_start().starts_with(name))
    );
    let groups = [
        Group {
            name: "a".into(),
            files: vec![],
            runs: vec![a],
        },
        Group {
            name: "b".into(),
            files: vec![],
            runs: vec![b],
        },
    ];
    let rep = compare::diff(&groups, &[]);
    assert!(rep.row(name).is_some());
    assert!(compare::text::render(&rep).contains("test doubled"));
    let dj = serde_json::to_value(&rep).expect("json");
    assert!(
        dj["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .any(|r| r["name"] == name)
    );
    let c = gate::parse(&format!("{name} > +10%")).expect("parse");
    assert!(
        gate::check_name(&c).is_err(),
        "not registered in the real list"
    );
    gate::check_name_in(&fams, &c).expect("registered with the test family");
    let v = gate::evaluate(&rep, &c).expect("evaluated");
    assert!(v.holds(), "{v}");
}

#[test]
fn the_registry_lists_every_name_once() {
    let text = figures::list_text();
    let mut seen = std::collections::HashSet::new();
    for d in figures::defs() {
        assert!(seen.insert(d.name), "{} registered twice", d.name);
        assert!(text.contains(d.name), "{} not listed", d.name);
    }
}
