//! Project tasks cargo cannot express: set-up, the VM suite, synthetic recordings, benchmarks.
fn main() -> anyhow::Result<()> {
    anyhow::bail!("no task given")
}
