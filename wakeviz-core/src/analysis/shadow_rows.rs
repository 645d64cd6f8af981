//! The shadow section: the evaluation follows every task (it needs the whole machine's
//! state), and when the in-scope figures cover a subset, its rows are a tally of the in-scope
//! wakees' scored placements.
use super::{
    Snapshot,
    part::{Ctx, Part, Placed},
};
use crate::{format::Header, shadow::Tally};

#[derive(Default)]
pub(crate) struct ShadowRows {
    subset: Tally,
}

impl ShadowRows {
    fn add(&mut self, cx: &Ctx, pl: &Placed) {
        if let (true, Some(sc)) = (cx.subset, pl.shadow.as_ref().and_then(|s| s.scored)) {
            self.subset.add(sc);
        }
    }
}

impl Part for ShadowRows {
    fn new(_: &Header) -> Self {
        Self::default()
    }

    #[inline]
    fn on_placement(&mut self, cx: &Ctx, pl: &Placed) {
        self.add(cx, pl);
    }

    #[inline]
    fn on_new_task(&mut self, cx: &Ctx, pl: &Placed) {
        self.add(cx, pl);
    }

    fn rescope(&mut self, _: &Ctx) {
        self.subset = Tally::default();
    }

    fn fill(&self, cx: &Ctx, s: &mut Snapshot) {
        s.shadow = cx.shadow.map(|e| {
            let mut r = e.report(cx.subset.then_some(&self.subset));
            for p in &mut r.processes {
                p.comm = cx.tasks.get(p.tgid).map(|c| c.as_str().into_owned());
            }
            r
        });
    }
}
