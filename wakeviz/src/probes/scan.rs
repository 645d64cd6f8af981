//! The idle-scan kprobes: one program per role (`wakeviz_common::for_each_scan_program`),
//! attached at every point the debug info gave for that role (`symbol+offset`, as `perf probe`
//! places probes on inlined code). The records say a scan was watched only when the scan's entry
//! and its idle tests are both attached; anything less leaves the capture as it was.
use aya::{Ebpf, programs::KProbe};
use wakeviz_common::names::{map, scan_program};
use wakeviz_core::{
    format::{ProbeMode, ProbeState, ProbeStatus},
    scan_points::{ScanPoints, ScanRole},
};

use super::reason;

/// The probe-status name of a role's kprobes (one word, as every probe name).
pub fn status_name(role: ScanRole) -> String {
    format!("{}@debuginfo", role.function())
}

/// Attaches every point; returns one status per role that has points, and whether the scan is
/// watched (then `SCAN_ON` is set and the select records carry the measured scan). A count
/// that misses some of its points would be wrong without saying so: unless every point is
/// attached, the programs are unloaded again and nothing is measured.
pub fn attach(ebpf: &mut Ebpf, points: &ScanPoints) -> (Vec<ProbeStatus>, Result<(), String>) {
    let mut status = Vec::new();
    let mut failed = Vec::new();
    for &(role_name, prog) in scan_program::ALL {
        let Some(role) = ScanRole::from_name(role_name) else {
            continue;
        };
        let targets: Vec<_> = points.points.iter().filter(|p| p.role == role).collect();
        if targets.is_empty() {
            continue;
        }
        let r = (|| -> Result<(), String> {
            let p: &mut KProbe = ebpf
                .program_mut(prog)
                .ok_or("program missing")?
                .try_into()
                .map_err(|e| reason(&e))?;
            p.load().map_err(|e| reason(&e))?;
            let fails: Vec<String> = targets
                .iter()
                .filter_map(|t| {
                    p.attach(t.symbol.as_str(), t.offset)
                        .err()
                        .map(|e| format!("{}: {}", t.target(), reason(&e)))
                })
                .collect();
            if fails.is_empty() {
                Ok(())
            } else {
                Err(fails.join("; "))
            }
        })();
        if let Err(why) = &r {
            failed.push(format!("{}: {why}", role.function()));
        }
        status.push(ProbeStatus {
            name: status_name(role),
            mode: Some(ProbeMode::Kprobe),
            state: match r {
                Ok(()) => ProbeState::Attached,
                Err(why) => ProbeState::Failed(why),
            },
            fallbacks: Vec::new(),
        });
    }
    let on = |role| status_of(&status, role);
    let result = if !failed.is_empty() {
        Err(format!("not every point attached ({})", failed.join("; ")))
    } else if !(on(ScanRole::ScanEntry) && on(ScanRole::IdleTest)) {
        Err("the points lack the scan's entry or its idle tests".into())
    } else {
        scan_on(ebpf)
    };
    if result.is_err() {
        unload(ebpf);
    }
    (status, result)
}

/// Detaches and unloads every scan program (they would fire for nothing).
fn unload(ebpf: &mut Ebpf) {
    for &(_, prog) in scan_program::ALL {
        if let Some(p) = ebpf.program_mut(prog)
            && let Ok(k) = <&mut KProbe>::try_from(p)
        {
            let _ = k.unload();
        }
    }
}

fn status_of(status: &[ProbeStatus], role: ScanRole) -> bool {
    let name = status_name(role);
    status.iter().any(|s| s.name == name && s.attached())
}

fn scan_on(ebpf: &mut Ebpf) -> Result<(), String> {
    let m = ebpf.map_mut(map::SCAN_ON).ok_or("no SCAN_ON map")?;
    let mut a: aya::maps::Array<&mut aya::maps::MapData, u32> =
        aya::maps::Array::try_from(m).map_err(|e| reason(&e))?;
    a.set(0, 1, 0).map_err(|e| reason(&e))
}
