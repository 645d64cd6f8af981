//! A busybox initramfs written directly as a `newc` cpio archive (no root, no cpio binary,
//! device nodes included). Left uncompressed: the kernel takes it as is, and skipping gzip saves
//! seconds of decompression under TCG.
use std::{
    collections::BTreeSet,
    fs,
    io::Write,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result, bail};

#[derive(Clone)]
pub struct Initramfs {
    out: Vec<u8>,
    ino: u32,
    dirs: BTreeSet<String>,
    files: BTreeSet<String>,
}

impl Initramfs {
    pub fn new() -> Self {
        let mut s = Self {
            out: Vec::new(),
            ino: 1,
            dirs: BTreeSet::new(),
            files: BTreeSet::new(),
        };
        for d in [
            "bin", "sbin", "usr/bin", "usr/sbin", "proc", "sys", "dev", "tmp", "out", "vm", "etc",
            "root", "lib64",
        ] {
            s.dir(d);
        }
        s.node("dev/console", 0o020600, 5, 1);
        s.node("dev/null", 0o020666, 1, 3);
        s
    }

    fn entry(&mut self, name: &str, mode: u32, data: &[u8], rdev: (u32, u32)) {
        let name = name.trim_start_matches('/');
        let fields = [
            self.ino,
            mode,
            0,
            0,
            1,
            0,
            data.len() as u32,
            0,
            0,
            rdev.0,
            rdev.1,
            name.len() as u32 + 1,
            0,
        ];
        self.ino += 1;
        self.out.extend_from_slice(b"070701");
        for f in fields {
            self.out.extend_from_slice(format!("{f:08x}").as_bytes());
        }
        self.out.extend_from_slice(name.as_bytes());
        self.out.push(0);
        self.pad();
        self.out.extend_from_slice(data);
        self.pad();
    }

    fn pad(&mut self) {
        while !self.out.len().is_multiple_of(4) {
            self.out.push(0);
        }
    }

    /// A directory and its parents (each once).
    pub fn dir(&mut self, path: &str) {
        let path = path.trim_matches('/');
        let mut acc = String::new();
        for part in path.split('/').filter(|p| !p.is_empty()) {
            if !acc.is_empty() {
                acc.push('/');
            }
            acc.push_str(part);
            if self.dirs.insert(acc.clone()) {
                let a = acc.clone();
                self.entry(&a, 0o040755, &[], (0, 0));
            }
        }
    }

    fn parent(&mut self, path: &str) {
        if let Some((p, _)) = path.trim_start_matches('/').rsplit_once('/') {
            self.dir(p);
        }
    }

    pub fn file(&mut self, path: &str, data: &[u8], exec: bool) {
        self.files.insert(path.trim_start_matches('/').to_owned());
        self.parent(path);
        let mode = if exec { 0o100755 } else { 0o100644 };
        self.entry(path, mode, data, (0, 0));
    }

    pub fn symlink(&mut self, path: &str, target: &str) {
        self.parent(path);
        self.entry(path, 0o120777, target.as_bytes(), (0, 0));
    }

    fn node(&mut self, path: &str, mode: u32, major: u32, minor: u32) {
        self.parent(path);
        self.entry(path, mode, &[], (major, minor));
    }

    /// Copies a host file into the same path.
    pub fn host_file(&mut self, host: &Path, exec: bool) -> Result<()> {
        let data = fs::read(host).with_context(|| format!("reading {}", host.display()))?;
        let p = host.to_string_lossy().into_owned();
        self.file(&p, &data, exec);
        Ok(())
    }

    /// A dynamically linked program at `guest_path` plus every library `ldd` names (and the
    /// loader), each at its host path. Debug info is stripped from the copy when objcopy exists.
    pub fn program(&mut self, host: &Path, guest_path: &str, work: &Path) -> Result<()> {
        let stripped = work.join("stripped.bin");
        let src = if super::kernel::which("objcopy").is_some()
            && Command::new("objcopy")
                .arg("--strip-debug")
                .arg(host)
                .arg(&stripped)
                .status()
                .is_ok_and(|s| s.success())
        {
            stripped.clone()
        } else {
            host.to_owned()
        };
        let data = fs::read(&src).with_context(|| format!("reading {}", src.display()))?;
        self.file(guest_path, &data, true);
        let _ = fs::remove_file(&stripped);
        for lib in shared_libs(host)? {
            if !self
                .files
                .contains(lib.to_string_lossy().trim_start_matches('/'))
            {
                self.host_file(&lib, true)?;
            }
        }
        Ok(())
    }

    pub fn write(mut self, path: &Path) -> Result<u64> {
        self.entry("TRAILER!!!", 0, &[], (0, 0));
        let mut f =
            fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
        f.write_all(&self.out)
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(self.out.len() as u64)
    }
}

/// Absolute paths of the shared objects `ldd` lists for `bin` (empty for a static binary).
pub fn shared_libs(bin: &Path) -> Result<Vec<PathBuf>> {
    let o = Command::new("ldd")
        .arg(bin)
        .output()
        .context("running ldd (package libc-bin)")?;
    let text =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    if text.contains("not a dynamic executable") || text.contains("statically linked") {
        return Ok(Vec::new());
    }
    if !o.status.success() {
        bail!("ldd {} failed: {}", bin.display(), text.trim());
    }
    let mut libs = Vec::new();
    for line in text.lines() {
        if line.contains("not found") {
            bail!("ldd {}: {}", bin.display(), line.trim());
        }
        // "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or "/lib64/ld-linux... (0x...)"
        let path = match line.split_once("=>") {
            Some((_, rhs)) => rhs.split_whitespace().next(),
            None => line.split_whitespace().next(),
        };
        if let Some(p) = path.filter(|p| p.starts_with('/')) {
            libs.push(PathBuf::from(p));
        }
    }
    Ok(libs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newc_layout() {
        let mut ir = Initramfs::new();
        ir.file("vm/env", b"x=1\n", false);
        ir.symlink("bin/sh", "busybox");
        let dir = std::env::temp_dir().join(format!("wvz-cpio-{}", std::process::id()));
        fs::create_dir_all(&dir).expect("temp dir");
        let p = dir.join("t.cpio");
        let n = ir.write(&p).expect("write");
        let b = fs::read(&p).expect("read");
        let _ = fs::remove_dir_all(&dir);
        assert_eq!(b.len() as u64, n);
        assert_eq!(b.len() % 4, 0);
        assert!(b.starts_with(b"070701"));
        let text = String::from_utf8_lossy(&b);
        for name in ["dev/console", "vm/env", "bin/sh", "TRAILER!!!"] {
            assert!(text.contains(name), "{name} missing");
        }
        // Every header's magic sits on a 4-byte boundary.
        let mut at = 0;
        let mut entries = 0;
        while at < b.len() && b[at..].starts_with(b"070701") {
            let field = |i: usize| {
                let s = std::str::from_utf8(&b[at + 6 + i * 8..at + 14 + i * 8]).expect("hex");
                usize::from_str_radix(s, 16).expect("hex")
            };
            let (size, namesize) = (field(6), field(11));
            let name_end = at + 110 + namesize;
            let data = name_end.next_multiple_of(4);
            at = (data + size).next_multiple_of(4);
            entries += 1;
        }
        assert_eq!(at, b.len());
        assert!(entries > 10);
    }
}
