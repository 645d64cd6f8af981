//! Each event kind's fields, defined once: name, type, meaning and value. `--dump jsonl` writes
//! an event's fields as keys, the Parquet export's `events` table as columns (the other kinds'
//! fields null), the Perfetto export learns the tasks an event names from its [`Ty::Pid`]
//! fields, and `cargo xtask docs` lists them in `docs/reference/dump-fields.md`. A new event
//! kind names its fields in [`visit`]; the outputs need no change.
use std::borrow::Cow;

use crate::event::{Event, Kind, Migrate, Select, Switch, TaskTable, Wake, wf};

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

/// One field's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Val<'a> {
    U32(u32),
    I32(i32),
    U64(u64),
    Bool(bool),
    Str(Cow<'a, str>),
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

/// Calls `put` with each field of `e`'s kind and its value (`None`: not known), names resolved
/// through `tasks` as known at this point of the stream.
pub fn visit<'t>(e: &Event, tasks: &'t TaskTable, mut put: impl FnMut(F, Option<Val<'t>>)) {
    let comm = |pid: u32| Some(Val::Str(tasks.comm(pid)));
    let pid = e.pid();
    put(F::ts_ns, Some(Val::U64(e.ts_ns())));
    put(F::kind, Some(Val::Str(Cow::Borrowed(e.kind().name()))));
    put(F::cpu, Some(Val::U32(e.cpu())));
    put(F::pid, Some(Val::U32(pid)));
    put(F::comm, comm(pid));
    put(F::tgid, tasks.tgid(pid).map(Val::U32));
    match e {
        Event::Waking(w) | Event::Wakeup(w) | Event::WakeupNew(w) => wake(w, &comm, &mut put),
        Event::Switch(s) => switch(s, &comm, &mut put),
        Event::Migrate(m) => migrate(m, &mut put),
        Event::Select(s) => select(s, &comm, &mut put),
    }
}

fn wake<'t>(
    w: &Wake,
    comm: &impl Fn(u32) -> Option<Val<'t>>,
    put: &mut impl FnMut(F, Option<Val<'t>>),
) {
    put(F::target_cpu, Some(Val::U32(w.target_cpu)));
    put(F::waker_pid, Some(Val::U32(w.waker_pid)));
    put(F::waker_comm, comm(w.waker_pid));
    put(F::prio, Some(Val::I32(w.prio)));
}

fn switch<'t>(
    s: &Switch,
    comm: &impl Fn(u32) -> Option<Val<'t>>,
    put: &mut impl FnMut(F, Option<Val<'t>>),
) {
    put(F::prev_pid, Some(Val::U32(s.prev_pid)));
    put(F::prev_comm, comm(s.prev_pid));
    put(F::prev_state, Some(Val::U32(s.prev_state)));
    put(F::prev_prio, Some(Val::I32(s.prev_prio)));
    put(F::next_pid, Some(Val::U32(s.next_pid)));
    put(F::next_comm, comm(s.next_pid));
    put(F::next_prio, Some(Val::I32(s.next_prio)));
}

fn migrate<'t>(m: &Migrate, put: &mut impl FnMut(F, Option<Val<'t>>)) {
    put(F::orig_cpu, Some(Val::U32(m.orig_cpu)));
    put(F::dest_cpu, Some(Val::U32(m.dest_cpu)));
}

fn select<'t>(
    s: &Select,
    comm: &impl Fn(u32) -> Option<Val<'t>>,
    put: &mut impl FnMut(F, Option<Val<'t>>),
) {
    let u32v = |v: Option<u32>| v.map(Val::U32);
    let boolv = |v: Option<bool>| v.map(Val::Bool);
    put(F::waker_pid, Some(Val::U32(s.waker_pid)));
    put(F::waker_comm, comm(s.waker_pid));
    put(F::entry_ts_ns, Some(Val::U64(s.entry_ts_ns)));
    put(F::prev_cpu, Some(Val::U32(s.prev_cpu)));
    put(F::wake_flags, Some(Val::U32(s.wake_flags)));
    let sync = s.wake_flags_known().then_some(s.wake_flags & wf::SYNC != 0);
    put(F::sync, boolv(sync));
    put(F::at_sched_waking, Some(Val::Bool(s.at_waking())));
    put(F::chosen_cpu, u32v(s.chosen()));
    let select_ns = (!s.at_waking()).then(|| s.duration_ns());
    put(F::select_ns, select_ns.map(Val::U64));
    put(F::waker_nr_running, u32v(s.waker_nr_running));
    put(F::nr_idle_scan, u32v(s.nr_idle_scan));
    put(F::has_idle_cores, boolv(s.has_idle_cores));
    put(F::prev_nr_idle_scan, u32v(s.prev_nr_idle_scan));
    put(F::prev_has_idle_cores, boolv(s.prev_has_idle_cores));
    put(F::idle_scan_ns, u32v(s.idle_scan_ns));
    put(F::scan_ran, boolv(s.scan.map(|x| x.ran())));
    put(F::scan_idle_tests, u32v(s.scan.map(|x| u32::from(x.cpus))));
    put(F::scan_idle_core, boolv(s.scan.map(|x| x.core())));
    put(F::scan_smt, boolv(s.scan.map(|x| x.smt())));
}

/// The tasks `e` names (its [`Ty::Pid`] fields, each once; the idle task included).
pub fn pids(e: &Event) -> impl Iterator<Item = u32> {
    let mut out = [None; 4];
    let mut n = 0;
    visit(e, &TaskTable::default(), |f, v| {
        if let (Ty::Pid, Some(Val::U32(p))) = (f.ty(), v)
            && !out.contains(&Some(p))
            && let Some(slot) = out.get_mut(n)
        {
            *slot = Some(p);
            n += 1;
        }
    });
    out.into_iter().flatten()
}

/// An event of kind `k` with every value zero: what the reference lists each kind's fields from.
pub fn sample(k: Kind) -> Event {
    let w = Wake::default();
    match k {
        Kind::Waking => Event::Waking(w),
        Kind::Wakeup => Event::Wakeup(w),
        Kind::WakeupNew => Event::WakeupNew(w),
        Kind::Switch => Event::Switch(Switch::default()),
        Kind::Migrate => Event::Migrate(Migrate::default()),
        Kind::Select => Event::Select(Box::default()),
    }
}

/// The fields an event of kind `k` has, in the order [`visit`] gives them.
pub fn of_kind(k: Kind) -> Vec<F> {
    let mut out = Vec::new();
    visit(&sample(k), &TaskTable::default(), |f, _| out.push(f));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_every_field_belongs_to_a_kind() {
        let mut names: Vec<&str> = F::ALL.iter().map(|f| f.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), F::ALL.len());
        for &f in F::ALL {
            assert!(
                Kind::ALL.iter().any(|&k| of_kind(k).contains(&f)),
                "{} is no kind's field",
                f.name()
            );
        }
    }

    #[test]
    fn each_kind_gives_each_field_once_in_the_exports_order_and_the_always_ones_a_value() {
        for k in Kind::ALL {
            let mut seen = Vec::new();
            visit(&sample(k), &TaskTable::default(), |f, v| {
                assert!(!seen.contains(&f), "{}: {} twice", k.name(), f.name());
                assert!(
                    !f.always() || v.is_some(),
                    "{}: {} null",
                    k.name(),
                    f.name()
                );
                seen.push(f);
            });
            let order: Vec<usize> = seen.iter().map(|&f| f as usize).collect();
            assert!(order.is_sorted(), "{}: {seen:?}", k.name());
            for &f in F::ALL.iter().filter(|f| f.always()) {
                assert!(seen.contains(&f), "{}: no {}", k.name(), f.name());
            }
        }
    }

    #[test]
    fn pids_names_the_subject_and_the_other_task_once() {
        let s = Event::Switch(Switch {
            prev_pid: 7,
            next_pid: 9,
            ..Switch::default()
        });
        assert_eq!(pids(&s).collect::<Vec<_>>(), [7, 9]);
        let w = Event::Waking(Wake {
            pid: 3,
            waker_pid: 0,
            ..Wake::default()
        });
        assert_eq!(pids(&w).collect::<Vec<_>>(), [3, 0]);
        let m = Event::Migrate(Migrate {
            pid: 5,
            ..Migrate::default()
        });
        assert_eq!(pids(&m).collect::<Vec<_>>(), [5]);
    }
}
