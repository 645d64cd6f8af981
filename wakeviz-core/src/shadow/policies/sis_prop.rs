//! P0, SIS_PROP (default up to 5.19, removed in 6.7), 5.14-6.6 semantics, with its state emulated
//! from the stream (`select_idle_cpu` in kernel/sched/fair.c): the budget is computed on the
//! waker's CPU from `wake_avg_idle` (half of `avg_idle` at the last wake-after-idle, halved per
//! elapsed jiffy, minus the time of each completed scan) and the waker LLC's `avg_scan_cost` (EWMA
//! 1/8 of modelled scan times); `nr = max(4, |LLC(T)| * wake_avg_idle / (avg_scan_cost + 1))`, at
//! most `nr - 1` CPUs probed, and only outside idle-core mode. SIS_UTIL is off in this policy.
//!
//! The scan time is modelled as [`SCAN_FIXED_NS`] + [`SCAN_PROBE_NS`] per probe (the kernel
//! measures it with `cpu_clock`; the recordings cannot). This private state evolves from this
//! policy's own (open-loop) decisions; `avg_idle` (EWMA 1/8 of idle periods ended by a
//! wakeup, start 1 ms, capped at 2 x 500 us) and the moment of the last wake-after-idle come
//! from the stream, through [`Policy::on_event`].
use crate::{
    event::{Event, Kind},
    shadow::{
        policy::{Ctx, Decision, KernelFlavour, Policy, Scratch, before_scan, select_idle_cpu},
        state::{MIGRATION_COST_NS, State, jiffies, sis_prop_budget},
        topo::ShadowTopo,
    },
};

/// Modelled fixed cost of one `select_idle_cpu` call (clock reads, mask setup).
pub const SCAN_FIXED_NS: u64 = 300;
/// Modelled cost of one idle probe (one remote runqueue's cache lines).
pub const SCAN_PROBE_NS: u64 = 50;

/// One CPU's SIS_PROP state, in one record: a switch or wakeup on the per-event path then
/// touches one cache line, not one per field.
#[derive(Clone, Copy, Debug)]
struct Cpu {
    /// From the stream: `rq->avg_idle`, the start of the current idle period (`idle_stamp`,
    /// 0 when running), a counter bumped on every wake-after-idle (the policy reseeds its
    /// `wake_avg_idle` then) and that wakeup's jiffy.
    avg_idle: u64,
    idle_stamp: u64,
    wake_gen: u32,
    wake_jiffies: u64,
    /// The policy's own: `wake_avg_idle`, its stamp, the generation it was seeded from.
    wake_avg_idle: u64,
    wake_stamp: u64,
    seen_gen: u32,
    started: bool,
}

pub struct SisProp {
    cpus: Vec<Cpu>,
    avg_scan_cost: Vec<u64>,
}

impl SisProp {
    pub fn new(t: &ShadowTopo) -> Self {
        let cpu = Cpu {
            avg_idle: 2 * MIGRATION_COST_NS,
            idle_stamp: 0,
            wake_gen: 0,
            wake_jiffies: 0,
            wake_avg_idle: 0,
            wake_stamp: 0,
            seen_gen: 0,
            started: false,
        };
        Self {
            cpus: vec![cpu; t.bound],
            avg_scan_cost: vec![0; t.n_llcs()],
        }
    }
}

impl Policy for SisProp {
    fn name(&self) -> &'static str {
        super::name::SIS_PROP
    }
    fn describe(&self) -> &'static str {
        "P0 SIS_PROP: scan depth from the waker's idle time (<=6.6), emulated"
    }
    fn kernel_flavour(&self) -> Option<KernelFlavour> {
        Some(KernelFlavour::SisProp)
    }
    fn approximations(&self) -> &'static [&'static str] {
        &[
            "SIS_PROP: avg_idle/wake_avg_idle emulated from idle periods, scan time modelled as 300 ns + 50 ns per probe",
        ]
    }
    fn event_kinds(&self) -> &'static [Kind] {
        &[Kind::Switch, Kind::Wakeup, Kind::WakeupNew]
    }
    fn on_event(&mut self, e: &Event, _t: &ShadowTopo, _st: &State) {
        match e {
            // The idle period starts when the CPU switches to idle (`idle_stamp`).
            // Per-CPU tables sized to the topology's bound: no other check needed (an
            // offline CPU's entries are never read, decisions only run on online CPUs).
            Event::Switch(s) => {
                if let Some(c) = self.cpus.get_mut(s.cpu as usize) {
                    c.idle_stamp = if s.next_pid == 0 { s.ts_ns.max(1) } else { 0 };
                }
            }
            // A wakeup that ends an idle period feeds `avg_idle` (ttwu_do_activate).
            Event::Wakeup(w) | Event::WakeupNew(w) => {
                let Some(c) = self.cpus.get_mut(w.target_cpu as usize) else {
                    return;
                };
                let stamp = c.idle_stamp;
                if stamp != 0 && w.ts_ns >= stamp {
                    let delta = w.ts_ns - stamp;
                    let a = c.avg_idle as i64;
                    let a = a + (delta as i64 - a) / 8;
                    c.avg_idle = (a.max(0) as u64).min(2 * MIGRATION_COST_NS);
                    c.wake_gen = c.wake_gen.wrapping_add(1);
                    c.wake_jiffies = jiffies(w.ts_ns);
                    c.idle_stamp = 0;
                }
            }
            _ => {}
        }
    }
    fn decide(&mut self, ctx: &Ctx, t: &ShadowTopo, st: &State, s: &mut Scratch) -> Decision {
        let (tg, hic, probes) = match before_scan(ctx, t, st, s) {
            Ok(d) => return d,
            Err(next) => next,
        };
        // The SIS_PROP state is emulated, never read: always inexact.
        ctx.mark_inexact();
        let now_j = jiffies(ctx.ts_ns);
        let mut wai = 0;
        if let Some(c) = self.cpus.get_mut(ctx.w as usize) {
            if !c.started || c.seen_gen != c.wake_gen {
                let fresh = c.seen_gen != c.wake_gen;
                c.started = true;
                c.seen_gen = c.wake_gen;
                c.wake_avg_idle = if fresh { c.avg_idle / 2 } else { c.avg_idle };
                c.wake_stamp = if fresh { c.wake_jiffies } else { now_j };
            }
            let elapsed = now_j.saturating_sub(c.wake_stamp);
            c.wake_avg_idle = if elapsed >= 64 {
                0
            } else {
                c.wake_avg_idle >> elapsed
            };
            c.wake_stamp = c.wake_stamp.max(now_j);
            wai = c.wake_avg_idle;
        }
        let wllc = t.llc(ctx.w) as usize;
        let ac = self.avg_scan_cost.get(wllc).copied().unwrap_or(0);
        let llc = t.llc(tg);
        let size = t.llc_size.get(llc as usize).copied().unwrap_or(0);
        let nr = sis_prop_budget(size, wai, ac);
        let limit = if hic {
            None
        } else {
            Some(u32::try_from(nr - 1).unwrap_or(u32::MAX))
        };
        let scan = select_idle_cpu(t, st, s, llc, tg, hic, limit);
        if !hic && !scan.budget_out {
            let cost = SCAN_FIXED_NS + SCAN_PROBE_NS * u64::from(scan.probes);
            if let Some(c) = self.cpus.get_mut(ctx.w as usize) {
                c.wake_avg_idle -= c.wake_avg_idle.min(cost);
            }
            if let Some(a) = self.avg_scan_cost.get_mut(wllc) {
                let cur = *a as i64;
                *a = (cur + (cost as i64 - cur) / 8).max(0) as u64;
            }
        }
        Decision {
            cpu: scan.cpu.unwrap_or(tg),
            probes: probes + scan.probes,
            rule: scan.rule.into(),
            clear_hint: scan.core_failed.then_some(llc),
            behind_waker: false,
            scan: scan.tests(),
        }
    }
}
