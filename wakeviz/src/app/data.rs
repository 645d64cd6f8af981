//! The dashboard's side of the data: the shared [`Analysis`] fold plus what only the UI needs
//! (per-CPU landing counts for the topology map, the shadow scoreboard rows, event rates), and
//! the [`Snapshot`] the views draw from. Everything here is a function of the event stream, so
//! a replay shows what the live view showed at that point of the trace.
use std::{
    collections::VecDeque,
    sync::{Arc, Mutex, MutexGuard},
};

use wakeviz_core::{
    analysis::{Analysis, Filter, ShadowSink, Snapshot},
    event::{Event, TaskTable},
    format::Header,
    join::Placement,
    shadow::{
        Excluded, PolicyRow, ShadowEval,
        metrics::{Outcome, PolicyMetrics},
    },
    source::Batch,
    topology::LevelMap,
};

/// Forwards the fold's events and placements to the shadow evaluator, and keeps the batch's
/// placements for the per-CPU counts (so the UI does not run a second join) and, while a task
/// filter is set, each policy's answer for them (for the filtered scoreboard).
struct Tap {
    shadow: ShadowEval,
    placements: Vec<(Placement, Option<Vec<Outcome>>)>,
    /// Keep the policies' answers (only while filtering: it allocates per placement).
    outcomes: bool,
}

/// Shared between the [`Analysis`] (which owns a boxed [`ShadowSink`]) and [`Data`], which
/// reads the scoreboard rows; one thread uses both, so the lock is never contended.
#[derive(Clone)]
struct SharedTap(Arc<Mutex<Tap>>);

impl SharedTap {
    fn lock(&self) -> MutexGuard<'_, Tap> {
        // A panic while holding the lock already tore the UI down; the data is still usable.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl ShadowSink for SharedTap {
    fn on_event(&mut self, e: &Event) {
        self.lock().shadow.on_event(e);
    }

    fn on_placement(&mut self, p: &Placement) {
        let mut t = self.lock();
        t.shadow.on_placement(p);
        // The evaluator scored this placement (it was not excluded) if it is now the last one.
        let outcomes = if t.outcomes {
            t.shadow
                .last_outcomes()
                .filter(|(last, _)| last == p)
                .map(|(_, o)| o.into_iter().map(|(_, o)| o).collect())
        } else {
            None
        };
        t.placements.push((*p, outcomes));
    }

    fn report_json(&self) -> serde_json::Value {
        self.lock().shadow.report_json()
    }

    fn report_text(&self) -> String {
        self.lock().shadow.report_text()
    }
}

/// The scoreboard as the shadow view shows it.
#[derive(Clone, Debug, Default)]
pub struct ShadowView {
    pub rows: Vec<PolicyRow>,
    pub fidelity: Option<f64>,
    pub fidelity_policy: &'static str,
    pub evaluated: u64,
    pub excluded: Excluded,
    pub per_probe_ns: f64,
    /// The rows cover only the filtered tasks (the evaluator itself always follows every
    /// task: it needs the whole machine's state).
    pub filtered: bool,
}

/// Event counts at a point of stream time, for rates.
#[derive(Clone, Copy, Debug)]
struct Sample {
    ts: u64,
    counts: [u64; 6],
}

/// Rates are taken over at least this much stream time (or everything, when less was seen).
const RATE_SPAN_NS: u64 = 1_000_000_000;

pub struct Data {
    header: Header,
    analysis: Analysis,
    tap: SharedTap,
    levels: LevelMap,
    filter: Option<Filter>,
    /// Per policy (registry order), over the filtered tasks' placements.
    filtered_shadow: Vec<PolicyMetrics>,
    samples: VecDeque<Sample>,
    /// Display figures, refreshed by [`Data::refresh`].
    pub snap: Snapshot,
    pub shadow: ShadowView,
    /// Events per second of stream time, per kind.
    pub rates: [f64; 6],
    dirty: bool,
}

fn fresh(header: &Header, filter: Option<&Filter>) -> (Analysis, SharedTap) {
    let mut a = Analysis::new(header);
    let tap = SharedTap(Arc::new(Mutex::new(Tap {
        shadow: ShadowEval::new(header),
        placements: Vec::new(),
        outcomes: filter.is_some(),
    })));
    a.set_shadow(Some(Box::new(tap.clone())));
    if filter.is_some() {
        a.set_filter(filter.cloned());
    }
    (a, tap)
}

impl Data {
    pub fn new(header: &Header) -> Self {
        let (analysis, tap) = fresh(header, None);
        let snap = analysis.snapshot();
        Self {
            levels: LevelMap::new(&header.topology),
            header: header.clone(),
            analysis,
            tap,
            filter: None,
            filtered_shadow: Vec::new(),
            samples: VecDeque::new(),
            snap,
            shadow: ShadowView::default(),
            rates: [0.0; 6],
            dirty: true,
        }
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    pub fn filter(&self) -> Option<&Filter> {
        self.filter.as_ref()
    }

    /// Folds one batch. Cost: the analysis fold plus one array update per placement.
    pub fn on_batch(&mut self, b: &Batch) {
        self.analysis.on_batch(b);
        let mut t = self.tap.lock();
        let tasks = self.analysis.tasks();
        for (p, outcomes) in t.placements.drain(..) {
            if p.new_task || !matches(self.filter.as_ref(), p.pid, tasks) {
                continue;
            }
            if let Some(o) = outcomes {
                if self.filtered_shadow.len() != o.len() {
                    self.filtered_shadow = vec![PolicyMetrics::default(); o.len()];
                }
                for (m, o) in self.filtered_shadow.iter_mut().zip(&o) {
                    let w = self.levels.level(p.waker_cpu, o.cpu);
                    let v = self.levels.level(p.prev_cpu, o.cpu);
                    m.record(o, p.chosen_cpu, p.prev_cpu, w, v);
                }
            }
        }
        drop(t);
        self.dirty = true;
    }

    /// Restricts every view to matching wakees; the filtered figures restart from zero.
    pub fn set_filter(&mut self, f: Option<Filter>) {
        self.analysis.set_filter(f.clone());
        self.tap.lock().outcomes = f.is_some();
        self.filtered_shadow.clear();
        self.filter = f;
        self.dirty = true;
    }

    /// Starts every counter from zero (keeps the filter).
    pub fn reset(&mut self) {
        let (a, tap) = fresh(&self.header, self.filter.as_ref());
        self.analysis = a;
        self.tap = tap;
        self.filtered_shadow.clear();
        self.samples.clear();
        self.dirty = true;
    }

    /// Recomputes the display figures when something changed since the last call.
    pub fn refresh(&mut self) {
        if !self.dirty {
            return;
        }
        self.dirty = false;
        self.snap = self.analysis.snapshot();
        let t = self.tap.lock();
        let (per_probe_ns, _) = t.shadow.per_probe_ns();
        let slice_us = t.shadow.base_slice_us();
        let mut v = ShadowView {
            rows: t.shadow.rows(),
            fidelity: t.shadow.fidelity(),
            fidelity_policy: t.shadow.fidelity_policy(),
            evaluated: t.shadow.evaluated(),
            excluded: t.shadow.excluded(),
            per_probe_ns,
            filtered: false,
        };
        drop(t);
        if self.filter.is_some() {
            // A policy with no filtered placement yet shows zeros.
            let none = PolicyMetrics::default();
            v.filtered = true;
            v.rows = v
                .rows
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let m = self.filtered_shadow.get(i).unwrap_or(&none);
                    PolicyRow::from_metrics(r.name, r.describe, m, per_probe_ns, slice_us)
                })
                .collect();
            v.evaluated = v.rows.first().map_or(0, |r| r.evaluated);
            v.fidelity = v
                .rows
                .iter()
                .find(|r| r.name == v.fidelity_policy)
                .and_then(|r| r.agreement);
        }
        self.shadow = v;
        self.sample_rates();
    }

    fn sample_rates(&mut self) {
        let now = Sample {
            ts: self.snap.placement.last_ts_ns,
            counts: self.snap.events.0,
        };
        let Some(first) = self.snap.placement.first_ts_ns else {
            self.rates = [0.0; 6];
            return;
        };
        if self.samples.is_empty() {
            self.samples.push_back(Sample {
                ts: first,
                counts: [0; 6],
            });
        }
        while self.samples.len() > 1
            && self
                .samples
                .get(1)
                .is_some_and(|s| now.ts.saturating_sub(s.ts) >= RATE_SPAN_NS)
        {
            self.samples.pop_front();
        }
        if let Some(old) = self.samples.front() {
            let dt = now.ts.saturating_sub(old.ts);
            for (i, r) in self.rates.iter_mut().enumerate() {
                *r = if dt == 0 {
                    0.0
                } else {
                    now.counts[i].saturating_sub(old.counts[i]) as f64 * 1e9 / dt as f64
                };
            }
        }
        if self.samples.back().is_none_or(|s| s.ts < now.ts) {
            self.samples.push_back(now);
        }
    }
}

/// The analysis' filter rule, applied to the per-CPU counts.
fn matches(f: Option<&Filter>, pid: u32, tasks: &TaskTable) -> bool {
    match f {
        None => true,
        Some(Filter::Pid(p)) => *p == pid,
        Some(Filter::Comm(c)) => tasks
            .get(pid)
            .is_some_and(|n| n.as_str().contains(c.as_str())),
    }
}
