//! The fields' names, types and meanings: the vocabulary an event kind's words are named in
//! ([`crate::event::Kind::fields`]) and every output's keys and columns.

/// How a field's value is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    U32,
    /// A task id (written as a `u32`).
    Pid,
    I32,
    U64,
    Bool,
    Str,
}

macro_rules! fields {
    ($($id:ident: $ty:ident $(, $always:ident)? = $about:literal;)*) => {
        /// A field of some event kind; its name is the key and column name in every output.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[allow(non_camel_case_types, reason = "the variants are the fields' names")]
        pub enum F { $($id),* }

        impl F {
            /// Every field, in the order the exports lay them out.
            pub const ALL: &'static [F] = &[$(F::$id),*];

            pub const fn name(self) -> &'static str {
                match self { $(F::$id => stringify!($id)),* }
            }

            pub const fn ty(self) -> Ty {
                match self { $(F::$id => Ty::$ty),* }
            }

            /// What the field holds, for the reference.
            pub const fn about(self) -> &'static str {
                match self { $(F::$id => $about),* }
            }

            /// Whether every event has a value here (the exports' non-null columns).
            pub const fn always(self) -> bool {
                match self { $(F::$id => fields!(@always $($always)?)),* }
            }
        }
    };
    (@always always) => { true };
    (@always) => { false };
}

fields! {
    ts_ns: U64, always = "CLOCK_MONOTONIC time the probe fired (a select record: the function's exit)";
    kind: Str, always = "the tracepoint's name (`select_task_rq_fair` for the function probe's records)";
    cpu: U32, always = "CPU the probe ran on";
    pid: Pid = "the task the event is about: the woken, switched-out (= `prev_pid`), migrated or placed task";
    comm: Str = "its name as the recording last knew it at this event (`swapper` for the idle task, `?` when never learnt)";
    tgid: U32 = "its process (thread-group id); null where the recording does not know it: a classic-tracepoint capture's tasks gone before the capture read `/proc`, recordings before format 5, a task seen only in switches";
    target_cpu: U32 = "waking: the task's old CPU; wakeup: the CPU it was enqueued on";
    waker_pid: Pid = "the task running where the probe fired (wake kinds: 0 for a wakeup from an interrupt on an idle CPU); for a select record the waker";
    waker_comm: Str = "its name";
    prio: I32 = "the woken task's priority";
    prev_pid: Pid = "the task switched out";
    prev_comm: Str = "its name";
    prev_state: U32 = "`prev->__state`: 0 = preempted (still runnable), else blocked";
    prev_prio: I32 = "its priority";
    next_pid: Pid = "the task switched in";
    next_comm: Str = "its name";
    next_prio: I32 = "its priority";
    orig_cpu: U32 = "the CPU the task leaves";
    dest_cpu: U32 = "the CPU it moves to";
    entry_ts_ns: U64 = "the function's entry time (= `ts_ns` for inputs read at `sched_waking`)";
    prev_cpu: U32 = "the task's previous CPU, the function's argument";
    wake_flags: U32 = "the function's `wake_flags` argument; bit 31 marks inputs read at `sched_waking`, bit 30 a `WF_SYNC` (`0x10`) read from the waker's kernel stack";
    sync: Bool = "`WF_SYNC` set; null when not known";
    at_sched_waking: Bool = "not a call: the inputs the `sched_waking` probe read where the function probes are unavailable (no chosen CPU, no duration, wake flags unknown unless bit 30 is set)";
    chosen_cpu: U32 = "the function's return value; null when not read";
    select_ns: U64 = "the call's duration, exit minus entry; null for inputs read at `sched_waking`";
    waker_nr_running: U32 = "`rq->nr_running` of the waker's CPU at entry (includes the waker); null when not read";
    nr_idle_scan: U32 = "`sd_llc_shared->nr_idle_scan` of the waker's LLC (the SIS_UTIL scan budget)";
    has_idle_cores: Bool = "`sd_llc_shared->has_idle_cores` of the waker's LLC";
    prev_nr_idle_scan: U32 = "the same for the LLC of `prev_cpu`";
    prev_has_idle_cores: Bool = "the same for the LLC of `prev_cpu`";
    idle_scan_ns: U32 = "time in `select_idle_sibling` (with the debug-info scan probes: from the scan's entry to the function's exit); null when not measured";
    scan_ran: Bool = "with the debug-info scan probes: `select_idle_cpu` ran; null when the scan was not watched";
    scan_idle_tests: U32 = "the CPUs the scan tested plus the cores `select_idle_core` tested";
    scan_idle_core: Bool = "`select_idle_core` ran (the idle-core search)";
    scan_smt: Bool = "`select_idle_smt` ran (prev's SMT siblings, before the scan)";
}

impl F {
    /// The field holding the name of the task a [`Ty::Pid`] field names.
    pub const fn comm(self) -> Option<F> {
        match self {
            F::pid => Some(F::comm),
            F::waker_pid => Some(F::waker_comm),
            F::prev_pid => Some(F::prev_comm),
            F::next_pid => Some(F::next_comm),
            _ => None,
        }
    }
}
