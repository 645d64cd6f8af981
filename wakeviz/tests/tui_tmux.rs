//! End to end: `wakeviz --replay FIXTURE` in a real terminal (a private tmux server), driven by
//! keys, read back with `capture-pane`, and checked for what a person would see: views switch,
//! the filter applies, help opens, a small terminal gets a message, and `q` gives the shell
//! back with the alternate screen left.
use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
    time::{Duration, Instant},
};

use wakeviz_core::{
    synth::{self, SynthConfig},
    topology::{
        fixture::{Symmetric, SysfsSpec},
        from_sysfs,
    },
};

struct Tmux {
    sock: PathBuf,
}

impl Tmux {
    fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-S")
            .arg(&self.sock)
            .args(["-f", "/dev/null"])
            .args(args)
            .output()
            .expect("running tmux")
    }

    fn pane(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-t", "wv"]).stdout).into_owned()
    }

    fn alternate_on(&self) -> bool {
        String::from_utf8_lossy(
            &self
                .run(&["display-message", "-p", "-t", "wv", "#{alternate_on}"])
                .stdout,
        )
        .trim()
            == "1"
    }

    fn keys(&self, keys: &[&str]) {
        let mut a = vec!["send-keys", "-t", "wv"];
        a.extend_from_slice(keys);
        assert!(self.run(&a).status.success(), "send-keys {keys:?}");
    }

    /// Waits until the pane shows every one of `want`; prints and returns it.
    fn expect(&self, step: &str, want: &[&str]) -> String {
        let start = Instant::now();
        loop {
            let p = self.pane();
            if want.iter().all(|w| p.contains(w)) {
                eprintln!("----- {step} -----\n{p}");
                return p;
            }
            assert!(
                start.elapsed() < Duration::from_secs(15),
                "{step}: pane never showed {want:?}; it shows:\n{p}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until the pane no longer shows `gone`. A key sent right after `Escape` can
    /// reach the dashboard in the same read and be taken as Alt+key, so a test waits for
    /// the Escape's effect before it sends the next key.
    fn expect_gone(&self, step: &str, gone: &str) {
        let start = Instant::now();
        loop {
            let p = self.pane();
            if !p.contains(gone) {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(15),
                "{step}: pane still shows {gone:?}:\n{p}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

fn have_tmux() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A 32-CPU NPS2 machine and 30 000 synthetic events on it.
fn fixture(dir: &Path) -> PathBuf {
    recording(dir, "fixture.wvz", 30_000, 7)
}

/// `events` synthetic events from `seed` on the 32-CPU NPS2 machine, as `dir/name`.
fn recording(dir: &Path, name: &str, events: u64, seed: u64) -> PathBuf {
    let spec = SysfsSpec::symmetric(Symmetric {
        packages: 2,
        cores_per_package: 8,
        threads_per_core: 2,
        cores_per_llc: 2,
        nodes_per_package: 2,
        local: 10,
        same_package: 12,
        remote: 32,
    });
    let sys = dir.join("sys");
    if !sys.exists() {
        spec.write(&sys).expect("sysfs tree");
    }
    let t = from_sysfs(&sys).expect("topology");
    let path = dir.join(name);
    let f = std::fs::File::create(&path).expect("recording");
    synth::generate(
        &t,
        &SynthConfig::new(events, seed),
        std::io::BufWriter::new(f),
    )
    .expect("generate");
    path
}

#[test]
fn dashboard_in_tmux() {
    if !have_tmux() {
        eprintln!("SKIPPED dashboard_in_tmux: tmux is not installed");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let rec = fixture(dir.path());
    let t = Tmux {
        sock: dir.path().join("tmux.sock"),
    };
    let shell = "env -i PATH=/usr/bin:/bin HOME=/tmp TERM=xterm-256color PS1='$ ' sh";
    assert!(
        t.run(&[
            "new-session",
            "-d",
            "-x",
            "120",
            "-y",
            "40",
            "-s",
            "wv",
            shell
        ])
        .status
        .success(),
        "tmux new-session"
    );
    t.expect("shell", &["$"]);
    let cmd = format!(
        "{} --replay {}; echo EXITED=$?",
        env!("CARGO_BIN_EXE_wakeviz"),
        rec.display()
    );
    t.keys(&["-l", &cmd]);
    t.keys(&["Enter"]);
    let p = t.expect(
        "overview",
        &[
            "1 Overview",
            "REPLAY fixture.wvz",
            "Topology",
            "NPS2",
            "drops 0",
            "sched_waking",
        ],
    );
    assert!(
        t.alternate_on(),
        "the dashboard runs on the alternate screen:\n{p}"
    );
    t.expect("replay reached the end", &["end │"]);
    t.keys(&["2"]);
    t.expect(
        "scan view",
        &[
            "Scan latency [cumulative]",
            "source select_task_rq_fair duration",
            "log2 buckets",
            "per LLC",
        ],
    );
    t.keys(&["Tab"]);
    t.expect(
        "placement view",
        &[
            "Placement of wakeups",
            "same_llc",
            "wakeups landed",
            "node3",
        ],
    );
    t.keys(&["/"]);
    t.expect("filter prompt", &["filter (comm substring or pid)>"]);
    t.keys(&["-l", "pipe"]);
    t.expect("filter typed", &["> pipe█"]);
    t.keys(&["Enter"]);
    t.expect(
        "filter applied",
        &["filter: comm:pipe", "Placement of wakeups"],
    );
    t.keys(&["4"]);
    t.expect(
        "shadow view",
        &[
            "Shadow policies (open loop)",
            "Fidelity",
            "observed",
            "filter: comm:pipe",
            "rows: comm:pipe wakees only",
        ],
    );
    t.keys(&["5"]);
    t.expect(
        "latency view",
        &["Wakeup latency", "same_cpu", "new tasks (fork)"],
    );
    t.keys(&["?"]);
    t.expect(
        "help",
        &["Help: keys", "quit", "filter by comm substring or pid"],
    );
    t.keys(&["Escape"]);
    t.expect_gone("help closed", "Help: keys");
    // Every size from 60x15 up draws the view (no "too small"), keys and status included.
    for (w, h) in [(60, 15), (80, 24), (200, 60), (70, 20)] {
        assert!(
            t.run(&[
                "resize-window",
                "-t",
                "wv",
                "-x",
                &w.to_string(),
                "-y",
                &h.to_string()
            ])
            .status
            .success()
        );
        let p = t.expect(
            &format!("at {w}x{h}"),
            &["5 Latency", "q quit", "? help", "events"],
        );
        assert!(!p.contains("too small"), "{w}x{h}:\n{p}");
        assert!(
            p.lines().all(|l| l.chars().count() <= w),
            "a line wider than the pane at {w}x{h}:\n{p}"
        );
    }
    assert!(
        t.run(&["resize-window", "-t", "wv", "-x", "30", "-y", "6"])
            .status
            .success()
    );
    t.expect("tiny", &["too small (30x6; need 40x8)"]);
    assert!(
        t.run(&["resize-window", "-t", "wv", "-x", "120", "-y", "40"])
            .status
            .success()
    );
    t.expect("resized back", &["Wakeup latency"]);
    t.keys(&["?"]);
    t.expect("help again", &["Help: keys"]);
    t.keys(&["Escape"]);
    t.expect_gone("help closed again", "Help: keys");
    t.keys(&["q"]);
    let p = t.expect("after q", &["EXITED=0"]);
    assert!(
        !t.alternate_on(),
        "alternate screen left on after quit:\n{p}"
    );
    assert!(
        !p.contains("1 Overview") && !p.contains("Help: keys"),
        "dashboard still on screen after quit:\n{p}"
    );
    // The terminal is usable: the shell echoes a command.
    t.keys(&["-l", "clear; echo still-$((1+1))-alive"]);
    t.keys(&["Enter"]);
    t.expect("shell works", &["still-2-alive"]);

    // A range on a real 19.6 s recording (the built-in demo's file): back to the start, 1 s
    // on, `[`, 1 s on, `]`; then `s` saves it next to the recording.
    let long = dir.path().join("long.wvz");
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/assets/demo.wvz"),
        &long,
    )
    .expect("copy the demo recording");
    let cmd = format!(
        "clear; {} --replay {}; echo EXITED=$? long",
        env!("CARGO_BIN_EXE_wakeviz"),
        long.display()
    );
    t.keys(&["-l", &cmd]);
    t.keys(&["Enter"]);
    t.expect("long replay", &["REPLAY long.wvz", "Topology"]);
    t.keys(&["g", "j"]);
    t.keys(&["-l", "["]);
    t.expect("range started", &["range starts at"]);
    t.keys(&["j"]);
    t.keys(&["-l", "]"]);
    let p = t.expect("range marked", &["range +", "views and s cover the range"]);
    let label = p
        .split("range +")
        .nth(1)
        .and_then(|r| r.split(" │").next())
        .map(|r| format!("range +{}", r.trim_end()))
        .expect("range label");
    t.keys(&["s"]);
    t.expect(
        "saved",
        &["saved long.report.txt, long.report.json, long.screen.txt"],
    );
    let text = std::fs::read_to_string(dir.path().join("long.report.txt")).expect("report");
    assert!(text.starts_with(&format!("== {label}")), "{label}\n{text}");
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("long.report.json")).expect("json"),
    )
    .expect("valid JSON");
    assert!(
        json["range"]["to_ns"].as_u64() > json["range"]["from_ns"].as_u64(),
        "{}",
        json["range"]
    );
    let cap = std::fs::read_to_string(dir.path().join("long.screen.txt")).expect("screen");
    assert!(cap.contains(&label) && cap.contains("1 Overview"), "{cap}");
    t.keys(&["s"]);
    t.expect("saved again", &["saved long-1.report.txt"]);
    t.keys(&["q"]);
    t.expect("after q (long)", &["EXITED=0 long"]);

    // Ctrl-C (a key in raw mode) and SIGTERM restore the terminal too.
    for how in ["ctrl-c", "sigterm"] {
        let cmd = format!(
            "clear; {} --replay {}; echo EXITED=$? {how}",
            env!("CARGO_BIN_EXE_wakeviz"),
            rec.display()
        );
        t.keys(&["-l", &cmd]);
        t.keys(&["Enter"]);
        t.expect(
            &format!("dashboard before {how}"),
            &["1 Overview", "Topology"],
        );
        if how == "ctrl-c" {
            t.keys(&["C-c"]);
        } else {
            let shell = t.run(&["display-message", "-p", "-t", "wv", "#{pane_pid}"]);
            let shell = String::from_utf8_lossy(&shell.stdout).trim().to_string();
            let kids = Command::new("ps")
                .args(["-o", "pid=", "--ppid", &shell])
                .output()
                .expect("ps");
            let pid = String::from_utf8_lossy(&kids.stdout).trim().to_string();
            assert!(
                !pid.is_empty() && !pid.contains(char::is_whitespace),
                "one child of the shell: {pid:?}"
            );
            assert!(
                Command::new("kill")
                    .args(["-TERM", &pid])
                    .status()
                    .is_ok_and(|s| s.success())
            );
        }
        let p = t.expect(&format!("after {how}"), &[&format!("EXITED=0 {how}")]);
        assert!(
            !t.alternate_on(),
            "alternate screen left on after {how}:\n{p}"
        );
        assert!(
            !p.contains("1 Overview"),
            "dashboard still on screen after {how}:\n{p}"
        );
    }
}

/// `--replay B --compare A` in a real terminal: the header says COMPARE and why there is no
/// significance marker, the scan view has a Δ column and both histograms; a missing baseline
/// is one line naming it and exit 1.
#[test]
fn compare_in_tmux() {
    if !have_tmux() {
        eprintln!("SKIPPED compare_in_tmux: tmux is not installed");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let cur = recording(dir.path(), "b.wvz", 30_000, 7);
    let base = recording(dir.path(), "a.wvz", 24_000, 11);
    let t = Tmux {
        sock: dir.path().join("tmux-compare.sock"),
    };
    let shell = "env -i PATH=/usr/bin:/bin HOME=/tmp TERM=xterm-256color PS1='$ ' sh";
    assert!(
        t.run(&[
            "new-session",
            "-d",
            "-x",
            "120",
            "-y",
            "40",
            "-s",
            "wv",
            shell
        ])
        .status
        .success(),
        "tmux new-session"
    );
    t.expect("shell", &["$"]);
    let bin = env!("CARGO_BIN_EXE_wakeviz");
    let missing = dir.path().join("missing.wvz");
    t.keys(&[
        "-l",
        &format!(
            "{bin} --replay {} --compare {}; echo EXITED=$?",
            cur.display(),
            missing.display()
        ),
    ]);
    t.keys(&["Enter"]);
    let p = t.expect("missing baseline", &["EXITED=1"]);
    assert!(
        p.contains(&format!("wakeviz: baseline {}", missing.display())),
        "the error names the baseline:\n{p}"
    );
    t.keys(&["-l", "clear"]);
    t.keys(&["Enter"]);
    t.keys(&[
        "-l",
        &format!(
            "{bin} --replay {} --compare {}; echo EXITED=$?",
            cur.display(),
            base.display()
        ),
    ]);
    t.keys(&["Enter"]);
    t.expect(
        "compare overview",
        &[
            "COMPARE vs a.wvz",
            "no significance marker",
            "Current   b.wvz",
            "Baseline  a.wvz",
            "baseline",
        ],
    );
    t.expect("replay reached the end", &["end │"]);
    t.keys(&["2"]);
    let p = t.expect(
        "compare scan view",
        &[
            "Scan latency [cumulative, vs baseline]",
            "current baseline        Δ",
            "current █, baseline ▒",
            "per LLC p99",
        ],
    );
    assert!(
        p.lines()
            .any(|l| l.starts_with("p99 ") && (l.contains('%') || l.contains("n/a"))),
        "the p99 row has a Δ:\n{p}"
    );
    t.keys(&["3"]);
    t.expect("compare placement view", &["same_llc", "pt"]);
    t.keys(&["q"]);
    let p = t.expect("after q", &["EXITED=0"]);
    assert!(!t.alternate_on(), "alternate screen left on:\n{p}");
}

/// Whether `pid` still runs (a zombie counts as gone: it holds no descriptors, no probes).
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

/// The terminal going away (tmux killed, ssh dropped) ends wakeviz within a second or two,
/// replay and (as root) live: no orphan keeps running, spinning or holding probes.
#[test]
fn killing_the_terminal_ends_wakeviz() {
    if !have_tmux() {
        eprintln!("SKIPPED killing_the_terminal_ends_wakeviz: tmux is not installed");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let rec = fixture(dir.path());
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let mut cases = vec![("replay", format!("--replay {}", rec.display()))];
    if root {
        cases.push(("live", String::new()));
    } else {
        eprintln!("SKIPPED the live case of killing_the_terminal_ends_wakeviz: not root");
    }
    for (name, args) in cases {
        let t = Tmux {
            sock: dir.path().join(format!("tmux-{name}.sock")),
        };
        let cmd = format!(
            "env TERM=xterm-256color {} {args}",
            env!("CARGO_BIN_EXE_wakeviz")
        );
        assert!(
            t.run(&[
                "new-session",
                "-d",
                "-x",
                "120",
                "-y",
                "40",
                "-s",
                "wv",
                &cmd
            ])
            .status
            .success(),
            "tmux new-session"
        );
        t.expect(&format!("{name} dashboard"), &["1 Overview"]);
        let out = t.run(&["display-message", "-p", "-t", "wv", "#{pane_pid}"]);
        let env_pid = String::from_utf8_lossy(&out.stdout).trim().to_string();
        // `env` execs wakeviz: the pane's pid is wakeviz's.
        assert!(alive(&env_pid), "{name}: wakeviz is not running");
        t.run(&["kill-server"]);
        let start = Instant::now();
        while alive(&env_pid) && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let took = start.elapsed();
        assert!(
            !alive(&env_pid),
            "{name}: wakeviz (pid {env_pid}) still runs 5 s after its terminal went away"
        );
        eprintln!("{name}: wakeviz ended {took:?} after the terminal went away");
        assert!(
            took < Duration::from_secs(2),
            "{name}: took {took:?} to end"
        );
    }
}

/// Live with `-- CMD`: when the command exits, the dashboard stays with the run's final figures,
/// marked finished, until `q`; then wakeviz exits with the command's status.
#[test]
fn a_finished_command_keeps_the_dashboard_until_q() {
    if !have_tmux() {
        eprintln!("SKIPPED a_finished_command_keeps_the_dashboard_until_q: tmux is not installed");
        return;
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED a_finished_command_keeps_the_dashboard_until_q: not root (live probes)");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let t = Tmux {
        sock: dir.path().join("tmux-finished.sock"),
    };
    let cmd = format!(
        "env TERM=xterm-256color {} -- sh -c 'sleep 1; exit 3'; echo WAKEVIZ-EXIT=$?; sleep 30",
        env!("CARGO_BIN_EXE_wakeviz")
    );
    assert!(
        t.run(&[
            "new-session",
            "-d",
            "-x",
            "120",
            "-y",
            "40",
            "-s",
            "wv",
            &cmd
        ])
        .status
        .success(),
        "tmux new-session"
    );
    t.expect("finished", &["FINISHED, exit 3", "1 Overview"]);
    // It stays: still there a moment later, with the run's result on the Overview.
    std::thread::sleep(Duration::from_millis(1500));
    let p = t.expect("still finished", &["FINISHED, exit 3"]);
    assert!(!p.contains("WAKEVIZ-EXIT="), "{p}");
    t.keys(&["q"]);
    t.expect("exit status", &["WAKEVIZ-EXIT=3"]);
}
