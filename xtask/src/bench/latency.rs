//! `own` (continued): what each tracer does to an unrelated latency-sensitive task. `cyclictest`
//! (rt-tests) wakes one SCHED_FIFO thread every millisecond and histograms how late it ran;
//! its p99 and max are taken with no tracer, under `wakeviz --headless`, under
//! `perf sched record` and under bpftrace, in alternation, medians over the rounds.
use std::{path::Path, process::Command, time::Duration};

use anyhow::Context as _;

use super::{Background, Ctx, Summary, median, tracer};

/// One cyclictest run of `secs`: (p99, max) wakeup latency in µs.
fn cyclictest(secs: u64) -> anyhow::Result<(f64, f64)> {
    let out = Command::new("cyclictest")
        .args(["-q", "-m", "-i", "1000", "-h", "20000", "-t1", "-p", "80"])
        .arg(format!("-D{secs}"))
        .output()
        .context("running cyclictest (rt-tests)")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let hist = histogram(&text);
    let total: u64 = hist.iter().map(|&(_, n)| n).sum();
    anyhow::ensure!(total > 0, "cyclictest printed no histogram:\n{text}");
    let mut seen = 0;
    let p99 = hist
        .iter()
        .find(|&&(_, n)| {
            seen += n;
            seen * 100 >= total * 99
        })
        .map_or(0, |&(us, _)| us);
    let max = text
        .lines()
        .find_map(|l| l.strip_prefix("# Max Latencies:"))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .unwrap_or(f64::NAN);
    Ok((p99 as f64, max))
}

/// `US COUNT` lines of a one-thread histogram.
fn histogram(text: &str) -> Vec<(u64, u64)> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            Some((f.next()?.parse().ok()?, f.next()?.parse().ok()?))
        })
        .collect()
}

pub fn run(ctx: &Ctx, sum: &mut Summary, rounds: usize) -> anyhow::Result<()> {
    let secs = if ctx.quick { 5 } else { 10 };
    println!(
        "\n== own: cyclictest's wakeup latency (one SCHED_FIFO thread, 1 ms period, {secs} s) with no tracer, under wakeviz --headless, perf sched record and bpftrace ({rounds} rounds, alternated)"
    );
    let names = [
        "no tracer",
        "wakeviz --headless",
        "perf sched record",
        "bpftrace",
    ];
    let mut v: Vec<Vec<(f64, f64)>> = vec![Vec::new(); names.len()];
    for r in 0..rounds {
        for (i, name) in names.iter().enumerate() {
            let bg = start(i, &ctx.wakeviz, &ctx.out)?;
            if bg.is_some() {
                std::thread::sleep(tracer::SETTLE + Duration::from_secs(1));
            }
            let m = cyclictest(secs);
            if let Some(b) = bg {
                b.stop(Duration::from_secs(30));
            }
            let (p99, max) = m?;
            println!(
                "  round {}: {name:<20} p99 {p99:5.0} us, max {max:6.0} us",
                r + 1
            );
            v[i].push((p99, max));
        }
    }
    let _ = std::fs::remove_file(ctx.out.join("lat-perf.data"));
    let med = |i: usize, f: fn(&(f64, f64)) -> f64| median(&v[i].iter().map(f).collect::<Vec<_>>());
    let (b99, bmax) = (med(0, |x| x.0), med(0, |x| x.1));
    for (i, name) in names.iter().enumerate().skip(1) {
        sum.add(
            "31",
            format!("cyclictest p99 / max under {name}"),
            format!(
                "{:.0} / {:.0} us (no tracer {b99:.0} / {bmax:.0} us)",
                med(i, |x| x.0),
                med(i, |x| x.1)
            ),
            "(info: reported beside the peers)",
            None,
        );
    }
    Ok(())
}

fn start(i: usize, wakeviz: &Path, dir: &Path) -> anyhow::Result<Option<Background>> {
    Ok(match i {
        1 => Some(tracer::wakeviz(wakeviz, ["--headless"], "capturing")?),
        2 => Some(tracer::perf_sched(&dir.join("lat-perf.data"))?),
        3 => Some(tracer::bpftrace()?),
        _ => None,
    })
}
