//! The topology map's structure: packages -> nodes -> LLCs -> CPUs, as rows (one per node) of
//! groups (LLCs) of cells (a CPU each, or one per LLC on large machines). Pure data from the
//! topology; `ui::topomap` shades it with the per-CPU counts and draws it.
use wakeviz_core::topology::Topology;

/// One selectable cell: a CPU, or a whole LLC of one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unit {
    pub package: u32,
    /// Index into `Topology::nodes`.
    pub node: u32,
    /// Index into `Topology::llcs`.
    pub llc: u32,
    pub cpus: Vec<u32>,
}

/// One node of one package, its LLC groups as runs of unit indexes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapRow {
    pub package: u32,
    pub node: u32,
    pub groups: Vec<Vec<usize>>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Map {
    pub units: Vec<Unit>,
    pub rows: Vec<MapRow>,
}

impl Map {
    pub fn new(t: &Topology, per_cpu: bool) -> Self {
        let mut cpus: Vec<_> = t.cpus.iter().collect();
        cpus.sort_by_key(|c| (c.package, c.node, c.llc, c.cpu));
        let mut m = Self::default();
        for c in cpus {
            let new_row = m
                .rows
                .last()
                .is_none_or(|r| (r.package, r.node) != (c.package, c.node));
            if new_row {
                m.rows.push(MapRow {
                    package: c.package,
                    node: c.node,
                    groups: Vec::new(),
                });
            }
            let same_llc = !new_row && m.units.last().is_some_and(|u| u.llc == c.llc);
            if per_cpu {
                m.units.push(Unit {
                    package: c.package,
                    node: c.node,
                    llc: c.llc,
                    cpus: vec![c.cpu],
                });
            } else if same_llc {
                if let Some(u) = m.units.last_mut() {
                    u.cpus.push(c.cpu);
                }
                continue;
            } else {
                m.units.push(Unit {
                    package: c.package,
                    node: c.node,
                    llc: c.llc,
                    cpus: vec![c.cpu],
                });
            }
            let idx = m.units.len() - 1;
            if let Some(r) = m.rows.last_mut() {
                match r.groups.last_mut() {
                    Some(g) if same_llc => g.push(idx),
                    _ => r.groups.push(vec![idx]),
                }
            }
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dashboard::app::tests::topo;

    #[test]
    fn rows_are_nodes_and_groups_are_llcs() {
        let t = topo();
        let m = Map::new(&t, true);
        assert_eq!(m.units.len(), t.nr_cpus());
        assert_eq!(m.rows.len(), t.nodes.len());
        assert_eq!(
            m.rows.iter().map(|r| r.groups.len()).sum::<usize>(),
            t.llcs.len()
        );
        let a = Map::new(&t, false);
        assert_eq!(a.units.len(), t.llcs.len());
        assert_eq!(
            a.units.iter().map(|u| u.cpus.len()).sum::<usize>(),
            t.nr_cpus()
        );
    }
}
