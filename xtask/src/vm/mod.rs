//! `cargo xtask vm-test`: wakeviz on a real kernel with real topologies.
//!
//! Boots Debian's 6.12 cloud kernel under qemu TCG (this machine's own kernel forbids fentry) on
//! NUMA/SMT topologies, runs `wakeviz --record` with its full probe set while pinned ping-pong
//! pairs and a fan-out group run, counts the same tracepoints with the kernel's own tracing as
//! ground truth, and checks on the host: the guest's sysfs layout, which probes attached in which
//! mode, wakeviz's event counts against tracefs's (within 0.5% per kind), the placement level of
//! every pinned pair, and reports the SIS_UTIL shadow fidelity. `--demo OUT` records the demo.
//!
//! Guest side: `xtask/vm/init.sh` (the initramfs's /init) and `xtask/vm/scenario.sh`.
//! The nps1 guest also runs Debian's rt-app (fetched into the cache like the kernel) to replay
//! a recorded workload from its extracted shape (`replay.rs`).
//! Environment: `WAKEVIZ_VM_CACHE` (the kernel, its debug info and rt-app; default
//! `/var/cache/wakeviz-vm` as root, else `~/.cache/wakeviz-vm`),
//! `WAKEVIZ_VM_KERNEL` (boot this vmlinuz instead of fetching Debian's).
mod check;
mod debuginfo;
mod experiment;
mod fentry;
mod identity;
mod initramfs;
mod kernel;
mod noisy;
mod qemu;
mod replay;
mod scan;
mod sync;
mod topo;
mod tp_gap;
mod verifier;

use std::{
    fmt::Write as _,
    fs,
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use self::{check::Findings, initramfs::Initramfs, topo::Spec};

const INIT_SH: &str = include_str!("../../vm/init.sh");
const SCENARIO_SH: &str = include_str!("../../vm/scenario.sh");
const EXPERIMENT_SH: &str = include_str!("../../vm/experiment.sh");
const FENTRY_SH: &str = include_str!("../../vm/fentry.sh");
const REPLAY_SH: &str = include_str!("../../vm/replay.sh");
const DEMO_MAX_BYTES: u64 = 5 * 1024 * 1024;

#[derive(clap::Args)]
pub struct Args {
    /// Run one topology only: nps1, nps2, nosmt or many.
    #[arg(long)]
    pub topology: Option<String>,
    /// wakeviz binary to test [default: <workspace>/target/release/wakeviz, built if missing].
    #[arg(long)]
    pub wakeviz: Option<PathBuf>,
    /// Record the demo (about 10 s, mixed workload, NPS2-like guest) to this file instead of
    /// running the tests.
    #[arg(long, value_name = "OUT.wvz")]
    pub demo: Option<PathBuf>,
    /// Keep the per-guest work directories (initramfs, console log, raw port output).
    #[arg(long)]
    pub keep: bool,
    /// "ROUNDS:ITERATIONS" of the nosmt guest's function-probe cost benchmark (`vm/fentry.sh`:
    /// a ping-pong alone and under four wakeviz configurations, rotated). The default checks
    /// the runs and their summary; `5:20000` gives figures worth quoting.
    #[arg(long, default_value = fentry::DEFAULT, value_name = "ROUNDS:ITERATIONS")]
    pub fentry_cost: String,
    /// Kill a guest that has not powered off after this many seconds. Generous: the nosmt
    /// guest's fentry cost runs at 5:20000 took 2 to 4.5 minutes here (one host, one hour
    /// apart); a hang is caught by `--silence` long before this.
    #[arg(long, default_value_t = 900)]
    pub timeout: u64,
    /// Kill a guest whose console has been silent this many seconds (a hang). The guest logs
    /// every step; its longest quiet step here is about 40 s.
    #[arg(long, default_value_t = 150)]
    pub silence: u64,
    /// Ping-pong round trips per pinned pair.
    #[arg(long, default_value_t = 500)]
    pub iterations: u32,
    /// The setting `wakeviz experiment` compares with the default on the guests that run it
    /// (a `NO_X` of a feature the kernel has on, such as `NO_WA_IDLE`).
    #[arg(long, default_value = "NO_SIS_UTIL", value_parser = experiment::parse_setting)]
    pub exp_setting: String,
    /// The experiment's workload and runs instead of the guest's own,
    /// "groups:receivers:loops[:hogs[:ack[:runs]]]" (for longer runs than CI's).
    #[arg(long, value_name = "SPEC")]
    pub exp_fanout: Option<String>,
    /// Boot, sysfs and tracefs only, with busybox workloads and no wakeviz (harness debugging).
    #[arg(long, hide = true)]
    pub infra_only: bool,
}

/// Where the guest finds the scan points (`xtask/vm/scenario.sh`).
const SCAN_POINTS: &str = "vm/scan_points.json";
const SCAN_POINTS_TXT: &str = "vm/scan_points.txt";

/// `WAKEVIZ_VM_CACHE`, else a directory outside the clone (CI starts from a fresh clone each
/// time; the kernel and its debug info are hundreds of MB).
fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("WAKEVIZ_VM_CACHE") {
        return PathBuf::from(d);
    }
    use std::os::unix::fs::MetadataExt as _;
    let root = fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    let user = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
    match user {
        Some(h) if !root => h.join("wakeviz-vm"),
        _ => PathBuf::from("/var/cache/wakeviz-vm"),
    }
}

fn workspace_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().unwrap_or(here).to_owned()
}

fn target_dir(ws: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) if Path::new(&d).is_absolute() => PathBuf::from(d),
        Some(d) => ws.join(d),
        None => ws.join("target"),
    }
}

/// The wakeviz binary: `--wakeviz`, else `<ws>/target/release/wakeviz` (built when missing).
fn resolve_wakeviz(a: &Args, ws: &Path) -> Result<PathBuf> {
    if let Some(p) = &a.wakeviz {
        if !p.is_file() {
            bail!("--wakeviz {}: no such file", p.display());
        }
        return Ok(p.clone());
    }
    let p = ws.join("target/release/wakeviz");
    if !p.is_file() {
        eprintln!("vm-test: {} missing; building it", p.display());
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let st = Command::new(cargo)
            .args(["build", "--release", "-p", "wakeviz", "--target-dir"])
            .arg(ws.join("target"))
            .current_dir(ws)
            .status()
            .context("running cargo build --release -p wakeviz")?;
        if !st.success() || !p.is_file() {
            bail!(
                "cargo build --release -p wakeviz failed ({st}); run scripts/setup.sh for the \
                 eBPF toolchain"
            );
        }
    }
    Ok(p)
}

pub fn run(a: &Args) -> Result<()> {
    let started = Instant::now();
    fentry::check_setting(&a.fentry_cost).map_err(anyhow::Error::msg)?;
    let ws = workspace_root();
    let qemu_version = match qemu::probe() {
        Ok(v) => v,
        Err(reason) => {
            println!("SKIPPED: vm-test: {reason}");
            return Ok(());
        }
    };
    let busybox = kernel::which("busybox")
        .context("busybox not found: install Debian's busybox-static (scripts/setup.sh does)")?;
    let cache = cache_dir();
    let kernel = match kernel::obtain(&cache)? {
        Ok(k) => k,
        Err(kernel::Unavailable(reason)) => {
            println!("SKIPPED: vm-test: no kernel to boot: {reason}");
            return Ok(());
        }
    };
    eprintln!(
        "vm-test: {qemu_version}; kernel {} from {}",
        kernel.release, kernel.origin
    );
    let wakeviz = if a.infra_only {
        None
    } else {
        Some(resolve_wakeviz(a, &ws)?)
    };

    let out_root = target_dir(&ws).join("vm-test");
    let work_root = out_root.join(".work");
    fs::create_dir_all(&work_root).with_context(|| format!("creating {}", work_root.display()))?;
    let mut base = base_initramfs(&busybox, wakeviz.as_deref(), &work_root)?;
    if let Some(w) = &wakeviz {
        let points = work_root.join("scan_points.json");
        let r = debuginfo::vmlinux(&cache, &kernel.release)
            .and_then(|v| debuginfo::scan_points(w, &v, &points).map(|()| v));
        match r {
            Ok(v) => {
                eprintln!("vm-test: scan points from {}", v.display());
                let bytes =
                    fs::read(&points).with_context(|| format!("reading {}", points.display()))?;
                let parsed = wakeviz_core::scan_points::ScanPoints::from_json(&bytes)
                    .with_context(|| format!("reading {}", points.display()))?;
                // The same points as plain lines, for the guest's tracefs kprobe events.
                let lines: String = parsed
                    .points
                    .iter()
                    .map(|p| format!("{} {} {}\n", p.role.name(), p.symbol, p.offset))
                    .collect();
                base.file(SCAN_POINTS, &bytes, false);
                base.file(SCAN_POINTS_TXT, lines.as_bytes(), false);
            }
            Err(e) => eprintln!(
                "vm-test: no scan points for the guest ({e:#}); the suite runs without the debug-info probes"
            ),
        }
    }

    let specs: Vec<Spec> = topo::all();
    if let Some(out) = &a.demo {
        let wakeviz = wakeviz.context("--demo needs wakeviz (not --infra-only)")?;
        let spec = specs
            .into_iter()
            .find(|s| s.name == "nps2")
            .context("no nps2 topology")?;
        return demo(a, &spec, &kernel, &base, &wakeviz, &out_root, out);
    }
    let specs: Vec<Spec> = match &a.topology {
        Some(name) => {
            let specs: Vec<Spec> = specs.into_iter().chain(topo::extra()).collect();
            let names: Vec<&str> = specs.iter().map(|s| s.name).collect();
            let v: Vec<Spec> = specs.into_iter().filter(|s| s.name == *name).collect();
            if v.is_empty() {
                bail!("unknown --topology {name}; known: {}", names.join(", "));
            }
            v
        }
        None => specs,
    };
    if wakeviz.is_some() && specs.iter().any(|s| replay::runs_in(s.name)) {
        let rt_app = replay::rt_app(&cache)?;
        base.program(&rt_app, "bin/rt-app", &work_root)
            .map_err(|e| {
                anyhow::anyhow!(
                    "vm-test: packing {} into the initramfs (it needs the host's libjson-c5): \
                     {e:#}",
                    rt_app.display()
                )
            })?;
    }

    let mut summary = String::new();
    let mut failed = Vec::new();
    let mut problems = Vec::new();
    let mut tp_pairs = Vec::new();
    for spec in &specs {
        eprintln!("vm-test: == {} ({})", spec.name, spec.title);
        let r = run_topology(a, spec, &kernel, &base, wakeviz.as_deref(), &out_root);
        let _ = writeln!(summary, "\n== {}: {}", spec.name, spec.title);
        match r {
            Ok(f) => {
                tp_pairs.extend(f.tp_pairs.iter().map(|&p| (spec.name, p)));
                for l in &f.lines {
                    let _ = writeln!(summary, "{l}");
                }
                if f.failures.is_empty() {
                    let _ = writeln!(summary, "  PASS");
                } else {
                    let _ = writeln!(summary, "  FAIL ({} problem(s))", f.failures.len());
                    failed.push(spec.name);
                    // Repeated at the end: CI logs keep only their tail.
                    problems.extend(f.failures.iter().map(|m| format!("{}: {m}", spec.name)));
                }
            }
            Err(e) => {
                let _ = writeln!(summary, "  FAIL: {e:#}");
                failed.push(spec.name);
                problems.push(format!("{}: {e:#}", spec.name));
            }
        }
    }
    if !tp_pairs.is_empty() {
        let (lines, failures) = tp_gap::judge(&tp_pairs);
        let _ = writeln!(summary, "\n== all guests");
        for l in lines {
            let _ = writeln!(summary, "  {l}");
        }
        for m in failures {
            let _ = writeln!(summary, "  FAIL: {m}");
            problems.push(format!("all guests: {m}"));
        }
    }
    let all_passed = failed.is_empty() && problems.is_empty();
    if !a.keep && all_passed {
        let _ = fs::remove_dir_all(&work_root);
    }
    let summary = format!(
        "vm-test summary (kernel {}, {qemu_version}){summary}",
        kernel.release
    );
    println!("{summary}");
    let _ = fs::write(out_root.join("summary.txt"), &summary);
    println!(
        "\nvm-test: {} topologies, {} passed, {} failed, {:.0} s; recordings under {}",
        specs.len(),
        specs.len() - failed.len(),
        failed.len(),
        started.elapsed().as_secs_f64(),
        out_root.display()
    );
    for p in &problems {
        println!("  FAIL {p}");
    }
    if !failed.is_empty() {
        bail!(
            "vm-test failed on {} (work dirs kept under {})",
            failed.join(", "),
            work_root.display()
        );
    }
    if !all_passed {
        bail!(
            "vm-test failed on the guests together (work dirs kept under {})",
            work_root.display()
        );
    }
    Ok(())
}

/// Everything but the per-run settings: busybox and its applets, /init, the scenario, wakeviz
/// and its libraries.
fn base_initramfs(busybox: &Path, wakeviz: Option<&Path>, work: &Path) -> Result<Initramfs> {
    let mut ir = Initramfs::new();
    ir.program(busybox, "bin/busybox", work)?;
    let list = Command::new(busybox)
        .arg("--list")
        .output()
        .context("running busybox --list")?;
    for applet in String::from_utf8_lossy(&list.stdout).lines() {
        let applet = applet.trim();
        if applet.is_empty() || applet == "busybox" || applet.contains('/') {
            continue;
        }
        ir.symlink(&format!("bin/{applet}"), "busybox");
    }
    ir.file("init", INIT_SH.as_bytes(), true);
    ir.file("vm/scenario.sh", SCENARIO_SH.as_bytes(), true);
    ir.file("vm/experiment.sh", EXPERIMENT_SH.as_bytes(), true);
    ir.file("vm/fentry.sh", FENTRY_SH.as_bytes(), true);
    ir.file("vm/replay.sh", REPLAY_SH.as_bytes(), true);
    if let Some(w) = wakeviz {
        ir.program(w, "bin/wakeviz", work)?;
    }
    Ok(ir)
}

struct Settings<'a> {
    mode: &'a str,
    pairs: String,
    iterations: u32,
    fanout: &'a str,
    /// The experiment's workload and runs, "groups:receivers:loops[:hogs[:ack[:runs]]]" ("":
    /// not run).
    exp_fanout: &'a str,
    /// The setting the experiment compares with the default (`NO_SIS_UTIL`, ...).
    exp_setting: &'a str,
    buf_kb: u32,
    duration_s: u32,
    demo_secs: u32,
    /// "rounds:iterations" of the fentry-cost runs (`xtask/vm/fentry.sh`; "": not run).
    fentry_cost: &'a str,
    /// The busy and taskset runs of the select-input checks (they need two LLCs within CPUs 0-7).
    inputs_runs: bool,
    /// The record -> extract -> rt-app replay loop (`xtask/vm/replay.sh`).
    replay: bool,
}

fn env_file(s: &Settings) -> String {
    format!(
        "export WVZ_MODE={}\nexport WVZ_PAIRS=\"{}\"\nexport WVZ_ITER={}\nexport WVZ_FANOUT=\"{}\"\n\
         export WVZ_BUF_KB={}\nexport WVZ_DURATION={}\nexport WVZ_READY=\"{}\"\n\
         export WVZ_STOP=int\nexport WVZ_DEMO_SECS={}\nexport WVZ_EXP_FANOUT=\"{}\"\n\
         export WVZ_FENTRY_COST=\"{}\"\nexport WVZ_INPUTS={}\nexport WVZ_REPLAY={}\n\
         export WVZ_EXP_SETTING={}\n",
        s.mode,
        s.pairs,
        s.iterations,
        s.fanout,
        s.buf_kb,
        s.duration_s,
        "wakeviz: capturing",
        s.demo_secs,
        s.exp_fanout,
        s.fentry_cost,
        u8::from(s.inputs_runs),
        u8::from(s.replay),
        s.exp_setting
    )
}

/// Writes the initramfs, boots the guest, returns its results directory (cleared first).
fn boot(
    a: &Args,
    spec: &Spec,
    kernel: &kernel::Kernel,
    base: &Initramfs,
    settings: &Settings,
    work: &Path,
    results: &Path,
) -> Result<qemu::Outcome> {
    if work.exists() {
        fs::remove_dir_all(work).with_context(|| format!("clearing {}", work.display()))?;
    }
    fs::create_dir_all(work)?;
    if results.exists() {
        fs::remove_dir_all(results).with_context(|| format!("clearing {}", results.display()))?;
    }
    let mut ir = base.clone();
    ir.file("vm/env", env_file(settings).as_bytes(), false);
    let initrd = work.join("initramfs.cpio");
    let size = ir.write(&initrd)?;
    eprintln!(
        "vm-test: {}: initramfs {:.1} MB; booting {} vCPUs ({})",
        spec.name,
        size as f64 / 1e6,
        spec.nr_cpus(),
        spec.cpu_model
    );
    let out = qemu::Boot {
        work,
        kernel: &kernel.vmlinuz,
        initrd: &initrd,
        machine: spec.qemu_args(),
        timeout: Duration::from_secs(a.timeout),
        silence: Duration::from_secs(a.silence),
    }
    .run(results)?;
    let _ = fs::copy(&out.console, results.join("console.log"));
    Ok(out)
}

/// The guest's uptime when /init started, from its "booted" console line.
fn boot_secs(console: &Path) -> Option<f64> {
    let text = fs::read_to_string(console).ok()?;
    let line = text.lines().find(|l| l.contains("wvz-vm: booted"))?;
    let rest = line.split("uptime ").nth(1)?;
    rest.trim_end_matches(|c: char| !c.is_ascii_digit())
        .parse()
        .ok()
}

/// The experiment's workload on this guest: `--exp-fanout` where the guest runs one.
fn exp_fanout<'a>(a: &'a Args, spec: &Spec) -> &'a str {
    spec.experiment
        .map_or("", |own| a.exp_fanout.as_deref().unwrap_or(own))
}

fn run_topology(
    a: &Args,
    spec: &Spec,
    kernel: &kernel::Kernel,
    base: &Initramfs,
    wakeviz: Option<&Path>,
    out_root: &Path,
) -> Result<Findings> {
    let work = out_root.join(".work").join(spec.name);
    let results = out_root.join(spec.name);
    let pairs = spec
        .pairs
        .iter()
        .map(|p| format!("{}:{}:{}", p.comm, p.waker, p.wakee))
        .collect::<Vec<_>>()
        .join(" ");
    let settings = Settings {
        mode: if wakeviz.is_some() { "test" } else { "infra" },
        pairs,
        iterations: a.iterations,
        fanout: spec.fanout.unwrap_or("wvz-fan:2:4:40"),
        exp_fanout: exp_fanout(a, spec),
        exp_setting: &a.exp_setting,
        buf_kb: 2048,
        duration_s: 600,
        demo_secs: 10,
        // One small guest is enough for a ratio, and the runs take minutes under TCG.
        fentry_cost: if spec.name == "nosmt" && wakeviz.is_some() {
            a.fentry_cost.as_str()
        } else {
            ""
        },
        inputs_runs: spec.two_llcs_in_first_8(),
        replay: wakeviz.is_some() && replay::runs_in(spec.name),
    };
    let out = boot(a, spec, kernel, base, &settings, &work, &results)?;
    let mut f = Findings::default();
    f.line(format!(
        "  guest: {} vCPUs, -cpu {}, kernel {}; /init after {} s wall ({} s guest uptime), \
         whole VM {:.1} s",
        spec.nr_cpus(),
        spec.cpu_model,
        fs::read_to_string(results.join("uname.txt"))
            .unwrap_or_default()
            .trim(),
        out.to_init
            .map_or("?".into(), |d| format!("{:.1}", d.as_secs_f64())),
        boot_secs(&out.console).map_or("?".into(), |s| format!("{s:.1}")),
        out.wall.as_secs_f64()
    ));
    if let Ok(errs) = fs::read_to_string(results.join("guest_errors.txt")) {
        for e in errs.lines() {
            f.fail(format!("guest: {e}"));
        }
    }

    // 1. Topology.
    let sysfs = results.join("sysfs/devices/system");
    let t = wakeviz_core::topology::from_sysfs(&sysfs)
        .with_context(|| format!("reading the guest's sysfs copy {}", sysfs.display()))?;
    f.line(format!("  sysfs: {}", topo::describe(&t)));
    match spec.check(&t) {
        Ok(()) => f.line("  sysfs layout: as intended"),
        Err(e) => f.fail(format!("{e:#}")),
    }

    // 2. Ground truth from tracefs.
    let truth = check::tracefs_stream(&results.join("tracefs_trace.txt"))?;
    for l in check::tracefs_losses(&results.join("tracefs_stats.txt"))? {
        f.fail(format!("tracefs lost events: {l}"));
    }
    let truth_counts = truth.counts();
    let Some(wakeviz) = wakeviz else {
        f.line("  tracefs counts (no wakeviz: --infra-only):");
        for ((kind, comm), n) in &truth_counts {
            f.line(format!("    {kind:<20} {comm:<10} {n}"));
        }
        return Ok(f);
    };
    let impl_ = fs::read_to_string(results.join("workload_impl.txt")).unwrap_or_default();
    if impl_.trim() != "wakeviz" {
        f.line("  note: workloads ran as busybox shell loops (wakeviz has no `workload` yet)");
    }

    // 3. Probes: the live run's report (or its stderr table); scan source from a host replay.
    let trace = results.join("trace.wvz");
    let guest_report = fs::read(results.join("report.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
    let stderr = fs::read_to_string(results.join("wakeviz.stderr")).unwrap_or_default();
    let replay = if trace.is_file() {
        check::replay_report(wakeviz, &trace)
    } else {
        Err(anyhow::anyhow!("the guest's wakeviz wrote no trace.wvz"))
    };
    if guest_report.is_none() {
        f.fail("the guest's `wakeviz --record --headless --report json` printed no JSON report");
    }
    match fs::read_to_string(results.join("wakeviz.rc")) {
        Ok(rc) if rc.trim() == "0" => {}
        Ok(rc) => f.fail(format!(
            "the guest's wakeviz exited with status {} after SIGINT; its stderr:\n{stderr}",
            rc.trim()
        )),
        Err(_) => f.fail("the guest's wakeviz never finished (no exit status)"),
    }
    match check::probe_list(guest_report.as_ref(), &stderr) {
        Some((list, from)) => {
            f.line(format!("  probes (from {from}):"));
            let src = guest_report
                .as_ref()
                .and_then(check::scan_source)
                .or_else(|| replay.as_ref().ok().and_then(check::scan_source));
            check::probes(&mut f, &list, src.as_deref());
        }
        None => f.fail(format!(
            "no probe table from the guest's wakeviz; its stderr:\n{stderr}"
        )),
    }
    if !trace.is_file() {
        f.fail("the guest's wakeviz wrote no trace.wvz");
        return Ok(f);
    }

    // 4. Counts and placement, from the recording.
    let d = check::dump(wakeviz, &trace)?;
    let events = d.events.len() as u64 + d.other.values().sum::<u64>();
    let selects = d.other.get("select_task_rq_fair").copied().unwrap_or(0);
    let size = fs::metadata(&trace).map(|m| m.len()).unwrap_or(0);
    f.line(format!(
        "  recording: {events} events, {size} bytes ({:.1} B/event), {selects} \
         select_task_rq_fair (fentry/fexit) events",
        size as f64 / events.max(1) as f64,
    ));
    if selects == 0 {
        f.fail("no select_task_rq_fair (fentry/fexit) events recorded");
    }
    check::compare_counts(&mut f, &d.counts(), &truth_counts);
    check::explain_count_diffs(&mut f, &d, &truth);
    identity::check(&mut f, &d, &truth);
    scan::check(&mut f, wakeviz, &trace, &truth, guest_report.as_ref());
    check::rings(&mut f, guest_report.as_ref(), spec.rings, &d, &truth);
    f.line("  placement of pinned pairs (waker CPU -> wakee CPU, the pair's own sched_waking):");
    check::placement(
        &mut f,
        &t,
        &d.placement(),
        &truth.placement(),
        &spec.pairs,
        a.iterations,
    );

    // 5. `wakeviz diff` of real recordings: the SMT pair vs the cross-package pair moves the
    // wakeups from smt_sibling to cross_package (the gates hold: exit 1); two runs on the
    // SMT pair do not (exit 0).
    check::diff_gate(&mut f, wakeviz, &results);
    // 5b. A noisy neighbour moves the unscoped figures, not the command's.
    noisy::check(&mut f, wakeviz, &results);

    // 6. The experiment checks (the topology that runs them): live schedstat, --sched-feature,
    // experiment, and the signals that must leave the real features file as it was.
    if spec.experiment.is_some() {
        experiment::schedstat(&mut f, guest_report.as_ref(), &results);
        if experiment::features(&mut f, wakeviz, &results) {
            let runs = experiment::runs_of(exp_fanout(a, spec));
            experiment::experiment(&mut f, wakeviz, &results, runs, &a.exp_setting);
            experiment::signals(&mut f, &results);
        }
    }

    // 7. The function probes' cost (one topology runs it).
    if let Some(iter) = settings.fentry_cost.split(':').nth(1)
        && let Ok(iter) = iter.parse::<f64>()
    {
        fentry::report(&mut f, &results, iter);
    }

    // 8. Shadow fidelity, from the replay report.
    match replay {
        Ok(r) => {
            fs::write(results.join("replay_report.json"), r.to_string())?;
            let drop = |k: &str| {
                r.get("drops")
                    .and_then(|d| d.get(k))
                    .map_or("?".into(), Value::to_string)
            };
            f.line(format!(
                "  wakeviz drops: {} in the kernel, {} in userspace",
                drop("kernel_drops"),
                drop("user_drops")
            ));
            f.line(format!(
                "  SIS_UTIL shadow fidelity: {}",
                check::sis_util_fidelity(&r)
            ));
        }
        Err(e) => f.fail(format!("{e:#}")),
    }

    // 8. The select inputs: the busy and the affinity-restricted recordings.
    if settings.inputs_runs {
        check::inputs_runs(&mut f, wakeviz, &results);
        verifier::check(&mut f, &results.join("cache.log"));
        sync::check(&mut f, wakeviz, &results);
    }

    // 9. A recorded fan-out replayed by rt-app from its extracted shape.
    if settings.replay {
        replay::check(&mut f, &results);
    }
    Ok(f)
}

fn demo(
    a: &Args,
    spec: &Spec,
    kernel: &kernel::Kernel,
    base: &Initramfs,
    wakeviz: &Path,
    out_root: &Path,
    out: &Path,
) -> Result<()> {
    let work = out_root.join(".work").join("demo");
    let results = out_root.join("demo");
    let settings = Settings {
        mode: "demo",
        // Phase 1: a pinned cross-package pair and an unpinned pair (placed by the scheduler)
        // ping-pong; phase 2: a fan-out group; phase 3: idle-ish.
        pairs: "wvz-pp-xpkg:1:14 wvz-pp-free:-:-".into(),
        iterations: 0,
        fanout: "wvz-fanout:2:4:1000000",
        exp_fanout: "",
        exp_setting: "NO_SIS_UTIL",
        buf_kb: 1024,
        duration_s: 60,
        demo_secs: 10,
        fentry_cost: "",
        inputs_runs: false,
        replay: false,
    };
    let o = boot(a, spec, kernel, base, &settings, &work, &results)?;
    let errs = fs::read_to_string(results.join("guest_errors.txt")).unwrap_or_default();
    if !errs.trim().is_empty() {
        bail!(
            "demo run failed in the guest: {}\nwakeviz stderr:\n{}",
            errs.trim(),
            fs::read_to_string(results.join("wakeviz.stderr")).unwrap_or_default()
        );
    }
    let sysfs = results.join("sysfs/devices/system");
    let t = wakeviz_core::topology::from_sysfs(&sysfs)
        .with_context(|| format!("reading the guest's sysfs copy {}", sysfs.display()))?;
    spec.check(&t)?;
    let rec = results.join("demo.wvz");
    let size = fs::metadata(&rec)
        .with_context(|| format!("the guest wrote no {}", rec.display()))?
        .len();
    if size > DEMO_MAX_BYTES {
        bail!("demo recording is {size} bytes, over the {DEMO_MAX_BYTES}-byte limit");
    }
    // It must replay: every event through `--dump jsonl`.
    let d = check::dump(wakeviz, &rec)?;
    let mut kinds: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
    for e in &d.events {
        *kinds.entry(e.kind.as_str()).or_default() += 1;
    }
    for (k, n) in &d.other {
        kinds.insert(k.as_str(), *n);
    }
    let total: u64 = kinds.values().sum();
    fs::copy(&rec, out).with_context(|| format!("copying the demo to {}", out.display()))?;
    // The guest wrote it 0600 as root; it ships in the repository.
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(out, fs::Permissions::from_mode(0o644))
            .with_context(|| format!("chmod 644 {}", out.display()))?;
    }
    if !a.keep {
        let _ = fs::remove_dir_all(&work);
    }
    println!(
        "vm-test: demo recorded in the {} guest ({:.0} s VM): {} ({size} bytes, {total} events: \
         {})",
        spec.name,
        o.wall.as_secs_f64(),
        out.display(),
        kinds
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}
