//! What wakeviz's function probes (fentry/fexit on `select_task_rq_fair`) add to a wakeup, measured
//! in the guest (the development machine refuses fentry). The guest (`xtask/vm/fentry.sh`) runs a
//! ping-pong on CPUs 1-2 alone, under `wakeviz --record --no-function-probes`, under
//! `wakeviz --record` and under `wakeviz --record` without the select probe's input reads
//! (`WAKEVIZ_SKIP_SELECT_INPUTS=1`, what the select inputs cost) and under `wakeviz --record
//! --scan-points` (plus the idle-scan kprobes), rotated; this reads its timings.
//! A benchmark, not a test: the figures are printed, never judged.
use std::{collections::BTreeMap, path::Path};

use super::check::Findings;

/// "rounds:iterations" for the guest by default: enough to check the runs and their summary in
/// about a minute of guest time. Figures worth quoting need more (`--fentry-cost 5:20000`, about
/// five minutes): the paired differences scatter by tens of percent between rounds under TCG.
pub const DEFAULT: &str = "2:10000";

/// `setting` ("rounds:iterations", both at least 1), or why not.
pub fn check_setting(setting: &str) -> Result<(), String> {
    let ok = |v: Option<&str>| v.and_then(|v| v.parse::<u32>().ok()).is_some_and(|n| n > 0);
    let mut it = setting.split(':');
    if ok(it.next()) && ok(it.next()) && it.next().is_none() {
        Ok(())
    } else {
        Err(format!(
            "--fentry-cost {setting:?}: want ROUNDS:ITERATIONS, both at least 1 (e.g. 5:20000)"
        ))
    }
}

const CONFIGS: [&str; 5] = ["alone", "nofunc", "func", "noinputs", "scan"];

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Per round, µs per round trip of each configuration, from `round config t0 t1` lines.
fn parse(text: &str, iterations: f64) -> BTreeMap<u32, BTreeMap<String, f64>> {
    let mut m: BTreeMap<u32, BTreeMap<String, f64>> = BTreeMap::new();
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if let [r, cfg, t0, t1] = f[..]
            && let (Ok(r), Ok(t0), Ok(t1)) = (r.parse(), t0.parse::<f64>(), t1.parse::<f64>())
        {
            m.entry(r)
                .or_default()
                .insert(cfg.to_string(), (t1 - t0) * 1e6 / iterations);
        }
    }
    m
}

/// The summary lines: medians per configuration, the paired added cost of each traced
/// configuration, and the function probes' share.
pub fn summarise(text: &str, iterations: f64) -> Result<Vec<String>, String> {
    let m = parse(text, iterations);
    let full: Vec<&BTreeMap<String, f64>> = m
        .values()
        .filter(|c| CONFIGS.iter().all(|k| c.contains_key(*k)))
        .collect();
    if full.is_empty() {
        return Err(
            "no complete round (alone, nofunc, func, noinputs, scan) in fentry/times.txt".into(),
        );
    }
    let col = |k: &str| full.iter().map(|c| c[k]).collect::<Vec<f64>>();
    let added = |k: &str| {
        let mut d: Vec<f64> = full.iter().map(|c| c[k] - c["alone"]).collect();
        median(&mut d)
    };
    let mut fp: Vec<f64> = full.iter().map(|c| c["func"] - c["nofunc"]).collect();
    let (a_no, a_fn, a_fp) = (added("nofunc"), added("func"), median(&mut fp));
    let mut ratio: Vec<f64> = full.iter().map(|c| c["func"] / c["nofunc"]).collect();
    let ratio = median(&mut ratio);
    let mut inputs: Vec<f64> = full.iter().map(|c| c["func"] / c["noinputs"]).collect();
    let mut inputs_us: Vec<f64> = full.iter().map(|c| c["func"] - c["noinputs"]).collect();
    let mut scan: Vec<f64> = full.iter().map(|c| c["scan"] / c["func"]).collect();
    let mut scan_us: Vec<f64> = full.iter().map(|c| c["scan"] - c["func"]).collect();
    let mut scan_share: Vec<f64> = full
        .iter()
        .map(|c| (c["scan"] - c["func"]) / (c["func"] - c["alone"]))
        .collect();
    Ok(vec![
        format!(
            "  fentry cost ({} rounds x {iterations} round trips on CPUs 1-2, medians): alone {:.1} us/rt; added by wakeviz --record --no-function-probes {a_no:+.1} us/rt, by wakeviz --record {a_fn:+.1} us/rt",
            full.len(),
            median(&mut col("alone")),
        ),
        format!(
            "  fentry cost: the function probes add {a_fp:+.1} us per round trip (paired: with minus without); with/without ratio {ratio:.3}; share of wakeviz's added cost {}",
            if a_fn > 0.0 {
                format!("{:.0}%", a_fp / a_fn * 100.0)
            } else {
                "n/a (noise)".into()
            }
        ),
        format!(
            "  select input reads (ABI 2 loads/delayed/kthread/affinity + ABI 3 wakee_flips): with/without ratio {:.3}, {:+.2} us per round trip (paired medians, function probes on in both)",
            median(&mut inputs),
            median(&mut inputs_us),
        ),
        format!(
            "  idle-scan kprobes (--scan-points): with/without ratio {:.3}, {:+.2} us per round trip, {:+.1}% of wakeviz's added cost (paired medians, function probes on in both)",
            median(&mut scan),
            median(&mut scan_us),
            median(&mut scan_share) * 100.0,
        ),
    ])
}

/// Adds the guest's fentry-cost figures to the findings; a missing result is a failure (the
/// run was asked for).
pub fn report(f: &mut Findings, results: &Path, iterations: f64) {
    let path = results.join("fentry/times.txt");
    match std::fs::read_to_string(&path) {
        Ok(t) => match summarise(&t, iterations) {
            Ok(lines) => lines.into_iter().for_each(|l| f.line(l)),
            Err(e) => f.fail(format!("fentry cost: {e}")),
        },
        Err(e) => f.fail(format!("fentry cost: {}: {e}", path.display())),
    }
    // How often the scan kprobes fired in those runs (the ratio means little without it).
    let (mut calls, mut scans, mut runs) = (0, 0, 0);
    for e in std::fs::read_dir(results.join("fentry"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("scan-") && name.ends_with(".json")) {
            continue;
        }
        let Some(m) = std::fs::read(e.path())
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|v| v.pointer("/scan_latency/measured").cloned())
        else {
            continue;
        };
        let n = |k: &str| m.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
        (calls, scans, runs) = (calls + n("calls"), scans + n("scans"), runs + 1);
    }
    f.line(format!(
        "  idle-scan kprobes in those runs: {scans} scans in {calls} placements watched ({runs} runs)"
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_two_positive_counts() {
        for good in [DEFAULT, "5:20000", "1:1"] {
            assert_eq!(check_setting(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "5",
            "5:",
            ":20000",
            "0:100",
            "5:0",
            "5:20000:1",
            "a:b",
            "-1:5",
        ] {
            assert!(check_setting(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn paired_medians_and_ratio() {
        // 1000 round trips: 1 s = 1000 us/rt.
        let t = "0 alone 10.0 11.0\n0 nofunc 12.0 13.2\n0 func 14.0 15.5\n0 noinputs 16 17.4\n\
                 0 scan 18 19.65\n\
                 1 nofunc 20.0 21.1\n1 func 22.0 23.4\n1 noinputs 24 25.3\n1 alone 24.0 24.9\n\
                 1 scan 26 27.4\n\
                 2 func 30.0 31.0\n2 alone 32.0 33.0\n2 noinputs 34 35\n2 scan 36 37\n";
        let l = summarise(t, 1000.0).unwrap();
        // Rounds 0 and 1 are complete; round 2 lacks nofunc and is left out.
        assert!(l[0].contains("2 rounds"), "{l:?}");
        assert!(l[0].contains("alone 950.0 us/rt"), "{l:?}");
        // nofunc - alone: +200, +200; func - alone: +500, +500; func - nofunc: +300, +300.
        assert!(l[0].contains("--no-function-probes +200.0"), "{l:?}");
        assert!(l[0].contains("wakeviz --record +500.0"), "{l:?}");
        assert!(l[1].contains("add +300.0 us"), "{l:?}");
        assert!(l[1].contains("share of wakeviz's added cost 60%"), "{l:?}");
        // func / noinputs: 1500 / 1400 = 1.0714 and 1400 / 1300 = 1.0769, median 1.0742.
        assert!(l[2].contains("ratio 1.074"), "{l:?}");
        assert!(l[2].contains("+100.00 us"), "{l:?}");
        // scan / func: 1650 / 1500 = 1.1 and 1400 / 1400 = 1.0, median 1.05; +150 and +0 us,
        // median +75; share of the added cost 150/500 and 0/500, median 15 %.
        assert!(l[3].contains("ratio 1.050"), "{l:?}");
        assert!(l[3].contains("+75.00 us"), "{l:?}");
        assert!(l[3].contains("+15.0%"), "{l:?}");
    }

    #[test]
    fn no_complete_round_is_an_error() {
        assert!(summarise("0 alone 1 2\n", 10.0).is_err());
    }
}
