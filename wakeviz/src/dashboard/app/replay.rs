//! Replay pacing. A [`ReplaySource`](wakeviz_core::source::ReplaySource) hands out chunks as
//! fast as it is polled; the pacer turns that into a clock over stream time: a cursor that
//! advances with the wall clock times the speed, and the driver delivers events up to the
//! cursor (see `crate::driver::Sink::limit_ns`), holding back the rest of a batch.
//!
//! Seeking moves the cursor. Forward is just folding faster (bounded work per frame, so the UI
//! keeps answering keys); backward reopens the recording and folds again from its start up to
//! the new cursor (the fold cannot run backwards and holds no history to rewind).
use std::time::{Duration, Instant};

use wakeviz_core::source::Batch;

/// Replay speeds, as multiples of real time; `f64::INFINITY` is "as fast as possible".
pub const SPEEDS: [f64; 10] = [
    0.01,
    0.1,
    0.25,
    0.5,
    1.0,
    2.0,
    5.0,
    10.0,
    100.0,
    f64::INFINITY,
];
const ONE_X: usize = 4;
/// Left/right step and j/J jump, stream time.
pub const STEP_NS: u64 = 100_000_000;
pub const JUMP_NS: u64 = 1_000_000_000;

#[derive(Debug)]
pub struct Pacer {
    pub speed: usize,
    /// Stream time of the first event (known after the first batch).
    pub origin: Option<u64>,
    /// Fold events up to `origin + cursor`.
    pub cursor: u64,
    /// Latest event time folded.
    pub fed_ts: Option<u64>,
    /// The source said End.
    pub ended: bool,
    /// A backward seek: the driver must reopen the recording and restart the fold.
    pub reopen: bool,
    /// Stream time from the first to the last event, once the replay reached the end.
    pub length_ns: Option<u64>,
    /// The next event waiting to be folded (the driver asks `limit_ns` with it).
    next_ts: Option<u64>,
    last_tick: Option<Instant>,
}

impl Default for Pacer {
    fn default() -> Self {
        Self {
            speed: ONE_X,
            origin: None,
            cursor: 0,
            fed_ts: None,
            ended: false,
            reopen: false,
            length_ns: None,
            next_ts: None,
            last_tick: None,
        }
    }
}

impl Pacer {
    pub fn speed(&self) -> f64 {
        SPEEDS[self.speed.min(SPEEDS.len() - 1)]
    }

    pub fn speed_label(&self) -> String {
        let s = self.speed();
        if s.is_infinite() {
            "max".into()
        } else if s >= 1.0 {
            format!("{s:.0}x")
        } else {
            format!("{s}x")
        }
    }

    pub fn faster(&mut self) {
        self.speed = (self.speed + 1).min(SPEEDS.len() - 1);
    }

    pub fn slower(&mut self) {
        self.speed = self.speed.saturating_sub(1);
    }

    /// Position shown to the user: stream time folded so far, from the first event.
    pub fn position_ns(&self) -> u64 {
        match (self.origin, self.fed_ts) {
            (Some(o), Some(f)) => f.saturating_sub(o),
            _ => 0,
        }
    }

    /// The position the status shows: the cursor (events up to it are folded, so a step moves
    /// it by exactly [`STEP_NS`]), or the last event once the cursor is past the end.
    pub fn shown_ns(&self) -> u64 {
        let end = self.length_ns.unwrap_or(u64::MAX);
        if self.cursor == u64::MAX || (self.ended && self.cursor >= end) {
            self.position_ns()
        } else if self.ended {
            self.cursor.max(self.position_ns())
        } else {
            self.cursor
        }
    }

    /// The source said End: the length is now known.
    pub fn end_reached(&mut self) {
        let pos = self.position_ns();
        self.length_ns = Some(self.length_ns.map_or(pos, |l| l.max(pos)));
    }

    /// Folding is behind the cursor by more than a frame's worth (after a seek).
    /// (Events are waiting at or before the cursor: a sparse stretch of the recording, where
    /// the last event folded is far behind the cursor, is not "seeking".)
    pub fn seeking(&self) -> bool {
        let (Some(o), Some(n)) = (self.origin, self.next_ts) else {
            return false;
        };
        !self.ended
            && self.cursor != u64::MAX
            && n <= o.saturating_add(self.cursor)
            && self.position_ns() + STEP_NS < self.cursor
    }

    /// Moves the cursor by `delta_ns` (negative: back).
    pub fn seek_by(&mut self, delta_ns: i64) {
        let base = self.shown_ns();
        let to = base.saturating_add_signed(delta_ns);
        self.seek_to(to);
    }

    pub fn seek_to(&mut self, to_ns: u64) {
        if to_ns < self.position_ns() {
            self.reopen = true;
        }
        self.cursor = to_ns;
    }

    pub fn seek_end(&mut self) {
        self.cursor = u64::MAX;
    }

    /// After the driver reopened the source: nothing is folded yet.
    pub fn reopened(&mut self) {
        self.reopen = false;
        self.fed_ts = None;
        self.next_ts = None;
        self.ended = false;
    }

    /// Advances the cursor by the wall time since the previous call, times the speed.
    pub fn tick(&mut self, now: Instant, paused: bool) {
        let dt = self
            .last_tick
            .map_or(Duration::ZERO, |t| now.saturating_duration_since(t));
        self.last_tick = Some(now);
        if paused || self.ended || self.cursor == u64::MAX {
            return;
        }
        let s = self.speed();
        if s.is_infinite() {
            self.cursor = u64::MAX;
        } else {
            self.cursor = self
                .cursor
                .saturating_add((dt.as_nanos() as f64 * s) as u64);
        }
    }

    /// The latest stream time to fold now, given the time of the next event waiting: the
    /// first event seen sets the origin.
    pub fn limit_ns(&mut self, next_ts_ns: u64) -> u64 {
        let origin = *self.origin.get_or_insert(next_ts_ns);
        self.next_ts = Some(next_ts_ns);
        origin.saturating_add(self.cursor)
    }

    /// Notes what was folded (for the position shown).
    pub fn fed(&mut self, b: &Batch) {
        if let Some(ts) = b.events.iter().map(|e| e.ts_ns()).max() {
            self.fed_ts = Some(self.fed_ts.map_or(ts, |f| f.max(ts)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speed_and_seek() {
        let mut p = Pacer::default();
        assert_eq!(p.speed_label(), "1x");
        p.slower();
        assert_eq!(p.speed_label(), "0.5x");
        for _ in 0..20 {
            p.faster();
        }
        assert_eq!(p.speed_label(), "max");
        p.origin = Some(1_000);
        p.fed_ts = Some(1_000 + 500_000_000);
        p.cursor = 500_000_000;
        p.seek_by(STEP_NS as i64);
        assert_eq!((p.cursor, p.reopen), (600_000_000, false));
        p.seek_by(-2 * STEP_NS as i64);
        assert_eq!((p.cursor, p.reopen), (400_000_000, true));
        p.seek_by(-(10 * JUMP_NS as i64));
        assert_eq!(p.cursor, 0);
    }

    /// A step moves the shown position by exactly 100 ms, even when the last event folded is
    /// short of the cursor.
    #[test]
    fn steps_are_exactly_100_ms() {
        let mut p = Pacer {
            origin: Some(1_000),
            fed_ts: Some(1_000 + 1_187_000_000),
            cursor: 1_200_000_000,
            ..Pacer::default()
        };
        assert_eq!(p.shown_ns(), 1_200_000_000);
        p.seek_by(STEP_NS as i64);
        assert_eq!(p.shown_ns(), 1_300_000_000);
        p.seek_by(-(STEP_NS as i64));
        p.seek_by(-(STEP_NS as i64));
        assert_eq!(p.shown_ns(), 1_100_000_000);
        assert!(p.reopen, "back past the fold reopens");
        // At the end, the position is the last event, and the length is known.
        p.ended = true;
        p.fed_ts = Some(1_000 + 2_500_000_000);
        p.end_reached();
        p.seek_end();
        assert_eq!(
            (p.shown_ns(), p.length_ns),
            (2_500_000_000, Some(2_500_000_000))
        );
    }
}
