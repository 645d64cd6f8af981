//! `cargo xtask bench`: being written.
#[derive(clap::Args)]
pub struct Args {}

pub fn run(_a: &Args) -> anyhow::Result<()> {
    anyhow::bail!("bench: being written")
}
