//! Names the probes and userspace must agree on: the globals the loader sets, the programs it
//! attaches, the maps it opens. A misspelt global used to leave an offset at 0 without a word.
//!
//! Each list is written once, here, as a macro that hands its identifiers to a callback macro.
//! This module turns them into the `&str` constants userspace uses; the probe crate declares its
//! globals from the same list and names every listed program and map in code, so a name changed
//! on one side only is a compile error (the symbol names are the Rust identifiers: the globals
//! and programs are `#[no_mangle]`, aya's `#[map]` exports a static under its own name).

/// The globals the loader sets (`EbpfLoader::override_global`), all `u64`: field offsets from
/// the running kernel's BTF or from the tracefs `format` files (0 = unknown, do not read), and
/// `READ_RQ`. Calls `$cb! { NAME, ... }`.
#[macro_export]
macro_rules! for_each_global {
    ($cb:ident) => {
        $cb! {
            // struct task_struct
            OFF_TASK_PID,
            OFF_TASK_TGID,
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
            // ABI-2 select inputs (WA_WEIGHT loads, delayed dequeue, kthread, affinity)
            OFF_TASK_SE_LOAD_AVG,
            OFF_TASK_FLAGS,
            OFF_TASK_NR_CPUS_ALLOWED,
            OFF_TASK_CPUS_PTR,
            OFF_RQ_CFS,
            OFF_RQ_CPU_CAPACITY,
            OFF_CFS_RQ_LOAD_AVG,
            OFF_CFS_RQ_H_LOAD,
            OFF_CFS_RQ_H_NR_DELAYED,
            OFF_CFS_RQ_H_NR_QUEUED,
            OFF_CFS_RQ_H_NR_RUNNABLE,
            // ABI-3 record_wakee() state (wake_wide)
            OFF_TASK_WAKEE_FLIPS,
            OFF_TASK_WAKEE_FLIP_DECAY_TS,
            OFF_TASK_LAST_WAKEE,
            // online CPUs: a task allowed fewer gets its mask read (0 = never)
            SELECT_ALL_CPUS,
            // 1 when the select probe reads the ABI-2 inputs (0 skips them: cost measurement)
            READ_INPUTS,
            // 1 when the function probes may read run-queue state (all rq/sd offsets resolved)
            READ_RQ,
            // 1 when records are batched per CPU (`wakeviz_common::batch`); 0 sends each alone
            BATCHING,
            // bytes a ring holds before a submit wakes its reader (0: never wake it)
            WAKE_BYTES,
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
        }
    };
}

/// The programs, by probe point. Calls
/// `$cb! { tracepoints { point: tp_btf, raw_tp, classic; ... }
///         functions { CONST = function: fentry, fexit; ... }
///         calibration { CONST = program; ... }
///         batching { CONST = program; ... } }`.
/// The batching program is a raw_tp program that is never attached: userspace runs it on a CPU
/// (`BPF_PROG_TEST_RUN` with `BPF_F_TEST_RUN_ON_CPU`) to send that CPU's pending batch.
/// A tracepoint's or function's own name is the kernel's (attach target and probe-status name).
#[macro_export]
macro_rules! for_each_program {
    ($cb:ident) => {
        $cb! {
            tracepoints {
                sched_waking: btf_sched_waking, raw_sched_waking, tp_sched_waking;
                sched_wakeup: btf_sched_wakeup, raw_sched_wakeup, tp_sched_wakeup;
                sched_wakeup_new: btf_sched_wakeup_new, raw_sched_wakeup_new, tp_sched_wakeup_new;
                sched_switch: btf_sched_switch, raw_sched_switch, tp_sched_switch;
                sched_migrate_task: btf_sched_migrate_task, raw_sched_migrate_task,
                    tp_sched_migrate_task;
            }
            functions {
                SELECT_TASK_RQ_FAIR = select_task_rq_fair:
                    fentry_select_task_rq_fair, fexit_select_task_rq_fair;
                SELECT_IDLE_CPU = select_idle_cpu: fentry_select_idle_cpu, fexit_select_idle_cpu;
            }
            calibration {
                CALIB_EMPTY = calib_empty;
                CALIB_CLOCK = calib_clock;
            }
            batching {
                FLUSH_BATCH = flush_batch;
            }
        }
    };
}

/// The in-kernel aggregate mode's programs (`wakeviz_common::agg`), one tp_btf and one raw_tp
/// flavour per sched tracepoint, in the order of [`for_each_program`]'s tracepoints. Calls
/// `$cb! { point: tp_btf, raw_tp; ... }`.
#[macro_export]
macro_rules! for_each_aggregate_program {
    ($cb:ident) => {
        $cb! {
            sched_waking: agg_btf_sched_waking, agg_raw_sched_waking;
            sched_wakeup: agg_btf_sched_wakeup, agg_raw_sched_wakeup;
            sched_wakeup_new: agg_btf_sched_wakeup_new, agg_raw_sched_wakeup_new;
            sched_switch: agg_btf_sched_switch, agg_raw_sched_switch;
            sched_migrate_task: agg_btf_sched_migrate_task, agg_raw_sched_migrate_task;
        }
    };
}

/// The cost floors' tp_btf programs (`wakeviz --floor-probes`), one set per tracepoint of
/// [`for_each_program`]: the empty one, the clock-only one, the streaming one, the batching
/// one. Calls `$cb! { point: empty, clock, stream, batch; ... }`.
#[macro_export]
macro_rules! for_each_floor_program {
    ($cb:ident) => {
        $cb! {
            sched_waking: floor_sched_waking, floor_clock_sched_waking, floor_stream_sched_waking, floor_batch_sched_waking;
            sched_wakeup: floor_sched_wakeup, floor_clock_sched_wakeup, floor_stream_sched_wakeup, floor_batch_sched_wakeup;
            sched_wakeup_new: floor_sched_wakeup_new, floor_clock_sched_wakeup_new, floor_stream_sched_wakeup_new, floor_batch_sched_wakeup_new;
            sched_switch: floor_sched_switch, floor_clock_sched_switch, floor_stream_sched_switch, floor_batch_sched_switch;
            sched_migrate_task: floor_sched_migrate_task, floor_clock_sched_migrate_task, floor_stream_sched_migrate_task, floor_batch_sched_migrate_task;
        }
    };
}

/// The aggregate mode's maps (sized and read only by that mode). Calls `$cb! { NAME, ... }`.
#[macro_export]
macro_rules! for_each_aggregate_map {
    ($cb:ident) => {
        $cb! { AGG_TOPO, AGG_CPU, AGG_TOTALS, AGG_HIST, AGG_STATS, AGG_TASKS }
    };
}

/// The maps userspace opens or resizes. Calls `$cb! { NAME, ... }`.
#[macro_export]
macro_rules! for_each_map {
    ($cb:ident) => {
        $cb! { EVENTS, STATS, RINGS, RING_OF_CPU, BATCH_PENDING, WAKING_INPUTS, WAKE_FRAMES, SCAN_ON }
    };
}

/// The kprobes placed inside `select_task_rq_fair` at addresses from the kernel's debug info
/// (one program per role, attached at every point of that role). Calls
/// `$cb! { role: program; ... }`; the roles are `wakeviz_core::scan_points::ScanRole`'s.
#[macro_export]
macro_rules! for_each_scan_program {
    ($cb:ident) => {
        $cb! {
            scan_entry: kp_scan_entry;
            idle_test: kp_scan_idle_test;
            idle_core: kp_scan_idle_core;
            smt: kp_scan_smt;
        }
    };
}

/// Scan kprobe program names by role (`scan_program::SCAN_ENTRY == "kp_scan_entry"`).
pub mod scan_program {
    macro_rules! consts {
        ($($role:ident: $prog:ident;)*) => {
            /// (role, program), in the order of [`for_each_scan_program`].
            pub const ALL: &[(&str, &str)] = &[$((stringify!($role), stringify!($prog))),*];
        };
    }
    crate::for_each_scan_program!(consts);
}

/// Global names, one constant each (`global::OFF_TASK_PID == "OFF_TASK_PID"`).
pub mod global {
    macro_rules! consts {
        ($($name:ident),* $(,)?) => {
            $( pub const $name: &str = stringify!($name); )*
            /// Every global the probes declare.
            pub const ALL: &[&str] = &[$($name),*];
        };
    }
    crate::for_each_global!(consts);
}

/// Map names (`map::EVENTS == "EVENTS"`).
pub mod map {
    macro_rules! consts {
        ($($name:ident),* $(,)?) => {
            $( pub const $name: &str = stringify!($name); )*
            /// Every map userspace opens by name.
            pub const ALL: &[&str] = &[$($name),*];
        };
    }
    crate::for_each_map!(consts);
}

/// Aggregate-mode map names (`aggregate_map::AGG_CPU == "AGG_CPU"`).
pub mod aggregate_map {
    macro_rules! consts {
        ($($name:ident),* $(,)?) => {
            $( pub const $name: &str = stringify!($name); )*
            /// Every map the aggregate mode sizes or reads.
            pub const ALL: &[&str] = &[$($name),*];
        };
    }
    crate::for_each_aggregate_map!(consts);
}

/// Aggregate-mode program names.
pub mod aggregate_program {
    /// The two flavours of one aggregate program, best first.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Tracepoint {
        /// The kernel's tracepoint name (in the `sched` category).
        pub name: &'static str,
        pub tp_btf: &'static str,
        pub raw_tp: &'static str,
    }

    macro_rules! consts {
        ($($tp:ident: $btf:ident, $raw:ident;)*) => {
            /// Every tracepoint the aggregate mode attaches, in attach order.
            pub const TRACEPOINTS: &[Tracepoint] = &[$(Tracepoint {
                name: stringify!($tp),
                tp_btf: stringify!($btf),
                raw_tp: stringify!($raw),
            }),*];
            /// Every aggregate program in the probe object.
            pub const ALL: &[&str] = &[$(stringify!($btf), stringify!($raw),)*];
        };
    }
    crate::for_each_aggregate_program!(consts);
}

/// The cost floors' program names, (tracepoint, program), in the order of
/// [`program::TRACEPOINTS`]: `EMPTY` return at once, `CLOCK` read the clock and nothing else,
/// `STREAM` send one timestamped record, `BATCH` buffer it per CPU and send 32 at a time.
pub mod floor_program {
    macro_rules! consts {
        ($($tp:ident: $empty:ident, $clock:ident, $stream:ident, $batch:ident;)*) => {
            pub const EMPTY: &[(&str, &str)] = &[$((stringify!($tp), stringify!($empty))),*];
            pub const CLOCK: &[(&str, &str)] = &[$((stringify!($tp), stringify!($clock))),*];
            pub const STREAM: &[(&str, &str)] = &[$((stringify!($tp), stringify!($stream))),*];
            pub const BATCH: &[(&str, &str)] = &[$((stringify!($tp), stringify!($batch))),*];
        };
    }
    crate::for_each_floor_program!(consts);
}

/// Program names, grouped by probe point.
pub mod program {
    /// The three flavours of one sched tracepoint, best first.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Tracepoint {
        /// The kernel's tracepoint name (in the `sched` category).
        pub name: &'static str,
        pub tp_btf: &'static str,
        pub raw_tp: &'static str,
        pub classic: &'static str,
    }

    /// fentry and fexit on one kernel function.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Function {
        /// The kernel function's name.
        pub name: &'static str,
        pub fentry: &'static str,
        pub fexit: &'static str,
    }

    macro_rules! consts {
        (
            tracepoints { $($tp:ident: $btf:ident, $raw:ident, $classic:ident;)* }
            functions { $($fconst:ident = $func:ident: $fentry:ident, $fexit:ident;)* }
            calibration { $($cconst:ident = $calib:ident;)* }
            batching { $($bconst:ident = $bprog:ident;)* }
        ) => {
            /// Every sched tracepoint wakeviz attaches, in attach (and report) order.
            pub const TRACEPOINTS: &[Tracepoint] = &[$(Tracepoint {
                name: stringify!($tp),
                tp_btf: stringify!($btf),
                raw_tp: stringify!($raw),
                classic: stringify!($classic),
            }),*];
            $( pub const $fconst: Function = Function {
                name: stringify!($func),
                fentry: stringify!($fentry),
                fexit: stringify!($fexit),
            }; )*
            /// The kernel functions wakeviz probes, in attach (and report) order.
            pub const FUNCTIONS: &[Function] = &[$($fconst),*];
            $( pub const $cconst: &str = stringify!($calib); )*
            $( pub const $bconst: &str = stringify!($bprog); )*
            /// Every program in the probe object.
            pub const ALL: &[&str] = &[
                $(stringify!($btf), stringify!($raw), stringify!($classic),)*
                $(stringify!($fentry), stringify!($fexit),)*
                $(stringify!($calib),)*
                $(stringify!($bprog),)*
            ];
        };
    }
    crate::for_each_program!(consts);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_are_their_identifiers() {
        assert_eq!(global::OFF_TASK_PID, "OFF_TASK_PID");
        assert_eq!(map::EVENTS, "EVENTS");
        assert_eq!(program::TRACEPOINTS[0].name, "sched_waking");
        assert_eq!(program::TRACEPOINTS[0].tp_btf, "btf_sched_waking");
        assert_eq!(
            program::SELECT_TASK_RQ_FAIR.fexit,
            "fexit_select_task_rq_fair"
        );
        assert_eq!(program::CALIB_CLOCK, "calib_clock");
    }

    #[test]
    fn lists_are_complete_and_distinct() {
        assert_eq!(global::ALL.len(), 46);
        assert_eq!(program::ALL.len(), 5 * 3 + 2 * 2 + 2 + 1);
        assert_eq!(aggregate_program::ALL.len(), 5 * 2);
        assert_eq!(aggregate_map::AGG_CPU, "AGG_CPU");
        let tps = |l: &[program::Tracepoint]| l.iter().map(|t| t.name).collect::<Vec<_>>();
        let agg: Vec<_> = aggregate_program::TRACEPOINTS
            .iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(agg, tps(program::TRACEPOINTS), "same points, same order");
        for floor in [
            floor_program::EMPTY,
            floor_program::CLOCK,
            floor_program::STREAM,
            floor_program::BATCH,
        ] {
            let points: Vec<_> = floor.iter().map(|t| t.0).collect();
            assert_eq!(
                points,
                tps(program::TRACEPOINTS),
                "each floor covers every point"
            );
        }
        for list in [
            global::ALL,
            map::ALL,
            program::ALL,
            aggregate_map::ALL,
            aggregate_program::ALL,
        ] {
            for (i, a) in list.iter().enumerate() {
                assert!(!list[i + 1..].contains(a), "{a} listed twice");
            }
        }
    }
}
