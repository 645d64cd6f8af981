//! Facts about the traced machine that go into a recording's header, and the conditions of the
//! run (`RunMeta`) that make two recordings comparable.
use std::{io::Read as _, path::Path};

use anyhow::Context as _;
use wakeviz_core::{
    format::{ClockSnapshot, FORMAT_VERSION, Header, ProbeClock, ProbeStatus, ScanSource},
    run::RunMeta,
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

pub(crate) fn clock_ns(clock: libc::clockid_t) -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// The probes' clock, BOOTTIME and REALTIME read back-to-back (BOOTTIME between the other two,
/// so each pair is at most two calls apart), for exports onto another tool's clock.
pub fn clock_snapshot() -> ClockSnapshot {
    let mono = clock_ns(libc::CLOCK_MONOTONIC);
    let boot = clock_ns(libc::CLOCK_BOOTTIME);
    let real = clock_ns(libc::CLOCK_REALTIME);
    ClockSnapshot {
        probe_clock: ProbeClock::Monotonic,
        monotonic_ns: mono as u64,
        boottime_ns: boot as u64,
        realtime_ns: real,
    }
}

pub fn topology(dir: Option<&Path>) -> anyhow::Result<Topology> {
    let root = dir.unwrap_or(Path::new("/sys/devices/system"));
    topology::from_sysfs(root)
        .with_context(|| format!("reading the CPU topology under {}", root.display()))
}

/// Most read from any one /proc or /sys file: root must not hang or balloon on an odd file.
const READ_BOUND: u64 = 64 << 10;

/// The first [`READ_BOUND`] bytes of a /proc or /sys file as text; `None` if unreadable.
pub fn read_bounded(path: &Path) -> Option<String> {
    let f = std::fs::File::open(path).ok()?;
    let mut buf = Vec::new();
    f.take(READ_BOUND).read_to_end(&mut buf).ok()?;
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// A field of the first CPU in /proc/cpuinfo (`vendor_id`, `model name`).
fn cpuinfo_field(text: &str, key: &str) -> Option<String> {
    text.lines()
        .find(|l| l.split(':').next().is_some_and(|k| k.trim() == key))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

fn cpu_vendor() -> Option<String> {
    cpuinfo_field(&read_bounded(Path::new("/proc/cpuinfo"))?, "vendor_id")
}

/// debugfs `sched/features`, mounting debugfs first if it is missing and we are root (as the
/// tracefs code does for tracefs). `None` where it cannot be read (not root, lockdown, a
/// kernel without CONFIG_SCHED_DEBUG): "unknown", never an empty list.
fn sched_features() -> Option<Vec<String>> {
    let path = Path::new(crate::features::FEATURES);
    if !path.exists() {
        crate::features::mount_debugfs();
    }
    let f: Vec<String> = read_bounded(path)?
        .split_whitespace()
        .map(str::to_string)
        .collect();
    (!f.is_empty()).then_some(f)
}

/// Every readable `kernel.sched_*` sysctl, sorted by name.
fn sched_sysctls(dir: &Path) -> Vec<(String, String)> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<(String, String)> = rd
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.starts_with("sched_") || !e.file_type().ok()?.is_file() {
                return None;
            }
            let val = read_bounded(&e.path())?;
            Some((
                format!("kernel.{name}"),
                val.split_whitespace().collect::<Vec<_>>().join(" "),
            ))
        })
        .collect();
    v.sort();
    v
}

/// `ns` since the Unix epoch as RFC 3339 UTC with milliseconds (`2026-12-01T08:00:00.123Z`).
pub fn rfc3339_utc(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let ms = ns.rem_euclid(1_000_000_000) / 1_000_000;
    let (days, sod) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days to a civil date (Howard Hinnant's algorithm, proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    )
}

/// A stable stand-in for the hostname under `--redact-comm`: the same FNV-1a hash the task
/// names get (`Comm::redacted`), over the whole name.
pub fn redact_host(host: &str) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for b in host.bytes() {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    format!("h-{h:08x}")
}

/// The conditions of this run, read now (at the start of the capture).
pub fn run_meta(label: Option<String>, command: Option<Vec<String>>) -> RunMeta {
    let cpuinfo = read_bounded(Path::new("/proc/cpuinfo"));
    RunMeta {
        label,
        start_utc: Some(rfc3339_utc(clock_ns(libc::CLOCK_REALTIME))),
        kernel_cmdline: read_bounded(Path::new("/proc/cmdline"))
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty()),
        sched_features: sched_features(),
        sched_feature_overrides: Vec::new(),
        sysctls: sched_sysctls(Path::new("/proc/sys/kernel")),
        cpu_model: cpuinfo.and_then(|t| cpuinfo_field(&t, "model name")),
        command,
        own_tids: own_tids(),
        scope: None,
        include_own: false,
    }
}

/// Thread ids of this process now (`/proc/self/task`), ascending: what the analyses leave out
/// as wakeviz's own. Empty where `/proc` cannot be read (nothing is left out then).
pub fn own_tids() -> Vec<u32> {
    let mut v: Vec<u32> = std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort_unstable();
    v
}

pub fn header(
    topology: Topology,
    probes: Vec<ProbeStatus>,
    scan_source: ScanSource,
    ringbuf_bytes: u64,
    notes: Vec<String>,
) -> Header {
    let (release, host) = uname();
    let clocks = clock_snapshot();
    let mono = clocks.monotonic_ns as i64;
    Header {
        format_version: FORMAT_VERSION,
        abi_version: wakeviz_common::ABI_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        kernel_release: release,
        hostname: host,
        realtime_offset_ns: clocks.realtime_ns - mono,
        start_ts_ns: mono as u64,
        probes,
        scan_source,
        topology,
        ringbuf_bytes,
        comm_redacted: false,
        cpu_vendor: cpu_vendor(),
        notes,
        run: wakeviz_core::run::RunMeta::default(),
        clocks: Some(clocks),
        scan_points: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_snapshot_is_consistent() {
        let c = clock_snapshot();
        let again = clock_snapshot();
        assert!(c.monotonic_ns > 0 && c.monotonic_ns <= again.monotonic_ns);
        // BOOTTIME counts suspend on top of MONOTONIC; back-to-back reads keep the difference
        // (the time suspended) within a few ms between two snapshots.
        assert!(c.boottime_ns >= c.monotonic_ns);
        assert!((c.boot_minus_probe_ns() - again.boot_minus_probe_ns()).abs() < 5_000_000);
        assert!(c.realtime_ns > 1_600_000_000_000_000_000, "{c:?}");
    }

    #[test]
    fn utc_times() {
        assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00.000Z");
        // date -u -d @1796112000.123 +%FT%T.%3NZ
        assert_eq!(
            rfc3339_utc(1_796_112_000_123_000_000),
            "2026-12-01T08:00:00.123Z"
        );
        assert_eq!(
            rfc3339_utc(951_782_400_000_000_000),
            "2000-02-29T00:00:00.000Z"
        );
        assert_eq!(rfc3339_utc(-1_000_000), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn cpuinfo_fields_and_host_redaction() {
        let t = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) E5-2690 v3 @ 2.60GHz\n";
        assert_eq!(
            cpuinfo_field(t, "vendor_id").as_deref(),
            Some("GenuineIntel")
        );
        assert_eq!(
            cpuinfo_field(t, "model name").as_deref(),
            Some("Intel(R) Xeon(R) E5-2690 v3 @ 2.60GHz")
        );
        assert_eq!(cpuinfo_field(t, "model"), None);
        assert_eq!(redact_host("box1"), redact_host("box1"));
        assert_ne!(redact_host("box1"), redact_host("box2"));
        assert!(!redact_host("box1").contains("box1"));
    }

    #[test]
    fn sysctls_are_read_sorted_and_bounded() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("sched_rr_timeslice_ms"), "100\n").unwrap();
        std::fs::write(d.path().join("sched_autogroup_enabled"), "1\n").unwrap();
        std::fs::write(d.path().join("other"), "x").unwrap();
        std::fs::write(d.path().join("sched_big"), "7".repeat(1 << 20)).unwrap();
        let v = sched_sysctls(d.path());
        let names: Vec<&str> = v.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "kernel.sched_autogroup_enabled",
                "kernel.sched_big",
                "kernel.sched_rr_timeslice_ms"
            ]
        );
        assert_eq!(v[0].1, "1");
        assert_eq!(v[1].1.len() as u64, READ_BOUND);
    }
}
