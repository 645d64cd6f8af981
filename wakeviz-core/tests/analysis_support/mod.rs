//! Hand-built event streams for the analysis tests.
#![allow(dead_code)]
use wakeviz_core::{
    event::{Comm, Event, Select, Switch, TaskName, Wake},
    format::{Header, ProbeMode, ProbeState, ProbeStatus, ScanSource},
    source::Batch,
    topology::{Topology, fixture},
};

pub fn topology(name: &str) -> Topology {
    fixture::named_topology(name).unwrap()
}

pub fn header(name: &str, scan: ScanSource) -> Header {
    let probe = |n: &str, ok: bool| ProbeStatus {
        name: n.into(),
        mode: Some(if n == "select_task_rq_fair" {
            ProbeMode::Fentry
        } else {
            ProbeMode::TpBtf
        }),
        state: if ok {
            ProbeState::Attached
        } else {
            ProbeState::Unavailable("test".into())
        },
        fallbacks: vec![],
    };
    let with_select = scan != ScanSource::None;
    Header {
        format_version: 1,
        abi_version: 1,
        tool_version: "test".into(),
        kernel_release: "6.18.0-test".into(),
        hostname: "fixture".into(),
        realtime_offset_ns: 0,
        clocks: None,
        scan_points: None,
        start_ts_ns: 0,
        probes: vec![
            probe("sched_waking", true),
            probe("sched_wakeup", true),
            probe("sched_switch", true),
            probe("select_task_rq_fair", with_select),
        ],
        scan_source: scan,
        topology: topology(name),
        ringbuf_bytes: 1 << 20,
        comm_redacted: false,
        cpu_vendor: None,
        notes: vec![],
        run: Default::default(),
    }
}

/// One wakeup as the probes would report it.
#[derive(Clone, Copy, Debug)]
pub struct W {
    pub ts: u64,
    pub waker_cpu: u32,
    pub waker_pid: u32,
    pub pid: u32,
    pub prev: u32,
    pub chosen: u32,
    /// select_task_rq_fair duration (ns), when the function probe saw it.
    pub select_ns: Option<u64>,
    /// sched_wakeup -> switch-in (ns), when the task got to run.
    pub run_after_ns: Option<u64>,
    /// The debug-info probes' scan and its time, when they watched the call.
    pub scan: Option<(wakeviz_core::event::ScanMeasure, Option<u32>)>,
}

impl W {
    pub fn new(ts: u64, waker_cpu: u32, pid: u32, prev: u32, chosen: u32) -> Self {
        Self {
            ts,
            waker_cpu,
            waker_pid: 1,
            pid,
            prev,
            chosen,
            select_ns: None,
            run_after_ns: None,
            scan: None,
        }
    }

    /// Watched by the scan probes: `cpus` idle tests on `path`, timed `ns` when a scan ran.
    pub fn scanned(mut self, cpus: u16, path: u16, ns: Option<u32>) -> Self {
        self.scan = Some((wakeviz_core::event::ScanMeasure { cpus, path }, ns));
        self
    }

    pub fn select(mut self, ns: u64) -> Self {
        self.select_ns = Some(ns);
        self
    }

    pub fn runs_after(mut self, ns: u64) -> Self {
        self.run_after_ns = Some(ns);
        self
    }

    pub fn events(&self) -> Vec<Event> {
        let wake = |ts, cpu| Wake {
            ts_ns: ts,
            cpu,
            pid: self.pid,
            target_cpu: self.prev,
            waker_pid: self.waker_pid,
            prio: 120,
        };
        let mut v = vec![Event::Waking(wake(self.ts, self.waker_cpu))];
        let mut t = self.ts + 100;
        if let Some(ns) = self.select_ns {
            v.push(Event::Select(Box::new(Select {
                ts_ns: t + ns,
                entry_ts_ns: t,
                cpu: self.waker_cpu,
                pid: self.pid,
                prev_cpu: self.prev,
                wake_flags: 0x08,
                chosen_cpu: self.chosen,
                waker_pid: self.waker_pid,
                waker_nr_running: None,
                nr_idle_scan: None,
                has_idle_cores: None,
                prev_nr_idle_scan: None,
                prev_has_idle_cores: None,
                idle_scan_ns: self.scan.and_then(|s| s.1),
                scan: self.scan.map(|s| s.0),
                inputs: Default::default(),
            })));
            t += ns + 100;
        }
        v.push(Event::Wakeup(Wake {
            target_cpu: self.chosen,
            ..wake(t, self.chosen)
        }));
        if let Some(ns) = self.run_after_ns {
            v.push(Event::Switch(Switch {
                ts_ns: t + ns,
                cpu: self.chosen,
                prev_pid: 0,
                next_pid: self.pid,
                prev_state: 0,
                prev_prio: 120,
                next_prio: 120,
            }));
        }
        v
    }
}

pub fn batch(ws: &[W]) -> Batch {
    Batch {
        events: ws.iter().flat_map(W::events).collect(),
        ..Batch::default()
    }
}

pub fn names(list: &[(u32, &str)]) -> Vec<TaskName> {
    list.iter()
        .map(|&(pid, c)| TaskName {
            pid,
            comm: Comm::new(c),
            tgid: 0,
            cgroup: 0,
        })
        .collect()
}

/// `wakeviz --replay FILE --report json`, minus the binary's own wrapping: the whole recording
/// through `ReplaySource` into `Analysis` with every shadow policy. Panics on a warning (the
/// recordings the goldens pin are intact).
pub fn replay_report(path: &std::path::Path) -> serde_json::Value {
    replay_report_keeping(path, |_| true)
}

/// [`replay_report`] of the events `keep` keeps.
pub fn replay_report_keeping(
    path: &std::path::Path,
    keep: impl Fn(&Event) -> bool,
) -> serde_json::Value {
    fold(path, keep).report_json()
}

/// The snapshot of the whole recording, every shadow policy on.
pub fn replay_snapshot(path: &std::path::Path) -> wakeviz_core::analysis::Snapshot {
    fold(path, |_| true).snapshot()
}

/// The recording's events that `keep` keeps, folded through `ReplaySource` into `Analysis`.
fn fold(path: &std::path::Path, keep: impl Fn(&Event) -> bool) -> wakeviz_core::analysis::Analysis {
    use wakeviz_core::source::{EventSource as _, Poll, ReplaySource};
    let mut src = ReplaySource::open(path).expect("open");
    let mut an = wakeviz_core::analysis::Analysis::new(src.header());
    loop {
        match src.poll(std::time::Duration::ZERO).expect("poll") {
            Poll::Batch(mut b) => {
                b.events.retain(&keep);
                an.on_batch(&b);
            }
            Poll::End => break,
            Poll::Pending => unreachable!("a replay never waits"),
        }
    }
    assert!(src.warnings().is_empty(), "{:?}", src.warnings());
    an
}
