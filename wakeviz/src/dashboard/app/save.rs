//! `s`: the current report (text and JSON, as `--report` prints them) and a plain-text capture
//! of the screen, next to the recording (live without one: the current directory).
//!
//! Files are created, never overwritten and never reached through a symlink: `create_new`
//! (O_CREAT|O_EXCL, which does not follow a final symlink) plus O_NOFOLLOW. A name taken by
//! any of the three files moves all three to the next suffix (`-1`, `-2`, ...), so one save's
//! files always share a name.
use std::{
    fs::{File, OpenOptions},
    io::{self, Write as _},
    os::unix::fs::OpenOptionsExt as _,
    path::{Path, PathBuf},
};

use ratatui::buffer::Buffer;

use super::{App, SourceKind};

/// What one save writes, by file suffix.
pub const SUFFIXES: [&str; 3] = ["report.txt", "report.json", "screen.txt"];

/// The screen as plain text, one line per row, trailing blanks trimmed.
pub fn buffer_text(buf: &Buffer) -> String {
    let area = buf.area;
    let mut out = String::new();
    for y in area.top()..area.bottom() {
        let mut row = String::new();
        for x in area.left()..area.right() {
            if let Some(c) = buf.cell((x, y)) {
                row.push_str(c.symbol());
            }
        }
        out.push_str(row.trim_end());
        out.push('\n');
    }
    out
}

/// Mode 0600, as recordings: a report lists task names and command lines.
fn create(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// Writes `contents` (one per [`SUFFIXES`] entry) as `dir/stem[-n].<suffix>` with the first
/// `n` for which none of the names exists; returns the paths.
pub fn write_new(dir: &Path, stem: &str, contents: [&[u8]; 3]) -> io::Result<Vec<PathBuf>> {
    for n in 0..10_000u32 {
        let base = if n == 0 {
            stem.to_string()
        } else {
            format!("{stem}-{n}")
        };
        let paths: Vec<PathBuf> = SUFFIXES
            .iter()
            .map(|s| dir.join(format!("{base}.{s}")))
            .collect();
        if paths.iter().any(|p| p.symlink_metadata().is_ok()) {
            continue;
        }
        let mut made = Vec::new();
        let mut taken = false;
        for (p, c) in paths.iter().zip(contents) {
            match create(p) {
                Ok(mut f) => {
                    made.push(p.clone());
                    if let Err(e) = f.write_all(c).and_then(|()| f.sync_all()) {
                        return Err(io::Error::new(
                            e.kind(),
                            format!("writing {}: {e}", p.display()),
                        ));
                    }
                }
                // Appeared since the check (another save, a planted symlink): next name.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists || is_loop(&e) => {
                    taken = true;
                    break;
                }
                Err(e) => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!("creating {}: {e}", p.display()),
                    ));
                }
            }
        }
        if taken {
            for p in &made {
                let _ = std::fs::remove_file(p);
            }
            continue;
        }
        return Ok(paths);
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("{stem}-1 ... {stem}-9999 all exist in {}", dir.display()),
    ))
}

/// ELOOP: O_NOFOLLOW met a symlink.
fn is_loop(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

/// Where a save goes and under which name: next to the recording, named after it.
pub fn target(source: &SourceKind) -> (PathBuf, String) {
    let rec = match source {
        SourceKind::Live { recording } => recording.as_deref(),
        SourceKind::Replay { path } => Some(path.as_path()),
    };
    match rec {
        Some(p) => {
            let dir = p
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
            let stem = p
                .file_stem()
                .map_or_else(|| "wakeviz".into(), |s| s.to_string_lossy().into_owned());
            (dir, stem)
        }
        None => (PathBuf::from("."), "wakeviz-live".into()),
    }
}

impl App {
    /// The report text and JSON of what the views show now (the range, when marked, is said
    /// at the top of both).
    pub fn report(&self) -> (String, serde_json::Value) {
        let mut text = self.data.report_text();
        let mut json = self.data.report_json();
        if let Some((a, b)) = self.range_ns() {
            text = format!(
                "== {}: stream time from the first event\n{text}",
                self.range_label().unwrap_or_default()
            );
            if let Some(o) = json.as_object_mut() {
                o.insert(
                    "range".into(),
                    serde_json::json!({ "from_ns": a, "to_ns": b }),
                );
            }
        }
        (text, json)
    }

    /// Saves the report and `screen`; the notice says where (or why not).
    pub fn save(&mut self, screen: &str) {
        self.save_wanted = false;
        let (dir, stem) = target(&self.source);
        let (text, json) = self.report();
        let json = match serde_json::to_string_pretty(&json) {
            Ok(j) => j + "\n",
            Err(e) => {
                self.notice = Some(format!("save failed: JSON: {e}"));
                return;
            }
        };
        // Text files someone will `cat`: a recording's metadata can carry escape sequences.
        let text = wakeviz_core::safe_text::escape(&text);
        let json = wakeviz_core::safe_text::escape(&json);
        let screen = wakeviz_core::safe_text::escape(screen);
        self.notice = Some(
            match write_new(
                &dir,
                &stem,
                [text.as_bytes(), json.as_bytes(), screen.as_bytes()],
            ) {
                Ok(paths) => {
                    let names: Vec<String> = paths.iter().map(|p| super::file_name(p)).collect();
                    // The directory in full: "." says nothing once the dashboard is gone.
                    let shown = std::path::absolute(&dir).unwrap_or_else(|_| dir.clone());
                    format!(
                        "saved {} in {}",
                        names.join(", "),
                        wakeviz_core::safe_text::escape(&shown.display().to_string())
                    )
                }
                Err(e) => format!("save failed: {e}"),
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_overwrites_and_never_follows_a_symlink() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        let a = write_new(d, "t", [b"1", b"2", b"3"]).expect("first");
        assert!(a[0].ends_with("t.report.txt"), "{a:?}");
        let b = write_new(d, "t", [b"4", b"5", b"6"]).expect("second");
        assert!(b[2].ends_with("t-1.screen.txt"), "{b:?}");
        assert_eq!(std::fs::read(&a[0]).expect("read"), b"1");
        // A symlink planted where the next save would go: skipped, its target untouched.
        let victim = d.join("victim");
        std::fs::write(&victim, b"keep").expect("victim");
        std::os::unix::fs::symlink(&victim, d.join("t-2.report.json")).expect("symlink");
        let c = write_new(d, "t", [b"7", b"8", b"9"]).expect("third");
        assert!(c[1].ends_with("t-3.report.json"), "{c:?}");
        assert_eq!(std::fs::read(&victim).expect("read"), b"keep");
        assert!(!d.join("t-2.report.txt").exists());
    }

    /// A recording's metadata with a screen clear, a clipboard write (OSC 52), a C1 CSI and a
    /// bidi override: the saved files show them escaped, and are private like recordings.
    #[test]
    fn saved_reports_are_terminal_safe_and_private() {
        use std::os::unix::fs::PermissionsExt as _;
        use wakeviz_core::synth::{self, SynthConfig};
        let dir = tempfile::tempdir().expect("tempdir");
        let topo = crate::dashboard::app::tests::topo();
        let cfg = SynthConfig::new(100, 1);
        let s = synth::events(&topo, &cfg).expect("synth");
        let mut h = synth::header(&topo, &cfg, &s);
        let evil = "x\x1b[2J\x1b]52;c;aGk=\x07\u{9b}2J\u{202e}y";
        h.hostname = evil.into();
        h.run.label = Some(evil.into());
        h.run.command = Some(vec![evil.into()]);
        let mut app = App::new(
            &h,
            SourceKind::Replay {
                path: dir.path().join("r.wvz"),
            },
        );
        app.save(&format!("screen {evil}\n"));
        for suffix in SUFFIXES {
            let p = dir.path().join(format!("r.{suffix}"));
            let text = std::fs::read_to_string(&p).expect("saved");
            let raw: Vec<char> = text
                .chars()
                .filter(|&c| wakeviz_core::safe_text::is_unsafe(c))
                .collect();
            assert!(raw.is_empty(), "{suffix}: raw {raw:?}");
            let mode = std::fs::metadata(&p).expect("stat").permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{suffix}: mode {mode:o}");
        }
        let text = std::fs::read_to_string(dir.path().join("r.report.txt")).expect("text");
        assert!(
            text.contains("x\\u001b[2J\\u001b]52;c;aGk=\\u0007\\u009b2J\\u202ey"),
            "{text}"
        );
        let json = std::fs::read_to_string(dir.path().join("r.report.json")).expect("json");
        let v: serde_json::Value = serde_json::from_str(&json).expect("still JSON");
        assert!(v.to_string().contains("52;c;aGk="), "{v}");
    }

    #[test]
    fn saves_go_next_to_the_recording() {
        let (dir, stem) = target(&SourceKind::Replay {
            path: PathBuf::from("/x/y/run.wvz"),
        });
        assert_eq!((dir, stem.as_str()), (PathBuf::from("/x/y"), "run"));
        let (dir, stem) = target(&SourceKind::Replay {
            path: PathBuf::from("demo.wvz"),
        });
        assert_eq!((dir, stem.as_str()), (PathBuf::from("."), "demo"));
        let (dir, stem) = target(&SourceKind::Live { recording: None });
        assert_eq!((dir, stem.as_str()), (PathBuf::from("."), "wakeviz-live"));
    }
}
