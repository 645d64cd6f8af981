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

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Bumped whenever a struct below changes layout or meaning.
pub const ABI_VERSION: u32 = 1;

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
}

impl EventKind {
    pub const fn from_u16(v: u16) -> Option<Self> {
        Some(match v {
            1 => Self::Waking,
            2 => Self::Wakeup,
            3 => Self::WakeupNew,
            4 => Self::Switch,
            5 => Self::Migrate,
            6 => Self::Select,
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
    pub _pad0: u32,
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
    /// The tail padding up to the struct's 8-byte alignment, named so the probe writes zeros
    /// there instead of whatever its stack held (found by the `IntoBytes` derive; same layout).
    pub _pad0: u32,
}
const _: () = assert!(core::mem::size_of::<SelectEvent>() == 72);

/// Layout of the per-CPU `STATS` counters array (index -> meaning).
pub mod stat {
    /// Events of kind k offered to the ring buffer are counted at index `k` (1..=6).
    pub const OFFERED_BASE: u32 = 0;
    /// Failed `bpf_ringbuf_reserve`: the event was lost in the kernel.
    pub const RINGBUF_DROPS: u32 = 8;
    /// fexit without a matching fentry on this CPU (should stay 0).
    pub const SELECT_UNPAIRED: u32 = 9;
    /// Number of entries in the array.
    pub const LEN: u32 = 16;
}
