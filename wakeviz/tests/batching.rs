//! Per-CPU batching, live (needs root and 2 CPUs; CI runs as root): a CPU that runs one task
//! and makes no scheduler event holds its last records in its batch until wakeviz asks it to
//! send them; nothing may wait for that batch for long, and nothing may be lost at the end.
mod support;

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_wakeviz");

/// The spins run one at a time: both use CPU 1.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn usable() -> bool {
    support::root() && support::cpus(2)
}

/// `wakeviz --record` around a task that sleeps, then spins on CPU 1 for 2 s without a system
/// call; returns wakeviz's stderr.
fn spin_under(extra: &[&str]) -> String {
    let _one_at_a_time = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["--headless", "--record"])
        .arg(dir.path().join("spin.wvz"))
        .args(extra)
        .args(["--", "taskset", "-c", "1", "sh", "-c"])
        .arg("sleep 0.05; timeout 2 sh -c 'while :; do :; done'; exit 0")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{stderr}");
    stderr
}

/// The number right after `key` in `text`.
fn after(text: &str, key: &str) -> f64 {
    text.split(key)
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.trim_end_matches(',').parse().ok())
        .unwrap_or_else(|| panic!("no number after `{key}` in:\n{text}"))
}

/// offered = delivered + dropped + undecodable, from the summary's accounting line.
fn assert_accounting_exact(stderr: &str) {
    let offered = after(stderr, "accounting: offered");
    let delivered = after(stderr, "= delivered");
    let dropped = after(stderr, "+ dropped");
    let undecodable = after(stderr, "+ undecodable");
    assert_eq!(offered, delivered + dropped + undecodable, "{stderr}");
    assert_eq!(dropped + undecodable, 0.0, "{stderr}");
}

#[test]
fn a_quiet_busy_cpu_is_flushed_and_the_end_loses_nothing() {
    if !usable() {
        return;
    }
    let stderr = spin_under(&[]);
    // Every record the probes offered arrived: the batches held at the end were sent.
    assert_accounting_exact(&stderr);
    assert!(stderr.contains("merge: 1 ring, late 0"), "{stderr}");
    // CPU 1 held a batch while it spun, and wakeviz had it sent.
    let flushed = after(&stderr, "sent,");
    assert!(flushed >= 1.0, "no batch flushed by wakeviz:\n{stderr}");
    assert!(!stderr.contains("could not be flushed"), "{stderr}");
    // Nothing waited for the spinning CPU: without the flush its held records would have
    // stalled every event behind them for up to the 2 s of the spin.
    let held_ms = after(&stderr, "reached the analyses at most");
    assert!(
        held_ms < 1000.0,
        "events waited {held_ms} ms for a batch:\n{stderr}"
    );
}

#[test]
fn without_batches_every_record_travels_alone() {
    if !usable() {
        return;
    }
    let stderr = spin_under(&["--no-batch"]);
    assert_accounting_exact(&stderr);
    assert!(!stderr.contains("per-CPU batches"), "{stderr}");
}
