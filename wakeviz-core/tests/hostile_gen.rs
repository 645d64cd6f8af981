//! Writes every crafted case to a directory, for manual runs and peak-memory measurements:
//! `HOSTILE_OUT=/tmp/h cargo test --release -p wakeviz-core --test hostile_gen -- --ignored`.
mod hostile_craft;

#[test]
#[ignore = "writes files for manual runs; set HOSTILE_OUT"]
fn write_cases() {
    let Some(dir) = std::env::var_os("HOSTILE_OUT") else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, bytes, _) in hostile_craft::cases() {
        std::fs::write(dir.join(format!("{name}.wvz")), bytes).unwrap();
    }
    std::fs::write(
        dir.join("distinct-pids.wvz"),
        hostile_craft::distinct_pids(600_000),
    )
    .unwrap();
    let pending = hostile_craft::pending_wakings(4_000_000);
    std::fs::write(dir.join("pending-wakings.wvz"), pending).unwrap();
    std::fs::write(
        dir.join("colliding-pids.wvz"),
        hostile_craft::colliding_pids(200_000),
    )
    .unwrap();
    std::fs::write(
        dir.join("small-pids.wvz"),
        hostile_craft::file(
            hostile_craft::topology(4, 4),
            &hostile_craft::rounds(1..=200_000, 4),
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("8192-cpus.wvz"),
        hostile_craft::file(
            hostile_craft::topology(8192, 16),
            &hostile_craft::rounds((0..200_000).map(|i| i % 5000 + 1), 8192),
        ),
    )
    .unwrap();
}
