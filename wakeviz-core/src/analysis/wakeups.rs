//! The placement figures of in-scope wakeups (by level, node, LLC and CPU, and the domain
//! table) and their coverage: how many wakeups they classify, why not the rest, and how many of
//! them the shadow rows cover.
use super::{
    CpuRow, Snapshot,
    part::{Ctx, Part, Placed, Unplaced},
    placement::{Coverage, PlacementCounts, PlacementStats, ShadowCoverage},
    snapshot::{DomainTableRow, GroupCounts},
};
use crate::{
    format::Header,
    topology::{Group, Level, LevelCounts, Topology},
};

pub(crate) struct PlacementPart {
    stats: PlacementStats,
    coverage: Coverage,
    shadow: ShadowCoverage,
}

impl PlacementPart {
    /// Counts made elsewhere (the kernel's, in the aggregate mode), shown as this part shows
    /// its own.
    pub(crate) fn loaded(stats: PlacementStats, coverage: Coverage) -> Self {
        Self {
            stats,
            shadow: coverage.shadow.unwrap_or_default(),
            coverage,
        }
    }
}

impl Part for PlacementPart {
    fn new(h: &Header) -> Self {
        Self::loaded(PlacementStats::new(&h.topology), Coverage::default())
    }

    #[inline]
    fn on_new_task(&mut self, cx: &Ctx, pl: &Placed) {
        let (p, c) = (pl.p, pl.class);
        self.stats
            .add(cx.levels, c, p.waker_cpu, p.chosen_cpu, true);
    }

    #[inline]
    fn on_placement(&mut self, cx: &Ctx, pl: &Placed) {
        let (p, c) = (pl.p, pl.class);
        self.stats
            .add(cx.levels, c, p.waker_cpu, p.chosen_cpu, false);
        if let Some(st) = &pl.shadow {
            self.shadow.add(st.scored.is_some(), &st.before, &st.after);
        }
        let cv = &mut self.coverage;
        cv.wakeups += 1;
        cv.placed += 1;
        if c.vs_waker.is_some() && c.vs_prev.is_some() {
            cv.classified += 1;
        } else {
            cv.unclassified += 1;
        }
    }

    #[inline]
    fn on_unplaced(&mut self, _: &Ctx, u: &Unplaced) {
        let cv = &mut self.coverage;
        cv.wakeups += 1;
        if u.self_wakeup {
            cv.self_wakeups += 1;
        } else {
            cv.no_sched_waking += 1;
        }
    }

    fn rescope(&mut self, cx: &Ctx) {
        self.stats = PlacementStats::new(cx.topology);
        self.coverage = Coverage::default();
        self.shadow = ShadowCoverage::default();
    }

    fn fill(&self, cx: &Ctx, s: &mut Snapshot) {
        let (t, p) = (cx.topology, &self.stats);
        let sec = &mut s.placement;
        sec.first_ts_ns = cx.first_ts;
        sec.last_ts_ns = cx.last_ts;
        sec.coverage = Coverage {
            shadow: cx.shadow.map(|_| self.shadow),
            ..self.coverage
        };
        sec.wakeups = p.wakeups;
        sec.new_tasks = p.new_tasks;
        sec.per_node = group_counts(&t.nodes, &p.per_node);
        sec.per_llc = group_counts(&t.llcs, &p.per_llc);
        sec.per_cpu = t
            .cpus
            .iter()
            .filter_map(|c| {
                let counts = *p.per_cpu.get(c.cpu as usize)?;
                Some(CpuRow { cpu: c.cpu, counts })
            })
            .collect();
        sec.domain_table = domain_table(t, &p.wakeups);
    }
}

fn group_counts(groups: &[Group], counts: &[PlacementCounts]) -> Vec<GroupCounts> {
    groups
        .iter()
        .zip(counts)
        .map(|(g, c)| GroupCounts {
            id: g.id,
            cpus: g.cpus.to_list(),
            counts: *c,
        })
        .collect()
}

/// The seeds' "wakeups and affine wakeups per sched domain" table.
fn domain_table(t: &Topology, w: &PlacementCounts) -> Vec<DomainTableRow> {
    let sum = |c: &LevelCounts, levels: &[Level]| -> u64 { levels.iter().map(|&l| c.get(l)).sum() };
    t.domain_rows()
        .into_iter()
        .map(|r| DomainTableRow {
            wakeups: sum(&w.vs_waker, &r.levels),
            affine: sum(&w.affine_by_waker_prev, &r.levels),
            affine_observable: r.levels.iter().any(|&l| l > Level::SameLlc),
            name: r.name,
            levels: r.levels,
        })
        .collect()
}
