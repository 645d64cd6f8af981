//! `own`: how often each tracer wakes itself on an idle machine, and what it adds to the
//! machine's timer interrupts and IPIs. Counted by the kernel, not by the tracers: every thread
//! of the tracer's process tree, its voluntary and involuntary context switches from
//! `/proc/PID/task/TID/status` over a window after it settled, and `/proc/interrupts`' LOC
//! (local timer), RES (rescheduling IPIs) and CAL (function-call IPIs) summed over CPUs over
//! the same window. The tracers run in alternation, with a window of no tracer in each round as
//! the machine's own rate; medians over the rounds.
use std::{path::Path, time::Duration};

use super::{Background, Ctx, Summary, median, tracer};

/// Voluntary + involuntary switches of every thread of `pid` and of its descendants.
fn switches(pid: i32) -> u64 {
    let mut total = 0;
    let mut stack = vec![pid];
    while let Some(p) = stack.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let dir = t.path();
            if let Ok(s) = std::fs::read_to_string(dir.join("status")) {
                total += s
                    .lines()
                    .filter(|l| l.starts_with("voluntary_ctxt") || l.starts_with("nonvoluntary"))
                    .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                    .sum::<u64>();
            }
            if let Ok(c) = std::fs::read_to_string(dir.join("children")) {
                stack.extend(c.split_whitespace().filter_map(|x| x.parse::<i32>().ok()));
            }
        }
    }
    total
}

/// LOC + RES + CAL over every CPU.
fn interrupts() -> u64 {
    let text = std::fs::read_to_string("/proc/interrupts").unwrap_or_default();
    text.lines()
        .filter(|l| {
            let k = l.trim_start();
            k.starts_with("LOC:") || k.starts_with("RES:") || k.starts_with("CAL:")
        })
        .flat_map(|l| l.split_whitespace().skip(1))
        .map_while(|v| v.parse::<u64>().ok())
        .sum()
}

/// One window: the tracer's own switches and the machine's interrupts, per second.
fn window(pid: Option<i32>, w: Duration) -> (f64, f64) {
    let (s0, i0) = (pid.map_or(0, switches), interrupts());
    std::thread::sleep(w);
    let (s1, i1) = (pid.map_or(0, switches), interrupts());
    let secs = w.as_secs_f64();
    (
        s1.saturating_sub(s0) as f64 / secs,
        i1.saturating_sub(i0) as f64 / secs,
    )
}

enum Tracer {
    None,
    Wakeviz,
    Perf,
}

impl Tracer {
    fn name(&self) -> &'static str {
        match self {
            Self::None => "no tracer",
            Self::Wakeviz => "wakeviz --headless",
            Self::Perf => "perf sched record",
        }
    }

    fn start(&self, ctx: &Ctx, dir: &Path) -> anyhow::Result<Option<Background>> {
        Ok(match self {
            Self::None => None,
            Self::Wakeviz => Some(tracer::wakeviz(&ctx.wakeviz, ["--headless"], "capturing")?),
            Self::Perf => Some(tracer::perf_sched(&dir.join("own-perf.data"))?),
        })
    }
}

pub fn run(ctx: &Ctx, sum: &mut Summary, rounds: Option<usize>) -> anyhow::Result<()> {
    let rounds = rounds.unwrap_or(if ctx.quick { 3 } else { 5 });
    let w = Duration::from_secs(if ctx.quick { 5 } else { 10 });
    println!(
        "\n== own: each tracer's own context switches and the machine's LOC+RES+CAL interrupts at idle ({rounds} rounds x {} s, alternated)",
        w.as_secs()
    );
    let tracers = [Tracer::None, Tracer::Wakeviz, Tracer::Perf];
    let mut own: Vec<Vec<f64>> = vec![Vec::new(); tracers.len()];
    let mut irq: Vec<Vec<f64>> = vec![Vec::new(); tracers.len()];
    for r in 0..rounds {
        for (i, t) in tracers.iter().enumerate() {
            let bg = t.start(ctx, &ctx.out)?;
            std::thread::sleep(tracer::SETTLE + Duration::from_secs(1));
            let (s, q) = window(bg.as_ref().map(|b| b.pid()), w);
            if let Some(b) = bg {
                let f = b.stop(Duration::from_secs(30));
                if !f.ok_after_sigint() {
                    anyhow::bail!("{} ended badly:\n{}", t.name(), f.stderr);
                }
            }
            println!(
                "  round {}: {:<20} own {s:7.1}/s, LOC+RES+CAL {q:8.1}/s",
                r + 1,
                t.name()
            );
            own[i].push(s);
            irq[i].push(q);
        }
    }
    let _ = std::fs::remove_file(ctx.out.join("own-perf.data"));
    let base_irq = median(&irq[0]);
    for (i, t) in tracers.iter().enumerate().skip(1) {
        let (s, q) = (median(&own[i]), median(&irq[i]));
        let added = if base_irq > 0.0 {
            (q / base_irq - 1.0) * 100.0
        } else {
            0.0
        };
        // wakeviz is judged; the others are its peers, reported beside it.
        let judged = matches!(t, Tracer::Wakeviz);
        let target = |goal: &'static str| if judged { goal } else { "(info: a peer)" };
        sum.add(
            "31",
            format!("idle: {} own context switches", t.name()),
            format!("{s:.1}/s"),
            target("<= 5/s"),
            judged.then_some(s <= 5.0),
        );
        sum.add(
            "31",
            format!("idle: LOC+RES+CAL under {}", t.name()),
            format!("{q:.1}/s vs {base_irq:.1}/s without a tracer ({added:+.1} %)"),
            target("<= +10 %"),
            judged.then_some(added <= 10.0),
        );
    }
    sum.note("own: bpftrace, the dashboard and `--serve` are not measured by this section yet");
    Ok(())
}
