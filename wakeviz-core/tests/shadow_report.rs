//! The typed shadow report: its JSON carries exactly the keys the `--report json` reference
//! (`docs/reference/report-json.md`) documents for `shadow`, filtered or not, and the text report renders the same
//! figures.
use std::path::Path;

use serde_json::Value;
use wakeviz_core::{
    analysis::report::shadow::text,
    join::Joiner,
    shadow::{ShadowEval, Tally},
    synth::{self, SynthConfig},
    topology::fixture,
};

/// One documented object: the bullet's label, its required and optional keys.
struct Doc {
    label: String,
    required: Vec<String>,
    optional: Vec<String>,
}

/// The bullets of the reference's `## \`shadow\`` section, each parsed as `label: keys`, where the
/// keys are the backticked words outside parentheses and "(optional" marks an optional one.
fn documented() -> Vec<Doc> {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/reference/report-json.md"),
    )
    .expect("docs/reference/report-json.md");
    let section = doc
        .split("\n## `shadow`\n")
        .nth(1)
        .expect("docs/reference/report-json.md has a ## `shadow` section");
    let section = section.split("\n#").next().unwrap_or(section);
    let mut bullets: Vec<String> = Vec::new();
    for line in section.lines() {
        if let Some(b) = line.strip_prefix("- ") {
            bullets.push(b.to_string());
        } else if let (Some(last), true) = (bullets.last_mut(), line.starts_with("  ")) {
            last.push(' ');
            last.push_str(line.trim());
        }
    }
    bullets
        .iter()
        .map(|b| {
            // Split at the first ": " outside parentheses.
            let mut depth = 0i32;
            let mut cut = None;
            let bytes = b.as_bytes();
            for (i, c) in b.char_indices() {
                match c {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    ':' if depth == 0 && bytes.get(i + 1) == Some(&b' ') => {
                        cut = Some(i);
                        break;
                    }
                    _ => {}
                }
            }
            let cut = cut.unwrap_or_else(|| panic!("no label in {b:?}"));
            let (label, body) = (b[..cut].to_string(), &b[cut + 2..]);
            let (mut required, mut optional) = (Vec::new(), Vec::new());
            let mut depth = 0i32;
            let mut rest = body;
            while let Some(c) = rest.chars().next() {
                match c {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    '`' if depth == 0 => {
                        let end = rest[1..].find('`').expect("closing backtick") + 1;
                        let key = rest[1..end].to_string();
                        let after = &rest[end + 1..];
                        if after.trim_start().starts_with("(optional") {
                            optional.push(key);
                        } else {
                            required.push(key);
                        }
                        rest = after;
                        continue;
                    }
                    _ => {}
                }
                rest = &rest[c.len_utf8()..];
            }
            Doc {
                label,
                required,
                optional,
            }
        })
        .collect()
}

fn check(doc: &Doc, what: &str, v: &Value) {
    let obj = v
        .as_object()
        .unwrap_or_else(|| panic!("{what} is not an object: {v}"));
    for k in &doc.required {
        assert!(obj.contains_key(k), "{what}: documented key {k} missing");
    }
    for k in obj.keys() {
        assert!(
            doc.required.contains(k) || doc.optional.contains(k),
            "{what}: key {k} not documented under {:?}",
            doc.label
        );
    }
}

fn doc<'a>(docs: &'a [Doc], label: &str) -> &'a Doc {
    docs.iter()
        .find(|d| d.label.starts_with(label))
        .unwrap_or_else(|| panic!("the JSON reference documents no {label:?}"))
}

#[test]
fn shadow_json_keys_are_the_documented_ones() {
    let topo = fixture::named_topology("xeon-e5-2690v3").expect("fixture");
    let cfg = SynthConfig::new(200_000, 11);
    let s = synth::events(&topo, &cfg).expect("synth");
    let hdr = synth::header(&topo, &cfg, &s);
    let mut ev = ShadowEval::new(&hdr);
    let mut j = Joiner::new();
    let mut tally = Tally::new(&ev);
    for e in s {
        ev.on_event(&e);
        if let Some(pl) = j.on_event(&e)
            && let Some(sc) = ev.on_placement(&pl)
            && sc.pid % 3 == 0
        {
            tally.add(&sc);
        }
    }
    let docs = documented();
    for (name, report) in [
        ("unfiltered", ev.report(None)),
        ("filtered", ev.report(Some(&tally))),
    ] {
        let v = serde_json::to_value(&report).expect("serializes");
        check(doc(&docs, "top level"), name, &v);
        assert_eq!(v.get("filtered").is_some(), name == "filtered");
        check(doc(&docs, "`excluded`"), name, &v["excluded"]);
        check(doc(&docs, "`fidelity`"), name, &v["fidelity"]);
        check(doc(&docs, "`wf_sync`"), name, &v["wf_sync"]);
        let slept = doc(&docs, "a slept report");
        check(slept, name, &v["wf_sync"]["sync_wakeups"]);
        let rows = v["policies"].as_object().expect("policies");
        assert_eq!(rows.len(), ev.policy_names().len());
        let mut slept_rows = 0;
        for (p, row) in rows {
            check(doc(&docs, "each `policies.NAME`"), p, row);
            if let Some(h) = row.get("waker_slept_after") {
                check(slept, p, h);
                slept_rows += 1;
            }
        }
        for (_, h) in v["wf_sync"]["queued_behind_waker"]
            .as_object()
            .expect("queued_behind_waker")
        {
            check(slept, name, h);
        }
        // WF_SYNC wake-local fires on the synthetic pipe pairs: the optional key is exercised.
        assert_eq!(slept_rows > 0, name == "unfiltered", "{name}");
    }
}

#[test]
fn text_and_json_show_the_same_figures() {
    let topo = fixture::named_topology("zen3-nps2").expect("fixture");
    let cfg = SynthConfig::new(100_000, 4);
    let s = synth::events(&topo, &cfg).expect("synth");
    let hdr = synth::header(&topo, &cfg, &s);
    let mut ev = ShadowEval::new(&hdr);
    let mut j = Joiner::new();
    for e in s {
        ev.on_event(&e);
        if let Some(pl) = j.on_event(&e) {
            let _ = ev.on_placement(&pl);
        }
    }
    let r = ev.report(None);
    let t = text(&r);
    assert!(
        t.contains(&format!("{} placed wakeups compared", r.evaluated)),
        "{t}"
    );
    let f = &r.fidelity;
    let a = f.agreement.expect("fidelity");
    assert!(t.contains(&format!(
        "Fidelity: the {} shadow reproduces {:.2}% of the kernel's choices ({} compared).",
        f.policy,
        100.0 * a,
        f.evaluated
    )));
    for row in &r.policies {
        let line = t
            .lines()
            .find(|l| l.split_whitespace().next() == Some(row.name))
            .unwrap_or_else(|| panic!("no text row for {}", row.name));
        let agree = row
            .agreement
            .map_or("-".to_string(), |a| format!("{:.2}", 100.0 * a));
        assert_eq!(
            line.split_whitespace().nth(1),
            Some(agree.as_str()),
            "{line}"
        );
    }
    for a in &r.approximations {
        assert!(t.contains(&format!("  - {a}\n")), "{a}");
    }
    // The fidelity names a policy by its registry index, and that row is the policy's.
    assert_eq!(r.policies[r.fidelity.policy_id.0].name, r.fidelity.policy);
}

#[test]
fn a_tally_of_every_scored_placement_is_the_unfiltered_report() {
    let topo = fixture::named_topology("zen3-nps4").expect("fixture");
    let cfg = SynthConfig::new(150_000, 9);
    let s = synth::events(&topo, &cfg).expect("synth");
    let hdr = synth::header(&topo, &cfg, &s);
    let mut ev = ShadowEval::new(&hdr);
    let mut j = Joiner::new();
    let (mut all, none) = (Tally::default(), Tally::new(&ev));
    let mut scored = 0;
    for e in s {
        ev.on_event(&e);
        if let Some(pl) = j.on_event(&e)
            && let Some(sc) = ev.on_placement(&pl)
        {
            all.add(&sc);
            scored += 1;
        }
    }
    assert_eq!(scored, ev.evaluated());
    let (full, sub) = (ev.report(None), ev.report(Some(&all)));
    assert!(sub.filtered && !full.filtered);
    assert_eq!(sub.evaluated, full.evaluated);
    assert_eq!(sub.fidelity, full.fidelity);
    for (a, b) in full.policies.iter().zip(&sub.policies) {
        let mut a = a.clone();
        // The WF_SYNC watch is not per task: filtered rows leave it to `wf_sync`.
        a.waker_slept_after = None;
        assert_eq!(&a, b);
    }
    // An empty subset: rows exist, their shares do not (None, never 0).
    let empty = ev.report(Some(&none));
    assert_eq!(empty.evaluated, 0);
    for r in &empty.policies {
        assert_eq!((r.evaluated, r.agreement, r.idle_pct), (0, None, None));
        assert_eq!(
            (r.probes_mean, r.probes_p99, r.queue_mean),
            (None, None, None)
        );
    }
    assert_eq!(empty.fidelity.agreement, None);
    assert_eq!(none.evaluated(), 0);
}

/// A policy's effect is its delta against the kernel's model, not against the kernel: where the
/// model itself is off (tracepoint-only, fidelity under 100 %), the two deltas can point in
/// opposite directions, and the report shows the one against the model, with the model's error
/// beside it.
#[test]
fn deltas_are_against_the_model_with_its_error_beside_them() {
    use wakeviz_core::shadow::report::Deltas;
    let topo = fixture::named_topology("zen3-nps2").expect("fixture");
    let cfg = SynthConfig::new(60_000, 5);
    let s = synth::events(&topo, &cfg).expect("synth");
    let hdr = synth::header(&topo, &cfg, &s);
    let mut ev = ShadowEval::new(&hdr);
    let mut j = Joiner::new();
    for e in s {
        ev.on_event(&e);
        if let Some(pl) = j.on_event(&e) {
            let _ = ev.on_placement(&pl);
        }
    }
    let mut r = ev.report(None);
    let model = r
        .policies
        .iter()
        .position(|p| p.name == r.model)
        .expect("the model has a row");
    let other = r
        .policies
        .iter()
        .position(|p| p.name == "sis_prop")
        .expect("sis_prop");
    // The seed's case: migrations observed 50.00 %, the model 43.70 % (its error -6.30 pt), the
    // policy 44.11 %: -5.89 pt against the kernel, +0.41 pt against the model.
    r.policies[0].migrations_pct = Some(50.0);
    r.policies[model].migrations_pct = Some(43.70);
    r.policies[other].migrations_pct = Some(44.11);
    let m = r.policies[model].clone();
    for row in &mut r.policies {
        row.vs_model = Deltas::between(row, &m);
    }
    r.model_error = Deltas::between(&m, &r.policies[0]);
    let vs_observed = 44.11 - 50.0;
    let vs_model = r.policies[other].vs_model.migrations_pt.expect("a delta");
    assert!(
        vs_observed < 0.0 && vs_model > 0.0,
        "{vs_observed} {vs_model}"
    );
    assert!((vs_model - 0.41).abs() < 1e-9);
    let t = text(&r);
    let line = t
        .lines()
        .find(|l| l.starts_with("sis_prop "))
        .expect("sis_prop row");
    assert!(line.contains("44.11 ( +0.41)"), "{line}");
    assert!(
        t.contains(&format!(
            "Deltas are against {}, the model of the running kernel",
            r.model
        )) && t.contains("migrations -6.30 pt"),
        "{t}"
    );
    let j = serde_json::to_value(&r).expect("json");
    assert_eq!(j["model"], r.model);
    assert!(
        (j["policies"]["sis_prop"]["vs_model"]["migrations_pt"]
            .as_f64()
            .unwrap()
            - 0.41)
            .abs()
            < 1e-9
    );
    assert!((j["model_error"]["migrations_pt"].as_f64().unwrap() + 6.30).abs() < 1e-9);
}

/// Without select records (tracepoint-only), a policy that needs their WF_SYNC flag cannot
/// differ from the model: n/a, and why, never a delta of 0.
#[test]
fn a_row_that_cannot_differ_in_this_capture_says_why() {
    let topo = fixture::named_topology("zen3-nps2").expect("fixture");
    let cfg = SynthConfig::new(60_000, 6);
    let s = synth::events(&topo, &cfg).expect("synth");
    let mut hdr = synth::header(&topo, &cfg, &s);
    for p in &mut hdr.probes {
        if p.name == "select_task_rq_fair" {
            p.state = wakeviz_core::format::ProbeState::Unavailable("test: tracepoint-only".into());
        }
    }
    let mut ev = ShadowEval::new(&hdr);
    let mut j = Joiner::new();
    for e in s.filter(|e| !matches!(e, wakeviz_core::event::Event::Select(_))) {
        ev.on_event(&e);
        if let Some(pl) = j.on_event(&e) {
            let _ = ev.on_placement(&pl);
        }
    }
    let r = ev.report(None);
    let wf = r
        .policies
        .iter()
        .find(|p| p.name == "wf_sync")
        .expect("wf_sync");
    assert!(
        wf.cannot_differ.is_some_and(|w| w.contains("WF_SYNC")),
        "{wf:?}"
    );
    assert_eq!(wf.vs_model.migrations_pt, None);
    let t = text(&r);
    assert!(t.contains("wf_sync: n/a, WF_SYNC"), "{t}");
    let sis = r
        .policies
        .iter()
        .find(|p| p.name == "sis_util")
        .expect("sis_util");
    assert!(sis.cannot_differ.is_none() && sis.vs_model.migrations_pt.is_some());
}
