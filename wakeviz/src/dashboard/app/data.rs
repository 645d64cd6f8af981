//! The dashboard's side of the data: the shared [`Analysis`] fold and the [`Snapshot`] the
//! views draw from. The views read the snapshot only (plus their own view state): every figure
//! they show is the one the text report and the JSON show for the same stream and filter.
//! Everything, the event rates included, is a function of the event stream, so a replay shows
//! what the live view showed at that point of the trace.
use std::path::PathBuf;

use wakeviz_core::{
    analysis::{Analysis, Filter, Snapshot},
    event::PerKind,
    format::Header,
    source::Batch,
};

pub struct Data {
    header: Header,
    /// The run's one fold: what `/metrics` publishes and, without a view, what the views show.
    /// A replay's filter and range apply to it (the replay refolds from the start).
    analysis: Analysis,
    /// Live only: a filter or a reset made during the run folds from that moment into a view
    /// of its own, so the run's published figures are never reset.
    view: Option<Analysis>,
    live: bool,
    /// Display figures, refreshed by [`Data::refresh`].
    pub snap: Snapshot,
    /// Events per second of stream time, per kind.
    pub rates: PerKind<f64>,
    dirty: bool,
}

impl Data {
    pub fn new(header: &Header, live: bool) -> Self {
        let analysis = Analysis::new(header);
        let snap = analysis.snapshot();
        Self {
            header: header.clone(),
            analysis,
            view: None,
            live,
            snap,
            rates: Default::default(),
            dirty: true,
        }
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// What the views show: the live view, else the run's fold.
    fn shown(&self) -> &Analysis {
        self.view.as_ref().unwrap_or(&self.analysis)
    }

    pub fn filter(&self) -> Option<&Filter> {
        self.shown().filter()
    }

    /// The run's scope (`None`: every task): fixed, the `/` filter narrows the view within it.
    pub fn scope(&self) -> Option<&Filter> {
        self.shown().scope()
    }

    /// The `--report text` of what is shown now.
    pub fn report_text(&self) -> String {
        self.shown().report_text()
    }

    /// The `--report json` of what is shown now.
    pub fn report_json(&self) -> serde_json::Value {
        self.shown().report_json()
    }

    /// The run's figures, whatever the views show (what `/metrics` serves).
    pub fn run_snapshot(&self) -> Snapshot {
        match self.view {
            None if !self.dirty => self.snap.clone(),
            _ => self.analysis.snapshot(),
        }
    }

    /// Folds one batch.
    pub fn on_batch(&mut self, b: &Batch) {
        self.analysis.on_batch(b);
        if let Some(v) = self.view.as_mut() {
            v.on_batch(b);
        }
        self.dirty = true;
    }

    /// Restricts every view to matching wakees; the filtered figures restart from zero (live:
    /// in a view of their own; clearing the filter shows the run's whole figures again).
    pub fn set_filter(&mut self, f: Option<Filter>) {
        if self.live {
            self.view = f.map(|f| {
                let mut v = Analysis::new(&self.header);
                v.set_filter(Some(f));
                v
            });
        } else {
            self.analysis.set_filter(f);
        }
        self.dirty = true;
    }

    /// Starts every counter shown from zero (keeps the filter). Live, the run's own fold
    /// goes on for `/metrics` and the report.
    pub fn reset(&mut self) {
        let f = self.filter().cloned();
        let mut fresh = Analysis::new(&self.header);
        if f.is_some() {
            fresh.set_filter(f);
        }
        if self.live {
            self.view = Some(fresh);
        } else {
            self.analysis = fresh;
        }
        self.dirty = true;
    }

    /// Recomputes the display figures when something changed since the last call.
    pub fn refresh(&mut self) {
        if !self.dirty {
            return;
        }
        self.dirty = false;
        self.snap = self.shown().snapshot();
        self.sample_rates();
    }

    /// The event rates of the last second of stream time: the fold's figures, so a replay
    /// shows the same rates at the same point whatever the refresh cadence.
    fn sample_rates(&mut self) {
        let figures = &self.snap.figures;
        self.rates = PerKind::from_fn(|k| {
            let name = format!("events.{}.rate_1s", k.name());
            figures.get(&name).and_then(|f| f.value).unwrap_or(0.0)
        });
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
