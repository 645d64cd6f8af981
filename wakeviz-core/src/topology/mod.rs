//! The machine's CPU topology as the scheduler sees it: SMT siblings, LLCs, NUMA nodes, packages,
//! and the NUMA distance table. Read from sysfs (the live tree or a saved copy) and stored in every
//! recording, so a replay never consults the machine it runs on.
mod cpuset;
pub mod fixture;
mod level;
mod sysfs;

pub use cpuset::CpuSet;
pub use level::{Level, LevelCounts, LevelMap, absent};
use serde::{Deserialize, Serialize};
pub use sysfs::{TopologyError, from_sysfs};

/// Highest CPU count, and one past the highest CPU number, accepted from sysfs or a recording:
/// the kernel's largest `CONFIG_NR_CPUS`. Anything beyond is refused, because per-CPU arrays
/// are sized from the highest CPU number.
pub const MAX_CPUS: u32 = 8192;
/// Most NUMA nodes accepted (the kernel's largest `NODES_SHIFT` is 10); the distance table is
/// square in this.
pub const MAX_NODES: usize = 1024;

/// One online CPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTopo {
    pub cpu: u32,
    pub package: u32,
    pub die: u32,
    /// `topology/core_id` (unique only within a package).
    pub core_id: u32,
    /// Index into [`Topology::nodes`].
    pub node: u32,
    /// Index into [`Topology::llcs`].
    pub llc: u32,
    /// Index into [`Topology::cores`].
    pub core: u32,
}

/// A set of CPUs sharing something (an LLC, a core, a node).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Group {
    /// Kernel id where one exists (NUMA node number, cache `id`), else the first CPU.
    pub id: u32,
    pub cpus: CpuSet,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Topology {
    /// Online CPUs, ascending.
    pub cpus: Vec<CpuTopo>,
    /// CPUs listed as present but offline.
    pub offline: CpuSet,
    /// Physical cores (SMT sibling groups).
    pub cores: Vec<Group>,
    /// Last-level caches (`cache/index*/` with the highest level shared).
    pub llcs: Vec<Group>,
    /// Cache level the LLC groups came from (3 normally).
    pub llc_level: u32,
    /// NUMA nodes (one synthetic node 0 on machines without NUMA sysfs).
    pub nodes: Vec<Group>,
    /// SLIT distances, `distances[i][j]` between `nodes[i]` and `nodes[j]`.
    pub distances: Vec<Vec<u32>>,
    /// Packages by `physical_package_id`.
    pub packages: Vec<Group>,
    /// NUMA nodes with memory but no online CPU (CXL expanders, HBM, offlined sockets): kept out
    /// of `nodes` and `distances`, listed so the summary does not silently hide them.
    #[serde(default)]
    pub memory_only_nodes: Vec<u32>,
    /// Dense index: `cpu -> position in cpus`, `u32::MAX` when absent.
    #[serde(skip)]
    index: Vec<u32>,
}

impl Topology {
    /// Builds the dense lookup index; call after deserializing or constructing by hand (after
    /// [`Topology::validate`] for anything read from outside). CPUs numbered beyond
    /// [`MAX_CPUS`] are left out of the index rather than sizing it from a hostile number.
    pub fn finish(mut self) -> Self {
        let max = self
            .cpus
            .iter()
            .map(|c| c.cpu)
            .filter(|&c| c < MAX_CPUS)
            .max()
            .map_or(0, |m| m as usize + 1);
        self.index = vec![u32::MAX; max];
        for (i, c) in self.cpus.iter().enumerate() {
            if let Some(slot) = self.index.get_mut(c.cpu as usize) {
                *slot = i as u32;
            }
        }
        self
    }

    /// Checks what a recording's header (or a sysfs tree) claims against the limits every
    /// per-CPU structure relies on: at most [`MAX_CPUS`] CPUs numbered below it, ascending;
    /// group counts and group members within that, every CPU's indices pointing at a group
    /// that exists; at most [`MAX_NODES`] nodes with a square (or absent) distance table.
    pub fn validate(&self) -> Result<(), String> {
        let max = MAX_CPUS as usize;
        if self.cpus.is_empty() {
            return Err("no CPUs".into());
        }
        if self.cpus.len() > max {
            return Err(format!(
                "{} CPUs, beyond the limit of {MAX_CPUS}",
                self.cpus.len()
            ));
        }
        let mut prev = None;
        for c in &self.cpus {
            if c.cpu >= MAX_CPUS {
                return Err(format!(
                    "CPU number {} is beyond the limit of {}",
                    c.cpu,
                    MAX_CPUS - 1
                ));
            }
            if prev.is_some_and(|p| c.cpu <= p) {
                return Err(format!("CPU {} listed out of order or twice", c.cpu));
            }
            prev = Some(c.cpu);
            let bad = |what: &str, i: u32, n: usize| {
                (i as usize >= n).then(|| format!("CPU {}: {what} {i} does not exist", c.cpu))
            };
            if let Some(e) = bad("core", c.core, self.cores.len())
                .or_else(|| bad("LLC", c.llc, self.llcs.len()))
                .or_else(|| bad("node", c.node, self.nodes.len()))
            {
                return Err(e);
            }
        }
        for (what, groups, limit) in [
            ("cores", &self.cores, max),
            ("LLCs", &self.llcs, max),
            ("packages", &self.packages, max),
            ("nodes", &self.nodes, MAX_NODES),
        ] {
            if groups.len() > limit {
                return Err(format!(
                    "{} {what}, beyond the limit of {limit}",
                    groups.len()
                ));
            }
        }
        if self.memory_only_nodes.len() > MAX_NODES {
            return Err(format!(
                "{} memory-only nodes, beyond the limit of {MAX_NODES}",
                self.memory_only_nodes.len()
            ));
        }
        // Group members index per-CPU arrays too: each must be a listed CPU, and each CPU must
        // be in the groups it names.
        let online: CpuSet = self.cpus.iter().map(|c| c.cpu).collect();
        for (what, groups) in [
            ("core", &self.cores),
            ("LLC", &self.llcs),
            ("package", &self.packages),
            ("node", &self.nodes),
        ] {
            for g in groups {
                if let Some(c) = g.cpus.iter().find(|&c| !online.contains(c)) {
                    return Err(format!(
                        "{what} {} holds CPU {c}, which is not listed",
                        g.id
                    ));
                }
            }
        }
        for c in &self.cpus {
            let holds = |groups: &[Group], i: u32| groups[i as usize].cpus.contains(c.cpu);
            if !holds(&self.cores, c.core)
                || !holds(&self.llcs, c.llc)
                || !holds(&self.nodes, c.node)
            {
                return Err(format!("CPU {} is missing from a group it names", c.cpu));
            }
        }
        let n = self.nodes.len();
        if !self.distances.is_empty()
            && (self.distances.len() != n || self.distances.iter().any(|r| r.len() != n))
        {
            return Err(format!("the node distance table is not {n} x {n}"));
        }
        Ok(())
    }

    pub fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }

    /// One past the highest online CPU number (size for dense per-CPU arrays).
    pub fn cpu_bound(&self) -> usize {
        self.index.len()
    }

    pub fn cpu(&self, cpu: u32) -> Option<&CpuTopo> {
        let i = *self.index.get(cpu as usize)?;
        self.cpus.get(i as usize)
    }

    pub fn smt_active(&self) -> bool {
        self.cores.iter().any(|c| c.cpus.len() > 1)
    }

    /// NUMA nodes per package: 1, 2 or 4 on AMD EPYC in NPS1/2/4 (0 if undefined). The
    /// largest count when packages differ, because that decides whether the kernel drops PKG.
    pub fn nodes_per_package(&self) -> usize {
        self.nodes_per_each_package().into_iter().max().unwrap_or(0)
    }

    fn nodes_per_each_package(&self) -> Vec<usize> {
        let mut per_pkg = vec![std::collections::BTreeSet::new(); self.packages.len()];
        for c in &self.cpus {
            if let Some(p) = self.packages.iter().position(|g| g.id == c.package) {
                per_pkg[p].insert(c.node);
            }
        }
        per_pkg
            .iter()
            .map(std::collections::BTreeSet::len)
            .collect()
    }

    /// "NPS1", "NPS2", "NPS4" ... (nodes per package), or a description for odd layouts
    /// (a node spanning packages, packages with different node counts), so nobody reads an
    /// irregular machine as a clean NPS mode.
    pub fn nps_mode(&self) -> String {
        let spans_packages = self.nodes.iter().any(|n| {
            let pkgs: std::collections::BTreeSet<u32> = n
                .cpus
                .iter()
                .filter_map(|c| self.cpu(c))
                .map(|c| c.package)
                .collect();
            pkgs.len() > 1
        });
        if spans_packages {
            return "node spans packages".into();
        }
        let per = self.nodes_per_each_package();
        let (lo, hi) = (
            per.iter().copied().min().unwrap_or(0),
            per.iter().copied().max().unwrap_or(0),
        );
        if lo == hi {
            format!("NPS{hi}")
        } else {
            format!("mixed: {lo}-{hi} nodes per package")
        }
    }

    /// Relation of two CPUs, from closest to farthest.
    pub fn level(&self, a: u32, b: u32) -> Option<Level> {
        let (ca, cb) = (self.cpu(a)?, self.cpu(b)?);
        Some(Level::between(
            a == b,
            [ca.core, ca.llc, ca.node, ca.package],
            [cb.core, cb.llc, cb.node, cb.package],
        ))
    }

    /// SLIT distance between two entries of [`Topology::nodes`] (by index), if the table has it.
    pub fn distance(&self, a: usize, b: usize) -> Option<u32> {
        self.distances.get(a)?.get(b).copied()
    }

    /// Whether two CPUs at `level` can exist on this machine, so tables can leave out rows that
    /// are structurally empty (no `same_package` row on NPS1, no `smt_sibling` without SMT).
    pub fn level_exists(&self, level: Level) -> bool {
        match level {
            Level::SameCpu => !self.cpus.is_empty(),
            Level::SmtSibling => self.smt_active(),
            Level::SameLlc => self.llcs.iter().any(|l| {
                let cores: std::collections::BTreeSet<u32> = l
                    .cpus
                    .iter()
                    .filter_map(|c| self.cpu(c))
                    .map(|c| c.core)
                    .collect();
                cores.len() > 1
            }),
            Level::SameNode => self.nodes.iter().enumerate().any(|(i, n)| {
                let llcs: std::collections::BTreeSet<u32> = n
                    .cpus
                    .iter()
                    .filter_map(|c| self.cpu(c))
                    .filter(|c| c.node as usize == i)
                    .map(|c| c.llc)
                    .collect();
                llcs.len() > 1
            }),
            Level::SamePackage => self.nodes_per_package() > 1,
            Level::CrossPackage => self.packages.len() > 1,
        }
    }

    /// The rows of the kernel-developer table ("Wakeups on same SMT/MC/DIE/NUMA cpus", as in
    /// the schedstat comparisons on LKML), named after the sched-domain levels this layout
    /// actually builds (kernel/sched/topology.c, and `x86_has_numa_in_package` in
    /// arch/x86/kernel/smpboot.c): with one node per package the kernel has
    /// SMT -> MC -> PKG -> NUMA; with several (NPS2/NPS4, SNC) PKG is dropped and NODE plus
    /// NUMA levels appear, so `same_node` and `same_package` get rows of their own. Rows whose
    /// level cannot occur here are left out.
    pub fn domain_rows(&self) -> Vec<DomainRow> {
        let numa_in_package = self.nodes_per_package() > 1;
        let mut rows = Vec::new();
        let mut push = |name: &'static str, levels: &[Level]| {
            if levels.iter().any(|&l| self.level_exists(l)) {
                rows.push(DomainRow {
                    name,
                    levels: levels.to_vec(),
                });
            }
        };
        push("SMT", &[Level::SmtSibling]);
        if numa_in_package {
            push("LLC", &[Level::SameLlc]);
            push("NODE", &[Level::SameNode]);
            push("NUMA-in-package", &[Level::SamePackage]);
            push("NUMA-cross-package", &[Level::CrossPackage]);
        } else {
            push("LLC(MC)", &[Level::SameLlc]);
            push("PKG", &[Level::SameNode, Level::SamePackage]);
            push("NUMA", &[Level::CrossPackage]);
        }
        rows
    }

    /// One-line summary for headers and the overview.
    pub fn summary(&self) -> String {
        format!(
            "{} CPUs, {} package(s), {} node(s) ({}), {} LLC(s) of {} CPUs, SMT {}",
            self.nr_cpus(),
            self.packages.len(),
            self.nodes.len(),
            self.nps_mode(),
            self.llcs.len(),
            self.llcs.first().map_or(0, |l| l.cpus.len()),
            if self.smt_active() { "on" } else { "off" },
        )
    }
}

/// One row of [`Topology::domain_rows`]: a display name and the [`Level`]s it sums.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DomainRow {
    pub name: &'static str,
    pub levels: Vec<Level>,
}
