//! The guest kernel's debug info: Debian's `linux-image-<release>-dbg`, fetched once into the
//! cache (outside the clone, so CI's fresh clones reuse it), of which only the `vmlinux` is
//! kept. The host turns it into scan points with `wakeviz scan-points`; the guest gets only
//! that small file.
use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result, bail};

/// The cached `vmlinux` with DWARF of `release`, fetched when missing; `Err` says why there is
/// none (the suite then runs without the scan probes and says so).
pub fn vmlinux(cache: &Path, release: &str) -> Result<PathBuf> {
    let dir = cache.join("dbg");
    let want = dir.join(format!("vmlinux-{release}"));
    if want.is_file() {
        return Ok(want);
    }
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let tmp = dir.join(format!(".fetch-{release}"));
    let pkg = format!("linux-image-{release}-dbg");
    let deb = super::kernel::download(&tmp, &pkg)?;
    let member = format!("./usr/lib/debug/boot/vmlinux-{release}");
    let st = Command::new("sh")
        .arg("-c")
        .arg(r#"dpkg-deb --fsys-tarfile "$1" | tar -x -C "$2" "$3""#)
        .args(["sh"])
        .arg(&deb)
        .arg(&tmp)
        .arg(&member)
        .status()
        .context("running dpkg-deb | tar")?;
    if !st.success() {
        let _ = fs::remove_dir_all(&tmp);
        bail!("{} holds no {member}", deb.display());
    }
    fs::rename(tmp.join(&member), &want)
        .with_context(|| format!("moving the vmlinux to {}", want.display()))?;
    let _ = fs::remove_dir_all(&tmp);
    Ok(want)
}

/// `wakeviz scan-points --vmlinux V --out OUT --force`: the points the guest's wakeviz probes.
pub fn scan_points(wakeviz: &Path, vmlinux: &Path, out: &Path) -> Result<()> {
    let o = Command::new(wakeviz)
        .arg("scan-points")
        .arg("--vmlinux")
        .arg(vmlinux)
        .arg("--out")
        .arg(out)
        .arg("--force")
        .output()
        .with_context(|| format!("running {} scan-points", wakeviz.display()))?;
    if !o.status.success() {
        bail!(
            "wakeviz scan-points failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
    Ok(())
}
