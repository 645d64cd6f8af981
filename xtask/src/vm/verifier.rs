//! What loading each probe cost the kernel's verifier in the guest: the `bpf: verifier` lines
//! `wakeviz --bpf-stats` prints, from the `cache` run (the function probes load only in the
//! guest). A program near the verifier's limit of one million instructions is refused by a
//! kernel whose verifier explores a little more, and every capture waits for its load.
use std::path::Path;

use wakeviz_common::PROBE_VERIFIER_BUDGET_INSNS as MAX_INSNS;

use super::check::Findings;

/// (program, instructions) of each verifier line (`wakeviz_common::verifier`).
fn parse(text: &str) -> Vec<(String, u32)> {
    text.lines()
        .filter_map(wakeviz_common::verifier::parse_line)
        .map(|(p, n)| (p.to_string(), n))
        .collect()
}

/// Prints every program's cost; fails past [`MAX_INSNS`], or when the function probes' entry
/// program has no line (they did not load, so their cost went unchecked).
pub fn check(f: &mut Findings, log: &Path) {
    let text = match std::fs::read_to_string(log) {
        Ok(t) => t,
        Err(e) => {
            f.fail(format!("verifier cost: {}: {e}", log.display()));
            return;
        }
    };
    let progs = parse(&text);
    let list: Vec<String> = progs.iter().map(|(p, n)| format!("{p} {n}")).collect();
    f.line(format!(
        "  verifier instructions per probe (cache run, at most {MAX_INSNS}): {}",
        list.join(", ")
    ));
    if !progs.iter().any(|(p, _)| p == "fentry_select_task_rq_fair") {
        f.fail("verifier cost: no line for fentry_select_task_rq_fair in cache.log");
    }
    for (p, n) in &progs {
        if *n > MAX_INSNS {
            f.fail(format!(
                "verifier cost: {p} needed {n} instructions, want at most {MAX_INSNS}"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_verifier_lines_only() {
        let log = "bpf: btf_sched_waking 1000 runs 300.0 ns/run\n\
            bpf: verifier btf_sched_waking 26237 instructions to load\n\
            bpf: verifier fentry_select_task_rq_fair 966621 instructions to load\n\
            bpf: the kernel refuses a program whose verification passes 1000000 instructions\n\
            wakeviz: captured 10 events\n";
        assert_eq!(
            parse(log),
            [
                ("btf_sched_waking".to_string(), 26_237),
                ("fentry_select_task_rq_fair".to_string(), 966_621)
            ]
        );
    }
}
