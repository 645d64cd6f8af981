//! `own`: how often each tracer wakes itself on an idle machine, and what it adds to the
//! machine's timer interrupts and IPIs. Counted by the kernel, not by the tracers: every thread
//! of the tracer's process tree, its voluntary and involuntary context switches from
//! `/proc/PID/task/TID/status` over a window after it settled, and `/proc/interrupts`' LOC
//! (local timer), RES (rescheduling IPIs) and CAL (function-call IPIs) summed over CPUs over
//! the same window. The tracers run in alternation, with a window of no tracer in each round as
//! the machine's own rate; medians over the rounds. The interrupts a tracer adds are judged on
//! each round's window against the same round's window with no tracer (the median of those
//! paired ratios, with its 95 % interval): the machine's own rate drifts over a run by about as
//! much as a tracer adds.
use std::{path::Path, time::Duration};

use super::{Background, Ctx, Summary, median, median_ci95, tracer};

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
    Bpftrace,
}

impl Tracer {
    fn name(&self) -> &'static str {
        match self {
            Self::None => "no tracer",
            Self::Wakeviz => "wakeviz --headless",
            Self::Dashboard => "wakeviz (dashboard)",
            Self::Serve => "wakeviz --serve",
            Self::Perf => "perf sched record",
            Self::Bpftrace => "bpftrace (5 tracepoints)",
        }
    }

    /// The name of the tracer's own processes.
    fn comm(&self) -> &'static str {
        match self {
            Self::Perf => "perf",
            Self::Bpftrace => "bpftrace",
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
            Self::Bpftrace => Some(tracer::bpftrace()?),
        })
    }
}

pub fn run(ctx: &Ctx, sum: &mut Summary, rounds: Option<usize>) -> anyhow::Result<()> {
    let rounds = rounds.unwrap_or(if ctx.quick { 3 } else { 6 });
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
        Tracer::Bpftrace,
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
        let paired: Vec<f64> = irq[i]
            .iter()
            .zip(&irq[0])
            .filter(|&(_, &b)| b > 0.0)
            .map(|(q, b)| (q / b - 1.0) * 100.0)
            .collect();
        let added = median(&paired);
        let ci = median_ci95(&paired).map_or_else(String::new, |(lo, hi)| {
            format!(", 95 % interval {lo:+.1}..{hi:+.1} %")
        });
        // wakeviz is judged; the others are its peers, reported beside it.
        let (judged, goal, max) = match t {
            Tracer::Wakeviz => (true, "<= 5/s", 5.0),
            Tracer::Dashboard => (true, "<= 15/s", 15.0),
            Tracer::Serve => (true, "<= 5/s", 5.0),
            Tracer::None | Tracer::Perf | Tracer::Bpftrace => (false, "", 0.0),
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
            format!(
                "{q:.1}/s vs {base_irq:.1}/s without a tracer; paired by round {added:+.1} %{ci}"
            ),
            target("<= +10 %"),
            judged.then_some(added <= 10.0),
        );
    }
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

/// wakeviz's own wakeups per 1000 captured events while `perf bench sched messaging` runs
/// under `wakeviz --record --headless` (its own threads only: the benchmark is its child), and
/// its userspace CPU per captured event, per thread, from `/proc/PID/task/*/schedstat`, between
/// its "capturing" line and its last reading before it exits.
fn under_load(ctx: &Ctx, sum: &mut Summary) -> anyhow::Result<()> {
    let runs = if ctx.quick { 3 } else { 5 };
    println!(
        "\n== own under load: `wakeviz --record F --headless -- perf bench sched messaging -g 10 -l 300`, {runs} runs"
    );
    let file = ctx.out.join("own-load.wvz");
    let (mut per_k, mut pre_k, mut ns_ev) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..runs {
        let _ = std::fs::remove_file(&file);
        let mut c = tracer::timeout_cmd();
        c.arg(&ctx.wakeviz)
            .arg("--record")
            .arg(&file)
            .args(["--headless", "--", "perf", "bench", "sched", "messaging"])
            .args(["-g", "10", "-l", "300"]);
        let bg = Background::start(&mut c)?;
        bg.wait_line("capturing", Duration::from_secs(60))?;
        let root = bg.pid();
        let snap = || wakeviz_pid(root).map(threads).unwrap_or_default();
        let first = snap();
        let mut last = first.clone();
        while bg.running() {
            let v = snap();
            if !v.is_empty() {
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
        let diff = |pick: fn(&Thread) -> u64| -> Vec<(String, f64)> {
            last.iter()
                .map(|t| {
                    let before = first.iter().find(|b| b.tid == t.tid).map_or(0, pick);
                    (t.comm.clone(), pick(t).saturating_sub(before) as f64)
                })
                .collect()
        };
        let per = |v: f64, scale: f64| {
            if events > 0.0 {
                v * scale / events
            } else {
                f64::NAN
            }
        };
        let sw: f64 = diff(|t| t.switches).iter().map(|x| x.1).sum();
        let wk: f64 = diff(|t| t.wakeups).iter().map(|x| x.1).sum();
        let cpu = diff(|t| t.run_ns);
        let total_ns: f64 = cpu.iter().map(|x| x.1).sum();
        let split = cpu
            .iter()
            .filter(|x| x.1 > 0.0)
            .map(|(c, ns)| format!("{c} {:.0}", per(*ns, 1.0)))
            .collect::<Vec<_>>()
            .join(", ");
        println!(
            "  run {}: {events} events; {wk} own wakeups ({:.3} per 1000), {sw} switches with preemptions ({:.3} per 1000); userspace CPU {:.0} ns/event ({split})",
            r + 1,
            per(wk, 1000.0),
            per(sw, 1000.0),
            per(total_ns, 1.0)
        );
        per_k.push(per(wk, 1000.0));
        pre_k.push(per(sw - wk, 1000.0));
        ns_ev.push(per(total_ns, 1.0));
    }
    let _ = std::fs::remove_file(&file);
    let m = median(&per_k);
    sum.add(
        "31",
        "messaging: wakeviz's own wakeups (voluntary switches) per 1000 captured events",
        format!("{m:.3}"),
        "<= 1",
        Some(m <= 1.0),
    );
    sum.add(
        "31",
        "messaging: wakeviz preempted (involuntary switches) per 1000 captured events",
        format!("{:.3}", median(&pre_k)),
        "(info: the benchmark's tasks taking its CPU)",
        None,
    );
    sum.add(
        "31",
        "messaging: wakeviz --record --headless userspace CPU per captured event",
        format!("{:.0} ns (per thread: see the runs)", median(&ns_ev)),
        "(info)",
        None,
    );
    Ok(())
}

#[derive(Clone)]
struct Thread {
    tid: u32,
    comm: String,
    switches: u64,
    /// Voluntary switches: the thread blocked, so each is one of its own wakeups.
    wakeups: u64,
    run_ns: u64,
}

/// Each thread of `pid`: its name, switches and CPU time so far.
fn threads(pid: i32) -> Vec<Thread> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| {
            let dir = t.path();
            let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
            let status = read("status")?;
            Some(Thread {
                tid: t.file_name().to_str()?.parse().ok()?,
                comm: read("comm")?.trim().to_string(),
                switches: status_switches(&status),
                wakeups: status
                    .lines()
                    .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0),
                run_ns: read("schedstat")?.split_whitespace().next()?.parse().ok()?,
            })
        })
        .collect()
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

/// Voluntary + involuntary switches from a `/proc/.../status` text.
fn status_switches(s: &str) -> u64 {
    s.lines()
        .filter(|l| l.starts_with("voluntary_ctxt") || l.starts_with("nonvoluntary"))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum()
}
