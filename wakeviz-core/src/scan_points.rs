//! Scan points: the kernel addresses where the idle-CPU scan of `select_task_rq_fair` starts and
//! tests each CPU or core, found in a vmlinux's debug info for kernels that inline
//! `select_idle_cpu` (no function to put an fentry on). The points file is their JSON form, so
//! a machine without debug info can use points found elsewhere for the same build.
//!
//! Only the data and its validation live here; reading a vmlinux and the running kernel is the
//! binary's (`wakeviz::probes::debuginfo`). A points file is input like any other: everything
//! in it is checked against limits before it is used, because its symbols and offsets become
//! kprobe targets.
use serde::{Deserialize, Serialize};

/// The one points-file version this build reads and writes.
pub const VERSION: u32 = 1;
/// Largest points file read: a real one is a few KiB.
pub const MAX_FILE_BYTES: usize = 64 * 1024;
/// Most points in a file: a kernel has a handful.
pub const MAX_POINTS: usize = 64;
/// A kprobe offset is within one function; no function of the scheduler is near 1 MiB.
pub const MAX_OFFSET: u64 = 1 << 20;
/// Longest symbol name accepted.
pub const MAX_SYMBOL: usize = 128;
/// Most notes in a file, and the longest note: they are printed to the user.
pub const MAX_NOTES: usize = 64;
pub const MAX_NOTE: usize = 512;

/// What happens at a scan point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScanRole {
    /// `select_idle_cpu` starts: one scan of the LLC for an idle CPU.
    ScanEntry,
    /// `__select_idle_cpu` starts: one CPU tested.
    IdleTest,
    /// `select_idle_core` starts: one core tested.
    IdleCore,
    /// `select_idle_smt` starts: the SMT siblings of the target tested.
    Smt,
}

impl ScanRole {
    /// The role of the kernel function `name` (an inlined function's name, or a symbol without
    /// its `.constprop.N`-like suffix), if it is one of the scan's.
    pub fn of_function(name: &str) -> Option<Self> {
        match name {
            "select_idle_cpu" => Some(Self::ScanEntry),
            "__select_idle_cpu" => Some(Self::IdleTest),
            "select_idle_core" => Some(Self::IdleCore),
            "select_idle_smt" => Some(Self::Smt),
            _ => None,
        }
    }

    /// The kernel function whose start this role watches.
    pub const fn function(self) -> &'static str {
        Self::FUNCTIONS[self as usize]
    }

    /// The role's file name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::ScanEntry => "scan_entry",
            Self::IdleTest => "idle_test",
            Self::IdleCore => "idle_core",
            Self::Smt => "smt",
        }
    }

    /// The role by its file name (`scan_entry`, `idle_test`, `idle_core`, `smt`).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "scan_entry" => Some(Self::ScanEntry),
            "idle_test" => Some(Self::IdleTest),
            "idle_core" => Some(Self::IdleCore),
            "smt" => Some(Self::Smt),
            _ => None,
        }
    }

    /// Every role's function name, in the order of [`ScanRole::of_function`].
    pub const FUNCTIONS: [&'static str; 4] = [
        "select_idle_cpu",
        "__select_idle_cpu",
        "select_idle_core",
        "select_idle_smt",
    ];
}

/// One place to put a kprobe: `symbol+offset`, which is `addr` in the vmlinux it was found in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScanPoint {
    pub role: ScanRole,
    /// The ELF function symbol that contains the point (a kprobe is placed as symbol+offset).
    pub symbol: String,
    pub offset: u64,
    /// The point's address in the vmlinux (without KASLR's shift), for people and for checks.
    /// Written as a hex string: kernel addresses are above 2^53, where JSON readers that use
    /// doubles (jq, JavaScript) round them.
    #[serde(with = "hex_addr")]
    pub addr: u64,
    /// The function whose code starts there (the inlined function's name, or the out-of-line
    /// function's).
    pub function: String,
    /// Where it is called from (`DW_AT_call_line` in the same source file), when it is inlined.
    #[serde(default)]
    pub call_line: Option<u32>,
}

impl ScanPoint {
    /// `symbol+0xOFFSET`, as kprobe_events and the kernel's stack traces write it.
    pub fn target(&self) -> String {
        format!("{}+{:#x}", self.symbol, self.offset)
    }
}

/// The scan points of one kernel build.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScanPoints {
    /// [`VERSION`].
    pub version: u32,
    /// The vmlinux they were found in (for the reader; the build id is what is checked).
    pub vmlinux: String,
    /// The GNU build id of that vmlinux, lowercase hex: the points are valid for that build
    /// only, and the running kernel's must match.
    pub build_id: String,
    pub points: Vec<ScanPoint>,
    /// What was found but could not become a point, and why.
    #[serde(default)]
    pub notes: Vec<String>,
}

/// Why a points file was refused. Each message is one line.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ScanPointsError {
    #[error("the points file is {0} bytes, more than the limit of {MAX_FILE_BYTES}")]
    TooLarge(usize),
    #[error("not a points file: {0}")]
    Json(String),
    #[error("points file version {0} is not the supported version {VERSION}")]
    Version(u32),
    #[error("{0} points, more than the limit of {MAX_POINTS}")]
    TooManyPoints(usize),
    #[error("{0} notes, more than the limit of {MAX_NOTES}")]
    TooManyNotes(usize),
    #[error("a note is {0} bytes, more than the limit of {MAX_NOTE}")]
    NoteTooLong(usize),
    #[error("build id {0:?} is not 2 to 64 hex digits")]
    BuildId(String),
    #[error("point {index}: symbol {symbol:?} is not 1 to {MAX_SYMBOL} of A-Z a-z 0-9 _ .")]
    Symbol { index: usize, symbol: String },
    #[error("point {index}: function {function:?} is not 1 to {MAX_SYMBOL} of A-Z a-z 0-9 _ .")]
    Function { index: usize, function: String },
    #[error("point {index}: offset {offset:#x} is not below {MAX_OFFSET:#x}")]
    Offset { index: usize, offset: u64 },
    #[error("the vmlinux name is {0} bytes, more than the limit of 4096")]
    VmlinuxName(usize),
}

impl ScanPoints {
    /// Reads and validates a points file.
    pub fn from_json(bytes: &[u8]) -> Result<Self, ScanPointsError> {
        if bytes.len() > MAX_FILE_BYTES {
            return Err(ScanPointsError::TooLarge(bytes.len()));
        }
        let p: Self = serde_json::from_slice(bytes).map_err(|e| {
            // serde_json's messages are one line; the text is input, so keep it short.
            let mut m = e.to_string();
            m.truncate(200);
            ScanPointsError::Json(m.replace(['\n', '\r'], " "))
        })?;
        p.validate()?;
        Ok(p)
    }

    /// The points file, pretty-printed, with a final newline.
    pub fn to_json(&self) -> String {
        // A struct of strings, integers, options and plain enums always serialises.
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s
    }

    /// Checks every limit [`ScanPoints::from_json`] checks (also for points made in memory,
    /// before they are written or used).
    pub fn validate(&self) -> Result<(), ScanPointsError> {
        if self.version != VERSION {
            return Err(ScanPointsError::Version(self.version));
        }
        if self.vmlinux.len() > 4096 {
            return Err(ScanPointsError::VmlinuxName(self.vmlinux.len()));
        }
        if !valid_build_id(&self.build_id) {
            return Err(ScanPointsError::BuildId(shortened(&self.build_id, 80)));
        }
        if self.points.len() > MAX_POINTS {
            return Err(ScanPointsError::TooManyPoints(self.points.len()));
        }
        if self.notes.len() > MAX_NOTES {
            return Err(ScanPointsError::TooManyNotes(self.notes.len()));
        }
        if let Some(n) = self.notes.iter().find(|n| n.len() > MAX_NOTE) {
            return Err(ScanPointsError::NoteTooLong(n.len()));
        }
        for (index, p) in self.points.iter().enumerate() {
            if !valid_symbol(&p.symbol) {
                return Err(ScanPointsError::Symbol {
                    index,
                    symbol: shortened(&p.symbol, MAX_SYMBOL + 8),
                });
            }
            if !valid_symbol(&p.function) {
                return Err(ScanPointsError::Function {
                    index,
                    function: shortened(&p.function, MAX_SYMBOL + 8),
                });
            }
            if p.offset >= MAX_OFFSET {
                return Err(ScanPointsError::Offset {
                    index,
                    offset: p.offset,
                });
            }
        }
        Ok(())
    }
}

/// `"0xffffffff81124535"` in the file; a plain number is read too.
mod hex_addr {
    use serde::{Deserialize, Deserializer, Serializer, de::Error as _};

    pub fn serialize<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{v:#x}"))
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Number(u64),
        Text(String),
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        match Either::deserialize(d)? {
            Either::Number(n) => Ok(n),
            Either::Text(t) => t
                .strip_prefix("0x")
                .filter(|h| (1..=16).contains(&h.len()))
                .and_then(|h| u64::from_str_radix(h, 16).ok())
                .ok_or_else(|| {
                    D::Error::custom("addr is not a hex address like \"0xffffffff81000000\"")
                }),
        }
    }
}

/// `[A-Za-z0-9_.]{1,128}`: what a kernel function symbol is, and nothing that could change the
/// meaning of a kprobe definition.
pub fn valid_symbol(s: &str) -> bool {
    (1..=MAX_SYMBOL).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
}

/// 2 to 64 lowercase or uppercase hex digits, an even count (bytes).
pub fn valid_build_id(s: &str) -> bool {
    (2..=64).contains(&s.len())
        && s.len().is_multiple_of(2)
        && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Lowercase hex of `bytes`, as build ids are written.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// At most `max` characters of `s`, for an error message about it.
fn shortened(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ScanPoints {
        ScanPoints {
            version: VERSION,
            vmlinux: "/usr/lib/debug/boot/vmlinux-6.12".into(),
            build_id: "ebc52e2876d4430baf9b7b6f3226b56fe99c2d5f".into(),
            points: vec![
                ScanPoint {
                    role: ScanRole::ScanEntry,
                    symbol: "select_task_rq_fair".into(),
                    offset: 0x545,
                    addr: 0xffff_ffff_8112_4535,
                    function: "select_idle_cpu".into(),
                    call_line: Some(8046),
                },
                ScanPoint {
                    role: ScanRole::IdleCore,
                    symbol: "select_idle_core.constprop.0".into(),
                    offset: 0,
                    addr: 0xffff_ffff_8111_8020,
                    function: "select_idle_core".into(),
                    call_line: None,
                },
            ],
            notes: vec!["select_idle_smt (fair.c:8040): no entry address in the debug info".into()],
        }
    }

    #[test]
    fn round_trips_and_names_roles_in_snake_case() {
        let p = sample();
        let j = p.to_json();
        assert!(j.contains("\"role\": \"scan_entry\""), "{j}");
        assert!(j.contains("\"role\": \"idle_core\""), "{j}");
        assert!(j.contains("\"addr\": \"0xffffffff81124535\""), "{j}");
        assert!(j.ends_with("}\n"));
        assert_eq!(ScanPoints::from_json(j.as_bytes()), Ok(p));
        assert_eq!(sample().points[0].target(), "select_task_rq_fair+0x545");
    }

    #[test]
    fn every_role_has_its_snake_case_name() {
        for (f, name) in
            ScanRole::FUNCTIONS
                .iter()
                .zip(["scan_entry", "idle_test", "idle_core", "smt"])
        {
            let r = ScanRole::of_function(f).expect(f);
            assert_eq!(serde_json::to_string(&r).unwrap(), format!("\"{name}\""));
            assert_eq!((r.name(), r.function()), (name, *f));
            assert_eq!(ScanRole::from_name(name), Some(r));
        }
        assert_eq!(ScanRole::of_function("select_idle_sibling"), None);
    }

    fn with(f: impl FnOnce(&mut ScanPoints)) -> Result<ScanPoints, ScanPointsError> {
        let mut p = sample();
        f(&mut p);
        // Through the file form, as a points file would arrive.
        let j = serde_json::to_string(&p).unwrap();
        ScanPoints::from_json(j.as_bytes())
    }

    #[test]
    fn refuses_a_file_over_64_kib_before_parsing_it() {
        let mut big = sample().to_json().into_bytes();
        big.resize(MAX_FILE_BYTES + 1, b' ');
        assert_eq!(
            ScanPoints::from_json(&big),
            Err(ScanPointsError::TooLarge(MAX_FILE_BYTES + 1))
        );
        let mut ok = sample().to_json().into_bytes();
        ok.resize(MAX_FILE_BYTES, b' ');
        assert!(ScanPoints::from_json(&ok).is_ok());
    }

    #[test]
    fn refuses_more_than_64_points() {
        let e = with(|p| {
            let one = p.points[0].clone();
            p.points = vec![one; MAX_POINTS + 1];
        });
        assert_eq!(e, Err(ScanPointsError::TooManyPoints(MAX_POINTS + 1)));
        assert!(
            with(|p| {
                let one = p.points[0].clone();
                p.points = vec![one; MAX_POINTS];
            })
            .is_ok()
        );
    }

    #[test]
    fn refuses_an_unknown_version() {
        assert_eq!(with(|p| p.version = 2), Err(ScanPointsError::Version(2)));
        assert_eq!(with(|p| p.version = 0), Err(ScanPointsError::Version(0)));
    }

    #[test]
    fn refuses_symbols_outside_the_kernel_alphabet() {
        for bad in [
            "",
            "select_task_rq_fair+0x10",
            "a b",
            "x\nr:evil do_sys_open",
            "sym/1",
            "é",
            &"a".repeat(MAX_SYMBOL + 1),
        ] {
            let e = with(|p| p.points[1].symbol = bad.into());
            assert!(
                matches!(e, Err(ScanPointsError::Symbol { index: 1, .. })),
                "{bad:?}: {e:?}"
            );
            let e = with(|p| p.points[0].function = bad.into());
            assert!(
                matches!(e, Err(ScanPointsError::Function { index: 0, .. })),
                "{bad:?}: {e:?}"
            );
        }
        assert!(with(|p| p.points[0].symbol = "a".repeat(MAX_SYMBOL)).is_ok());
        assert!(with(|p| p.points[0].symbol = "f.isra.0".into()).is_ok());
    }

    #[test]
    fn refuses_offsets_of_1_mib_and_more() {
        assert_eq!(
            with(|p| p.points[0].offset = MAX_OFFSET),
            Err(ScanPointsError::Offset {
                index: 0,
                offset: MAX_OFFSET
            })
        );
        assert!(with(|p| p.points[0].offset = MAX_OFFSET - 1).is_ok());
    }

    #[test]
    fn refuses_a_build_id_that_is_not_2_to_64_hex_digits() {
        for bad in ["", "a", "abc", "xyz0", "0x12", &"ab".repeat(33), "ab cd"] {
            let e = with(|p| p.build_id = bad.into());
            assert!(
                matches!(e, Err(ScanPointsError::BuildId(_))),
                "{bad:?}: {e:?}"
            );
        }
        for good in ["ab", "ABCD", &"0f".repeat(32)] {
            assert!(with(|p| p.build_id = good.into()).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn refuses_malformed_json_unknown_fields_and_roles_in_one_line() {
        for bad in [
            &b"{"[..],
            b"[]",
            b"\xff\xfe",
            br#"{"version":1,"vmlinux":"v","build_id":"ab","points":[],"notes":[],"extra":1}"#,
            br#"{"version":1,"vmlinux":"v","build_id":"ab","points":[{"role":"other","symbol":"s","offset":0,"addr":0,"function":"f"}]}"#,
            br#"{"version":1,"vmlinux":"v","build_id":"ab","points":[{"role":"smt","symbol":"s","offset":-1,"addr":0,"function":"f"}]}"#,
            br#"{"version":1,"vmlinux":"v","build_id":"ab","points":[{"role":"smt","symbol":"s","offset":0,"addr":"ffff","function":"f"}]}"#,
            br#"{"version":1,"vmlinux":"v","build_id":"ab","points":[{"role":"smt","symbol":"s","offset":0,"addr":"0x10000000000000000","function":"f"}]}"#,
            br#"{"version":1,"vmlinux":"v","build_id":"ab","points":[{"role":"smt","symbol":"s","offset":0,"addr":"0x","function":"f"}]}"#,
        ] {
            let e = ScanPoints::from_json(bad).unwrap_err();
            assert!(matches!(e, ScanPointsError::Json(_)), "{e:?}");
            assert!(!e.to_string().contains('\n'), "{e}");
        }
        // Notes and call lines may be left out.
        let p = ScanPoints::from_json(
            br#"{"version":1,"vmlinux":"v","build_id":"ab","points":[{"role":"smt","symbol":"s","offset":0,"addr":0,"function":"f"}]}"#,
        )
        .unwrap();
        assert_eq!(p.points[0].call_line, None);
        assert_eq!(p.points[0].addr, 0);
        assert!(p.notes.is_empty());
    }

    #[test]
    fn refuses_too_many_or_too_long_notes() {
        assert_eq!(
            with(|p| p.notes = vec![String::new(); MAX_NOTES + 1]),
            Err(ScanPointsError::TooManyNotes(MAX_NOTES + 1))
        );
        assert_eq!(
            with(|p| p.notes = vec!["n".repeat(MAX_NOTE + 1)]),
            Err(ScanPointsError::NoteTooLong(MAX_NOTE + 1))
        );
    }

    #[test]
    fn hex_is_lowercase() {
        assert_eq!(hex(&[0xeb, 0xc5, 0x0a]), "ebc50a");
    }
}
