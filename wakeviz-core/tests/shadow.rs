//! Scenario tests of the shadow policies: known idle maps, known answers.
use std::{fs, path::Path};

use wakeviz_core::{
    event::{Event, Select, SelectInputs, Switch, Wake, WakeeFlips, wf},
    format::{FORMAT_VERSION, Header, ProbeMode, ProbeState, ProbeStatus, ScanSource},
    join::Joiner,
    shadow::{
        ShadowEval, kernel_policy,
        policy::wf_sync_wake_local,
        state::{sis_prop_budget, sis_util_nr_idle_scan},
        wake_wide,
    },
    topology::{Topology, from_sysfs},
};

/// One CPU of a hand-written sysfs tree.
struct Cpu {
    cpu: u32,
    pkg: u32,
    core_id: u32,
    siblings: &'static str,
    llc: &'static str,
}

/// Writes a minimal `devices/system` tree and reads it back with the production reader.
fn topology(cpus: &[Cpu], nodes: &[(&str, &str)]) -> Topology {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let w = |p: &Path, s: &str| {
        fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        fs::write(p, format!("{s}\n")).expect("write");
    };
    let max = cpus.iter().map(|c| c.cpu).max().unwrap_or(0);
    w(&root.join("cpu/online"), &format!("0-{max}"));
    w(&root.join("cpu/present"), &format!("0-{max}"));
    for c in cpus {
        let d = root.join(format!("cpu/cpu{}", c.cpu));
        w(&d.join("topology/physical_package_id"), &c.pkg.to_string());
        w(&d.join("topology/die_id"), "0");
        w(&d.join("topology/core_id"), &c.core_id.to_string());
        w(&d.join("topology/thread_siblings_list"), c.siblings);
        w(&d.join("cache/index3/level"), "3");
        w(&d.join("cache/index3/type"), "Unified");
        w(&d.join("cache/index3/shared_cpu_list"), c.llc);
        w(&d.join("cache/index3/id"), "0");
    }
    for (i, (list, dist)) in nodes.iter().enumerate() {
        w(&root.join(format!("node/node{i}/cpulist")), list);
        w(&root.join(format!("node/node{i}/distance")), dist);
    }
    from_sysfs(root).expect("topology")
}

fn header(topology: Topology, select_probe: bool) -> Header {
    Header {
        format_version: FORMAT_VERSION,
        abi_version: 0,
        tool_version: "test".into(),
        kernel_release: "6.8.0-test".into(),
        hostname: "test".into(),
        realtime_offset_ns: 0,
        clocks: None,
        scan_points: None,
        start_ts_ns: 0,
        probes: vec![ProbeStatus {
            name: "select_task_rq_fair".into(),
            mode: Some(ProbeMode::Fentry),
            state: if select_probe {
                ProbeState::Attached
            } else {
                ProbeState::Unavailable("test".into())
            },
            fallbacks: Vec::new(),
        }],
        scan_source: ScanSource::SelectTaskRqFair,
        topology,
        ringbuf_bytes: 0,
        comm_redacted: false,
        cpu_vendor: None,
        notes: Vec::new(),
        run: Default::default(),
    }
}

/// 8 CPUs, one LLC, SMT pairs {0,1} {2,3} {4,5} {6,7}.
fn smt8() -> Topology {
    let sib = ["0-1", "0-1", "2-3", "2-3", "4-5", "4-5", "6-7", "6-7"];
    let cpus: Vec<Cpu> = (0..8)
        .map(|c| Cpu {
            cpu: c,
            pkg: 0,
            core_id: c / 2,
            siblings: sib[c as usize],
            llc: "0-7",
        })
        .collect();
    topology(&cpus, &[("0-7", "10")])
}

/// 16 CPUs without SMT, one package, node 0 = 0-7 (LLCs 0-3, 4-7), node 1 = 8-15 (LLCs 8-11,
/// 12-15): an NPS2-like layout where SIS_NODE's domain is the node.
fn two_nodes() -> Topology {
    const SIB: [&str; 16] = [
        "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15",
    ];
    const LLC: [&str; 4] = ["0-3", "4-7", "8-11", "12-15"];
    let cpus: Vec<Cpu> = (0..16)
        .map(|c| Cpu {
            cpu: c,
            pkg: 0,
            core_id: c,
            siblings: SIB[c as usize],
            llc: LLC[(c / 4) as usize],
        })
        .collect();
    topology(&cpus, &[("0-7", "10 12"), ("8-15", "12 10")])
}

fn switch(ts: u64, cpu: u32, prev: u32, next: u32, prev_state: u32) -> Event {
    Event::Switch(Switch {
        ts_ns: ts,
        cpu,
        prev_pid: prev,
        next_pid: next,
        prev_state,
        prev_prio: 120,
        next_prio: 120,
    })
}

fn wake(ts: u64, cpu: u32, pid: u32, target: u32, waker: u32) -> Wake {
    Wake {
        ts_ns: ts,
        cpu,
        pid,
        target_cpu: target,
        waker_pid: waker,
        prio: 120,
    }
}

/// Inputs of one select record.
#[derive(Clone, Copy, Default)]
struct Sel {
    sync: bool,
    nr_running: Option<u32>,
    nr_idle_scan: Option<u32>,
    has_idle_cores: Option<bool>,
    /// The ABI-2 inputs (loads, delayed count, kthread waker, affinity).
    inputs: SelectInputs,
}

fn select(ts: u64, w: u32, pid: u32, prev: u32, chosen: u32, waker: u32, s: Sel) -> Select {
    Select {
        ts_ns: ts + 1,
        entry_ts_ns: ts,
        cpu: w,
        pid,
        prev_cpu: prev,
        wake_flags: wf::TTWU | if s.sync { wf::SYNC } else { 0 },
        chosen_cpu: chosen,
        waker_pid: waker,
        waker_nr_running: s.nr_running,
        nr_idle_scan: s.nr_idle_scan,
        has_idle_cores: s.has_idle_cores,
        prev_nr_idle_scan: s.nr_idle_scan,
        prev_has_idle_cores: s.has_idle_cores,
        idle_scan_ns: None,
        scan: None,
        inputs: s.inputs,
    }
}

/// Drives one full wakeup (waking, select, wakeup) through a joiner and the evaluator and
/// returns each policy's choice for it.
fn one_wakeup(
    ev: &mut ShadowEval,
    j: &mut Joiner,
    ts: u64,
    (w, pid, prev, chosen, waker): (u32, u32, u32, u32, u32),
    s: Sel,
) -> Vec<(&'static str, u32)> {
    let events = [
        Event::Waking(wake(ts, w, pid, prev, waker)),
        Event::Select(Box::new(select(ts + 10, w, pid, prev, chosen, waker, s))),
        Event::Wakeup(wake(ts + 20, w, pid, chosen, waker)),
    ];
    let names = ev.policy_names();
    let mut got = None;
    for e in &events {
        ev.on_event(e);
        if let Some(p) = j.on_event(e)
            && let Some(s) = ev.on_placement(&p)
        {
            got = Some(s.outcomes.iter().map(|o| o.cpu).collect::<Vec<_>>());
        }
    }
    names
        .into_iter()
        .zip(got.expect("placement scored"))
        .collect()
}

fn choice(v: &[(&'static str, u32)], name: &str) -> u32 {
    v.iter()
        .find(|(n, _)| *n == name)
        .map(|x| x.1)
        .unwrap_or_else(|| panic!("no policy {name}"))
}

/// Makes `cpus` busy with distinct tasks (pids 100+cpu).
fn busy(ev: &mut ShadowEval, ts: u64, cpus: &[u32]) {
    for &c in cpus {
        ev.on_event(&switch(ts, c, 0, 100 + c, 0));
    }
}

#[test]
fn sis_util_budget_matches_the_spec_table_for_a_16_cpu_llc() {
    let utils = [0, 15, 25, 35, 45, 55, 65, 75, 85];
    let want = [16, 15, 14, 13, 11, 9, 6, 3, 0];
    for (u, w) in utils.iter().zip(want) {
        // Every CPU at u% of SCHED_CAPACITY_SCALE.
        let per_cpu = u * 1024 / 100;
        assert_eq!(sis_util_nr_idle_scan(16, 16 * per_cpu, 117), w, "{u}% util");
    }
    // Other LLC sizes (8, 32 and 112 CPUs, as in the SIS_UTIL patch's table) at 45%.
    assert_eq!(sis_util_nr_idle_scan(8, 8 * 460, 117), 5);
    assert_eq!(sis_util_nr_idle_scan(32, 32 * 460, 117), 23);
    assert_eq!(sis_util_nr_idle_scan(112, 112 * 460, 117), 81);
}

#[test]
fn sis_prop_budget_follows_the_formula() {
    // Worked example: ai = 100 us, ac = 2 us -> about 800 (the whole LLC).
    assert_eq!(sis_prop_budget(16, 100_000, 1_999), 16 * 100_000 / 2_000);
    // Under load wake_avg_idle collapses: budget floor 4 (3 probes).
    assert_eq!(sis_prop_budget(16, 400, 2_000), 4);
    assert_eq!(sis_prop_budget(16, 0, 0), 4);
    // Exactly at the 4*ac boundary the floor applies (strictly greater is needed).
    assert_eq!(sis_prop_budget(4, 1_000, 999), 4);
    assert_eq!(sis_prop_budget(4, 1_001, 999), 4);
    assert_eq!(sis_prop_budget(8, 1_001, 999), 8);
}

#[test]
fn wake_wide_needs_many_partners() {
    assert!(!wake_wide(0, 0, 16));
    assert!(!wake_wide(255, 16, 16));
    assert!(wake_wide(256, 16, 16));
    assert!(wake_wide(16, 256, 16));
    assert!(!wake_wide(1000, 15, 16));
}

#[test]
fn kernel_policy_follows_the_release() {
    let name = |r: &str| -> &'static str { kernel_policy(r).into() };
    assert_eq!(name("5.15.0-91-generic"), "sis_prop");
    assert_eq!(name("6.8.0-49-generic"), "sis_util");
    assert_eq!(name("synthetic"), "sis_util");
}

#[test]
fn a_recording_with_no_sis_util_is_judged_against_the_full_scan() {
    let mut h = header(smt8(), true);
    h.run.sched_features = Some(vec!["NO_SIS_UTIL".into(), "WA_IDLE".into()]);
    let r = ShadowEval::new(&h).report(None);
    assert_eq!(r.fidelity.policy, "full_scan");
    let mut h = header(smt8(), true);
    h.run.sched_features = Some(vec!["SIS_UTIL".into()]);
    assert_eq!(ShadowEval::new(&h).report(None).fidelity.policy, "sis_util");
    // No features recorded: the release string (6.8) decides.
    assert_eq!(
        ShadowEval::new(&header(smt8(), true))
            .report(None)
            .fidelity
            .policy,
        "sis_util"
    );
}

#[test]
fn wf_sync_condition() {
    // Pure predicate: sync, the affine step chose the waker CPU, the waker alone there.
    assert!(wf_sync_wake_local(true, 3, 3, 1));
    assert!(!wf_sync_wake_local(false, 3, 3, 1));
    assert!(!wf_sync_wake_local(true, 4, 3, 1));
    assert!(!wf_sync_wake_local(true, 3, 3, 2));

    // Scenario on smt8: waker pid 10 runs alone on CPU 0; wakee pid 20 last ran on CPU 0
    // (P == W, so new_cpu stays W without an affine step). CPU 1 (SMT sibling) is idle.
    let mk = || {
        let mut ev = ShadowEval::new(&header(smt8(), true));
        ev.on_event(&switch(1_000, 0, 0, 10, 0));
        ev
    };
    let exact = Sel {
        sync: true,
        nr_running: Some(1),
        nr_idle_scan: Some(8),
        has_idle_cores: Some(false),
        inputs: SelectInputs::default(),
    };
    let mut ev = mk();
    let r = one_wakeup(
        &mut ev,
        &mut Joiner::new(),
        10_000,
        (0, 20, 0, 1, 10),
        exact,
    );
    assert_eq!(
        choice(&r, "wf_sync"),
        0,
        "sync + alone: queue behind the waker"
    );
    assert_eq!(choice(&r, "wf_sync_delayed"), 0);
    assert_eq!(
        choice(&r, "sis_util"),
        1,
        "plain SIS moves it to the idle SMT sibling"
    );
    assert_eq!(choice(&r, "observed"), 1);

    // Waker not alone: no wake-local.
    let mut ev = mk();
    let r = one_wakeup(
        &mut ev,
        &mut Joiner::new(),
        10_000,
        (0, 20, 0, 1, 10),
        Sel {
            nr_running: Some(2),
            ..exact
        },
    );
    assert_eq!(choice(&r, "wf_sync"), 1);

    // Not sync: no wake-local.
    let mut ev = mk();
    let r = one_wakeup(
        &mut ev,
        &mut Joiner::new(),
        10_000,
        (0, 20, 0, 1, 10),
        Sel {
            sync: false,
            ..exact
        },
    );
    assert_eq!(choice(&r, "wf_sync"), 1);
}

#[test]
fn wf_sync_reports_whether_the_waker_slept() {
    let mut ev = ShadowEval::new(&header(smt8(), true));
    let mut j = Joiner::new();
    ev.on_event(&switch(1_000, 0, 0, 10, 0));
    let exact = Sel {
        sync: true,
        nr_running: Some(1),
        nr_idle_scan: Some(8),
        has_idle_cores: Some(false),
        inputs: SelectInputs::default(),
    };
    // Wakeup at 10 us; the waker blocks 20 us later: slept within 50 us.
    one_wakeup(&mut ev, &mut j, 10_000, (0, 20, 0, 1, 10), exact);
    ev.on_event(&switch(30_000, 0, 10, 0, 1));
    // Second round: waker 10 back on CPU 0, wakes 21, then is preempted (still runnable).
    ev.on_event(&switch(40_000, 0, 0, 10, 0));
    one_wakeup(&mut ev, &mut j, 50_000, (0, 21, 0, 2, 10), exact);
    ev.on_event(&switch(60_000, 0, 10, 30, 0));
    let v = json(&ev);
    let h = &v["policies"]["wf_sync"]["waker_slept_after"];
    assert_eq!(h["total"], 2);
    assert_eq!(h["buckets"]["le_50us"], 1);
    assert_eq!(h["buckets"]["preempted"], 1);
    assert_eq!(h["slept_within_threshold_pct"], 50.0);
    assert_eq!(v["wf_sync"]["sync_wakeups"]["total"], 2);
}

#[test]
fn idle_core_preferred_over_idle_smt_sibling_of_a_busy_core() {
    // CPU 0 runs the waker (pid 10), its sibling 1 is idle; core {2,3} is fully idle; the
    // rest is busy. The wakee last ran on CPU 0 (P == W == T).
    let mut ev = ShadowEval::new(&header(smt8(), true));
    ev.on_event(&switch(1_000, 0, 0, 10, 0));
    busy(&mut ev, 1_000, &[4, 5, 6, 7]);
    let mut j = Joiner::new();
    // Stale kernel hint "no idle core": SIS_UTIL takes prev's idle SMT sibling.
    let stale = Sel {
        sync: false,
        nr_running: Some(1),
        nr_idle_scan: Some(8),
        has_idle_cores: Some(false),
        inputs: SelectInputs::default(),
    };
    let r = one_wakeup(&mut ev, &mut j, 10_000, (0, 20, 0, 1, 10), stale);
    assert_eq!(choice(&r, "sis_util"), 1);
    assert_eq!(
        choice(&r, "idle_core_first"),
        2,
        "pure idle-core first: the idle core"
    );
    assert_eq!(
        choice(&r, "sis_util_true_hint"),
        2,
        "P6a: true hint -> idle-core scan"
    );
    assert_eq!(choice(&r, "prev_only"), 0);

    // With the hint set, SIS_UTIL's idle-core scan from T+1 = 1 skips core {0,1} (busy CPU 0)
    // and returns CPU 2 of the idle core.
    let mut ev = ShadowEval::new(&header(smt8(), true));
    ev.on_event(&switch(1_000, 0, 0, 10, 0));
    busy(&mut ev, 1_000, &[4, 5, 6, 7]);
    let r = one_wakeup(
        &mut ev,
        &mut Joiner::new(),
        10_000,
        (0, 20, 0, 2, 10),
        Sel {
            has_idle_cores: Some(true),
            ..stale
        },
    );
    assert_eq!(choice(&r, "sis_util"), 2);
    assert_eq!(choice(&r, "full_scan"), 2);
    assert_eq!(ev.fidelity(), Some(1.0));
}

#[test]
fn sis_node_crosses_llcs_of_the_node_but_never_the_node_boundary() {
    let t = two_nodes();
    let sel = Sel {
        sync: false,
        nr_running: Some(1),
        nr_idle_scan: Some(4),
        has_idle_cores: Some(false),
        inputs: SelectInputs::default(),
    };
    // LLC 0-3 fully busy (waker pid 10 on CPU 0, prev = 0); CPU 6 idle in the other LLC of
    // node 0; everything in node 1 idle too.
    let mut ev = ShadowEval::new(&header(t.clone(), true));
    ev.on_event(&switch(1_000, 0, 0, 10, 0));
    busy(&mut ev, 1_000, &[1, 2, 3, 4, 5, 7]);
    let r = one_wakeup(&mut ev, &mut Joiner::new(), 10_000, (0, 20, 0, 0, 10), sel);
    assert_eq!(
        choice(&r, "sis_util"),
        0,
        "SIS stays in the target LLC and stacks"
    );
    assert_eq!(
        choice(&r, "sis_node"),
        6,
        "SIS_NODE finds the idle CPU in the sibling LLC"
    );
    assert_eq!(choice(&r, "full_scan"), 0);

    // Whole node 0 busy, node 1 idle: SIS_NODE must not cross the node boundary.
    let mut ev = ShadowEval::new(&header(t, true));
    ev.on_event(&switch(1_000, 0, 0, 10, 0));
    busy(&mut ev, 1_000, &[1, 2, 3, 4, 5, 6, 7]);
    let r = one_wakeup(&mut ev, &mut Joiner::new(), 10_000, (0, 20, 0, 0, 10), sel);
    assert_eq!(choice(&r, "sis_node"), 0);
    // sched_ext's built-in policy and bpfland's scan look for an idle CPU anywhere once the
    // node has none: crossing is their rule, not a bug.
    let anywhere = ["scx_builtin", "scx_builtin_nosib", "bpfland_scan"];
    for (name, cpu) in r.iter().filter(|(n, _)| !anywhere.contains(n)) {
        assert!(*cpu < 8, "{name} crossed into node 1 ({cpu})");
    }
    assert!(anywhere.iter().all(|n| choice(&r, n) >= 8));
}

#[test]
fn idler_llc_prefers_the_less_busy_llc() {
    // Waker on CPU 0 (LLC 0-3), prev CPU 5 (LLC 4-7), not sync: pref = prev, try = waker.
    // CPU 5 busy, no idle core anywhere needed (no SMT: every idle CPU is an idle core).
    let t = two_nodes();
    let sel = Sel {
        sync: false,
        nr_running: Some(1),
        nr_idle_scan: Some(4),
        has_idle_cores: Some(false),
        inputs: SelectInputs::default(),
    };
    let mut ev = ShadowEval::new(&header(t.clone(), true));
    ev.on_event(&switch(1_000, 0, 0, 10, 0));
    busy(&mut ev, 1_000, &[1, 2, 3, 4, 5, 6, 7]);
    let r = one_wakeup(&mut ev, &mut Joiner::new(), 10_000, (0, 20, 5, 5, 10), sel);
    assert_eq!(choice(&r, "idler_llc"), 5, "both LLCs full: prev, no scan");

    let mut ev = ShadowEval::new(&header(t, true));
    ev.on_event(&switch(1_000, 0, 0, 10, 0));
    busy(&mut ev, 1_000, &[1, 4, 5, 6, 7]);
    let r = one_wakeup(&mut ev, &mut Joiner::new(), 10_000, (0, 20, 5, 5, 10), sel);
    // An idle CPU (= idle core without SMT) in the waker's LLC: CPU 2.
    assert_eq!(choice(&r, "idler_llc"), 2);
}

#[test]
fn prev_only_agreement_equals_the_kernels_prev_share() {
    // 40 wakeups over smt8; the "kernel" puts every third one back on prev, others elsewhere.
    let mut ev = ShadowEval::new(&header(smt8(), true));
    let mut j = Joiner::new();
    let mut on_prev = 0u64;
    let mut ts = 1_000;
    for i in 0..40u32 {
        let w = i % 8;
        let prev = (i * 3) % 8;
        let chosen = if i % 3 == 0 {
            prev
        } else {
            (prev + 1 + i % 7) % 8
        };
        if chosen == prev {
            on_prev += 1;
        }
        let waker = 500 + i;
        ev.on_event(&switch(ts, w, 0, waker, 0));
        j.on_event(&switch(ts, w, 0, waker, 0));
        one_wakeup(
            &mut ev,
            &mut j,
            ts + 100,
            (w, 2000 + i, prev, chosen, waker),
            Sel::default(),
        );
        ev.on_event(&switch(ts + 200, w, waker, 0, 1));
        ts += 1_000;
    }
    assert_eq!(ev.evaluated(), 40);
    let v = json(&ev);
    let got = v["policies"]["prev_only"]["agreement"]
        .as_f64()
        .expect("agreement");
    assert!(
        (got - on_prev as f64 / 40.0).abs() < 1e-12,
        "{got} vs {on_prev}/40"
    );
    assert_eq!(v["policies"]["observed"]["agreement"], 1.0);
    assert_eq!(v["open_loop"], true);
}

#[test]
fn claimed_cpu_counts_busy_until_its_wakeup() {
    // Two wakers race for idle CPUs of smt8: the first select claims CPU 3; a second wakeup
    // decided before the first one's sched_wakeup must not see CPU 3 idle.
    let mut ev = ShadowEval::new(&header(smt8(), true));
    busy(&mut ev, 1_000, &[0, 1, 2, 4, 5, 6, 7]);
    let sel = Sel {
        nr_running: Some(1),
        nr_idle_scan: Some(8),
        has_idle_cores: Some(false),
        ..Sel::default()
    };
    ev.on_event(&Event::Waking(wake(10_000, 0, 20, 0, 100)));
    ev.on_event(&Event::Select(Box::new(select(
        10_010, 0, 20, 0, 3, 100, sel,
    ))));
    assert!(!ev.state().is_idle(3), "claimed by pid 20");
    ev.on_event(&Event::Wakeup(wake(10_050, 3, 20, 3, 100)));
    assert!(!ev.state().is_idle(3), "pid 20 queued there now");
    ev.on_event(&switch(10_060, 3, 0, 20, 0));
    ev.on_event(&switch(10_090, 3, 20, 0, 1));
    assert!(ev.state().is_idle(3));
}

#[test]
fn lost_events_do_not_keep_a_cpu_busy_forever() {
    let mut ev = ShadowEval::new(&header(smt8(), true));
    // A wakeup queues pid 20 on CPU 3, but its switch-in is lost; CPU 3 then goes idle (which
    // the kernel only does with an empty queue).
    ev.on_event(&switch(1_000, 3, 0, 30, 0));
    ev.on_event(&Event::Wakeup(wake(2_000, 3, 20, 3, 30)));
    ev.on_event(&switch(3_000, 3, 30, 0, 1));
    assert!(ev.state().is_idle(3));
    // A claim whose sched_wakeup is lost expires after CLAIM_MAX_NS (steps derived from the
    // constant: it was raised from 10 to 100 ms when TCG recordings showed 27 ms IPIs).
    ev.on_event(&Event::Waking(wake(4_000, 0, 21, 5, 10)));
    assert!(!ev.state().is_idle(5));
    let step = wakeviz_core::shadow::state::CLAIM_MAX_NS / 50_000;
    let mut ts = 4_000;
    for i in 0..70_000u32 {
        ts += step;
        ev.on_event(&switch(
            ts,
            7,
            if i % 2 == 0 { 0 } else { 40 },
            if i % 2 == 0 { 40 } else { 0 },
            1,
        ));
    }
    assert!(ev.state().is_idle(5), "stale claim released");
}

#[test]
fn tracepoint_only_mode_decides_at_waking_and_buckets_disagreements() {
    let mut ev = ShadowEval::new(&header(smt8(), false));
    let mut j = Joiner::new();
    ev.on_event(&switch(1_000, 0, 0, 10, 0));
    busy(&mut ev, 1_000, &[2, 3, 4, 5, 6, 7]);
    // Task 20 last ran on CPU 0 and lands on CPU 6 (busy): the shadow (idle sibling 1)
    // disagrees; without select inputs that is the tracepoint-only bucket.
    for e in [
        Event::Waking(wake(10_000, 0, 20, 0, 10)),
        Event::Migrate(wakeviz_core::event::Migrate {
            ts_ns: 10_010,
            cpu: 0,
            pid: 20,
            orig_cpu: 0,
            dest_cpu: 6,
        }),
        Event::Wakeup(wake(10_020, 6, 20, 6, 10)),
    ] {
        ev.on_event(&e);
        if let Some(p) = j.on_event(&e) {
            let _ = ev.on_placement(&p);
        }
    }
    assert_eq!(ev.evaluated(), 1);
    let v = json(&ev);
    assert_eq!(v["decision_time"], "sched_waking");
    assert_eq!(v["fidelity"]["policy"], "sis_util");
    assert_eq!(v["fidelity"]["agreement"], 0.0);
    assert_eq!(
        v["fidelity"]["disagreements"]["tracepoint_only_no_select_inputs"],
        1
    );
    assert_eq!(v["policies"]["sis_util"]["exact_inputs_pct"], 0.0);
    let text = wakeviz_core::analysis::report::shadow::text(&ev.report(None));
    assert!(text.contains("open-loop"), "{text}");
    assert!(text.contains("sis_util"));
}

/// A tracepoint-only wakeup of task 20, pinned to CPU 6 (busy) while CPU 7 is idle: woken
/// from CPU 0 with prev 6, and the kernel keeps it on 6; `inputs` are what the `sched_waking`
/// probe read, sent before the waking record. Returns the evaluator and the joined placement's
/// select.
fn pinned_tracepoint_wakeup(inputs: Option<SelectInputs>) -> (ShadowEval, Option<Select>) {
    let mut ev = ShadowEval::new(&header(smt8(), false));
    let mut j = Joiner::new();
    ev.on_event(&switch(1_000, 0, 0, 10, 0));
    busy(&mut ev, 1_000, &[1, 2, 3, 4, 5, 6]);
    let mut events = Vec::new();
    if let Some(i) = inputs {
        let mut s = select(9_990, 0, 20, 6, u32::MAX, 10, exact_sel(i));
        s.wake_flags = wf::AT_WAKING;
        events.push(Event::Select(Box::new(s)));
    }
    events.push(Event::Waking(wake(10_000, 0, 20, 6, 10)));
    events.push(Event::Wakeup(wake(10_020, 6, 20, 6, 10)));
    let mut joined = None;
    for e in &events {
        ev.on_event(e);
        if let Some(p) = j.on_event(e) {
            joined = Some(p.select);
            let _ = ev.on_placement(&p);
        }
    }
    assert_eq!(ev.evaluated(), 1);
    (ev, joined.expect("placed"))
}

#[test]
fn inputs_read_at_sched_waking_give_the_tracepoint_only_shadow_the_wakees_affinity() {
    let mut mask = [0u64; 4];
    mask[0] = 1 << 6;
    let pinned = SelectInputs {
        task_nr_cpus_allowed: Some(1),
        allowed: Some(mask),
        ..loads(100, 2000, 50)
    };
    // Without the inputs the shadow puts the pinned task on the idle sibling 7.
    let (ev, _) = pinned_tracepoint_wakeup(None);
    let v = json(&ev);
    assert_eq!(v["decision_time"], "sched_waking");
    assert_eq!(v["fidelity"]["agreement"], 0.0);
    assert_eq!(
        v["fidelity"]["disagreements"]["tracepoint_only_no_select_inputs"],
        1
    );
    // With them it keeps the task where it may run, as the kernel did; the record is no
    // select call: the placement joins without it and the decision stays tracepoint-only.
    let (ev, joined) = pinned_tracepoint_wakeup(Some(pinned));
    assert_eq!(joined, None);
    let v = json(&ev);
    assert_eq!(v["decision_time"], "sched_waking_with_inputs");
    assert_eq!(v["decisions_with_waking_inputs"], 1);
    assert_eq!(v["fidelity"]["agreement"], 1.0);
    assert_eq!(v["policies"]["sis_util"]["exact_inputs_pct"], 0.0);
    // Inputs of another task, or read on another CPU, are not this wakeup's.
    let mut other = Select {
        pid: 21,
        ..select(9_990, 0, 21, 6, u32::MAX, 10, exact_sel(pinned))
    };
    other.wake_flags = wf::AT_WAKING;
    let mut ev = ShadowEval::new(&header(smt8(), false));
    ev.on_event(&Event::Select(Box::new(other)));
    ev.on_event(&Event::Waking(wake(10_000, 0, 20, 6, 10)));
    assert_eq!(
        json(&ev)["decisions_with_waking_inputs"],
        serde_json::Value::Null
    );
}

/// Task 20 pinned to CPU 6 (busy, CPU 7 idle) and woken from CPU 0 four times, the probes
/// of `abi` sending the at-waking records `sent` says (`[pid, old CPU]` each: old CPU 6 a
/// record pinned to 6, another an unpinned one); `sent[i]` comes before waking `i`, `None` =
/// none sent.
/// Returns the wakings the shadow decided with inputs and the agreement.
fn pinned_repeats(abi: u32, wakings: [(u32, Option<[u32; 2]>); 4]) -> (u64, f64) {
    let mut h = header(smt8(), false);
    h.abi_version = abi;
    let mut ev = ShadowEval::new(&h);
    let mut j = Joiner::new();
    ev.on_event(&switch(1_000, 0, 0, 10, 0));
    busy(&mut ev, 1_000, &[1, 2, 3, 4, 5, 6]);
    let mut mask = [0u64; 4];
    mask[0] = 1 << 6;
    for (i, (prev, sent)) in wakings.into_iter().enumerate() {
        let t = 10_000 * (i as u64 + 1);
        let mut events = Vec::new();
        if let Some([pid, prev]) = sent {
            // The task woken here is 20, pinned to 6: a record with another old CPU is an
            // unpinned one (of 20, or of another task), one with old CPU 6 a pinned one.
            let pinned = prev == 6;
            let inputs = SelectInputs {
                task_nr_cpus_allowed: Some(if pinned { 1 } else { 8 }),
                allowed: pinned.then_some(mask),
                ..SelectInputs::default()
            };
            let mut s = select(t - 10, 0, pid, prev, u32::MAX, 10, exact_sel(inputs));
            s.wake_flags = wf::AT_WAKING;
            events.push(Event::Select(Box::new(s)));
        }
        events.push(Event::Waking(wake(t, 0, 20, prev, 10)));
        events.push(Event::Wakeup(wake(t + 20, 6, 20, 6, 10)));
        events.push(switch(t + 30, 6, 106, 20, 0));
        events.push(switch(t + 5_000, 6, 20, 106, 1));
        for e in &events {
            ev.on_event(e);
            if let Some(p) = j.on_event(e) {
                let _ = ev.on_placement(&p);
            }
        }
    }
    let v = json(&ev);
    let with = v["decisions_with_waking_inputs"].as_u64().unwrap_or(0);
    (with, v["fidelity"]["agreement"].as_f64().unwrap_or(-1.0))
}

#[test]
fn a_pinned_tasks_unsent_repeat_is_the_cpus_last_pinned_record_again() {
    let abi = wakeviz_common::PINNED_REPEATS_UNSENT_SINCE;
    let first = (6, Some([20, 6]));
    // One record, three repeats left unsent: every wakeup decided with the mask, kept on 6.
    assert_eq!(
        pinned_repeats(abi, [first, (6, None), (6, None), (6, None)]),
        (4, 1.0)
    );
    // Probes of an older ABI sent every record: a missing one is no repeat.
    let (with, agreement) = pinned_repeats(abi - 1, [first, (6, None), (6, None), (6, None)]);
    assert_eq!(with, 1);
    assert!(agreement < 1.0, "{agreement}");
    // The task's own unpinned record from the same CPU (its affinity widened) ends the run; a
    // new pinned record starts one.
    let other = (6, Some([20, 3]));
    assert_eq!(
        pinned_repeats(abi, [first, (6, None), other, (6, None)]).0,
        2
    );
    assert_eq!(
        pinned_repeats(abi, [first, other, (6, Some([20, 6])), (6, None)]).0,
        3
    );
    // Another task's record in another slot leaves the run as it is (pids 20, 21 and 29 share
    // no slot with 8 of them); so does an unpinned record of a pid whose slot holds another
    // pid (28 shares 20's); a pinned record of 28 takes 20's slot and ends the run.
    let pinned_21 = (6, Some([21, 6]));
    assert_eq!(
        pinned_repeats(abi, [first, pinned_21, (6, None), other]).0,
        2
    );
    assert_eq!(
        pinned_repeats(abi, [first, (6, Some([29, 3])), (6, None), (6, None)]).0,
        3
    );
    assert_eq!(
        pinned_repeats(abi, [first, (6, Some([28, 3])), (6, None), (6, None)]).0,
        3
    );
    assert_eq!(
        pinned_repeats(abi, [first, (6, Some([28, 6])), (6, None), (6, None)]).0,
        1
    );
    // A different old CPU would have been a different record: not a repeat.
    assert_eq!(
        pinned_repeats(abi, [first, (6, None), (5, None), (6, None)]).0,
        3
    );
}

#[test]
fn runnable_wakee_in_tracepoint_mode_is_not_a_placement() {
    let mut ev = ShadowEval::new(&header(smt8(), false));
    let mut j = Joiner::new();
    // Task 20 is preempted on CPU 2 (still runnable), then "woken" (ttwu_runnable).
    ev.on_event(&switch(1_000, 2, 0, 20, 0));
    ev.on_event(&switch(2_000, 2, 20, 30, 0));
    for e in [
        Event::Waking(wake(3_000, 0, 20, 2, 10)),
        Event::Wakeup(wake(3_010, 0, 20, 2, 10)),
    ] {
        ev.on_event(&e);
        if let Some(p) = j.on_event(&e) {
            let _ = ev.on_placement(&p);
        }
    }
    assert_eq!(ev.evaluated(), 0);
    assert_eq!(ev.excluded().no_placement, 1);
}

#[test]
fn json_has_every_policy_and_field() {
    let mut ev = ShadowEval::new(&header(two_nodes(), true));
    ev.on_event(&switch(1_000, 0, 0, 10, 0));
    one_wakeup(
        &mut ev,
        &mut Joiner::new(),
        10_000,
        (0, 20, 9, 9, 10),
        Sel::default(),
    );
    let v = json(&ev);
    for name in [
        "observed",
        "sis_util",
        "sis_prop",
        "wf_sync",
        "wf_sync_delayed",
        "sis_node",
        "full_scan",
        "prev_only",
        "idle_core_first",
        "sis_util_true_hint",
        "idler_llc",
    ] {
        let p = &v["policies"][name];
        for f in [
            "agreement",
            "idle_pct",
            "stacked_pct",
            "probes_mean",
            "probes_p50",
            "probes_p99",
            "est_scan_ns_mean",
            "migrations",
            "exact_inputs_pct",
        ] {
            assert!(!p[f].is_null(), "{name}.{f}");
        }
        for side in ["vs_waker", "vs_prev"] {
            for l in [
                "same_cpu",
                "smt_sibling",
                "same_llc",
                "same_node",
                "same_package",
                "cross_package",
            ] {
                assert!(p["placement"][side][l].is_u64(), "{name}.{side}.{l}");
            }
        }
    }
    assert!(v["fidelity"]["disagreements"].is_object());
}

/// A CPU claimed by a wakeup (`ttwu_pending`) is busy only while that wakeup is in flight.
/// Claims that outlived their wakeup once made most idle waker CPUs of the VM recordings look
/// busy (SIS_UTIL fidelity 58% instead of 98.7% on NPS1): an exec placement (no wakeup
/// follows), a select-path task's `sched_waking` held across its own long select, and a
/// wakeup whose `sched_wakeup` was never seen.
#[test]
fn claims_end_with_their_wakeup() {
    let mut ev = ShadowEval::new(&header(two_nodes(), true));
    let mut j = Joiner::new();
    let sel = Sel {
        nr_running: Some(0),
        nr_idle_scan: Some(3),
        has_idle_cores: Some(false),
        ..Sel::default()
    };
    let feed = |ev: &mut ShadowEval, j: &mut Joiner, e: Event| {
        ev.on_event(&e);
        if let Some(p) = j.on_event(&e) {
            let _ = ev.on_placement(&p);
        }
    };

    // 1. sched_exec on CPU 2 places the running task 30: no claim.
    feed(&mut ev, &mut j, switch(1_000, 2, 0, 30, 0));
    let mut exec = select(2_000, 2, 30, 2, 2, 30, sel);
    exec.wake_flags = wf::EXEC;
    feed(&mut ev, &mut j, Event::Select(Box::new(exec)));
    feed(&mut ev, &mut j, switch(3_000, 2, 30, 0, 1));
    // An interrupt on the idle CPU 2 wakes task 20, which last ran there: target idle.
    let v = one_wakeup(&mut ev, &mut j, 10_000, (2, 20, 2, 2, 0), sel);
    assert_eq!(choice(&v, "sis_util"), 2, "exec left a claim on CPU 2");

    // 2. Task 40 is known to take the select path; its next sched_waking does not claim its
    //    old CPU 1 while its select runs, so a wakeup decided meanwhile still sees 1 idle.
    one_wakeup(&mut ev, &mut j, 20_000, (5, 40, 1, 1, 0), sel);
    feed(&mut ev, &mut j, switch(21_000, 1, 0, 40, 0));
    feed(&mut ev, &mut j, switch(22_000, 1, 40, 0, 1));
    feed(&mut ev, &mut j, Event::Waking(wake(30_000, 6, 40, 1, 0)));
    let v = one_wakeup(&mut ev, &mut j, 31_000, (1, 21, 1, 1, 0), sel);
    assert_eq!(choice(&v, "sis_util"), 1, "a pending select claimed CPU 1");
    feed(
        &mut ev,
        &mut j,
        Event::Select(Box::new(select(40_000, 6, 40, 1, 1, 0, sel))),
    );
    feed(&mut ev, &mut j, Event::Wakeup(wake(40_100, 1, 40, 1, 0)));
    feed(&mut ev, &mut j, switch(40_200, 1, 0, 40, 0));
    feed(&mut ev, &mut j, switch(40_300, 1, 40, 0, 1));

    // 3. A task never seen before is woken on CPU 3 and its sched_wakeup is lost: the claim
    //    expires after CLAIM_MAX_NS (100 ms) instead of lasting for the rest of the stream.
    feed(&mut ev, &mut j, Event::Waking(wake(50_000, 7, 50, 3, 0)));
    let v = one_wakeup(&mut ev, &mut j, 200_000_000, (3, 22, 3, 3, 0), sel);
    assert_eq!(
        choice(&v, "sis_util"),
        3,
        "a lost wakeup kept CPU 3 claimed"
    );
}

/// The `shadow` section of `--report json`: the typed report, serialized.
fn json(ev: &ShadowEval) -> serde_json::Value {
    serde_json::to_value(ev.report(None)).expect("shadow report serializes")
}

// ---- ABI-2 inputs: WA_WEIGHT, delayed-dequeue sync, per-CPU kthread, affinity -------------

/// two_nodes with the waker (pid 10) on CPU 0, the wakee's prev CPU 4 busy, and one idle CPU
/// in each of their LLCs (2 and 6): the affine target decides which one SIS finds.
fn busy_w0_p4(features: Option<&str>) -> ShadowEval {
    let mut h = header(two_nodes(), true);
    h.run.sched_features = features.map(|f| f.split_whitespace().map(str::to_string).collect());
    let mut ev = ShadowEval::new(&h);
    ev.on_event(&switch(1_000, 0, 0, 10, 0));
    busy(&mut ev, 1_000, &[1, 3, 4, 5, 7]);
    busy(&mut ev, 1_000, &(8..16).collect::<Vec<_>>());
    ev
}

fn loads(waker: u32, prev: u32, task: u32) -> SelectInputs {
    SelectInputs {
        waker_load: Some(waker),
        prev_load: Some(prev),
        waker_capacity: Some(1024),
        prev_capacity: Some(1024),
        task_h_load: Some(task),
        waker_h_load: Some(0),
        ..Default::default()
    }
}

fn exact_sel(inputs: SelectInputs) -> Sel {
    Sel {
        sync: false,
        nr_running: Some(1),
        nr_idle_scan: Some(4),
        has_idle_cores: Some(false),
        inputs,
    }
}

#[test]
fn wa_weight_moves_the_target_by_the_loads() {
    let run = |features: Option<&str>, i: SelectInputs| {
        let mut ev = busy_w0_p4(features);
        let r = one_wakeup(
            &mut ev,
            &mut Joiner::new(),
            10_000,
            (0, 20, 4, 2, 10),
            exact_sel(i),
        );
        choice(&r, "sis_util")
    };
    // this_eff = (1000 + 500) * 100 * 1024 = 153.6e6 < prev_eff = (3000 - 500) * 108 * 1024
    // = 276.5e6 (WA_BIAS: 100 + (117 - 100) / 2 = 108): the waker's side, LLC 0-3, CPU 2.
    assert_eq!(run(None, loads(1000, 3000, 500)), 2);
    // Reversed loads: (3000 + 500) * 100 > (1000 - 500) * 108: prev's LLC, CPU 6.
    assert_eq!(run(None, loads(3000, 1000, 500)), 6);
    // WA_BIAS decides: (1350 + 500) * 100 = 185000 < (2300 - 500) * 108 = 194400 -> waker;
    // without the bias 1850 > 1800 -> prev.
    assert_eq!(run(None, loads(1350, 2300, 500)), 2);
    assert_eq!(
        run(
            Some("SIS_UTIL WA_WEIGHT NO_WA_BIAS"),
            loads(1350, 2300, 500)
        ),
        6
    );
    // WA_WEIGHT off, or no loads recorded (an older recording): prev kept.
    assert_eq!(
        run(
            Some("SIS_UTIL NO_WA_WEIGHT WA_BIAS"),
            loads(1000, 3000, 500)
        ),
        6
    );
    assert_eq!(run(None, SelectInputs::default()), 6);
    // Capacity scales the other side: prev's CPU at half capacity makes this_eff half.
    let mut i = loads(2000, 1800, 100);
    assert_eq!(run(None, i), 6, "(2100 * 100) vs (1700 * 108): prev");
    i.prev_capacity = Some(512);
    assert_eq!(
        run(None, i),
        2,
        "(2100 * 100 * 512) < (1700 * 108 * 1024): waker"
    );
}

/// `policy`'s CPU for one exact wakeup on two_nodes under `features`: the waker (pid 10) on
/// CPU 0, prev CPU 4 idle or busy, one idle CPU in each of their LLCs (2 and 6), the loads
/// `l` (waker's CPU, prev's CPU, wakee).
fn w0_p4_choice(features: &str, prev_idle: bool, l: (u32, u32, u32), policy: &str) -> u32 {
    let mut h = header(two_nodes(), true);
    h.run.sched_features = Some(features.split_whitespace().map(str::to_string).collect());
    let mut ev = ShadowEval::new(&h);
    ev.on_event(&switch(1_000, 0, 0, 10, 0));
    let busy_cpus: &[u32] = if prev_idle {
        &[1, 3, 5, 7]
    } else {
        &[1, 3, 4, 5, 7]
    };
    busy(&mut ev, 1_000, busy_cpus);
    busy(&mut ev, 1_000, &(8..16).collect::<Vec<_>>());
    let r = one_wakeup(
        &mut ev,
        &mut Joiner::new(),
        10_000,
        (0, 20, 4, 2, 10),
        exact_sel(loads(l.0, l.1, l.2)),
    );
    choice(&r, policy)
}

#[test]
fn without_wa_idle_an_idle_prev_does_not_decide_and_wa_weight_does() {
    // As busy_w0_p4, but prev's CPU 4 is idle: `wake_affine_idle` rule 3 keeps the wakee
    // there, and without WA_IDLE the loads (the waker's side lighter) pull it to LLC 0-3.
    let run = |features: &str| w0_p4_choice(features, true, (1000, 3000, 500), "sis_util");
    assert_eq!(run("SIS_UTIL WA_IDLE WA_WEIGHT WA_BIAS"), 4);
    assert_eq!(run("SIS_UTIL NO_WA_IDLE WA_WEIGHT WA_BIAS"), 2);
    // Neither step: `wake_affine` returns prev.
    assert_eq!(run("SIS_UTIL NO_WA_IDLE NO_WA_WEIGHT WA_BIAS"), 4);
}

/// The flipping policies decide each wakeup as the kernel model does with their feature set
/// the other way, and on these wakeups the flip changes the answer.
#[test]
fn flipping_policies_decide_as_the_model_under_the_other_setting() {
    let run = w0_p4_choice;
    for (a, b, policy) in [
        (
            "SIS_UTIL WA_IDLE WA_WEIGHT WA_BIAS",
            "SIS_UTIL NO_WA_IDLE WA_WEIGHT WA_BIAS",
            "flip_wa_idle",
        ),
        (
            "SIS_UTIL WA_IDLE WA_WEIGHT WA_BIAS",
            "SIS_UTIL WA_IDLE NO_WA_WEIGHT WA_BIAS",
            "flip_wa_weight",
        ),
        (
            "SIS_UTIL NO_WA_IDLE WA_WEIGHT WA_BIAS",
            "SIS_UTIL NO_WA_IDLE NO_WA_WEIGHT WA_BIAS",
            "flip_wa_weight",
        ),
    ] {
        let mut changed = 0;
        for prev_idle in [false, true] {
            for l in [(1000, 3000, 500), (3000, 1000, 500)] {
                let (ma, mb) = (
                    run(a, prev_idle, l, "sis_util"),
                    run(b, prev_idle, l, "sis_util"),
                );
                assert_eq!(
                    run(a, prev_idle, l, policy),
                    mb,
                    "{policy} on {a}, {prev_idle} {l:?}"
                );
                assert_eq!(
                    run(b, prev_idle, l, policy),
                    ma,
                    "{policy} on {b}, {prev_idle} {l:?}"
                );
                changed += usize::from(ma != mb);
            }
        }
        assert!(changed > 0, "{a} -> {b}: the flip changed no answer");
    }
}

#[test]
fn sync_wakeup_with_one_delayed_task_counts_the_waker_alone_under_delay_dequeue() {
    // The waker's rq holds the waker and one delayed (sleeping, not yet dequeued) task.
    let sel = Sel {
        sync: true,
        nr_running: Some(2),
        inputs: SelectInputs {
            waker_h_nr_delayed: Some(1),
            ..Default::default()
        },
        ..exact_sel(SelectInputs::default())
    };
    let run = |features: &str| {
        let mut ev = busy_w0_p4(Some(features));
        one_wakeup(&mut ev, &mut Joiner::new(), 10_000, (0, 20, 4, 2, 10), sel)
    };
    // DELAY_DEQUEUE: 2 - 1 == 1, the sync rule takes the waker's side (CPU 2 of its LLC).
    let r = run("SIS_UTIL DELAY_DEQUEUE WA_WEIGHT");
    assert_eq!(choice(&r, "sis_util"), 2);
    assert_eq!(choice(&r, "wf_sync_delayed"), 0, "queued behind the waker");
    assert_eq!(choice(&r, "wf_sync"), 2, "raw count 2: no wake-local");
    // Without the feature the raw count (2) fails the test; no loads, so prev is kept.
    let r = run("SIS_UTIL NO_DELAY_DEQUEUE WA_WEIGHT");
    assert_eq!(choice(&r, "sis_util"), 6);
}

#[test]
fn a_per_cpu_kthread_waker_stacks_the_wakee_on_prev() {
    // W == P == 0, the kthread alone there; CPU 1 (same LLC) idle.
    let run = |kthread: bool, nr_cpus: u32| {
        let mut ev = ShadowEval::new(&header(two_nodes(), true));
        ev.on_event(&switch(1_000, 0, 0, 10, 0));
        busy(&mut ev, 1_000, &[2, 3]);
        let i = SelectInputs {
            waker_kthread: Some(kthread),
            waker_nr_cpus_allowed: Some(nr_cpus),
            ..Default::default()
        };
        let r = one_wakeup(
            &mut ev,
            &mut Joiner::new(),
            10_000,
            (0, 20, 0, 0, 10),
            exact_sel(i),
        );
        (
            choice(&r, "sis_util"),
            choice(&r, "sis_prop"),
            choice(&r, "full_scan"),
        )
    };
    assert_eq!(run(true, 1), (0, 0, 0), "is_per_cpu_kthread: stack on prev");
    assert_eq!(
        run(false, 1),
        (1, 1, 1),
        "a user task: the scan finds CPU 1"
    );
    assert_eq!(
        run(true, 16),
        (1, 1, 1),
        "an unbound kthread is not per-CPU"
    );
}

#[test]
fn a_task_restricted_to_two_cpus_is_never_placed_elsewhere() {
    // Allowed {5, 9}: one CPU in LLC 4-7 (node 0), one in LLC 8-11 (node 1).
    let mut mask = [0u64; 4];
    mask[0] = (1 << 5) | (1 << 9);
    let allowed = SelectInputs {
        task_nr_cpus_allowed: Some(2),
        allowed: Some(mask),
        ..loads(100, 2000, 50)
    };
    let mut cases = 0;
    for w in [0u32, 5, 9, 12] {
        for prev in [5u32, 9] {
            for idle_set in [&[][..], &[1, 2, 6, 10][..], &[9][..], &[5, 9][..]] {
                for sync in [false, true] {
                    let mut ev = ShadowEval::new(&header(two_nodes(), true));
                    let busy_cpus: Vec<u32> = (0..16).filter(|c| !idle_set.contains(c)).collect();
                    busy(&mut ev, 1_000, &busy_cpus);
                    let sel = Sel {
                        sync,
                        ..exact_sel(allowed)
                    };
                    let r = one_wakeup(
                        &mut ev,
                        &mut Joiner::new(),
                        10_000,
                        (w, 20, prev, 9, 100 + w),
                        sel,
                    );
                    for (name, cpu) in &r {
                        assert!(
                            cpu == &5 || cpu == &9,
                            "{name} chose {cpu} (w {w}, prev {prev}, idle {idle_set:?}, sync {sync})"
                        );
                    }
                    cases += 1;
                }
            }
        }
    }
    assert_eq!(cases, 64);
    // The scan skips disallowed CPUs: W = 0 (not allowed, so no affine step), prev 5 busy,
    // idle 6 and 9: SIS scans LLC 4-7 & {5, 9} = {5}, finds nothing, stays on prev (not 6).
    let mut ev = ShadowEval::new(&header(two_nodes(), true));
    let busy_cpus: Vec<u32> = (0..16).filter(|c| ![6, 9].contains(c)).collect();
    busy(&mut ev, 1_000, &busy_cpus);
    let r = one_wakeup(
        &mut ev,
        &mut Joiner::new(),
        10_000,
        (0, 20, 5, 5, 100),
        exact_sel(allowed),
    );
    assert_eq!(choice(&r, "sis_util"), 5);
    // Unrestricted, with loads that keep prev's side, the same scan finds the idle CPU 6.
    let mut ev = ShadowEval::new(&header(two_nodes(), true));
    busy(&mut ev, 1_000, &busy_cpus);
    let r = one_wakeup(
        &mut ev,
        &mut Joiner::new(),
        10_000,
        (0, 20, 5, 5, 100),
        exact_sel(loads(3000, 100, 50)),
    );
    assert_eq!(choice(&r, "sis_util"), 6);
}

// ---- ABI-3 inputs: wake_wide()'s record_wakee() state --------------------------------------

fn flips(waker: u32, wakee: u32, age_jiffies: u32, last_is_task: bool) -> SelectInputs {
    SelectInputs {
        flips: Some(WakeeFlips {
            waker,
            wakee,
            waker_decay_jiffies: 1_000,
            jiffies: 1_000 + age_jiffies,
            waker_last_wakee_is_task: last_is_task,
        }),
        ..Default::default()
    }
}

/// A sync wakeup from a lone waker on CPU 0 of a task last on busy CPU 4 (busy_w0_p4): not
/// wide, the sync rule pulls it to the waker's LLC (idle CPU 2); wide, it stays in prev's LLC
/// (idle CPU 6). Returns (sis_util's choice, the fidelity JSON) with the kernel at `kernel`.
fn wide_case(i: SelectInputs, kernel: u32) -> (u32, serde_json::Value) {
    let mut ev = busy_w0_p4(None);
    let sel = Sel {
        sync: true,
        ..exact_sel(i)
    };
    let r = one_wakeup(
        &mut ev,
        &mut Joiner::new(),
        10_000,
        (0, 20, 4, kernel, 10),
        sel,
    );
    (choice(&r, "sis_util"), json(&ev)["fidelity"].clone())
}

#[test]
fn read_wakee_flips_decide_wake_wide() {
    // wake_wide(): slave = min, master = max; wide iff slave >= llc_size (4) and
    // master >= slave * 4. The waker's count is the read one after record_wakee(p): +1 for a
    // new wakee, halved first when the decay stamp is over HZ (250 assumed) jiffies old.
    // 30 + 1 = 31 >= 5 * 4, 5 >= 4: wide, prev's LLC.
    assert_eq!(wide_case(flips(30, 5, 10, false), 6).0, 6);
    // The wakee's inherited 3 < 4: not wide, the sync pull.
    assert_eq!(wide_case(flips(30, 3, 10, false), 2).0, 2);
    // Decay: 30 >> 1 = 15, + 1 = 16 < 20: not wide.
    assert_eq!(wide_case(flips(30, 5, 300, false), 2).0, 2);
    // The boundary, and last_wakee == p counting no flip: 19 + 1 = 20 >= 20 wide; 19 not.
    assert_eq!(wide_case(flips(19, 5, 10, false), 6).0, 6);
    assert_eq!(wide_case(flips(19, 5, 10, true), 2).0, 2);
}

#[test]
fn unread_inherited_flips_are_named_in_the_fidelity_buckets() {
    // The kernel kept the task in prev's LLC (its wakee_flips inherited at fork); the replay
    // knows no flips for either task, so the shadow pulls it to the waker: a disagreement
    // the classifier names, and none once the flips are read.
    let (shadow, f) = wide_case(SelectInputs::default(), 6);
    assert_eq!(shadow, 2);
    assert_eq!(f["agreement"], 0.0, "{f}");
    assert_eq!(f["disagreements"]["wake_wide_flips_unknown"], 1, "{f}");
    let (shadow, f) = wide_case(flips(30, 5, 10, false), 6);
    assert_eq!(shadow, 6);
    assert_eq!(f["disagreements"]["wake_wide_flips_unknown"], 0, "{f}");
    assert_eq!(f["agreement"], 1.0, "{f}");
}

/// A kernel without SIS_UTIL stops updating `nr_idle_scan` (`update_idle_cpu_scan()` returns
/// first thing): the value read there is stale, so the SIS_UTIL policy predicting the flip uses
/// its own emulation; with SIS_UTIL on, the read value is the budget.
#[test]
fn a_stale_nr_idle_scan_is_not_an_input_without_sis_util() {
    let run = |features: &str| {
        let mut ev = busy_w0_p4(Some(features));
        let mut sel = exact_sel(SelectInputs::default());
        sel.nr_idle_scan = Some(0);
        let r = one_wakeup(&mut ev, &mut Joiner::new(), 10_000, (0, 20, 4, 2, 10), sel);
        choice(&r, "sis_util")
    };
    assert_eq!(
        run("SIS_UTIL WA_WEIGHT WA_BIAS"),
        4,
        "budget 0: no scan, the target"
    );
    assert_eq!(
        run("NO_SIS_UTIL WA_WEIGHT WA_BIAS"),
        6,
        "the emulated budget scans prev's LLC"
    );
}

/// A tracepoint-only wakeup of task 20 (prev CPU 4, busy) by task 10 on CPU 0, alone on its
/// run queue; the kernel placed it on CPU 2 (the waker's LLC). `flags` are the at-waking
/// record's wake-flag bits beside [`wf::AT_WAKING`]: what the probe read from the waker's stack.
fn stack_sync_wakeup(flags: u32) -> serde_json::Value {
    // busy_w0_p4's machine, captured without the select probe.
    let mut ev = ShadowEval::new(&header(two_nodes(), false));
    ev.on_event(&switch(1_000, 0, 0, 10, 0));
    busy(&mut ev, 1_000, &[1, 3, 4, 5, 7]);
    busy(&mut ev, 1_000, &(8..16).collect::<Vec<_>>());
    let mut j = Joiner::new();
    // The loads favour prev's side: without WF_SYNC, WA_WEIGHT keeps LLC 4-7 (CPU 6).
    let mut s = select(
        9_990,
        0,
        20,
        4,
        u32::MAX,
        10,
        exact_sel(loads(3000, 1000, 500)),
    );
    s.wake_flags = wf::AT_WAKING | flags;
    for e in [
        Event::Select(Box::new(s)),
        Event::Waking(wake(10_000, 0, 20, 4, 10)),
        Event::Migrate(wakeviz_core::event::Migrate {
            ts_ns: 10_010,
            cpu: 0,
            pid: 20,
            orig_cpu: 4,
            dest_cpu: 2,
        }),
        Event::Wakeup(wake(10_020, 2, 20, 2, 10)),
    ] {
        ev.on_event(&e);
        if let Some(p) = j.on_event(&e) {
            let _ = ev.on_placement(&p);
        }
    }
    assert_eq!(ev.evaluated(), 1);
    json(&ev)
}

#[test]
fn wf_sync_read_from_the_wakers_stack_decides_a_tracepoint_only_wakeup() {
    // Sync from the stack: wake_affine_idle takes the waker's CPU (alone on its rq), SIS finds
    // CPU 2 in its LLC, as the kernel did; the WF_SYNC policies have a row.
    let v = stack_sync_wakeup(wf::FROM_STACK | wf::SYNC);
    assert_eq!(v["decisions_with_stack_sync"], 1);
    assert_eq!(v["fidelity"]["agreement"], 1.0);
    assert_eq!(
        v["policies"]["wf_sync"]["cannot_differ"],
        serde_json::Value::Null
    );
    // Read, and not sync: WA_WEIGHT takes prev's LLC; the disagreement is no longer put down
    // to unknown wake flags.
    let v = stack_sync_wakeup(wf::FROM_STACK);
    assert_eq!(v["fidelity"]["agreement"], 0.0);
    assert_eq!(
        v["fidelity"]["disagreements"]["tracepoint_only_no_wake_flags"],
        0
    );
    // Not read (an ABI-4 record): the flags stay unknown, whatever the SYNC bit says.
    let v = stack_sync_wakeup(wf::SYNC);
    assert_eq!(v["decisions_with_stack_sync"], serde_json::Value::Null);
    assert_eq!(
        v["fidelity"]["disagreements"]["tracepoint_only_no_wake_flags"],
        1
    );
    assert!(v["policies"]["wf_sync"]["cannot_differ"].is_string());
}
