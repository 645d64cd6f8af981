//! The event ABI between the wakeviz probes (kernel side) and userspace.
//!
//! Every record the probes put in the ring buffer starts with [`EventHeader`]; `kind` says which
//! struct follows. The rules that keep both sides and old recordings honest:
//! - `#[repr(C)]`, every byte accounted for by a named field (explicit `_pad*`), so the layout
//!   is identical for `bpfel-unknown-none` and `x86_64` and no uninitialised padding reaches
//!   userspace; zerocopy's `IntoBytes` derive refuses to compile a struct with implicit padding,
//!   on both targets, and its `FromBytes` lets userspace read a record without `unsafe`;
//! - a compile-time size assertion per struct: a change in size is an ABI change and must bump
//!   [`ABI_VERSION`];
//! - units in field names (`ts_ns`, `*_cpu`).
#![cfg_attr(not(test), no_std)]

pub mod agg;
pub mod names;
pub mod verifier;

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Bumped whenever a struct below changes layout or meaning.
/// 2: [`SelectEvent`] may be followed by [`SelectInputs`] (and [`SelectMask`]); records of
/// version 1 are still read (their new inputs are unknown).
/// 3: [`SelectFlips`] may follow the inputs ([`exact::FLIPS`]); version-2 records still decode.
/// 4: a select record may carry [`SELECT_AT_WAKING`] in its `wake_flags`.
/// 5: such a record may also carry [`WAKE_FLAGS_FROM_STACK`]; version-4 records still decode
/// (their wake flags stay unknown).
/// 6: a pinned task's at-waking record is not sent when it would repeat the last at-waking
/// record of its CPU ([`PINNED_REPEATS_UNSENT_SINCE`]).
pub const ABI_VERSION: u32 = 6;

/// From this ABI on, a [`SELECT_AT_WAKING`] record of a task allowed one CPU (its inputs say
/// `task_nr_cpus_allowed` 1 and hold nothing else but the mask) is not sent when it repeats the
/// record its CPU keeps in slot `pid % PINNED_SLOTS` for that pid: same pid, old CPU and mask.
/// Each CPU has [`PINNED_SLOTS`] slots; a pinned record sent from it takes its pid's slot, an
/// unpinned at-waking record sent from it empties its pid's slot if that slot holds the pid.
/// A `sched_waking` record with no at-waking record before it, whose pid's slot on its CPU
/// holds that pid with the waking's old CPU, stands for that slot's record again. A pinned pipe
/// wakes the same tasks from the same CPU every time, so this spares it one record per wakeup.
pub const PINNED_REPEATS_UNSENT_SINCE: u32 = 6;

/// Slots per CPU for [`PINNED_REPEATS_UNSENT_SINCE`]'s records (a power of two).
pub const PINNED_SLOTS: usize = 8;

/// A [`SelectEvent::wake_flags`] bit no kernel wake flag uses (they stay below `0x100`): the
/// record is not a `select_task_rq_fair` call but the same inputs read by the `sched_waking`
/// tp_btf probe, where the function probes are unavailable, so the tracepoint-only shadow
/// knows the wakee's affinity, loads and flips. Its `chosen_cpu` is [`UNKNOWN_U32`], its
/// `entry_ts_ns` is the read, and the kernel's other wake flags are not known (zero). It is
/// sent just before the `sched_waking` record of the same wakeup, on the same CPU.
pub const SELECT_AT_WAKING: u32 = 1 << 31;

/// A [`SELECT_AT_WAKING`] record's `wake_flags` bit: the probe walked the waker's kernel stack
/// ([`WakeFrame`]), so the record's `WF_SYNC` bit (`0x10`) is known: set when the innermost
/// wake-up entry on that stack passes `WF_SYNC` (`__wake_up_sync_key` and its kin), clear
/// otherwise. Without it the record's wake flags are unknown.
pub const WAKE_FLAGS_FROM_STACK: u32 = 1 << 30;

/// The kernel's `WF_SYNC` wake flag (`kernel/sched/sched.h`).
pub const WF_SYNC: u32 = 0x10;

/// `BPF_COMPLEXITY_LIMIT_INSNS` (include/linux/bpf.h, since 5.2): the most instructions the
/// verifier processes for one program; past it the kernel refuses the program.
pub const VERIFIER_LIMIT_INSNS: u32 = 1_000_000;

/// The most instructions the verifier may process for one of wakeviz's probes, checked by the
/// live tests and the VM suite: a tenth of [`VERIFIER_LIMIT_INSNS`], so a kernel whose verifier
/// explores more paths still loads it.
pub const PROBE_VERIFIER_BUDGET_INSNS: u32 = VERIFIER_LIMIT_INSNS / 10;

/// Most [`WakeFrame`]s the probe compares each return address with.
pub const MAX_WAKE_FRAMES: u32 = 8;

/// Most return addresses of the waker's stack the probe reads at `sched_waking`: from the
/// tracepoint's own two frames, `try_to_wake_up` and the wait-queue function, a pipe's,
/// socket's or epoll's wake-up entry is the sixth (the walk's cost grows with the depth).
pub const WAKE_STACK_DEPTH: usize = 8;

/// A kernel function that starts wake-ups, as the text address range `[lo_ip, hi_ip)` userspace
/// found in `/proc/kallsyms`; the innermost one on the waker's stack says whether the wake-up
/// is `WF_SYNC` ([`WAKE_FLAGS_FROM_STACK`]). `lo_ip == 0` ends the table.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct WakeFrame {
    pub lo_ip: u64,
    pub hi_ip: u64,
    /// 1 when the function passes `WF_SYNC`, 0 when it does not.
    pub sync: u64,
}
const _: () = assert!(core::mem::size_of::<WakeFrame>() == 24);

/// Length of a task name as the kernel keeps it (`TASK_COMM_LEN`).
pub const COMM_LEN: usize = 16;

/// "Not known" marker for CPU numbers and for the kernel inputs read opportunistically.
pub const UNKNOWN_U32: u32 = u32::MAX;

/// Most ring buffers a capture spreads its CPUs over (the probes' `RINGS` array of maps; the
/// rule that picks the count is `wakeviz_core::rings`).
pub const MAX_RINGS: u32 = 64;

/// Which record follows the header. The values are part of the ABI.
#[repr(u16)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// `sched_waking`: fires in the waker's context, before placement.
    Waking = 1,
    /// `sched_wakeup`: the woken task is on its run queue (may run on the target CPU).
    Wakeup = 2,
    /// `sched_wakeup_new`: first wakeup of a forked task.
    WakeupNew = 3,
    /// `sched_switch`.
    Switch = 4,
    /// `sched_migrate_task`.
    Migrate = 5,
    /// `select_task_rq_fair` entry and exit joined in the kernel.
    Select = 6,
    /// Not an event: a [`BatchHeader`] framing several records of one CPU (see [`batch`]).
    Batch = 7,
}

impl EventKind {
    /// The highest kind number: what the statistics' per-kind range must hold.
    pub const LAST: Self = Self::Batch;

    pub const fn from_u16(v: u16) -> Option<Self> {
        Some(match v {
            1 => Self::Waking,
            2 => Self::Wakeup,
            3 => Self::WakeupNew,
            4 => Self::Switch,
            5 => Self::Migrate,
            6 => Self::Select,
            7 => Self::Batch,
            _ => return None,
        })
    }
}

/// Common prefix of every record.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct EventHeader {
    /// `bpf_ktime_get_ns()` (CLOCK_MONOTONIC) when the probe fired.
    pub ts_ns: u64,
    /// An [`EventKind`] value.
    pub kind: u16,
    /// CPU the probe ran on (`bpf_get_smp_processor_id()`).
    pub cpu: u16,
    /// Subject task: the woken task for wake events, `prev` for switches, the migrated task.
    pub pid: u32,
}
const _: () = assert!(core::mem::size_of::<EventHeader>() == 16);

/// `sched_waking`, `sched_wakeup`, `sched_wakeup_new`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct WakeEvent {
    pub hdr: EventHeader,
    /// The tracepoint's `target_cpu`: the task's old CPU for `sched_waking`, the CPU it was
    /// enqueued on for `sched_wakeup*`.
    pub target_cpu: u32,
    /// The task running where the probe fired (the waker for `sched_waking`; for wakeups taken
    /// in interrupt context this is the interrupted task, possibly idle = 0).
    pub waker_pid: u32,
    pub prio: i32,
    /// The woken task's thread-group id (its process), read from `task_struct` by the tp_btf
    /// and raw_tp probes; 0 = unknown (the classic tracepoint record has no tgid, and older
    /// probes wrote 0 in this slot, then padding, so the layout and ABI are unchanged).
    pub tgid: u32,
    /// The woken task's name.
    pub comm: [u8; COMM_LEN],
}
const _: () = assert!(core::mem::size_of::<WakeEvent>() == 48);

/// `sched_switch`; `hdr.pid` is `prev`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct SwitchEvent {
    pub hdr: EventHeader,
    pub next_pid: u32,
    /// `prev->__state` as the tracepoint reports it (0 = runnable, i.e. preempted).
    pub prev_state: u32,
    pub prev_prio: i32,
    pub next_prio: i32,
    pub next_comm: [u8; COMM_LEN],
}
const _: () = assert!(core::mem::size_of::<SwitchEvent>() == 48);

/// `sched_migrate_task`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct MigrateEvent {
    pub hdr: EventHeader,
    pub orig_cpu: u32,
    pub dest_cpu: u32,
}
const _: () = assert!(core::mem::size_of::<MigrateEvent>() == 24);

/// Bits of [`SelectEvent::exact_mask`]: which kernel inputs were read in the probe.
pub mod exact {
    pub const NR_RUNNING: u32 = 1 << 0;
    pub const NR_IDLE_SCAN: u32 = 1 << 1;
    pub const HAS_IDLE_CORES: u32 = 1 << 2;
    pub const PREV_NR_IDLE_SCAN: u32 = 1 << 3;
    pub const PREV_HAS_IDLE_CORES: u32 = 1 << 4;
    /// `cpu_load()` of the waker's and of prev's rq (`rq->cfs.avg.load_avg`).
    pub const LOADS: u32 = 1 << 5;
    /// `capacity_of()` of both (`rq->cpu_capacity`).
    pub const CAPACITY: u32 = 1 << 6;
    /// `task_h_load(p)`.
    pub const TASK_H_LOAD: u32 = 1 << 7;
    /// `task_h_load(current)`.
    pub const WAKER_H_LOAD: u32 = 1 << 8;
    /// `cfs_h_nr_delayed()` of the waker's rq (`h_nr_queued - h_nr_runnable`, or the 6.13
    /// `h_nr_delayed` field).
    pub const H_NR_DELAYED: u32 = 1 << 9;
    /// The waker's `PF_KTHREAD` and `nr_cpus_allowed`.
    pub const WAKER_KTHREAD: u32 = 1 << 10;
    /// The task's `nr_cpus_allowed`.
    pub const TASK_CPUS: u32 = 1 << 11;
    /// [`SelectMask`] follows [`SelectInputs`]: the task's allowed CPUs (0..255), read because
    /// it may not run everywhere.
    pub const MASK: u32 = 1 << 12;
    /// The task's `se.cfs_rq` is not its rq's root `cfs` (a cgroup task): `task_h_load` uses
    /// the group's `h_load`, which the kernel may refresh (once a jiffy) after our read.
    pub const TASK_IN_GROUP: u32 = 1 << 13;
    /// [`SelectFlips`] follows [`SelectInputs`] (ABI 3): the `record_wakee()` state.
    pub const FLIPS: u32 = 1 << 14;
    /// Kprobes placed from the kernel's debug info watched the idle scan of this call:
    /// [`SelectEvent::scan_cpus`] and [`SelectEvent::scan_path`] are measured, and
    /// `idle_scan_ns` is the time from the scan's entry to the function's exit when a scan ran.
    pub const SCAN: u32 = 1 << 15;
    /// [`SelectInputs`] follows the [`SelectEvent`] (ABI 2).
    pub const INPUTS: u32 = 1 << 31;
}

/// One `select_task_rq_fair` call; `hdr.ts_ns` is the exit time, `hdr.cpu` the waker CPU
/// (the function runs in the waker's context), `hdr.pid` the task being placed.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct SelectEvent {
    pub hdr: EventHeader,
    pub entry_ts_ns: u64,
    pub prev_cpu: u32,
    pub wake_flags: u32,
    /// Return value; [`UNKNOWN_U32`] if fexit could not read it.
    pub chosen_cpu: u32,
    /// The task running on the waker CPU (the waker).
    pub waker_pid: u32,
    /// `rq->nr_running` of the waker CPU at entry (includes the waker).
    pub waker_nr_running: u32,
    /// `sd_llc_shared->nr_idle_scan` of the waker's LLC at entry (SIS_UTIL budget).
    pub nr_idle_scan: u32,
    /// `sd_llc_shared->has_idle_cores` of the waker's LLC at entry.
    pub has_idle_cores: u32,
    /// Same two values for the LLC of `prev_cpu` (the scan target when the wakeup is not
    /// pulled to the waker).
    pub prev_nr_idle_scan: u32,
    pub prev_has_idle_cores: u32,
    /// Which of the value fields above are real reads; see [`exact`].
    pub exact_mask: u32,
    /// Time spent in `select_idle_cpu` during this call when that function could be probed,
    /// else [`UNKNOWN_U32`] (the usual case: it is inlined).
    pub idle_scan_ns: u32,
    /// With [`exact::SCAN`]: idle tests the scan made (one per `__select_idle_cpu` or
    /// `select_idle_core` call, saturating); probes without scan points write 0. This and
    /// `scan_path` fill what was the struct's tail padding, so the layout is unchanged.
    pub scan_cpus: u16,
    /// With [`exact::SCAN`]: the [`scan_path`] bits of the paths taken.
    pub scan_path: u16,
}
const _: () = assert!(core::mem::size_of::<SelectEvent>() == 72);

/// Bits of [`SelectEvent::scan_path`].
pub mod scan_path {
    /// `select_idle_cpu` was entered.
    pub const SCAN: u16 = 1 << 0;
    /// `select_idle_core` ran (the idle-core search).
    pub const CORE: u16 = 1 << 1;
    /// `select_idle_smt` ran (the SMT siblings of prev, before the scan).
    pub const SMT: u16 = 1 << 2;
    pub const ALL: u16 = SCAN | CORE | SMT;
}

/// The `wake_affine_weight`, delayed-dequeue, per-CPU-kthread and affinity inputs read at
/// `select_task_rq_fair` entry (ABI 2), appended to a [`SelectEvent`] whose `exact_mask` has
/// [`exact::INPUTS`]; each value is real when its [`exact`] bit is set. An extension rather than
/// new fields so that version-1 records (72 bytes) still decode.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct SelectInputs {
    /// `cpu_load(cpu_rq(this_cpu))`, `cpu_load(cpu_rq(prev_cpu))` (saturated to u32).
    pub waker_load: u32,
    pub prev_load: u32,
    /// `capacity_of()` of the waker's and prev's CPU.
    pub waker_capacity: u32,
    pub prev_capacity: u32,
    /// `task_h_load(p)` and `task_h_load(current)` as the kernel computes them from the
    /// fields at entry: `se.avg.load_avg * cfs_rq->h_load / (cfs_rq_load_avg(cfs_rq) + 1)`.
    pub task_h_load: u32,
    pub waker_h_load: u32,
    /// `cfs_h_nr_delayed(cpu_rq(this_cpu))`.
    pub waker_h_nr_delayed: u32,
    /// 1 when the waker has `PF_KTHREAD`.
    pub waker_kthread: u32,
    pub waker_nr_cpus_allowed: u32,
    pub task_nr_cpus_allowed: u32,
}
const _: () = assert!(core::mem::size_of::<SelectInputs>() == 40);

/// A select record with its ABI-2 inputs (the common case: 112 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct SelectEventV2 {
    pub ev: SelectEvent,
    pub inputs: SelectInputs,
}
const _: () = assert!(core::mem::size_of::<SelectEventV2>() == 112);

/// The task's allowed CPUs 0..255 (`p->cpus_ptr` bits), sent only for a task that may not run
/// on every online CPU, so the usual record stays 112 bytes.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct SelectMask {
    pub bits: [u64; 4],
}

/// A select record with inputs and the allowed mask (144 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct SelectEventMasked {
    pub ev: SelectEvent,
    pub inputs: SelectInputs,
    pub mask: SelectMask,
}
const _: () = assert!(core::mem::size_of::<SelectEventMasked>() == 144);

/// The `record_wakee()` / `wake_wide()` state at `select_task_rq_fair` entry (ABI 3), before
/// the kernel's own `record_wakee(p)` updates the waker's part. Read because a task inherits
/// its parent's `wakee_flips` at fork and only decays them when it wakes someone itself: a
/// thread that never wakes anyone keeps the count it was born with, which no event shows.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct SelectFlips {
    /// `current->wakee_flips` and `p->wakee_flips`.
    pub waker_wakee_flips: u32,
    pub task_wakee_flips: u32,
    /// Low 32 bits of `current->wakee_flip_decay_ts` and of `jiffies` at entry: the age
    /// decides whether `record_wakee()` halves the count, and the pairs with `ts_ns` give HZ.
    pub waker_flip_decay_jiffies: u32,
    pub jiffies: u32,
    /// 1 when `current->last_wakee == p` (then `record_wakee()` does not count a flip).
    pub waker_last_wakee_is_task: u32,
    pub _pad0: u32,
}
const _: () = assert!(core::mem::size_of::<SelectFlips>() == 24);

/// A select record with its inputs and `record_wakee()` state (ABI 3's common case).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct SelectEventV3 {
    pub ev: SelectEvent,
    pub inputs: SelectInputs,
    pub flips: SelectFlips,
}
const _: () = assert!(core::mem::size_of::<SelectEventV3>() == 136);

/// ABI 3 with the allowed mask.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct SelectEventMaskedV3 {
    pub ev: SelectEvent,
    pub inputs: SelectInputs,
    pub flips: SelectFlips,
    pub mask: SelectMask,
}
const _: () = assert!(core::mem::size_of::<SelectEventMaskedV3>() == 168);

/// A record the probes send: every one starts with an [`EventHeader`], whose stamp orders it
/// in a batch. A new record type is one line in the list below.
pub trait Record: 'static {
    fn ts_ns(&self) -> u64;
}

macro_rules! records {
    ($($t:ty => $($path:ident).+;)*) => {$(
        impl Record for $t {
            #[inline(always)]
            fn ts_ns(&self) -> u64 {
                self.$($path).+.ts_ns
            }
        }
    )*};
}

records! {
    WakeEvent => hdr;
    SwitchEvent => hdr;
    MigrateEvent => hdr;
    SelectEvent => hdr;
    SelectEventV3 => ev.hdr;
    SelectEventMaskedV3 => ev.hdr;
}

/// Per-CPU batching: the probes write records into a per-CPU buffer and hand it to the ring
/// in one `bpf_ringbuf_output`, so the ring's spinlock and its reserve/commit are paid once per
/// batch instead of once per record (measured by the bench's batch floor at about a third of the
/// streaming floor's cost). A batch is a transport framing between the probes and the binary
/// they are embedded in: recordings hold the records, never the framing.
///
/// A batch goes to the ring when it holds [`batch::BYTES`] or more, when its CPU switches to the
/// idle task (so an idle CPU never holds one), when a record finds its oldest record older than
/// [`batch::MAX_AGE_NS`], and when userspace runs the flush program on that CPU (a CPU that runs
/// one task and makes no event). Records from the idle task's context and records of a program
/// that interrupted another one on the same CPU go to the ring directly.
pub mod batch {
    /// Bytes of records after which a batch is sent. A power of two: the probe masks its write
    /// offset with `BYTES - 1`, which is how the verifier learns the write stays in bounds.
    pub const BYTES: usize = 2048;
    /// The longest record, the room kept after [`BYTES`] in the buffer.
    pub const MAX_RECORD: usize = size_of::<super::SelectEventMaskedV3>();
    /// A batch whose oldest record is older than this is sent with the next record.
    pub const MAX_AGE_NS: u64 = 2_000_000;
    /// What the flush program returns when the CPU's batch was being written (it interrupted
    /// a program): nothing was sent, try again.
    pub const FLUSH_BUSY: u32 = 1;
}

/// Header of a batch ring record: `len` bytes of records of the current ABI follow, back to
/// back, each as long as [`record_len`] says.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct BatchHeader {
    /// When the batch was sent (informational: each record has its own stamp).
    pub ts_ns: u64,
    /// [`EventKind::Batch`].
    pub kind: u16,
    pub cpu: u16,
    /// Bytes of records after this header.
    pub len: u32,
}
const _: () = assert!(core::mem::size_of::<BatchHeader>() == 16);

/// The length of a record of this ABI inside a batch, where records carry no length of their
/// own: fixed per kind, and for a select record given by its `exact_mask` (the probe appends the
/// flips block to every record with inputs, the mask when [`exact::MASK`] is set). `None` for a
/// kind that cannot be inside a batch.
pub const fn record_len(kind: EventKind, exact_mask: u32) -> Option<usize> {
    Some(match kind {
        EventKind::Waking | EventKind::Wakeup | EventKind::WakeupNew => size_of::<WakeEvent>(),
        EventKind::Switch => size_of::<SwitchEvent>(),
        EventKind::Migrate => size_of::<MigrateEvent>(),
        EventKind::Select => {
            if exact_mask & exact::MASK != 0 {
                size_of::<SelectEventMaskedV3>()
            } else if exact_mask & exact::INPUTS != 0 {
                size_of::<SelectEventV3>()
            } else {
                size_of::<SelectEvent>()
            }
        }
        EventKind::Batch => return None,
    })
}

/// Layout of the per-CPU `STATS` counters array (index -> meaning): one range of slots for the
/// event kinds, the other counters after it, so a new kind cannot land on another counter.
pub mod stat {
    use crate::EventKind;

    /// Slots `OFFERED_BASE..OFFERED_END` count the events offered to the ring buffer, by
    /// [`EventKind`] number ([`offered`]).
    pub const OFFERED_BASE: u32 = 0;
    pub const OFFERED_END: u32 = 16;
    /// Failed `bpf_ringbuf_reserve`: the event was lost in the kernel.
    pub const RINGBUF_DROPS: u32 = OFFERED_END;
    /// fexit without a matching fentry on this CPU (should stay 0).
    pub const SELECT_UNPAIRED: u32 = OFFERED_END + 1;
    /// Batches handed to the ring (see [`crate::batch`]).
    pub const BATCHES: u32 = OFFERED_END + 2;
    /// Records sent to the ring on their own although batching is on (idle-task context, or a
    /// program that interrupted another on its CPU).
    pub const UNBATCHED: u32 = OFFERED_END + 3;
    /// Records lost with a batch the ring had no room for (also counted in [`RINGBUF_DROPS`]).
    pub const BATCH_DROPS: u32 = OFFERED_END + 4;
    /// Number of entries in the array.
    pub const LEN: u32 = OFFERED_END + 8;

    /// The slot counting events of `kind` offered to the ring buffer.
    pub const fn offered(kind: EventKind) -> u32 {
        OFFERED_BASE + kind as u32
    }

    const _: () = assert!(offered(EventKind::LAST) < OFFERED_END);
    const _: () = assert!(BATCH_DROPS < LEN);
}
