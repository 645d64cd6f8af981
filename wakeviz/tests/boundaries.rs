//! The dashboard reads the analyses' snapshot and nothing else of them: its modules (the views
//! in `src/dashboard/ui`, the model in `src/dashboard/app`) may name snapshot value types, but
//! not the folds, the shadow evaluator, the join or the level rule, so no view can recompute a
//! figure an analysis already knows. `src/dashboard/app/data.rs` is the one module that owns
//! the `Analysis` fold.
use std::path::{Path, PathBuf};

/// Names that would let a dashboard module compute figures itself.
const FORBIDDEN: &[&str] = &[
    "ShadowEval",
    "Tally",
    "Scored",
    "PolicyMetrics",
    "Joiner",
    "join::",
    "classify",
    "LevelMap",
    "shadow::metrics",
    "shadow::state",
    "shadow::policy",
    "shadow::eval",
    "Analysis",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("source dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn dashboard_modules_use_only_snapshot_types() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src.join("dashboard"), &mut files);
    assert!(files.len() > 10, "found the dashboard's modules: {files:?}");
    let mut bad = Vec::new();
    for f in &files {
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
        // The fold's owner, and the tests (which compare the dashboard with a headless fold).
        if name == "data.rs" || name == "tests.rs" {
            continue;
        }
        let text = std::fs::read_to_string(f).expect("read source");
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for w in FORBIDDEN {
                if code.contains(w) {
                    bad.push(format!("{}:{}: {w}: {}", f.display(), i + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "dashboard modules reaching past the snapshot:\n{}",
        bad.join("\n")
    );
}

/// The parts of the binary crate a source text names (`crate::x`, and the first names of a
/// `use crate::{...}` group), comments and test code left out. A part is a top-level module,
/// or one of the modules of a folder listed in [`FOLDERS`] (`dashboard::app`).
fn crate_refs(text: &str) -> std::collections::BTreeSet<String> {
    let mut code = String::new();
    for line in text.lines() {
        // Test code may reach anywhere: it ends the module's own code.
        if line.starts_with("#[cfg(test)]") {
            break;
        }
        code.push_str(line.split("//").next().unwrap_or(""));
        code.push('\n');
    }
    let mut refs = std::collections::BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        paths(rest, "", &mut refs);
    }
    refs.retain(|r| !r.is_empty() && !r.ends_with("::"));
    refs
}

/// Folders whose modules are parts of their own, with the direction between them checked too.
const FOLDERS: &[&str] = &["dashboard"];

fn ident(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// The parts named by the path (or `{...}` group of paths) at the start of `rest`, under
/// `prefix` (`""` at the crate's root, `"dashboard::"` inside a folder).
fn paths(rest: &str, prefix: &str, refs: &mut std::collections::BTreeSet<String>) {
    let one = |item: &str, refs: &mut std::collections::BTreeSet<String>| {
        let item = item.trim();
        let name = ident(item);
        if prefix.is_empty() && FOLDERS.contains(&name.as_str()) {
            let after = item[name.len()..].trim_start();
            if let Some(inner) = after.strip_prefix("::") {
                return paths(inner, "dashboard::", refs);
            }
        }
        refs.insert(format!("{prefix}{name}"));
    };
    let Some(group) = rest.strip_prefix('{') else {
        one(rest, refs);
        return;
    };
    // The items at the group's top level.
    let (mut depth, mut start) = (0, 0);
    for (j, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                one(&group[start..j], refs);
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                one(&group[start..j], refs);
                start = j + 1;
            }
            _ => {}
        }
    }
}

/// Imports between the binary crate's top-level modules go one way: the entry point, the
/// commands (`commands/`, which nothing else imports), the command line, the capture, the
/// sinks (`sinks/`) and the dashboard (its views `dashboard::ui` above its model `dashboard::app`), down to the
/// driver and the signals; no module reaches back up a chain that leads to it. A cycle is
/// printed with the files that close it.
#[test]
fn the_binary_crates_modules_import_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut graph: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
        std::collections::BTreeMap::new();
    for f in &files {
        let rel = f.strip_prefix(&src).expect("under src");
        let name = rel.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with("tests") {
            continue;
        }
        let mut parts = rel
            .components()
            .filter_map(|c| c.as_os_str().to_str())
            .map(|c| c.trim_end_matches(".rs"));
        let first = parts.next().unwrap_or("").to_string();
        let top = match parts.next() {
            Some(m) if FOLDERS.contains(&first.as_str()) && m != "mod" => format!("{first}::{m}"),
            _ => first,
        };
        let text = std::fs::read_to_string(f).expect("read source");
        let refs = crate_refs(&text);
        graph
            .entry(top.clone())
            .or_default()
            .extend(refs.into_iter().filter(|r| *r != top));
    }
    assert!(graph.len() > 10, "found the modules: {graph:?}");
    let modules: Vec<String> = graph.keys().cloned().collect();
    for m in &modules {
        graph
            .get_mut(m)
            .expect("listed")
            .retain(|r| modules.contains(r));
    }
    // Depth-first from every module: a path back to a module on the stack is a cycle.
    fn visit(
        g: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
        m: &str,
        stack: &mut Vec<String>,
        done: &mut std::collections::BTreeSet<String>,
        cycles: &mut Vec<String>,
    ) {
        if let Some(i) = stack.iter().position(|s| s == m) {
            cycles.push(format!("{} -> {m}", stack[i..].join(" -> ")));
            return;
        }
        if !done.insert(m.to_string()) {
            return;
        }
        stack.push(m.to_string());
        for n in g.get(m).into_iter().flatten() {
            visit(g, n, stack, done, cycles);
        }
        stack.pop();
    }
    // The commands are the top: only the entry point (`lib.rs`) runs them.
    let up: Vec<&String> = graph
        .iter()
        .filter(|(m, refs)| *m != "lib" && *m != "commands" && refs.contains("commands"))
        .map(|(m, _)| m)
        .collect();
    assert!(up.is_empty(), "modules importing the commands: {up:?}");
    let (mut done, mut cycles) = (std::collections::BTreeSet::new(), Vec::new());
    for m in &modules {
        visit(&graph, m, &mut Vec::new(), &mut done, &mut cycles);
    }
    assert!(
        cycles.is_empty(),
        "import cycles between the binary crate's modules:\n{}",
        cycles.join("\n")
    );
}
