//! Scan points from the kernel's debug info: where to put kprobes for the idle-CPU scan when
//! `select_idle_cpu` is inlined into `select_task_rq_fair` and has no function of its own to
//! attach to. The points come from a vmlinux with DWARF ([`dwarf::find`]) or from a points
//! file written by `wakeviz scan-points`, and are used only on the kernel build they were found
//! in ([`kernel::check_running`]).
pub mod dwarf;
pub mod kernel;

use std::{
    io::Read as _,
    path::{Path, PathBuf},
};

use wakeviz_core::scan_points::{MAX_FILE_BYTES, ScanPoints, ScanPointsError};

/// How to get debug info, for every message that lacks it.
const HOW_TO_GET: &str = "install linux-image-$(uname -r)-dbg (Debian), \
linux-image-$(uname -r)-dbgsym (Ubuntu) or kernel-debuginfo (Fedora), or pass --scan-points \
VMLINUX";

#[derive(Debug, thiserror::Error)]
pub enum DebugInfoError {
    /// A vmlinux that cannot be read or has no usable debug info.
    #[error("{}: {why}", path.display())]
    Vmlinux { path: PathBuf, why: String },
    #[error("{}: {source}", path.display())]
    PointsFile {
        path: PathBuf,
        source: ScanPointsError,
    },
    #[error("{}: cannot read it: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no debug vmlinux for kernel {release} (tried {tried}): {HOW_TO_GET}")]
    NotFound { release: String, tried: String },
    #[error("the running kernel's build id: {}: {why}", path.display())]
    RunningKernel { path: PathBuf, why: String },
    #[error(
        "the scan points are for another kernel build: {vmlinux} has build id {theirs}, the \
         running kernel {running} ({HOW_TO_GET})"
    )]
    OtherBuild {
        vmlinux: String,
        theirs: String,
        running: String,
    },
}

/// Where distributions put the running kernel's debug vmlinux, most common first.
pub fn candidates(release: &str) -> Vec<PathBuf> {
    vec![
        PathBuf::from(format!("/usr/lib/debug/boot/vmlinux-{release}")),
        PathBuf::from(format!("/usr/lib/debug/lib/modules/{release}/vmlinux")),
        PathBuf::from(format!("/lib/modules/{release}/build/vmlinux")),
        PathBuf::from(format!("/boot/vmlinux-{release}")),
    ]
}

/// The running kernel's release (`uname -r`).
pub fn release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".to_string())
}

/// The first of [`candidates`] that exists, or the error that lists them all.
pub fn default_vmlinux() -> Result<PathBuf, DebugInfoError> {
    let release = release();
    let tried = candidates(&release);
    tried
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .ok_or_else(|| DebugInfoError::NotFound {
            release,
            tried: tried
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// The running kernel's scan points: from `given` (a vmlinux, or a points file written by
/// `wakeviz scan-points`; told apart by the ELF magic) or from the first debug vmlinux found
/// where distributions install it, checked against the running kernel's build id.
pub fn discover(given: Option<&Path>) -> Result<ScanPoints, DebugInfoError> {
    let path = match given {
        Some(p) => p.to_path_buf(),
        None => default_vmlinux()?,
    };
    let points = if is_elf(&path)? {
        dwarf::find(&path)?
    } else {
        read_points(&path)?
    };
    kernel::check_running(&points)?;
    Ok(points)
}

/// Reads and validates a points file (at most [`MAX_FILE_BYTES`] are read).
pub fn read_points(path: &Path) -> Result<ScanPoints, DebugInfoError> {
    let read = |source| DebugInfoError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut bytes = Vec::new();
    open_regular(path)
        .and_then(|f| f.take(MAX_FILE_BYTES as u64 + 1).read_to_end(&mut bytes))
        .map_err(read)?;
    ScanPoints::from_json(&bytes).map_err(|source| DebugInfoError::PointsFile {
        path: path.to_path_buf(),
        source,
    })
}

/// Opens `path` if it is a regular file: checked first, because opening a FIFO would wait for
/// a writer, and a device or a directory is no points file.
fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    if !std::fs::metadata(path)?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    std::fs::File::open(path)
}

fn is_elf(path: &Path) -> Result<bool, DebugInfoError> {
    let mut magic = [0u8; 4];
    let mut f = open_regular(path).map_err(|source| DebugInfoError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let mut got = 0;
    while got < magic.len() {
        match f.read(&mut magic[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(source) => {
                return Err(DebugInfoError::Read {
                    path: path.to_path_buf(),
                    source,
                });
            }
        }
    }
    Ok(got == 4 && magic == *b"\x7fELF")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_says_what_was_tried_and_how_to_get_debug_info_in_one_line() {
        let e = DebugInfoError::NotFound {
            release: "6.1.0-x".into(),
            tried: candidates("6.1.0-x")
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        }
        .to_string();
        assert!(e.contains("/usr/lib/debug/boot/vmlinux-6.1.0-x"), "{e}");
        assert!(e.contains("/boot/vmlinux-6.1.0-x"), "{e}");
        assert!(e.contains("--scan-points") && e.contains("-dbg"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }

    #[test]
    fn a_points_file_is_told_from_a_vmlinux_and_validated() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("points.json");
        std::fs::write(
            &p,
            br#"{"version":1,"vmlinux":"v","build_id":"00","points":[]}"#,
        )
        .unwrap();
        assert!(!is_elf(&p).unwrap());
        // Valid, but not for this kernel (or no notes to compare with): refused either way.
        let e = discover(Some(&p)).unwrap_err().to_string();
        assert!(
            e.contains("another kernel build") || e.contains("running kernel"),
            "{e}"
        );
        std::fs::write(&p, vec![b' '; MAX_FILE_BYTES + 10]).unwrap();
        let e = discover(Some(&p)).unwrap_err().to_string();
        assert!(e.contains("limit of 65536"), "{e}");
        let e = discover(Some(dir.path())).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let elf = dir.path().join("elf");
        std::fs::write(&elf, b"\x7fELF").unwrap();
        assert!(is_elf(&elf).unwrap());
        let e = discover(Some(&elf)).unwrap_err().to_string();
        assert!(e.contains("not an ELF file") && !e.contains('\n'), "{e}");
    }
}
