//! `wakeviz --floor-probes [clock|stream|batch]` (the benchmark's cost floors) on the running kernel (needs root).
//! The programs it holds are read back from the kernel's side: the process's BPF program file
//! descriptors (`/proc/PID/fdinfo`), not wakeviz's own word.
mod support;

use std::{
    io::{BufRead as _, BufReader},
    process::{Command, Stdio},
};

const BIN: &str = env!("CARGO_BIN_EXE_wakeviz");

/// `(prog_type, prog_tag)` of every BPF program file descriptor `pid` holds. The tag is the
/// kernel's hash of the program's instructions.
fn progs(pid: u32) -> Vec<(u32, String)> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/fdinfo"))
        .unwrap()
        .flatten()
    {
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        let field = |k: &str| text.lines().find_map(|l| l.strip_prefix(k)).map(str::trim);
        if let Some(t) = field("prog_type:").and_then(|t| t.parse().ok()) {
            v.push((t, field("prog_tag:").unwrap_or("").to_string()));
        }
    }
    v
}

#[test]
fn floor_probes_hold_five_empty_tracing_programs_until_sigint() {
    hold_floor(None, 0);
}

/// The clock floor's programs are not the empty ones: the kernel's instruction hashes of the
/// five differ from the empty floor's (which are all one program, `r0 = 0; exit`).
#[test]
fn clock_floor_holds_programs_other_than_the_empty_ones() {
    let (Some(empty), Some(clock)) = (hold_floor(None, 0), hold_floor(Some("clock"), 0)) else {
        return;
    };
    assert_eq!(empty.len(), 5);
    assert!(empty.iter().all(|t| *t == empty[0]), "{empty:?}");
    assert_eq!(clock.len(), 5);
    assert!(
        clock.iter().all(|t| !empty.contains(t)),
        "{clock:?} vs {empty:?}"
    );
}

/// The streaming floor's programs send records: 50 sleeps of this test's thread are at least
/// 50 switches out, 50 wakings, 50 wakeups and 50 switches in, and the drain counts them.
#[test]
fn streaming_floor_sends_a_record_per_hit() {
    hold_floor(Some("stream"), 200);
}

/// The batching floor sends the same records 32 to a ring record: at least 200 / 32.
#[test]
fn batching_floor_sends_batches() {
    hold_floor(Some("batch"), 200 / 32);
}

/// Holds `--floor-probes [kind]`, checks its programs from the kernel's side and, for the
/// floors that send, that the drain read at least `min_drained` ring records. Returns the tags
/// of the programs it held (`None`: skipped).
fn hold_floor(kind: Option<&str>, min_drained: u64) -> Option<Vec<String>> {
    if !support::root() {
        return None;
    }
    let mut child = Command::new(BIN)
        .arg("--floor-probes")
        .args(kind)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    if line.contains("refused") || line.contains("BTF") {
        // A kernel without tp_btf (no BTF, or BPF tracing forbidden) cannot hold the floor.
        let _ = child.kill();
        let _ = child.wait();
        eprintln!("skipped: {line}");
        return None;
    }
    assert!(line.contains("floor probes attached"), "{line}");
    for tp in [
        "sched_waking",
        "sched_wakeup",
        "sched_wakeup_new",
        "sched_switch",
        "sched_migrate_task",
    ] {
        assert!(line.contains(tp), "{tp} missing: {line}");
    }
    // BPF_PROG_TYPE_TRACING (26) is what tp_btf programs load as; the probe object's other
    // programs are never loaded in this mode.
    let held = progs(child.id());
    let types: Vec<u32> = held.iter().map(|p| p.0).collect();
    assert_eq!(
        types.iter().filter(|t| **t == 26).count(),
        5,
        "program types held: {types:?}"
    );
    assert_eq!(types.len(), 5, "program types held: {types:?}");
    let sends = matches!(kind, Some("stream" | "batch"));
    let word = match kind {
        None => "empty",
        Some("clock") => "clock-only",
        Some("stream") => "streaming",
        Some(_) => "batching",
    };
    assert!(line.contains(&format!("{word} tp_btf programs")), "{line}");
    if sends {
        for _ in 0..50 {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    let st = child.wait().unwrap();
    assert!(st.success(), "{st}: {rest}");
    assert!(rest.contains("floor probes detached"), "{rest}");
    if sends {
        let drained: u64 = rest
            .split("detached; ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no drained count: {rest}"));
        assert!(
            drained >= min_drained,
            "{drained} ring records for 50 sleeps: {rest}"
        );
    } else {
        assert!(!rest.contains("drained"), "{rest}");
    }
    Some(held.into_iter().map(|p| p.1).collect())
}
