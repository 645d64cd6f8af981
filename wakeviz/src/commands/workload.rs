//! Small, known workloads for tests and the VM suite: wakeups whose waker, wakee and CPUs are
//! known in advance, so a capture can be checked against them.
use std::{
    io::{Read, Write},
    os::fd::FromRawFd,
};

use anyhow::{Context as _, bail};

use crate::cli::Workload;

/// Names the calling thread (`comm`), as the kernel's tracepoints will report it.
pub fn set_comm(name: &str) -> anyhow::Result<()> {
    let mut buf = [0u8; 16];
    let n = name.len().min(15);
    buf[..n].copy_from_slice(&name.as_bytes()[..n]);
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes from a valid buffer.
    let r = unsafe { libc::prctl(libc::PR_SET_NAME, buf.as_ptr() as libc::c_ulong, 0, 0, 0) };
    if r != 0 {
        bail!("prctl(PR_SET_NAME): {}", std::io::Error::last_os_error());
    }
    Ok(())
}

/// Pins the calling thread to one CPU.
pub fn pin(cpu: usize) -> anyhow::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_ZERO/CPU_SET only write inside it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above; CPU_SET ignores CPUs beyond the set's size.
    unsafe {
        libc::CPU_ZERO(&mut set);
        libc::CPU_SET(cpu, &mut set);
    }
    // SAFETY: valid pointer and size for the calling thread (pid 0).
    let r = unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) };
    if r != 0 {
        bail!(
            "cannot pin to CPU {cpu}: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

fn pipe() -> anyhow::Result<(std::fs::File, std::fs::File)> {
    let mut fds = [0; 2];
    // SAFETY: valid pointer to two ints.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        bail!("pipe: {}", std::io::Error::last_os_error());
    }
    // SAFETY: both fds were just created and are owned by nobody else.
    Ok(unsafe {
        (
            std::fs::File::from_raw_fd(fds[0]),
            std::fs::File::from_raw_fd(fds[1]),
        )
    })
}

/// Runs the ping-pong; returns the thread ids (waker, wakee) so tests can find them.
pub fn pingpong(
    waker_cpu: Option<usize>,
    wakee_cpu: Option<usize>,
    iterations: u64,
    comm: &str,
    pause: std::time::Duration,
) -> anyhow::Result<PingPong> {
    let (mut a_rx, mut a_tx) = pipe()?;
    let (mut b_rx, mut b_tx) = pipe()?;
    let comm2 = comm.to_string();
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let peer = std::thread::spawn(move || -> anyhow::Result<u64> {
        set_comm(&comm2)?;
        if let Some(c) = wakee_cpu {
            pin(c)?;
        }
        // SAFETY: gettid has no preconditions.
        let _ = tid_tx.send(unsafe { libc::gettid() } as u32);
        let mut byte = [0u8; 1];
        let before = voluntary_switches()?;
        for _ in 0..iterations {
            a_rx.read_exact(&mut byte)?;
            b_tx.write_all(&byte)?;
        }
        Ok(voluntary_switches()? - before)
    });
    set_comm(comm)?;
    if let Some(c) = waker_cpu {
        pin(c)?;
    }
    let wakee = tid_rx.recv().context("ping-pong peer thread died")?;
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() } as u32;
    let mut byte = [1u8; 1];
    let before = voluntary_switches()?;
    for _ in 0..iterations {
        a_tx.write_all(&byte)?;
        b_rx.read_exact(&mut byte)?;
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
    }
    let blocked = voluntary_switches()? - before;
    let peer_blocked = match peer.join() {
        Ok(r) => r?,
        Err(_) => bail!("ping-pong peer thread panicked"),
    };
    Ok(PingPong {
        waker_tid: me,
        wakee_tid: wakee,
        waker_blocked: blocked,
        wakee_blocked: peer_blocked,
    })
}

/// What a ping-pong did, by the kernel's own counts: each time one side blocked in its read
/// (a voluntary context switch inside the loop), the other side's write woke it, so a capture
/// must show that many wakings of it by its peer, whatever the machine's timing made of the
/// round trips.
#[derive(Clone, Copy, Debug)]
pub struct PingPong {
    pub waker_tid: u32,
    pub wakee_tid: u32,
    pub waker_blocked: u64,
    pub wakee_blocked: u64,
}

/// This thread's `voluntary_ctxt_switches` from `/proc/thread-self/status`.
fn voluntary_switches() -> anyhow::Result<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/status")
        .context("reading /proc/thread-self/status")?;
    s.lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|v| v.trim().parse().ok())
        .context("no voluntary_ctxt_switches in /proc/thread-self/status")
}

/// One receiver of a fan-out group: reads `loops` messages, answering each on `ack` if given.
fn receiver(
    mut rx: std::fs::File,
    mut ack: Option<std::fs::File>,
    loops: u64,
    comm: String,
) -> std::thread::JoinHandle<anyhow::Result<()>> {
    std::thread::spawn(move || -> anyhow::Result<()> {
        set_comm(&comm)?;
        let mut buf = [0u8; 64];
        for _ in 0..loops {
            rx.read_exact(&mut buf)?;
            if let Some(a) = ack.as_mut() {
                a.write_all(&[1])?;
            }
        }
        Ok(())
    })
}

/// `groups` senders, each writing `loops` messages to each of its `receivers`; with `ack`,
/// each round waits for every receiver's answer.
pub fn fanout(
    groups: usize,
    receivers: usize,
    loops: u64,
    comm: &str,
    ack: bool,
) -> anyhow::Result<()> {
    let mut handles = Vec::new();
    for _ in 0..groups {
        let mut txs = Vec::new();
        let (mut acks, ack_tx) = if ack {
            let (r, w) = pipe()?;
            (Some(r), Some(w))
        } else {
            (None, None)
        };
        for _ in 0..receivers {
            let (rx, tx) = pipe()?;
            txs.push(tx);
            let answer = ack_tx.as_ref().map(std::fs::File::try_clone).transpose()?;
            handles.push(receiver(rx, answer, loops, comm.to_string()));
        }
        drop(ack_tx);
        let c = comm.to_string();
        handles.push(std::thread::spawn(move || -> anyhow::Result<()> {
            set_comm(&c)?;
            let buf = [7u8; 64];
            let mut answers = vec![0u8; txs.len()];
            for _ in 0..loops {
                for tx in &mut txs {
                    tx.write_all(&buf)?;
                }
                if let Some(a) = acks.as_mut() {
                    a.read_exact(&mut answers)?;
                }
            }
            Ok(())
        }));
    }
    for h in handles {
        match h.join() {
            Ok(r) => r?,
            Err(_) => bail!("fan-out thread panicked"),
        }
    }
    Ok(())
}

pub fn run(w: &Workload) -> anyhow::Result<std::process::ExitCode> {
    match w {
        Workload::Simulate {
            file,
            policy,
            scope,
            seed,
            report,
        } => {
            return super::simulate::run(&super::simulate::Request {
                file,
                policy,
                scope: scope.as_ref(),
                seed: *seed,
                report: *report,
            });
        }
        Workload::Extract {
            file,
            scope,
            json,
            rt_app,
            force,
        } => {
            return super::extract::run(&super::extract::Request {
                file,
                scope: scope.as_ref(),
                json: json.as_deref(),
                rt_app: rt_app.as_deref(),
                force: *force,
            });
        }
        Workload::Pingpong {
            waker_cpu,
            wakee_cpu,
            iterations,
            comm,
            pause_us,
        } => {
            let pause = std::time::Duration::from_micros(*pause_us);
            let p = pingpong(*waker_cpu, *wakee_cpu, *iterations, comm, pause)?;
            println!(
                "pingpong done: waker tid {}, wakee tid {}, {iterations} round trips; \
                 waker blocked {} times, wakee blocked {} times",
                p.waker_tid, p.wakee_tid, p.waker_blocked, p.wakee_blocked
            );
        }
        Workload::Fanout {
            groups,
            receivers,
            loops,
            comm,
            ack,
        } => {
            fanout(*groups, *receivers, *loops, comm, *ack)?;
            let answered = if *ack { ", answered" } else { "" };
            println!(
                "fanout done: {groups} groups x {receivers} receivers x {loops} loops{answered}"
            );
        }
    }
    Ok(std::process::ExitCode::SUCCESS)
}
