//! tracefs: mounted on demand (classic tracepoints need it for event ids) and the source of
//! classic record layouts (`events/sched/<name>/format`), which change across versions (6.16
//! turned some `comm` fields into `__data_loc`).
use std::{collections::HashMap, path::PathBuf};

pub const TRACEFS: &str = "/sys/kernel/tracing";

/// Mounts tracefs if it is missing. Returns a note for the user when it did something or
/// could not.
pub fn ensure_mounted() -> Option<String> {
    let probe = PathBuf::from(TRACEFS).join("events");
    if probe.exists() {
        return None;
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some(format!("tracefs is not readable on {TRACEFS} (not root)"));
    }
    let status = std::process::Command::new("mount")
        .args(["-t", "tracefs", "nodev", TRACEFS])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    match status {
        Ok(s) if s.success() && probe.exists() => Some(format!("mounted tracefs on {TRACEFS}")),
        Ok(_) | Err(_) => Some(format!(
            "tracefs is not mounted on {TRACEFS} and mounting it failed; classic tracepoints unavailable"
        )),
    }
}

/// A classic tracepoint record field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    pub offset: u64,
    pub size: u64,
    /// `__data_loc` fields hold (offset, length) of a variable part, not the value.
    pub data_loc: bool,
}

/// Parses a tracefs `format` file into name -> field.
pub fn parse_format(text: &str) -> HashMap<String, Field> {
    let mut out = HashMap::new();
    for line in text.lines() {
        let line = line.trim();
        let Some(rest) = line.strip_prefix("field:") else {
            continue;
        };
        let mut decl = "";
        let mut offset = None;
        let mut size = None;
        for part in rest.split(';') {
            let part = part.trim();
            if let Some(v) = part.strip_prefix("offset:") {
                offset = v.trim().parse().ok();
            } else if let Some(v) = part.strip_prefix("size:") {
                size = v.trim().parse().ok();
            } else if decl.is_empty() {
                decl = part;
            }
        }
        let (Some(offset), Some(size)) = (offset, size) else {
            continue;
        };
        // "char prev_comm[16]" -> prev_comm ; "__data_loc char[] comm" -> comm
        let name = decl
            .rsplit(|c: char| c.is_whitespace() || c == '*')
            .next()
            .unwrap_or("")
            .split('[')
            .next()
            .unwrap_or("")
            .to_string();
        if !name.is_empty() {
            out.insert(
                name,
                Field {
                    offset,
                    size,
                    data_loc: decl.contains("__data_loc"),
                },
            );
        }
    }
    out
}

pub fn read_format(event: &str) -> Option<HashMap<String, Field>> {
    let p = PathBuf::from(TRACEFS)
        .join("events/sched")
        .join(event)
        .join("format");
    std::fs::read_to_string(p).ok().map(|t| parse_format(&t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sched_switch_and_data_loc() {
        let f = parse_format(
            "name: sched_switch\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
             \tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
             \tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\
             \tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\
             \tfield:__data_loc char[] comm;\toffset:8;\tsize:4;\tsigned:0;\n",
        );
        assert_eq!(
            f["prev_comm"],
            Field {
                offset: 8,
                size: 16,
                data_loc: false
            }
        );
        assert_eq!(f["prev_pid"].offset, 24);
        assert_eq!(f["prev_state"].size, 8);
        assert!(f["comm"].data_loc);
    }
}
