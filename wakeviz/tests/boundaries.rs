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
