//! Values userspace sets at load time (`EbpfLoader::set_global`), read with volatile loads so the
//! compiler cannot fold the defaults in. Offsets come from the running kernel's BTF or from the
//! tracefs `format` files; 0 means "unknown, do not read".
use aya_ebpf::Global;

macro_rules! globals {
    ($($name:ident),* $(,)?) => {
        $( #[unsafe(no_mangle)] pub static $name: Global<u64> = Global::new(0); )*
    };
}

globals!(
    // struct task_struct
    OFF_TASK_PID,
    OFF_TASK_PRIO,
    OFF_TASK_COMM,
    OFF_TASK_CPU,
    OFF_TASK_SE_CFS_RQ,
    // struct cfs_rq / rq / sched_domain / sched_domain_shared
    OFF_CFS_RQ_RQ,
    OFF_RQ_NR_RUNNING,
    OFF_RQ_SD,
    OFF_RQ_CPU,
    OFF_SD_PARENT,
    OFF_SD_SHARED,
    OFF_SDS_HAS_IDLE_CORES,
    OFF_SDS_NR_IDLE_SCAN,
    // classic tracepoint records (offsets inside the record, from tracefs format files)
    TP_WAKE_PID,
    TP_WAKE_PRIO,
    TP_WAKE_COMM,
    TP_WAKE_TARGET_CPU,
    TP_SW_PREV_PID,
    TP_SW_PREV_PRIO,
    TP_SW_PREV_STATE,
    TP_SW_NEXT_PID,
    TP_SW_NEXT_PRIO,
    TP_SW_NEXT_COMM,
    TP_MIG_PID,
    TP_MIG_ORIG_CPU,
    TP_MIG_DEST_CPU,
);

/// 1 when the function probes may read run-queue state (all rq/sd offsets resolved).
#[unsafe(no_mangle)]
pub static READ_RQ: Global<u64> = Global::new(0);
