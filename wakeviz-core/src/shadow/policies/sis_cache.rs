//! SIS_CACHE (Chen Yu, "[PATCH v2 0/3] Introduce SIS_CACHE", not merged) on
//! SIS_UTIL: a short-sleeping task's previous CPU is reserved as cache-hot for a while, and
//! other wakees' scans skip it.
//! - cache-hot duration (v2 1/3): at each wakeup, a sleep shorter than
//!   `sysctl_sched_migration_cost` (500 us) moves `avg_hot_dur` an eighth of the way to it
//!   (`update_avg`); a longer sleep halves it;
//! - reservation (v2 2/3): when a task blocks and its CPU goes idle, the CPU is cache-hot until
//!   `max(timeout, now + avg_hot_dur)`;
//! - scan (v1 2/2, message id
//!   `4f2131940d43060eda55847a2affc8042179b4ee.1695704179.git.yu.c.chen@intel.com`; v2 3/3, same
//!   title, was not at hand): `select_idle_cpu` skips cache-hot idle
//!   CPUs and idle cores, remembering the first hot idle CPU, which it returns when no cold one
//!   turned up; a budget that runs out returns nothing. The SIS shortcuts (target, prev,
//!   recent_used_cpu, prev's SMT sibling) still take a reserved CPU, as in the patch.
use crate::{
    event::{Event, Kind},
    pidmap::PidMap,
    shadow::{
        budget::MIGRATION_COST_NS,
        policy::{Ctx, Decision, Policy, Rule, Scratch, Stage, before_scan, sis_util_budget},
        state::State,
        topo::ShadowTopo,
    },
    topology::CpuSet,
};

pub struct SisCache {
    /// Per task: `avg_hot_dur`, ns.
    hot_dur: PidMap<u64>,
    /// Per CPU: `rq->cache_hot_timeout`, ns.
    timeout: Vec<u64>,
}

impl SisCache {
    pub fn new(t: &ShadowTopo) -> Self {
        Self {
            hot_dur: PidMap::default(),
            timeout: vec![0; t.bound],
        }
    }

    fn hot(&self, cpu: u32, now: u64) -> bool {
        self.timeout.get(cpu as usize).is_some_and(|&t| now < t)
    }

    /// `select_idle_cpu` with the cache-hot skip. Returns (CPU, probes). `cand` is scratch.
    #[allow(clippy::too_many_arguments)]
    fn scan(
        &self,
        ctx: &Ctx,
        t: &ShadowTopo,
        st: &State,
        cand: &mut CpuSet,
        tg: u32,
        hic: bool,
        limit: Option<u32>,
    ) -> (Option<u32>, u32) {
        if limit == Some(0) {
            return (None, 0);
        }
        let llc = t.llc(tg);
        if !hic {
            return self.plain_scan(ctx, st, cand, t.llc_mask(llc), tg, limit);
        }
        let cpus = t.llc_cpus(llc);
        let start = cpus.partition_point(|&c| c <= tg);
        let order = cpus[start..].iter().chain(&cpus[..start]).copied();
        cand.copy_from(t.llc_mask(llc));
        // Idle-core mode: each core once, at its first sibling met; a hot idle core is passed
        // over (its siblings stay candidates, as the kernel's mask does).
        let (mut probes, mut fallback) = (0u32, None);
        for cpu in order.filter(|&c| ctx.allows(c)) {
            if !cand.contains(cpu) {
                continue;
            }
            let mut all = true;
            for &sib in t.siblings(cpu) {
                probes += 1;
                if !st.is_idle(sib) {
                    all = false;
                    if fallback.is_some() {
                        break;
                    }
                    continue;
                }
                if fallback.is_none() && ctx.allows(sib) {
                    fallback = Some(sib);
                }
            }
            if !all {
                for &sib in t.siblings(cpu) {
                    cand.remove(sib);
                }
            } else if !self.hot(cpu, ctx.ts_ns) {
                return (Some(cpu), probes);
            }
        }
        (fallback, probes)
    }

    /// The plain (no idle core) scan of `llc` ∩ allowed from `tg + 1`: the first cold idle CPU
    /// within `limit` probes; past the budget nothing (the kernel's `if (!--nr) return -1`),
    /// after a full walk the first hot idle CPU. Word-parallel over the idle map.
    fn plain_scan(
        &self,
        ctx: &Ctx,
        st: &State,
        cand: &mut CpuSet,
        llc: &CpuSet,
        tg: u32,
        limit: Option<u32>,
    ) -> (Option<u32>, u32) {
        cand.copy_from(llc);
        if let Some(a) = ctx.allowed.as_ref() {
            let aw = a.words();
            for (i, w) in cand.words_mut().iter_mut().enumerate() {
                *w &= aw.get(i).copied().unwrap_or(0);
            }
        }
        let total = cand.len() as u32;
        let lim = limit.unwrap_or(u32::MAX);
        let (mut probes, mut s, mut first_hot) = (0u32, tg.wrapping_add(1), None);
        loop {
            let room = lim.min(total).saturating_sub(probes);
            if room == 0 {
                break;
            }
            let (hit, n) = cand.wrap_first(&st.idle, s, room);
            probes += n;
            let Some(c) = hit else { break };
            if !self.hot(c, ctx.ts_ns) {
                return (Some(c), probes);
            }
            first_hot.get_or_insert(c);
            s = c + 1;
        }
        if probes >= lim && total > lim {
            return (None, probes);
        }
        (first_hot, probes)
    }
}

/// The first hot idle CPU (or the idle-core scan's fallback): no cold idle CPU was found.
const HOT_FALLBACK: Rule = Rule::own(0);

impl Policy for SisCache {
    fn name(&self) -> &'static str {
        "sis_cache"
    }
    fn describe(&self) -> &'static str {
        "SIS_CACHE (Chen Yu, v2 Nov 2023): scans skip idle CPUs reserved for short sleepers"
    }
    fn rules(&self) -> &'static [&'static str] {
        &["cache_hot_fallback"]
    }
    fn approximations(&self) -> &'static [&'static str] {
        &[
            "sis_cache: last_dequeue_time is the task's last blocking switch-out; its reset by migrations (non-sleep dequeues) is not seen; reservations exist only for CPUs and tasks seen since the capture started",
        ]
    }
    fn event_kinds(&self) -> &'static [Kind] {
        &[Kind::Switch, Kind::Wakeup]
    }
    fn on_event(&mut self, e: &Event, t: &ShadowTopo, st: &State) {
        match e {
            Event::Wakeup(w) => {
                let Some(blocked) = st.blocked_at(w.pid).filter(|&b| w.ts_ns > b) else {
                    return;
                };
                let slept = w.ts_ns - blocked;
                let avg = self.hot_dur.entry(w.pid).or_default();
                if slept < MIGRATION_COST_NS {
                    let diff = slept as i64 - *avg as i64;
                    *avg = (*avg as i64 + diff / 8) as u64;
                } else {
                    *avg >>= 1;
                }
            }
            Event::Switch(s) if s.prev_state != 0 && s.next_pid == 0 && t.valid(s.cpu) => {
                let d = self.hot_dur.get(&s.prev_pid).copied().unwrap_or(0);
                if d > 0
                    && let Some(x) = self.timeout.get_mut(s.cpu as usize)
                {
                    *x = (*x).max(s.ts_ns + d);
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
        let limit = sis_util_budget(ctx, t, st, t.llc(tg), hic);
        let (cpu, n) = self.scan(ctx, t, st, &mut s.cand, tg, hic, limit);
        let rule = match cpu {
            None => Rule::stage(Stage::Stacked),
            Some(c) if self.hot(c, ctx.ts_ns) || (hic && !st.core_idle(t, c)) => HOT_FALLBACK,
            Some(_) if hic => Rule::stage(Stage::ScanCore),
            Some(_) => Rule::stage(Stage::ScanIdle),
        };
        Decision::new(cpu.unwrap_or(tg), probes + n, rule)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        event::{Switch, Wake},
        shadow::topo::NODE_RECLAIM_DISTANCE,
        topology::fixture,
    };

    fn sw(cpu: u32, prev: u32, next: u32, prev_state: u32, ts: u64) -> Event {
        Event::Switch(Switch {
            ts_ns: ts,
            cpu,
            prev_pid: prev,
            next_pid: next,
            prev_state,
            prev_prio: 120,
            next_prio: 120,
        })
    }

    /// A task sleeping 100 us at a time reserves its CPU: another wakee's scan passes that
    /// idle CPU for the next cold one, takes it only when every idle CPU is hot, and the
    /// reservation lapses after the task's average sleep.
    #[test]
    fn a_short_sleepers_cpu_is_skipped_until_its_timeout() {
        let topo = fixture::named_topology("xeon-e5-2690v3").expect("fixture");
        let t = ShadowTopo::new(&topo, NODE_RECLAIM_DISTANCE);
        let mut st = State::new(&t);
        let mut p = SisCache::new(&t);
        let cpus = t.llc_cpus(0).to_vec();
        let (a, b) = (cpus[1], cpus[2]);
        let feed = |p: &mut SisCache, st: &mut State, e: Event| {
            p.on_event(&e, &t, st);
            match &e {
                Event::Switch(s) => st.on_switch(&t, s),
                Event::Wakeup(w) => st.on_wakeup(&t, w),
                _ => {}
            }
        };
        // Task 7 on `a`: runs, sleeps 100 us, is woken there, 16 times: avg_hot_dur grows.
        let mut ts = 1_000;
        for _ in 0..16 {
            feed(&mut p, &mut st, sw(a, 0, 7, 0, ts));
            feed(&mut p, &mut st, sw(a, 7, 0, 1, ts + 10_000));
            ts += 110_000;
            let w = Wake {
                ts_ns: ts,
                cpu: a,
                pid: 7,
                target_cpu: a,
                waker_pid: 0,
                prio: 120,
            };
            feed(&mut p, &mut st, Event::Wakeup(w));
        }
        feed(&mut p, &mut st, sw(a, 0, 7, 0, ts));
        let hot = p.hot_dur.get(&7).copied().unwrap_or(0);
        assert!((50_000..100_000).contains(&hot), "{hot}");
        feed(&mut p, &mut st, sw(a, 7, 0, 1, ts + 1_000));
        let now = ts + 2_000;
        // Everything but `a` and `b` busy.
        for &c in &cpus {
            if c != a && c != b {
                feed(&mut p, &mut st, sw(c, 0, 500 + c, 0, 1));
            }
        }
        let mut cand = CpuSet::with_bound(t.bound);
        let mut ctx = Ctx::new(now, 9, 8, cpus[0], cpus[0]);
        ctx.compute_front(&t, &st, true);
        // Plain scan from cpus[0]: `a` is hot, `b` cold.
        assert_eq!(
            p.scan(&ctx, &t, &st, &mut cand, cpus[0], false, None).0,
            Some(b)
        );
        // `b` taken: only the hot `a` is idle, and it is the answer.
        feed(&mut p, &mut st, sw(b, 0, 600, 0, 2));
        assert_eq!(
            p.scan(&ctx, &t, &st, &mut cand, cpus[0], false, None).0,
            Some(a)
        );
        // A budget of one CPU stops at `a` without the hot fallback.
        let (_, n) = p.scan(&ctx, &t, &st, &mut cand, cpus[0], false, Some(1));
        assert_eq!(n, 1);
        assert_eq!(
            p.scan(&ctx, &t, &st, &mut cand, cpus[0], false, Some(1)).0,
            None
        );
        // After the reservation, `a` is cold again.
        let late = Ctx::new(now + hot + 1, 9, 8, cpus[0], cpus[0]);
        assert!(!p.hot(a, late.ts_ns));
    }
}
