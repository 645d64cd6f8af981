//! The userspace half of per-CPU batching (`wakeviz_common::batch`): the flush program, run on
//! a chosen CPU through `BPF_PROG_TEST_RUN` with `BPF_F_TEST_RUN_ON_CPU` (an IPI to that CPU,
//! Linux 5.10+), sends the batch that CPU holds.
use aya::{
    Ebpf,
    programs::{Program, RawTracePoint, RawTracePointRunOptions, TestRun as _},
};
use wakeviz_common::{batch::FLUSH_BUSY, names::program};

use super::{Probes, reason};

/// Loads the flush program (never attached) and runs it once on this CPU, which proves the
/// kernel can run it on a chosen CPU.
pub(super) fn load_flush(ebpf: &mut Ebpf) -> Result<(), String> {
    let p: &mut RawTracePoint = ebpf
        .program_mut(program::FLUSH_BATCH)
        .ok_or("flush program missing")?
        .try_into()
        .map_err(|e: aya::programs::ProgramError| reason(&e))?;
    p.load().map_err(|e| format!("loading: {}", reason(&e)))?;
    // SAFETY: sched_getcpu has no preconditions.
    let here = u32::try_from(unsafe { libc::sched_getcpu() }).unwrap_or(0);
    flush_on(ebpf, here).map(|_| ())
}

/// Sends `cpu`'s batch. `Ok(false)`: a probe on that CPU was writing the batch when the flush
/// interrupted it; nothing was sent, try again later.
fn flush_on(ebpf: &Ebpf, cpu: u32) -> Result<bool, String> {
    let Some(Program::RawTracePoint(p)) = ebpf.program(program::FLUSH_BATCH) else {
        return Err("flush program not loaded".into());
    };
    let opts = RawTracePointRunOptions {
        cpu: Some(cpu),
        ..RawTracePointRunOptions::new()
    };
    let r = p
        .test_run(opts)
        .map_err(|e| format!("running it on CPU {cpu}: {}", reason(&e)))?;
    Ok(r.return_value != FLUSH_BUSY)
}

impl Probes {
    /// Sends `cpu`'s batch (see [`flush_on`]); `Err` when batching is off or the kernel refuses.
    pub fn flush_batch(&self, cpu: u32) -> Result<bool, String> {
        if !self.batching {
            return Err("batching is off".into());
        }
        flush_on(&self.ebpf, cpu)
    }

    /// Detaches every probe (wakeup side first), waits for programs already running to
    /// finish, then sends every CPU's batch, so nothing captured stays in the kernel. Returns
    /// the CPUs whose batch could not be sent, with why.
    pub fn detach_and_flush(&mut self) -> Vec<(u32, String)> {
        self.detach_wakeup_side_first();
        self.detach_functions();
        if !self.batching {
            return Vec::new();
        }
        // A program that started before the detach may still be adding to its batch.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let cpus = aya::util::online_cpus().unwrap_or_default();
        let mut failed = Vec::new();
        for cpu in cpus {
            // Nothing runs any more, so `busy` can only be a program finishing: retry briefly.
            let mut outcome = Ok(false);
            for _ in 0..5 {
                outcome = self.flush_batch(cpu);
                if !matches!(outcome, Ok(false)) {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            match outcome {
                Ok(true) => {}
                Ok(false) => failed.push((cpu, "its batch stayed busy".to_string())),
                Err(e) => failed.push((cpu, e)),
            }
        }
        failed
    }
}
