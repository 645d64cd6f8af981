//! Debian's `linux-image-6.12.*-cloud-amd64` kernel: fetched with `apt-get download`, unpacked
//! with `dpkg -x` (never installed) into the cache, reused from there on later runs.
use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result, bail};

/// A kernel image ready to boot.
pub struct Kernel {
    pub vmlinuz: PathBuf,
    /// e.g. `6.12.117+deb12-cloud-amd64`
    pub release: String,
    /// Where it came from, for the summary.
    pub origin: String,
}

/// Why no kernel could be had: the suite is skipped (with this reason), not failed.
pub struct Unavailable(pub String);

/// `WAKEVIZ_VM_KERNEL` (a vmlinuz path) wins; then a kernel already in the cache; then the
/// newest 6.12 cloud image apt can download.
pub fn obtain(cache: &Path) -> Result<Result<Kernel, Unavailable>> {
    if let Some(p) = std::env::var_os("WAKEVIZ_VM_KERNEL") {
        let p = PathBuf::from(p);
        if !p.is_file() {
            bail!("WAKEVIZ_VM_KERNEL={} is not a file", p.display());
        }
        let release = release_of(&p);
        return Ok(Ok(Kernel {
            vmlinuz: p,
            release,
            origin: "WAKEVIZ_VM_KERNEL".into(),
        }));
    }
    let kdir = cache.join("kernel");
    if let Some(k) = cached(&kdir)? {
        return Ok(Ok(k));
    }
    if which("apt-get").is_none() || which("dpkg").is_none() {
        return Ok(Err(Unavailable(
            "no cached kernel and no apt-get/dpkg to fetch Debian's linux-image-6.12 cloud kernel"
                .into(),
        )));
    }
    let mut names = candidates()?;
    if names.is_empty() {
        eprintln!("vm-test: apt knows no linux-image-6.12 cloud kernel; running apt-get update");
        let st = Command::new("apt-get").args(["update", "-qq"]).status();
        if !matches!(st, Ok(s) if s.success()) {
            eprintln!("vm-test: apt-get update failed ({st:?})");
        }
        names = candidates()?;
    }
    if names.is_empty() {
        return Ok(Err(Unavailable(
            "apt offers no linux-image-6.12.*-cloud-amd64 package (Debian 12 bookworm \
             security/updates lists needed)"
                .into(),
        )));
    }
    let mut tried = Vec::new();
    for name in &names {
        match fetch(&kdir, name) {
            Ok(k) => return Ok(Ok(k)),
            Err(e) => {
                eprintln!("vm-test: {name}: {e:#}");
                tried.push(name.clone());
            }
        }
    }
    Ok(Err(Unavailable(format!(
        "could not download or unpack any of: {}",
        tried.join(", ")
    ))))
}

/// The newest already-unpacked kernel under `kdir/<package>/boot/`.
fn cached(kdir: &Path) -> Result<Option<Kernel>> {
    let Ok(entries) = fs::read_dir(kdir) else {
        return Ok(None);
    };
    let mut found: Vec<(Vec<u64>, PathBuf, String)> = Vec::new();
    for e in entries.flatten() {
        let boot = e.path().join("boot");
        let Ok(files) = fs::read_dir(&boot) else {
            continue;
        };
        for f in files.flatten() {
            let p = f.path();
            let name = f.file_name().to_string_lossy().into_owned();
            if name.starts_with("vmlinuz-6.12.") && name.ends_with("-cloud-amd64") {
                let pkg = e.file_name().to_string_lossy().into_owned();
                found.push((version_key(&name), p, pkg));
            }
        }
    }
    found.sort();
    Ok(found.pop().map(|(_, vmlinuz, pkg)| Kernel {
        release: release_of(&vmlinuz),
        vmlinuz,
        origin: format!("{pkg} (cached)"),
    }))
}

fn release_of(vmlinuz: &Path) -> String {
    vmlinuz
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("vmlinuz-"))
        .unwrap_or("?")
        .to_owned()
}

/// Numeric parts of a name, for "newest first" ordering (6.12.117 > 6.12.99).
fn version_key(s: &str) -> Vec<u64> {
    s.split(|c: char| !c.is_ascii_digit())
        .filter(|p| !p.is_empty())
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Package names to try, best first: the one the `linux-image-6.12-cloud-amd64` meta-package
/// points at (unsigned image first), then every other 6.12 cloud image apt knows, newest first.
/// `apt-cache search` also lists names whose version is gone from the archive; `apt-get download`
/// of those fails and the next is tried.
fn candidates() -> Result<Vec<String>> {
    let mut out = Vec::new();
    if let Some(dep) = meta_target()? {
        out.push(format!("{dep}-unsigned"));
        out.push(dep);
    }
    let o = Command::new("apt-cache")
        .args([
            "search",
            "--names-only",
            r"^linux-image-6\.12\.[0-9]+\+deb[0-9]+-cloud-amd64(-unsigned)?$",
        ])
        .output()
        .context("running apt-cache search")?;
    let mut names: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect();
    // Newest first; at equal version the unsigned image first.
    names.sort_by_key(|n| (version_key(n), n.ends_with("-unsigned")));
    names.reverse();
    for n in names {
        if !out.contains(&n) {
            out.push(n);
        }
    }
    Ok(out)
}

fn meta_target() -> Result<Option<String>> {
    let o = Command::new("apt-cache")
        .args(["show", "linux-image-6.12-cloud-amd64"])
        .output()
        .context("running apt-cache show")?;
    let text = String::from_utf8_lossy(&o.stdout);
    Ok(text
        .lines()
        .find_map(|l| l.strip_prefix("Depends:"))
        .and_then(|d| d.split([',', '(']).next())
        .map(|d| d.trim().to_owned())
        .filter(|d| d.starts_with("linux-image-6.12.")))
}

/// `apt-get download` of package `name` into a fresh `tmp` (never installed): the `.deb`'s
/// path. On failure `tmp` is removed.
pub fn download(tmp: &Path, name: &str) -> Result<PathBuf> {
    if tmp.exists() {
        fs::remove_dir_all(tmp).with_context(|| format!("removing {}", tmp.display()))?;
    }
    fs::create_dir_all(tmp).with_context(|| format!("creating {}", tmp.display()))?;
    eprintln!("vm-test: downloading {name} (apt-get download, not installed)");
    let o = Command::new("apt-get")
        .args(["download", "-qq", name])
        .current_dir(tmp)
        .output()
        .context("running apt-get download")?;
    if !o.status.success() {
        let _ = fs::remove_dir_all(tmp);
        bail!(
            "apt-get download {name} failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
    fs::read_dir(tmp)?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
        .context("apt-get download left no .deb")
}

/// `apt-get download` of `name` into a fresh `tmp` and `dpkg -x` into `tmp/x`: the `.deb`'s
/// path and the unpacked tree. On a failed unpack `tmp` is removed.
pub fn unpack(tmp: &Path, name: &str) -> Result<(PathBuf, PathBuf)> {
    let deb = download(tmp, name)?;
    let unpacked = tmp.join("x");
    let st = Command::new("dpkg")
        .arg("-x")
        .arg(&deb)
        .arg(&unpacked)
        .status()
        .context("running dpkg -x")?;
    if !st.success() {
        let _ = fs::remove_dir_all(tmp);
        bail!("dpkg -x {} failed ({st})", deb.display());
    }
    Ok((deb, unpacked))
}

/// `apt-get download` + `dpkg -x` into `kdir/<name>/` (only `boot/` is kept).
fn fetch(kdir: &Path, name: &str) -> Result<Kernel> {
    let tmp = kdir.join(format!(".fetch-{name}"));
    let (deb, unpacked) = unpack(&tmp, name)?;
    let final_dir = kdir.join(name);
    if final_dir.exists() {
        fs::remove_dir_all(&final_dir)?;
    }
    fs::create_dir_all(&final_dir)?;
    fs::rename(unpacked.join("boot"), final_dir.join("boot"))
        .with_context(|| format!("{} has no /boot", deb.display()))?;
    let _ = fs::remove_dir_all(&tmp);
    match cached(kdir)? {
        Some(k) if k.origin.starts_with(name) => Ok(Kernel {
            origin: name.to_owned(),
            ..k
        }),
        _ => bail!("{name} holds no /boot/vmlinuz-6.12.*-cloud-amd64"),
    }
}

pub fn which(prog: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(prog))
        .find(|p| p.is_file())
}
