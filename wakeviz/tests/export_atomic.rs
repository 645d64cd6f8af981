//! Exports that fail leave nothing behind, and split Perfetto parts stay within their size:
//! a write error half way (here a file-size limit, with SIGXFSZ ignored so the write fails
//! with EFBIG as on a full disk) must leave no `.pftrace`, no Parquet file or directory, and
//! the same export run again must succeed; a recording naming many more tasks than one part's
//! events use must not copy every name into every part.
use std::{
    os::unix::process::CommandExt as _,
    path::{Path, PathBuf},
    process::{Command, Output},
    sync::OnceLock,
};

use wakeviz_core::{
    event::{Comm, TaskName},
    format::{CaptureStats, Recorder, RecorderConfig},
    synth::{self, SynthConfig},
};

/// Task names in the recording that no event uses: about 5 MB of ProcessTree per part if
/// every part repeated them.
const IDLE_NAMES: u32 = 200_000;

/// A synthetic recording (200,000 events) that also names [`IDLE_NAMES`] tasks it never
/// schedules, made once.
fn recording() -> &'static Path {
    static F: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &F.get_or_init(|| {
        let topo = wakeviz_core::topology::fixture::named_topology("xeon-e5-2690v3")
            .expect("fixture topology");
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("names.wvz");
        let cfg = SynthConfig::new(200_000, 5);
        let mut s = synth::events(&topo, &cfg).expect("synth");
        let h = synth::header(&topo, &cfg, &s);
        let f = std::fs::File::create(&p).expect("create");
        let mut rec = Recorder::new(std::io::BufWriter::new(f), &h, RecorderConfig::default())
            .expect("recorder");
        for t in s.tasks().to_vec() {
            rec.learn_task(t);
        }
        for i in 0..IDLE_NAMES {
            rec.learn_task(TaskName {
                pid: 4_000_000 + i,
                comm: Comm::new(&format!("idle-name-{i}")),
                tgid: 0,
                cgroup: 0,
            });
        }
        let mut stats = CaptureStats::default();
        for e in s.by_ref() {
            stats.offered[e.kind()] += 1;
            stats.delivered += 1;
            rec.push(&e).expect("push");
        }
        rec.finish(&stats).expect("finish");
        (dir, p)
    })
    .1
}

/// `wakeviz export ARGS IN`, optionally under a file-size limit of `fsize` bytes.
fn export(args: &[&str], fsize: Option<u64>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_wakeviz"));
    c.arg("export").args(args).arg(recording());
    if let Some(limit) = fsize {
        // SAFETY: between fork and exec only signal and setrlimit run, both async-signal-safe
        // and touching no memory of the parent.
        unsafe {
            c.pre_exec(move || {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                let lim = libc::rlimit {
                    rlim_cur: limit,
                    rlim_max: limit,
                };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    c.output().expect("run wakeviz")
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("ls")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_failed_perfetto_export_leaves_nothing_and_can_be_rerun() {
    let dir = tempfile::tempdir().expect("tempdir");
    for split in [None, Some("1")] {
        let out = dir.path().join("t.pftrace");
        let o = out.to_str().expect("utf-8");
        let mut args = vec!["--perfetto", o];
        if let Some(mb) = split {
            args.extend(["--split-mb", mb]);
        }
        let failed = export(&args, Some(500_000));
        assert!(!failed.status.success(), "{split:?}: {}", err(&failed));
        assert!(
            names(dir.path()).is_empty(),
            "{split:?}: left behind {:?}; {}",
            names(dir.path()),
            err(&failed)
        );
        let ok = export(&args, None);
        assert!(ok.status.success(), "{split:?}: {}", err(&ok));
        let files = names(dir.path());
        assert!(
            !files.is_empty() && files.iter().all(|f| f.ends_with(".pftrace")),
            "{split:?}: {files:?}"
        );
        for f in files {
            std::fs::remove_file(dir.path().join(f)).expect("rm");
        }
    }
}

#[test]
fn a_failed_parquet_export_leaves_no_file_or_directory() {
    let top = tempfile::tempdir().expect("tempdir");
    let dir = top.path().join("pq");
    let d = dir.to_str().expect("utf-8");
    let failed = export(&["--parquet", d], Some(200_000));
    assert!(!failed.status.success(), "{}", err(&failed));
    assert!(
        names(top.path()).is_empty(),
        "left behind {:?} ({})",
        names(top.path()),
        err(&failed)
    );
    // An existing directory is kept, and left as it was.
    std::fs::create_dir(&dir).expect("mkdir");
    let failed = export(&["--parquet", d], Some(200_000));
    assert!(!failed.status.success(), "{}", err(&failed));
    assert!(names(&dir).is_empty(), "left behind {:?}", names(&dir));
    let ok = export(&["--parquet", d], None);
    assert!(ok.status.success(), "{}", err(&ok));
    let subs = names(&dir);
    assert_eq!(subs.len(), 1, "{subs:?}");
    assert_eq!(
        names(&dir.join(&subs[0])),
        [
            "cpus.parquet",
            "events.parquet",
            "metadata.parquet",
            "placements.parquet"
        ]
    );
}

#[test]
fn split_parts_carry_only_the_names_they_use() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("t.pftrace");
    let o = export(
        &[
            "--perfetto",
            out.to_str().expect("utf-8"),
            "--split-mb",
            "1",
        ],
        None,
    );
    assert!(o.status.success(), "{}", err(&o));
    let parts = names(dir.path());
    assert!(parts.len() >= 2, "{parts:?}");
    for p in &parts {
        let len = std::fs::metadata(dir.path().join(p)).expect("stat").len();
        // 1 MiB plus at most one packet group past the cut.
        assert!(len <= (1 << 20) + (64 << 10), "{p}: {len} bytes");
        let bytes = std::fs::read(dir.path().join(p)).expect("read");
        assert!(
            !bytes.windows(10).any(|w| w == b"idle-name-"),
            "{p}: names a task none of its events uses"
        );
    }
}

/// Ctrl-C during an export ends it through the driver: exit 1 with one line saying so, and
/// neither the trace nor its temporary file is left.
#[test]
fn an_export_stopped_by_a_signal_leaves_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("t.pftrace");
    let mut child = Command::new(env!("CARGO_BIN_EXE_wakeviz"))
        .arg("export")
        .arg("--perfetto")
        .arg(&out)
        .arg(recording())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run wakeviz");
    // Once the temporary file exists the export is under way.
    let start = std::time::Instant::now();
    while names(dir.path()).is_empty() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "no temporary file"
        );
        assert!(
            child.try_wait().expect("wait").is_none(),
            "the export ended before it wrote anything"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let pid = libc::pid_t::try_from(child.id()).expect("pid");
    // SAFETY: kill has no memory preconditions; pid is our child, not yet reaped.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let o = child.wait_with_output().expect("wait");
    let e = err(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("stopped by a signal"), "{e}");
    assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));
}
