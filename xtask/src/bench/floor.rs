//! wakeviz's per-event cost against the real floor, and hackbench.
//!
//! `floor`: `taskset -c 0 perf bench sched pipe` alone, under `wakeviz --floor-probes` (empty
//! tp_btf programs on the same five tracepoints, nothing else), under `wakeviz --floor-probes
//! clock` (one clock read per hit and nothing else: the least any tracer that timestamps each
//! event pays), under `wakeviz --floor-probes stream` (a clock read and one ring record per
//! hit: the least any streaming tracer pays),
//! under `--floor-probes batch` (the same records from a per-CPU buffer, 32 per ring write),
//! under `wakeviz --record` (and under a second binary `WAKEVIZ_BIN_B`, e.g. the build before a
//! probe change, when set), under `wakeviz --aggregate` (in-kernel counters, no record per
//! event) and under `perf sched record`, in alternation; the order rotates every round so no
//! configuration always runs right after the same other one. Each traced run is paired with the
//! same round's run alone; the medians of those differences are the added µs/op, and wakeviz's
//! is printed as a multiple of the floor's and as a fraction of perf's.
//!
//! Two measures per run: the benchmark's reported µs/op (wall), and its CPU time per op (user +
//! sys of both benchmark processes from `wait4`). On a machine shared with other work the wall
//! figure also counts the time CPU 0 spent on someone else, which is noise to a tracer's cost;
//! the probes run in the benchmark's own context, so their cost is in its CPU time.
//!
//! `messaging`: `perf bench sched messaging` alone and under `wakeviz --record`, alternated; the
//! slowdown of its reported time.
use std::{
    ffi::OsStr,
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use anyhow::{Context as _, bail};

use super::{Background, Ctx, Finished, Summary, median, median_ci95, run_measured, tracer};

#[derive(Clone, Debug, PartialEq, Eq)]
enum Config {
    Alone,
    Floor,
    /// One clock read per hit, nothing sent: the floor of any tracer that times each event.
    FloorClock,
    /// A clock read and one record per hit, drained: the floor of any streaming tracer.
    FloorStream,
    /// The same records from a per-CPU buffer, 32 per ring write: batching's best case.
    FloorBatch,
    Wakeviz(PathBuf),
    /// `wakeviz --record --no-batch`: every record on its own, as before per-CPU batching.
    WakevizUnbatched(PathBuf),
    /// `wakeviz --aggregate`: the in-kernel mode, no record per event.
    Aggregate,
    /// The second binary of `WAKEVIZ_BIN_B`.
    WakevizB(PathBuf),
    Perf,
}

impl Config {
    fn name(&self) -> &'static str {
        match self {
            Self::Alone => "alone",
            Self::Floor => "floor (empty tp_btf)",
            Self::FloorClock => "clock floor",
            Self::FloorStream => "stream floor",
            Self::FloorBatch => "batch floor",
            Self::Aggregate => "wakeviz --aggregate",
            Self::Wakeviz(_) => "wakeviz --record",
            Self::WakevizUnbatched(_) => "wakeviz --no-batch",
            Self::WakevizB(_) => "wakeviz-B --record",
            Self::Perf => "perf sched record",
        }
    }
}

fn line_with<'a>(text: &'a str, needle: &str) -> Option<&'a str> {
    text.lines().find(|l| l.contains(needle))
}

fn first_num(line: &str) -> Option<f64> {
    line.split_whitespace().find_map(|t| t.parse::<f64>().ok())
}

/// Starts the tracer of `cfg` and returns once it captures; `None` for the run alone.
fn start(ctx: &Ctx, cfg: &Config, file: &Path) -> anyhow::Result<Option<Background>> {
    let _ = std::fs::remove_file(file);
    let bg = match cfg {
        Config::Alone => return Ok(None),
        Config::Floor => {
            tracer::wakeviz(&ctx.wakeviz, ["--floor-probes"], "floor probes attached")?
        }
        Config::FloorClock => tracer::wakeviz(
            &ctx.wakeviz,
            ["--floor-probes", "clock"],
            "floor probes attached",
        )?,
        Config::FloorStream => tracer::wakeviz(
            &ctx.wakeviz,
            ["--floor-probes", "stream"],
            "floor probes attached",
        )?,
        Config::FloorBatch => tracer::wakeviz(
            &ctx.wakeviz,
            ["--floor-probes", "batch"],
            "floor probes attached",
        )?,
        Config::Aggregate => tracer::wakeviz(
            &ctx.wakeviz,
            ["--aggregate", "--headless"],
            "capturing in-kernel aggregates",
        )?,
        Config::Wakeviz(bin) | Config::WakevizB(bin) => {
            let args = [
                OsStr::new("--record"),
                file.as_os_str(),
                OsStr::new("--headless"),
            ];
            tracer::wakeviz(bin, args, "capturing")?
        }
        Config::WakevizUnbatched(bin) => {
            let args = [
                OsStr::new("--record"),
                file.as_os_str(),
                OsStr::new("--headless"),
                OsStr::new("--no-batch"),
            ];
            tracer::wakeviz(bin, args, "capturing")?
        }
        Config::Perf => tracer::perf_sched(file)?,
    };
    std::thread::sleep(tracer::SETTLE);
    Ok(Some(bg))
}

/// Runs `cmd` under `cfg` and returns the benchmark's result and the tracer's.
fn one(
    ctx: &Ctx,
    cfg: &Config,
    cmd: &mut Command,
    tag: &str,
) -> anyhow::Result<(Finished, Option<Finished>)> {
    let file = ctx.out.join(format!("floor-{tag}.data"));
    let bg = start(ctx, cfg, &file)?;
    let b = run_measured(cmd, Duration::from_secs(300))?;
    let tr = bg.map(|bg| bg.stop(Duration::from_secs(180)));
    let _ = std::fs::remove_file(&file);
    if !b.ok() {
        bail!("{cmd:?} failed ({:?}):\n{}{}", b.status, b.stdout, b.stderr);
    }
    if let Some(f) = &tr
        && !f.ok_after_sigint()
    {
        bail!("{} exited badly ({}):\n{}", cfg.name(), f.status, f.stderr);
    }
    Ok((b, tr))
}

/// The configurations in round `r`'s order: rotated by one each round.
fn rotated(cfgs: &[Config], r: usize) -> Vec<(usize, &Config)> {
    let n = cfgs.len();
    (0..n).map(|i| ((i + r) % n, &cfgs[(i + r) % n])).collect()
}

/// Median over rounds of (config - alone), each pair from the same round.
fn paired_added(alone: &[f64], traced: &[f64]) -> f64 {
    let d: Vec<f64> = alone.iter().zip(traced).map(|(a, t)| t - a).collect();
    median(&d)
}

/// " [lo..hi]": the 95% CI of [`paired_added`]'s median, or nothing with too few rounds.
fn paired_ci(alone: &[f64], traced: &[f64]) -> String {
    let d: Vec<f64> = alone.iter().zip(traced).map(|(a, t)| t - a).collect();
    median_ci95(&d).map_or_else(String::new, |(lo, hi)| format!(" [{lo:+.3}..{hi:+.3}]"))
}

/// "1.23x" of `num / den`, or why not when the denominator is noise.
fn ratio(num: f64, den: f64) -> (String, Option<f64>) {
    if den > 0.0 {
        (format!("{:.2}x", num / den), Some(num / den))
    } else {
        (format!("n/a (denominator {den:+.3} <= 0: noise)"), None)
    }
}

pub fn floor(ctx: &Ctx, sum: &mut Summary, rounds: Option<usize>) -> anyhow::Result<()> {
    let rounds = rounds.unwrap_or(if ctx.quick { 5 } else { 9 });
    let loops: u32 = if ctx.quick { 100_000 } else { 200_000 };
    let mut cfgs = vec![
        Config::Alone,
        Config::Floor,
        Config::FloorClock,
        Config::FloorStream,
        Config::FloorBatch,
        Config::Wakeviz(ctx.wakeviz.clone()),
        Config::WakevizUnbatched(ctx.wakeviz.clone()),
        Config::Aggregate,
    ];
    if let Some(b) = std::env::var_os("WAKEVIZ_BIN_B") {
        cfgs.push(Config::WakevizB(PathBuf::from(b)));
    }
    cfgs.push(Config::Perf);
    let desc = format!("taskset -c 0 perf bench sched pipe -l {loops}");
    println!(
        "\n[16] cost floor: {rounds} rounds of `{desc}` alone, under `wakeviz --floor-probes` (empty tp_btf programs on the five sched tracepoints), under `wakeviz --floor-probes clock` (one clock read per hit, nothing else), under `wakeviz --floor-probes stream` (a clock read and one ring record per hit, nothing else), under `wakeviz --floor-probes batch` (the same records, 32 per ring write), under `wakeviz --record --headless` (per-CPU batches) and with `--no-batch`{}, under `wakeviz --aggregate --headless`, under `perf sched record`; order rotated each round",
        if cfgs.iter().any(|c| matches!(c, Config::WakevizB(_))) {
            " and WAKEVIZ_BIN_B's"
        } else {
            ""
        }
    );
    // [config] -> (reported µs/op, CPU µs/op) per round
    let mut v: Vec<Vec<(f64, f64)>> = cfgs.iter().map(|_| Vec::new()).collect();
    for r in 0..rounds {
        for (ci, cfg) in rotated(&cfgs, r) {
            let mut cmd = Command::new("taskset");
            cmd.args(["-c", "0", "perf", "bench", "sched", "pipe", "-l"])
                .arg(loops.to_string());
            let (b, tr) = one(ctx, cfg, &mut cmd, &format!("pipe-{ci}"))?;
            let us = line_with(&b.stdout, "usecs/op")
                .and_then(first_num)
                .with_context(|| format!("no usecs/op in:\n{}", b.stdout))?;
            let cpu_us = b.cpu.as_secs_f64() * 1e6 / f64::from(loops);
            println!(
                "  round {} {:<22} {us:>7.3} us/op  {cpu_us:>7.3} CPU us/op{}",
                r + 1,
                cfg.name(),
                tr.map_or(String::new(), |f| format!(
                    "  tracer CPU {:.3} s",
                    f.cpu.as_secs_f64()
                ))
            );
            v[ci].push((us, cpu_us));
        }
    }
    let idx = |want: fn(&Config) -> bool| cfgs.iter().position(want);
    let (Some(fl), Some(fc), Some(fs), Some(fb), Some(wv), Some(ag), Some(pf)) = (
        idx(|c| *c == Config::Floor),
        idx(|c| *c == Config::FloorClock),
        idx(|c| *c == Config::FloorStream),
        idx(|c| *c == Config::FloorBatch),
        idx(|c| matches!(c, Config::Wakeviz(_))),
        idx(|c| *c == Config::Aggregate),
        idx(|c| *c == Config::Perf),
    ) else {
        bail!("configuration list incomplete");
    };
    let wb = idx(|c| matches!(c, Config::WakevizB(_)));
    let wu = idx(|c| matches!(c, Config::WakevizUnbatched(_))).context("no --no-batch run")?;
    for (metric, pick) in [
        (
            "reported us/op",
            (|x: &(f64, f64)| x.0) as fn(&(f64, f64)) -> f64,
        ),
        ("CPU us/op", |x| x.1),
    ] {
        let col = |ci: usize| v[ci].iter().map(pick).collect::<Vec<_>>();
        let alone = col(0);
        let added = |ci: usize| paired_added(&alone, &col(ci));
        let (a_fl, a_fc, a_fs, a_fb, a_wv, a_ag, a_pf) = (
            added(fl),
            added(fc),
            added(fs),
            added(fb),
            added(wv),
            added(ag),
            added(pf),
        );
        let mut line = format!(
            "  {metric}: median alone {:.3}; added (paired medians): floor {a_fl:+.3}, clock floor {a_fc:+.3}, stream floor {a_fs:+.3}, batch floor {a_fb:+.3}, wakeviz {a_wv:+.3}, wakeviz --aggregate {a_ag:+.3}, perf sched record {a_pf:+.3}",
            median(&alone)
        );
        let a_wu = added(wu);
        line += &format!(", wakeviz --no-batch {a_wu:+.3}");
        if let Some(b) = wb {
            line += &format!(", wakeviz-B {:+.3}", added(b));
        }
        println!("{line}");
        // The CPU figure is the one judged: the wall figure also holds other tenants' use of
        // CPU 0 (see the module doc), so on a shared machine it is printed for information.
        let judged = metric.starts_with("CPU");
        let target = |t: &str| {
            if judged {
                t.to_string()
            } else {
                format!("(info) {t}")
            }
        };
        // The floor's added cost is a difference of two near-equal figures: its interval says
        // how much of the ratio is the denominator's noise.
        let (ci_wv, ci_fl) = (paired_ci(&alone, &col(wv)), paired_ci(&alone, &col(fl)));
        println!("  {metric}: 95% CI of the paired medians: floor{ci_fl}, wakeviz{ci_wv}");
        let (txt, x) = ratio(a_wv, a_fl);
        sum.add(
            "16",
            format!("pipe-1cpu {metric}: wakeviz added / floor added"),
            format!("{txt} ({a_wv:+.3}{ci_wv} / {a_fl:+.3}{ci_fl})"),
            target("<= 1.5x"),
            x.filter(|_| judged).map(|x| x <= 1.5),
        );
        // What timing each event costs before anything is written: the 1.5x target sits below
        // every tracer that timestamps its events whenever this exceeds 1.5x.
        let (txt, _) = ratio(a_fc, a_fl);
        sum.add(
            "16",
            format!("pipe-1cpu {metric}: clock floor added / floor added"),
            format!("{txt} ({a_fc:+.3} / {a_fl:+.3})"),
            "(info: one clock read per hit, nothing sent)",
            None,
        );
        // What streaming itself costs, and how far wakeviz is from the least a streaming
        // tracer pays.
        let (txt, _) = ratio(a_fs, a_fl);
        sum.add(
            "16",
            format!("pipe-1cpu {metric}: stream floor added / floor added"),
            format!("{txt} ({a_fs:+.3} / {a_fl:+.3})"),
            "(info: one timestamped record per hit)",
            None,
        );
        let (txt, _) = ratio(a_fb, a_fl);
        sum.add(
            "16",
            format!("pipe-1cpu {metric}: batch floor added / floor added"),
            format!("{txt} ({a_fb:+.3} / {a_fl:+.3})"),
            "(info: the same records, 32 per ring write)",
            None,
        );
        let (txt, _) = ratio(a_wv, a_fs);
        sum.add(
            "16",
            format!("pipe-1cpu {metric}: wakeviz added / stream floor added"),
            format!("{txt} ({a_wv:+.3} / {a_fs:+.3})"),
            "(info: wakeviz's own work per record)",
            None,
        );
        let (txt, x) = ratio(a_ag, a_fl);
        sum.add(
            "16",
            format!("pipe-1cpu {metric}: wakeviz --aggregate added / floor added"),
            format!("{txt} ({a_ag:+.3} / {a_fl:+.3})"),
            target("<= 1.5x"),
            x.filter(|_| judged).map(|x| x <= 1.5),
        );
        let (txt, x) = ratio(a_wv, a_pf);
        sum.add(
            "16",
            format!("pipe-1cpu {metric}: wakeviz added / perf sched record's"),
            format!("{txt} ({a_wv:+.3} / {a_pf:+.3})"),
            target("<= 0.33x"),
            x.filter(|_| judged).map(|x| x <= 1.0 / 3.0),
        );
        let (txt, _) = ratio(a_wv, a_wu);
        sum.add(
            "16",
            format!("pipe-1cpu {metric}: wakeviz added / wakeviz --no-batch added"),
            format!("{txt} ({a_wv:+.3} / {a_wu:+.3})"),
            "(info: what per-CPU batching saves)",
            None,
        );
        let (txt, _) = ratio(a_wu, a_pf);
        sum.add(
            "16",
            format!("pipe-1cpu {metric}: wakeviz --no-batch added / perf sched record's"),
            format!("{txt} ({a_wu:+.3} / {a_pf:+.3})"),
            "(info: before batching)",
            None,
        );
        if let Some(b) = wb {
            let a_b = added(b);
            let (txt, _) = ratio(a_b, a_fl);
            sum.add(
                "16",
                format!("pipe-1cpu {metric}: wakeviz-B added / floor added"),
                format!("{txt} ({a_b:+.3} / {a_fl:+.3})"),
                "(info: the other build)",
                None,
            );
            // Round by round: this build's added cost over the other build's, each against
            // the same round's run alone.
            let (w, bb) = (col(wv), col(b));
            let ratios: Vec<f64> = alone
                .iter()
                .zip(w.iter().zip(&bb))
                .filter(|(a, (_, b))| **b > **a)
                .map(|(a, (w, b))| (w - a) / (b - a))
                .collect();
            let r = median(&ratios);
            sum.add(
                "31",
                format!("pipe-1cpu {metric}: wakeviz added / wakeviz-B added (median of {} paired rounds)", ratios.len()),
                format!("{r:.3}"),
                target("<= 1.03"),
                Some(r <= 1.03).filter(|_| judged),
            );
        }
    }
    Ok(())
}

pub fn messaging(ctx: &Ctx, sum: &mut Summary, rounds: Option<usize>) -> anyhow::Result<()> {
    let rounds = rounds.unwrap_or(if ctx.quick { 5 } else { 9 });
    let cfgs = [
        Config::Alone,
        Config::Wakeviz(ctx.wakeviz.clone()),
        Config::WakevizUnbatched(ctx.wakeviz.clone()),
    ];
    println!(
        "\n[16] hackbench: {rounds} rounds of `perf bench sched messaging` (10 groups of 20+20 processes, 100 loops) alone, under `wakeviz --record --headless` and with `--no-batch`, order rotated each round"
    );
    // [config] -> (reported s, CPU s of the benchmark's processes) per round
    let mut v: Vec<Vec<(f64, f64)>> = vec![Vec::new(); cfgs.len()];
    let mut drops = Vec::new();
    for r in 0..rounds {
        for (ci, cfg) in rotated(&cfgs, r) {
            let mut cmd = Command::new("perf");
            cmd.args(["bench", "sched", "messaging"]);
            let (b, tr) = one(ctx, cfg, &mut cmd, &format!("msg-{ci}"))?;
            let secs = line_with(&b.stdout, "Total time:")
                .and_then(first_num)
                .with_context(|| format!("no Total time in:\n{}", b.stdout))?;
            let said = tr.as_ref().and_then(|f| {
                line_with(&f.stderr, "drops:")
                    .map(str::trim)
                    .map(String::from)
            });
            let cpu = b.cpu.as_secs_f64();
            println!(
                "  round {} {:<18} {secs:>7.3} s  {cpu:>7.3} s CPU{}",
                r + 1,
                cfg.name(),
                said.as_ref().map_or(String::new(), |d| format!("  ({d})"))
            );
            drops.extend(said);
            v[ci].push((secs, cpu));
        }
    }
    if let Some(d) = drops
        .iter()
        .find(|d| !(d.contains("drops: 0 in the kernel") && d.contains(" 0 in userspace")))
    {
        sum.note(format!("messaging under wakeviz lost events: {d}"));
    }
    for (metric, pick) in [
        (
            "reported time",
            (|x: &(f64, f64)| x.0) as fn(&(f64, f64)) -> f64,
        ),
        ("CPU time", |x| x.1),
    ] {
        let slowdown = |ci: usize| -> Vec<f64> {
            v[0].iter()
                .zip(&v[ci])
                .map(|(a, t)| (pick(t) / pick(a) - 1.0) * 100.0)
                .collect()
        };
        let (slow, slow_unbatched) = (slowdown(1), slowdown(2));
        let med = median(&slow);
        let col = |ci: usize| median(&v[ci].iter().map(pick).collect::<Vec<_>>());
        let list = |x: &[f64]| {
            x.iter()
                .map(|x| format!("{x:+.1}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        println!(
            "  {metric} medians: alone {:.3} s, wakeviz {:.3} s, wakeviz --no-batch {:.3} s; per-round slowdown [{}]%, --no-batch [{}]%",
            col(0),
            col(1),
            col(2),
            list(&slow),
            list(&slow_unbatched)
        );
        let mu = median(&slow_unbatched);
        sum.add(
            "16",
            format!("perf bench sched messaging slowdown under wakeviz --no-batch ({metric})"),
            format!("{mu:+.2}% (ratio {:.3})", 1.0 + mu / 100.0),
            "(info: before batching)",
            None,
        );
        let judged = metric.starts_with("CPU");
        let ci = median_ci95(&slow).map_or_else(
            || "too few rounds for a 95% CI".into(),
            |(lo, hi)| format!("95% CI of the median {lo:+.1}..{hi:+.1}%"),
        );
        sum.add(
            "16",
            format!("perf bench sched messaging slowdown under wakeviz ({metric})"),
            format!("{med:+.2}% (ratio {:.3}; {ci})", 1.0 + med / 100.0),
            if judged { "<= 2%" } else { "(info) <= 2%" },
            judged.then_some(med <= 2.0),
        );
    }
    Ok(())
}
