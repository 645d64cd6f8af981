//! `wakeviz diff`: folds each recording with the same [`Analysis`] as `--replay --report`, and
//! hands the snapshots, grouped, to `wakeviz_core::compare` (the statistics, the text, the
//! JSON and the `--fail-if` gate live there). See docs/user/comparing.md.
use std::{
    path::{Path, PathBuf},
    process::ExitCode,
};

use anyhow::Context as _;
use wakeviz_core::{
    analysis::{Analysis, Snapshot},
    compare::{self, Group, Section, gate},
    source::{EventSource as _, ReplaySource},
};

use crate::{
    cli::{DiffArgs, ReportFormat},
    driver,
};

/// Exit status when a `--fail-if` condition holds.
const EXIT_GATE: u8 = 1;
/// Exit status of a bad `--fail-if` expression, an unknown figure name or a bad `--only`.
const EXIT_USAGE: u8 = 2;

struct Planned {
    name: Option<String>,
    fallback: String,
    files: Vec<PathBuf>,
}

fn plan(a: &DiffArgs) -> anyhow::Result<Vec<Planned>> {
    let mut g = Vec::new();
    if !a.files.is_empty() {
        for f in &a.files {
            let stem = f.file_stem().map_or_else(
                || f.display().to_string(),
                |s| s.to_string_lossy().into_owned(),
            );
            g.push(Planned {
                name: None,
                fallback: stem,
                files: vec![f.clone()],
            });
        }
    } else {
        if a.base.is_empty() {
            anyhow::bail!("--new and --group need --base (the group the others are compared with)");
        }
        g.push(Planned {
            name: None,
            fallback: "base".into(),
            files: a.base.clone(),
        });
        for v in &a.group {
            g.push(Planned {
                name: Some(v.name.clone()),
                fallback: v.name.clone(),
                files: v.files.clone(),
            });
        }
        if !a.new.is_empty() {
            g.push(Planned {
                name: None,
                fallback: "new".into(),
                files: a.new.clone(),
            });
        }
    }
    if g.len() < 2 {
        anyhow::bail!(
            "nothing to compare: give two recordings (BASE NEW) or --base F... --new F..."
        );
    }
    Ok(g)
}

/// One recording through the replay report's fold (also `wakeviz experiment`'s), kept as
/// much of its snapshot as a comparison reads.
pub(crate) fn fold(
    path: &Path,
    shadow: bool,
    scope: Option<&crate::cli::Scope>,
) -> anyhow::Result<(Snapshot, Vec<String>)> {
    // The reader's error names the file already.
    let mut src = ReplaySource::open(path)?;
    let mut h = src.header().clone();
    crate::cli::Scope::apply(scope, &mut h.run);
    let mut a = Analysis::new(&h);
    if !shadow {
        a.set_shadow(None);
    }
    let out = driver::run(&mut src, &mut [&mut a], &driver::Options::default(), None);
    if let Some(e) = out.error {
        return Err(e.context(format!("reading {}", path.display())));
    }
    let warnings = src
        .warnings()
        .iter()
        .map(|w| format!("{}: {w}", path.display()))
        .collect();
    Ok((a.snapshot().for_comparison(), warnings))
}

/// The LLC tables of the runs folded so far, each kept once: runs of one machine share it, so
/// an extra run costs its figures, not another copy of an 8192-LLC table.
#[derive(Default)]
pub(crate) struct Llcs(Vec<std::sync::Arc<[wakeviz_core::topology::Group]>>);

impl Llcs {
    pub(crate) fn share(&mut self, s: &mut Snapshot) {
        match self.0.iter().find(|x| x[..] == s.topology.llcs[..]) {
            Some(x) => s.topology.llcs = x.clone(),
            None => self.0.push(s.topology.llcs.clone()),
        }
    }
}

/// The groups' name: the `--group` name, else the label all its runs share, else the default.
fn name_of(p: &Planned, runs: &[Snapshot]) -> String {
    if let Some(n) = &p.name {
        return n.clone();
    }
    let labels: Vec<Option<&String>> = runs
        .iter()
        .map(|s| s.recording.run.label.as_ref())
        .collect();
    match labels.first() {
        Some(Some(l)) if labels.iter().all(|x| *x == Some(*l)) && !l.is_empty() => (*l).clone(),
        _ => p.fallback.clone(),
    }
}

fn usage(msg: impl std::fmt::Display) -> ExitCode {
    crate::say(format_args!("{msg}"));
    ExitCode::from(EXIT_USAGE)
}

pub fn run(a: &DiffArgs) -> anyhow::Result<ExitCode> {
    // Everything that can be refused without reading a recording is refused first.
    let mut only = Vec::new();
    for s in &a.only {
        match Section::parse(s.trim()) {
            Some(x) => only.push(x),
            None => {
                let names: Vec<&str> = Section::ALL.iter().map(|s| s.name()).collect();
                return Ok(usage(format!(
                    "--only: unknown section {s:?} (sections: {})",
                    names.join(", ")
                )));
            }
        }
    }
    let mut conds = Vec::new();
    for c in &a.fail_if {
        match gate::parse(c).and_then(|c| gate::check_name(&c).map(|_| c)) {
            Ok(c) => conds.push(c),
            Err(e) => return Ok(usage(e)),
        }
    }
    let planned = match plan(a) {
        Ok(p) => p,
        Err(e) => return Ok(usage(e)),
    };
    let mut groups: Vec<Group> = Vec::new();
    let mut warnings = Vec::new();
    let mut llcs = Llcs::default();
    for p in &planned {
        let mut runs = Vec::new();
        for f in &p.files {
            let (mut s, w) = fold(f, !a.no_shadow, a.scope.as_ref())?;
            llcs.share(&mut s);
            runs.push(s);
            warnings.extend(w);
        }
        let mut name = name_of(p, &runs);
        if groups.iter().any(|g| g.name == name) {
            name = format!("{name}#{}", groups.len() + 1);
        }
        groups.push(Group {
            name,
            files: p.files.iter().map(|f| f.display().to_string()).collect(),
            runs,
        });
    }
    let scope = a.scope.as_ref();
    let closed = |g: &Group, policy: &str| super::simulate::group_runs(g, policy, scope);
    let rep = compare::diff_with(&groups, &only, &closed);
    // The gate sees every figure, whatever `--only` shows; a figure on show is judged on the
    // report shown, so its verdict's `significant` is its `*` there (the correction is over
    // the comparisons of the report).
    let full = if only.is_empty() || conds.is_empty() {
        None
    } else {
        Some(compare::diff_with(&groups, &[], &closed))
    };
    let mut verdicts = Vec::new();
    for c in &conds {
        let judged = match &full {
            Some(f) if rep.row(&c.name).is_none() => f,
            _ => &rep,
        };
        match gate::evaluate(judged, c) {
            Ok(v) => verdicts.push(v),
            Err(e) => return Ok(usage(e)),
        }
    }
    let text = match a.report.unwrap_or(ReportFormat::Text) {
        ReportFormat::Text => compare::text::render(&rep),
        ReportFormat::Json => {
            let mut j = serde_json::to_value(&rep).context("serialising the diff")?;
            if let Some(o) = j.as_object_mut() {
                o.insert(
                    "gates".into(),
                    serde_json::to_value(&verdicts).context("serialising the verdicts")?,
                );
            }
            serde_json::to_string_pretty(&j).context("serialising the diff")?
        }
    };
    crate::print_stdout(text.trim_end())?;
    for w in &warnings {
        crate::say(format_args!("warning: {w}"));
    }
    // Every condition's verdict, whatever it is: a gate never passes without a word.
    let mut failed = false;
    for v in &verdicts {
        failed |= v.fails(a.skip_unevaluable);
        let skipped = if a.skip_unevaluable && !v.holds() && v.fails(false) {
            " [skipped: --skip-unevaluable]"
        } else {
            ""
        };
        crate::say(format_args!("fail-if {v}{skipped}"));
    }
    Ok(if failed {
        ExitCode::from(EXIT_GATE)
    } else if !warnings.is_empty() {
        ExitCode::from(driver::EXIT_DAMAGED)
    } else {
        ExitCode::SUCCESS
    })
}
