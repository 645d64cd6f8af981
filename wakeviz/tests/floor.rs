//! `wakeviz --floor-probes [stream]` (the benchmark's cost floors) on the running kernel (needs root).
//! The programs it holds are read back from the kernel's side: the process's BPF program file
//! descriptors (`/proc/PID/fdinfo`), not wakeviz's own word.
use std::{
    io::{BufRead as _, BufReader},
    process::{Command, Stdio},
};

const BIN: &str = env!("CARGO_BIN_EXE_wakeviz");

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// `prog_type` of every BPF program file descriptor `pid` holds.
fn prog_types(pid: u32) -> Vec<u32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/fdinfo"))
        .unwrap()
        .flatten()
    {
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        if let Some(t) = text
            .lines()
            .find_map(|l| l.strip_prefix("prog_type:"))
            .and_then(|t| t.trim().parse().ok())
        {
            v.push(t);
        }
    }
    v
}

#[test]
fn floor_probes_hold_five_empty_tracing_programs_until_sigint() {
    hold_floor(None, 0);
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
/// floors that send, that the drain read at least `min_drained` ring records.
fn hold_floor(kind: Option<&str>, min_drained: u64) {
    if !is_root() {
        eprintln!("skipped: needs root");
        return;
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
        return;
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
    let types = prog_types(child.id());
    assert_eq!(
        types.iter().filter(|t| **t == 26).count(),
        5,
        "program types held: {types:?}"
    );
    assert_eq!(types.len(), 5, "program types held: {types:?}");
    if let Some(k) = kind {
        let word = if k == "stream" {
            "streaming"
        } else {
            "batching"
        };
        assert!(line.contains(&format!("{word} tp_btf programs")), "{line}");
        for _ in 0..50 {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    } else {
        assert!(line.contains("empty tp_btf programs"), "{line}");
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    let st = child.wait().unwrap();
    assert!(st.success(), "{st}: {rest}");
    assert!(rest.contains("floor probes detached"), "{rest}");
    if kind.is_some() {
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
    }
}
