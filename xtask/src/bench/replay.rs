//! Item 5: replay and analysis of synthetic 256-CPU NPS4 recordings, one core each, and peak
//! memory for a small and a 10x larger recording. Every stage runs in its own child process
//! (`xtask bench --replay-child FILE --stage S`) so that its peak RSS (`VmHWM`) is its own.
//!
//! Stages:
//! - `decode`: `format::Reader` chunks -> events (read, CRC, zstd, varint/delta decode);
//! - `analysis`: `analysis::Analysis` with shadow off (`set_shadow(None)`): classification,
//!   histograms, windows; timed around `on_batch` only;
//! - `shadow`: `shadow::ShadowEval` alone, `on_event` for every event and `on_placement` for
//!   every `join::Joiner` output; timed around that loop only; rate in placements/s;
//! - `full`: what `wakeviz --replay FILE --report json` does (analysis with every shadow policy,
//!   then the report); used for memory;
//! - `extract`: `workload::Extractor` over the whole file (every task), what `wakeviz workload
//!   extract` does; timed around `on_batch` only;
//! - `simulate`: the extracted workload run closed loop under `sis_util`
//!   (`closed_loop::simulate`, bounded by four times the file's events), what `wakeviz
//!   workload simulate` does before its fold; the stage time is the simulation's, events are
//!   the simulated ones.
//!
//! With `XTASK_BIN_B=path` (the xtask of another build, e.g. the commit before a change) the
//! `decode` and `shadow` stages of that build run too, on a recording it writes itself (`synth`,
//! same topology, size and seed: its own format), alternated with this build's round by round
//! (the order swaps every round), and the paired ratio of each round's rates is printed: a
//! before/after that does not depend on which machine runs it.
use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use serde_json::json;
use wakeviz_core::{
    analysis::Analysis,
    closed_loop,
    format::{ChunkPayload, Reader},
    join::Joiner,
    shadow::ShadowEval,
    source::{EventSource, Poll, ReplaySource},
    synth, topology,
    workload::{Extractor, Shape},
};

use super::{
    Ctx, Summary, ingest::nps4_dir, median, mega, rate, run_measured, thread_cpu, vm_hwm_kb,
};

const STAGES: [&str; 6] = [
    "decode", "analysis", "shadow", "full", "extract", "simulate",
];
const SEED: u64 = 1;

/// The child side: one stage over `file`, one `BENCH-CHILD {json}` line on stdout.
pub fn child(file: &Path, stage: &str) -> anyhow::Result<()> {
    let (w0, c0) = (Instant::now(), thread_cpu());
    let mut events = 0u64;
    let mut placements = 0u64;
    let mut decode_cpu = Duration::ZERO;
    let mut stage_cpu = Duration::ZERO;
    let mut evaluated = 0u64;
    match stage {
        "decode" => {
            let mut r = Reader::open(file)?;
            while let Some(c) = r.next_chunk() {
                if let ChunkPayload::Events(ev) = c? {
                    events += ev.len() as u64;
                    std::hint::black_box(&ev);
                    r.recycle(ev);
                }
            }
            decode_cpu = thread_cpu() - c0;
            stage_cpu = decode_cpu;
        }
        "analysis" | "full" | "shadow" => {
            let mut src = ReplaySource::open(file)?;
            let mut an = (stage != "shadow").then(|| Analysis::new(src.header()));
            if stage == "analysis"
                && let Some(a) = an.as_mut()
            {
                a.set_shadow(None);
            }
            let mut sh = (stage == "shadow").then(|| ShadowEval::new(src.header()));
            let mut joiner = Joiner::new();
            loop {
                let t0 = thread_cpu();
                let p = src.poll(Duration::ZERO)?;
                let t1 = thread_cpu();
                decode_cpu += t1 - t0;
                let Poll::Batch(b) = p else { break };
                events += b.events.len() as u64;
                if let Some(a) = an.as_mut() {
                    a.on_batch(&b);
                }
                if let Some(s) = sh.as_mut() {
                    for e in &b.events {
                        s.on_event(e);
                        if let Some(pl) = joiner.on_event(e) {
                            let _ = s.on_placement(&pl);
                            placements += 1;
                        }
                    }
                }
                stage_cpu += thread_cpu() - t1;
                // Outside both timers, like the batch's drop was before there was a recycle.
                src.recycle(b);
            }
            let t = thread_cpu();
            if let Some(a) = &an {
                std::hint::black_box(a.report_json());
            }
            if let Some(s) = &sh {
                evaluated = s.evaluated();
                std::hint::black_box(serde_json::to_value(s.report(None)).ok());
            }
            if stage == "full" {
                stage_cpu += thread_cpu() - t;
            }
        }
        "extract" => {
            let (shape, n, cpu) = extract(file)?;
            std::hint::black_box(&shape);
            events = n;
            stage_cpu = cpu;
        }
        "simulate" => {
            let (shape, n, _) = extract(file)?;
            let header = ReplaySource::open(file)?.header().clone();
            let cfg = closed_loop::Config::new("sis_util", &shape, n);
            let t = thread_cpu();
            let sum = closed_loop::simulate(&shape, &header, &cfg, &mut |e| {
                std::hint::black_box(e);
            })?;
            stage_cpu = thread_cpu() - t;
            events = sum.events;
            placements = sum.wakeups;
        }
        s => bail!("unknown stage {s}"),
    }
    let line = json!({
        "stage": stage,
        "events": events,
        "placements": placements,
        "evaluated": evaluated,
        "decode_cpu_ns": decode_cpu.as_nanos() as u64,
        "stage_cpu_ns": stage_cpu.as_nanos() as u64,
        "total_cpu_ns": (thread_cpu() - c0).as_nanos() as u64,
        "wall_ns": w0.elapsed().as_nanos() as u64,
        "vm_hwm_kb": vm_hwm_kb(),
    });
    println!("BENCH-CHILD {line}");
    Ok(())
}

/// The whole file's workload, with the events read and the CPU time of the extraction's own
/// fold.
fn extract(file: &Path) -> anyhow::Result<(Shape, u64, Duration)> {
    let mut src = ReplaySource::open(file)?;
    let mut h = src.header().clone();
    h.run.scope = None;
    let mut x = Extractor::new(&h);
    let (mut n, mut cpu) = (0, Duration::ZERO);
    while let Poll::Batch(b) = src.poll(Duration::ZERO)? {
        n += b.events.len() as u64;
        let t = thread_cpu();
        x.on_batch(&b);
        cpu += thread_cpu() - t;
        src.recycle(b);
    }
    Ok((x.finish(), n, cpu))
}

/// A synthetic recording of `events` events, generated once and reused (same size and seed:
/// the generator is deterministic, and a file only gets its final name once complete).
fn synth_file(ctx: &Ctx, events: u64) -> anyhow::Result<PathBuf> {
    let path = ctx
        .out
        .join(format!("synth-zen3-nps4-{events}-seed{SEED}.wvz"));
    if path.exists() {
        println!("  reusing {}", path.display());
        return Ok(path);
    }
    let dir = nps4_dir(ctx)?;
    let topo = topology::from_sysfs(&dir).with_context(|| format!("reading {}", dir.display()))?;
    let tmp = path.with_extension("wvz.tmp");
    let f = std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    let (w0, c0) = (Instant::now(), thread_cpu());
    let s = synth::generate(
        &topo,
        &synth::SynthConfig::new(events, SEED),
        std::io::BufWriter::with_capacity(1 << 20, f),
    )?;
    std::fs::rename(&tmp, &path)?;
    println!(
        "  generated {} ({} events, {} bytes, {:.2} bytes/event, {:.3} s simulated; {:.1} s, {:.1} s CPU)",
        path.display(),
        s.events,
        s.bytes,
        s.bytes as f64 / s.events as f64,
        s.span_ns as f64 / 1e9,
        w0.elapsed().as_secs_f64(),
        (thread_cpu() - c0).as_secs_f64()
    );
    Ok(path)
}

#[derive(Clone, Debug)]
struct Res {
    events: f64,
    placements: f64,
    evaluated: f64,
    decode_cpu: f64,
    stage_cpu: f64,
    wall: f64,
    hwm_kb: f64,
}

fn run_child(file: &Path, stage: &str) -> anyhow::Result<Res> {
    run_child_of(&std::env::current_exe()?, file, stage)
}

/// [`run_child`] with the xtask binary `exe` (this build's, or `XTASK_BIN_B`'s).
fn run_child_of(exe: &Path, file: &Path, stage: &str) -> anyhow::Result<Res> {
    let f = run_measured(
        Command::new(exe)
            .args(["bench", "--replay-child"])
            .arg(file)
            .args(["--stage", stage]),
        Duration::from_secs(3600),
    )?;
    if !f.ok() {
        bail!(
            "replay child {stage} {} of {} failed:\n{}{}",
            file.display(),
            exe.display(),
            f.stdout,
            f.stderr
        );
    }
    let l = f
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("BENCH-CHILD "))
        .context("no BENCH-CHILD line")?;
    let v: serde_json::Value = serde_json::from_str(l)?;
    let g = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    Ok(Res {
        events: g("events"),
        placements: g("placements"),
        evaluated: g("evaluated"),
        decode_cpu: g("decode_cpu_ns") / 1e9,
        stage_cpu: g("stage_cpu_ns") / 1e9,
        wall: g("wall_ns") / 1e9,
        hwm_kb: g("vm_hwm_kb"),
    })
}

/// The recording `bin` (`XTASK_BIN_B`) writes with its own `synth`: the same topology, size
/// and seed as [`synth_file`]'s, in that build's format. Written afresh every run, since a
/// path says nothing about which build made it.
fn synth_file_of(ctx: &Ctx, bin: &Path, events: u64) -> anyhow::Result<PathBuf> {
    let path = ctx.out.join(format!("synth-B-{events}-seed{SEED}.wvz"));
    let _ = std::fs::remove_file(&path);
    let f = run_measured(
        Command::new(bin)
            .arg("synth")
            .arg("--topology")
            .arg(nps4_dir(ctx)?)
            .args(["--events", &events.to_string(), "--seed", &SEED.to_string()])
            .arg("--out")
            .arg(&path),
        Duration::from_secs(600),
    )?;
    if !f.ok() {
        bail!(
            "{} synth failed (XTASK_BIN_B must be an xtask binary):\n{}{}",
            bin.display(),
            f.stdout,
            f.stderr
        );
    }
    println!("  XTASK_BIN_B {}: {}", bin.display(), f.stdout.trim());
    Ok(path)
}

/// Stages compared with `XTASK_BIN_B`: the two with targets of their own, and the fold of the
/// analyses (the shadow off), whose code changes most often.
const B_STAGES: [&str; 3] = ["decode", "analysis", "shadow"];

/// A stage's judged rate: placements/s for `shadow`, events/s otherwise.
fn stage_rate(stage: &str, r: &Res) -> f64 {
    if stage == "shadow" {
        r.placements / r.stage_cpu
    } else {
        r.events / r.stage_cpu
    }
}

/// `rounds` (default 3) on the smaller file: a before/after comparison with `XTASK_BIN_B`
/// wants more (7 or more alternated pairs) to resolve a few percent.
pub fn run(ctx: &Ctx, sum: &mut Summary, rounds: Option<usize>) -> anyhow::Result<()> {
    let (small, big) = if ctx.quick {
        (1_000_000u64, 10_000_000u64)
    } else {
        (10_000_000, 100_000_000)
    };
    let rounds = rounds.unwrap_or(3).max(1);
    println!(
        "\n[5] replay and analysis, synthetic 256-CPU Zen3 NPS4 recordings of {small} and {big} events (seed {SEED}), each stage in its own process, one thread; {rounds} rounds on the smaller file, stages alternating, then one on the larger"
    );
    let fs = synth_file(ctx, small)?;
    let fb = synth_file(ctx, big)?;
    let fs_b = match std::env::var_os("XTASK_BIN_B").map(PathBuf::from) {
        Some(b) => Some((synth_file_of(ctx, &b, small)?, b)),
        None => None,
    };
    // (stage, this build's result, B's) per round, on the smaller file.
    let mut paired: Vec<(&str, Res, Res)> = Vec::new();
    let mut res: Vec<(u64, &str, Res)> = Vec::new();
    let plan: Vec<(u64, &Path, usize)> = vec![(small, &fs, rounds), (big, &fb, 1)];
    for (n, file, r) in plan {
        for round in 1..=r {
            for st in STAGES {
                let run_b = || {
                    fs_b.as_ref()
                        .filter(|_| n == small && B_STAGES.contains(&st))
                        .map(|(file_b, bin)| run_child_of(bin, file_b, st))
                        .transpose()
                };
                // B first in even rounds, so neither build always runs right after the other.
                let (x, b_res) = if round % 2 == 0 {
                    let y = run_b()?;
                    (run_child(file, st)?, y)
                } else {
                    (run_child(file, st)?, run_b()?)
                };
                if let Some(y) = &b_res {
                    let unit = if st == "shadow" {
                        "placements"
                    } else {
                        "events"
                    };
                    println!(
                        "  {n:>9} r{round} {st:<8} XTASK_BIN_B: stage {:.3} s CPU, {} {unit}/s",
                        y.stage_cpu,
                        mega(stage_rate(st, y)),
                    );
                    paired.push((st, x.clone(), y.clone()));
                }
                let what = match st {
                    "shadow" => format!(
                        "{:.0} placements ({:.0} evaluated), {} placements/s",
                        x.placements,
                        x.evaluated,
                        mega(x.placements / x.stage_cpu)
                    ),
                    "decode" => format!("{} events/s", mega(x.events / x.stage_cpu)),
                    "simulate" => format!(
                        "{:.0} simulated wakeups, {} events/s simulated",
                        x.placements,
                        mega(x.events / x.stage_cpu)
                    ),
                    _ => format!("{} events/s", mega(x.events / x.stage_cpu)),
                };
                println!(
                    "  {n:>9} r{round} {st:<8} {:.0} events: stage {:.3} s CPU, decode {:.3} s CPU, {:.3} s wall; {what}; peak RSS {:.1} MiB",
                    x.events,
                    x.stage_cpu,
                    x.decode_cpu,
                    x.wall,
                    x.hwm_kb / 1024.0
                );
                res.push((n, st, x));
            }
        }
    }
    let pick = |n: u64, st: &str| -> Vec<Res> {
        res.iter()
            .filter(|(m, s, _)| *m == n && *s == st)
            .map(|(_, _, r)| r.clone())
            .collect()
    };
    let med = |n: u64, st: &str, f: &dyn Fn(&Res) -> f64| {
        median(&pick(n, st).iter().map(f).collect::<Vec<_>>())
    };
    let dec = med(small, "decode", &|r| r.events / r.stage_cpu);
    let dec_b = med(big, "decode", &|r| r.events / r.stage_cpu);
    sum.add(
        "5",
        format!(
            "decode (Reader chunks -> events), CPU time; {big}: {}",
            mega(dec_b)
        ),
        mega(dec),
        ">= 30 M events/s",
        Some(dec >= 30e6),
    );
    let an = med(small, "analysis", &|r| r.events / r.stage_cpu);
    let an_b = med(big, "analysis", &|r| r.events / r.stage_cpu);
    sum.add(
        "5",
        format!(
            "classification + histograms (shadow off); {big}: {}",
            mega(an_b)
        ),
        mega(an),
        ">= 10 M events/s",
        Some(an >= 10e6),
    );
    let sh = med(small, "shadow", &|r| r.placements / r.stage_cpu);
    let sh_b = med(big, "shadow", &|r| r.placements / r.stage_cpu);
    let names = {
        let dir = nps4_dir(ctx)?;
        let topo = topology::from_sysfs(&dir)?;
        let cfg = synth::SynthConfig::new(1, SEED);
        let s = synth::events(&topo, &cfg)?;
        ShadowEval::new(&synth::header(&topo, &cfg, &s))
            .policy_names()
            .join(", ")
    };
    sum.add(
        "5",
        format!(
            "all shadow policies (ShadowEval + Joiner); {big}: {}",
            mega(sh_b)
        ),
        format!("{} placements", mega(sh)),
        ">= 2 M placements/s",
        Some(sh >= 2e6),
    );
    println!("  shadow policies evaluated: {names}");
    let full = med(small, "full", &|r| r.events / r.stage_cpu);
    sum.add(
        "5",
        "full replay analysis incl. shadow + report (info)",
        format!("{} events", mega(full)),
        "(info)",
        None,
    );
    let ex = med(small, "extract", &|r| r.events / r.stage_cpu);
    sum.add(
        "5",
        format!(
            "workload extract (Extractor, every task); {big}: {}",
            mega(med(big, "extract", &|r| r.events / r.stage_cpu))
        ),
        format!("{} events", mega(ex)),
        "(info)",
        None,
    );
    // The closed-loop target is stated for a 10 M-event recording: whichever file has that size.
    let ten_m = if small == 10_000_000 { small } else { big };
    let sim_wall = med(ten_m, "simulate", &|r| r.wall);
    sum.add(
        "5",
        format!(
            "closed-loop simulate sis_util, {ten_m}-event recording's workload (extraction \
             included), wall; {} simulated wakeups",
            med(ten_m, "simulate", &|r| r.placements)
        ),
        format!("{sim_wall:.1} s"),
        "< 60 s",
        Some(sim_wall < 60.0),
    );
    for st in B_STAGES {
        let pairs: Vec<_> = paired.iter().filter(|p| p.0 == st).collect();
        if pairs.is_empty() {
            continue;
        }
        let (ra, rb): (Vec<f64>, Vec<f64>) = pairs
            .iter()
            .map(|(_, a, b)| (stage_rate(st, a), stage_rate(st, b)))
            .unzip();
        let ratios: Vec<f64> = ra.iter().zip(&rb).map(|(a, b)| a / b).collect();
        let (a, b) = (median(&ra), median(&rb));
        sum.add(
            "5",
            format!("{st}, this build / XTASK_BIN_B, {small} events, paired rounds alternated"),
            format!("{:.3}x ({} vs {})", median(&ratios), mega(a), mega(b)),
            "(info: before/after on one machine)",
            None,
        );
    }
    for st in STAGES {
        let hs = pick(small, st).iter().map(|r| r.hwm_kb).fold(0.0, f64::max);
        let hb = pick(big, st).iter().map(|r| r.hwm_kb).fold(0.0, f64::max);
        let ratio = hb / hs;
        sum.add(
            "5",
            format!("peak RSS {st}: {small} vs {big} events"),
            format!("{:.1} vs {:.1} MiB ({ratio:.2}x)", hs / 1024.0, hb / 1024.0),
            "same (<= 1.10x)",
            Some(ratio <= 1.10),
        );
    }
    let _ = rate;
    Ok(())
}
