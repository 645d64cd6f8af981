//! Owned, decoded events: what every analysis folds over. Field names follow the kernel's
//! tracepoints; CPU numbers are `u32` everywhere so machines beyond 65 536 CPUs are not excluded
//! by the model (the ring-buffer ABI is narrower and says so).
use serde::{Deserialize, Serialize};

use crate::fields::names::F;

/// Task name as the kernel stores it: up to 15 bytes plus NUL.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Comm(pub [u8; 16]);

impl Comm {
    pub fn new(s: &str) -> Self {
        let mut b = [0u8; 16];
        let n = s.len().min(15);
        b[..n].copy_from_slice(&s.as_bytes()[..n]);
        Self(b)
    }

    /// A stable stand-in for a sensitive name (`--redact-comm`): the same name always maps to
    /// the same `t-xxxxxxxx`, so per-task figures still group correctly.
    pub fn redacted(&self) -> Self {
        let mut h: u32 = 0x811c_9dc5;
        for &b in self.0.iter().take_while(|&&b| b != 0) {
            h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
        }
        Self::new(&format!("t-{h:08x}"))
    }

    pub fn as_str(&self) -> std::borrow::Cow<'_, str> {
        let end = self.0.iter().position(|&c| c == 0).unwrap_or(self.0.len());
        String::from_utf8_lossy(&self.0[..end])
    }
}

impl std::fmt::Debug for Comm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

/// `sched_waking` / `sched_wakeup` / `sched_wakeup_new` payload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wake {
    pub ts_ns: u64,
    /// CPU the probe ran on: the waker's CPU for `sched_waking`; for `sched_wakeup` it can be
    /// the target CPU (wake-list path), so never use it as the waker CPU.
    pub cpu: u32,
    /// The woken task.
    pub pid: u32,
    pub target_cpu: u32,
    /// Task that was running where the probe fired.
    pub waker_pid: u32,
    pub prio: i32,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Switch {
    pub ts_ns: u64,
    pub cpu: u32,
    pub prev_pid: u32,
    pub next_pid: u32,
    /// 0 = `prev` was preempted (still runnable); anything else = it blocked.
    pub prev_state: u32,
    pub prev_prio: i32,
    pub next_prio: i32,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Migrate {
    pub ts_ns: u64,
    pub cpu: u32,
    pub pid: u32,
    pub orig_cpu: u32,
    pub dest_cpu: u32,
}

/// One `select_task_rq_fair` call (fentry + fexit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Select {
    /// Exit time.
    pub ts_ns: u64,
    pub entry_ts_ns: u64,
    /// Waker CPU: the function runs in the waker's context.
    pub cpu: u32,
    /// Task being placed.
    pub pid: u32,
    pub prev_cpu: u32,
    pub wake_flags: u32,
    pub chosen_cpu: u32,
    pub waker_pid: u32,
    /// Kernel inputs read in the probe, when the kernel allowed it.
    pub waker_nr_running: Option<u32>,
    pub nr_idle_scan: Option<u32>,
    pub has_idle_cores: Option<bool>,
    /// The same two inputs for the LLC of `prev_cpu`.
    pub prev_nr_idle_scan: Option<u32>,
    pub prev_has_idle_cores: Option<bool>,
    /// Time inside `select_idle_cpu`, when that function could be probed (rarely: inlined);
    /// with [`Select::scan`], from the scan's entry to the function's exit, when a scan ran.
    pub idle_scan_ns: Option<u32>,
    /// The idle scan as kprobes placed from the kernel's debug info saw it (`None`: not
    /// watched).
    pub scan: Option<ScanMeasure>,
    /// The ABI-2 inputs (all unknown in older recordings).
    pub inputs: SelectInputs,
}

/// One call's idle scan, counted by the debug-info kprobes (`wakeviz_common::scan_path`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanMeasure {
    /// Idle tests: one per `__select_idle_cpu` (a CPU) or `select_idle_core` (a core) call.
    pub cpus: u16,
    /// `wakeviz_common::scan_path` bits.
    pub path: u16,
}

impl ScanMeasure {
    /// `select_idle_cpu` ran.
    pub const fn ran(self) -> bool {
        self.path & wakeviz_common::scan_path::SCAN != 0
    }

    /// `select_idle_core` ran (the idle-core search).
    pub const fn core(self) -> bool {
        self.path & wakeviz_common::scan_path::CORE != 0
    }

    /// `select_idle_smt` ran (prev's SMT siblings, before the scan).
    pub const fn smt(self) -> bool {
        self.path & wakeviz_common::scan_path::SMT != 0
    }

    /// One `u32` for the recording: `cpus` in the low half, `path` in the high half.
    pub const fn packed(self) -> u32 {
        self.cpus as u32 | (self.path as u32) << 16
    }

    /// The inverse of [`Self::packed`]; unknown path bits are refused.
    pub fn from_packed(v: u32) -> Option<Self> {
        let path = (v >> 16) as u16;
        (path & !wakeviz_common::scan_path::ALL == 0).then_some(Self {
            cpus: v as u16,
            path,
        })
    }
}

/// What `wake_affine_weight`, the delayed-dequeue sync test, the per-CPU-kthread rule and the
/// affinity checks read, as the select probe saw it at entry; `None` = not read (older
/// recording, field absent from the kernel's BTF, or the read failed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SelectInputs {
    /// `cpu_load()` of the waker's and prev's CPU.
    pub waker_load: Option<u32>,
    pub prev_load: Option<u32>,
    /// `capacity_of()` of the waker's and prev's CPU.
    pub waker_capacity: Option<u32>,
    pub prev_capacity: Option<u32>,
    /// `task_h_load(p)`, `task_h_load(current)`.
    pub task_h_load: Option<u32>,
    pub waker_h_load: Option<u32>,
    /// The wakee is in a task group: `task_h_load` used a `h_load` the kernel may refresh.
    pub task_in_group: bool,
    /// `cfs_h_nr_delayed()` of the waker's rq.
    pub waker_h_nr_delayed: Option<u32>,
    /// The waker's `PF_KTHREAD` and `nr_cpus_allowed`.
    pub waker_kthread: Option<bool>,
    pub waker_nr_cpus_allowed: Option<u32>,
    /// The wakee's `nr_cpus_allowed`.
    pub task_nr_cpus_allowed: Option<u32>,
    /// The wakee's allowed CPUs 0..255, read when it may not run on every online CPU
    /// (`None` with `task_nr_cpus_allowed` known = every CPU allowed).
    pub allowed: Option<[u64; 4]>,
    /// The `record_wakee()` state at entry (ABI 3).
    pub flips: Option<WakeeFlips>,
}

/// `wake_wide()`'s inputs as the select probe read them, before the kernel's `record_wakee(p)`
/// for this wakeup: a task inherits `wakee_flips` at fork and decays it only when it wakes
/// someone, so the count cannot be rebuilt from events.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WakeeFlips {
    /// `current->wakee_flips`, `p->wakee_flips`.
    pub waker: u32,
    pub wakee: u32,
    /// Low 32 bits of `current->wakee_flip_decay_ts` and of `jiffies` at entry.
    pub waker_decay_jiffies: u32,
    pub jiffies: u32,
    /// `current->last_wakee == p`.
    pub waker_last_wakee_is_task: bool,
}

impl WakeeFlips {
    /// `current->wakee_flips` after the kernel's `record_wakee(p)`, which `wake_wide()` then
    /// reads: halved when the decay stamp is more than `hz` jiffies old, plus one flip for a new
    /// wakee.
    pub fn waker_after_record(&self, hz: u32) -> u32 {
        let mut f = self.waker;
        if self.jiffies.wrapping_sub(self.waker_decay_jiffies) as i32 > hz as i32 {
            f >>= 1;
        }
        if !self.waker_last_wakee_is_task {
            f = f.saturating_add(1);
        }
        f
    }
}

impl SelectInputs {
    /// `is_per_cpu_kthread(current)` (`in_task()` is not readable: see the report notes).
    pub fn per_cpu_kthread_waker(&self) -> Option<bool> {
        Some(self.waker_kthread? && self.waker_nr_cpus_allowed? == 1)
    }

    /// Whether the wakee may run on `cpu`: `None` when unknown (no mask read, and the count
    /// of allowed CPUs unknown or not "all").
    pub fn allows(&self, cpu: u32) -> Option<bool> {
        match self.allowed {
            Some(m) => Some(
                m.get(cpu as usize / 64)
                    .is_some_and(|w| w & (1u64 << (cpu % 64)) != 0),
            ),
            None => self.task_nr_cpus_allowed.map(|_| true),
        }
    }
}

impl Select {
    pub fn duration_ns(&self) -> u64 {
        self.ts_ns.saturating_sub(self.entry_ts_ns)
    }

    /// Not a `select_task_rq_fair` call: the same inputs read at `sched_waking` where the
    /// function probes are unavailable ([`wf::AT_WAKING`]); no chosen CPU, no wake flags, no
    /// duration.
    pub const fn at_waking(&self) -> bool {
        self.wake_flags & wf::AT_WAKING != 0
    }

    /// Whether `wake_flags` holds the kernel's flags: a call's, or `WF_SYNC` the `sched_waking`
    /// probe read from the waker's stack ([`wf::FROM_STACK`]).
    pub const fn wake_flags_known(&self) -> bool {
        !self.at_waking() || self.wake_flags & wf::FROM_STACK != 0
    }

    /// The kernel's return value, when this is a call whose exit was read.
    pub const fn chosen(&self) -> Option<u32> {
        if self.at_waking() || self.chosen_cpu == u32::MAX {
            None
        } else {
            Some(self.chosen_cpu)
        }
    }
}

/// `wake_flags` bits (include/linux/sched.h / kernel/sched/sched.h, stable since 5.10).
pub mod wf {
    pub const EXEC: u32 = 0x02;
    pub const FORK: u32 = 0x04;
    pub const TTWU: u32 = 0x08;
    pub const SYNC: u32 = 0x10;
    pub const MIGRATED: u32 = 0x20;
    pub const CURRENT_CPU: u32 = 0x40;
    /// wakeviz's own marker, no kernel flag: see [`super::Select::at_waking`].
    pub const AT_WAKING: u32 = wakeviz_common::SELECT_AT_WAKING;
    /// wakeviz's own marker beside [`AT_WAKING`]: the record's [`SYNC`] bit is known, from the
    /// waker's stack (`wakeviz_common::WAKE_FLAGS_FROM_STACK`).
    pub const FROM_STACK: u32 = wakeviz_common::WAKE_FLAGS_FROM_STACK;
}

/// Not `Copy`: the select record is boxed. Inline, its optional inputs made every event 216
/// bytes, the stride of every chunk's vector, although nine events in ten are wakeups and
/// switches of 32 bytes; boxed, one allocation per select record buys a 40-byte `Event`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    Waking(Wake),
    Wakeup(Wake),
    WakeupNew(Wake),
    Switch(Switch),
    Migrate(Migrate),
    Select(Box<Select>),
}

/// Keeps `Event` from growing back silently: every decoded chunk is a vector of them.
const _: () = assert!(std::mem::size_of::<Event>() <= 40);

/// Declares the event kinds in the order recordings store per-kind counters (a new kind goes
/// last): each with the kernel's name, the recording format whose column payloads first hold it
/// (`super::format::columns::PLAIN`), and, for a plain kind, the fields its words hold in word
/// order ([`Event::words`]; a kind stored in an earlier kind's columns says whose).
macro_rules! kinds {
    ($($k:ident = $name:literal, since $since:literal, [$($f:ident),*] $(in $lead:ident)?;)*) => {
        /// Event kinds with the kernel's names, indexable for per-kind counters.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum Kind {
            $(#[serde(rename = $name)] $k,)*
        }

        impl Kind {
            /// How many kinds there are: the length of every [`PerKind`].
            pub const COUNT: usize = [$(Self::$k),*].len();

            /// Every kind, in the order recordings store per-kind counters.
            pub const ALL: [Self; Self::COUNT] = [$(Self::$k),*];

            pub const fn name(self) -> &'static str {
                match self { $(Self::$k => $name),* }
            }

            /// The recording format whose column payloads first hold this kind.
            pub const fn since(self) -> u32 {
                match self { $(Self::$k => $since),* }
            }

            /// What a plain kind's words hold, in word order (none for a select record).
            pub const fn fields(self) -> &'static [F] {
                match self { $(Self::$k => &[$(F::$f),*]),* }
            }

            /// The kind whose columns hold this kind's words (itself, or an earlier kind
            /// with the same fields).
            pub const fn columns(self) -> Self {
                match self { $(Self::$k => kinds!(@lead $k $($lead)?)),* }
            }
        }
    };
    (@lead $k:ident $lead:ident) => { Self::$lead };
    (@lead $k:ident) => { Self::$k };
}

kinds! {
    Waking = "sched_waking", since 2, [pid, target_cpu, waker_pid, prio];
    Wakeup = "sched_wakeup", since 2, [pid, target_cpu, waker_pid, prio] in Waking;
    WakeupNew = "sched_wakeup_new", since 2, [pid, target_cpu, waker_pid, prio] in Waking;
    Switch = "sched_switch", since 2, [prev_pid, next_pid, prev_state, prev_prio, next_prio];
    Migrate = "sched_migrate_task", since 2, [pid, orig_cpu, dest_cpu];
    Select = "select_task_rq_fair", since 2, [];
}

/// One value per event [`Kind`], indexed by the kind itself: a count cannot be filed under
/// another kind, and adding a kind grows every such table. Serialised as the plain array, in
/// [`Kind::ALL`] order (what recordings store). Read back, a shorter array is a file written
/// before the later kinds existed: they take the default (none were offered). A longer one
/// names kinds this build does not know and is refused; a format version bump for the new kind
/// refuses such a file first, with the version it needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct PerKind<T>(pub [T; Kind::COUNT]);

impl<'de, T: Default + Deserialize<'de>> Deserialize<'de> for PerKind<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Seq<T>(std::marker::PhantomData<T>);
        impl<'de, T: Default + Deserialize<'de>> serde::de::Visitor<'de> for Seq<T> {
            type Value = PerKind<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                write!(f, "at most {} values, one per event kind", Kind::COUNT)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Self::Value, A::Error> {
                let mut out = PerKind::<T>::default();
                for slot in &mut out.0 {
                    match a.next_element()? {
                        Some(v) => *slot = v,
                        None => return Ok(out),
                    }
                }
                if a.next_element::<serde::de::IgnoredAny>()?.is_some() {
                    return Err(serde::de::Error::invalid_length(Kind::COUNT + 1, &self));
                }
                Ok(out)
            }
        }
        d.deserialize_seq(Seq(std::marker::PhantomData))
    }
}

impl<T: Default> Default for PerKind<T> {
    fn default() -> Self {
        Self(std::array::from_fn(|_| T::default()))
    }
}

impl<T> std::ops::Index<Kind> for PerKind<T> {
    type Output = T;
    #[inline]
    fn index(&self, k: Kind) -> &T {
        &self.0[k.index()]
    }
}

impl<T> std::ops::IndexMut<Kind> for PerKind<T> {
    #[inline]
    fn index_mut(&mut self, k: Kind) -> &mut T {
        &mut self.0[k.index()]
    }
}

impl<T> PerKind<T> {
    /// Each kind with its value, in [`Kind::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (Kind, &T)> {
        Kind::ALL.into_iter().zip(&self.0)
    }

    pub fn from_fn(mut f: impl FnMut(Kind) -> T) -> Self {
        Self(std::array::from_fn(|i| f(Kind::ALL[i])))
    }
}

impl PerKind<u64> {
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// Adds `o` kind by kind.
    pub fn add(&mut self, o: &Self) {
        for (a, b) in self.0.iter_mut().zip(o.0) {
            *a += b;
        }
    }
}

impl Kind {
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The ABI tag of this kind.
    pub const fn abi(self) -> u16 {
        self as u16 + 1
    }

    pub fn from_abi(v: u16) -> Option<Self> {
        Self::ALL.get(usize::from(v).checked_sub(1)?).copied()
    }
}

impl Event {
    pub const fn kind(&self) -> Kind {
        match self {
            Self::Waking(_) => Kind::Waking,
            Self::Wakeup(_) => Kind::Wakeup,
            Self::WakeupNew(_) => Kind::WakeupNew,
            Self::Switch(_) => Kind::Switch,
            Self::Migrate(_) => Kind::Migrate,
            Self::Select(_) => Kind::Select,
        }
    }

    pub const fn ts_ns(&self) -> u64 {
        match self {
            Self::Waking(w) | Self::Wakeup(w) | Self::WakeupNew(w) => w.ts_ns,
            Self::Switch(s) => s.ts_ns,
            Self::Migrate(m) => m.ts_ns,
            Self::Select(s) => s.ts_ns,
        }
    }

    pub const fn cpu(&self) -> u32 {
        match self {
            Self::Waking(w) | Self::Wakeup(w) | Self::WakeupNew(w) => w.cpu,
            Self::Switch(s) => s.cpu,
            Self::Migrate(m) => m.cpu,
            Self::Select(s) => s.cpu,
        }
    }

    /// The subject task (woken, switched-out, migrated or placed task).
    pub const fn pid(&self) -> u32 {
        match self {
            Self::Waking(w) | Self::Wakeup(w) | Self::WakeupNew(w) => w.pid,
            Self::Switch(s) => s.prev_pid,
            Self::Migrate(m) => m.pid,
            Self::Select(s) => s.pid,
        }
    }
}

/// The most [`Kind::words`] of any kind.
pub const MAX_WORDS: usize = 5;
const _: () = {
    let mut i = 0;
    while i < Kind::COUNT {
        assert!(
            Kind::ALL[i].words() <= MAX_WORDS,
            "a kind with more words than MAX_WORDS"
        );
        i += 1;
    }
};

/// zigzag of a signed field, so that small negative values stay small words.
const fn zz(v: i32) -> u32 {
    ((v << 1) ^ (v >> 31)) as u32
}

pub(crate) const fn unzz(v: u32) -> i32 {
    ((v >> 1) as i32) ^ -((v & 1) as i32)
}

/// A plain event is its time, its CPU and [`Kind::words`] u32 words (a signed field
/// zigzagged): what both recording formats store and what their decoders build it back from,
/// so a new plain kind describes itself here. A select record carries optional inputs and is
/// not plain.
impl Kind {
    /// How many words a plain event of this kind has (0: a select record, not plain).
    pub const fn words(self) -> usize {
        self.fields().len()
    }
}

impl Event {
    /// The words after the time and the CPU (the first [`Kind::words`] of them); `None` for a
    /// select record.
    #[inline(always)]
    pub fn words(&self) -> Option<[u32; MAX_WORDS]> {
        Some(match self {
            Self::Waking(w) | Self::Wakeup(w) | Self::WakeupNew(w) => {
                [w.pid, w.target_cpu, w.waker_pid, zz(w.prio), 0]
            }
            Self::Switch(s) => [
                s.prev_pid,
                s.next_pid,
                s.prev_state,
                zz(s.prev_prio),
                zz(s.next_prio),
            ],
            Self::Migrate(m) => [m.pid, m.orig_cpu, m.dest_cpu, 0, 0],
            Self::Select(_) => return None,
        })
    }

    /// The plain event of kind `k` from its words ([`Event::words`]); `None` for a select.
    #[inline(always)]
    pub fn from_words(k: Kind, ts_ns: u64, cpu: u32, w: &[u32; MAX_WORDS]) -> Option<Self> {
        let wake = || Wake {
            ts_ns,
            cpu,
            pid: w[0],
            target_cpu: w[1],
            waker_pid: w[2],
            prio: unzz(w[3]),
        };
        Some(match k {
            Kind::Waking => Self::Waking(wake()),
            Kind::Wakeup => Self::Wakeup(wake()),
            Kind::WakeupNew => Self::WakeupNew(wake()),
            Kind::Switch => Self::Switch(Switch {
                ts_ns,
                cpu,
                prev_pid: w[0],
                next_pid: w[1],
                prev_state: w[2],
                prev_prio: unzz(w[3]),
                next_prio: unzz(w[4]),
            }),
            Kind::Migrate => Self::Migrate(Migrate {
                ts_ns,
                cpu,
                pid: w[0],
                orig_cpu: w[1],
                dest_cpu: w[2],
            }),
            Kind::Select => return None,
        })
    }

    pub fn set_ts_ns(&mut self, ts_ns: u64) {
        match self {
            Self::Waking(w) | Self::Wakeup(w) | Self::WakeupNew(w) => w.ts_ns = ts_ns,
            Self::Switch(s) => s.ts_ns = ts_ns,
            Self::Migrate(m) => m.ts_ns = ts_ns,
            Self::Select(s) => s.ts_ns = ts_ns,
        }
    }
}

/// The kernel's `/proc/schedstat` as read at `ts_ns` (the probes' clock, CLOCK_MONOTONIC; the
/// middle of the read). In the stream it comes before the events read after it, so every
/// event delivered earlier happened before it; the analysis compares the kernel's counters
/// between two samples with its own counts over the same interval.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedstatSample {
    pub ts_ns: u64,
    pub text: String,
}

/// What the stream says of a task from some point on: "from here on, `pid` is called `comm`",
/// and, when the probe could read it, the process (thread group) it belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskName {
    pub pid: u32,
    pub comm: Comm,
    /// Thread-group id; 0 = not said by this fact (a switch record, a classic tracepoint, an
    /// older recording), which keeps whatever an earlier fact said.
    pub tgid: u32,
    /// The process's cgroup v2 (the inode number of its directory, which is the kernel's
    /// cgroup id), as the capture read it from `/proc/TGID/cgroup` when it first saw the
    /// process; 0 = not said, which keeps whatever an earlier fact said.
    pub cgroup: u64,
}

/// A task as the table knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Task {
    pub comm: Comm,
    /// 0 = unknown.
    pub tgid: u32,
    /// 0 = unknown.
    pub cgroup: u64,
}

/// pid -> latest name and process. Memory is bounded by the number of distinct tasks, not by
/// trace length.
#[derive(Default, Debug, Clone)]
pub struct TaskTable {
    /// Bounded like every per-pid map (see [`crate::pidmap`]): a file of distinct pids
    /// cannot grow it past [`crate::pidmap::PID_BUDGET`] names.
    names: crate::pidmap::PidMap<Task>,
}

impl TaskTable {
    /// Names dropped over the budget (see [`crate::pidmap`]).
    pub fn evicted(&self) -> u64 {
        self.names.evicted()
    }

    /// Returns true when this changed the table (a new task, a renamed one, or a task whose
    /// process became known or changed: a reused pid). A fact without a tgid keeps the known one.
    pub fn learn(&mut self, t: TaskName) -> bool {
        let old = self.names.get(&t.pid).copied();
        let tgid = if t.tgid == 0 {
            old.map_or(0, |o| o.tgid)
        } else {
            t.tgid
        };
        let cgroup = if t.cgroup == 0 {
            old.map_or(0, |o| o.cgroup)
        } else {
            t.cgroup
        };
        let new = Task {
            comm: t.comm,
            tgid,
            cgroup,
        };
        if old == Some(new) {
            return false;
        }
        self.names.insert(t.pid, new);
        true
    }

    /// The fact that re-creates `pid`'s entry (its name and process), for a consumer that
    /// starts mid-stream.
    pub fn fact(&self, pid: u32) -> Option<TaskName> {
        self.names.get(&pid).map(|t| TaskName {
            pid,
            comm: t.comm,
            tgid: t.tgid,
            cgroup: t.cgroup,
        })
    }

    /// `pid`'s cgroup id; `None` when no fact said it.
    pub fn cgroup(&self, pid: u32) -> Option<u64> {
        self.names.get(&pid).map(|t| t.cgroup).filter(|&c| c != 0)
    }

    pub fn get(&self, pid: u32) -> Option<&Comm> {
        self.names.get(&pid).map(|t| &t.comm)
    }

    /// `pid`'s process: the idle task is its own (0); `None` when no fact said it.
    pub fn tgid(&self, pid: u32) -> Option<u32> {
        if pid == 0 {
            return Some(0);
        }
        self.names.get(&pid).map(|t| t.tgid).filter(|&g| g != 0)
    }

    /// Drops `pid`'s entry, so the next [`TaskTable::learn`] of it counts as a change.
    pub fn forget(&mut self, pid: u32) {
        self.names.remove(&pid);
    }

    pub fn comm(&self, pid: u32) -> std::borrow::Cow<'_, str> {
        if pid == 0 {
            return "swapper".into();
        }
        self.names
            .get(&pid)
            .map_or_else(|| "?".into(), |t| t.comm.as_str())
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (u32, &Comm)> {
        self.names.iter().map(|(p, t)| (*p, &t.comm))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The decoder's element stride; `cargo test -p wakeviz-core event::tests -- --nocapture`
    /// prints it (216 bytes with the select record inline, before it was boxed).
    #[test]
    fn event_is_small() {
        let (ev, sel) = (size_of::<Event>(), size_of::<Select>());
        println!("size_of::<Event>() = {ev}, size_of::<Select>() = {sel}");
        assert!(ev <= 40, "Event grew to {ev} bytes");
        assert!(size_of::<Wake>() < ev && size_of::<Switch>() < ev);
    }

    /// The compatibility rule for growing the kinds: a recording's per-kind counters written
    /// when there were fewer kinds read back with the later kinds at zero; more kinds than this
    /// build knows is refused, not truncated.
    #[test]
    fn per_kind_counters_from_fewer_kinds_read_with_zeros_and_more_are_refused() {
        let short: PerKind<u64> = serde_json::from_str("[1,2,3]").expect("a shorter array reads");
        assert_eq!(short.0[..3], [1, 2, 3]);
        assert!(short.0[3..].iter().all(|&v| v == 0), "{short:?}");
        let full = PerKind::<u64>::from_fn(|k| k.index() as u64 + 10);
        let json = serde_json::to_string(&full).expect("serialises");
        assert_eq!(serde_json::from_str::<PerKind<u64>>(&json).ok(), Some(full));
        let long = format!("[{}]", ["1"; Kind::COUNT + 1].join(","));
        let err = serde_json::from_str::<PerKind<u64>>(&long).expect_err("too many kinds");
        assert!(err.to_string().contains("one per event kind"), "{err}");
    }

    /// Every plain kind's words give the event back, its signed fields at both extremes.
    #[test]
    fn plain_events_round_trip_through_their_words() {
        for k in Kind::ALL {
            let sample = crate::fields::sample(k);
            let Some(_) = sample.words() else {
                assert_eq!(k, Kind::Select);
                continue;
            };
            for v in [0u32, 1, 0x7fff_ffff, 0x8000_0000, u32::MAX] {
                let w = [v, v ^ 1, v.wrapping_add(3), v, v.rotate_left(7)];
                let mut wn = w;
                wn[k.words()..].fill(0);
                let e = Event::from_words(k, 77, 3, &wn).expect("plain");
                assert_eq!((e.kind(), e.ts_ns(), e.cpu()), (k, 77, 3));
                assert_eq!(e.words(), Some(wn), "{k:?}");
            }
        }
        assert_eq!(unzz(zz(i32::MIN)), i32::MIN);
        assert_eq!(unzz(zz(-1)), -1);
        assert_eq!(zz(-1), 1);
    }
}
