//! Project tasks cargo cannot express. Each subcommand lives in its own module.
use clap::{Parser, Subcommand};

mod bench;
mod docs;
mod synth;
mod vm;

#[derive(Parser)]
#[command(name = "xtask", about = "wakeviz project tasks")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Write a synthetic recording for a saved sysfs topology (see wakeviz-core's synth module).
    Synth(synth::Args),
    /// Boot Debian's kernel under qemu on NUMA/SMT topologies and run wakeviz with full probes.
    VmTest(vm::Args),
    /// Overhead, probe cost, drops, trace size and replay speed, as ratios measured in one run.
    Bench(bench::Args),
    /// Write the generated reference documents (docs/reference/cli.md, figures.md).
    Docs(docs::Args),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().cmd {
        Cmd::Synth(a) => synth::run(&a),
        Cmd::VmTest(a) => vm::run(&a),
        Cmd::Bench(a) => bench::run(&a),
        Cmd::Docs(a) => docs::run(&a),
    }
}
