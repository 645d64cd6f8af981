//! Writes fake sysfs `devices/system` trees from a compact description, so tests, the synthetic
//! recording generator and `--topology DIR` can exercise machines this one is not (256-CPU Zen3
//! in every NPS mode, a two-socket Xeon, sparse and broken layouts) through the very same
//! [`super::from_sysfs`] reader the live path uses. Only the files that reader consumes (and a
//! few siblings that make the tree look real) are written.
use std::{
    collections::BTreeMap,
    fs, io,
    path::{Path, PathBuf},
    sync::atomic::{AtomicU64, Ordering},
};

use super::{CpuSet, Topology, TopologyError, from_sysfs};

/// One `cache/indexK` directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheSpec {
    pub level: u32,
    /// `Data`, `Instruction` or `Unified`.
    pub kind: &'static str,
    pub id: u32,
    pub shared: CpuSet,
}

/// One online CPU's `topology/` and `cache/` files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuSpec {
    pub cpu: u32,
    pub package: u32,
    pub die: u32,
    pub core_id: u32,
    pub siblings: CpuSet,
    /// Written as `index0`, `index1`, ... in this order.
    pub caches: Vec<CacheSpec>,
}

/// One `node/nodeN` directory; an empty `cpus` is a memory-only node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeSpec {
    pub id: u32,
    pub cpus: CpuSet,
    /// SLIT row over all nodes listed, in ascending node id order.
    pub distance: Vec<u32>,
}

/// A whole `devices/system` tree.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct SysfsSpec {
    /// `cpu/present`; CPUs present but absent from `cpus` are written as offline.
    pub present: CpuSet,
    /// Online CPUs.
    pub cpus: Vec<CpuSpec>,
    pub nodes: Vec<NodeSpec>,
}

/// The regular shapes of real x86 servers: CPU ids numbered core-major across packages, with
/// SMT siblings one "all cores" stride apart (CPU n and n+128 on 2 x 64C Zen3, n and n+24 on
/// 2 x 12C Xeon), LLCs of `cores_per_llc` consecutive cores, nodes of consecutive LLC groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Symmetric {
    pub packages: u32,
    pub cores_per_package: u32,
    pub threads_per_core: u32,
    pub cores_per_llc: u32,
    pub nodes_per_package: u32,
    /// SLIT distances: own node, another node of the same package, another package.
    pub local: u32,
    pub same_package: u32,
    pub remote: u32,
}

impl SysfsSpec {
    pub fn online(&self) -> CpuSet {
        self.cpus.iter().map(|c| c.cpu).collect()
    }

    /// Builds the tree for a [`Symmetric`] machine.
    pub fn symmetric(s: Symmetric) -> Self {
        // Zero counts would divide by zero below; they describe no machine, so read them as 1.
        let s = Symmetric {
            cores_per_package: s.cores_per_package.max(1),
            cores_per_llc: s.cores_per_llc.max(1),
            nodes_per_package: s.nodes_per_package.max(1),
            threads_per_core: s.threads_per_core.max(1),
            ..s
        };
        let cores = s.packages * s.cores_per_package;
        let cores_per_node = (s.cores_per_package / s.nodes_per_package.max(1)).max(1);
        let cpu_of = |core: u32, thread: u32| thread * cores + core;
        let core_cpus =
            |core: u32| -> CpuSet { (0..s.threads_per_core).map(|t| cpu_of(core, t)).collect() };
        let group_cpus = |first: u32, n: u32| -> CpuSet {
            (first..first + n)
                .flat_map(|c| core_cpus(c).iter().collect::<Vec<_>>())
                .collect()
        };
        let mut cpus = Vec::new();
        for thread in 0..s.threads_per_core {
            for core in 0..cores {
                let cpu = cpu_of(core, thread);
                let package = core / s.cores_per_package;
                let llc = core / s.cores_per_llc;
                let siblings = core_cpus(core);
                let caches = vec![
                    CacheSpec {
                        level: 1,
                        kind: "Data",
                        id: core,
                        shared: siblings.clone(),
                    },
                    CacheSpec {
                        level: 1,
                        kind: "Instruction",
                        id: core,
                        shared: siblings.clone(),
                    },
                    CacheSpec {
                        level: 2,
                        kind: "Unified",
                        id: core,
                        shared: siblings.clone(),
                    },
                    CacheSpec {
                        level: 3,
                        kind: "Unified",
                        id: llc,
                        shared: group_cpus(llc * s.cores_per_llc, s.cores_per_llc),
                    },
                ];
                cpus.push(CpuSpec {
                    cpu,
                    package,
                    die: package,
                    core_id: core % s.cores_per_package,
                    siblings,
                    caches,
                });
            }
        }
        cpus.sort_by_key(|c| c.cpu);
        let nr_nodes = s.packages * s.nodes_per_package.max(1);
        let nodes = (0..nr_nodes)
            .map(|n| NodeSpec {
                id: n,
                cpus: group_cpus(n * cores_per_node, cores_per_node),
                distance: (0..nr_nodes)
                    .map(|m| {
                        if m == n {
                            s.local
                        } else if m / s.nodes_per_package.max(1) == n / s.nodes_per_package.max(1) {
                            s.same_package
                        } else {
                            s.remote
                        }
                    })
                    .collect(),
            })
            .collect();
        Self {
            present: (0..cores * s.threads_per_core).collect(),
            cpus,
            nodes,
        }
    }

    /// 2 x EPYC Zen3 64C/128T: sibling of n is n+128, LLC = 8 cores /
    /// 16 threads, `nps` nodes per package (1, 2 or 4), distances 10 / 12 / 32.
    pub fn zen3(nps: u32) -> Self {
        Self::symmetric(Symmetric {
            packages: 2,
            cores_per_package: 64,
            threads_per_core: 2,
            cores_per_llc: 8,
            nodes_per_package: nps,
            local: 10,
            same_package: 12,
            remote: 32,
        })
    }

    /// 2 x Xeon E5-2690 v3: 12C/24T per socket, one LLC per socket, node = socket, sibling of n
    /// is n+24, the usual Intel SLIT (10 / 21).
    pub fn xeon_e5_2690v3() -> Self {
        Self::symmetric(Symmetric {
            packages: 2,
            cores_per_package: 12,
            threads_per_core: 2,
            cores_per_llc: 12,
            nodes_per_package: 1,
            local: 10,
            same_package: 10,
            remote: 21,
        })
    }

    /// This development VM as its sysfs shows it: 2 CPUs, no SMT, private L1/L2, one shared
    /// L3 (id 0), one node.
    pub fn vm_2cpu() -> Self {
        let cpus = (0..2)
            .map(|cpu| {
                let own: CpuSet = std::iter::once(cpu).collect();
                CpuSpec {
                    cpu,
                    package: 0,
                    die: 0,
                    core_id: cpu,
                    siblings: own.clone(),
                    caches: vec![
                        CacheSpec {
                            level: 1,
                            kind: "Data",
                            id: cpu,
                            shared: own.clone(),
                        },
                        CacheSpec {
                            level: 1,
                            kind: "Instruction",
                            id: cpu,
                            shared: own.clone(),
                        },
                        CacheSpec {
                            level: 2,
                            kind: "Unified",
                            id: cpu,
                            shared: own,
                        },
                        CacheSpec {
                            level: 3,
                            kind: "Unified",
                            id: 0,
                            shared: (0..2).collect(),
                        },
                    ],
                }
            })
            .collect();
        Self {
            present: (0..2).collect(),
            cpus,
            nodes: vec![NodeSpec {
                id: 0,
                cpus: (0..2).collect(),
                distance: vec![10],
            }],
        }
    }

    /// Everything the reader must survive at once: sparse CPU numbers (0-3, 8-11, 16-19,
    /// 40-41), CPU 10 offline (so CPU 2 loses its SMT sibling), cores without SMT (16-19),
    /// uneven LLCs ({0,8}; {1-3,9,11}; {16-18}; {19,40,41}), a memory-only node 1 between the
    /// CPU nodes, and a second package split into two nodes while the first has one.
    ///
    /// Levels, for tests: 0-8 smt_sibling, 1-3 same_llc, 0-1 same_node, 16-19 same_package,
    /// 0-16 cross_package.
    pub fn irregular() -> Self {
        let set = |v: &[u32]| -> CpuSet { v.iter().copied().collect() };
        let llcs: [(u32, CpuSet); 4] = [
            (0, set(&[0, 8])),
            (1, set(&[1, 2, 3, 9, 10, 11])),
            (2, set(&[16, 17, 18])),
            (3, set(&[19, 40, 41])),
        ];
        // (cpu, package, core_id, siblings as present in sysfs, llc index)
        let layout: [(u32, u32, u32, &[u32], usize); 11] = [
            (0, 0, 0, &[0, 8], 0),
            (1, 0, 1, &[1, 9], 1),
            (2, 0, 2, &[2, 10], 1),
            (3, 0, 3, &[3, 11], 1),
            (8, 0, 0, &[0, 8], 0),
            (9, 0, 1, &[1, 9], 1),
            (11, 0, 3, &[3, 11], 1),
            (16, 1, 0, &[16], 2),
            (17, 1, 1, &[17], 2),
            (18, 1, 2, &[18], 2),
            (19, 1, 3, &[19], 3),
        ];
        let mut cpus: Vec<CpuSpec> = layout
            .iter()
            .map(|&(cpu, package, core_id, sib, llc)| CpuSpec {
                cpu,
                package,
                die: package,
                core_id,
                siblings: set(sib),
                caches: vec![
                    CacheSpec {
                        level: 2,
                        kind: "Unified",
                        id: cpu,
                        shared: set(sib),
                    },
                    CacheSpec {
                        level: 3,
                        kind: "Unified",
                        id: llcs[llc].0,
                        shared: llcs[llc].1.clone(),
                    },
                ],
            })
            .collect();
        for cpu in [40, 41] {
            cpus.push(CpuSpec {
                cpu,
                package: 1,
                die: 1,
                core_id: 8,
                siblings: set(&[40, 41]),
                caches: vec![
                    CacheSpec {
                        level: 2,
                        kind: "Unified",
                        id: 40,
                        shared: set(&[40, 41]),
                    },
                    CacheSpec {
                        level: 3,
                        kind: "Unified",
                        id: 3,
                        shared: llcs[3].1.clone(),
                    },
                ],
            });
        }
        Self {
            present: set(&[0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 40, 41]),
            cpus,
            nodes: vec![
                NodeSpec {
                    id: 0,
                    cpus: set(&[0, 1, 2, 3, 8, 9, 10, 11]),
                    distance: vec![10, 20, 32, 32],
                },
                NodeSpec {
                    id: 1,
                    cpus: CpuSet::new(),
                    distance: vec![20, 10, 20, 20],
                },
                NodeSpec {
                    id: 2,
                    cpus: set(&[16, 17, 18]),
                    distance: vec![32, 20, 10, 12],
                },
                NodeSpec {
                    id: 3,
                    cpus: set(&[19, 40, 41]),
                    distance: vec![32, 20, 12, 10],
                },
            ],
        }
    }

    /// The named machines tests and benchmarks run on (see [`named_tree`]).
    pub fn named(name: &str) -> Option<Self> {
        Some(match name {
            "zen3-nps1" => Self::zen3(1),
            "zen3-nps2" => Self::zen3(2),
            "zen3-nps4" => Self::zen3(4),
            "xeon-e5-2690v3" => Self::xeon_e5_2690v3(),
            "vm-2cpu" => Self::vm_2cpu(),
            "irregular" => Self::irregular(),
            _ => return None,
        })
    }

    pub const NAMES: [&'static str; 6] = [
        "zen3-nps1",
        "zen3-nps2",
        "zen3-nps4",
        "xeon-e5-2690v3",
        "vm-2cpu",
        "irregular",
    ];

    /// Writes the tree under `root` (a `devices/system` directory), creating it. Existing files
    /// are overwritten; stale extra files are left alone, so write into a fresh directory.
    pub fn write(&self, root: &Path) -> io::Result<()> {
        let mut made: Option<PathBuf> = None;
        for (rel, content) in self.files() {
            let p = root.join(rel);
            if let Some(d) = p.parent()
                && made.as_deref() != Some(d)
            {
                fs::create_dir_all(d)?;
                made = Some(d.to_path_buf());
            }
            fs::write(p, content)?;
        }
        Ok(())
    }

    /// Every file of the tree: path relative to `devices/system` -> content (with the kernel's
    /// trailing newline). Lets tests compare a tree byte for byte without writing one.
    pub fn files(&self) -> BTreeMap<PathBuf, String> {
        let mut out = BTreeMap::new();
        let mut put = |p: String, s: &str| {
            out.insert(PathBuf::from(p), format!("{s}\n"));
        };
        let online = self.online();
        put("cpu/online".into(), &online.to_list());
        put("cpu/present".into(), &self.present.to_list());
        put("cpu/possible".into(), &self.present.to_list());
        let offline: CpuSet = self
            .present
            .iter()
            .filter(|c| !online.contains(*c))
            .collect();
        put("cpu/offline".into(), &offline.to_list());
        for cpu in offline.iter() {
            put(format!("cpu/cpu{cpu}/online"), "0");
        }
        for c in &self.cpus {
            let d = format!("cpu/cpu{}", c.cpu);
            if c.cpu != 0 {
                put(format!("{d}/online"), "1");
            }
            put(
                format!("{d}/topology/physical_package_id"),
                &c.package.to_string(),
            );
            put(format!("{d}/topology/die_id"), &c.die.to_string());
            put(format!("{d}/topology/core_id"), &c.core_id.to_string());
            put(
                format!("{d}/topology/thread_siblings_list"),
                &c.siblings.to_list(),
            );
            for (k, cache) in c.caches.iter().enumerate() {
                let x = format!("{d}/cache/index{k}");
                put(format!("{x}/level"), &cache.level.to_string());
                put(format!("{x}/type"), cache.kind);
                put(format!("{x}/shared_cpu_list"), &cache.shared.to_list());
                put(format!("{x}/id"), &cache.id.to_string());
            }
        }
        let all: CpuSet = self.nodes.iter().map(|n| n.id).collect();
        let with_cpu: CpuSet = self
            .nodes
            .iter()
            .filter(|n| !n.cpus.is_empty())
            .map(|n| n.id)
            .collect();
        if !self.nodes.is_empty() {
            put("node/online".into(), &all.to_list());
            put("node/possible".into(), &all.to_list());
            put("node/has_cpu".into(), &with_cpu.to_list());
        }
        for n in &self.nodes {
            put(format!("node/node{}/cpulist", n.id), &n.cpus.to_list());
            let row: Vec<String> = n.distance.iter().map(u32::to_string).collect();
            put(format!("node/node{}/distance", n.id), &row.join(" "));
        }
        out
    }
}

/// A tree written into a scratch directory of its own, removed when this value is dropped.
#[derive(Debug)]
pub struct TempTree {
    root: PathBuf,
}

impl TempTree {
    /// The `devices/system`-like directory (`cpu/`, `node/`): what `--topology DIR` takes.
    pub fn path(&self) -> &Path {
        &self.root
    }
}

impl AsRef<Path> for TempTree {
    fn as_ref(&self) -> &Path {
        &self.root
    }
}

impl Drop for TempTree {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

/// Where scratch trees go: tmpfs first, since a tree is thousands of tiny files (5,400 for a
/// 256-CPU machine) and a disk-backed directory is slow at creating them; the temporary
/// directory when there is no tmpfs or it refuses us.
fn scratch_bases() -> [PathBuf; 2] {
    [PathBuf::from("/dev/shm"), std::env::temp_dir()]
}

/// A new empty directory of this process under `base`.
fn new_dir(base: &Path) -> io::Result<PathBuf> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    loop {
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let root = base.join(format!("wakeviz-sysfs-{}-{n}", std::process::id()));
        match fs::create_dir(&root) {
            Ok(()) => return Ok(root),
            // Left over from an earlier process that had this pid: take the next name.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

impl SysfsSpec {
    /// Writes the tree into a new scratch directory (see [`TempTree`]).
    pub fn write_temp(&self) -> io::Result<TempTree> {
        let [shm, tmp] = scratch_bases();
        let root = new_dir(&shm).or_else(|_| new_dir(&tmp))?;
        // The directory is ours from here on: a failed write still removes it.
        let tree = TempTree { root };
        self.write(tree.path())?;
        Ok(tree)
    }

    /// The topology the sysfs reader makes of this tree: written to a scratch directory and read
    /// back, so the reader the live path uses is exercised on every call.
    pub fn read_back(&self) -> Result<Topology, TopologyError> {
        let tree = self.write_temp().map_err(|err| TopologyError::Io {
            path: std::env::temp_dir(),
            err,
        })?;
        from_sysfs(tree.path())
    }
}

/// The tree of a named machine ([`SysfsSpec::NAMES`]), generated into a scratch directory: what
/// tests, benchmarks and `cargo xtask synth` read instead of committed copies of the trees.
pub fn named_tree(name: &str) -> io::Result<TempTree> {
    SysfsSpec::named(name)
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "no fixture machine named {name:?} (known: {})",
                    SysfsSpec::NAMES.join(", ")
                ),
            )
        })?
        .write_temp()
}

/// A named machine's topology as the sysfs reader sees it ([`SysfsSpec::read_back`]).
pub fn named_topology(name: &str) -> Result<Topology, TopologyError> {
    let tree = named_tree(name).map_err(|err| TopologyError::Io {
        path: PathBuf::from(name),
        err,
    })?;
    from_sysfs(tree.path())
}
