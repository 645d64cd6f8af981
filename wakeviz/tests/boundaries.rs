//! The dashboard reads the analyses' snapshot and nothing else of them: its modules (the views
//! in `src/ui`, the model in `src/app`) may name snapshot value types, but not the folds, the
//! shadow evaluator, the join or the level rule, so no view can recompute a figure an analysis
//! already knows. `src/app/data.rs` is the one module that owns the `Analysis` fold.
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
    rust_files(&src.join("ui"), &mut files);
    rust_files(&src.join("app"), &mut files);
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

/// The top-level modules of the binary crate a source text names (`crate::x`, and the first
/// names of a `use crate::{...}` group), comments and test code left out.
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
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut rest = code.as_str();
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // The names at the group's top level.
            let (mut depth, mut start) = (0, 0);
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        refs.insert(ident(group[start..j].trim()));
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        refs.insert(ident(group[start..j].trim()));
                        start = j + 1;
                    }
                    _ => {}
                }
            }
        } else {
            refs.insert(ident(rest));
        }
    }
    refs.retain(|r| !r.is_empty());
    refs
}

/// Imports between the binary crate's top-level modules go one way: the entry point, the
/// commands (`commands/`, which nothing else imports), the command line, the capture, the
/// sinks (`sinks/`) and the dashboard (its model `app` before its views `ui`), down to the
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
        let top = rel
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .unwrap_or("")
            .trim_end_matches(".rs")
            .to_string();
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
