//! The registered analyses, in fold order: one line each. A new analysis is one file that
//! implements [`Part`] and one line here; the fold, the scope reset and the snapshot reach it
//! through the generated [`Parts`].
use super::{
    part::{Ctx, Part, Placed, Ran, ScanSample, Unplaced},
    placement::Classified,
};
use crate::{
    event::{Event, SchedstatSample},
    format::Header,
    join::Placement,
};

use super::{
    Snapshot, events::EventTally, kernel_counters::KernelCounters, matrix::Matrix,
    records::Records, scan::ScanPart, scan_measured::MeasuredScanPart, series::Series,
    shadow_rows::ShadowRows, switch_gaps::SwitchGaps, tasks::TaskStats, wake::WakeLatency,
    wakeups::PlacementPart, window::RollingWindows,
};

macro_rules! parts {
    ($($field:ident: $ty:ty),* $(,)?) => {
        /// Every registered analysis, each one field.
        pub(crate) struct Parts {
            $(pub(crate) $field: $ty,)*
        }

        impl Parts {
            pub(crate) fn new(h: &Header) -> Self {
                Self { $($field: <$ty as Part>::new(h),)* }
            }
            #[inline]
            pub(crate) fn on_event(&mut self, cx: &Ctx, e: &Event) {
                $(self.$field.on_event(cx, e);)*
            }
            pub(crate) fn on_schedstat(&mut self, cx: &Ctx, s: &SchedstatSample) {
                $(self.$field.on_schedstat(cx, s);)*
            }
            #[inline]
            pub(crate) fn on_scan(&mut self, cx: &Ctx, s: &ScanSample) {
                $(self.$field.on_scan(cx, s);)*
            }
            #[inline]
            pub(crate) fn on_any_placement(&mut self, cx: &Ctx, p: &Placement, c: &Classified) {
                $(self.$field.on_any_placement(cx, p, c);)*
            }
            #[inline]
            pub(crate) fn on_placement(&mut self, cx: &Ctx, pl: &Placed) {
                $(self.$field.on_placement(cx, pl);)*
            }
            #[inline]
            pub(crate) fn on_new_task(&mut self, cx: &Ctx, pl: &Placed) {
                $(self.$field.on_new_task(cx, pl);)*
            }
            #[inline]
            pub(crate) fn on_new_task_ran(&mut self, cx: &Ctx, r: &Ran) {
                $(self.$field.on_new_task_ran(cx, r);)*
            }
            #[inline]
            pub(crate) fn on_gave_up(&mut self, cx: &Ctx, pid: u32) {
                $(self.$field.on_gave_up(cx, pid);)*
            }
            #[inline]
            pub(crate) fn on_unplaced(&mut self, cx: &Ctx, u: &Unplaced) {
                $(self.$field.on_unplaced(cx, u);)*
            }
            #[inline]
            pub(crate) fn on_ran(&mut self, cx: &Ctx, r: &Ran) {
                $(self.$field.on_ran(cx, r);)*
            }
            pub(crate) fn expire(&mut self, now_ns: u64) {
                $(self.$field.expire(now_ns);)*
            }
            pub(crate) fn rescope(&mut self, cx: &Ctx) {
                $(self.$field.rescope(cx);)*
            }
            pub(crate) fn fill(&self, cx: &Ctx, s: &mut Snapshot) {
                $(self.$field.fill(cx, s);)*
            }
        }
    };
}

parts! {
    events: EventTally,
    placement: PlacementPart,
    scan: ScanPart,
    scan_measured: MeasuredScanPart,
    wake: WakeLatency,
    windows: RollingWindows,
    series: Series,
    matrix: Matrix,
    tasks: TaskStats,
    shadow_rows: ShadowRows,
    records: Records,
    schedstat: KernelCounters,
    switch_gaps: SwitchGaps,
}
