//! Shadow evaluation: for every placed wakeup, what would each placement policy have chosen
//! from the state at that instant, and how does that compare with what the kernel did.
//!
//! # Decision time
//! The kernel decides inside `select_task_rq_fair`. With function probes the evaluator
//! re-decides when it sees that select record (its exit; the state then includes everything
//! before it) and reads the kernel inputs the probe captured. In tracepoint-only mode it
//! re-decides at `sched_waking` (`prev_cpu` = the waking record's `target_cpu`, the waker's
//! CPU = the CPU the probe ran on; no wake flags). The [`Placement`] for that wakeup only
//! arrives at `sched_wakeup`, after the state has moved on, so each policy's answer (and a copy
//! of the idle map, for the baseline) is parked per pid between the two; [`ShadowEval::on_placement`]
//! scores the parked answers against the kernel's choice. A placement without a parked
//! decision (the caller skipped `on_event`) is decided late from the current state and counted.
//!
//! # Open loop
//! Replay is open loop: the real system followed the kernel's choices, so a policy's choice
//! changes nothing that follows (its own private state, like SIS_PROP's scan-cost average, is
//! the only exception). The report and the JSON say so.
//!
//! # Calling order
//! Call [`ShadowEval::on_event`] for every event, in stream order, and [`ShadowEval::on_placement`]
//! for each `join::Joiner` output, after `on_event` of the event that completed it.
pub mod fidelity;
pub mod metrics;
pub mod policies;
pub mod policy;
pub mod state;
pub mod topo;

use serde_json::{Value, json};

use self::{
    fidelity::{Disagreement, Fidelity},
    metrics::{Outcome, PolicyMetrics, SLEPT_THRESHOLD_NS, SleptHist, pct},
    policy::{Ctx, Exact, Front, Policy, Rule, Scratch},
    state::{Run, State},
    topo::{ShadowTopo, test_bit},
};
use crate::{
    event::{Event, Select, wf},
    format::Header,
    join::Placement,
    pidmap::PidMap,
    topology::Level,
};

/// Per-probe cost used for the scan-time estimate when no select durations are available.
pub const DEFAULT_PROBE_NS: f64 = 50.0;
/// Parked decisions older than this are dropped (their `sched_wakeup` was lost).
const STALE_NS: u64 = 1_000_000_000;
/// Sync wakeups remembered per waker CPU until the waker switches out.
const WATCH_SLOTS: usize = 8;

/// A parked decision.
#[derive(Clone, Copy, Debug, Default)]
struct Record {
    pid: u32,
    decided_ns: u64,
    w: u32,
    p: u32,
    has_select: bool,
    /// The kernel's choice when the select record gave it, with its queue length then.
    kernel_queue: Option<(u32, u32)>,
    /// Tracepoint-only: the wakee was still runnable at `sched_waking` (`ttwu_runnable`, no
    /// placement).
    no_placement: bool,
    front: Front,
    nr_running_w: u32,
    waker_pid: u32,
    /// The wakee's `recent_used_cpu` as known before this wakeup (for the fidelity buckets).
    recent_used: u32,
}

/// Sync wakeups waiting for their waker's next switch-out.
#[derive(Clone, Copy, Debug, Default)]
struct Watch {
    waker: u32,
    n: usize,
    /// (wakeup time, bitmask of policies that queued the wakee behind the waker).
    entries: [(u64, u64); WATCH_SLOTS],
}

/// Placements seen but not compared, by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Excluded {
    /// Fork/exec placements (slow path) and `sched_wakeup_new`.
    pub fork_exec: u64,
    /// Wakeups that took no placement path (still runnable, wake-list on the old CPU, pinned):
    /// no select record although the probe was attached, or runnable at `sched_waking`.
    pub no_placement: u64,
    /// CPU numbers outside the recorded topology.
    pub invalid_cpu: u64,
}

/// One row of the comparison (a policy's figures, baseline included).
#[derive(Clone, Debug, PartialEq)]
pub struct PolicyRow {
    pub name: &'static str,
    pub describe: &'static str,
    pub evaluated: u64,
    pub agreement: Option<f64>,
    pub idle_pct: f64,
    pub stacked_pct: f64,
    pub probes_mean: f64,
    pub probes_p99: u32,
    pub est_scan_ns_mean: f64,
    pub migrations: u64,
    pub migrations_pct: f64,
    pub vs_waker: [u64; 6],
    pub vs_prev: [u64; 6],
    pub exact_inputs_pct: f64,
    /// Mean run-queue length of the chosen CPU at decision time (0 when idle).
    pub queue_mean: f64,
    /// Mean estimated wait before running: queue length x the EEVDF base slice (approximate).
    pub est_wait_us_mean: f64,
}

impl PolicyRow {
    /// A row from one policy's tallies: `per_probe_ns` prices the probes (see
    /// [`ShadowEval::per_probe_ns`]), `base_slice_us` the queue (see [`ShadowEval::base_slice_us`]).
    /// The dashboard uses it for rows restricted to a filter.
    pub fn from_metrics(
        name: &'static str,
        describe: &'static str,
        m: &PolicyMetrics,
        per_probe_ns: f64,
        base_slice_us: f64,
    ) -> Self {
        Self {
            name,
            describe,
            evaluated: m.evaluated,
            agreement: m.agreement(),
            idle_pct: pct(m.idle, m.evaluated),
            stacked_pct: pct(m.stacked, m.evaluated),
            probes_mean: m.probes_mean(),
            probes_p99: m.probes_quantile(0.99),
            est_scan_ns_mean: m.probes_mean() * per_probe_ns,
            migrations: m.migrations,
            migrations_pct: pct(m.migrations, m.evaluated),
            vs_waker: m.vs_waker,
            vs_prev: m.vs_prev,
            exact_inputs_pct: pct(m.exact, m.evaluated),
            queue_mean: m.queue_mean(),
            est_wait_us_mean: m.queue_mean() * base_slice_us,
        }
    }
}

/// Drives the state reconstruction and every registered policy.
pub struct ShadowEval {
    topo: ShadowTopo,
    state: State,
    policies: Vec<Box<dyn Policy>>,
    metrics: Vec<PolicyMetrics>,
    /// Index of the policy standing for the running kernel (fidelity, hint clearing).
    kernel_idx: usize,
    /// Index of the baseline (filled in from the kernel's choice at placement time).
    observed_idx: Option<usize>,
    fidelity: Fidelity,
    scratch: Scratch,
    /// Select records exist (probe attached per header, or one was seen).
    select_mode: bool,
    pending: PidMap<u32>,
    slots: Vec<Record>,
    outcomes: Vec<Outcome>,
    snaps: Vec<u64>,
    free: Vec<u32>,
    watches: Vec<Watch>,
    sync_all: SleptHist,
    select_ns: Option<hdrhistogram::Histogram<u64>>,
    excluded: Excluded,
    evaluated: u64,
    late: u64,
    events: u64,
    last: Vec<Outcome>,
    last_placement: Option<Placement>,
    last_front: Front,
    nr_cpus: usize,
}

/// `wake_wide()`: the waker/wakee flip counts say "many partners", so do not pull.
pub const fn wake_wide(waker_flips: u32, wakee_flips: u32, llc_size: u32) -> bool {
    let (master, slave) = if waker_flips >= wakee_flips {
        (waker_flips, wakee_flips)
    } else {
        (wakee_flips, waker_flips)
    };
    !(slave < llc_size || master < slave.saturating_mul(llc_size))
}

/// The policy the running kernel uses, from its release: SIS_PROP before 6.0, else SIS_UTIL.
/// (The features file is not in the header; 6.0-6.6 kernels with `SIS_PROP` switched back on
/// are misjudged.)
pub fn kernel_policy(release: &str) -> &'static str {
    let mut it = release
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<u32>().unwrap_or(0));
    match it.next() {
        Some(major) if major < 6 && major > 0 => "sis_prop",
        _ => "sis_util",
    }
}

impl ShadowEval {
    pub fn new(header: &Header) -> Self {
        let topo = ShadowTopo::new(
            &header.topology,
            topo::reclaim_distance_for(header.cpu_vendor.as_deref()),
        );
        let policies = policies::registry(&topo);
        let want = kernel_policy(&header.kernel_release);
        let kernel_idx = policies
            .iter()
            .position(|p| p.name() == want)
            .or_else(|| policies.iter().position(|p| !p.is_observed()))
            .unwrap_or(0);
        let fid_name = policies.get(kernel_idx).map_or("sis_util", |p| p.name());
        let n = policies.len();
        let select_mode = header
            .probe("select_task_rq_fair")
            .is_some_and(|p| p.attached());
        Self {
            state: State::new(&topo),
            scratch: Scratch::new(&topo),
            metrics: vec![PolicyMetrics::default(); n],
            kernel_idx,
            observed_idx: policies.iter().position(|p| p.is_observed()),
            fidelity: Fidelity::new(fid_name),
            policies,
            select_mode,
            pending: PidMap::default(),
            slots: Vec::new(),
            outcomes: Vec::new(),
            snaps: Vec::new(),
            free: Vec::new(),
            watches: vec![Watch::default(); topo.bound],
            sync_all: SleptHist::default(),
            select_ns: hdrhistogram::Histogram::new_with_bounds(1, 60_000_000_000, 2).ok(),
            excluded: Excluded::default(),
            evaluated: 0,
            late: 0,
            events: 0,
            last: vec![Outcome::default(); n],
            last_placement: None,
            last_front: Front::default(),
            nr_cpus: header.topology.nr_cpus(),
            topo,
        }
    }

    /// Registry names, baseline first.
    pub fn policy_names(&self) -> Vec<&'static str> {
        self.policies.iter().map(|p| p.name()).collect()
    }

    /// The policy whose agreement is the fidelity figure.
    pub fn fidelity_policy(&self) -> &'static str {
        self.fidelity.policy
    }

    /// Placed wakeups compared so far.
    pub fn evaluated(&self) -> u64 {
        self.evaluated
    }

    pub fn excluded(&self) -> Excluded {
        self.excluded
    }

    /// The dense topology the policies use.
    pub fn topo(&self) -> &ShadowTopo {
        &self.topo
    }

    /// The reconstructed state (idle map, run-queue lengths, hints).
    pub fn state(&self) -> &State {
        &self.state
    }

    /// Each policy's answer for the most recently scored placement, baseline first.
    pub fn last_outcomes(&self) -> Option<(Placement, Vec<(&'static str, Outcome)>)> {
        let p = self.last_placement?;
        Some((
            p,
            self.policies
                .iter()
                .zip(&self.last)
                .map(|(pol, o)| (pol.name(), *o))
                .collect(),
        ))
    }

    /// FRONT's result (SIS target, which affine rule decided) for the last scored placement.
    pub fn last_front(&self) -> Front {
        self.last_front
    }

    /// Agreement of the running kernel's policy shadow with the kernel (0..1), once anything
    /// was compared.
    pub fn fidelity(&self) -> Option<f64> {
        self.fidelity.agreement()
    }

    pub fn on_event(&mut self, e: &Event) {
        self.events += 1;
        self.state.advance(e.ts_ns());
        self.state.expire_claims(&self.topo, e.ts_ns());
        if self.events.is_multiple_of(1 << 16) {
            self.purge(e.ts_ns());
        }
        match e {
            Event::Switch(s) => {
                self.resolve_watch(s.cpu, s.prev_pid, s.prev_state, s.ts_ns);
                self.state.on_switch(&self.topo, s);
            }
            Event::Wakeup(w) => self.state.on_wakeup(&self.topo, w),
            Event::WakeupNew(w) => {
                // `wake_up_new_task` sets `p->recent_used_cpu = task_cpu(p)` before the
                // fork placement, and `sched_fork` had set the child's CPU to the forking
                // CPU; the slow path never runs SIS, so the child's first wakeup tests that
                // CPU. `wake_up_new_task` runs in the parent, where this record fires.
                if self.topo.valid(w.cpu) {
                    self.state.set_recent_used(w.pid, w.cpu);
                }
                self.state.on_wakeup(&self.topo, w);
            }
            Event::Migrate(m) => self.state.on_migrate(&self.topo, m),
            Event::Waking(w) => {
                if w.pid == w.waker_pid || !self.topo.valid(w.target_cpu) {
                    return;
                }
                if self.select_mode {
                    // Wakeups that never reach select_task_rq_fair (pinned tasks, the
                    // on_cpu wake-list path) set ttwu_pending on the old CPU right after
                    // `sched_waking`, so the claim starts here. A wakeup that goes through
                    // select_task_rq_fair sets nothing before the select returns (the kernel's
                    // idle tests of other wakers in between see the old CPU as it is), so a
                    // task known to take that path is claimed by its select record instead;
                    // claiming here would mark its old CPU busy for the whole select, which
                    // under emulation (TCG) can last milliseconds.
                    if !self.state.takes_select_path(w.pid)
                        && !matches!(self.state.run_of(w.pid), Run::Queued(_) | Run::Running(_))
                    {
                        self.state.claim(&self.topo, w.pid, w.target_cpu);
                    }
                    return;
                }
                if !self.topo.valid(w.cpu) {
                    return;
                }
                if matches!(self.state.run_of(w.pid), Run::Queued(_) | Run::Running(_)) {
                    let slot = self.slot_for(w.pid);
                    self.slots[slot as usize] = Record {
                        pid: w.pid,
                        decided_ns: w.ts_ns,
                        no_placement: true,
                        ..Record::default()
                    };
                    return;
                }
                let ctx = Ctx::new(w.ts_ns, w.pid, w.waker_pid, w.cpu, w.target_cpu);
                self.decide(ctx);
                // ttwu_pending on the old CPU until a migrate record says otherwise.
                self.state.claim(&self.topo, w.pid, w.target_cpu);
            }
            Event::Select(s) => {
                self.select_mode = true;
                if let Some(h) = self.select_ns.as_mut() {
                    h.saturating_record(s.duration_ns().max(1));
                }
                let ttwu =
                    s.wake_flags & wf::TTWU != 0 && s.wake_flags & (wf::FORK | wf::EXEC) == 0;
                if ttwu && self.topo.valid(s.cpu) && self.topo.valid(s.prev_cpu) {
                    self.state.set_select_path(s.pid);
                    self.state.release(&self.topo, s.pid);
                    self.decide(select_ctx(s));
                }
                // Only a wakeup leaves the task in flight towards its CPU (`ttwu_pending`
                // until `sched_wakeup`; `sched_wakeup_new` ends a fork's). `sched_exec`
                // places a running task and no wakeup follows, so a claim would never end.
                if s.wake_flags & wf::EXEC == 0 {
                    self.state.claim(&self.topo, s.pid, s.chosen_cpu);
                }
            }
        }
    }

    fn slot_for(&mut self, pid: u32) -> u32 {
        if let Some(&s) = self.pending.get(&pid) {
            return s;
        }
        let np = self.policies.len();
        let nw = self.topo.nwords;
        let s = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(Record::default());
                self.outcomes
                    .resize(self.outcomes.len() + np, Outcome::default());
                self.snaps.resize(self.snaps.len() + nw, 0);
                (self.slots.len() - 1) as u32
            }
        };
        // Slots of pids dropped from the (bounded) map go back to the pool.
        let free = &mut self.free;
        self.pending
            .insert_evicting(pid, s, |_, old| free.push(old));
        s
    }

    fn release_slot(&mut self, pid: u32) {
        if let Some(s) = self.pending.remove(&pid) {
            self.free.push(s);
        }
    }

    fn purge(&mut self, now: u64) {
        self.state.expire_claims(&self.topo, now);
        let slots = &self.slots;
        let free = &mut self.free;
        self.pending.retain(|_, s| {
            let keep = now.saturating_sub(slots[*s as usize].decided_ns) < STALE_NS;
            if !keep {
                free.push(*s);
            }
            keep
        });
    }

    /// Runs every policy on `ctx` as of now and parks the answers under the wakee's pid.
    fn decide(&mut self, mut ctx: Ctx) -> u32 {
        self.scratch.reset();
        let (t, st) = (&self.topo, &mut self.state);
        st.refresh_nr_idle_scan(t, ctx.ts_ns);
        // An exact read of the kernel's hint resynchronises the emulation.
        if let Some(h) = ctx.exact.w_has_idle_cores {
            st.set_hic(t.llc(ctx.w), h);
        }
        if let Some(h) = ctx.exact.p_has_idle_cores {
            st.set_hic(t.llc(ctx.p), h);
        }
        let (wf, pf) = st.record_wakee(ctx.waker_pid, ctx.w, ctx.pid, ctx.ts_ns);
        let llc_size = t.llc_size.get(t.llc(ctx.w) as usize).copied().unwrap_or(1);
        let wide = wake_wide(wf, pf, llc_size);
        ctx.recent_used_cpu = st.recent_used(ctx.pid);
        ctx.compute_front(t, st, wide);
        let nr_running_w = ctx
            .exact
            .waker_nr_running
            .unwrap_or_else(|| st.nr_running(ctx.w));

        let slot = self.slot_for(ctx.pid);
        let np = self.policies.len();
        let base = slot as usize * np;
        let (t, st) = (&self.topo, &self.state);
        let mut clear = None;
        let mut fired = 0u64;
        for (i, pol) in self.policies.iter_mut().enumerate() {
            if Some(i) == self.observed_idx {
                continue;
            }
            ctx.begin();
            let d = pol.decide(&ctx, t, st, &mut self.scratch);
            let cpu = if t.valid(d.cpu) { d.cpu } else { ctx.p };
            self.outcomes[base + i] = Outcome {
                cpu,
                probes: d.probes,
                rule: d.rule,
                idle: st.is_idle(cpu),
                exact: ctx.was_exact(),
                queue: st.nr_running(cpu),
            };
            if i == self.kernel_idx {
                clear = d.clear_hint;
            }
            if d.rule == Rule::SyncLocal && i < 64 {
                fired |= 1 << i;
            }
        }
        let nw = t.nwords;
        self.snaps[slot as usize * nw..(slot as usize + 1) * nw].copy_from_slice(&st.idle[..nw]);
        self.slots[slot as usize] = Record {
            pid: ctx.pid,
            decided_ns: ctx.ts_ns,
            w: ctx.w,
            p: ctx.p,
            has_select: ctx.has_select,
            kernel_queue: ctx.kernel_cpu.map(|c| (c, st.nr_running(c))),
            no_placement: false,
            front: ctx.front,
            nr_running_w,
            waker_pid: ctx.waker_pid,
            recent_used: ctx.recent_used_cpu,
        };
        if let Some(l) = clear {
            self.state.set_hic(l, false);
        }
        // SIS overwrites `p->recent_used_cpu` only once past its target/prev early returns;
        // which path the kernel took is our kernel-flavour shadow's best guess.
        let krule = self.outcomes[base + self.kernel_idx].rule;
        if !matches!(krule, Rule::Target | Rule::Prev | Rule::CurrentCpu) {
            self.state.set_recent_used(ctx.pid, ctx.p);
        }
        if ctx.front.sync {
            self.watch(ctx.w, ctx.waker_pid, ctx.ts_ns, fired);
        }
        slot
    }

    fn watch(&mut self, cpu: u32, waker: u32, ts: u64, fired: u64) {
        let Some(w) = self.watches.get_mut(cpu as usize) else {
            return;
        };
        if w.n > 0 && w.waker != waker {
            // A different waker on that CPU: the earlier one was not running any more.
            let n = w.n;
            let entries = w.entries;
            w.n = 0;
            for &(_, mask) in &entries[..n] {
                self.sync_all.unresolved += 1;
                for (i, m) in self.metrics.iter_mut().enumerate() {
                    if mask & (1 << i) != 0 {
                        m.slept.unresolved += 1;
                    }
                }
            }
        }
        let Some(w) = self.watches.get_mut(cpu as usize) else {
            return;
        };
        w.waker = waker;
        if w.n < WATCH_SLOTS {
            w.entries[w.n] = (ts, fired);
            w.n += 1;
        } else {
            self.sync_all.unresolved += 1;
        }
    }

    fn resolve_watch(&mut self, cpu: u32, prev_pid: u32, prev_state: u32, ts: u64) {
        let Some(w) = self.watches.get_mut(cpu as usize) else {
            return;
        };
        if w.n == 0 {
            return;
        }
        let matched = w.waker == prev_pid;
        let (n, entries) = (w.n, w.entries);
        w.n = 0;
        for &(t0, mask) in &entries[..n] {
            let mut h = SleptHist::default();
            if !matched {
                h.unresolved = 1;
            } else if prev_state == 0 {
                h.preempted = 1;
            } else {
                h.add_slept(ts.saturating_sub(t0));
            }
            self.sync_all.merge(&h);
            for (i, m) in self.metrics.iter_mut().enumerate() {
                if mask & (1 << i) != 0 {
                    m.slept.merge(&h);
                }
            }
        }
    }

    pub fn on_placement(&mut self, pl: &Placement) {
        let ttwu = pl.select.is_none_or(|s| {
            s.wake_flags & wf::TTWU != 0 && s.wake_flags & (wf::FORK | wf::EXEC) == 0
        });
        if pl.new_task || !ttwu {
            self.excluded.fork_exec += 1;
            self.release_slot(pl.pid);
            return;
        }
        if pl.select.is_none() && self.select_mode {
            self.excluded.no_placement += 1;
            self.release_slot(pl.pid);
            return;
        }
        let parked = self.pending.get(&pl.pid).copied().filter(|&s| {
            let r = &self.slots[s as usize];
            r.pid == pl.pid && r.decided_ns >= pl.waking_ts_ns && r.decided_ns <= pl.wakeup_ts_ns
        });
        let slot = match parked {
            Some(s) if self.slots[s as usize].no_placement => {
                self.excluded.no_placement += 1;
                self.release_slot(pl.pid);
                return;
            }
            Some(s) => s,
            None => {
                let ctx = match pl.select {
                    Some(s) => select_ctx(&s),
                    None => Ctx::new(
                        pl.waking_ts_ns,
                        pl.pid,
                        pl.waker_pid,
                        pl.waker_cpu,
                        pl.prev_cpu,
                    ),
                };
                if !self.topo.valid(ctx.w) || !self.topo.valid(ctx.p) {
                    self.excluded.invalid_cpu += 1;
                    self.release_slot(pl.pid);
                    return;
                }
                self.late += 1;
                self.decide(ctx)
            }
        };
        let kernel = pl.select.map_or(pl.chosen_cpu, |s| s.chosen_cpu);
        let rec = self.slots[slot as usize];
        if !self.topo.valid(kernel) || !self.topo.valid(rec.w) || !self.topo.valid(rec.p) {
            self.excluded.invalid_cpu += 1;
            self.release_slot(pl.pid);
            return;
        }
        self.evaluated += 1;
        let np = self.policies.len();
        let base = slot as usize * np;
        let nw = self.topo.nwords;
        let snap = &self.snaps[slot as usize * nw..(slot as usize + 1) * nw];
        let kernel_idle = test_bit(snap, kernel);
        let kernel_probes = self.outcomes[base + self.kernel_idx].probes;
        let observed = self.observed_idx;
        // Levels per distinct chosen CPU (policies mostly agree): (cpu, vs waker, vs prev).
        let mut levels: [(u32, Option<Level>, Option<Level>); 4] = [(u32::MAX, None, None); 4];
        let mut nlev = 0;
        for i in 0..np {
            let mut o = self.outcomes[base + i];
            if Some(i) == observed {
                // Queue length at decision time when the select record named the CPU then;
                // tracepoint-only: as of now (sched_wakeup), minus this wakee.
                let queue = match rec.kernel_queue {
                    Some((c, q)) if c == kernel => q,
                    _ => self.state.nr_running(kernel).saturating_sub(1),
                };
                o = Outcome {
                    cpu: kernel,
                    probes: kernel_probes,
                    rule: Rule::Observed,
                    idle: kernel_idle,
                    exact: true,
                    queue,
                };
            }
            let (lw, lp) = match levels[..nlev].iter().find(|l| l.0 == o.cpu) {
                Some(l) => (l.1, l.2),
                None => {
                    let l = (
                        o.cpu,
                        self.topo.level(o.cpu, rec.w),
                        self.topo.level(o.cpu, rec.p),
                    );
                    levels[nlev % levels.len()] = l;
                    nlev = (nlev + 1).min(levels.len());
                    (l.1, l.2)
                }
            };
            self.metrics[i].record(&o, kernel, rec.p, lw, lp);
            self.last[i] = o;
        }
        let fo = self.outcomes[base + self.kernel_idx];
        self.fidelity.record(
            &self.topo,
            &Disagreement {
                has_select: rec.has_select,
                kernel,
                shadow: fo.cpu,
                w: rec.w,
                p: rec.p,
                front: rec.front,
                kernel_idle,
                shadow_exact: fo.exact,
                nr_running_w: rec.nr_running_w,
                waker_pid: rec.waker_pid,
                recent_used: rec.recent_used,
            },
        );
        self.last_placement = Some(*pl);
        self.last_front = rec.front;
        self.release_slot(pl.pid);
    }

    /// ns per probe for the scan-time estimate, and where it came from.
    pub fn per_probe_ns(&self) -> (f64, &'static str) {
        let km = &self.metrics[self.kernel_idx];
        match &self.select_ns {
            Some(h) if !h.is_empty() && km.probes_mean() > 0.0 => (
                (h.value_at_quantile(0.5) as f64 / km.probes_mean()).clamp(1.0, 2000.0),
                "median select_task_rq_fair duration / mean modelled probes of the kernel's policy",
            ),
            _ => (
                DEFAULT_PROBE_NS,
                "default 50 ns per probe (no select durations)",
            ),
        }
    }

    /// EEVDF base slice, 0.75 ms x (1 + ilog2(min(ncpus, 8))), for the wait estimate.
    pub fn base_slice_us(&self) -> f64 {
        let n = self.nr_cpus.clamp(1, 8) as u32;
        750.0 * f64::from(1 + n.ilog2())
    }

    /// The comparison rows, baseline first.
    pub fn rows(&self) -> Vec<PolicyRow> {
        let (ns, _) = self.per_probe_ns();
        let slice = self.base_slice_us();
        self.policies
            .iter()
            .zip(&self.metrics)
            .map(|(p, m)| PolicyRow::from_metrics(p.name(), p.describe(), m, ns, slice))
            .collect()
    }

    fn approximations(&self) -> Vec<&'static str> {
        vec![
            "open loop: a policy's choice does not change later events; only the kernel's choices happened",
            "decision time: select_task_rq_fair exit with function probes, sched_waking without (no wake flags then: WF_SYNC unknown, treated as not sync)",
            "idle map reconstructed from sched_switch/sched_wakeup/sched_migrate_task; a CPU claimed by an in-flight wakeup counts busy (ttwu_pending): from the select exit (from sched_waking for tasks never seen reaching select_task_rq_fair, e.g. pinned ones) until its sched_wakeup, the task's next switch-in, or 100 ms; sched_exec placements claim nothing",
            "recent_used_cpu reconstructed: prev_cpu of the task's last SIS pass past the target/prev shortcuts (as the kernel-flavour shadow judged it), the forking CPU for a new task (wake_up_new_task); unknown for tasks not seen since the capture started",
            "wakee affinity not captured: all online CPUs treated as allowed",
            "wake_affine: WA_IDLE only; WA_WEIGHT needs cpu/task loads that are not captured, undecided keeps prev_cpu",
            "affine domain across NUMA nodes when the SLIT distance is <= node_reclaim_distance: 32 on AMD/Hygon (and recordings without a vendor), 30 otherwise, from the header's cpu_vendor",
            "wake_wide: record_wakee replayed from the (waker pid -> wakee pid) pairs of placed wakeups, HZ=250 decay",
            "per-CPU kthread stacking rule not applied (waker PF_KTHREAD/in_task() not captured)",
            "has_idle_cores and nr_idle_scan: probe reads where captured (waker's and prev's LLC), else emulated (hint set on idle entry with idle siblings, cleared by the kernel policy's failed core scan; nr_idle_scan from PELT-like util, 32 ms half-life, refreshed every 4 ms)",
            "SIS_PROP: avg_idle/wake_avg_idle emulated from idle periods, scan time modelled as 300 ns + 50 ns per probe",
            "wf_sync_delayed equals wf_sync: delayed-dequeue counts are not captured",
            "idle_core_first is P6b (pure); sis_util_true_hint is P6a; idler_llc takes Srikar's idle-core id from the true idle map",
            "probes count every idle test (affine step, shortcuts, scan); est_scan_ns = probes x per_probe_ns",
            "queue_mean: run-queue length of the chosen CPU at decision time; est_wait_us = queue x EEVDF base slice 0.75 ms x (1 + ilog2(min(ncpus, 8))), a rough bound",
            "waker slept after a sync wakeup = its next switch-out on the waker CPU blocked (prev_state != 0) within 50 us",
        ]
    }

    /// The `shadow` section of `--report json` (the object itself, not wrapped).
    pub fn report_json(&self) -> Value {
        let (ns, ns_src) = self.per_probe_ns();
        let mut pols = serde_json::Map::new();
        for (row, m) in self.rows().iter().zip(&self.metrics) {
            let mut v = json!({
                "description": row.describe,
                "evaluated": row.evaluated,
                "agreement": row.agreement,
                "idle_pct": row.idle_pct,
                "stacked_pct": row.stacked_pct,
                "probes_mean": row.probes_mean,
                "probes_p99": row.probes_p99,
                "est_scan_ns_mean": row.est_scan_ns_mean,
                "migrations": row.migrations,
                "migrations_pct": row.migrations_pct,
                "placement": {
                    "vs_waker": PolicyMetrics::placement_json(&row.vs_waker),
                    "vs_prev": PolicyMetrics::placement_json(&row.vs_prev),
                },
                "exact_inputs_pct": row.exact_inputs_pct,
                "queue_mean": row.queue_mean,
                "est_wait_us_mean": row.est_wait_us_mean,
                "rules": m.rules_json(),
            });
            if m.rules[Rule::SyncLocal.index()] > 0
                && let Some(o) = v.as_object_mut()
            {
                o.insert("waker_slept_after".into(), m.slept.to_json());
            }
            pols.insert(row.name.into(), v);
        }
        let mut wf = serde_json::Map::new();
        for (p, m) in self.policies.iter().zip(&self.metrics) {
            if m.rules[Rule::SyncLocal.index()] > 0 {
                wf.insert(p.name().into(), m.slept.to_json());
            }
        }
        json!({
            "open_loop": true,
            "evaluated": self.evaluated,
            "late_decisions": self.late,
            "excluded": {
                "fork_exec": self.excluded.fork_exec,
                "no_placement": self.excluded.no_placement,
                "invalid_cpu": self.excluded.invalid_cpu,
            },
            "decision_time": if self.select_mode { "select_task_rq_fair" } else { "sched_waking" },
            "per_probe_ns": ns,
            "per_probe_source": ns_src,
            "policies": pols,
            "fidelity": self.fidelity.to_json(),
            "wf_sync": {
                "threshold_us": SLEPT_THRESHOLD_NS / 1000,
                "sync_wakeups": self.sync_all.to_json(),
                "queued_behind_waker": wf,
            },
            "approximations": self.approximations(),
        })
    }

    /// "tip vs patched"-style comparison: the baseline row, then each policy with its delta.
    pub fn report_text(&self) -> String {
        use std::fmt::Write;
        let rows = self.rows();
        let mut s = String::new();
        let (ns, ns_src) = self.per_probe_ns();
        let _ = writeln!(
            s,
            "Shadow placement policies — open-loop replay: a policy's choice does not change later events."
        );
        let _ = writeln!(
            s,
            "{} placed wakeups compared (decision at {}); excluded: {} fork/exec, {} no-placement, {} bad CPU.",
            self.evaluated,
            if self.select_mode {
                "select_task_rq_fair"
            } else {
                "sched_waking, tracepoint-only"
            },
            self.excluded.fork_exec,
            self.excluded.no_placement,
            self.excluded.invalid_cpu,
        );
        match self.fidelity.agreement() {
            Some(a) => {
                let _ = writeln!(
                    s,
                    "Fidelity: the {} shadow reproduces {:.2}% of the kernel's choices ({} compared).",
                    self.fidelity.policy,
                    100.0 * a,
                    self.fidelity.evaluated
                );
                let mut parts = Vec::new();
                for (b, n) in fidelity::Bucket::ALL.iter().zip(self.fidelity.buckets) {
                    if n > 0 {
                        parts.push(format!("{} {}", b.name(), n));
                    }
                }
                if !parts.is_empty() {
                    let _ = writeln!(s, "  disagreements: {}", parts.join(", "));
                }
            }
            None => {
                let _ = writeln!(s, "Fidelity: nothing compared yet.");
            }
        }
        let _ = writeln!(s, "Scan time: {ns:.0} ns per probe ({ns_src}).");
        let _ = writeln!(s);
        let base = rows.first().cloned();
        let d = |v: f64, b: Option<f64>| match b {
            Some(b) => format!("{v:6.2} ({:+6.2})", v - b),
            None => format!("{v:6.2}        "),
        };
        let _ = writeln!(
            s,
            "{:<19} {:>7} {:>15} {:>15} {:>17} {:>5} {:>9} {:>15} {:>6} {:>6}",
            "policy",
            "agree%",
            "idle%",
            "stacked%",
            "probes mean",
            "p99",
            "scan ns",
            "migrations%",
            "queue",
            "exact%"
        );
        for (i, r) in rows.iter().enumerate() {
            let b = if i == 0 { None } else { base.as_ref() };
            let probes = match b {
                Some(b) if b.probes_mean > 0.0 => format!(
                    "{:6.2} ({:+5.1}%)",
                    r.probes_mean,
                    100.0 * (r.probes_mean - b.probes_mean) / b.probes_mean
                ),
                _ => format!("{:6.2}          ", r.probes_mean),
            };
            let _ = writeln!(
                s,
                "{:<19} {:>7} {:>15} {:>15} {:>17} {:>5} {:>9.0} {:>15} {:>6.2} {:>6.1}",
                r.name,
                r.agreement
                    .map_or("-".into(), |a| format!("{:.2}", 100.0 * a)),
                d(r.idle_pct, b.map(|b| b.idle_pct)),
                d(r.stacked_pct, b.map(|b| b.stacked_pct)),
                probes,
                r.probes_p99,
                r.est_scan_ns_mean,
                d(r.migrations_pct, b.map(|b| b.migrations_pct)),
                r.queue_mean,
                r.exact_inputs_pct,
            );
        }
        let _ = writeln!(
            s,
            "(deltas vs observed: percentage points; probes: relative; queue: mean nr_running of the chosen CPU at decision time)"
        );
        let _ = writeln!(s);
        let _ = writeln!(s, "Locality of the choice, % of wakeups:");
        let short = ["cpu", "smt", "llc", "node", "pkg", "xpkg"];
        let mut hdr = format!("{:<19}", "policy");
        for side in ["waker", "prev"] {
            for n in short {
                hdr.push_str(&format!(" {:>6}", format!("{}:{}", &side[..1], n)));
            }
            hdr.push_str("  ");
        }
        let _ = writeln!(s, "{}", hdr.trim_end());
        for r in &rows {
            let mut line = format!("{:<19}", r.name);
            for counts in [&r.vs_waker, &r.vs_prev] {
                for l in Level::ALL {
                    line.push_str(&format!(" {:>6.1}", pct(counts[l.index()], r.evaluated)));
                }
                line.push_str("  ");
            }
            let _ = writeln!(s, "{}", line.trim_end());
        }
        let _ = writeln!(
            s,
            "(w: vs the waker's CPU, p: vs the previous CPU; cpu/smt/llc/node/pkg/xpkg = same CPU, SMT sibling, same LLC, same node, same package, other package)"
        );
        let _ = writeln!(s);
        let sl = &self.sync_all;
        let _ = writeln!(
            s,
            "WF_SYNC check (did the waker sleep right after a sync wakeup? threshold {} us):",
            SLEPT_THRESHOLD_NS / 1000
        );
        let fmt_h = |h: &SleptHist| {
            format!(
                "n={} slept<=10us {} <=50us {} <=200us {} <=1ms {} later {} preempted {} unresolved {}; slept within threshold {}",
                h.total(),
                h.slept[0],
                h.slept[1],
                h.slept[2],
                h.slept[3],
                h.slept[4],
                h.preempted,
                h.unresolved,
                h.slept_within_threshold_pct()
                    .map_or("-".into(), |p| format!("{p:.1}%")),
            )
        };
        let _ = writeln!(s, "  all sync wakeups: {}", fmt_h(sl));
        for (p, m) in self.policies.iter().zip(&self.metrics) {
            if m.rules[Rule::SyncLocal.index()] > 0 {
                let _ = writeln!(
                    s,
                    "  queued behind the waker by {}: {}",
                    p.name(),
                    fmt_h(&m.slept)
                );
            }
        }
        let _ = writeln!(s);
        let _ = writeln!(s, "Approximations:");
        for a in self.approximations() {
            let _ = writeln!(s, "  - {a}");
        }
        s
    }
}

fn select_ctx(s: &Select) -> Ctx {
    let mut c = Ctx::new(s.entry_ts_ns, s.pid, s.waker_pid, s.cpu, s.prev_cpu);
    c.wake_flags = Some(s.wake_flags);
    c.has_select = true;
    c.kernel_cpu = Some(s.chosen_cpu);
    c.exact = Exact {
        waker_nr_running: s.waker_nr_running,
        w_nr_idle_scan: s.nr_idle_scan,
        w_has_idle_cores: s.has_idle_cores,
        p_nr_idle_scan: s.prev_nr_idle_scan,
        p_has_idle_cores: s.prev_has_idle_cores,
    };
    c
}
