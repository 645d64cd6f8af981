//! Loading and attaching the probes: the only module that talks to the kernel through aya.
//!
//! Every probe point is attached on its own, best mode first, and the outcome (mode, or the
//! reason it failed, and the modes tried before) is recorded, so wakeviz runs on whatever the
//! kernel allows and says exactly what is degraded.
pub mod aggregate;
mod batching;
pub mod btf;
pub mod debuginfo;
pub mod floor;
mod kallsyms;
mod rings;
mod scan;
pub mod tracefs;
mod wake_frames;

use std::{fmt::Write as _, path::Path};

use aya::{
    Btf, Ebpf, EbpfLoader,
    programs::{BtfTracePoint, FEntry, FExit, RawTracePoint, TracePoint},
};
use wakeviz_common::names::{
    global::*,
    map,
    program::{self, Function, Tracepoint},
};
use wakeviz_core::format::{ProbeMode, ProbeState, ProbeStatus, ScanSource};

#[derive(Clone, Debug)]
pub struct ProbeConfig {
    pub ringbuf_bytes: u32,
    /// Try fentry/fexit on select_task_rq_fair / select_idle_cpu.
    pub function_probes: bool,
    /// Skip tracepoint modes better than this one (tests exercise every fallback).
    pub tracepoint_mode: TracepointMode,
    /// Turn on the kernel's BPF run-time statistics (BPF_ENABLE_STATS) for per-program cost.
    pub bpf_stats: bool,
    /// Which CPU writes to which ring buffer.
    pub rings: wakeviz_core::rings::RingPlan,
    /// Records go to the rings in per-CPU batches (`wakeviz_common::batch`).
    pub batching: bool,
    /// Where to put the idle-scan kprobes (from the kernel's debug info, checked against the
    /// running kernel), when they were found.
    pub scan_points: Option<wakeviz_core::scan_points::ScanPoints>,
}

/// Best tracepoint attach mode wakeviz may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum TracepointMode {
    /// tp_btf, then raw_tp, then classic.
    Auto,
    RawTp,
    Tracepoint,
}

/// Loaded programs plus what happened to each probe point.
pub struct Probes {
    pub ebpf: Ebpf,
    /// Keeps BPF_ENABLE_STATS on while it lives.
    _stats_fd: Option<std::os::fd::OwnedFd>,
    pub status: Vec<ProbeStatus>,
    pub scan_source: ScanSource,
    /// The idle-scan points the probes watch ([`ScanSource::DebugInfo`]).
    pub scan_points: Option<wakeviz_core::scan_points::ScanPoints>,
    pub notes: Vec<String>,
    /// Rings 1.. of `ring_plan` (ring 0 is the `EVENTS` map); empty with a single ring.
    pub rings: Vec<aya::maps::RingBuf<aya::maps::MapData>>,
    pub ring_plan: wakeviz_core::rings::RingPlan,
    /// Records are batched per CPU; whether userspace can flush a CPU's batch is in `notes`.
    pub batching: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(
        "loading eBPF needs root (CAP_BPF and CAP_PERFMON): {0}; run with sudo, or read a recording with `wakeviz --replay FILE` (try `wakeviz --demo`)"
    )]
    NotPermitted(String),
    #[error(
        "the kernel refused the wakeviz probes: {0}; `wakeviz --replay FILE` works without BPF"
    )]
    Refused(String),
    #[error("no sched tracepoint could be attached ({0}); nothing to capture")]
    NothingAttached(String),
    /// The embedded probe object and this binary disagree on a name: a build problem, never
    /// the kernel's doing, so it is not reported as a refusal.
    #[error(
        "the probe object has no {what} `{name}` that wakeviz expects; the probes and the binary are out of step (rebuild wakeviz)"
    )]
    ObjectMismatch { what: &'static str, name: String },
}

/// The error chain flattened into one line; EPERM is spelt out, since it is the usual reason.
pub(crate) fn reason(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        let t = inner.to_string();
        if !s.contains(&t) {
            let _ = write!(s, ": {t}");
        }
        src = inner.source();
    }
    if s.contains("os error 1)") || s.contains("Operation not permitted") {
        s = format!("EPERM ({s})");
    }
    s
}

pub(crate) fn is_eperm(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && io.raw_os_error() == Some(libc::EPERM)
        {
            return true;
        }
        cur = err.source();
    }
    reason(e).starts_with("EPERM")
}

/// A map value as aya reads and writes it. The types are `wakeviz_common`'s (plain `repr(C)`
/// integers, no padding: zerocopy's `IntoBytes`/`FromBytes` derives prove it), wrapped because
/// the orphan rule keeps `aya::Pod` off them; each user implements `Pod` for its own.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub(crate) struct MapValue<T>(pub(crate) T);

pub(crate) fn raise_memlock() {
    let rlim = libc::rlimit {
        rlim_cur: libc::RLIM_INFINITY,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: setrlimit with a valid pointer to an initialised struct. Needed on kernels before
    // 5.11, which charge BPF maps to RLIMIT_MEMLOCK (https://lwn.net/Articles/837122/).
    let _ = unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &rlim) };
}

/// Hidden switch for measuring what the ABI-2 select inputs cost: `1` skips those reads (the
/// records then carry no inputs, as ABI-1 ones).
const SKIP_INPUTS_ENV: &str = "WAKEVIZ_SKIP_SELECT_INPUTS";

fn read_inputs() -> bool {
    std::env::var_os(SKIP_INPUTS_ENV).is_none_or(|v| v != "1")
}

/// Online CPUs: a task allowed fewer may not run everywhere, so the probe reads its mask.
/// (Not `available_parallelism`, which is wakeviz's own affinity.)
fn online_cpus() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    u64::try_from(n).unwrap_or(0)
}

/// Globals handed to the programs (offsets; 0 = unknown, do not read).
pub(crate) fn globals(off: &btf::Offsets, notes: &mut Vec<String>) -> Vec<(&'static str, u64)> {
    let g = |o: Option<u64>| o.unwrap_or(0);
    let mut v = vec![
        (OFF_TASK_PID, g(off.task_pid)),
        (OFF_TASK_TGID, g(off.task_tgid)),
        (OFF_TASK_PRIO, g(off.task_prio)),
        (OFF_TASK_COMM, g(off.task_comm)),
        (OFF_TASK_CPU, g(off.task_cpu)),
        (OFF_TASK_SE_CFS_RQ, g(off.task_se_cfs_rq)),
        (OFF_CFS_RQ_RQ, g(off.cfs_rq_rq)),
        (OFF_RQ_NR_RUNNING, g(off.rq_nr_running)),
        (OFF_RQ_SD, g(off.rq_sd)),
        (OFF_RQ_CPU, g(off.rq_cpu)),
        (OFF_SD_PARENT, g(off.sd_parent)),
        (OFF_SD_SHARED, g(off.sd_shared)),
        (OFF_SDS_HAS_IDLE_CORES, g(off.sds_has_idle_cores)),
        (OFF_SDS_NR_IDLE_SCAN, g(off.sds_nr_idle_scan)),
        (READ_RQ, u64::from(off.rq_ok())),
        (OFF_TASK_SE_LOAD_AVG, g(off.task_se_load_avg)),
        (OFF_TASK_FLAGS, g(off.task_flags)),
        (OFF_TASK_NR_CPUS_ALLOWED, g(off.task_nr_cpus_allowed)),
        (OFF_TASK_CPUS_PTR, g(off.task_cpus_ptr)),
        (OFF_RQ_CFS, g(off.rq_cfs)),
        (OFF_RQ_CPU_CAPACITY, g(off.rq_cpu_capacity)),
        (OFF_CFS_RQ_LOAD_AVG, g(off.cfs_rq_load_avg)),
        (OFF_CFS_RQ_H_LOAD, g(off.cfs_rq_h_load)),
        (OFF_CFS_RQ_H_NR_DELAYED, g(off.cfs_rq_h_nr_delayed)),
        (OFF_CFS_RQ_H_NR_QUEUED, g(off.cfs_rq_h_nr_queued)),
        (OFF_CFS_RQ_H_NR_RUNNABLE, g(off.cfs_rq_h_nr_runnable)),
        (OFF_TASK_WAKEE_FLIPS, g(off.task_wakee_flips)),
        (
            OFF_TASK_WAKEE_FLIP_DECAY_TS,
            g(off.task_wakee_flip_decay_ts),
        ),
        (OFF_TASK_LAST_WAKEE, g(off.task_last_wakee)),
        (SELECT_ALL_CPUS, online_cpus()),
        (READ_INPUTS, u64::from(read_inputs())),
    ];
    let missing = off.missing_inputs();
    if !read_inputs() {
        notes.push(format!(
            "{SKIP_INPUTS_ENV}=1: select inputs of ABI 2 and 3 not read"
        ));
    } else if !missing.is_empty() {
        notes.push(format!(
            "not in BTF, so not captured (the shadow treats them as unknown): {}",
            missing.join(", ")
        ));
    }
    let field = |f: &std::collections::HashMap<String, tracefs::Field>, name: &str| {
        f.get(name).filter(|x| !x.data_loc).map_or(0, |x| x.offset)
    };
    if let Some(f) = tracefs::read_format("sched_waking") {
        v.extend([
            (TP_WAKE_PID, field(&f, "pid")),
            (TP_WAKE_PRIO, field(&f, "prio")),
            (TP_WAKE_COMM, field(&f, "comm")),
            (TP_WAKE_TARGET_CPU, field(&f, "target_cpu")),
        ]);
    }
    if let Some(f) = tracefs::read_format("sched_switch") {
        v.extend([
            (TP_SW_PREV_PID, field(&f, "prev_pid")),
            (TP_SW_PREV_PRIO, field(&f, "prev_prio")),
            (TP_SW_PREV_STATE, field(&f, "prev_state")),
            (TP_SW_NEXT_PID, field(&f, "next_pid")),
            (TP_SW_NEXT_PRIO, field(&f, "next_prio")),
            (TP_SW_NEXT_COMM, field(&f, "next_comm")),
        ]);
    }
    if let Some(f) = tracefs::read_format("sched_migrate_task") {
        v.extend([
            (TP_MIG_PID, field(&f, "pid")),
            (TP_MIG_ORIG_CPU, field(&f, "orig_cpu")),
            (TP_MIG_DEST_CPU, field(&f, "dest_cpu")),
        ]);
    }
    if !off.task_ok() {
        notes.push("task_struct offsets not found in BTF: tp_btf/raw_tp modes disabled".into());
    }
    v
}

fn attach_tracepoint(
    ebpf: &mut Ebpf,
    btf: Option<&Btf>,
    task_ok: bool,
    tp: &Tracepoint,
    best: TracepointMode,
) -> ProbeStatus {
    let name = tp.name;
    let mut fallbacks = Vec::new();
    if best > TracepointMode::Auto {
        fallbacks.push("tp_btf: skipped (--tracepoint-mode)".into());
    } else if let (Some(btf), true) = (btf, task_ok) {
        match attach_tp_btf(ebpf, tp.tp_btf, name, btf) {
            Ok(()) => return status(name, ProbeMode::TpBtf, fallbacks),
            Err(why) => fallbacks.push(why),
        }
    } else {
        fallbacks.push("tp_btf: no vmlinux BTF offsets".into());
    }
    if best > TracepointMode::RawTp {
        fallbacks.push("raw_tp: skipped (--tracepoint-mode)".into());
    } else if task_ok {
        match attach_raw_tp(ebpf, tp.raw_tp, name) {
            Ok(()) => return status(name, ProbeMode::RawTp, fallbacks),
            Err(why) => fallbacks.push(why),
        }
    }
    let prog: Option<&mut TracePoint> =
        ebpf.program_mut(tp.classic).and_then(|p| p.try_into().ok());
    match prog.map(|p| p.load().and_then(|()| p.attach("sched", name).map(|_| ()))) {
        Some(Ok(())) => status(name, ProbeMode::Tracepoint, fallbacks),
        Some(Err(e)) => ProbeStatus {
            name: name.into(),
            mode: None,
            state: ProbeState::Failed(format!("tracepoint: {}", reason(&e))),
            fallbacks,
        },
        None => ProbeStatus {
            name: name.into(),
            mode: None,
            state: ProbeState::Failed("tracepoint program missing".into()),
            fallbacks,
        },
    }
}

/// The calibration programs on `sched_waking` (see wakeviz-ebpf), only with run-time
/// statistics: the per-program floor of this kernel and the price of its clock.
fn attach_calibration(ebpf: &mut Ebpf, btf: Option<&Btf>) -> Result<(), String> {
    let btf = btf.ok_or("no kernel BTF")?;
    for name in [program::CALIB_EMPTY, program::CALIB_CLOCK] {
        let prog: &mut BtfTracePoint = ebpf
            .program_mut(name)
            .ok_or("program missing")?
            .try_into()
            .map_err(|e: aya::programs::ProgramError| reason(&e))?;
        prog.load("sched_waking", btf).map_err(|e| reason(&e))?;
        prog.attach().map_err(|e| reason(&e))?;
    }
    Ok(())
}

/// Loads and attaches one tp_btf program; `Err` is the fallback line saying why not.
pub(crate) fn attach_tp_btf(
    ebpf: &mut Ebpf,
    prog: &str,
    tp: &str,
    btf: &Btf,
) -> Result<(), String> {
    let p: Option<&mut BtfTracePoint> = ebpf.program_mut(prog).and_then(|p| p.try_into().ok());
    match p.map(|p| p.load(tp, btf).and_then(|()| p.attach().map(|_| ()))) {
        Some(Ok(())) => Ok(()),
        Some(Err(e)) => Err(format!("tp_btf: {}", reason(&e))),
        None => Err("tp_btf: program missing".into()),
    }
}

/// Loads and attaches one raw_tp program; `Err` is the fallback line saying why not.
pub(crate) fn attach_raw_tp(ebpf: &mut Ebpf, prog: &str, tp: &str) -> Result<(), String> {
    let p: Option<&mut RawTracePoint> = ebpf.program_mut(prog).and_then(|p| p.try_into().ok());
    match p.map(|p| p.load().and_then(|()| p.attach(tp).map(|_| ()))) {
        Some(Ok(())) => Ok(()),
        Some(Err(e)) => Err(format!("raw_tp: {}", reason(&e))),
        None => Err("raw_tp: program missing".into()),
    }
}

pub(crate) fn status(name: &str, mode: ProbeMode, fallbacks: Vec<String>) -> ProbeStatus {
    ProbeStatus {
        name: name.into(),
        mode: Some(mode),
        state: ProbeState::Attached,
        fallbacks,
    }
}

/// fentry + fexit on `func`, as one probe point.
fn attach_function(
    ebpf: &mut Ebpf,
    btf: Option<&Btf>,
    f: &Function,
    has_btf_func: bool,
    kallsyms: &kallsyms::Kallsyms,
) -> ProbeStatus {
    let func = f.name;
    let unavailable = |why: String| ProbeStatus {
        name: func.into(),
        mode: None,
        state: ProbeState::Unavailable(why),
        fallbacks: Vec::new(),
    };
    match kallsyms.has(func) {
        Some(false) => {
            return unavailable(format!(
                "inlined: {func} is not in /proc/kallsyms (a static function the compiler inlined)"
            ));
        }
        None => {}
        Some(true) => {}
    }
    let Some(btf) = btf else {
        return unavailable("no vmlinux BTF: fentry impossible".into());
    };
    if !has_btf_func {
        return unavailable(format!(
            "not in kernel BTF: {func} cannot be an fentry target"
        ));
    }
    let (entry_name, exit_name) = (f.fentry, f.fexit);
    let r = (|| -> Result<(), Box<dyn std::error::Error>> {
        let p: &mut FEntry = ebpf
            .program_mut(entry_name)
            .ok_or("program missing")?
            .try_into()?;
        p.load(func, btf)?;
        let x: &mut FExit = ebpf
            .program_mut(exit_name)
            .ok_or("program missing")?
            .try_into()?;
        x.load(func, btf)?;
        // Attach exit first: an entry without exit would only leave stale slots.
        x.attach()?;
        let p: &mut FEntry = ebpf
            .program_mut(entry_name)
            .ok_or("program missing")?
            .try_into()?;
        p.attach()?;
        Ok(())
    })();
    match r {
        Ok(()) => status(func, ProbeMode::Fentry, Vec::new()),
        Err(e) => {
            let why = if is_eperm(e.as_ref()) {
                "EPERM: the kernel refused to load fentry/fexit (BPF_PROG_LOAD: Operation not permitted); usual where ftrace trampolines are forbidden".to_string()
            } else {
                format!("fentry: {}", reason(e.as_ref()))
            };
            ProbeStatus {
                name: func.into(),
                mode: None,
                state: ProbeState::Failed(why),
                fallbacks: Vec::new(),
            }
        }
    }
}

/// The probe object, built from source by build.rs.
static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/wakeviz"));

/// Loads the object with `globals` set, failing with [`LoadError::ObjectMismatch`] if it lacks a
/// global the loader sets (aya would otherwise skip it and leave the offset at 0) or a program
/// userspace attaches (which would otherwise read as a degraded probe).
pub(crate) fn load_object<'a>(
    loader: &mut EbpfLoader<'a>,
    globals: &'a [(&'a str, u64)],
) -> Result<Ebpf, LoadError> {
    for (name, value) in globals {
        loader.override_global(name, value, true);
    }
    let ebpf = loader.load(OBJECT).map_err(|e| match e {
        aya::EbpfError::ParseError(aya_obj::ParseError::SymbolNotFound { name }) => {
            LoadError::ObjectMismatch {
                what: "global",
                name,
            }
        }
        e if is_eperm(&e) => LoadError::NotPermitted(reason(&e)),
        e => LoadError::Refused(reason(&e)),
    })?;
    if let Some(name) = program::ALL.iter().find(|p| ebpf.program(p).is_none()) {
        return Err(LoadError::ObjectMismatch {
            what: "program",
            name: (*name).to_string(),
        });
    }
    if let Some(name) = map::ALL.iter().find(|m| ebpf.map(m).is_none()) {
        return Err(LoadError::ObjectMismatch {
            what: "map",
            name: (*name).to_string(),
        });
    }
    Ok(ebpf)
}

pub fn load(cfg: &ProbeConfig) -> Result<Probes, LoadError> {
    load_with(cfg, &[])
}

/// Turns the kernel's BPF run-time statistics on for as long as the returned fd lives, when
/// asked; a kernel that refuses is a note, not an error, because only `--bpf-stats` needs them.
fn run_time_stats(wanted: bool, notes: &mut Vec<String>) -> Option<std::os::fd::OwnedFd> {
    if !wanted {
        return None;
    }
    aya::sys::enable_stats(aya::sys::Stats::RunTime)
        .map_err(|e| notes.push(format!("BPF run-time statistics unavailable: {e}")))
        .ok()
}

/// [`load`], with the maps in `sizes` given these entry counts (the aggregate programs' maps,
/// when they are attached beside the streaming ones).
/// A ring wakes its reader's thread once it is this fraction full: below that, the consumer's
/// main thread reads it on its own schedule (`capture`), so an idle ring costs no thread a
/// wakeup; past it, a burst still has three quarters of the ring to land in while the reader
/// wakes.
const WAKE_FRACTION: u32 = 4;

pub fn load_with(cfg: &ProbeConfig, sizes: &[(&'static str, u32)]) -> Result<Probes, LoadError> {
    raise_memlock();
    let mut notes = Vec::new();
    let stats_fd = run_time_stats(cfg.bpf_stats, &mut notes);
    if let Some(n) = tracefs::ensure_mounted() {
        notes.push(n);
    }
    let vmlinux = Path::new("/sys/kernel/btf/vmlinux");
    let kbtf = btf::KernelBtf::open(vmlinux).ok();
    if kbtf.is_none() {
        notes.push("no /sys/kernel/btf/vmlinux: classic tracepoints only".into());
    }
    let offsets = kbtf
        .as_ref()
        .map(btf::KernelBtf::offsets)
        .unwrap_or_default();
    let aya_btf = Btf::from_sys_fs().ok();
    let mut globals = globals(&offsets, &mut notes);
    globals.push((BATCHING, u64::from(cfg.batching)));
    globals.push((WAKE_BYTES, u64::from(cfg.ringbuf_bytes / WAKE_FRACTION)));
    let mut loader = EbpfLoader::new();
    loader.btf(aya_btf.as_ref());
    loader.map_max_entries(map::EVENTS, cfg.ringbuf_bytes);
    for (name, n) in sizes {
        loader.map_max_entries(name, *n);
    }
    let mut ebpf = load_object(&mut loader, &globals)?;
    let rings = rings::setup(&mut ebpf, &cfg.rings, cfg.ringbuf_bytes)?;
    if cfg.batching
        && let Err(why) = batching::load_flush(&mut ebpf)
    {
        notes.push(format!(
            "degraded: per-CPU batches cannot be flushed from userspace ({why}); a CPU that runs one task without scheduler events holds its last records until its next event, and the merge waits for them (up to its cap)"
        ));
    }

    let kallsyms = kallsyms::Kallsyms::default();
    let mut status = Vec::new();
    for tp in program::TRACEPOINTS {
        status.push(attach_tracepoint(
            &mut ebpf,
            aya_btf.as_ref(),
            offsets.task_ok(),
            tp,
            cfg.tracepoint_mode,
        ));
    }
    if status.iter().all(|s| !s.attached()) {
        let all_eperm = status
            .iter()
            .all(|s| s.state.reason().is_some_and(|r| r.contains("EPERM")));
        let why = status
            .iter()
            .filter_map(|s| s.state.reason())
            .next()
            .unwrap_or("unknown")
            .to_string();
        return Err(if all_eperm {
            LoadError::NotPermitted(why)
        } else {
            LoadError::NothingAttached(why)
        });
    }
    for func in program::FUNCTIONS {
        if cfg.function_probes {
            let has = kbtf.as_ref().is_some_and(|b| b.has_func(func.name));
            status.push(attach_function(
                &mut ebpf,
                aya_btf.as_ref(),
                func,
                has,
                &kallsyms,
            ));
        } else {
            status.push(ProbeStatus {
                name: func.name.into(),
                mode: None,
                state: ProbeState::Unavailable("disabled by --no-function-probes".into()),
                fallbacks: Vec::new(),
            });
        }
    }
    if stats_fd.is_some()
        && let Err(e) = attach_calibration(&mut ebpf, aya_btf.as_ref())
    {
        notes.push(format!(
            "BPF cost floor not measured (calibration program): {e}"
        ));
    }
    let attached_in =
        |status: &[ProbeStatus], n: &str| status.iter().any(|s| s.name == n && s.attached());
    let attached = |n: &str| attached_in(&status, n);
    let mut scan_source = if attached(program::SELECT_IDLE_CPU.name) {
        ScanSource::SelectIdleCpu
    } else if attached(program::SELECT_TASK_RQ_FAIR.name) {
        ScanSource::SelectTaskRqFair
    } else {
        ScanSource::None
    };
    let mut scan_points = None;
    if let Some(points) = &cfg.scan_points
        && scan_source == ScanSource::SelectTaskRqFair
    {
        let (st, r) = scan::attach(&mut ebpf, points);
        status.extend(st);
        match r {
            Ok(()) => {
                scan_source = ScanSource::DebugInfo;
                scan_points = Some(points.clone());
            }
            Err(why) => notes.push(format!(
                "idle scan not measured (debug-info probes): {why}; the scan figures time the whole select_task_rq_fair"
            )),
        }
    }
    let attached = |n: &str| attached_in(&status, n);
    let waking_btf = status
        .iter()
        .any(|s| s.name == "sched_waking" && s.attached() && s.mode == Some(ProbeMode::TpBtf));
    if !attached(program::SELECT_TASK_RQ_FAIR.name)
        && waking_btf
        && offsets.rq_ok()
        && read_inputs()
    {
        match waking_inputs_on(&mut ebpf) {
            Ok(()) => notes.push(match wake_frames::load(&mut ebpf, &kallsyms) {
                Ok(_) => "select_task_rq_fair not attached: the sched_waking probe reads the placement's inputs (affinity, loads, wake_wide flips, run-queue state) for the shadow, and WF_SYNC from the waker's stack".into(),
                Err(why) => format!("select_task_rq_fair not attached: the sched_waking probe reads the placement's inputs (affinity, loads, wake_wide flips, run-queue state) for the shadow; WF_SYNC stays unknown ({why})"),
            }),
            Err(why) => notes.push(format!("select inputs at sched_waking not read: {why}")),
        }
    }
    if attached(program::SELECT_TASK_RQ_FAIR.name) && !offsets.rq_ok() {
        notes.push("run-queue offsets not in BTF: kernel inputs (nr_running, nr_idle_scan, has_idle_cores) not captured".into());
    }
    Ok(Probes {
        ebpf,
        _stats_fd: stats_fd,
        status,
        scan_source,
        scan_points,
        notes,
        rings,
        ring_plan: cfg.rings.clone(),
        batching: cfg.batching,
    })
}

/// Asks the `sched_waking` tp_btf probe to read the select inputs itself
/// (`wakeviz_common::SELECT_AT_WAKING`).
fn waking_inputs_on(ebpf: &mut Ebpf) -> Result<(), String> {
    let m = ebpf
        .map_mut(map::WAKING_INPUTS)
        .ok_or("no WAKING_INPUTS map")?;
    let mut a: aya::maps::Array<&mut aya::maps::MapData, u32> =
        aya::maps::Array::try_from(m).map_err(|e| reason(&e))?;
    a.set(0, 1, 0).map_err(|e| reason(&e))
}

/// Kernel-measured cost of one program (BPF_ENABLE_STATS), as bpftop reads it, and what
/// loading it cost.
#[derive(Clone, Debug)]
pub struct RunStat {
    pub program: String,
    pub run_count: u64,
    pub run_time_ns: u64,
    /// Instructions the verifier processed to load the program (`verified_insns`, 5.16+): the
    /// load's CPU cost, and how near the program is to the kernel's limit of one million, past
    /// which the kernel refuses it.
    pub verified_insns: Option<u32>,
}

/// `recursion_misses` of one program: times the kernel skipped it because a BPF program of the
/// same kind was already running on that CPU (an interrupt waking a task while our probe ran).
/// Those events never reach the probe, so they are losses to report like drops. aya does not
/// expose the field, hence the direct BPF_OBJ_GET_INFO_BY_FD.
pub(crate) fn recursion_misses(p: &aya::programs::Program) -> Option<u64> {
    use aya_obj::generated::bpf_prog_info;
    use std::os::fd::{AsFd as _, AsRawFd as _};

    let info_fd = p.fd().ok()?;
    let fd = info_fd.as_fd().as_raw_fd();
    // SAFETY: bpf_prog_info is plain data; all-zero is a valid value.
    let mut info: bpf_prog_info = unsafe { std::mem::zeroed() };
    #[repr(C)]
    struct InfoAttr {
        bpf_fd: u32,
        info_len: u32,
        info: u64,
    }
    let mut attr = InfoAttr {
        bpf_fd: u32::try_from(fd).ok()?,
        info_len: size_of::<bpf_prog_info>() as u32,
        info: std::ptr::from_mut(&mut info) as u64,
    };
    const BPF_OBJ_GET_INFO_BY_FD: libc::c_long = 15;
    // SAFETY: the attr points to a live, correctly sized bpf_prog_info; the kernel writes at most
    // info_len bytes into it and reads the three attr fields (the rest of bpf_attr is unused).
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_OBJ_GET_INFO_BY_FD,
            std::ptr::from_mut(&mut attr),
            size_of::<InfoAttr>(),
        )
    };
    (r == 0).then_some(info.recursion_misses)
}

impl Probes {
    /// Events lost before reaching a probe because the kernel does not nest BPF programs.
    pub fn recursion_misses(&self) -> u64 {
        self.ebpf
            .programs()
            .filter_map(|(_, p)| recursion_misses(p))
            .sum()
    }

    /// Run counts and times of the attached programs (zero unless stats were enabled).
    pub fn run_stats(&self) -> Vec<RunStat> {
        run_stats_of(&self.ebpf)
    }

    /// Detaches the wakeup-side programs first and `sched_waking`'s last. Dropping the object
    /// detaches in its map order, and a detach under a 16-vCPU TCG guest took 190 ms: every
    /// `sched_wakeup` of that window whose `sched_waking` program was already gone was an
    /// unmatched wakeup (94 at the end of one nps2 capture). This order leaves trailing
    /// wakings without a wakeup instead, which the join drops as it drops any unfinished one.
    pub fn detach_wakeup_side_first(&mut self) {
        use aya::programs::Program;
        let order = program::TRACEPOINTS
            .iter()
            .filter(|t| t.name != "sched_waking")
            .chain(
                program::TRACEPOINTS
                    .iter()
                    .filter(|t| t.name == "sched_waking"),
            );
        for t in order {
            for name in [t.tp_btf, t.raw_tp, t.classic] {
                // Unload errors only mean "not loaded": the drop below detaches what is left.
                let _ = match self.ebpf.program_mut(name) {
                    Some(Program::BtfTracePoint(p)) => p.unload(),
                    Some(Program::RawTracePoint(p)) => p.unload(),
                    Some(Program::TracePoint(p)) => p.unload(),
                    _ => Ok(()),
                };
            }
        }
    }
}

impl Probes {
    /// Detaches the function probes, fentry before fexit so a call under way keeps its exit.
    pub fn detach_functions(&mut self) {
        use aya::programs::Program;
        for f in program::FUNCTIONS {
            for name in [f.fentry, f.fexit] {
                // As in `detach_wakeup_side_first`: an error only means "not loaded".
                let _ = match self.ebpf.program_mut(name) {
                    Some(Program::FEntry(p)) => p.unload(),
                    Some(Program::FExit(p)) => p.unload(),
                    _ => Ok(()),
                };
            }
        }
    }
}

/// Run counts and times of the loaded programs of `ebpf` (zero unless stats were enabled), with
/// their verifier cost.
pub(crate) fn run_stats_of(ebpf: &Ebpf) -> Vec<RunStat> {
    ebpf.programs()
        .filter_map(|(name, p)| {
            let info = p.info().ok()?;
            let verified_insns = info.verified_instruction_count();
            (info.run_count() > 0 || verified_insns.is_some()).then(|| RunStat {
                program: name.to_string(),
                run_count: info.run_count(),
                run_time_ns: u64::try_from(info.run_time().as_nanos()).unwrap_or(u64::MAX),
                verified_insns,
            })
        })
        .collect()
}

/// Per-program cost lines plus the cost of one wakeup's whole path (every program that runs
/// for a wakeup: waking, select entry/exit, migrate, wakeup), as `bpf: ...` lines.
pub fn describe_run_stats(stats: &[RunStat]) -> String {
    let mut s = String::new();
    for r in stats.iter().filter(|r| r.run_count > 0) {
        let _ = writeln!(
            s,
            "bpf: {:<32} {:>10} runs {:>8.1} ns/run",
            r.program,
            r.run_count,
            r.run_time_ns as f64 / r.run_count.max(1) as f64
        );
    }
    let on_path = |n: &str| {
        [
            "sched_waking",
            "sched_wakeup",
            "select_task_rq_fair",
            "sched_migrate_task",
        ]
        .iter()
        .any(|p| n.ends_with(p))
            && !n.ends_with("sched_wakeup_new")
    };
    let (path_ns, path_runs) = stats
        .iter()
        .filter(|r| on_path(&r.program))
        .fold((0u64, 0u64), |(t, n), r| {
            (t + r.run_time_ns, n + r.run_count)
        });
    let wakeups: u64 = stats
        .iter()
        .filter(|r| r.program.ends_with("_sched_wakeup"))
        .map(|r| r.run_count)
        .sum();
    if wakeups > 0 {
        let _ = writeln!(
            s,
            "bpf: per wakeup path {:.1} ns (waking + select + migrate + wakeup programs over {wakeups} wakeups)",
            path_ns as f64 / wakeups as f64
        );
    }
    let per_run = |name: &str| {
        stats
            .iter()
            .find(|r| r.program == name && r.run_count > 0)
            .map(|r| r.run_time_ns as f64 / r.run_count as f64)
    };
    if let Some(floor) = per_run(program::CALIB_EMPTY)
        && wakeups > 0
    {
        let per_wakeup = path_runs as f64 / wakeups as f64;
        let _ = writeln!(
            s,
            "bpf: floor {floor:.1} ns/run (an empty program on sched_waking: dispatch, statistics, mitigations); {per_wakeup:.2} programs per wakeup; per wakeup path above the floor {:.1} ns",
            (path_ns as f64 - floor * path_runs as f64).max(0.0) / wakeups as f64
        );
        if let Some(clock) = per_run(program::CALIB_CLOCK) {
            let _ = writeln!(
                s,
                "bpf: clock {:.1} ns per bpf_ktime_get_ns (calib_clock minus the floor); floor + clock for {per_wakeup:.2} timestamped records per wakeup: {:.1} ns",
                (clock - floor).max(0.0),
                clock * per_wakeup
            );
        }
    }
    let mut verified: Vec<(&str, u32)> = stats
        .iter()
        .filter_map(|r| Some((r.program.as_str(), r.verified_insns?)))
        .collect();
    verified.sort_unstable();
    for (p, n) in &verified {
        let _ = wakeviz_common::verifier::write_line(&mut s, p, *n);
    }
    if !verified.is_empty() {
        let _ = writeln!(
            s,
            "bpf: the kernel refuses a program whose verification passes {} instructions",
            wakeviz_common::VERIFIER_LIMIT_INSNS
        );
    }
    s
}

/// A table of probe outcomes for the terminal.
pub fn describe(status: &[ProbeStatus]) -> String {
    let mut s = String::new();
    let w = status
        .iter()
        .map(|p| p.name.len())
        .max()
        .unwrap_or(0)
        .max(20);
    for p in status {
        let mode = p.mode.map_or("-", wakeviz_core::format::ProbeMode::name);
        let state = match &p.state {
            ProbeState::Attached => "attached".to_string(),
            ProbeState::Failed(r) => format!("FAILED: {r}"),
            ProbeState::Unavailable(r) => format!("unavailable: {r}"),
        };
        let _ = writeln!(s, "  {:<w$} {:<10} {}", p.name, mode, state);
        for f in &p.fallbacks {
            let _ = writeln!(s, "  {:<w$} {:<10} (tried {f})", "", "");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(program: &str, run_count: u64, run_time_ns: u64) -> RunStat {
        RunStat {
            program: program.into(),
            run_count,
            run_time_ns,
            verified_insns: None,
        }
    }

    #[test]
    fn run_stats_path_floor_and_clock() {
        let s = describe_run_stats(&[
            stat("btf_sched_waking", 1000, 180_000),
            stat("btf_sched_wakeup", 1000, 160_000),
            stat("btf_sched_wakeup_new", 10, 7_000),
            stat("btf_sched_switch", 2000, 340_000),
            stat("calib_empty", 1000, 50_000),
            stat("calib_clock", 1000, 90_000),
        ]);
        // Path: waking + wakeup (not wakeup_new, not switch, not the calibration programs).
        assert!(s.contains("per wakeup path 340.0 ns"), "{s}");
        // Above the floor: 340 - 2 x 50.
        assert!(s.contains("floor 50.0 ns/run"), "{s}");
        assert!(s.contains("2.00 programs per wakeup"), "{s}");
        assert!(s.contains("above the floor 240.0 ns"), "{s}");
        assert!(s.contains("clock 40.0 ns per bpf_ktime_get_ns"), "{s}");
        assert!(s.contains("per wakeup: 180.0 ns"), "{s}");
    }

    /// The embedded object defines every name of the shared lists (no kernel needed: aya patches
    /// globals before its first syscall, and parsing is pure).
    #[test]
    fn object_has_every_shared_name() {
        let mut obj = aya_obj::Object::parse(OBJECT).unwrap();
        let zero = 0u64.to_ne_bytes();
        let all = ALL.iter().map(|n| (*n, (&zero[..], true))).collect();
        obj.patch_map_data(all).unwrap();
        for p in program::ALL {
            assert!(obj.programs.contains_key(*p), "program {p} missing");
        }
        for m in map::ALL {
            assert!(obj.maps.contains_key(*m), "map {m} missing");
        }
    }

    /// A global the loader sets but the object lacks stops the load with one line naming it.
    #[test]
    fn missing_global_fails_loudly() {
        let mut loader = EbpfLoader::new();
        let err = load_object(&mut loader, &[(OFF_TASK_PID, 8), ("OFF_TASK_TYPO", 8)])
            .err()
            .unwrap();
        assert!(
            matches!(&err, LoadError::ObjectMismatch { what: "global", name } if name == "OFF_TASK_TYPO"),
            "{err}"
        );
        let line = err.to_string();
        assert!(
            !line.contains('\n') && line.contains("`OFF_TASK_TYPO`"),
            "{line}"
        );
    }

    /// A program that never ran has no cost line, but its load cost is listed like the others.
    #[test]
    fn verifier_cost_of_every_loaded_program() {
        let s = describe_run_stats(&[
            RunStat {
                verified_insns: Some(26_237),
                ..stat("btf_sched_waking", 10, 1_000)
            },
            RunStat {
                verified_insns: Some(1_189),
                ..stat("btf_sched_wakeup_new", 0, 0)
            },
        ]);
        assert!(!s.contains("bpf: btf_sched_wakeup_new"), "{s}");
        for (p, n) in [("btf_sched_waking", 26237), ("btf_sched_wakeup_new", 1189)] {
            let l = s
                .lines()
                .filter_map(wakeviz_common::verifier::parse_line)
                .find(|&(q, _)| q == p)
                .unwrap_or_else(|| panic!("no verifier line for {p}:\n{s}"));
            assert_eq!(l.1, n, "{s}");
        }
    }

    #[test]
    fn run_stats_without_calibration() {
        let s = describe_run_stats(&[stat("raw_sched_waking", 10, 1_000)]);
        assert!(!s.contains("floor"), "{s}");
        assert!(!s.contains("per wakeup path"), "{s}");
    }
}
