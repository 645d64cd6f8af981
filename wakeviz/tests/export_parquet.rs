//! `wakeviz export --parquet` end to end: the binary exports the built-in demo recording (a
//! real capture) and a synthetic one, DuckDB (tests/readers/parquet_check.py, in the venv
//! `scripts/setup.sh` installs) reads the union and must count what `--report json` counts;
//! and the output is created as safely as a recording.
use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
    sync::OnceLock,
};

use wakeviz_core::{
    synth::{self, SynthConfig},
    topology::fixture,
};

fn demo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demo.wvz")
}

/// A synthetic recording on the two-socket Xeon fixture, made once.
fn synthetic() -> &'static Path {
    static F: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &F.get_or_init(|| {
        let topo = fixture::named_topology("xeon-e5-2690v3").expect("fixture topology");
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("synth.wvz");
        let f = std::fs::File::create(&p).expect("create");
        synth::generate(
            &topo,
            &SynthConfig::new(200_000, 3),
            std::io::BufWriter::new(f),
        )
        .expect("generate");
        (dir, p)
    })
    .1
}

fn wakeviz(args: &[&str], inputs: &[&Path]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wakeviz"))
        .args(args)
        .args(inputs)
        .output()
        .expect("run wakeviz")
}

fn export(dir: &Path, extra: &[&str], inputs: &[&Path]) -> Output {
    let d = dir.to_str().expect("utf-8 temp path");
    let mut args = vec!["export", "--parquet", d];
    args.extend_from_slice(extra);
    wakeviz(&args, inputs)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn report(rec: &Path) -> serde_json::Value {
    let o = wakeviz(&["--report", "json", "--replay"], &[rec]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("report json")
}

/// The Python with DuckDB, or `None` (with the reason printed) outside CI when it is missing.
fn python() -> Option<PathBuf> {
    let env = std::env::var_os("WAKEVIZ_PYENV").unwrap_or_else(|| "/opt/wakeviz-pyenv".into());
    let py = Path::new(&env).join("bin/python");
    let ok = Command::new(&py)
        .args(["-c", "import duckdb"])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some(py);
    }
    let why = format!(
        "{} cannot import duckdb (scripts/setup.sh installs it)",
        py.display()
    );
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
    eprintln!("skipped: {why}");
    None
}

/// The tables' directory for `rec` in `dir`, from the export's summary line.
fn table_dir(stdout: &str, rec: &Path) -> PathBuf {
    let line = stdout
        .lines()
        .find(|l| l.starts_with(&format!("{} -> ", rec.display())))
        .unwrap_or_else(|| panic!("no line for {} in {stdout}", rec.display()));
    let rest = &line[rec.display().to_string().len() + 4..];
    PathBuf::from(rest.split(": ").next().expect("dir"))
}

fn parquet_rows(p: &Path) -> i64 {
    use parquet::file::reader::FileReader as _;
    let f = std::fs::File::open(p).expect("open parquet");
    let r = parquet::file::reader::SerializedFileReader::new(f).expect("parquet footer");
    r.metadata().file_metadata().num_rows()
}

#[test]
fn duckdb_counts_equal_the_reports_and_recordings_union() {
    let out = tempfile::tempdir().expect("tempdir");
    let dir = out.path().join("exports");
    let (a, b) = (demo(), synthetic());
    let o = export(&dir, &[], &[&a, b]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let stdout = text(&o.stdout);
    let mut pairs = Vec::new();
    for rec in [a.as_path(), b] {
        let rep = report(rec);
        let placed = rep["placement"]["wakeups"]["count"]
            .as_i64()
            .expect("count")
            + rep["placement"]["new_tasks"]["count"]
                .as_i64()
                .expect("count");
        let events = rep["events"]["total"].as_i64().expect("total");
        let sub = table_dir(&stdout, rec);
        assert!(placed > 1000, "{}: {placed}", rec.display());
        // The Rust reader agrees on row counts even where DuckDB is not installed.
        assert_eq!(parquet_rows(&sub.join("placements.parquet")), placed);
        assert_eq!(parquet_rows(&sub.join("events.parquet")), events);
        assert_eq!(parquet_rows(&sub.join("metadata.parquet")), 1);
        let cpus = rep["topology"]["nr_cpus"].as_i64().expect("nr_cpus");
        assert_eq!(parquet_rows(&sub.join("cpus.parquet")), cpus);
        let json = out.path().join(format!("{}.json", pairs.len()));
        std::fs::write(&json, rep.to_string()).expect("write report");
        pairs.push(format!("{}={}", rec.display(), json.display()));
    }
    let mut args = vec![dir.into_os_string()];
    args.extend(pairs.into_iter().map(Into::into));
    if let Some(out) = reader("parquet_check.py", &args) {
        assert!(out.contains("ok: 2 recording(s)"), "{out}");
    }
}

/// Runs `tests/readers/SCRIPT ARGS` with DuckDB's Python and returns what it printed; fails on
/// a non-zero exit; `None` when the Python is missing outside CI (see [`python`]).
fn reader(script: &str, args: &[std::ffi::OsString]) -> Option<String> {
    let py = python()?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/readers")
        .join(script);
    let o = Command::new(py)
        .arg(script)
        .args(args)
        .output()
        .expect("run python");
    println!("{}", text(&o.stdout));
    assert!(
        o.status.success(),
        "{}\n{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    Some(text(&o.stdout))
}

/// `events.parquet` read by DuckDB holds, row by row, what `--dump jsonl` prints for the same
/// recording: the same fields under the same names, and null in every other kind's column.
#[test]
fn the_events_table_and_the_jsonl_dump_hold_the_same_fields() {
    let out = tempfile::tempdir().expect("tempdir");
    let dir = out.path().join("exports");
    let a = demo();
    let o = export(&dir, &[], &[&a]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let sub = table_dir(&text(&o.stdout), &a);
    let dump = wakeviz(&["--dump", "jsonl", "--replay"], &[&a]);
    assert!(dump.status.success(), "{}", text(&dump.stderr));
    let jsonl = out.path().join("demo.jsonl");
    std::fs::write(&jsonl, &dump.stdout).expect("write dump");
    let args = [sub.join("events.parquet").into(), jsonl.into()];
    if let Some(out) = reader("events_check.py", &args) {
        assert!(out.starts_with("ok: "), "{out}");
    }
}

#[test]
fn existing_output_is_refused_unless_force_which_keeps_it() {
    let out = tempfile::tempdir().expect("tempdir");
    let dir = out.path().join("x");
    let a = demo();
    let o = export(&dir, &[], &[&a]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let sub = table_dir(&text(&o.stdout), &a);
    let before = std::fs::read(sub.join("placements.parquet")).expect("read");

    let o = export(&dir, &[], &[&a]);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(err.contains("exists: refusing to overwrite"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!sub.join("placements.parquet.old").exists());

    let o = export(&dir, &["--force"], &[&a]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    for t in ["placements", "events", "metadata", "cpus"] {
        assert!(sub.join(format!("{t}.parquet.old")).exists(), "{t}");
    }
    assert_eq!(
        std::fs::read(sub.join("placements.parquet.old")).expect("read"),
        before
    );
}

#[test]
fn never_writes_through_a_symbolic_link() {
    let out = tempfile::tempdir().expect("tempdir");
    let elsewhere = out.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("mkdir");
    let link = out.path().join("link");
    std::os::unix::fs::symlink(&elsewhere, &link).expect("symlink");
    let o = export(&link, &[], &[&demo()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("symbolic link"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(std::fs::read_dir(&elsewhere).expect("ls").count(), 0);

    // A planted link in place of a table is refused too, before anything is written.
    let dir = out.path().join("real");
    let o = export(&dir, &[], &[&demo()]);
    assert!(o.status.success());
    let sub = table_dir(&text(&o.stdout), &demo());
    let target = out.path().join("victim");
    std::fs::write(&target, b"keep").expect("write");
    std::fs::remove_file(sub.join("events.parquet")).expect("rm");
    std::os::unix::fs::symlink(&target, sub.join("events.parquet")).expect("symlink");
    let o = export(&dir, &["--force"], &[&demo()]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(std::fs::read(&target).expect("read"), b"keep");
    assert!(!sub.join("placements.parquet.old").exists());
}

#[test]
fn the_same_recording_twice_is_refused() {
    let out = tempfile::tempdir().expect("tempdir");
    let copy = out.path().join("copy.wvz");
    std::fs::copy(demo(), &copy).expect("copy");
    let o = export(&out.path().join("x"), &[], &[&demo(), &copy]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("are the same recording"));
    assert!(!out.path().join("x").exists());
}
