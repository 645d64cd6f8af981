//! What the live tests share. Each test crate compiles this module on its own and not every
//! one uses every helper, hence the `dead_code` allowances.

/// Whether this test can do what needs root (load BPF, write sysctls and scheduler features).
/// When it cannot, the test says on stderr that it was skipped and returns; CI runs as root,
/// so there a skip fails the test instead of passing silently.
#[allow(dead_code)]
pub fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    let name = std::thread::current().name().unwrap_or("?").to_string();
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{name}: CI runs as root: a test that needs root must not be skipped"
    );
    eprintln!("SKIPPED {name}: needs root");
    false
}

/// Whether the machine has at least `n` CPUs; when not, the test says it was skipped.
#[allow(dead_code)]
pub fn cpus(n: usize) -> bool {
    let have = std::thread::available_parallelism().map_or(1, usize::from);
    if have < n {
        let name = std::thread::current().name().unwrap_or("?").to_string();
        eprintln!("SKIPPED {name}: needs {n} CPUs, this machine has {have}");
    }
    have >= n
}
