//! Export files written under a temporary name beside their destination and moved into place
//! only once complete: a failed export (a full disk, a damaged recording, a signal) leaves
//! neither a truncated trace nor a Parquet file without its footer for a glob to pick up, and
//! nothing that would refuse the next export as "exists".
use std::{
    fs::File,
    io::ErrorKind,
    path::{Path, PathBuf},
};

use anyhow::{Context as _, bail};

use crate::sinks::record;

/// A file being written at a temporary name for `dest`; removed when dropped uncommitted.
pub struct Pending {
    tmp: Option<PathBuf>,
    dest: PathBuf,
}

/// Creates the temporary file for `dest` in `dest`'s own directory (so the final rename stays
/// on one filesystem), hidden from globs such as `*.parquet`, with the recording's safety rules
/// (mode 0600, never through a symbolic link, never over an existing file).
pub fn create(dest: &Path) -> anyhow::Result<(File, Pending)> {
    let name = dest
        .file_name()
        .with_context(|| format!("{} names no file", dest.display()))?;
    for n in 0..100u32 {
        let mut t = std::ffi::OsString::from(".");
        t.push(name);
        t.push(format!(".tmp{}-{n}", std::process::id()));
        let tmp = dest.with_file_name(t);
        if tmp.symlink_metadata().is_ok() {
            continue;
        }
        let f = record::create_file(&tmp, false)?;
        return Ok((
            f,
            Pending {
                tmp: Some(tmp),
                dest: dest.to_path_buf(),
            },
        ));
    }
    bail!(
        "cannot find a free temporary name beside {}",
        dest.display()
    )
}

impl Pending {
    /// Moves the finished file to its destination. The destination is checked again (it may
    /// have appeared since the export began): a symbolic link is refused, an existing file only
    /// replaced with `force`, which keeps it as `NAME.old`. The move is a hard link plus an
    /// unlink, so a file that appears at the last moment is never overwritten.
    pub fn commit(mut self, force: bool) -> anyhow::Result<()> {
        let Some(tmp) = self.tmp.take() else {
            return Ok(());
        };
        let dest = &self.dest;
        let done = (|| {
            record::check_target(dest, force)?;
            if force && dest.symlink_metadata().is_ok() {
                let old = record::old_name(dest);
                std::fs::rename(dest, &old).with_context(|| {
                    format!("cannot keep {} as {}", dest.display(), old.display())
                })?;
                say!(
                    "wakeviz: kept the existing {} as {}",
                    dest.display(),
                    old.display()
                );
            }
            match std::fs::hard_link(&tmp, dest) {
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                    bail!(
                        "{} appeared during the export: left as it is",
                        dest.display()
                    )
                }
                r => r.with_context(|| format!("cannot create {}", dest.display())),
            }
        })();
        let _ = std::fs::remove_file(&tmp);
        done
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(t) = self.tmp.take() {
            let _ = std::fs::remove_file(t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    #[test]
    fn nothing_is_left_unless_committed() {
        let d = tempfile::tempdir().expect("tempdir");
        let dest = d.path().join("t.pftrace");
        let (mut f, p) = create(&dest).expect("create");
        f.write_all(b"half").expect("write");
        drop(p);
        assert_eq!(std::fs::read_dir(d.path()).expect("ls").count(), 0);
        let (mut f, p) = create(&dest).expect("create");
        f.write_all(b"whole").expect("write");
        p.commit(false).expect("commit");
        assert_eq!(std::fs::read(&dest).expect("read"), b"whole");
        assert_eq!(std::fs::read_dir(d.path()).expect("ls").count(), 1);
        // An existing destination: refused without force (the temporary file goes), kept as
        // .old with it.
        let (_, p) = create(&dest).expect("create");
        assert!(p.commit(false).is_err());
        assert_eq!(std::fs::read_dir(d.path()).expect("ls").count(), 1);
        let (mut f, p) = create(&dest).expect("create");
        f.write_all(b"new").expect("write");
        p.commit(true).expect("commit");
        assert_eq!(std::fs::read(&dest).expect("read"), b"new");
        assert_eq!(
            std::fs::read(d.path().join("t.pftrace.old")).expect("old"),
            b"whole"
        );
    }
}
