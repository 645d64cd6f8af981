//! Events per kind over the whole stream, whatever the scope: what the capture delivered.
use super::{
    EventCounts, Snapshot,
    part::{Ctx, Part},
};
use crate::{event::Event, format::Header};

#[derive(Default)]
pub(crate) struct EventTally {
    pub(crate) counts: crate::event::PerKind<u64>,
}

impl Part for EventTally {
    fn new(_: &Header) -> Self {
        Self::default()
    }

    #[inline]
    fn on_event(&mut self, _: &Ctx, e: &Event) {
        self.counts[e.kind()] += 1;
    }

    fn fill(&self, _: &Ctx, s: &mut Snapshot) {
        s.events = EventCounts(self.counts);
    }
}
