//! `own`: how often each tracer wakes itself on an idle machine, and what it adds to the
//! machine's timer interrupts and IPIs. Counted by the kernel, not by the tracers: every thread
//! of the tracer's process tree, its voluntary and involuntary context switches from
//! `/proc/PID/task/TID/status` over a window after it settled, and `/proc/interrupts`' LOC
//! (local timer), RES (rescheduling IPIs) and CAL (function-call IPIs) summed over CPUs over
//! the same window. The tracers run in alternation, with a window of no tracer in each round as
//! the machine's own rate; medians over the rounds.
use std::{path::Path, time::Duration};

use super::{Background, Ctx, Summary, median, tracer};

/// Voluntary + involuntary switches of every thread of `pid` and of its descendants; with
/// `only`, of the processes named so (a dashboard's terminal is not the tracer).
fn switches_of(pid: i32, only: Option<&str>) -> u64 {
    let mut total = 0;
    let mut stack = vec![pid];
    while let Some(p) = stack.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        let comm = std::fs::read_to_string(format!("/proc/{p}/comm")).unwrap_or_default();
        let counted = only.is_none_or(|o| comm.trim() == o);
        for t in tasks.flatten() {
            let dir = t.path();
            if counted && let Ok(s) = std::fs::read_to_string(dir.join("status")) {
                total += status_switches(&s);
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
fn window(tracer: Option<(i32, &str)>, w: Duration) -> (f64, f64) {
    let switches = |t: (i32, &str)| switches_of(t.0, Some(t.1));
    let (s0, i0) = (tracer.map_or(0, switches), interrupts());
    std::thread::sleep(w);
    let (s1, i1) = (tracer.map_or(0, switches), interrupts());
    let secs = w.as_secs_f64();
    (
        s1.saturating_sub(s0) as f64 / secs,
        i1.saturating_sub(i0) as f64 / secs,
    )
}

enum Tracer {
    None,
    Wakeviz,
    Dashboard,
    Serve,
    Perf,
}

impl Tracer {
    fn name(&self) -> &'static str {
        match self {
            Self::None => "no tracer",
            Self::Wakeviz => "wakeviz --headless",
            Self::Dashboard => "wakeviz (dashboard)",
            Self::Serve => "wakeviz --serve",
            Self::Perf => "perf sched record",
        }
    }

    /// The name of the tracer's own processes.
    fn comm(&self) -> &'static str {
        match self {
            Self::Perf => "perf",
            _ => "wakeviz",
        }
    }

    fn start(&self, ctx: &Ctx, dir: &Path) -> anyhow::Result<Option<Background>> {
        Ok(match self {
            Self::None => None,
            Self::Wakeviz => Some(tracer::wakeviz(&ctx.wakeviz, ["--headless"], "capturing")?),
            Self::Dashboard => Some(dashboard(&ctx.wakeviz)?),
            Self::Serve => Some(tracer::wakeviz(
                &ctx.wakeviz,
                ["--headless", "--serve", "127.0.0.1:9347"],
                "attached",
            )?),
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
    let tracers = [
        Tracer::None,
        Tracer::Wakeviz,
        Tracer::Dashboard,
        Tracer::Serve,
        Tracer::Perf,
    ];
    let mut own: Vec<Vec<f64>> = vec![Vec::new(); tracers.len()];
    let mut irq: Vec<Vec<f64>> = vec![Vec::new(); tracers.len()];
    for r in 0..rounds {
        for (i, t) in tracers.iter().enumerate() {
            let bg = t.start(ctx, &ctx.out)?;
            std::thread::sleep(tracer::SETTLE + Duration::from_secs(1));
            let (s, q) = window(bg.as_ref().map(|b| (b.pid(), t.comm())), w);
            if let Some(b) = bg {
                if matches!(t, Tracer::Dashboard) {
                    stop_dashboard(b.pid());
                }
                let f = b.stop(Duration::from_secs(30));
                if !matches!(t, Tracer::Dashboard) && !f.ok_after_sigint() {
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
        let (judged, goal, max) = match t {
            Tracer::Wakeviz => (true, "<= 5/s", 5.0),
            Tracer::Dashboard => (true, "<= 15/s", 15.0),
            Tracer::Serve => (true, "<= 5/s", 5.0),
            Tracer::None | Tracer::Perf => (false, "", 0.0),
        };
        let target = |goal: &'static str| if judged { goal } else { "(info: a peer)" };
        sum.add(
            "31",
            format!("idle: {} own context switches", t.name()),
            format!("{s:.1}/s"),
            target(goal),
            judged.then_some(s <= max),
        );
        sum.add(
            "31",
            format!("idle: LOC+RES+CAL under {}", t.name()),
            format!("{q:.1}/s vs {base_irq:.1}/s without a tracer ({added:+.1} %)"),
            target("<= +10 %"),
            judged.then_some(added <= 10.0),
        );
    }
    sum.note("own: bpftrace is not measured by this section (not installed here)");
    under_load(ctx, sum)?;
    super::latency::run(ctx, sum, rounds)
}

/// The dashboard in a terminal of its own (`script` gives it one), counted without `script`.
fn dashboard(bin: &Path) -> anyhow::Result<Background> {
    let mut c = tracer::timeout_cmd();
    c.args(["script", "-qfec"])
        .arg(format!("{} --refresh 250ms", bin.display()))
        .arg("/dev/null");
    let bg = Background::start(&mut c)?;
    // It prints nothing outside its screen: give it the time a capture takes to start.
    std::thread::sleep(Duration::from_secs(3));
    Ok(bg)
}

/// SIGINT to the dashboard's own process (under `timeout` and `script`).
fn stop_dashboard(root: i32) {
    let mut stack = vec![root];
    while let Some(p) = stack.pop() {
        let comm = std::fs::read_to_string(format!("/proc/{p}/comm")).unwrap_or_default();
        if comm.trim() == "wakeviz" {
            // SAFETY: signalling a process of our own tree.
            unsafe { libc::kill(p, libc::SIGINT) };
        }
        let kids =
            std::fs::read_to_string(format!("/proc/{p}/task/{p}/children")).unwrap_or_default();
        stack.extend(
            kids.split_whitespace()
                .filter_map(|x| x.parse::<i32>().ok()),
        );
    }
    std::thread::sleep(Duration::from_secs(2));
}

/// wakeviz's own switches per 1000 captured events while `perf bench sched messaging` runs
/// under it (its own threads only: the benchmark is its child).
fn under_load(ctx: &Ctx, sum: &mut Summary) -> anyhow::Result<()> {
    let runs = if ctx.quick { 3 } else { 5 };
    println!(
        "\n== own under load: `wakeviz --headless -- perf bench sched messaging -g 10 -l 300`, {runs} runs"
    );
    let mut per_k = Vec::new();
    for r in 0..runs {
        let mut c = tracer::timeout_cmd();
        c.arg(&ctx.wakeviz)
            .args(["--headless", "--", "perf", "bench", "sched", "messaging"])
            .args(["-g", "10", "-l", "300"]);
        let bg = Background::start(&mut c)?;
        let pid = bg.pid();
        let own = |p: i32| -> u64 {
            let wv = wakeviz_pid(p);
            wv.map_or(0, own_threads)
        };
        let mut first = None;
        let mut last = 0;
        while bg.running() {
            let v = own(pid);
            if v > 0 {
                first.get_or_insert(v);
                last = v;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let f = bg.stop(Duration::from_secs(60));
        let events = f
            .stderr
            .lines()
            .find_map(|l| {
                l.split("captured ")
                    .nth(1)?
                    .split_whitespace()
                    .next()?
                    .parse::<f64>()
                    .ok()
            })
            .unwrap_or(0.0);
        let n = last.saturating_sub(first.unwrap_or(last)) as f64;
        let k = if events > 0.0 {
            n * 1000.0 / events
        } else {
            f64::NAN
        };
        println!(
            "  run {}: {n} own switches, {events} events captured: {k:.3} per 1000",
            r + 1
        );
        per_k.push(k);
    }
    let m = median(&per_k);
    sum.add(
        "31",
        "messaging: wakeviz's own switches per 1000 captured events",
        format!("{m:.3}"),
        "<= 1",
        Some(m <= 1.0),
    );
    Ok(())
}

/// The wakeviz process under `timeout` (its child).
fn wakeviz_pid(root: i32) -> Option<i32> {
    let kids = std::fs::read_to_string(format!("/proc/{root}/task/{root}/children")).ok()?;
    kids.split_whitespace()
        .filter_map(|x| x.parse::<i32>().ok())
        .find(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "wakeviz")
        })
}

/// Switches of `pid`'s own threads, not of its children.
fn own_threads(pid: i32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("status")).ok())
        .map(|s| status_switches(&s))
        .sum()
}

/// Voluntary + involuntary switches from a `/proc/.../status` text.
fn status_switches(s: &str) -> u64 {
    s.lines()
        .filter(|l| l.starts_with("voluntary_ctxt") || l.starts_with("nonvoluntary"))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum()
}
