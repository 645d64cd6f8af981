//! The named fixture machines (`topology::fixture`), generated at test time and read back with
//! the sysfs reader: what the builder writes is exactly its file list, a scratch tree goes away
//! with its handle, and the topologies match the facts of the machines they model.
use std::{collections::BTreeMap, path::PathBuf};

use wakeviz_core::topology::{
    Level, Topology,
    fixture::{self, SysfsSpec},
    from_sysfs,
};

fn load(name: &str) -> Topology {
    fixture::named_topology(name).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

fn files_on_disk(root: &std::path::Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_path_buf();
                out.insert(rel, std::fs::read_to_string(&p).unwrap());
            }
        }
    }
    out
}

#[test]
fn written_trees_are_the_builders_files() {
    for name in SysfsSpec::NAMES {
        let spec = SysfsSpec::named(name).unwrap();
        let tree = fixture::named_tree(name).unwrap();
        assert_eq!(files_on_disk(tree.path()), spec.files(), "{name}");
    }
    assert!(fixture::named_tree("no-such-machine").is_err());
}

#[test]
fn a_scratch_tree_goes_away_with_its_handle() {
    let tree = SysfsSpec::vm_2cpu().write_temp().unwrap();
    let root = tree.path().to_path_buf();
    assert!(root.join("cpu/online").is_file());
    let other = SysfsSpec::vm_2cpu().write_temp().unwrap();
    assert_ne!(other.path(), root, "each tree has a directory of its own");
    drop(tree);
    assert!(!root.exists());
    assert!(other.path().join("cpu/online").is_file());
}

/// Thousands of tiny files: on tmpfs when there is one (disk-backed /tmp is slow at this).
fn scratch_dir() -> tempfile::TempDir {
    tempfile::tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .unwrap()
}

fn check_levels(t: &Topology, cases: &[(u32, u32, Level)]) {
    for &(a, b, l) in cases {
        assert_eq!(t.level(a, b), Some(l), "{a}->{b}");
        assert_eq!(t.level(b, a), Some(l), "{b}->{a}");
    }
}

#[test]
fn zen3_nps_modes() {
    let (t1, t2, t4) = (load("zen3-nps1"), load("zen3-nps2"), load("zen3-nps4"));
    for (t, nps, nodes) in [(&t1, 1, 2), (&t2, 2, 4), (&t4, 4, 8)] {
        assert_eq!(t.nr_cpus(), 256);
        assert_eq!(t.llcs.len(), 16);
        assert!(t.llcs.iter().all(|l| l.cpus.len() == 16));
        assert_eq!(t.cores.len(), 128);
        assert_eq!(t.nodes.len(), nodes);
        assert_eq!(t.packages.len(), 2);
        assert_eq!(t.nps_mode(), format!("NPS{nps}"));
        assert!(t.smt_active());
        // LLC k of socket 0 = {8k..8k+7} u {128+8k..128+8k+7}.
        assert_eq!(t.llcs[1].cpus.to_list(), "8-15,136-143");
        assert_eq!(t.distance(0, 0), Some(10));
        assert_eq!(t.distance(0, nodes - 1), Some(32));
        check_levels(
            t,
            &[
                (5, 5, Level::SameCpu),
                (3, 131, Level::SmtSibling),
                (0, 7, Level::SameLlc),
                (0, 135, Level::SameLlc),
                (0, 64, Level::CrossPackage),
                (0, 255, Level::CrossPackage),
                (63, 191, Level::SmtSibling),
            ],
        );
    }
    let nodes = |nps: u32| {
        [&t1, &t2, &t4][(nps as usize).ilog2() as usize]
            .nodes
            .iter()
            .map(|n| n.cpus.to_list())
            .collect::<Vec<_>>()
    };
    assert_eq!(nodes(1), ["0-63,128-191", "64-127,192-255"]);
    assert_eq!(
        nodes(2),
        [
            "0-31,128-159",
            "32-63,160-191",
            "64-95,192-223",
            "96-127,224-255"
        ]
    );
    assert_eq!(nodes(4)[0], "0-15,128-143");
    assert_eq!(nodes(4)[7], "112-127,240-255");
    // 0 and 8: other LLC; same node in NPS1/2/4 (node = 16 cores in NPS4).
    // 0 and 16: same node in NPS1/2, other node of the same package in NPS4.
    // 0 and 32: same node in NPS1, same package in NPS2/4.
    check_levels(
        &t1,
        &[
            (0, 8, Level::SameNode),
            (0, 16, Level::SameNode),
            (0, 32, Level::SameNode),
            (0, 191, Level::SameNode),
        ],
    );
    check_levels(
        &t2,
        &[
            (0, 8, Level::SameNode),
            (0, 16, Level::SameNode),
            (0, 32, Level::SamePackage),
            (0, 160, Level::SamePackage),
            (64, 96, Level::SamePackage),
        ],
    );
    assert_eq!(t2.distance(0, 1), Some(12));
    check_levels(
        &t4,
        &[
            (0, 8, Level::SameNode),
            (0, 16, Level::SamePackage),
            (0, 32, Level::SamePackage),
            (128, 144, Level::SamePackage),
        ],
    );
    let names = |t: &Topology| t.domain_rows().iter().map(|r| r.name).collect::<Vec<_>>();
    assert_eq!(names(&t1), ["SMT", "LLC(MC)", "PKG", "NUMA"]);
    assert_eq!(
        names(&t2),
        [
            "SMT",
            "LLC",
            "NODE",
            "NUMA-in-package",
            "NUMA-cross-package"
        ]
    );
    assert_eq!(names(&t4), names(&t2));
}

#[test]
fn xeon() {
    let t = load("xeon-e5-2690v3");
    assert_eq!(t.nr_cpus(), 48);
    assert_eq!(t.llcs.len(), 2);
    assert_eq!(
        t.nodes.iter().map(|n| n.cpus.to_list()).collect::<Vec<_>>(),
        ["0-11,24-35", "12-23,36-47"]
    );
    assert_eq!(t.nps_mode(), "NPS1");
    check_levels(
        &t,
        &[
            (0, 24, Level::SmtSibling),
            (0, 11, Level::SameLlc),
            (0, 35, Level::SameLlc),
            (0, 12, Level::CrossPackage),
            (11, 36, Level::CrossPackage),
        ],
    );
    assert!(!t.level_exists(Level::SameNode));
    assert_eq!(
        t.domain_rows().iter().map(|r| r.name).collect::<Vec<_>>(),
        ["SMT", "LLC(MC)", "NUMA"]
    );
}

#[test]
fn vm_2cpu_matches_this_machine_shape() {
    let t = load("vm-2cpu");
    assert_eq!(t.nr_cpus(), 2);
    assert!(!t.smt_active());
    assert_eq!(
        (t.llcs.len(), t.nodes.len(), t.nps_mode().as_str()),
        (1, 1, "NPS1")
    );
    check_levels(&t, &[(0, 1, Level::SameLlc)]);
    assert_eq!(
        t.domain_rows().iter().map(|r| r.name).collect::<Vec<_>>(),
        ["LLC(MC)"]
    );
    // When this really is the 2-CPU development VM, the fixture must equal the live tree.
    let live = std::path::Path::new("/sys/devices/system");
    if let Ok(l) = from_sysfs(live)
        && l.nr_cpus() == 2
        && l.nodes.len() == 1
    {
        assert_eq!(l, t);
    }
}

#[test]
fn irregular_tree() {
    let t = load("irregular");
    assert_eq!(
        t.cpus.iter().map(|c| c.cpu).collect::<Vec<_>>(),
        [0, 1, 2, 3, 8, 9, 11, 16, 17, 18, 19, 40, 41]
    );
    assert_eq!(t.offline.to_list(), "10");
    assert_eq!(t.memory_only_nodes, [1]);
    assert_eq!(t.nodes.iter().map(|n| n.id).collect::<Vec<_>>(), [0, 2, 3]);
    assert_eq!(
        t.distances,
        vec![vec![10, 32, 32], vec![32, 10, 12], vec![32, 12, 10]]
    );
    assert_eq!(
        t.llcs.iter().map(|l| l.cpus.len()).collect::<Vec<_>>(),
        [2, 5, 3, 3]
    );
    assert_eq!(t.nps_mode(), "mixed: 1-2 nodes per package");
    assert_eq!(t.cpu_bound(), 42);
    assert!(t.cpu(10).is_none() && t.cpu(5).is_none() && t.cpu(1000).is_none());
    check_levels(
        &t,
        &[
            (0, 8, Level::SmtSibling),
            (2, 9, Level::SameLlc),
            (1, 3, Level::SameLlc),
            (0, 1, Level::SameNode),
            (16, 19, Level::SamePackage),
            (17, 41, Level::SamePackage),
            (40, 41, Level::SmtSibling),
            (0, 16, Level::CrossPackage),
            (11, 41, Level::CrossPackage),
        ],
    );
    assert_eq!(t.level(2, 10), None);
    // CPU 2 lost its sibling to offlining: a core of its own.
    let c2 = t.cpu(2).unwrap().core;
    assert_eq!(t.cores[c2 as usize].cpus.to_list(), "2");
}

#[test]
fn beyond_1024_cpus() {
    use wakeviz_core::topology::fixture::Symmetric;
    let spec = SysfsSpec::symmetric(Symmetric {
        packages: 4,
        cores_per_package: 160,
        threads_per_core: 2,
        cores_per_llc: 16,
        nodes_per_package: 2,
        local: 10,
        same_package: 12,
        remote: 32,
    });
    // Only the L3 per CPU: a quarter of the files, same topology.
    let mut spec = spec;
    for c in &mut spec.cpus {
        c.caches.retain(|k| k.level == 3);
    }
    let tmp = scratch_dir();
    spec.write(tmp.path()).unwrap();
    let t = from_sysfs(tmp.path()).unwrap();
    assert_eq!(t.nr_cpus(), 1280);
    assert_eq!(t.nps_mode(), "NPS2");
    check_levels(
        &t,
        &[
            (0, 640, Level::SmtSibling),
            (1279, 639, Level::SmtSibling),
            (0, 15, Level::SameLlc),
            (0, 16, Level::SameNode),
            (0, 80, Level::SamePackage),
            (0, 1279, Level::CrossPackage),
        ],
    );
    let m = wakeviz_core::topology::LevelMap::new(&t);
    for (a, b) in [(0, 640), (0, 15), (0, 16), (0, 80), (3, 1279), (1279, 1279)] {
        assert_eq!(m.level(a, b), t.level(a, b));
    }
    assert_eq!(m.level(0, 5000), None);
}

#[test]
fn level_map_agrees_with_topology_everywhere() {
    for name in ["zen3-nps4", "irregular", "xeon-e5-2690v3"] {
        let t = load(name);
        let m = wakeviz_core::topology::LevelMap::new(&t);
        let bound = t.cpu_bound() as u32 + 2;
        for a in 0..bound {
            for b in 0..bound {
                assert_eq!(m.level(a, b), t.level(a, b), "{name}: {a}->{b}");
            }
            assert_eq!(m.llc(a), t.cpu(a).map(|c| c.llc));
            assert_eq!(m.node(a), t.cpu(a).map(|c| c.node));
        }
    }
}
