//! Items 1-4 on this machine: overhead of wakeviz and of `perf sched record` on `perf bench
//! sched pipe` and hackbench (alternating, one run), BPF run-time cost per wakeup, drops at the
//! highest event rate hackbench produces, and bytes per event on disk.
use std::{
    ffi::OsStr,
    path::Path,
    process::Command,
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};

use super::{Background, Ctx, Finished, Summary, indent, median, run_measured, tracer};

/// Numbers in a line (tokens that parse as numbers once brackets and commas are trimmed).
fn nums(line: &str) -> Vec<f64> {
    line.split_whitespace()
        .filter_map(|t| {
            t.trim_matches(|c: char| matches!(c, '(' | ')' | ',' | '[' | ']' | ':'))
                .parse::<f64>()
                .ok()
        })
        .collect()
}

fn line_with<'a>(text: &'a str, needle: &str) -> Option<&'a str> {
    text.lines().find(|l| l.contains(needle))
}

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Root, perf, hackbench, and a current wakeviz binary.
pub fn preflight(ctx: &Ctx, no_build: bool) -> anyhow::Result<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        bail!("not root (BPF and perf sched record need root): run `sudo -E cargo xtask bench`");
    }
    for t in ["perf", "hackbench", "cyclictest"] {
        if !have(t) {
            bail!("{t} not found (Debian: linux-perf, rt-tests; scripts/setup.sh installs them)");
        }
    }
    if !no_build {
        println!("\nbuilding wakeviz: cargo build --release -p wakeviz");
        let st = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(["build", "--release", "-p", "wakeviz"])
            .current_dir(&ctx.root)
            .status()
            .context("running cargo build")?;
        if !st.success() {
            if ctx.wakeviz.exists() {
                println!(
                    "  build failed; measuring the existing {}",
                    ctx.wakeviz.display()
                );
            } else {
                bail!("cargo build --release -p wakeviz failed and there is no binary");
            }
        }
    }
    if !ctx.wakeviz.exists() {
        bail!("{} missing", ctx.wakeviz.display());
    }
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Tracer {
    None,
    Wakeviz,
    Perf,
    /// `wakeviz --aggregate --headless`: the in-kernel aggregate mode, no event stream.
    Aggregate,
}

impl Tracer {
    const fn name(self) -> &'static str {
        match self {
            Self::None => "alone",
            Self::Wakeviz => "wakeviz --record",
            Self::Perf => "perf sched record",
            Self::Aggregate => "wakeviz aggregate",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Workload {
    Pipe,
    /// `perf bench sched pipe` with both tasks on CPU 0 (`taskset -c 0`), the way scheduler
    /// developers run it to measure a context switch: no idle CPU, no IPI. Unpinned, the
    /// benchmark's speed on a VM depends on how quickly a halted vCPU comes back, and tracing
    /// (busier CPUs, fewer halts) can make it faster, which is no measure of tracing cost.
    PipeOneCpu,
    Hackbench,
}

impl Workload {
    const fn name(self) -> &'static str {
        match self {
            Self::Pipe => "pipe",
            Self::PipeOneCpu => "pipe-1cpu",
            Self::Hackbench => "hackbench",
        }
    }

    fn command(self, quick: bool) -> (Command, String) {
        match self {
            Self::Pipe => {
                let loops = if quick { "200000" } else { "500000" };
                let mut c = Command::new("perf");
                c.args(["bench", "sched", "pipe", "-l", loops]);
                (c, format!("perf bench sched pipe -l {loops}"))
            }
            Self::PipeOneCpu => {
                let loops = if quick { "200000" } else { "500000" };
                let mut c = Command::new("taskset");
                c.args(["-c", "0", "perf", "bench", "sched", "pipe", "-l", loops]);
                (c, format!("taskset -c 0 perf bench sched pipe -l {loops}"))
            }
            Self::Hackbench => {
                let (g, l) = if quick { ("4", "500") } else { ("8", "1000") };
                let mut c = Command::new("hackbench");
                c.args(["-g", g, "-l", l]);
                (c, format!("hackbench -g {g} -l {l}"))
            }
        }
    }

    /// The benchmark's own elapsed time.
    fn reported_secs(self, out: &str) -> Option<f64> {
        let l = match self {
            Self::Pipe | Self::PipeOneCpu => line_with(out, "Total time:")?,
            Self::Hackbench => line_with(out, "Time:")?,
        };
        nums(l).first().copied()
    }
}

/// What a traced run left on disk.
#[derive(Clone, Debug)]
pub struct Trace {
    workload: &'static str,
    tracer: &'static str,
    bytes: u64,
    events: u64,
    detail: String,
}

/// The overhead rounds' traces, for the size section.
pub struct Files {
    traces: Vec<Trace>,
}

struct Sample {
    wall: f64,
    cpu: f64,
    tracer_cpu: f64,
}

fn start_tracer(
    ctx: &Ctx,
    t: Tracer,
    file: &Path,
    extra: &[&str],
) -> anyhow::Result<Option<Background>> {
    let _ = std::fs::remove_file(file);
    let bg = match t {
        Tracer::None => return Ok(None),
        Tracer::Aggregate => {
            let args = ["--aggregate", "--headless"].iter().chain(extra);
            tracer::wakeviz(&ctx.wakeviz, args, "capturing in-kernel aggregates")?
        }
        Tracer::Wakeviz => {
            let mut args = vec![
                OsStr::new("--record"),
                file.as_os_str(),
                OsStr::new("--headless"),
            ];
            args.extend(extra.iter().map(OsStr::new));
            tracer::wakeviz(&ctx.wakeviz, args, "capturing")?
        }
        Tracer::Perf => tracer::perf_sched(file)?,
    };
    std::thread::sleep(tracer::SETTLE);
    Ok(Some(bg))
}

/// `timeout` runs the tracer as its child; signal the tracer itself through `timeout`, which
/// forwards SIGINT. Returns the tracer's exit and stderr.
fn stop_tracer(bg: Background) -> Finished {
    bg.stop(Duration::from_secs(180))
}

fn wakeviz_trace(workload: &'static str, stderr: &str) -> Option<Trace> {
    let events = nums(line_with(stderr, "captured ")?).first().copied()? as u64;
    let wrote = nums(line_with(stderr, "wrote ")?);
    Some(Trace {
        workload,
        tracer: "wakeviz",
        bytes: *wrote.first()? as u64,
        events,
        detail: String::new(),
    })
}

fn perf_trace(workload: &'static str, file: &Path, stderr: &str) -> Option<Trace> {
    // "[ perf record: Captured and wrote 52.995 MB /x/p.data (510850 samples) ]"
    let l = line_with(stderr, "samples)")?;
    let i = l.rfind('(')?;
    let samples: u64 = l[i + 1..].split_whitespace().next()?.parse().ok()?;
    let bytes = std::fs::metadata(file).ok()?.len();
    // The same kinds wakeviz records (perf sched record also samples sched_stat_runtime).
    let stats = Command::new("timeout")
        .args(["120", "perf", "report", "--stats", "-i"])
        .arg(file)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let mut per = Vec::new();
    let mut cur = String::new();
    for l in stats.lines() {
        if let Some(ev) = l.trim().strip_suffix(" stats:") {
            cur = ev.to_string();
        } else if l.contains("SAMPLE events:")
            && !cur.is_empty()
            && let Some(n) = nums(l).first()
        {
            per.push((cur.clone(), *n as u64));
        }
    }
    let detail = per
        .iter()
        .map(|(k, n)| format!("{} {n}", k.trim_start_matches("sched:")))
        .collect::<Vec<_>>()
        .join(", ");
    Some(Trace {
        workload,
        tracer: "perf sched record",
        bytes,
        events: samples,
        detail,
    })
}

/// Item 1: alone / wakeviz / perf sched record, alternating, several rounds, medians.
pub fn overhead(ctx: &Ctx, sum: &mut Summary, only_for_size: bool) -> anyhow::Result<Files> {
    let rounds = if only_for_size {
        1
    } else if ctx.quick {
        4
    } else {
        7
    };
    println!(
        "\n[1] overhead on the traced system: {rounds} rounds, each running every workload alone, under `wakeviz --record --headless`, under `perf sched record` (in that order)"
    );
    let tracers = [Tracer::None, Tracer::Wakeviz, Tracer::Perf];
    let workloads = [Workload::Pipe, Workload::PipeOneCpu, Workload::Hackbench];
    for w in workloads {
        println!("  {}: {}", w.name(), w.command(ctx.quick).1);
    }
    let mut samples: Vec<Vec<Vec<Sample>>> = workloads
        .iter()
        .map(|_| tracers.iter().map(|_| Vec::new()).collect())
        .collect();
    let mut traces = Vec::new();
    for r in 1..=rounds {
        for (wi, w) in workloads.iter().enumerate() {
            for (ti, t) in tracers.iter().enumerate() {
                let file = ctx.out.join(match t {
                    Tracer::None | Tracer::Aggregate => String::new(),
                    Tracer::Wakeviz => format!("ov-{}-r{r}.wvz", w.name()),
                    Tracer::Perf => format!("ov-{}-r{r}.perf.data", w.name()),
                });
                let bg = start_tracer(ctx, *t, &file, &[])?;
                let (mut cmd, _) = w.command(ctx.quick);
                let b = run_measured(&mut cmd, Duration::from_secs(300))?;
                let tr = bg.map(stop_tracer);
                if !b.ok() {
                    bail!(
                        "{} failed ({:?}):\n{}{}",
                        w.name(),
                        b.status,
                        b.stdout,
                        b.stderr
                    );
                }
                let wall = w.reported_secs(&b.stdout).with_context(|| {
                    format!("no time in the {} output:\n{}", w.name(), b.stdout)
                })?;
                let tracer_cpu = tr.as_ref().map_or(0.0, |f| f.cpu.as_secs_f64());
                if let Some(f) = &tr
                    && !f.ok_after_sigint()
                {
                    bail!("{} exited badly ({}):\n{}", t.name(), f.status, f.stderr);
                }
                match (t, &tr) {
                    (Tracer::Wakeviz, Some(f)) => traces.extend(wakeviz_trace(w.name(), &f.stderr)),
                    (Tracer::Perf, Some(f)) => {
                        traces.extend(perf_trace(w.name(), &file, &f.stderr))
                    }
                    _ => {}
                }
                if *t == Tracer::Perf {
                    // Big files; the figures are taken, the bytes are not needed any more.
                    let _ = std::fs::remove_file(&file);
                }
                println!(
                    "  round {r} {:<9} {:<18} {:>8.3} s wall (reported)  {:>7.3} s CPU (benchmark procs){}",
                    w.name(),
                    t.name(),
                    wall,
                    b.cpu.as_secs_f64(),
                    if *t == Tracer::None {
                        String::new()
                    } else {
                        format!("  tracer CPU {tracer_cpu:.3} s")
                    }
                );
                samples[wi][ti].push(Sample {
                    wall,
                    cpu: b.cpu.as_secs_f64(),
                    tracer_cpu,
                });
            }
        }
    }
    if only_for_size {
        return Ok(Files { traces });
    }
    for (wi, w) in workloads.iter().enumerate() {
        let med = |ti: usize, f: &dyn Fn(&Sample) -> f64| {
            median(&samples[wi][ti].iter().map(f).collect::<Vec<_>>())
        };
        // Slowdown per round against the same round's run alone, then the median: the pairs
        // are close in time, so slow drifts of the machine's load cancel out.
        let paired = |ti: usize, f: &dyn Fn(&Sample) -> f64| {
            let v: Vec<f64> = samples[wi][0]
                .iter()
                .zip(&samples[wi][ti])
                .map(|(a, t)| (f(t) / f(a) - 1.0) * 100.0)
                .collect();
            (median(&v), v)
        };
        for (metric, f) in [
            ("wall", &(|s: &Sample| s.wall) as &dyn Fn(&Sample) -> f64),
            ("CPU", &|s: &Sample| s.cpu),
        ] {
            let (a, wv, pf) = (med(0, f), med(1, f), med(2, f));
            let (ow, vw) = paired(1, f);
            let (op, vp) = paired(2, f);
            let list = |v: &[f64]| {
                v.iter()
                    .map(|x| format!("{x:+.1}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            println!(
                "  {} {metric}: medians alone {a:.3} s, wakeviz {wv:.3} s, perf sched record {pf:.3} s; per-round slowdown wakeviz [{}]%, perf [{}]%",
                w.name(),
                list(&vw),
                list(&vp)
            );
            if matches!(*w, Workload::Pipe | Workload::PipeOneCpu) {
                sum.add(
                    "1",
                    format!(
                        "{} slowdown under wakeviz ({metric} time, median of rounds)",
                        w.name()
                    ),
                    format!("{ow:+.2}%"),
                    "<= 3%",
                    Some(ow <= 3.0),
                );
                if ow < 0.0 {
                    sum.note(format!(
                        "{} ran faster traced than alone ({metric} {ow:+.2}%): the untraced run paid for idle CPUs (halt and IPI on a VM) that the tracing's extra work avoided; that figure is not a cost",
                        w.name()
                    ));
                }
            }
            let half = op / 2.0;
            let (target, met) = if op > 0.0 {
                (format!("< half of perf ({half:+.2}%)"), Some(ow < half))
            } else {
                ("< half of perf (perf cost <= 0: noise)".to_string(), None)
            };
            sum.add(
                "1",
                format!(
                    "{} slowdown: wakeviz vs perf sched record ({metric})",
                    w.name()
                ),
                format!("{ow:+.2}% vs {op:+.2}%"),
                target,
                met,
            );
        }
        let twv = med(1, &|s| s.tracer_cpu);
        let tpf = med(2, &|s| s.tracer_cpu);
        println!(
            "  {} tracer process CPU (median): wakeviz {twv:.3} s, perf sched record {tpf:.3} s",
            w.name()
        );
    }
    Ok(Files { traces })
}

/// `usecs/op` as `perf bench sched pipe` prints it.
fn usecs_per_op(out: &str) -> Option<f64> {
    nums(line_with(out, "usecs/op")?).first().copied()
}

/// The in-kernel aggregate mode against streaming: the pipe benchmarks alone, under
/// `wakeviz --record --headless` and under `wakeviz --aggregate --headless`, alternating,
/// several rounds; the µs/op each adds (paired with the same round's run alone, median) and
/// the aggregate's share of the streaming cost.
pub fn aggregate(ctx: &Ctx, sum: &mut Summary) -> anyhow::Result<()> {
    let rounds = if ctx.quick { 4 } else { 7 };
    let tracers = [Tracer::None, Tracer::Wakeviz, Tracer::Aggregate];
    let workloads = [Workload::Pipe, Workload::PipeOneCpu];
    println!(
        "\n[14] in-kernel aggregate mode vs streaming: {rounds} rounds, each running every workload alone, under `wakeviz --record --headless`, under `wakeviz --aggregate --headless` (in that order)"
    );
    for w in workloads {
        println!("  {}: {}", w.name(), w.command(ctx.quick).1);
    }
    // [workload][tracer] -> (µs/op, tracer CPU s) per round
    let mut v: Vec<Vec<Vec<(f64, f64)>>> = workloads
        .iter()
        .map(|_| tracers.iter().map(|_| Vec::new()).collect())
        .collect();
    for r in 1..=rounds {
        for (wi, w) in workloads.iter().enumerate() {
            for (ti, t) in tracers.iter().enumerate() {
                let file = ctx.out.join(format!("agg-{}-r{r}.wvz", w.name()));
                let bg = start_tracer(ctx, *t, &file, &[])?;
                let (mut cmd, _) = w.command(ctx.quick);
                let b = run_measured(&mut cmd, Duration::from_secs(300))?;
                let tr = bg.map(stop_tracer);
                let _ = std::fs::remove_file(&file);
                if !b.ok() {
                    bail!(
                        "{} failed ({:?}):\n{}{}",
                        w.name(),
                        b.status,
                        b.stdout,
                        b.stderr
                    );
                }
                if let Some(f) = &tr
                    && !f.ok_after_sigint()
                {
                    bail!("{} exited badly ({}):\n{}", t.name(), f.status, f.stderr);
                }
                let us = usecs_per_op(&b.stdout).with_context(|| {
                    format!("no usecs/op in the {} output:\n{}", w.name(), b.stdout)
                })?;
                let tcpu = tr.as_ref().map_or(0.0, |f| f.cpu.as_secs_f64());
                println!(
                    "  round {r} {:<9} {:<18} {us:>8.3} us/op  tracer CPU {tcpu:.3} s",
                    w.name(),
                    t.name()
                );
                v[wi][ti].push((us, tcpu));
            }
        }
    }
    for (wi, w) in workloads.iter().enumerate() {
        let added = |ti: usize| {
            let d: Vec<f64> = v[wi][0]
                .iter()
                .zip(&v[wi][ti])
                .map(|(a, t)| t.0 - a.0)
                .collect();
            median(&d)
        };
        let med = |ti: usize, f: fn(&(f64, f64)) -> f64| {
            median(&v[wi][ti].iter().map(f).collect::<Vec<_>>())
        };
        let (alone, stream, agg) = (med(0, |x| x.0), med(1, |x| x.0), med(2, |x| x.0));
        let (ds, da) = (added(1), added(2));
        println!(
            "  {} medians: alone {alone:.3} us/op, streaming {stream:.3}, aggregate {agg:.3}; added per op (paired): streaming {ds:+.3} us, aggregate {da:+.3} us; tracer CPU streaming {:.3} s, aggregate {:.3} s",
            w.name(),
            med(1, |x| x.1),
            med(2, |x| x.1)
        );
        sum.add(
            "14",
            format!("{}: us/op added, aggregate vs streaming", w.name()),
            format!("{da:+.3} vs {ds:+.3} us"),
            "aggregate < streaming",
            (ds > 0.0).then_some(da < ds),
        );
        sum.add(
            "14",
            format!(
                "{}: aggregate cost / streaming cost (added us/op)",
                w.name()
            ),
            if ds > 0.0 {
                format!("{:.2}", da / ds)
            } else {
                "n/a (streaming cost <= 0: noise)".into()
            },
            "(info)",
            None,
        );
    }
    Ok(())
}

/// Item 2: BPF run-time statistics under the pipe benchmark.
pub fn bpf_stats(ctx: &Ctx, sum: &mut Summary) -> anyhow::Result<()> {
    println!(
        "\n[2] probe cost from the kernel's BPF run-time stats (wakeviz --bpf-stats, under the pipe benchmark)"
    );
    let file = ctx.out.join("bpf-stats.wvz");
    let bg = start_tracer(ctx, Tracer::Wakeviz, &file, &["--bpf-stats"])?.context("no tracer")?;
    let (mut cmd, desc) = Workload::Pipe.command(ctx.quick);
    let b = run_measured(&mut cmd, Duration::from_secs(300))?;
    let f = stop_tracer(bg);
    if !f.ok_after_sigint() || !b.ok() {
        bail!("bpf-stats run failed:\n{}\n{}", f.stderr, b.stderr);
    }
    println!("  workload: {desc}");
    let bpf: Vec<&str> = f.stderr.lines().filter(|l| l.starts_with("bpf:")).collect();
    for l in &bpf {
        println!("    {l}");
    }
    if let Some(l) = f
        .stderr
        .lines()
        .find(|l| l.contains("select_task_rq_fair") && !l.starts_with("bpf:"))
    {
        println!("    probe status: {}", l.trim());
        if !l.contains("attached") {
            sum.note(format!(
                "select_task_rq_fair fentry/fexit are not attached on this kernel ({}); their cost is not in the per-wakeup figure measured here",
                l.split_whitespace().skip(2).collect::<Vec<_>>().join(" ")
            ));
        }
    }
    let path = bpf
        .iter()
        .find(|l| l.contains("per wakeup path"))
        .and_then(|l| nums(l).first().copied());
    match path {
        Some(ns) => sum.add(
            "2",
            "BPF cost per wakeup, all programs on its path",
            format!("{ns:.1} ns"),
            "<= 150 ns",
            Some(ns <= 150.0),
        ),
        None => sum.add(
            "2",
            "BPF cost per wakeup",
            "not measured (no bpf: line)",
            "<= 150 ns",
            None,
        ),
    }
    if let Some(l) = bpf.iter().find(|l| l.starts_with("bpf: floor"))
        && let [floor, per_wakeup, above, ..] = nums(l)[..]
    {
        sum.add(
            "2",
            "BPF floor per program run on this kernel (empty program)",
            format!("{floor:.1} ns"),
            "(info)",
            None,
        );
        sum.add(
            "2",
            format!("BPF cost per wakeup above {per_wakeup:.2} x that floor"),
            format!("{above:.1} ns"),
            "(info)",
            None,
        );
    }
    if let Some(l) = bpf.iter().find(|l| l.starts_with("bpf: clock"))
        && let [clock, _, bound, ..] = nums(l)[..]
    {
        sum.add(
            "2",
            "bpf_ktime_get_ns on this kernel (one per record)",
            format!("{clock:.1} ns"),
            "(info)",
            None,
        );
        sum.add(
            "2",
            "floor + clock alone for the wakeup's two timestamped records",
            format!("{bound:.1} ns"),
            "(info: lower bound)",
            None,
        );
    }
    for l in &bpf {
        if l.contains("_sched_switch ")
            && let Some(ns) = nums(l).get(1)
        {
            sum.add(
                "2",
                "BPF cost per sched_switch (not on the wakeup path)",
                format!("{ns:.1} ns"),
                "(info)",
                None,
            );
        }
    }
    sum.note("BPF_ENABLE_STATS itself adds about 20 ns per program run (two sched_clock() reads, kernel commit 492ecee892c2); the figures include it");
    let _ = std::fs::remove_file(&file);
    Ok(())
}

/// Item 3, live: the highest event rates this machine produces, for 60 s (10 s quick) each,
/// under `wakeviz --record --headless` with default settings: hackbench with many groups, and
/// the pipe benchmark (on the 2-CPU development machine hackbench peaks near 70 K events/s
/// whatever its mode, the pipe benchmark reaches several hundred thousand).
pub fn drops(ctx: &Ctx, sum: &mut Summary) -> anyhow::Result<()> {
    let secs = if ctx.quick { 10 } else { 60 };
    drops_one(
        ctx,
        sum,
        secs,
        "hackbench",
        &["-p", "-g", "20", "-l", "1000"],
    )?;
    drops_one(
        ctx,
        sum,
        secs,
        "perf",
        &["bench", "sched", "pipe", "-l", "200000"],
    )
}

fn drops_one(
    ctx: &Ctx,
    sum: &mut Summary,
    secs: u64,
    prog: &str,
    args: &[&str],
) -> anyhow::Result<()> {
    println!(
        "\n[3] drops at a high event rate: `{prog} {}` back to back for {secs} s under `wakeviz --record --headless` (default settings)",
        args.join(" ")
    );
    let file = ctx.out.join("drops.wvz");
    let bg = start_tracer(ctx, Tracer::Wakeviz, &file, &[])?.context("no tracer")?;
    let start = Instant::now();
    let mut runs = 0;
    while start.elapsed() < Duration::from_secs(secs) {
        let b = run_measured(Command::new(prog).args(args), Duration::from_secs(120))?;
        if !b.ok() {
            let _ = stop_tracer(bg);
            bail!("{prog} failed:\n{}{}", b.stdout, b.stderr);
        }
        runs += 1;
    }
    let f = stop_tracer(bg);
    if !f.ok_after_sigint() {
        bail!("wakeviz failed:\n{}", f.stderr);
    }
    let captured = line_with(&f.stderr, "captured ")
        .map(nums)
        .unwrap_or_default();
    let drops = line_with(&f.stderr, "drops:").map(nums).unwrap_or_default();
    let acc = line_with(&f.stderr, "accounting:")
        .map(nums)
        .unwrap_or_default();
    let said: Vec<&str> = f
        .stderr
        .lines()
        .skip_while(|l| !l.contains("captured "))
        .collect();
    println!("  {runs} runs; wakeviz said:\n{}", indent(&said.join("\n")));
    let (Some(ev), Some(s), Some(rate)) = (captured.first(), captured.get(1), captured.get(2))
    else {
        bail!("no capture summary from wakeviz:\n{}", f.stderr);
    };
    let kd = drops.first().copied().unwrap_or(f64::NAN);
    let ud = drops.get(1).copied().unwrap_or(f64::NAN);
    // Probe runs the kernel skipped (BPF programs do not nest), where wakeviz reports them.
    let missed = line_with(&f.stderr, "missed:").and_then(|l| nums(l).first().copied());
    let balanced = acc.len() >= 4 && acc[0] == acc[1] + acc[2] + acc[3];
    println!(
        "  wakeviz process ran {:.1} s; CPU {:.2} s over {s:.1} s of capture ({:.1}% of one CPU), peak RSS {} MiB",
        f.wall.as_secs_f64(),
        f.cpu.as_secs_f64(),
        f.cpu.as_secs_f64() / s * 100.0,
        f.max_rss_kb / 1024
    );
    let name = if prog == "perf" { "pipe" } else { prog };
    sum.add(
        "3",
        format!("drops, {name} {secs} s at {rate:.0} events/s avg ({ev:.0} events)"),
        match missed {
            Some(m) => format!("{kd:.0} kernel + {ud:.0} user + {m:.0} missed"),
            None => format!("{kd:.0} kernel + {ud:.0} user"),
        },
        "0, accounting balanced",
        Some(kd == 0.0 && ud == 0.0 && missed.unwrap_or(0.0) == 0.0 && balanced),
    );
    Ok(())
}

/// Item 4: bytes per event on disk, wakeviz vs perf.data, from the overhead rounds.
pub fn trace_size(_ctx: &Ctx, sum: &mut Summary, files: &Files) -> anyhow::Result<()> {
    println!("\n[4] trace size (the traces of the overhead rounds)");
    for w in ["pipe", "pipe-1cpu", "hackbench"] {
        let tot = |tracer: &str| {
            let v: Vec<&Trace> = files
                .traces
                .iter()
                .filter(|t| t.workload == w && t.tracer == tracer)
                .collect();
            let b: u64 = v.iter().map(|t| t.bytes).sum();
            let e: u64 = v.iter().map(|t| t.events).sum();
            (
                b,
                e,
                v.first().map(|t| t.detail.clone()).unwrap_or_default(),
            )
        };
        let (wb, we, _) = tot("wakeviz");
        let (pb, pe, detail) = tot("perf sched record");
        if we == 0 {
            sum.add(
                "4",
                format!("{w}: wakeviz bytes/event"),
                "not measured",
                "<= 8",
                None,
            );
            continue;
        }
        let wbpe = wb as f64 / we as f64;
        println!(
            "  {w}: wakeviz {wb} bytes / {we} events; perf sched record {pb} bytes / {pe} samples ({detail})"
        );
        let cmp = if pe > 0 {
            let pbpe = pb as f64 / pe as f64;
            format!(" (perf.data {pbpe:.1}, {:.0}x)", pbpe / wbpe)
        } else {
            String::new()
        };
        sum.add(
            "4",
            format!("{w}: wakeviz recording bytes/event{cmp}"),
            format!("{wbpe:.2} B"),
            "<= 8 B",
            Some(wbpe <= 8.0),
        );
    }
    Ok(())
}
