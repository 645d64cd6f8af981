//! The running kernel's build id, so points found in a vmlinux are used only on the kernel
//! built from it: an address in another build is an arbitrary instruction.
use std::{io::Read as _, path::Path};

use wakeviz_core::scan_points::{self, ScanPoints};

use super::DebugInfoError;

/// The kernel's own ELF notes, as they are in its image.
pub const NOTES: &str = "/sys/kernel/notes";
/// More than any kernel's notes (a few hundred bytes): a bound on what is read.
const MAX_NOTES_BYTES: u64 = 64 * 1024;
const NT_GNU_BUILD_ID: u32 = 3;

/// The GNU build id in a sequence of raw ELF notes (each: name size, descriptor size and type
/// as native-endian u32s, then the name and the descriptor, each padded to 4 bytes), or
/// `None` if there is none or the notes are malformed before it.
pub fn build_id_in_notes(mut notes: &[u8]) -> Option<&[u8]> {
    let word = |b: &[u8], i: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(b.get(i..i + 4)?.try_into().ok()?))
    };
    let padded = |n: u32| -> Option<usize> { usize::try_from(n).ok()?.checked_next_multiple_of(4) };
    while notes.len() >= 12 {
        let (namesz, descsz, kind) = (word(notes, 0)?, word(notes, 4)?, word(notes, 8)?);
        let name_end = 12usize.checked_add(padded(namesz)?)?;
        let desc_len = usize::try_from(descsz).ok()?;
        let desc_end = name_end.checked_add(padded(descsz)?)?;
        if desc_end > notes.len() {
            return None;
        }
        let name = notes.get(12..12 + usize::try_from(namesz).ok()?)?;
        if kind == NT_GNU_BUILD_ID && name == b"GNU\0" {
            return notes.get(name_end..name_end + desc_len);
        }
        notes = notes.get(desc_end..)?;
    }
    None
}

/// The running kernel's build id, lowercase hex.
pub fn running_build_id() -> Result<String, DebugInfoError> {
    running_build_id_from(Path::new(NOTES))
}

fn running_build_id_from(path: &Path) -> Result<String, DebugInfoError> {
    let at = |why: String| DebugInfoError::RunningKernel {
        path: path.to_path_buf(),
        why,
    };
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_NOTES_BYTES).read_to_end(&mut bytes))
        .map_err(|e| at(format!("cannot read it: {e}")))?;
    match build_id_in_notes(&bytes) {
        Some(id) if !id.is_empty() && id.len() <= 32 => Ok(scan_points::hex(id)),
        Some(id) => Err(at(format!("its build id is {} bytes long", id.len()))),
        None => Err(at("it has no GNU build id note".into())),
    }
}

/// Whether `points` were found in the running kernel's build.
pub fn check_running(points: &ScanPoints) -> Result<(), DebugInfoError> {
    let running = running_build_id()?;
    if running.eq_ignore_ascii_case(&points.build_id) {
        Ok(())
    } else {
        Err(DebugInfoError::OtherBuild {
            vmlinux: points.vmlinux.clone(),
            theirs: points.build_id.clone(),
            running,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(name: &[u8], kind: u32, desc: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&u32::try_from(name.len()).unwrap().to_ne_bytes());
        v.extend_from_slice(&u32::try_from(desc.len()).unwrap().to_ne_bytes());
        v.extend_from_slice(&kind.to_ne_bytes());
        for part in [name, desc] {
            v.extend_from_slice(part);
            v.resize(v.len().next_multiple_of(4), 0);
        }
        v
    }

    #[test]
    fn finds_the_gnu_build_id_among_other_notes() {
        let id: Vec<u8> = (1..=20).collect();
        let mut blob = note(b"Xen\0", 18, &[0; 8]);
        blob.extend(note(b"Linux\0", 6, b"6.12.118+deb12-cloud-amd64\0"));
        // Type 3 under another name is not a build id.
        blob.extend(note(b"Linux\0", NT_GNU_BUILD_ID, &[9; 4]));
        blob.extend(note(b"GNU\0", NT_GNU_BUILD_ID, &id));
        blob.extend(note(b"Linux\0", 1, &[0; 4]));
        assert_eq!(build_id_in_notes(&blob), Some(&id[..]));
        assert_eq!(
            scan_points::hex(build_id_in_notes(&blob).unwrap()).len(),
            40
        );
    }

    #[test]
    fn odd_sizes_are_padded_to_four() {
        let id = [0xab; 7];
        let mut blob = note(b"Linux\0", 1, &[1; 5]);
        blob.extend(note(b"GNU\0", NT_GNU_BUILD_ID, &id));
        assert_eq!(build_id_in_notes(&blob), Some(&id[..]));
    }

    #[test]
    fn malformed_or_missing_notes_are_none_never_a_panic() {
        let good = note(b"GNU\0", NT_GNU_BUILD_ID, &[1; 20]);
        assert_eq!(build_id_in_notes(&[]), None);
        assert_eq!(build_id_in_notes(&note(b"GNU\0", 1, &[1; 20])), None);
        for cut in 0..good.len() {
            assert_eq!(build_id_in_notes(&good[..cut]), None, "cut at {cut}");
        }
        let mut huge = good.clone();
        huge[4..8].copy_from_slice(&u32::MAX.to_ne_bytes());
        assert_eq!(build_id_in_notes(&huge), None);
        let mut huge = good;
        huge[0..4].copy_from_slice(&(u32::MAX - 1).to_ne_bytes());
        assert_eq!(build_id_in_notes(&huge), None);
    }

    #[test]
    fn reads_this_machines_kernel_build_id() {
        if !Path::new(NOTES).exists() {
            eprintln!("SKIPPED reads_this_machines_kernel_build_id: no {NOTES} here");
            return;
        }
        let id = running_build_id().unwrap();
        assert_eq!(id.len(), 40, "{id}: a GNU build id is 20 bytes (sha1)");
        assert!(
            id.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
    }

    #[test]
    fn points_of_another_build_are_refused_naming_both_ids() {
        let Ok(running) = running_build_id() else {
            eprintln!("SKIPPED points_of_another_build_are_refused_naming_both_ids: no {NOTES}");
            return;
        };
        let mut points = ScanPoints {
            version: scan_points::VERSION,
            vmlinux: "/x/vmlinux".into(),
            build_id: "00".repeat(20),
            points: Vec::new(),
            notes: Vec::new(),
        };
        let e = check_running(&points).unwrap_err().to_string();
        assert!(e.contains(&running) && e.contains(&"00".repeat(20)), "{e}");
        assert!(!e.contains('\n'), "{e}");
        points.build_id = running.to_uppercase();
        check_running(&points).unwrap();
    }
}
