//! The wake-up entries the `sched_waking` probe looks for on the waker's stack, so a capture
//! without the function probes still knows `WF_SYNC` (`wakeviz_common::WAKE_FLAGS_FROM_STACK`):
//! their text address ranges, from `/proc/kallsyms`.
use std::io::BufRead;

use aya::{Ebpf, Pod};
use wakeviz_common::{MAX_WAKE_FRAMES, WakeFrame, names::map};

use super::{MapValue, kallsyms::Kallsyms};

/// Entries that pass `WF_SYNC` (`kernel/sched/wait.c`): pipes, sockets and epoll wake their
/// readers through them.
pub const SYNC: &[&str] = &[
    "__wake_up_sync_key",
    "__wake_up_locked_sync_key",
    "__wake_up_sync",
];

/// Entries that do not: the innermost entry decides, so a plain wake-up issued from inside a
/// sync one's callback is not taken for sync. (Entries the compiler turns into tail calls never
/// appear on a stack; listing them costs nothing.)
pub const NOT_SYNC: &[&str] = &[
    "__wake_up",
    "__wake_up_locked_key",
    "wake_up_process",
    "wake_up_state",
    "wake_up_q",
];

const _: () = assert!(SYNC.len() + NOT_SYNC.len() <= MAX_WAKE_FRAMES as usize);

// SAFETY: `WakeFrame` is repr(C) plain integers with no padding (zerocopy's derives in
// wakeviz-common prove it): any bit pattern is valid.
unsafe impl Pod for MapValue<WakeFrame> {}

/// The ranges of the [`SYNC`] and [`NOT_SYNC`] functions in a `/proc/kallsyms` text: each from
/// its address to the next text symbol's. Err when no sync entry is there or the addresses are
/// hidden (`kernel.kptr_restrict`, or not root).
pub fn ranges(kallsyms: impl BufRead) -> Result<Vec<WakeFrame>, String> {
    let mut text: Vec<u64> = Vec::new();
    let mut found: Vec<(u64, bool)> = Vec::new();
    for line in kallsyms.lines() {
        let line = line.map_err(|e| format!("/proc/kallsyms: {e}"))?;
        let mut f = line.split_whitespace();
        let (Some(addr), Some(kind), Some(name)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if !matches!(kind, "t" | "T") {
            continue;
        }
        let Ok(addr) = u64::from_str_radix(addr, 16) else {
            continue;
        };
        text.push(addr);
        // Module symbols carry a `[module]` field: the entries are the core kernel's.
        if f.next().is_none() {
            if SYNC.contains(&name) {
                found.push((addr, true));
            } else if NOT_SYNC.contains(&name) {
                found.push((addr, false));
            }
        }
    }
    if !found.iter().any(|&(_, sync)| sync) {
        return Err("no __wake_up_sync_key in /proc/kallsyms".into());
    }
    if found.iter().any(|&(a, _)| a == 0) {
        return Err("kernel addresses hidden in /proc/kallsyms (kernel.kptr_restrict)".into());
    }
    text.sort_unstable();
    text.dedup();
    let mut out = Vec::with_capacity(found.len());
    for (lo_ip, sync) in found {
        let next = text.partition_point(|&a| a <= lo_ip);
        // The last text symbol has no end we can tell: leave it out rather than guess.
        if let Some(&hi_ip) = text.get(next) {
            out.push(WakeFrame {
                lo_ip,
                hi_ip,
                sync: u64::from(sync),
            });
        }
    }
    Ok(out)
}

/// Set to 1, the probe reads no stack and `WF_SYNC` stays unknown: what the stack costs.
pub const SKIP_ENV: &str = "WAKEVIZ_SKIP_WAKE_STACK";

/// Fills the probes' `WAKE_FRAMES` table from the running kernel's `/proc/kallsyms`.
pub fn load(ebpf: &mut Ebpf, kallsyms: &Kallsyms) -> Result<usize, String> {
    if std::env::var_os(SKIP_ENV).is_some_and(|v| v == "1") {
        return Err(format!("{SKIP_ENV}=1"));
    }
    let frames = ranges(kallsyms.text()?.as_bytes())?;
    let m = ebpf.map_mut(map::WAKE_FRAMES).ok_or("no WAKE_FRAMES map")?;
    let mut a: aya::maps::Array<&mut aya::maps::MapData, MapValue<WakeFrame>> =
        aya::maps::Array::try_from(m).map_err(|e| e.to_string())?;
    for (i, w) in frames.iter().enumerate() {
        a.set(i as u32, MapValue(*w), 0)
            .map_err(|e| e.to_string())?;
    }
    Ok(frames.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
ffffffff813b4e50 T try_to_wake_up
ffffffff813b54c0 T wake_up_process
ffffffff813b54f0 T wake_up_q
ffffffff813da9d0 T __wake_up_locked_sync_key
ffffffff813daa00 D some_data
ffffffff813daa10 t helper
ffffffff813df9a0 T __wake_up
ffffffff813dfc30 T __wake_up_sync_key
ffffffffc0001000 t __wake_up [some_module]
ffffffffc0002000 t other [some_module]
";

    #[test]
    fn each_entry_ends_at_the_next_text_symbol() {
        let r = ranges(TEXT.as_bytes()).unwrap();
        let get = |lo: u64| r.iter().find(|w| w.lo_ip == lo).copied().unwrap();
        assert_eq!(
            get(0xffffffff813da9d0).hi_ip,
            0xffffffff813daa10,
            "data is no end"
        );
        assert_eq!(get(0xffffffff813da9d0).sync, 1);
        assert_eq!(get(0xffffffff813df9a0).hi_ip, 0xffffffff813dfc30);
        assert_eq!(get(0xffffffff813df9a0).sync, 0);
        assert_eq!(get(0xffffffff813dfc30).hi_ip, 0xffffffffc0001000);
        assert_eq!(get(0xffffffff813b54c0).sync, 0);
        // The module's own `__wake_up` is not the kernel's.
        assert!(!r.iter().any(|w| w.lo_ip == 0xffffffffc0001000));
        assert_eq!(r.len(), 5);
    }

    #[test]
    fn hidden_addresses_or_no_sync_entry_are_refused() {
        let hidden = TEXT.replace("ffffffff813dfc30", "0000000000000000");
        assert!(ranges(hidden.as_bytes()).unwrap_err().contains("hidden"));
        let none = "ffffffff813df9a0 T __wake_up\nffffffff813dfc30 T x\n";
        assert!(ranges(none.as_bytes()).is_err());
    }
}
