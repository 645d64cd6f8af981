//! The closed-loop simulator on workloads whose dynamics are known (scenario files in
//! `tests/fixtures/closed_loop/`): each runs under the policies its file names, the events are
//! folded by the ordinary analysis, and the figures must land where the file says.
mod analysis_support;

use std::collections::BTreeMap;

use analysis_support::header;
use serde::Deserialize;
use wakeviz_core::{
    analysis::Analysis,
    closed_loop::{Config, names, simulate},
    format::{Header, ScanSource},
    source::Batch,
    workload::{Dist, Shape, TaskShape, Waker, WakerShare},
};

#[derive(Deserialize)]
struct Scenario {
    topology: String,
    duration_ms: u64,
    tasks: Vec<Task>,
    expect: Vec<Expect>,
}

#[derive(Deserialize)]
struct Task {
    pid: u32,
    comm: String,
    #[serde(default)]
    run_us: f64,
    #[serde(default)]
    sleep_us: f64,
    /// Waker pid (or "interrupt") -> wakeups.
    #[serde(default)]
    woken_by: BTreeMap<String, u64>,
    #[serde(default)]
    sync: f64,
    #[serde(default)]
    allowed: Option<Vec<u32>>,
    #[serde(default)]
    hog: bool,
}

#[derive(Deserialize)]
struct Expect {
    policy: String,
    figure: String,
    min: f64,
    max: f64,
}

fn fixed(us: f64, n: u64) -> Dist {
    Dist {
        n,
        total_us: us * n as f64,
        mean_us: us,
        p10_us: us,
        p25_us: us,
        p50_us: us,
        p75_us: us,
        p90_us: us,
        p99_us: us,
        max_us: us,
    }
}

fn shape(s: &Scenario) -> Shape {
    let span = s.duration_ms as f64 * 1e3;
    let tasks = s
        .tasks
        .iter()
        .map(|t| {
            let woken: u64 = t.woken_by.values().sum();
            let woken_by = t
                .woken_by
                .iter()
                .map(|(k, &count)| WakerShare {
                    waker: k.parse().map_or(Waker::Interrupt, Waker::Task),
                    count,
                    sync: Some((count as f64 * t.sync) as u64),
                })
                .collect();
            TaskShape {
                pid: t.pid,
                tgid: Some(t.pid),
                comm: t.comm.clone(),
                nice: Some(0),
                run: if t.hog {
                    Dist::default()
                } else {
                    fixed(t.run_us, woken)
                },
                sleep: if t.hog {
                    Dist::default()
                } else {
                    fixed(t.sleep_us, woken)
                },
                woken,
                woken_by,
                allowed_cpus: t.allowed.clone(),
                cpus_used: 1,
                home_cpu: None,
                cpu_us: if t.hog { span } else { t.run_us * woken as f64 },
                span_us: span,
            }
        })
        .collect();
    Shape {
        schema: 1,
        kernel_release: "scenario".into(),
        cpus: 0,
        duration_ns: s.duration_ms * 1_000_000,
        scope: "every task".into(),
        tasks,
        processes: vec![],
        tasks_not_followed: 0,
    }
}

/// A scenario file, its workload and the header of its topology.
fn load(file: &str) -> (Scenario, Shape, Header) {
    let path = format!(
        "{}/tests/fixtures/closed_loop/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    let sc: Scenario = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let sh = shape(&sc);
    let h = header(&sc.topology, ScanSource::SelectTaskRqFair);
    (sc, sh, h)
}

fn check(file: &str) {
    let (sc, sh, h) = load(file);
    for e in &sc.expect {
        let cfg = Config::new(&e.policy, &sh, 1_000_000);
        let mut a = Analysis::new(&h);
        a.set_shadow(None);
        let mut events = Vec::new();
        let sum = simulate(&sh, &h, &cfg, &mut |ev| events.push(ev.clone())).unwrap();
        assert!(sum.wakeups > 50, "{file} {}: {sum:?}", e.policy);
        a.on_batch(&Batch {
            tasks: names(&sh),
            events,
            ..Batch::default()
        });
        let snap = a.snapshot();
        let v = snap
            .figures
            .get(&e.figure)
            .and_then(|f| f.value)
            .unwrap_or_else(|| panic!("{file} {}: no {}", e.policy, e.figure));
        eprintln!("{file} under {}: {} = {v}", e.policy, e.figure);
        assert!(
            (e.min..=e.max).contains(&v),
            "{file} under {}: {} = {v}, expected {}..={} ({sum:?})",
            e.policy,
            e.figure,
            e.min,
            e.max
        );
    }
}

#[test]
fn ping_pong() {
    check("ping-pong.json");
}

#[test]
fn pinned_pair() {
    check("pinned-pair.json");
}

#[test]
fn fan_out() {
    check("fan-out.json");
}

#[test]
fn overloaded_llc() {
    check("overloaded-llc.json");
}

/// The same seed gives the same events; another seed, other draws.
#[test]
fn deterministic_for_a_seed() {
    let (_, sh, h) = load("fan-out.json");
    let run = |seed| {
        let mut cfg = Config::new("sis_util", &sh, 1_000_000);
        cfg.seed = seed;
        let mut out = Vec::new();
        simulate(&sh, &h, &cfg, &mut |e| out.push(e.clone())).unwrap();
        out
    };
    assert_eq!(run(7), run(7));
}

#[test]
fn an_unknown_or_observed_policy_is_refused() {
    let (_, sh, h) = load("ping-pong.json");
    for p in ["nope", "observed"] {
        let cfg = Config::new(p, &sh, 1_000);
        assert!(simulate(&sh, &h, &cfg, &mut |_| {}).is_err(), "{p}");
    }
}
