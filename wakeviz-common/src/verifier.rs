//! The line `wakeviz --bpf-stats` prints per program for what loading it cost the kernel's
//! verifier, written by the probe loader and read by the live tests and the VM suite, which
//! hold each program to [`crate::PROBE_VERIFIER_BUDGET_INSNS`].
use core::fmt::{self, Write};

/// What every verifier line starts with.
pub const LINE_PREFIX: &str = "bpf: verifier ";

/// Writes `bpf: verifier PROGRAM N instructions to load` and a newline.
pub fn write_line(w: &mut impl Write, program: &str, insns: u32) -> fmt::Result {
    writeln!(
        w,
        "{LINE_PREFIX}{program:<32} {insns:>9} instructions to load"
    )
}

/// (program, instructions) of a line [`write_line`] wrote; `None` for any other line.
pub fn parse_line(line: &str) -> Option<(&str, u32)> {
    let mut w = line.strip_prefix(LINE_PREFIX)?.split_whitespace();
    Some((w.next()?, w.next()?.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_line_parses_back() {
        let mut s = String::new();
        write_line(&mut s, "btf_sched_waking", 26_237).unwrap();
        assert!(s.ends_with(" instructions to load\n"), "{s}");
        assert_eq!(parse_line(s.trim_end()), Some(("btf_sched_waking", 26_237)));
    }

    #[test]
    fn other_lines_are_not_verifier_lines() {
        assert_eq!(parse_line("bpf: btf_sched_waking 12 runs"), None);
        assert_eq!(parse_line("bpf: verifier btf_sched_waking many"), None);
        assert_eq!(parse_line("bpf: verifier"), None);
    }
}
