//! The ABI-2 inputs of `select_task_rq_fair` (see `wakeviz_common::SelectInputs`): what
//! `wake_affine_weight`, the delayed-dequeue sync test, the per-CPU-kthread stacking rule and
//! the affinity mask need. Each read is skipped when its offset is unknown (0), and reported
//! through the returned `exact` bits only when it succeeded. Integer fields of the wakee and of
//! `current` (both BTF-typed pointers in an fentry program) are direct loads, which the
//! verifier checks against the kernel's BTF; pointer fields and everything reached through
//! the run queues go through `bpf_probe_read_kernel`. The guest measured the reads at 1.35x
//! the function probes' cost without them, when all were helper calls (docs/user/shadow-policies.md).
use aya_ebpf::helpers::bpf_jiffies64;
use wakeviz_common::{SelectFlips, SelectInputs, SelectMask, exact};

use crate::{
    globals::*,
    kread::{Access, at, at0, field},
};

/// An integer field of the wakee or of `current` (see the module docs).
#[inline(always)]
fn int<T: Copy>(task: u64, off: u64) -> Option<T> {
    field::<T>(Access::Direct, task, off)
}

/// `PF_KTHREAD` (include/linux/sched.h, unchanged since 2.6).
const PF_KTHREAD: u32 = 0x0020_0000;

/// `cfs_rq_load_avg(cfs)`.
#[inline(always)]
fn cfs_load(cfs: u64) -> Option<u64> {
    at::<u64>(cfs, OFF_CFS_RQ_LOAD_AVG.load())
}

/// `&rq->cfs`.
#[inline(always)]
fn root_cfs(rq: u64) -> u64 {
    if rq == 0 {
        return 0;
    }
    let off = OFF_RQ_CFS.load();
    // `cfs` is never at offset 0 of `struct rq` (`__lock` and `nr_running` come first).
    if off == 0 { 0 } else { rq + off }
}

/// `task_h_load(task)` from its own cfs_rq `cfs` (without `CONFIG_FAIR_GROUP_SCHED`, i.e. no
/// `h_load` field, the task's own `load_avg`).
#[inline(always)]
fn task_h_load(task: u64, cfs: u64) -> Option<u64> {
    let la = int::<u64>(task, OFF_TASK_SE_LOAD_AVG.load())?;
    if OFF_CFS_RQ_H_LOAD.load() == 0 {
        return Some(la);
    }
    let h = at::<u64>(cfs, OFF_CFS_RQ_H_LOAD.load())?;
    let cl = cfs_load(cfs)?;
    // Loads are below 2^24 each here: the product cannot wrap (and BPF has no 128-bit
    // multiply for a saturating one).
    Some(la.wrapping_mul(h) / cl.wrapping_add(1).max(1))
}

#[inline(always)]
fn sat(v: u64) -> u32 {
    v.min(u64::from(u32::MAX - 1)) as u32
}

/// `cfs_h_nr_delayed(rq)` as the wake_up_sync fix defines it, `h_nr_queued - h_nr_runnable`
/// (6.14+, and the 6.12.y stable kernels that took the fix: Debian's 6.12.117 BTF has both
/// fields), else the 6.13 `h_nr_delayed` field.
#[inline(always)]
fn h_nr_delayed(cfs: u64) -> Option<u32> {
    let (oq, or) = (
        OFF_CFS_RQ_H_NR_QUEUED.load(),
        OFF_CFS_RQ_H_NR_RUNNABLE.load(),
    );
    if oq != 0 && or != 0 {
        let q = at::<u32>(cfs, oq)?;
        let r = at::<u32>(cfs, or)?;
        return Some(q.saturating_sub(r));
    }
    at::<u32>(cfs, OFF_CFS_RQ_H_NR_DELAYED.load())
}

/// Fills `out` (and `mask` for a restricted task); returns the `exact` bits of what was read.
#[inline(always)]
pub fn read(
    task: u64,
    cur: u64,
    cur_cfs: u64,
    rq: u64,
    prev_rq: u64,
    out: &mut SelectInputs,
    mask: &mut SelectMask,
) -> u32 {
    let mut bits = 0;
    let (wcfs, pcfs) = (root_cfs(rq), root_cfs(prev_rq));
    if let (Some(w), Some(p)) = (cfs_load(wcfs), cfs_load(pcfs)) {
        out.waker_load = sat(w);
        out.prev_load = sat(p);
        bits |= exact::LOADS;
    }
    let cap = OFF_RQ_CPU_CAPACITY.load();
    if let (Some(w), Some(p)) = (at::<u64>(rq, cap), at::<u64>(prev_rq, cap)) {
        out.waker_capacity = sat(w);
        out.prev_capacity = sat(p);
        bits |= exact::CAPACITY;
    }
    let tcfs = at::<u64>(task, OFF_TASK_SE_CFS_RQ.load()).unwrap_or(0);
    if let Some(h) = task_h_load(task, tcfs) {
        out.task_h_load = sat(h);
        bits |= exact::TASK_H_LOAD;
        if tcfs != pcfs {
            bits |= exact::TASK_IN_GROUP;
        }
    }
    if let Some(h) = task_h_load(cur, cur_cfs) {
        out.waker_h_load = sat(h);
        bits |= exact::WAKER_H_LOAD;
    }
    if let Some(d) = h_nr_delayed(wcfs) {
        out.waker_h_nr_delayed = d;
        bits |= exact::H_NR_DELAYED;
    }
    let ncpus = OFF_TASK_NR_CPUS_ALLOWED.load();
    if let (Some(f), Some(n)) = (
        int::<u32>(cur, OFF_TASK_FLAGS.load()),
        int::<u32>(cur, ncpus),
    ) {
        out.waker_kthread = u32::from(f & PF_KTHREAD != 0);
        out.waker_nr_cpus_allowed = n;
        bits |= exact::WAKER_KTHREAD;
    }
    if let Some(n) = int::<u32>(task, ncpus) {
        out.task_nr_cpus_allowed = n;
        bits |= exact::TASK_CPUS;
        let all = SELECT_ALL_CPUS.load();
        if u64::from(n) < all && all <= 256 {
            let m = at::<u64>(task, OFF_TASK_CPUS_PTR.load())
                // `struct cpumask` starts with its bits, hence offset 0.
                .and_then(|ptr| at0::<SelectMask>(ptr, 0));
            if let Some(m) = m {
                *mask = m;
                bits |= exact::MASK;
            }
        }
    }
    bits
}

/// The `record_wakee()` state `wake_wide()` reads, as it is before the kernel updates it for
/// this wakeup (see `wakeviz_common::SelectFlips`); [`exact::FLIPS`] when all of it was read.
#[inline(always)]
pub fn read_flips(task: u64, cur: u64, out: &mut SelectFlips) -> u32 {
    let (of, od, ol) = (
        OFF_TASK_WAKEE_FLIPS.load(),
        OFF_TASK_WAKEE_FLIP_DECAY_TS.load(),
        OFF_TASK_LAST_WAKEE.load(),
    );
    let (Some(wf), Some(tf), Some(decay), Some(last)) = (
        int::<u32>(cur, of),
        int::<u32>(task, of),
        int::<u64>(cur, od),
        // A pointer: read as a plain number, compared with `task`'s address.
        at::<u64>(cur, ol),
    ) else {
        return 0;
    };
    out.waker_wakee_flips = wf;
    out.task_wakee_flips = tf;
    // Low halves: userspace compares them with wrapping arithmetic.
    out.waker_flip_decay_jiffies = decay as u32;
    // SAFETY: helper without preconditions (5.5+; the select probe needs fentry, 5.5+ too).
    out.jiffies = unsafe { bpf_jiffies64() } as u32;
    out.waker_last_wakee_is_task = u32::from(last == task);
    exact::FLIPS
}
