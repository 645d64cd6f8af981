//! Rebuild the probes when bpf-linker changes: cargo cannot see it as a dependency, and a stale
//! object linked by an older linker is the kind of bug nobody looks for. Imperfect (the path
//! may stay the same across upgrades) but cheap.
fn main() {
    if let Ok(p) = which::which("bpf-linker") {
        println!("cargo:rerun-if-changed={}", p.display());
    }
}
