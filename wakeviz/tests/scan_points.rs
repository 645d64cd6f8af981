//! `wakeviz scan-points`: the scan points found in DWARF, checked against independent readers
//! (llvm-dwarfdump for the inlined copies' entry addresses, nm for the symbols) on a miniature
//! fair.c built here, and against the known points of a real Debian kernel when its debug
//! vmlinux is cached; and the command's output file handling.
use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    process::{Command, Output},
};

use wakeviz_core::scan_points::{ScanPoints, ScanRole};

mod support;

const BIN: &str = env!("CARGO_BIN_EXE_wakeviz");
const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/scan_points/kernel/sched/fair.c"
);
/// The debug vmlinux of Debian's 6.12.118+deb12-cloud-amd64, where `xtask vm` caches it.
const REAL: &str = "/var/cache/wakeviz-vm/dbg/vmlinux-6.12.118+deb12-cloud-amd64";

/// Says on stderr that the test was skipped and why. CI has every tool these tests use (gcc
/// builds the probes' toolchain, scripts/setup.sh installs LLVM), so there a skip fails.
fn skip(why: &str) {
    let name = std::thread::current().name().unwrap_or("?").to_string();
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{name}: CI has the tools: this test must not be skipped ({why})"
    );
    eprintln!("SKIPPED {name}: {why}");
}

/// The first of `names` that runs (`--version`).
fn tool(names: &[&str]) -> Option<PathBuf> {
    names.iter().map(PathBuf::from).find(|t| {
        Command::new(t)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

fn dwarfdump() -> Option<PathBuf> {
    tool(&[
        "llvm-dwarfdump",
        "/usr/lib/llvm-22/bin/llvm-dwarfdump",
        "llvm-dwarfdump-22",
        "llvm-dwarfdump-19",
        "llvm-dwarfdump-14",
    ])
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("scan-points")
        .args(args)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The points the command prints for `vmlinux`, read back through the file format's checks.
fn points(vmlinux: &Path) -> ScanPoints {
    let o = run(&["--vmlinux", vmlinux.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    ScanPoints::from_json(&o.stdout).unwrap()
}

/// The miniature fair.c linked into an executable (real addresses, unlike a `.o`), in `dir`.
fn build_fixture(dir: &Path) -> Option<PathBuf> {
    let Some(gcc) = tool(&["gcc"]) else {
        skip("needs gcc");
        return None;
    };
    let exe = dir.join("vmlinux");
    let o = Command::new(gcc)
        .args(["-O2", "-g", "-nostdlib", "-static", "-no-pie"])
        .args(["-Wl,--build-id=sha1", "-Wl,-e,select_task_rq_fair", "-o"])
        .arg(&exe)
        .arg(FIXTURE)
        .output()
        .unwrap();
    assert!(o.status.success(), "gcc: {}", stderr(&o));
    Some(exe)
}

/// An inlined copy of a scan function as llvm-dwarfdump prints it.
#[derive(Debug)]
struct Inlined {
    function: String,
    entry: Option<u64>,
    call_line: Option<u32>,
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
}

/// The DW_TAG_inlined_subroutine entries of scan functions in llvm-dwarfdump's text: the
/// abstract origin's name, DW_AT_entry_pc (else DW_AT_low_pc), DW_AT_call_line.
fn inlined(dwarfdump: &Path, file: &Path) -> Vec<Inlined> {
    let o = Command::new(dwarfdump)
        .arg("--debug-info")
        .arg(file)
        .output()
        .unwrap();
    assert!(o.status.success(), "llvm-dwarfdump: {}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    let mut out = Vec::new();
    let mut cur: Option<Die> = None;
    let mut finish = |cur: &mut Option<Die>| {
        if let Some(d) = cur.take()
            && let Some(f) = d.origin
            && ScanRole::of_function(&f).is_some()
        {
            out.push(Inlined {
                function: f,
                entry: d.entry.or(d.low_pc),
                call_line: d.call_line,
            });
        }
    };
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("0x") && t.contains(": ") || t == "NULL" {
            finish(&mut cur);
            if t.ends_with("DW_TAG_inlined_subroutine") {
                cur = Some(Die::default());
            }
            continue;
        }
        let Some(c) = cur.as_mut() else { continue };
        let value = |t: &str| {
            t.split_once('(')
                .map(|(_, v)| v.trim_end_matches(')').to_string())
        };
        if t.starts_with("DW_AT_abstract_origin") {
            c.origin = value(t).and_then(|v| v.split('"').nth(1).map(str::to_string));
        } else if t.starts_with("DW_AT_entry_pc") {
            c.entry = value(t).map(|v| hex(&v));
        } else if t.starts_with("DW_AT_low_pc") {
            c.low_pc = value(t).map(|v| hex(&v));
        } else if t.starts_with("DW_AT_call_line") {
            c.call_line = value(t).map(|v| v.parse().unwrap());
        }
    }
    finish(&mut cur);
    out
}

/// The attributes read from one DW_TAG_inlined_subroutine of llvm-dwarfdump's text.
#[derive(Default)]
struct Die {
    origin: Option<String>,
    entry: Option<u64>,
    low_pc: Option<u64>,
    call_line: Option<u32>,
}

/// Function symbols and their addresses as nm prints them.
fn nm(file: &Path) -> HashMap<String, u64> {
    let o = Command::new("nm").arg(file).output().unwrap();
    assert!(o.status.success(), "nm: {}", stderr(&o));
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (addr, kind, name) = (f.next()?, f.next()?, f.next()?);
            matches!(kind, "t" | "T").then(|| (name.to_string(), hex(addr)))
        })
        .collect()
}

#[test]
fn fixture_points_match_llvm_dwarfdump_and_nm() {
    let Some(dwarfdump) = dwarfdump() else {
        return skip("needs llvm-dwarfdump");
    };
    if tool(&["nm"]).is_none() {
        return skip("needs nm");
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build_fixture(dir.path()) else {
        return;
    };
    let found = points(&exe);
    let copies = inlined(&dwarfdump, &exe);
    let symbols = nm(&exe);

    // Every inlined copy with an entry address is a point at that address, with its call line;
    // every one without is a note.
    let inlined_points: Vec<_> = found
        .points
        .iter()
        .filter(|p| p.call_line.is_some())
        .collect();
    assert_eq!(
        inlined_points.len(),
        copies.iter().filter(|c| c.entry.is_some()).count(),
        "{found:#?}\n{copies:#?}"
    );
    for c in &copies {
        match c.entry {
            Some(addr) => assert!(
                found.points.iter().any(|p| p.addr == addr
                    && p.function == c.function
                    && p.call_line == c.call_line
                    && Some(p.role) == ScanRole::of_function(&c.function)),
                "{c:?} missing from {found:#?}"
            ),
            None => assert!(
                found.notes.iter().any(|n| n.contains(&c.function)),
                "{c:?} has no note in {found:#?}"
            ),
        }
    }
    // The shape of the kernel's: one scan, two CPU tests, the SMT test, all inlined.
    let count = |r| found.points.iter().filter(|p| p.role == r).count();
    assert_eq!(count(ScanRole::ScanEntry), 1, "{found:#?}");
    assert_eq!(count(ScanRole::IdleTest), 2, "{found:#?}");

    // Each point is symbol+offset with nm's address for the symbol.
    for p in &found.points {
        let base = symbols
            .get(&p.symbol)
            .unwrap_or_else(|| panic!("{p:?}: not in nm"));
        assert_eq!(base + p.offset, p.addr, "{p:?}");
    }
    let inlined_into = |f: &str| found.points.iter().find(|p| p.function == f).unwrap();
    assert_eq!(
        inlined_into("select_idle_cpu").symbol,
        "select_task_rq_fair"
    );
    assert_eq!(
        inlined_into("__select_idle_cpu").symbol,
        "select_task_rq_fair"
    );

    // select_idle_core is out of line: a point at its symbol (possibly a clone's), offset 0.
    let (core_sym, core_addr) = symbols
        .iter()
        .find(|(n, _)| n.starts_with("select_idle_core"))
        .expect("nm has select_idle_core");
    let core: Vec<_> = found
        .points
        .iter()
        .filter(|p| p.role == ScanRole::IdleCore)
        .collect();
    assert_eq!(core.len(), 1, "{found:#?}");
    assert_eq!(
        (&core[0].symbol, core[0].offset, core[0].addr),
        (core_sym, 0, *core_addr)
    );

    let build_id = Command::new("readelf")
        .args(["-n"])
        .arg(&exe)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    if let Some(text) = build_id
        && let Some(id) = text.split("Build ID: ").nth(1)
    {
        assert_eq!(found.build_id, id.split_whitespace().next().unwrap());
    }
}

#[test]
fn the_debian_6_12_kernel_has_its_known_points() {
    if !Path::new(REAL).is_file() {
        // A cache of xtask vm's, not something CI is guaranteed to have.
        eprintln!("SKIPPED the_debian_6_12_kernel_has_its_known_points: no {REAL}");
        return;
    }
    let started = std::time::Instant::now();
    let found = points(Path::new(REAL));
    eprintln!("scan-points on {REAL}: {:?}", started.elapsed());
    assert_eq!(found.build_id, "ebc52e2876d4430baf9b7b6f3226b56fe99c2d5f");
    let of = |r| -> Vec<(String, u64, u64)> {
        found
            .points
            .iter()
            .filter(|p| p.role == r)
            .map(|p| (p.symbol.clone(), p.offset, p.addr))
            .collect()
    };
    let srf = |off: u64| {
        (
            "select_task_rq_fair".to_string(),
            off,
            0xffff_ffff_8112_3ff0 + off,
        )
    };
    assert_eq!(of(ScanRole::ScanEntry), [srf(0x545)]);
    assert_eq!(
        of(ScanRole::IdleTest),
        [
            srf(0xffff_ffff_8112_4673 - 0xffff_ffff_8112_3ff0),
            srf(0xffff_ffff_8112_4d59 - 0xffff_ffff_8112_3ff0)
        ]
    );
    assert_eq!(
        of(ScanRole::IdleCore),
        [(
            "select_idle_core.constprop.0".to_string(),
            0,
            0xffff_ffff_8111_8020
        )]
    );
    assert_eq!(of(ScanRole::Smt), []);
    assert!(
        found
            .notes
            .iter()
            .any(|n| n.starts_with("select_idle_smt") && n.contains("no entry address")),
        "{:?}",
        found.notes
    );
    let lines: Vec<_> = found
        .points
        .iter()
        .filter(|p| p.role == ScanRole::IdleTest)
        .map(|p| p.call_line)
        .collect();
    assert_eq!(lines, [Some(7854), Some(7836)]);
}

#[test]
fn out_writes_the_file_once_never_through_a_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build_fixture(dir.path()) else {
        return;
    };
    let exe = exe.to_str().unwrap();
    let out = dir.path().join("points.json");
    let o = run(&["--vmlinux", exe, "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    let written = std::fs::read(&out).unwrap();
    let p = ScanPoints::from_json(&written).unwrap();
    assert!(!p.points.is_empty());
    assert_eq!(
        written,
        run(&["--vmlinux", exe]).stdout,
        "stdout and --out differ"
    );

    // An existing file is refused without --force, kept as .old with it.
    std::fs::write(&out, "mine").unwrap();
    let o = run(&["--vmlinux", exe, "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("exists"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "mine");
    let o = run(&["--vmlinux", exe, "--out", out.to_str().unwrap(), "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(&out).unwrap(), written);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("points.json.old")).unwrap(),
        "mine"
    );

    // A symbolic link is refused even with --force, and its target left alone.
    let target = dir.path().join("target");
    std::fs::write(&target, "target").unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    for force in [false, true] {
        let mut args = vec!["--vmlinux", exe, "--out", link.to_str().unwrap()];
        if force {
            args.push("--force");
        }
        let o = run(&args);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).contains("symbolic link"), "{}", stderr(&o));
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "target");
    }
}

#[test]
fn a_file_that_is_not_a_debug_vmlinux_is_one_line_of_error() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("points.json");
    std::fs::write(&text, "{}").unwrap();
    let missing = dir.path().join("missing");
    // The ELF cases (linked without -g; not linked) are built from the fixture.
    let mut cases = vec![(text, "not an ELF file"), (missing, "cannot open")];
    if let Some(gcc) = tool(&["gcc"]) {
        let exe = dir.path().join("nodebug");
        let o = Command::new(gcc)
            .args([
                "-O2",
                "-nostdlib",
                "-static",
                "-no-pie",
                "-Wl,--build-id=sha1",
            ])
            .args(["-Wl,-e,select_task_rq_fair", "-o"])
            .arg(&exe)
            .arg(FIXTURE)
            .output()
            .unwrap();
        assert!(o.status.success(), "gcc: {}", stderr(&o));
        cases.push((exe, "no debug info"));
        let obj = dir.path().join("fair.o");
        let o = Command::new("gcc")
            .args(["-O2", "-g", "-c", "-o"])
            .arg(&obj)
            .arg(FIXTURE)
            .output()
            .unwrap();
        assert!(o.status.success(), "gcc: {}", stderr(&o));
        cases.push((obj, "not a linked kernel image"));
    } else {
        skip("the ELF cases need gcc");
    }
    for (path, why) in cases {
        let o = run(&["--vmlinux", path.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(1), "{}", path.display());
        let e = stderr(&o);
        assert!(o.stdout.is_empty(), "{}", path.display());
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.starts_with("wakeviz: ") && e.contains(why), "{e}");
    }
}

#[test]
fn a_damaged_vmlinux_is_an_error_or_fewer_points_never_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build_fixture(dir.path()) else {
        return;
    };
    let good = std::fs::read(&exe).unwrap();
    let bad = dir.path().join("bad");
    let mut variants: Vec<Vec<u8>> = Vec::new();
    for i in 1..48 {
        variants.push(good[..good.len() * i / 48].to_vec());
    }
    // Windows of inverted bytes across the file: headers, code, the DWARF sections, the symbol
    // table and the section headers at the end.
    for i in 0..96 {
        let mut v = good.clone();
        let at = v.len() * i / 96;
        let end = (at + 24).min(v.len());
        v[at..end].iter_mut().for_each(|b| *b = !*b);
        variants.push(v);
    }
    for (i, v) in variants.iter().enumerate() {
        std::fs::write(&bad, v).unwrap();
        let o = run(&["--vmlinux", bad.to_str().unwrap()]);
        let e = stderr(&o);
        match o.status.code() {
            Some(0) => {
                ScanPoints::from_json(&o.stdout).unwrap();
            }
            Some(1) => assert!(
                e.lines().count() == 1 && e.starts_with("wakeviz: "),
                "variant {i}: {e}"
            ),
            c => panic!("variant {i}: exit {c:?}: {e}"),
        }
    }
}

/// Points of another kernel build are refused in one line before anything is attached, and
/// without `--scan-points` a capture runs as before (this kernel has no debug vmlinux where
/// distributions put it, or its points would be used).
#[test]
fn points_of_another_kernel_are_refused_in_one_line() {
    if !support::root() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("other.json");
    let other = ScanPoints {
        version: wakeviz_core::scan_points::VERSION,
        vmlinux: "/elsewhere/vmlinux".into(),
        build_id: "00".repeat(20),
        points: vec![wakeviz_core::scan_points::ScanPoint {
            role: ScanRole::ScanEntry,
            symbol: "select_task_rq_fair".into(),
            offset: 0x545,
            addr: 0xffff_ffff_8112_4535,
            function: "select_idle_cpu".into(),
            call_line: Some(8046),
        }],
        notes: Vec::new(),
    };
    std::fs::write(&file, other.to_json()).expect("write");
    let o = Command::new(BIN)
        .arg("--scan-points")
        .arg(&file)
        .args(["--headless", "--duration", "1s"])
        .output()
        .expect("run wakeviz");
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let last = err.lines().last().unwrap_or("");
    assert!(last.contains("another kernel build"), "{err}");
    assert!(
        !err.contains("capturing"),
        "refused before the capture: {err}"
    );
}
