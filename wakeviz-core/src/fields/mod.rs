//! Each event kind's fields, defined once: name, type, meaning and value. `--dump jsonl` writes
//! an event's fields as keys, the Parquet export's `events` table as columns (the other kinds'
//! fields null), the Perfetto export learns the tasks an event names from its [`Ty::Pid`]
//! fields, and `cargo xtask docs` lists them in `docs/reference/dump-fields.md`. A plain event
//! kind's fields are its words' names ([`Kind::fields`]); the outputs need no change.
use std::borrow::Cow;

pub mod names;
pub use names::{F, Ty};

use crate::event::{Event, Kind, MAX_WORDS, Select, TaskTable, unzz, wf};

/// One field's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Val<'a> {
    U32(u32),
    I32(i32),
    U64(u64),
    Bool(bool),
    Str(Cow<'a, str>),
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
        Event::Select(s) => select(s, &comm, &mut put),
        _ => {
            if let Some(w) = e.words() {
                plain(e.kind(), &w, &comm, &mut put);
            }
        }
    }
}

/// A plain kind's words as its fields ([`Kind::fields`]) in the exports' order, a task id
/// followed by its task's name. The subject's `pid` and `comm` are the common fields above.
fn plain<'t>(
    k: Kind,
    w: &[u32; MAX_WORDS],
    comm: &impl Fn(u32) -> Option<Val<'t>>,
    put: &mut impl FnMut(F, Option<Val<'t>>),
) {
    let fields = k.fields();
    let mut order: [usize; MAX_WORDS] = std::array::from_fn(|i| i);
    let order = &mut order[..fields.len()];
    order.sort_unstable_by_key(|&i| fields[i] as usize);
    for &i in order.iter() {
        let (f, v) = (fields[i], w[i]);
        if f == F::pid {
            continue;
        }
        put(
            f,
            Some(match f.ty() {
                Ty::I32 => Val::I32(unzz(v)),
                _ => Val::U32(v),
            }),
        );
        if let Some(c) = f.comm() {
            put(c, comm(v));
        }
    }
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
    Event::from_words(k, 0, 0, &[0; MAX_WORDS]).unwrap_or_else(|| Event::Select(Box::default()))
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
    use crate::event::{Migrate, Switch, Wake};

    /// The plain kinds' field names ([`Kind::fields`]) match their words: each field gives the
    /// struct's value, the task ids their names.
    #[test]
    fn plain_fields_give_the_structs_values() {
        let mut tasks = TaskTable::default();
        tasks.learn(crate::event::TaskName {
            pid: 7,
            comm: crate::event::Comm::new("seven"),
            tgid: 7,
            cgroup: 0,
        });
        let got = |e: &Event| {
            let mut v = Vec::new();
            visit(e, &tasks, |f, x| v.push((f.name(), x)));
            v.split_off(6)
        };
        let u = |x| Some(Val::U32(x));
        let i = |x| Some(Val::I32(x));
        let name = |x: &'static str| Some(Val::Str(Cow::Borrowed(x)));
        let w = Event::Wakeup(Wake {
            pid: 9,
            target_cpu: 2,
            waker_pid: 7,
            prio: -3,
            ..Wake::default()
        });
        assert_eq!(
            got(&w),
            [
                ("target_cpu", u(2)),
                ("waker_pid", u(7)),
                ("waker_comm", name("seven")),
                ("prio", i(-3)),
            ]
        );
        let s = Event::Switch(Switch {
            prev_pid: 7,
            next_pid: 0,
            prev_state: 1,
            prev_prio: 120,
            next_prio: -51,
            ..Switch::default()
        });
        assert_eq!(
            got(&s),
            [
                ("prev_pid", u(7)),
                ("prev_comm", name("seven")),
                ("prev_state", u(1)),
                ("prev_prio", i(120)),
                ("next_pid", u(0)),
                ("next_comm", name("swapper")),
                ("next_prio", i(-51)),
            ]
        );
        let m = Event::Migrate(Migrate {
            pid: 7,
            orig_cpu: 1,
            dest_cpu: 3,
            ..Migrate::default()
        });
        assert_eq!(got(&m), [("orig_cpu", u(1)), ("dest_cpu", u(3))]);
    }

    /// A word is a `u32`: a plain kind's fields are ids, counts or zigzagged signed values.
    #[test]
    fn plain_kinds_name_word_sized_fields() {
        for k in Kind::ALL {
            for f in k.fields() {
                assert!(
                    matches!(f.ty(), Ty::U32 | Ty::Pid | Ty::I32),
                    "{}: {} is not a word",
                    k.name(),
                    f.name()
                );
            }
        }
    }

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
