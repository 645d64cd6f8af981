//! Facts about the traced machine that go into a recording's header.
use std::path::Path;

use anyhow::Context as _;
use wakeviz_core::{
    format::{FORMAT_VERSION, Header, ProbeStatus, ScanSource},
    topology::{self, Topology},
};

fn uname() -> (String, String) {
    // SAFETY: utsname is plain old data; uname fills it and NUL-terminates every field.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return ("unknown".into(), "unknown".into());
    }
    let s = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    (s(&u.release), s(&u.nodename))
}

fn clock_ns(clock: libc::clockid_t) -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

pub fn topology(dir: Option<&Path>) -> anyhow::Result<Topology> {
    let root = dir.unwrap_or(Path::new("/sys/devices/system"));
    topology::from_sysfs(root)
        .with_context(|| format!("reading the CPU topology under {}", root.display()))
}

/// `vendor_id` of the first CPU in /proc/cpuinfo.
fn cpu_vendor() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("vendor_id"))
        .and_then(|r| r.split(':').nth(1))
        .map(|v| v.trim().to_string())
}

pub fn header(
    topology: Topology,
    probes: Vec<ProbeStatus>,
    scan_source: ScanSource,
    ringbuf_bytes: u64,
    notes: Vec<String>,
) -> Header {
    let (release, host) = uname();
    let mono = clock_ns(libc::CLOCK_MONOTONIC);
    Header {
        format_version: FORMAT_VERSION,
        abi_version: wakeviz_common::ABI_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        kernel_release: release,
        hostname: host,
        realtime_offset_ns: clock_ns(libc::CLOCK_REALTIME) - mono,
        start_ts_ns: mono as u64,
        probes,
        scan_source,
        topology,
        ringbuf_bytes,
        comm_redacted: false,
        cpu_vendor: cpu_vendor(),
        notes,
        run: wakeviz_core::run::RunMeta::default(),
    }
}
