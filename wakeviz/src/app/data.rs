//! The dashboard's side of the data: the shared [`Analysis`] fold and the [`Snapshot`] the
//! views draw from. The views read the snapshot only (plus their own view state): every figure
//! they show is the one the text report and the JSON show for the same stream and filter.
//! The one thing computed here is the event rate, a difference of two snapshots over stream
//! time. Everything is a function of the event stream, so a replay shows what the live view
//! showed at that point of the trace.
use std::{collections::VecDeque, path::PathBuf};

use wakeviz_core::{
    analysis::{Analysis, Filter, Snapshot},
    format::Header,
    source::Batch,
};

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
    samples: VecDeque<Sample>,
    /// Display figures, refreshed by [`Data::refresh`].
    pub snap: Snapshot,
    /// Events per second of stream time, per kind.
    pub rates: [f64; 6],
    dirty: bool,
}

impl Data {
    pub fn new(header: &Header) -> Self {
        let analysis = Analysis::new(header);
        let snap = analysis.snapshot();
        Self {
            header: header.clone(),
            analysis,
            samples: VecDeque::new(),
            snap,
            rates: [0.0; 6],
            dirty: true,
        }
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    pub fn filter(&self) -> Option<&Filter> {
        self.analysis.filter()
    }

    /// The `--report text` of what is folded now.
    pub fn report_text(&self) -> String {
        self.analysis.report_text()
    }

    /// The `--report json` of what is folded now.
    pub fn report_json(&self) -> serde_json::Value {
        self.analysis.report_json()
    }

    /// Folds one batch.
    pub fn on_batch(&mut self, b: &Batch) {
        self.analysis.on_batch(b);
        self.dirty = true;
    }

    /// Restricts every view to matching wakees; the filtered figures restart from zero.
    pub fn set_filter(&mut self, f: Option<Filter>) {
        self.analysis.set_filter(f);
        self.dirty = true;
    }

    /// Starts every counter from zero (keeps the filter).
    pub fn reset(&mut self) {
        let f = self.analysis.filter().cloned();
        self.analysis = Analysis::new(&self.header);
        if f.is_some() {
            self.analysis.set_filter(f);
        }
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

/// The recording the dashboard compares against (`--compare FILE`): folded once, headlessly,
/// before the dashboard starts, so it is one fixed [`Snapshot`]; every Δ the views show is
/// current minus this.
#[derive(Clone, Debug)]
pub struct Baseline {
    pub path: PathBuf,
    pub snap: Snapshot,
    /// Problems its replay met without stopping (a damaged tail).
    pub warnings: Vec<String>,
}
