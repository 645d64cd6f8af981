//! Item 6: one dashboard frame at 256 CPUs, measured by `wakeviz/benches/frame.rs` (a plain
//! `harness = false` bench: the UI lives in the wakeviz binary crate) and judged here.
use std::{process::Command, time::Duration};

use super::{Ctx, Summary, run_measured};

pub fn run(ctx: &Ctx, sum: &mut Summary) -> anyhow::Result<()> {
    let frames = if ctx.quick { "20" } else { "60" };
    println!(
        "\n[6] dashboard frame at 256 CPUs: cargo bench -p wakeviz --bench frame --profile release (refresh + draw into a ratatui TestBackend, {frames} frames per case)"
    );
    let f = run_measured(
        Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args([
                "bench",
                "-p",
                "wakeviz",
                "--bench",
                "frame",
                "--profile",
                "release",
            ])
            .env("FRAME_BENCH_FRAMES", frames)
            .current_dir(&ctx.root),
        Duration::from_secs(1800),
    )?;
    let lines: Vec<&str> = f
        .stdout
        .lines()
        .filter(|l| l.starts_with("frame:"))
        .collect();
    for l in &lines {
        println!("  {l}");
    }
    let worst = lines
        .iter()
        .find_map(|l| l.strip_prefix("frame: worst median "))
        .and_then(|r| r.split_whitespace().next()?.parse::<f64>().ok());
    let worst_cpu = lines
        .iter()
        .find_map(|l| l.rsplit_once("worst median "))
        .and_then(|(_, r)| r.split_whitespace().next()?.parse::<f64>().ok());
    match (f.ok(), worst) {
        (true, Some(ms)) => {
            sum.add(
                "6",
                "dashboard frame, 256 CPUs, worst view/size/map (wall, median)",
                format!("{ms:.3} ms"),
                "<= 5 ms",
                Some(ms <= 5.0),
            );
            if let Some(c) = worst_cpu {
                sum.add(
                    "6",
                    "dashboard frame, 256 CPUs, worst case (thread CPU, median)",
                    format!("{c:.3} ms"),
                    "<= 5 ms",
                    Some(c <= 5.0),
                );
            }
        }
        _ => {
            let tail: Vec<&str> = f.stderr.lines().rev().take(15).collect();
            println!(
                "  frame bench did not run:\n{}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            );
            sum.add(
                "6",
                "dashboard frame, 256 CPUs",
                "not measured (frame bench failed)",
                "<= 5 ms",
                None,
            );
        }
    }
    Ok(())
}
