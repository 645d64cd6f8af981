//! Reads [`Topology`] from a sysfs tree: `/sys/devices/system` live, or a saved copy of it
//! (`--topology DIR`, test fixtures). Only files that exist on 5.x-7.x kernels are used.
use std::{
    collections::BTreeMap,
    fs,
    path::{Path, PathBuf},
};

use super::{CpuSet, CpuTopo, Group, Topology};

/// Why a sysfs tree could not be read. Messages are one line that already holds the OS error,
/// so no variant exposes it as `source()` (`anyhow`'s `{:#}` would print it twice).
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    #[error("{path}: {err}")]
    Io { path: PathBuf, err: std::io::Error },
    #[error("{path}: {msg}")]
    Parse { path: PathBuf, msg: String },
    #[error("{0}: no online CPUs found (is this a sysfs devices/system tree?)")]
    NoCpus(PathBuf),
}

/// Most bytes read from one sysfs file: the longest real one (a cpulist of 8192 CPUs, a
/// distance row of 1024 nodes) is a few KiB. A tree is input like any other (`--topology DIR`
/// may be a copy someone handed over), so a file linked to `/dev/zero` must not be read forever.
pub const MAX_SYSFS_FILE: u64 = 64 << 10;
/// Most `cache/index*` directories looked at per CPU (real CPUs have 4 or 5).
const MAX_CACHE_INDEXES: usize = 64;

/// Reads a whole small file: opened with `O_NONBLOCK` so a FIFO without a writer cannot block,
/// refused unless regular (checked on the open descriptor), refused beyond [`MAX_SYSFS_FILE`].
fn read(path: &Path) -> Result<String, TopologyError> {
    use std::{
        io::Read,
        os::unix::fs::{FileTypeExt, OpenOptionsExt},
    };
    let io = |err| TopologyError::Io {
        path: path.to_owned(),
        err,
    };
    let f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(io)?;
    let ft = f.metadata().map_err(io)?.file_type();
    if !ft.is_file() {
        let kind = if ft.is_fifo() {
            "a FIFO"
        } else if ft.is_dir() {
            "a directory"
        } else if ft.is_char_device() || ft.is_block_device() {
            "a device"
        } else {
            "not a regular file"
        };
        return Err(TopologyError::Parse {
            path: path.to_owned(),
            msg: format!("{kind}, expected a regular file"),
        });
    }
    let mut buf = Vec::new();
    f.take(MAX_SYSFS_FILE + 1)
        .read_to_end(&mut buf)
        .map_err(io)?;
    if buf.len() as u64 > MAX_SYSFS_FILE {
        return Err(TopologyError::Parse {
            path: path.to_owned(),
            msg: format!("longer than {MAX_SYSFS_FILE} bytes"),
        });
    }
    String::from_utf8(buf).map_err(|_| TopologyError::Parse {
        path: path.to_owned(),
        msg: "not UTF-8 text".into(),
    })
}

/// An optional file: absent (or unreadable) is `None`, but one that exists and is not a small
/// regular text file is an error like any other, never a silent fallback.
fn read_opt(path: &Path) -> Result<Option<String>, TopologyError> {
    match read(path) {
        Ok(s) => Ok(Some(s)),
        Err(TopologyError::Io { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

fn parse_u32(path: &Path, s: &str) -> Result<u32, TopologyError> {
    let t = s.trim();
    // physical_package_id / die_id can be -1 on odd firmware: fold to 0.
    if t == "-1" {
        return Ok(0);
    }
    t.parse().map_err(|_| TopologyError::Parse {
        path: path.to_owned(),
        msg: format!("expected a number, got {t:?}"),
    })
}

fn list(path: &Path) -> Result<CpuSet, TopologyError> {
    CpuSet::parse_list(&read(path)?).map_err(|msg| TopologyError::Parse {
        path: path.to_owned(),
        msg,
    })
}

/// Highest-level data/unified cache of `cpu_dir`: (level, shared CPUs, cache id).
fn llc_of(cpu_dir: &Path) -> Result<Option<(u32, CpuSet, Option<u32>)>, TopologyError> {
    let Ok(entries) = fs::read_dir(cpu_dir.join("cache")) else {
        return Ok(None);
    };
    let mut best: Option<(u32, CpuSet, Option<u32>)> = None;
    for e in entries.flatten().take(MAX_CACHE_INDEXES) {
        let d = e.path();
        let is_index = d
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("index"));
        if !is_index {
            continue;
        }
        if read_opt(&d.join("type"))?.is_some_and(|t| t.trim() == "Instruction") {
            continue;
        }
        let Some(level) = read_opt(&d.join("level"))? else {
            continue;
        };
        let level = parse_u32(&d.join("level"), &level)?;
        let Some(shared) = read_opt(&d.join("shared_cpu_list"))? else {
            continue;
        };
        let shared = CpuSet::parse_list(&shared).map_err(|msg| TopologyError::Parse {
            path: d.join("shared_cpu_list"),
            msg,
        })?;
        let id = read_opt(&d.join("id"))?.and_then(|s| s.trim().parse().ok());
        if best.as_ref().is_none_or(|(l, _, _)| level > *l) {
            best = Some((level, shared, id));
        }
    }
    Ok(best)
}

/// Groups CPUs by a key set, numbering groups in order of their first CPU.
fn group(sets: &BTreeMap<u32, CpuSet>, online: &CpuSet) -> (Vec<Group>, BTreeMap<u32, u32>) {
    let mut groups: Vec<Group> = Vec::new();
    let mut of = BTreeMap::new();
    // A map from set to group: a linear search is quadratic in CPUs at 8192 of them.
    let mut seen = std::collections::HashMap::new();
    for (&cpu, set) in sets {
        let mut s: CpuSet = set.iter().filter(|c| online.contains(*c)).collect();
        s.insert(cpu);
        let idx = *seen.entry(s.clone()).or_insert_with(|| {
            groups.push(Group {
                id: s.first().unwrap_or(cpu),
                cpus: s,
            });
            groups.len() - 1
        });
        of.insert(cpu, idx as u32);
    }
    (groups, of)
}

/// Reads the topology under `root`, a `devices/system` directory (live: `/sys/devices/system`).
pub fn from_sysfs(root: &Path) -> Result<Topology, TopologyError> {
    let cpu_root = root.join("cpu");
    let online = list(&cpu_root.join("online"))?;
    if online.is_empty() {
        return Err(TopologyError::NoCpus(root.to_owned()));
    }
    let present = read_opt(&cpu_root.join("present"))?
        .and_then(|s| CpuSet::parse_list(&s).ok())
        .unwrap_or_else(|| online.clone());
    let offline: CpuSet = present.iter().filter(|c| !online.contains(*c)).collect();

    let mut siblings = BTreeMap::new();
    let mut llc_sets = BTreeMap::new();
    let mut llc_level = 0;
    let mut pkg = BTreeMap::new();
    let mut die = BTreeMap::new();
    let mut core_id = BTreeMap::new();
    for cpu in online.iter() {
        let d = cpu_root.join(format!("cpu{cpu}"));
        let t = d.join("topology");
        let p = t.join("physical_package_id");
        pkg.insert(cpu, parse_u32(&p, &read(&p)?)?);
        let di =
            read_opt(&t.join("die_id"))?.map_or(Ok(0), |s| parse_u32(&t.join("die_id"), &s))?;
        die.insert(cpu, di);
        let ci =
            read_opt(&t.join("core_id"))?.map_or(Ok(cpu), |s| parse_u32(&t.join("core_id"), &s))?;
        core_id.insert(cpu, ci);
        let sib = match read_opt(&t.join("thread_siblings_list"))? {
            Some(s) => CpuSet::parse_list(&s).map_err(|msg| TopologyError::Parse {
                path: t.join("thread_siblings_list"),
                msg,
            })?,
            None => std::iter::once(cpu).collect(),
        };
        siblings.insert(cpu, sib);
        match llc_of(&d)? {
            Some((level, set, _)) => {
                llc_level = llc_level.max(level);
                llc_sets.insert(cpu, set);
            }
            None => {
                llc_sets.insert(cpu, CpuSet::new());
            }
        }
    }
    // Without cache information, fall back to one LLC per package (the MC domain's usual span).
    if llc_sets.values().all(CpuSet::is_empty) {
        let mut by_pkg: BTreeMap<u32, CpuSet> = BTreeMap::new();
        for (&cpu, &p) in &pkg {
            by_pkg.entry(p).or_default().insert(cpu);
        }
        for (&cpu, p) in &pkg {
            llc_sets.insert(cpu, by_pkg[p].clone());
        }
    }
    let (cores, core_of) = group(&siblings, &online);
    let (mut llcs, llc_of_cpu) = group(&llc_sets, &online);
    for l in &mut llcs {
        l.id = l.cpus.first().unwrap_or(0);
    }

    // NUMA nodes.
    let mut nodes: Vec<Group> = Vec::new();
    if let Ok(entries) = fs::read_dir(root.join("node")) {
        for e in entries.flatten() {
            if nodes.len() >= super::MAX_NODES {
                return Err(TopologyError::Parse {
                    path: root.join("node"),
                    msg: format!("more than {} nodes", super::MAX_NODES),
                });
            }
            let name = e.file_name();
            let Some(id) = name
                .to_str()
                .and_then(|n| n.strip_prefix("node"))
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let cpus: CpuSet = list(&e.path().join("cpulist"))?
                .iter()
                .filter(|c| online.contains(*c))
                .collect();
            nodes.push(Group { id, cpus });
        }
    }
    nodes.sort_by_key(|n| n.id);
    let mut distances = Vec::new();
    for n in &nodes {
        let p = root.join(format!("node/node{}/distance", n.id));
        let row: Result<Vec<u32>, _> = read_opt(&p)?
            .unwrap_or_default()
            .split_whitespace()
            .map(|x| parse_u32(&p, x))
            .collect();
        let row = row?;
        if row.len() > super::MAX_NODES {
            return Err(TopologyError::Parse {
                path: p,
                msg: format!("more than {} distances", super::MAX_NODES),
            });
        }
        distances.push(row);
    }
    // Memory-only nodes hold no CPUs; keep them out of the CPU model (but keep the SLIT square
    // over the nodes we keep).
    let keep: Vec<usize> = (0..nodes.len())
        .filter(|&i| !nodes[i].cpus.is_empty())
        .collect();
    let complete = distances.iter().all(|r| r.len() == nodes.len());
    let distances: Vec<Vec<u32>> = if complete && !nodes.is_empty() {
        keep.iter()
            .map(|&i| keep.iter().map(|&j| distances[i][j]).collect())
            .collect()
    } else {
        keep.iter()
            .map(|&i| keep.iter().map(|&j| if i == j { 10 } else { 20 }).collect())
            .collect()
    };
    let memory_only_nodes: Vec<u32> = nodes
        .iter()
        .filter(|n| n.cpus.is_empty())
        .map(|n| n.id)
        .collect();
    let mut nodes: Vec<Group> = keep.iter().map(|&i| nodes[i].clone()).collect();
    let mut distances = distances;
    let covered: CpuSet = nodes.iter().flat_map(|n| n.cpus.iter()).collect();
    let orphans: CpuSet = online.iter().filter(|c| !covered.contains(*c)).collect();
    if !orphans.is_empty() {
        // No NUMA sysfs (CONFIG_NUMA=n) or CPUs missing from it: one more node holds them.
        let id = nodes.iter().map(|n| n.id + 1).max().unwrap_or(0);
        nodes.push(Group { id, cpus: orphans });
        for row in &mut distances {
            row.push(20);
        }
        let mut last = vec![20; nodes.len()];
        if let Some(x) = last.last_mut() {
            *x = 10;
        }
        distances.push(last);
    }

    let mut by_pkg: BTreeMap<u32, CpuSet> = BTreeMap::new();
    for cpu in online.iter() {
        by_pkg.entry(pkg[&cpu]).or_default().insert(cpu);
    }
    let packages: Vec<Group> = by_pkg
        .into_iter()
        .map(|(id, cpus)| Group { id, cpus })
        .collect();
    let mut node_of = BTreeMap::new();
    for (i, n) in nodes.iter().enumerate() {
        for c in n.cpus.iter() {
            node_of.entry(c).or_insert(i as u32);
        }
    }

    let cpus = online
        .iter()
        .map(|cpu| CpuTopo {
            cpu,
            package: pkg[&cpu],
            die: die[&cpu],
            core_id: core_id[&cpu],
            node: node_of.get(&cpu).copied().unwrap_or(0),
            llc: llc_of_cpu[&cpu],
            core: core_of[&cpu],
        })
        .collect();
    let topo = Topology {
        cpus,
        offline,
        cores,
        llcs,
        llc_level: if llc_level == 0 { 3 } else { llc_level },
        nodes,
        distances,
        packages,
        memory_only_nodes,
        index: Vec::new(),
    };
    topo.validate().map_err(|msg| TopologyError::Parse {
        path: root.to_owned(),
        msg,
    })?;
    Ok(topo.finish())
}
