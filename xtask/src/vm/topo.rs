//! The guest topologies: each a qemu command line plus the sysfs layout it must produce and the
//! pinned CPU pairs whose placement level is known.
//!
//! qemu 7.2 numbers vCPUs socket-major: `cpu = ((socket * dies + die) * cores + core) * threads
//! + thread`, so SMT siblings are adjacent (0-1, 2-3, ...) and a socket is a contiguous range.
//!
//! Facts checked by booting (Debian 6.12 cloud kernel, TCG):
//! - `EPYC-Milan,+topoext`: TCG filters topoext, and the guest's L3 then follows the NUMA node
//!   (one L3 per node, whatever `dies=` says; without `-numa`, one L3 per socket). So an AMD
//!   model cannot show a node holding two LLCs, which is NPS1's defining trait.
//! - `Skylake-Server` with `dies=2`: one L3 per die (CPUID leaf 4 / 0x1F), nodes as given by
//!   `-numa`, so a node can hold two LLCs. The NPS1-like guest uses it; the scheduler sees the
//!   same domain structure (SMT, MC = LLC, PKG, NUMA) a Zen3 in NPS1 has.
use anyhow::{Result, bail};
use wakeviz_core::topology::{CpuSet, Group, Level, Topology};

#[derive(Clone, Copy)]
pub struct Pair {
    /// Workload comm (<= 15 bytes).
    pub comm: &'static str,
    pub waker: u32,
    pub wakee: u32,
    pub level: Level,
}

pub struct Spec {
    pub name: &'static str,
    pub title: &'static str,
    pub cpu_model: &'static str,
    pub sockets: u32,
    pub dies: u32,
    pub cores: u32,
    pub threads: u32,
    /// CPUs sharing one L3.
    pub llc_cpus: u32,
    /// Contiguous CPU ranges per NUMA node (empty: no `-numa`, one node).
    pub nodes: Vec<(u32, u32)>,
    pub mem_mb: u32,
    pub pairs: Vec<Pair>,
    /// The experiment runs (schedstat live, --sched-feature, experiment) on this topology, with
    /// the experiment's fan-out "groups:receivers:loops[:hogs[:ack[:runs]]]" (hogs: CPU-bound
    /// tasks beside it in every run; `ack`: every message answered, two wakeups per message;
    /// runs of each setting, 3 unless given); one topology with several LLCs.
    pub experiment: Option<&'static str>,
    /// The fan-out group run's "comm:groups:receivers:loops" (default `wvz-fan:2:4:40`).
    pub fanout: Option<&'static str>,
    /// Ring buffers the capture must have used (wakeviz's default rule: one per LLC).
    pub rings: usize,
}

impl Spec {
    /// CPUs 0-7 exist and span two LLCs or more: the select-input checks' busy and `taskset -c 1,6`
    /// runs need that (a one-LLC guest has no WA_WEIGHT target to move).
    pub fn two_llcs_in_first_8(&self) -> bool {
        self.nr_cpus() >= 8 && self.llc_cpus < 8
    }
}

const fn pair(comm: &'static str, waker: u32, wakee: u32, level: Level) -> Pair {
    Pair {
        comm,
        waker,
        wakee,
        level,
    }
}

/// Guests run only when named (`--topology`): longer runs the note of a change quotes, not CI.
pub fn extra() -> Vec<Spec> {
    vec![Spec {
        name: "bigllc",
        title: "one LLC of 16 CPUs (16 cores, no SMT, one die): where SIS_UTIL cuts the scan",
        cpu_model: "Skylake-Server",
        sockets: 1,
        dies: 1,
        cores: 16,
        threads: 1,
        llc_cpus: 16,
        nodes: vec![],
        mem_mb: 1024,
        pairs: vec![
            pair("wvz-cpu", 2, 2, Level::SameCpu),
            pair("wvz-llc", 0, 3, Level::SameLlc),
        ],
        // Sixteen hogs keep every CPU busy, so SIS_UTIL's budget (nr_idle_scan) is small and
        // NO_SIS_UTIL scans the whole LLC; answered messages and five runs a setting give the
        // prediction errors intervals narrow enough to judge.
        experiment: Some("4:3:50:16:ack:5"),
        fanout: None,
        rings: 1,
    }]
}

pub fn all() -> Vec<Spec> {
    vec![
        Spec {
            name: "nps1",
            title: "NPS1-like: 2 packages x 1 node, 2 LLCs (dies) per node, SMT2",
            cpu_model: "Skylake-Server",
            sockets: 2,
            dies: 2,
            cores: 2,
            threads: 2,
            llc_cpus: 4,
            nodes: vec![(0, 7), (8, 15)],
            mem_mb: 1024,
            pairs: vec![
                pair("wvz-cpu", 2, 2, Level::SameCpu),
                pair("wvz-smt", 2, 3, Level::SmtSibling),
                pair("wvz-llc", 0, 2, Level::SameLlc),
                pair("wvz-node", 1, 5, Level::SameNode),
                pair("wvz-xpkg", 3, 12, Level::CrossPackage),
            ],
            experiment: Some("8:3:150"),
            fanout: None,
            rings: 4,
        },
        Spec {
            name: "nps2",
            title: "NPS2-like: 2 packages x 2 nodes, 1 LLC per node, SMT2 (EPYC-Milan)",
            cpu_model: "EPYC-Milan,+topoext",
            sockets: 2,
            dies: 2,
            cores: 2,
            threads: 2,
            llc_cpus: 4,
            nodes: vec![(0, 3), (4, 7), (8, 11), (12, 15)],
            mem_mb: 1024,
            pairs: vec![
                pair("wvz-cpu", 5, 5, Level::SameCpu),
                pair("wvz-smt", 4, 5, Level::SmtSibling),
                pair("wvz-llc", 8, 10, Level::SameLlc),
                pair("wvz-pkg", 2, 6, Level::SamePackage),
                pair("wvz-xpkg", 1, 14, Level::CrossPackage),
            ],
            experiment: None,
            fanout: None,
            rings: 4,
        },
        Spec {
            name: "nosmt",
            title: "no SMT, one node, one LLC (EPYC-Milan, 4 cores)",
            cpu_model: "EPYC-Milan,+topoext",
            sockets: 1,
            dies: 1,
            cores: 4,
            threads: 1,
            llc_cpus: 4,
            nodes: vec![],
            mem_mb: 768,
            pairs: vec![
                pair("wvz-cpu", 1, 1, Level::SameCpu),
                pair("wvz-llc", 0, 3, Level::SameLlc),
            ],
            experiment: None,
            fanout: None,
            rings: 1,
        },
        Spec {
            name: "many",
            title: "many vCPUs: 2 packages x 3 LLCs (dies) x 2 cores x SMT2 = 24, one ring per LLC",
            cpu_model: "Skylake-Server",
            sockets: 2,
            dies: 3,
            cores: 2,
            threads: 2,
            llc_cpus: 4,
            nodes: vec![(0, 11), (12, 23)],
            mem_mb: 1536,
            pairs: vec![
                pair("wvz-smt", 4, 5, Level::SmtSibling),
                pair("wvz-llc", 8, 10, Level::SameLlc),
                pair("wvz-node", 1, 9, Level::SameNode),
                pair("wvz-xpkg", 3, 20, Level::CrossPackage),
            ],
            experiment: None,
            // 4 groups of 6 receivers and a sender: 28 tasks over the 24 vCPUs, so every ring
            // carries wakeups whose waking and wakeup sides are on other rings.
            fanout: Some("wvz-fan:4:6:40"),
            rings: 6,
        },
    ]
}

impl Spec {
    pub fn nr_cpus(&self) -> u32 {
        self.sockets * self.dies * self.cores * self.threads
    }

    fn per_package(&self) -> u32 {
        self.dies * self.cores * self.threads
    }

    /// NUMA distance between nodes `i` and `j`: 12 within a package, 32 across.
    pub fn distance(&self, i: usize, j: usize) -> u32 {
        if i == j {
            return 10;
        }
        let pkg = |n: usize| self.nodes[n].0 / self.per_package();
        if pkg(i) == pkg(j) { 12 } else { 32 }
    }

    pub fn qemu_args(&self) -> Vec<String> {
        // Single-threaded TCG by default: with thread=multi the guest kernel's live code patching
        // (text_poke_bp: tracepoint static keys flipping when wakeviz or tracefs attach or
        // detach) raced with other vCPUs still running the old translated code, an `int3` Oops
        // in ttwu_do_activate / sched_clock_cpu in about one boot in five here. One host thread
        // for all vCPUs costs no wall time on a 2-core machine (the suite took as long).
        // WAKEVIZ_VM_TCG_THREAD=multi restores the multi-threaded mode.
        let threads = std::env::var("WAKEVIZ_VM_TCG_THREAD").unwrap_or_else(|_| "single".into());
        let mut a: Vec<String> = vec![
            "-accel".into(),
            format!("tcg,thread={threads}"),
            "-cpu".into(),
            self.cpu_model.into(),
            "-m".into(),
            format!("{}M", self.mem_mb),
            "-smp".into(),
            format!(
                "{},sockets={},dies={},cores={},threads={}",
                self.nr_cpus(),
                self.sockets,
                self.dies,
                self.cores,
                self.threads
            ),
        ];
        let n = self.nodes.len() as u32;
        for (i, (lo, hi)) in self.nodes.iter().enumerate() {
            a.push("-object".into());
            a.push(format!(
                "memory-backend-ram,id=m{i},size={}M",
                self.mem_mb / n
            ));
            a.push("-numa".into());
            a.push(format!("node,nodeid={i},cpus={lo}-{hi},memdev=m{i}"));
        }
        for i in 0..self.nodes.len() {
            for j in i + 1..self.nodes.len() {
                a.push("-numa".into());
                a.push(format!("dist,src={i},dst={j},val={}", self.distance(i, j)));
            }
        }
        a
    }

    fn expected_groups(&self, of: impl Fn(u32) -> u32) -> Vec<CpuSet> {
        let mut groups: Vec<(u32, CpuSet)> = Vec::new();
        for cpu in 0..self.nr_cpus() {
            let k = of(cpu);
            match groups.iter_mut().find(|(g, _)| *g == k) {
                Some((_, s)) => s.insert(cpu),
                None => groups.push((k, std::iter::once(cpu).collect())),
            }
        }
        groups.into_iter().map(|(_, s)| s).collect()
    }

    fn node_of(&self, cpu: u32) -> u32 {
        self.nodes
            .iter()
            .position(|&(lo, hi)| (lo..=hi).contains(&cpu))
            .unwrap_or(0) as u32
    }

    /// Compares the guest's topology (read from its sysfs) with the intended one.
    pub fn check(&self, t: &Topology) -> Result<()> {
        let mut errs = Vec::new();
        let sets = |gs: &[Group]| -> Vec<String> {
            let mut v: Vec<String> = gs.iter().map(|g| g.cpus.to_list()).collect();
            v.sort();
            v
        };
        let want = |v: Vec<CpuSet>| -> Vec<String> {
            let mut v: Vec<String> = v.iter().map(CpuSet::to_list).collect();
            v.sort();
            v
        };
        if t.nr_cpus() != self.nr_cpus() as usize {
            errs.push(format!(
                "{} online CPUs, want {}",
                t.nr_cpus(),
                self.nr_cpus()
            ));
        }
        let checks = [
            (
                "SMT sibling groups (thread_siblings_list)",
                sets(&t.cores),
                want(self.expected_groups(|c| c / self.threads)),
            ),
            (
                "LLC groups (cache/index3/shared_cpu_list)",
                sets(&t.llcs),
                want(self.expected_groups(|c| c / self.llc_cpus)),
            ),
            (
                "NUMA node cpulists",
                sets(&t.nodes),
                want(self.expected_groups(|c| self.node_of(c))),
            ),
            (
                "packages (physical_package_id)",
                sets(&t.packages),
                want(self.expected_groups(|c| c / self.per_package())),
            ),
        ];
        for (what, got, want) in checks {
            if got != want {
                errs.push(format!("{what}: got {got:?}, want {want:?}"));
            }
        }
        let nn = self.nodes.len().max(1);
        let want_dist: Vec<Vec<u32>> = (0..nn)
            .map(|i| {
                (0..nn)
                    .map(|j| {
                        if self.nodes.is_empty() {
                            10
                        } else {
                            self.distance(i, j)
                        }
                    })
                    .collect()
            })
            .collect();
        if t.distances != want_dist {
            errs.push(format!(
                "node distances: got {:?}, want {want_dist:?}",
                t.distances
            ));
        }
        for p in &self.pairs {
            let got = t.level(p.waker, p.wakee);
            if got != Some(p.level) {
                errs.push(format!(
                    "CPUs {} and {} are {:?} in the guest, the {} pair needs {}",
                    p.waker,
                    p.wakee,
                    got.map(Level::name),
                    p.comm,
                    p.level.name()
                ));
            }
        }
        if !errs.is_empty() {
            bail!(
                "the guest's sysfs does not show the intended {} layout:\n  {}",
                self.name,
                errs.join("\n  ")
            );
        }
        Ok(())
    }
}

/// One line describing what the guest's sysfs showed.
pub fn describe(t: &Topology) -> String {
    let list = |gs: &[Group]| {
        gs.iter()
            .map(|g| g.cpus.to_list())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let dist: Vec<String> = t
        .distances
        .iter()
        .map(|r| r.iter().map(u32::to_string).collect::<Vec<_>>().join(","))
        .collect();
    format!(
        "{}; SMT [{}]; LLC [{}]; nodes [{}]; packages [{}]; distances [{}]",
        t.summary(),
        list(&t.cores),
        list(&t.llcs),
        list(&t.nodes),
        list(&t.packages),
        dist.join(" / ")
    )
}
