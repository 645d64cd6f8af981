//! `wakeviz experiment`: a workload run under several scheduler-feature settings, in
//! alternation (A B A B ..., so a drift of the machine over time falls on every setting alike),
//! each run recorded by a child `wakeviz --record`, then compared as `wakeviz diff` compares
//! groups of runs. A child per run keeps each run exactly what a user would
//! record by hand, and its features' guard restores them before the next run starts.
use std::{
    os::{fd::AsFd as _, unix::process::ExitStatusExt as _},
    path::{Path, PathBuf},
    process::{Command, ExitCode, ExitStatus, Stdio},
    time::Duration,
};

use anyhow::{Context as _, bail};
use serde::Serialize;
use wakeviz_core::compare::{self, DiffReport, Group};

use crate::{
    cli::{ExperimentArgs, ReportFormat},
    command, diff, features, signals,
    sinks::record,
};

const EXIT_USAGE: u8 = 2;
/// Name of the setting that sets nothing.
const DEFAULT: &str = "default";

/// One setting: its name in file names, labels and the report, and the features it sets.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Setting {
    pub name: String,
    pub features: Vec<String>,
}

fn parse_setting(s: &str) -> Result<Setting, String> {
    let s = s.trim();
    if s == DEFAULT {
        return Ok(Setting {
            name: DEFAULT.into(),
            features: Vec::new(),
        });
    }
    let features: Vec<String> = s.split(',').map(|f| f.trim().to_string()).collect();
    if features
        .iter()
        .any(|f| f.is_empty() || !f.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
    {
        return Err(format!(
            "--setting {s:?}: expected `default` or feature names separated by commas (NO_SIS_UTIL,NO_WA_BIAS)"
        ));
    }
    // `+`, not `,`: `wakeviz diff --group NAME=F,F` splits file lists on commas.
    Ok(Setting {
        name: features.join("+"),
        features,
    })
}

/// One run, in execution order.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    /// 1-based position in the execution order.
    pub seq: usize,
    pub setting: String,
    /// 1-based repetition of its setting.
    pub run: u32,
    pub file: PathBuf,
    /// The child's exit status (the workload's, unless wakeviz itself failed).
    pub exit_code: Option<i32>,
}

/// What `--report json` prints and DIR/experiment.json holds.
#[derive(Debug, Serialize)]
pub struct ExperimentReport {
    pub schema_version: u32,
    pub command: Vec<String>,
    pub settings: Vec<Setting>,
    pub runs_per_setting: u32,
    pub order: Vec<Run>,
    pub diff: DiffReport,
}

/// A settings x runs plan, alternated: round 1 of every setting, then round 2, ...
fn plan(settings: &[Setting], runs: u32, dir: &Path) -> Vec<Run> {
    (1..=runs)
        .flat_map(|r| settings.iter().map(move |s| (r, s)))
        .enumerate()
        .map(|(i, (r, s))| Run {
            seq: i + 1,
            setting: s.name.clone(),
            run: r,
            file: dir.join(format!("{}-{r}.wvz", s.name)),
            exit_code: None,
        })
        .collect()
}

fn usage(msg: impl std::fmt::Display) -> ExitCode {
    say!("wakeviz: {msg}");
    ExitCode::from(EXIT_USAGE)
}

pub fn run(a: &ExperimentArgs) -> anyhow::Result<ExitCode> {
    let mut settings: Vec<Setting> = Vec::new();
    for s in &a.settings {
        match parse_setting(s) {
            Ok(s) if settings.iter().any(|x| x.name == s.name) => {
                return Ok(usage(format!("--setting {} is given twice", s.name)));
            }
            Ok(s) => settings.push(s),
            Err(e) => return Ok(usage(e)),
        }
    }
    if settings.len() < 2 {
        return Ok(usage(
            "an experiment compares settings: give at least two (--setting default --setting NO_SIS_UTIL)",
        ));
    }
    // Everything that can be refused is refused before the first run.
    command::check(&a.command)?;
    let store = features::Store::new(a.sched_features_file.as_deref());
    let wants_features = settings.iter().any(|s| !s.features.is_empty());
    let before = if wants_features {
        for s in settings.iter().filter(|s| !s.features.is_empty()) {
            features::check(&store, &s.features)?;
        }
        Some(features::parse(&features::state(&store)?.join(" ")))
    } else {
        None
    };
    check_out_dir(&a.out)?;
    std::fs::create_dir_all(&a.out)
        .with_context(|| format!("cannot create the directory {}", a.out.display()))?;
    let mut order = plan(&settings, a.runs, &a.out);
    let (json_path, txt_path) = (a.out.join("experiment.json"), a.out.join("experiment.txt"));
    for p in order.iter().map(|r| &r.file).chain([&json_path, &txt_path]) {
        record::check_target(p, a.force)?;
    }
    // The child handles the stop signal itself (a terminal's Ctrl-C reaches both); this
    // process waits for it to restore and finalise, then starts no further run.
    signals::install_flags();
    let exe = std::env::current_exe().context("cannot find wakeviz's own executable")?;
    let total = order.len();
    for i in 0..total {
        let r = &order[i];
        let s = settings
            .iter()
            .find(|s| s.name == r.setting)
            .context("a run without its setting")?;
        say!(
            "wakeviz: experiment run {}/{total}: {} (run {} of {}) -> {}",
            r.seq,
            s.name,
            r.run,
            a.runs,
            r.file.display()
        );
        let status = run_child(&exe, a, s, r)?;
        order[i].exit_code = status.code();
        let r = &order[i];
        let kept = kept(&order[..=i]);
        if let Some(b) = &before {
            let now = features::state(&store)
                .map(|v| features::parse(&v.join(" ")))
                .with_context(|| format!("after run {}/{total} ({})", r.seq, r.file.display()))?;
            if &now != b {
                let drift = features::state(&store).unwrap_or_default().join(" ");
                // Put back before stopping: a setting left changed would outlive the experiment.
                let restored = features::put_back(&store, b).with_context(|| {
                    format!(
                        "after run {}/{total} ({}) the scheduler features are not as before the experiment (now {drift}); not restored; {kept}",
                        r.seq,
                        r.file.display()
                    )
                })?;
                bail!(
                    "after run {}/{total} ({}) the scheduler features were not as before the experiment (they read {drift}){}; stopped; {kept}",
                    r.seq,
                    r.file.display(),
                    if restored {
                        "; restored"
                    } else {
                        "; not all could be restored (see above for the command)"
                    }
                );
            }
        }
        if signals::stop_requested() {
            bail!(
                "stopped by a signal during run {}/{total} ({}); {kept}",
                r.seq,
                r.file.display()
            );
        }
        if !status.success() {
            bail!(
                "run {}/{total} ({} run {}) failed: {}; stopped; {kept}",
                r.seq,
                r.setting,
                r.run,
                describe(status)
            );
        }
    }
    let mut groups = Vec::new();
    let mut warnings = Vec::new();
    let mut llcs = diff::Llcs::default();
    for s in &settings {
        let files: Vec<&Run> = order.iter().filter(|r| r.setting == s.name).collect();
        let mut runs = Vec::new();
        for r in &files {
            let (mut snap, w) = diff::fold(&r.file, !a.no_shadow, a.scope.as_ref())?;
            llcs.share(&mut snap);
            runs.push(snap);
            warnings.extend(w);
        }
        groups.push(Group {
            name: s.name.clone(),
            files: files.iter().map(|r| r.file.display().to_string()).collect(),
            runs,
        });
    }
    let rep = ExperimentReport {
        schema_version: 1,
        command: a
            .command
            .iter()
            .map(|c| c.to_string_lossy().into_owned())
            .collect(),
        settings,
        runs_per_setting: a.runs,
        order,
        diff: compare::diff_with(&groups, &[], &|g: &Group, policy: &str| {
            super::simulate::group_runs(g, policy, a.scope.as_ref())
        }),
    };
    let json = serde_json::to_string_pretty(&rep).context("serialising the experiment")?;
    let text = render(&rep);
    write_new(&json_path, &json, a.force)?;
    write_new(&txt_path, &text, a.force)?;
    crate::print_stdout(match a.report.unwrap_or(ReportFormat::Text) {
        ReportFormat::Text => text.trim_end(),
        ReportFormat::Json => &json,
    })?;
    Ok(crate::driver::warned_exit(&warnings))
}

fn kept(done: &[Run]) -> String {
    let files: Vec<String> = done.iter().map(|r| r.file.display().to_string()).collect();
    format!("recorded so far: {}", files.join(" "))
}

fn describe(s: ExitStatus) -> String {
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exited {c} (the workload's status, or 1 if wakeviz failed)"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => "ended without a status".into(),
    }
}

/// `wakeviz --record FILE --headless --label L [--force] [--sched-feature F]... -- CMD`, its
/// stdout sent to our stderr, so that our stdout holds only the report.
fn run_child(exe: &Path, a: &ExperimentArgs, s: &Setting, r: &Run) -> anyhow::Result<ExitStatus> {
    let mut c = Command::new(exe);
    c.arg("--record")
        .arg(&r.file)
        .arg("--headless")
        .arg("--label")
        .arg(format!("{}-{}", s.name, r.run));
    if a.force {
        c.arg("--force");
    }
    for f in &s.features {
        c.arg("--sched-feature").arg(f);
    }
    if let Some(p) = &a.sched_features_file {
        c.arg("--sched-features-file").arg(p);
    }
    for m in &a.metrics {
        c.arg("--metric").arg(m);
    }
    if let Some(s) = &a.scope {
        c.arg("--scope").arg(s.to_string());
    }
    if let Some(p) = &a.scan_points {
        c.arg("--scan-points").arg(p);
    }
    c.arg("--").args(&a.command);
    // A killed experiment stops its current run in order (the child restores and finalises).
    command::die_with_parent(&mut c, libc::SIGTERM);
    let out = std::io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .context("duplicating stderr for the run's output")?;
    c.stdout(Stdio::from(out));
    let mut child = c
        .spawn()
        .with_context(|| format!("cannot start {}", exe.display()))?;
    let mut forwarded = false;
    loop {
        if let Some(st) = child.try_wait().context("waiting for the run")? {
            return Ok(st);
        }
        // A SIGTERM to this process alone (not the terminal's group) is passed on once.
        if signals::stop_requested() && !forwarded {
            forwarded = true;
            if let Ok(pid) = libc::pid_t::try_from(child.id()) {
                let sig = signals::for_child();
                // SAFETY: kill has no memory preconditions; pid is our own unreaped child.
                unsafe { libc::kill(pid, sig) };
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `--out DIR`: missing or a real directory, never a symbolic link (as `export` refuses one: a
/// root run must not be steered elsewhere by a link someone else planted), `--force` or not.
fn check_out_dir(dir: &Path) -> anyhow::Result<()> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_symlink() => anyhow::bail!(
            "{} is a symbolic link: refusing to write through it (remove it or pick another directory)",
            dir.display()
        ),
        Ok(m) if !m.is_dir() => anyhow::bail!("{} exists and is not a directory", dir.display()),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot check {}", dir.display())),
    }
}

/// Writes a report file as a recording is created (refused if it exists unless `force`, which
/// keeps the old one as FILE.old), made terminal-safe: it quotes the recordings' metadata.
fn write_new(path: &Path, text: &str, force: bool) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut f = record::create_file(path, force)?;
    f.write_all(wakeviz_core::safe_text::escape(text).as_bytes())
        .and_then(|()| f.write_all(b"\n"))
        .with_context(|| format!("writing {}", path.display()))
}

/// The runs in execution order, then the diff of the settings.
pub fn render(rep: &ExperimentReport) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let names: Vec<&str> = rep.settings.iter().map(|s| s.name.as_str()).collect();
    let _ = writeln!(
        o,
        "Experiment: `{}`, settings {} ({} runs each, alternated; base {})",
        rep.command.join(" "),
        names.join(", "),
        rep.runs_per_setting,
        names.first().copied().unwrap_or("-")
    );
    let _ = writeln!(o, "Runs in execution order");
    let w = names.iter().map(|n| n.len()).max().unwrap_or(0);
    for r in &rep.order {
        let _ = writeln!(
            o,
            "  {:>3}  {:<w$}  run {:<3} exit {:<4} {}",
            r.seq,
            r.setting,
            r.run,
            r.exit_code.map_or_else(|| "-".into(), |c| c.to_string()),
            r.file.display()
        );
    }
    let _ = writeln!(o);
    o.push_str(&compare::text::render(&rep.diff));
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse() {
        assert_eq!(
            parse_setting("default").unwrap().features,
            Vec::<String>::new()
        );
        let s = parse_setting("NO_SIS_UTIL, NO_WA_BIAS").unwrap();
        assert_eq!(s.name, "NO_SIS_UTIL+NO_WA_BIAS");
        assert_eq!(s.features, ["NO_SIS_UTIL", "NO_WA_BIAS"]);
        for bad in ["", "NO_SIS_UTIL,", "a/b", "../x", "X Y"] {
            assert!(parse_setting(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn runs_alternate() {
        let s: Vec<Setting> = ["default", "NO_SIS_UTIL", "NO_WA_BIAS"]
            .iter()
            .map(|x| parse_setting(x).unwrap())
            .collect();
        let p = plan(&s, 2, Path::new("d"));
        let got: Vec<(usize, &str, u32, String)> = p
            .iter()
            .map(|r| {
                (
                    r.seq,
                    r.setting.as_str(),
                    r.run,
                    r.file.display().to_string(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (1, "default", 1, "d/default-1.wvz".into()),
                (2, "NO_SIS_UTIL", 1, "d/NO_SIS_UTIL-1.wvz".into()),
                (3, "NO_WA_BIAS", 1, "d/NO_WA_BIAS-1.wvz".into()),
                (4, "default", 2, "d/default-2.wvz".into()),
                (5, "NO_SIS_UTIL", 2, "d/NO_SIS_UTIL-2.wvz".into()),
                (6, "NO_WA_BIAS", 2, "d/NO_WA_BIAS-2.wvz".into()),
            ]
        );
    }
}
