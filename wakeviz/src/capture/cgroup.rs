//! Which cgroup v2 a task's process is in, for the `cgroup:` scope. The probes do not read it:
//! a ring's drain reads `/proc/PID/cgroup` when it first names a task and when the task is
//! renamed (an exec), and the cgroup's id is the inode number of its directory under the
//! cgroup2 mount (the kernel's cgroup id, which `bpf_get_current_cgroup_id()` also returns). A
//! process moved to another cgroup without an exec keeps the cgroup it was first seen in, and a
//! task gone before its ring is drained has none.
use std::{
    os::unix::fs::MetadataExt as _,
    path::{Path, PathBuf},
};

/// Where cgroup v2 is mounted: `/sys/fs/cgroup` on a unified system, `/sys/fs/cgroup/unified`
/// on a hybrid one (from `/proc/self/mountinfo`).
pub fn mount() -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    text.lines().find_map(|l| {
        // "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS... - FSTYPE SOURCE SUPEROPTS"
        let (pre, post) = l.split_once(" - ")?;
        (post.split_whitespace().next()? == "cgroup2")
            .then(|| pre.split_whitespace().nth(4).map(unescape))
            .flatten()
    })
}

/// mountinfo writes space, tab, newline and backslash as octal escapes.
fn unescape(s: &str) -> PathBuf {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let oct = b.get(i + 1..i + 4).and_then(|d| {
            let t = std::str::from_utf8(d).ok()?;
            u8::from_str_radix(t, 8).ok()
        });
        match (b[i], oct) {
            (b'\\', Some(v)) => {
                out.push(v);
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    PathBuf::from(std::ffi::OsString::from(
        String::from_utf8_lossy(&out).into_owned(),
    ))
}

/// The id of the cgroup at `path`: a directory under the cgroup2 mount, or a cgroup path as
/// `/proc/PID/cgroup` writes it (`/system.slice/x.scope`), taken under the mount.
pub fn id_of_path(path: &Path, mount: &Path) -> Result<u64, String> {
    let full = if path.starts_with(mount) {
        path.to_path_buf()
    } else {
        mount.join(path.strip_prefix("/").unwrap_or(path))
    };
    let m = std::fs::metadata(&full).map_err(|e| format!("{}: {e}", full.display()))?;
    if !m.is_dir() {
        return Err(format!("{}: not a cgroup directory", full.display()));
    }
    Ok(m.ino())
}

/// The cgroup v2 path of a process from its `/proc/PID/cgroup` text (the `0::` line).
fn v2_path(text: &str) -> Option<&str> {
    text.lines().find_map(|l| l.strip_prefix("0::"))
}

/// Reads a task's cgroup id. Not cached: a fact is made only when a ring first sees a task or
/// sees it renamed, and a process moved between cgroups (a shell that writes itself into
/// `cgroup.procs` and then execs the benchmark) must be read again after its exec.
#[derive(Default)]
pub struct Cgroups {
    mount: Option<PathBuf>,
}

impl Cgroups {
    pub fn new() -> Self {
        Self { mount: mount() }
    }

    /// The cgroup id of the process of thread `pid` (its thread-group leader's when `tgid` is
    /// known); 0 when it cannot be read (no cgroup2, the task is gone).
    pub fn of(&self, pid: u32, tgid: u32) -> u64 {
        let Some(mount) = self.mount.as_deref() else {
            return 0;
        };
        let key = if tgid != 0 { tgid } else { pid };
        if key == 0 {
            return 0;
        }
        std::fs::read_to_string(format!("/proc/{key}/cgroup"))
            .ok()
            .and_then(|t| id_of_path(Path::new(v2_path(&t)?), mount).ok())
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_v2_line_is_found_among_v1_lines() {
        let t = "4:memory:/a\n0::/user.slice/x.scope\n1:cpu:/\n";
        assert_eq!(v2_path(t), Some("/user.slice/x.scope"));
        assert_eq!(v2_path("1:cpu:/\n"), None);
    }

    #[test]
    fn mountinfo_escapes_are_undone() {
        assert_eq!(unescape(r"/a\040b"), PathBuf::from("/a b"));
        assert_eq!(unescape(r"/plain"), PathBuf::from("/plain"));
        assert_eq!(unescape(r"/x\"), PathBuf::from(r"/x\"));
    }

    #[test]
    fn a_path_is_taken_under_the_mount_unless_it_is_there_already() {
        let d = tempfile::tempdir().expect("tempdir");
        let sub = d.path().join("bench.scope");
        std::fs::create_dir(&sub).expect("mkdir");
        let ino = std::fs::metadata(&sub).expect("stat").ino();
        assert_eq!(id_of_path(Path::new("/bench.scope"), d.path()), Ok(ino));
        assert_eq!(id_of_path(&sub, d.path()), Ok(ino));
        assert!(id_of_path(Path::new("/missing"), d.path()).is_err());
    }
}
