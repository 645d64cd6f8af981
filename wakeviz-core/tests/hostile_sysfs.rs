//! The sysfs topology reader under hostile trees: `--topology DIR` may be a copy
//! someone handed over, so a FIFO must not block it, a link to `/dev/zero` must not be read
//! forever, and no file or count may size an allocation beyond the documented limits. Each
//! read runs on a thread with a deadline, so a hang fails the test instead of stalling it.
use std::{
    path::{Path, PathBuf},
    sync::mpsc,
    time::Duration,
};

use wakeviz_core::topology::{MAX_CPUS, Topology, TopologyError, fixture::SysfsSpec, from_sysfs};

fn tree() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("system");
    SysfsSpec::vm_2cpu().write(&root).unwrap();
    (dir, root)
}

/// `from_sysfs(root)` with a deadline of a few seconds.
fn read(root: &Path) -> Result<Topology, TopologyError> {
    let (tx, rx) = mpsc::channel();
    let root = root.to_owned();
    std::thread::spawn(move || {
        let _ = tx.send(from_sysfs(&root));
    });
    rx.recv_timeout(Duration::from_secs(5))
        .expect("the sysfs reader hung")
}

fn replace_with(path: &Path, f: impl FnOnce(&Path)) {
    std::fs::remove_file(path).unwrap();
    f(path);
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

fn refused(root: &Path, what: &str) -> String {
    let e = read(root)
        .expect_err("a hostile tree must be refused")
        .to_string();
    assert!(e.contains(what), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    e
}

#[test]
fn the_unchanged_tree_reads() {
    let (_d, root) = tree();
    assert_eq!(read(&root).unwrap().nr_cpus(), 2);
}

#[test]
fn a_fifo_is_refused_without_blocking() {
    for rel in [
        "cpu/online",
        "cpu/present",
        "cpu/cpu0/topology/physical_package_id",
        "cpu/cpu1/topology/core_id",
        "cpu/cpu0/cache/index3/shared_cpu_list",
        "node/node0/cpulist",
    ] {
        let (_d, root) = tree();
        let p = root.join(rel);
        replace_with(&p, mkfifo);
        refused(&root, "a FIFO");
    }
}

#[test]
fn devices_and_oversized_files_are_refused() {
    let (_d, root) = tree();
    replace_with(&root.join("cpu/online"), |p| {
        std::os::unix::fs::symlink("/dev/zero", p).unwrap();
    });
    refused(&root, "a device");

    let (_d, root) = tree();
    // A regular file of 1 MiB of a valid-looking list: read no further than the limit.
    let big = "0,".repeat(1 << 19);
    std::fs::write(root.join("cpu/online"), big).unwrap();
    refused(&root, "longer than");
}

#[test]
fn cpu_numbers_and_counts_beyond_the_limits_are_refused() {
    for list in [
        "4294967295",
        "0-4294967295",
        "4294966000-4294967295",
        "8192",
    ] {
        let (_d, root) = tree();
        std::fs::write(root.join("cpu/online"), list).unwrap();
        refused(&root, "beyond the limit");
    }
    let (_d, root) = tree();
    std::fs::write(
        root.join("cpu/cpu0/cache/index3/shared_cpu_list"),
        format!("0-{}", MAX_CPUS),
    )
    .unwrap();
    refused(&root, "beyond the limit");

    let (_d, root) = tree();
    for n in 1..1100 {
        let d = root.join(format!("node/node{n}"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("cpulist"), "").unwrap();
    }
    refused(&root, "more than 1024 nodes");

    let (_d, root) = tree();
    std::fs::write(root.join("node/node0/distance"), "10 ".repeat(2000)).unwrap();
    refused(&root, "distances");
}

#[test]
#[ignore = "writing the 8192-CPU tree takes minutes; the read itself is within the deadline"]
fn the_cpu_limit_itself_reads_in_seconds() {
    use wakeviz_core::topology::fixture::Symmetric;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("system");
    SysfsSpec::symmetric(Symmetric {
        packages: 2,
        cores_per_package: 2048,
        threads_per_core: 2,
        cores_per_llc: 8,
        nodes_per_package: 4,
        local: 10,
        same_package: 12,
        remote: 32,
    })
    .write(&root)
    .unwrap();
    let t0 = std::time::Instant::now();
    let t = read(&root).unwrap();
    assert_eq!(t.nr_cpus(), MAX_CPUS as usize);
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
}
