//! The scan points of a vmlinux, from its ELF symbol table and the DWARF of
//! `kernel/sched/fair.c`.
//!
//! The file is mapped, not read: a debug vmlinux is hundreds of MB and only the fair.c unit and
//! the symbol table are looked at. Everything in it is input; a malformed file is an error,
//! never a panic.
use std::{collections::HashMap, fs::File, path::Path};

use gimli::{
    AttributeValue, DebuggingInformationEntry, DwAt, EndianSlice, RunTimeEndian, Unit, UnitOffset,
    constants,
};
use object::{Object as _, ObjectSection as _, ObjectSymbol as _};
use wakeviz_core::scan_points::{self, ScanPoint, ScanPoints, ScanRole};

use super::DebugInfoError;

type R<'a> = EndianSlice<'a, RunTimeEndian>;

/// The compilation unit searched: the scan is all in this file.
const FAIR_C: &str = "kernel/sched/fair.c";
/// Most inlined copies taken from the debug info: a real kernel has a handful; a file with
/// more is broken or hostile, and what is kept stays small.
const MAX_CANDIDATES: usize = 1024;
/// How many DW_AT_abstract_origin / DW_AT_specification links are followed to a name: real
/// chains are one or two long; a longer one is a loop in a broken file.
const MAX_ORIGIN_DEPTH: usize = 8;

/// Finds the scan points of the vmlinux at `vmlinux`.
pub fn find(vmlinux: &Path) -> Result<ScanPoints, DebugInfoError> {
    let at = |why: String| DebugInfoError::Vmlinux {
        path: vmlinux.to_path_buf(),
        why,
    };
    // Checked before opening: opening a FIFO would wait for a writer.
    match std::fs::metadata(vmlinux) {
        Ok(m) if m.is_file() => {}
        Ok(_) => return Err(at("not a regular file".into())),
        Err(e) => return Err(at(format!("cannot open it: {e}"))),
    }
    let file = File::open(vmlinux).map_err(|e| at(format!("cannot open it: {e}")))?;
    // SAFETY: the mapping is private and read-only, and every byte of it is treated as
    // untrusted input. Were the file truncated while mapped, reads past its new end would
    // raise SIGBUS; a debug vmlinux is a packaged or built file nobody rewrites in place, and
    // there is no way to map a file that rules this out.
    let map =
        unsafe { memmap2::Mmap::map(&file) }.map_err(|e| at(format!("cannot map it: {e}")))?;
    let elf = object::File::parse(&*map).map_err(|e| at(format!("not an ELF file: {e}")))?;
    if elf.format() != object::BinaryFormat::Elf {
        return Err(at("not an ELF file".into()));
    }
    // A relocatable object's addresses are all section-relative zeros until it is linked.
    if elf.kind() != object::ObjectKind::Executable && elf.kind() != object::ObjectKind::Dynamic {
        return Err(at(format!(
            "not a linked kernel image (an ELF file of kind {:?})",
            elf.kind()
        )));
    }
    let build_id = match elf.build_id() {
        Ok(Some(id)) if (1..=32).contains(&id.len()) => scan_points::hex(id),
        Ok(Some(id)) => return Err(at(format!("its build id is {} bytes long", id.len()))),
        Ok(None) => return Err(at("it has no GNU build id note".into())),
        Err(e) => return Err(at(format!("cannot read its build id: {e}"))),
    };
    let funcs = functions(&elf);
    let mut found = Found::default();
    out_of_line(&funcs, &mut found);
    inlined(&elf, &mut found).map_err(at)?;

    let mut points = Vec::new();
    let mut notes = found.notes;
    for c in found.candidates {
        match place(&funcs, c.addr) {
            Some((symbol, offset)) if offset < scan_points::MAX_OFFSET => points.push(ScanPoint {
                role: c.role,
                symbol: symbol.to_string(),
                offset,
                addr: c.addr,
                function: c.function.to_string(),
                call_line: c.call_line,
            }),
            Some((symbol, offset)) => notes.push(format!(
                "{} at {:#x}: {symbol}+{offset:#x} is too far into the function for a kprobe",
                c.function, c.addr
            )),
            None => notes.push(format!(
                "{} at {:#x}: no function symbol contains it",
                c.function, c.addr
            )),
        }
    }
    points.sort_by_key(|p| (p.role, p.addr));
    points.dedup_by(|a, b| a.role == b.role && a.addr == b.addr);
    if points.len() > scan_points::MAX_POINTS {
        notes.push(format!(
            "{} points found, only the first {} kept",
            points.len(),
            scan_points::MAX_POINTS
        ));
        points.truncate(scan_points::MAX_POINTS);
    }
    notes.truncate(scan_points::MAX_NOTES);
    for n in &mut notes {
        *n = at_most(n, scan_points::MAX_NOTE);
    }
    let out = ScanPoints {
        version: scan_points::VERSION,
        vmlinux: at_most(&vmlinux.display().to_string(), 4096),
        build_id,
        points,
        notes,
    };
    out.validate().map_err(|e| at(e.to_string()))?;
    Ok(out)
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
fn at_most(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// One function symbol of the ELF symbol table.
struct Func<'a> {
    name: &'a str,
    addr: u64,
    size: u64,
}

/// Every named, sized STT_FUNC symbol whose name could be a kprobe target.
fn functions<'a>(elf: &object::File<'a>) -> Vec<Func<'a>> {
    elf.symbols()
        .filter_map(|s| {
            let object::SymbolFlags::Elf { st_info, .. } = s.flags() else {
                return None;
            };
            if st_info & 0xf != object::elf::STT_FUNC || s.size() == 0 {
                return None;
            }
            let name = s.name().ok()?;
            scan_points::valid_symbol(name).then_some(Func {
                name,
                addr: s.address(),
                size: s.size(),
            })
        })
        .collect()
}

/// The symbol and offset of `addr`: the function symbol whose extent holds it. The `__pfx_`
/// and `__cfi_` symbols cover the padding before a function, never its code, so any other
/// symbol is preferred; among the rest the one starting nearest wins.
fn place<'a>(funcs: &[Func<'a>], addr: u64) -> Option<(&'a str, u64)> {
    funcs
        .iter()
        .filter(|f| f.addr <= addr && addr - f.addr < f.size)
        .min_by_key(|f| {
            let padding = f.name.starts_with("__pfx_") || f.name.starts_with("__cfi_");
            (padding, addr - f.addr)
        })
        .map(|f| (f.name, addr - f.addr))
}

/// An address to turn into a point, once a symbol is found for it.
struct Candidate {
    role: ScanRole,
    function: &'static str,
    addr: u64,
    call_line: Option<u32>,
}

#[derive(Default)]
struct Found {
    candidates: Vec<Candidate>,
    notes: Vec<String>,
}

impl Found {
    fn push(&mut self, function: &'static str, addr: u64, call_line: Option<u32>) {
        if self.candidates.len() >= MAX_CANDIDATES {
            self.note(format!(
                "more than {MAX_CANDIDATES} copies of the scan functions: the rest ignored"
            ));
            return;
        }
        if let Some(role) = ScanRole::of_function(function) {
            self.candidates.push(Candidate {
                role,
                function,
                addr,
                call_line,
            });
        }
    }
}

impl Found {
    /// Adds a note once, and no more than a points file holds.
    fn note(&mut self, n: String) {
        if self.notes.len() < scan_points::MAX_NOTES && !self.notes.contains(&n) {
            self.notes.push(n);
        }
    }
}

/// The scan functions the compiler kept out of line: a symbol of their own (possibly a clone,
/// `select_idle_core.constprop.0`), probed at its first instruction.
fn out_of_line(funcs: &[Func<'_>], found: &mut Found) {
    for f in funcs {
        if let Some(function) = ScanRole::FUNCTIONS
            .into_iter()
            .find(|n| is_clone_of(f.name, n))
        {
            found.push(function, f.addr, None);
        }
    }
}

/// Whether `symbol` is `function` or a compiler clone of it: `function` followed by any number
/// of `.constprop.N`, `.isra.N`, `.part.N` or `.cold`-free suffixes (`.cold` parts are not the
/// function's entry).
fn is_clone_of(symbol: &str, function: &str) -> bool {
    let Some(mut rest) = symbol.strip_prefix(function) else {
        return false;
    };
    while !rest.is_empty() {
        let Some(r) = ["constprop", "isra", "part"]
            .iter()
            .find_map(|k| rest.strip_prefix('.')?.strip_prefix(k)?.strip_prefix('.'))
        else {
            return false;
        };
        let digits = r.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return false;
        }
        rest = &r[digits..];
    }
    true
}

/// Every inlined copy of a scan function in fair.c's unit(s): its entry address, or a note
/// saying why it has none.
fn inlined<'a>(elf: &object::File<'a>, found: &mut Found) -> Result<(), String> {
    let endian = if elf.is_little_endian() {
        RunTimeEndian::Little
    } else {
        RunTimeEndian::Big
    };
    let dwarf = gimli::Dwarf::load(|id| -> Result<R<'a>, String> {
        let Some(s) = elf.section_by_name(id.name()) else {
            return Ok(EndianSlice::new(&[], endian));
        };
        let range = s
            .compressed_file_range()
            .map_err(|e| format!("{}: {e}", id.name()))?;
        if range.format != object::CompressionFormat::None {
            return Err(format!(
                "{} is compressed; decompress the file first (objcopy --decompress-debug-sections)",
                id.name()
            ));
        }
        let data = s.data().map_err(|e| format!("{}: {e}", id.name()))?;
        Ok(EndianSlice::new(data, endian))
    })?;
    if elf
        .section_by_name(".debug_info")
        .is_none_or(|s| s.size() == 0)
    {
        return Err("it has no debug info (.debug_info): this is not a debug vmlinux".into());
    }
    let mut units = dwarf.units();
    let mut fair_units = 0;
    loop {
        let header = match units.next() {
            Ok(Some(h)) => h,
            Ok(None) => break,
            Err(e) => return Err(format!("bad compilation unit header in .debug_info: {e}")),
        };
        let at = header.offset().0;
        let unit = dwarf
            .unit(header)
            .map_err(|e| format!("bad compilation unit at .debug_info+{at:#x}: {e}"))?;
        let is_fair = unit.name.is_some_and(|n| {
            let n = n.slice();
            n == FAIR_C.as_bytes()
                || n.strip_suffix(FAIR_C.as_bytes())
                    .is_some_and(|dir| dir.ends_with(b"/"))
        });
        if !is_fair {
            continue;
        }
        fair_units += 1;
        walk(&dwarf, &unit, found)
            .map_err(|e| format!("bad DWARF in {FAIR_C} at .debug_info+{at:#x}: {e}"))?;
    }
    if fair_units == 0 {
        return Err(format!(
            "its debug info has no compilation unit for {FAIR_C}"
        ));
    }
    Ok(())
}

/// Walks one unit's DIEs for inlined scan functions.
fn walk<'a>(
    dwarf: &gimli::Dwarf<R<'a>>,
    unit: &Unit<R<'a>>,
    found: &mut Found,
) -> gimli::Result<()> {
    // Abstract origins are shared by every inlined copy: name each once.
    let mut origins: HashMap<UnitOffset, Option<&'static str>> = HashMap::new();
    let mut cursor = unit.entries();
    while let Some(die) = cursor.next_dfs()? {
        if die.tag() != constants::DW_TAG_inlined_subroutine {
            continue;
        }
        let Some(AttributeValue::UnitRef(origin)) =
            die.attr_value(constants::DW_AT_abstract_origin)
        else {
            continue;
        };
        let function = match origins.get(&origin) {
            Some(f) => *f,
            None => {
                let f = scan_function(dwarf, unit, origin)?;
                origins.insert(origin, f);
                f
            }
        };
        let Some(function) = function else {
            continue;
        };
        let call_line = die
            .attr_value(constants::DW_AT_call_line)
            .and_then(|v| v.udata_value())
            .and_then(|l| u32::try_from(l).ok());
        match entry_address(dwarf, unit, die)? {
            Some(addr) => found.push(function, addr, call_line),
            None => found.note(format!(
                "{function} ({}): no entry address in the debug info",
                call_line.map_or("fair.c".to_string(), |l| format!("fair.c:{l}"))
            )),
        }
    }
    Ok(())
}

/// The scan function an abstract origin names, following DW_AT_abstract_origin and
/// DW_AT_specification within the unit until a DW_AT_name.
fn scan_function(
    dwarf: &gimli::Dwarf<R<'_>>,
    unit: &Unit<R<'_>>,
    mut at: UnitOffset,
) -> gimli::Result<Option<&'static str>> {
    for _ in 0..MAX_ORIGIN_DEPTH {
        let die = unit.entry(at)?;
        if let Some(name) = die.attr_value(constants::DW_AT_name) {
            let name = dwarf.attr_string(unit, name)?;
            return Ok(ScanRole::FUNCTIONS
                .into_iter()
                .find(|f| name.slice() == f.as_bytes()));
        }
        let next = [
            constants::DW_AT_abstract_origin,
            constants::DW_AT_specification,
        ]
        .into_iter()
        .find_map(|a: DwAt| match die.attr_value(a) {
            Some(AttributeValue::UnitRef(o)) => Some(o),
            _ => None,
        });
        match next {
            Some(o) => at = o,
            None => return Ok(None),
        }
    }
    Ok(None)
}

/// Where an inlined copy starts: DW_AT_entry_pc (an address, an index into .debug_addr, or a
/// constant offset from the copy's base address: DW_AT_low_pc or its first range), else
/// DW_AT_low_pc. A copy with only DW_AT_ranges has no known entry: the lowest address of its
/// ranges need not be where it starts, so none is guessed.
fn entry_address<'a>(
    dwarf: &gimli::Dwarf<R<'a>>,
    unit: &Unit<R<'a>>,
    die: &DebuggingInformationEntry<R<'a>>,
) -> gimli::Result<Option<u64>> {
    let low_pc = match die.attr_value(constants::DW_AT_low_pc) {
        Some(v) => dwarf.attr_address(unit, v)?,
        None => None,
    };
    let Some(entry) = die.attr_value(constants::DW_AT_entry_pc) else {
        return Ok(low_pc);
    };
    if let Some(addr) = dwarf.attr_address(unit, entry)? {
        return Ok(Some(addr));
    }
    let Some(delta) = entry.udata_value() else {
        return Ok(low_pc);
    };
    let base = match low_pc {
        Some(b) => Some(b),
        None => dwarf.die_ranges(unit, die)?.next()?.map(|r| r.begin),
    };
    Ok(base.and_then(|b| b.checked_add(delta)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_cut_on_a_character_boundary() {
        assert_eq!(at_most("abc", 8), "abc");
        assert_eq!(at_most("abcé", 4), "abc");
        assert_eq!(at_most("abcé", 5), "abcé");
        assert_eq!(at_most("", 0), "");
    }

    #[test]
    fn clones_are_the_function_and_their_suffixes_only() {
        for (s, yes) in [
            ("select_idle_core", true),
            ("select_idle_core.constprop.0", true),
            ("select_idle_core.isra.12", true),
            ("select_idle_core.part.3", true),
            ("select_idle_core.isra.0.constprop.1", true),
            ("select_idle_core.cold", false),
            ("select_idle_core.constprop.", false),
            ("select_idle_core.constprop.x", false),
            ("select_idle_core_x", false),
            ("select_idle_cores", false),
            ("__pfx_select_idle_core", false),
        ] {
            assert_eq!(is_clone_of(s, "select_idle_core"), yes, "{s}");
        }
    }

    #[test]
    fn a_point_is_placed_in_the_real_function_not_its_padding_symbol() {
        let funcs = [
            Func {
                name: "__pfx_f",
                addr: 0x100,
                size: 0x40,
            },
            Func {
                name: "f",
                addr: 0x110,
                size: 0x30,
            },
            Func {
                name: "g",
                addr: 0x140,
                size: 0x10,
            },
        ];
        assert_eq!(place(&funcs, 0x110), Some(("f", 0)));
        assert_eq!(place(&funcs, 0x13f), Some(("f", 0x2f)));
        assert_eq!(place(&funcs, 0x108), Some(("__pfx_f", 8)));
        assert_eq!(place(&funcs, 0x14f), Some(("g", 0xf)));
        assert_eq!(place(&funcs, 0x150), None);
        assert_eq!(place(&funcs, 0xff), None);
    }

    #[test]
    fn a_file_that_is_not_a_vmlinux_is_one_line_of_error() {
        let dir = tempfile::tempdir().unwrap();
        for (name, bytes) in [
            ("empty", &b""[..]),
            ("text", b"not an elf file at all"),
            (
                "elf-header-only",
                b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x02\0",
            ),
        ] {
            let p = dir.path().join(name);
            std::fs::write(&p, bytes).unwrap();
            let e = find(&p).unwrap_err().to_string();
            assert!(e.contains(name) && !e.contains('\n'), "{e}");
        }
        let e = find(dir.path()).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let e = find(&dir.path().join("missing")).unwrap_err().to_string();
        assert!(e.contains("cannot open"), "{e}");
    }
}
