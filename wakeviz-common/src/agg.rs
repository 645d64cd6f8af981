//! The in-kernel aggregate mode's maps (`--serve` without `--record` and without the
//! dashboard): what the aggregate programs count and the layout userspace reads back.
//!
//! Same rules as the event ABI: `#[repr(C)]`, every byte a named field, a size assertion each.
//! Counters live in per-CPU arrays (no atomics on the hot path); userspace sums the CPUs' copies.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Placement levels, closest first, with the same indices as `wakeviz_core::topology::Level`
/// (`same_cpu` .. `cross_package`; equality tested in the core).
pub const LEVELS: usize = 6;

/// A CPU's place in the topology, written by userspace from the `Topology` before attaching.
/// An entry with `core == ABSENT` is a CPU the topology does not know (offline, beyond it).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct CpuPlace {
    /// Index of the CPU's physical core (SMT sibling group).
    pub core: u32,
    pub llc: u32,
    pub node: u32,
    pub package: u32,
}
const _: () = assert!(core::mem::size_of::<CpuPlace>() == 16);

/// `core` of a CPU the topology does not know.
pub const ABSENT: u32 = u32::MAX;

impl CpuPlace {
    pub const UNKNOWN: Self = Self {
        core: ABSENT,
        llc: ABSENT,
        node: ABSENT,
        package: ABSENT,
    };

    pub const fn known(&self) -> bool {
        self.core != ABSENT
    }
}

/// The closest level two CPUs share, as an index into the levels: the kernel side's copy of
/// `wakeviz_core::topology::Level::between` (tested equal on every pair of the core's fixture
/// topologies), kept branch-only so the verifier sees a bounded result.
#[inline(always)]
pub fn level_index(same_cpu: bool, a: &CpuPlace, b: &CpuPlace) -> usize {
    if same_cpu {
        0
    } else if a.core == b.core {
        1
    } else if a.llc == b.llc {
        2
    } else if a.node == b.node {
        3
    } else if a.package == b.package {
        4
    } else {
        5
    }
}

/// Placement counters of one CPU, in one role (the CPU a wakeup landed on, or its waker's).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct PlaceCounts {
    /// Every placement counted here, classified or not.
    pub count: u64,
    /// Placements with a CPU outside the topology (no levels).
    pub unclassified: u64,
    /// Level of waker CPU -> chosen CPU.
    pub vs_waker: [u64; LEVELS],
    /// Level of previous CPU -> chosen CPU.
    pub vs_prev: [u64; LEVELS],
    /// Affine placements (see `wakeviz_core::analysis::placement`) by the level of waker CPU ->
    /// previous CPU.
    pub affine_by_waker_prev: [u64; LEVELS],
}
const _: () = assert!(core::mem::size_of::<PlaceCounts>() == 20 * 8);

impl PlaceCounts {
    pub fn merge(&mut self, o: &Self) {
        self.count += o.count;
        self.unclassified += o.unclassified;
        for i in 0..LEVELS {
            self.vs_waker[i] += o.vs_waker[i];
            self.vs_prev[i] += o.vs_prev[i];
            self.affine_by_waker_prev[i] += o.affine_by_waker_prev[i];
        }
    }
}

/// One `AGG_CPU` slot (indexed by CPU number): wakeups that landed there and wakeups woken
/// from there.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct CpuCounts {
    pub landed: PlaceCounts,
    pub woke: PlaceCounts,
}
const _: () = assert!(core::mem::size_of::<CpuCounts>() == 2 * 160);

/// Slots of the `AGG_TOTALS` array.
pub mod totals {
    /// First placements of new tasks (`sched_wakeup_new`).
    pub const NEW_TASKS: u32 = 0;
    /// Wakeups whose chosen CPU is beyond `AGG_CPU` (hot-plugged after the start).
    pub const BEYOND: u32 = 1;
    pub const LEN: u32 = 2;
}

/// log2 buckets per histogram: bucket 0 holds 0, bucket `i > 0` holds `[2^(i-1), 2^i)`.
pub const HIST_BUCKETS: usize = 64;

/// A log2 histogram of latencies, bucketed in `UNIT_NS` units (µs for wakeup-to-run, as the
/// report shows it), with the exact count, sum and extremes in ns.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct LogHist {
    pub buckets: [u64; HIST_BUCKETS],
    pub count: u64,
    pub sum_ns: u64,
    /// Largest value seen, ns.
    pub max_ns: u64,
    /// The smallest value seen, stored as `!min` and kept with `max` so that the all-zero
    /// initial map value needs no set-up (`!0` would be `u64::MAX`, larger than any value).
    pub min_inv_ns: u64,
}
const _: () = assert!(core::mem::size_of::<LogHist>() == (HIST_BUCKETS + 4) * 8);

impl Default for LogHist {
    fn default() -> Self {
        Self {
            buckets: [0; HIST_BUCKETS],
            count: 0,
            sum_ns: 0,
            max_ns: 0,
            min_inv_ns: 0,
        }
    }
}

impl LogHist {
    /// The bucket of a value already divided by the unit (`1 + ilog2(x)`, 0 for 0); the top
    /// bucket also holds everything above it. Written as a branch ladder rather than with
    /// `leading_zeros`: the verifier cannot bound LLVM's expansion of ctlz and refuses the
    /// array index it produces, while each step here is a compare against a constant.
    #[inline(always)]
    pub const fn bucket(x: u64) -> usize {
        if x == 0 {
            return 0;
        }
        let (mut v, mut b) = (x, 1usize);
        if v >= 1 << 32 {
            v >>= 32;
            b += 32;
        }
        if v >= 1 << 16 {
            v >>= 16;
            b += 16;
        }
        if v >= 1 << 8 {
            v >>= 8;
            b += 8;
        }
        if v >= 1 << 4 {
            v >>= 4;
            b += 4;
        }
        if v >= 1 << 2 {
            v >>= 2;
            b += 2;
        }
        if v >= 1 << 1 {
            b += 1;
        }
        if b < HIST_BUCKETS {
            b
        } else {
            HIST_BUCKETS - 1
        }
    }

    pub fn merge(&mut self, o: &Self) {
        for (a, b) in self.buckets.iter_mut().zip(o.buckets) {
            *a += b;
        }
        self.count += o.count;
        self.sum_ns += o.sum_ns;
        self.max_ns = self.max_ns.max(o.max_ns);
        self.min_inv_ns = self.min_inv_ns.max(o.min_inv_ns);
    }

    /// Smallest value recorded, `None` when empty.
    pub fn min_ns(&self) -> Option<u64> {
        (self.count > 0).then_some(!self.min_inv_ns)
    }
}

/// Slots of the `AGG_HIST` array of wakeup-to-run histograms (`sched_wakeup` to the wakee's
/// next switch-in).
pub mod hist {
    /// Every wakeup (placed or not), not new tasks.
    pub const OVERALL: u32 = 0;
    /// `BY_LEVEL + level index` (waker CPU -> chosen CPU).
    pub const BY_LEVEL: u32 = 1;
    /// First runs of new tasks.
    pub const NEW_TASK: u32 = 7;
    pub const LEN: u32 = 8;
    /// Wakeup-to-run latencies are bucketed in µs.
    pub const UNIT_NS: u64 = 1_000;
}

/// Slots of the per-CPU `AGG_STATS` counters.
pub mod stat {
    /// Tracepoint hits of event kind `k` (the `EventKind` values 1..=5) are counted at `k`.
    pub const EVENTS_BASE: u32 = 0;
    /// `sched_wakeup`s without a pending `sched_waking` (before the start, or evicted).
    pub const UNMATCHED_WAKEUPS: u32 = 8;
    /// Wakeups of the running task itself (no placement).
    pub const SELF_WAKEUPS: u32 = 9;
    /// Pending `sched_waking`s older than the join horizon when their wakeup came.
    pub const STALE_WAKINGS: u32 = 10;
    /// Failed inserts into the pending maps.
    pub const PENDING_FULL: u32 = 11;
    pub const LEN: u32 = 16;

    // Every kind's slot lies below the first counter.
    const _: () = assert!(EVENTS_BASE + (crate::EventKind::LAST as u32) < UNMATCHED_WAKEUPS);
}

/// A task's pending state, keyed by pid: its `sched_waking` until the `sched_wakeup`, and its
/// `sched_wakeup` until its switch-in. One entry per task, updated in place (the flags say
/// which halves are live) instead of inserted and deleted per event: a hash lookup is several
/// times cheaper than an LRU insert or delete.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct TaskState {
    pub waking_ts_ns: u64,
    pub wakeup_ts_ns: u64,
    pub waker_cpu: u32,
    /// The task's CPU at `sched_waking` (its previous CPU).
    pub prev_cpu: u32,
    /// `hist::BY_LEVEL + level`, `hist::NEW_TASK`, or `hist::OVERALL` (no level known).
    pub run_slot: u32,
    /// [`task_flags`] bits.
    pub flags: u32,
}
const _: () = assert!(core::mem::size_of::<TaskState>() == 32);

/// Bits of [`TaskState::flags`].
pub mod task_flags {
    /// A `sched_waking` waits for its `sched_wakeup`.
    pub const WAKING: u32 = 1 << 0;
    /// That waking was the running task waking itself (no placement follows).
    pub const SELF_WAKE: u32 = 1 << 1;
    /// A wakeup waits for the task's switch-in.
    pub const RUN: u32 = 1 << 2;
}

/// Horizons of the pending maps, equal to `wakeviz_core::horizons` (tested there).
pub const JOIN_WAKING_NS: u64 = 10_000_000_000;
pub const WAKE_TO_RUN_NS: u64 = 10_000_000_000;

/// Entries of the per-task map (LRU: the least recently used tasks go first when it is full).
pub const PENDING_ENTRIES: u32 = 65_536;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_log2() {
        assert_eq!(LogHist::bucket(0), 0);
        assert_eq!(LogHist::bucket(1), 1);
        assert_eq!(LogHist::bucket(2), 2);
        assert_eq!(LogHist::bucket(3), 2);
        assert_eq!(LogHist::bucket(4), 3);
        assert_eq!(LogHist::bucket(u64::MAX), HIST_BUCKETS - 1);
        let reference = |x: u64| if x == 0 { 0 } else { 1 + x.ilog2() as usize };
        let mut x = 1u64;
        while x < 1 << 62 {
            for v in [x - 1, x, x + 1, x + x / 3] {
                assert_eq!(
                    LogHist::bucket(v),
                    reference(v).min(HIST_BUCKETS - 1),
                    "{v}"
                );
            }
            x <<= 1;
        }
    }

    #[test]
    fn min_through_inverted_max() {
        let mut a = LogHist::default();
        assert_eq!(a.min_ns(), None);
        let mut b = LogHist {
            count: 1,
            min_inv_ns: !7,
            ..LogHist::default()
        };
        a.merge(&b);
        b.min_inv_ns = !3;
        a.merge(&b);
        assert_eq!(a.min_ns(), Some(3));
    }
}
