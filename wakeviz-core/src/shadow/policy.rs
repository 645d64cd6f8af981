//! The `Policy` trait and the stages the kernel-like policies share: FRONT (the
//! affine target), SHORTCUTS (`select_idle_sibling` rules 2-8) and the LLC scan
//! (`select_idle_cpu`, `select_idle_core`), parametrised by the scan budget.
//!
//! Modelling choices (the full list is [`super::report::APPROXIMATIONS`]):
//! - `wake_affine` applies `WA_IDLE` then `WA_WEIGHT` (with `WA_BIAS` and the affine domain's
//!   `imbalance_pct`) from the loads the select probe read (ABI 2); without them an undecided
//!   `wake_affine_idle` keeps `prev_cpu`;
//! - the sync test subtracts the waker rq's delayed tasks when the recorded kernel has
//!   `DELAY_DEQUEUE` on and the probe read the count ([`KernelRules::delayed_sync`]);
//! - the per-CPU-kthread stacking rule (SHORTCUTS step 3) applies when the waker's
//!   `PF_KTHREAD` and `nr_cpus_allowed` were read; `in_task()` is not readable and is assumed
//!   true unless the waker is an idle task;
//! - the wakee's allowed mask (read for a task that may not run everywhere) restricts the
//!   affine step, the SMT-sibling and `recent_used_cpu` shortcuts and the scans exactly as the
//!   kernel's `cpumask_and(cpus, sched_domain_span(sd), p->cpus_ptr)` does; any policy answer
//!   still outside it goes through `select_fallback_rq`'s order ([`Ctx::enforce_allowed`]);
//! - a probe is one idle test of one CPU (`available_idle_cpu`), wherever it happens (affine
//!   step, shortcuts, scan), so counts compare with the kernel's own `available_idle_cpu` trace.
use std::cell::Cell;

pub use super::rule::{Rule, Stage};
use super::{
    state::State,
    topo::{NONE, ShadowTopo, WalkStep},
};
use crate::{
    event::{Event, Kind, SelectInputs, wf},
    topology::CpuSet,
};

/// Which of the recorded kernel's optional rules FRONT applies, from its scheduler features
/// (or the defaults when the recording has none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelRules {
    /// `sched_feat(WA_IDLE)` (default on): `wake_affine_idle` runs before `WA_WEIGHT`.
    pub wa_idle: bool,
    /// `sched_feat(WA_WEIGHT)` (default on).
    pub wa_weight: bool,
    /// `sched_feat(WA_BIAS)` (default on).
    pub wa_bias: bool,
    /// The sync test is `nr_running - cfs_h_nr_delayed(rq) == 1`: `DELAY_DEQUEUE` is on in the
    /// recorded kernel (6.12+) and the recording carries the delayed count.
    pub delayed_sync: bool,
    /// The kernel keeps `sd_llc_shared->nr_idle_scan` up to date: only with `SIS_UTIL` on
    /// (`update_idle_cpu_scan()` returns first thing without it), so a value read from a
    /// kernel running without it is stale and the emulation stands in.
    pub nr_idle_scan_kept: bool,
}

impl Default for KernelRules {
    fn default() -> Self {
        Self {
            wa_idle: true,
            wa_weight: true,
            wa_bias: true,
            delayed_sync: false,
            nr_idle_scan_kept: true,
        }
    }
}

impl KernelRules {
    /// From the recording's `sched/features` (`NO_X` = X off); `None` = unknown, the defaults
    /// (WA_* on, no delayed rule: `DELAY_DEQUEUE` cannot be told from the release string).
    pub fn of_features(features: Option<&[String]>) -> Self {
        let Some(f) = features.filter(|f| !f.is_empty()) else {
            return Self::default();
        };
        use crate::sched_feature::SchedFeature;
        Self {
            // Off only when listed off: every kernel the model follows has the feature.
            wa_idle: SchedFeature::WaIdle.state_in(f) != crate::sched_feature::State::Off,
            wa_weight: SchedFeature::WaWeight.is_on(f),
            wa_bias: SchedFeature::WaBias.is_on(f),
            delayed_sync: SchedFeature::DelayDequeue.is_on(f),
            nr_idle_scan_kept: SchedFeature::SisUtil.is_on(f),
        }
    }
}

/// How the affine step chose the SIS target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FrontRule {
    /// `WF_CURRENT_CPU`.
    CurrentCpu,
    /// `wake_wide()` said wide, or no `SD_WAKE_AFFINE` domain spans both CPUs: target = prev.
    #[default]
    NotAffine,
    /// Waker and prev are the same CPU: no affine step.
    SameCpu,
    /// `wake_affine_idle` rule 1: the waker's CPU is idle (IRQ wakeup) and shares prev's LLC.
    IdleWaker,
    /// `wake_affine_idle` rule 2: sync and the waker is alone on its CPU.
    SyncSingle,
    /// `wake_affine_idle` rule 3: prev is idle.
    IdlePrev,
    /// `wake_affine_idle` undecided (or `WA_IDLE` off) and `WA_WEIGHT` not computable (loads
    /// not read, or the feature off): prev kept, as the kernel's undecided result.
    Undecided,
    /// `wake_affine_weight` chose the waker's CPU.
    WeightWaker,
    /// `wake_affine_weight` kept prev.
    WeightPrev,
}

/// Result of FRONT (the affine step of `select_task_rq_fair`), computed once per wakeup and shared
/// by the kernel-like policies.
#[derive(Clone, Copy, Debug, Default)]
pub struct Front {
    /// The SIS target T.
    pub target: u32,
    pub rule: FrontRule,
    /// `WF_SYNC` and the waker not exiting (exiting is not captured; assumed not).
    pub sync: bool,
    pub wide: bool,
    /// Idle tests spent in `wake_affine_idle`.
    pub probes: u32,
    /// The result depended on a reconstructed (not probe-read) input.
    pub inexact: bool,
    /// Sync, and the raw (`nr_running == 1`) and delayed-aware (`nr_running - h_nr_delayed
    /// == 1`) tests answer differently: which one the kernel runs decides the target.
    pub delayed_split: bool,
}

impl Front {
    /// `WF_CURRENT_CPU` ends every kernel-like policy before SIS: the waker's CPU, no probe.
    pub const fn current_cpu(&self) -> Option<Decision> {
        if matches!(self.rule, FrontRule::CurrentCpu) {
            Some(Decision {
                cpu: self.target,
                probes: 0,
                rule: Rule::stage(Stage::CurrentCpu),
                clear_hint: None,
                behind_waker: false,
                scan: None,
            })
        } else {
            None
        }
    }
}

/// Kernel inputs read by the probes at `select_task_rq_fair` entry, when it allowed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Exact {
    pub waker_nr_running: Option<u32>,
    /// `nr_idle_scan` / `has_idle_cores` of the waker's LLC.
    pub w_nr_idle_scan: Option<u32>,
    pub w_has_idle_cores: Option<bool>,
    /// The same for the LLC of `prev_cpu`.
    pub p_nr_idle_scan: Option<u32>,
    pub p_has_idle_cores: Option<bool>,
}

/// Everything a policy may read about one wakeup, as of the decision.
#[derive(Clone, Debug)]
pub struct Ctx {
    pub ts_ns: u64,
    pub pid: u32,
    pub waker_pid: u32,
    /// Waker CPU W.
    pub w: u32,
    /// `prev_cpu` P.
    pub p: u32,
    /// `None` without the select probe (tracepoints do not carry them).
    pub wake_flags: Option<u32>,
    /// `p->recent_used_cpu` before this wakeup, [`NONE`] when unknown.
    pub recent_used_cpu: u32,
    pub exact: Exact,
    pub front: Front,
    /// The decision comes from a select record (not tracepoint-only).
    pub has_select: bool,
    /// Tracepoint-only, with the select inputs read at `sched_waking` (wake flags only where
    /// the probe read `WF_SYNC` from the waker's stack).
    pub at_waking: bool,
    /// The ABI-2 select inputs (loads, delayed count, waker kthread, affinity).
    pub inputs: SelectInputs,
    /// The wakee's allowed CPUs when it may not run everywhere (from `inputs.allowed`).
    pub allowed: Option<CpuSet>,
    pub rules: KernelRules,
    /// The kernel's return value when the select record carries it (never shown to policies
    /// other than through the baseline; kept for the baseline's queue length).
    pub kernel_cpu: Option<u32>,
    /// The wakee's process, when the stream said it.
    pub tgid: Option<u32>,
    /// Its process's preferred CPU ([`super::occupancy`], modelled), when it has one.
    pub preferred_cpu: Option<u32>,
    /// `task_util(p)` (modelled, 0..1024).
    pub task_util: f32,
    inexact: Cell<bool>,
    /// P1's answer for this wakeup, computed once and shared by the policies built on it,
    /// with whether it used a reconstructed input.
    sis_util_memo: Cell<Option<(Decision, ScanOut, bool)>>,
}

impl Ctx {
    pub fn new(ts_ns: u64, pid: u32, waker_pid: u32, w: u32, p: u32) -> Self {
        Self {
            ts_ns,
            pid,
            waker_pid,
            w,
            p,
            wake_flags: None,
            recent_used_cpu: NONE,
            exact: Exact::default(),
            front: Front::default(),
            has_select: false,
            at_waking: false,
            inputs: SelectInputs::default(),
            allowed: None,
            rules: KernelRules::default(),
            kernel_cpu: None,
            tgid: None,
            preferred_cpu: None,
            task_util: 0.0,
            inexact: Cell::new(false),
            sis_util_memo: Cell::new(None),
        }
    }

    /// The same wakeup decided as if `p` were the previous CPU (a proposal that redirects
    /// `prev_cpu` before the affine step): FRONT recomputed, `recent_used_cpu` not consulted,
    /// and the kernel reads that were about the real previous CPU (its LLC's scan state, its
    /// load and capacity) dropped, so what depends on them is modelled and marked so.
    pub fn with_prev(&self, t: &ShadowTopo, st: &State, p: u32) -> Self {
        let mut c = Self::new(self.ts_ns, self.pid, self.waker_pid, self.w, p);
        c.wake_flags = self.wake_flags;
        c.exact = Exact {
            p_nr_idle_scan: None,
            p_has_idle_cores: None,
            ..self.exact
        };
        c.has_select = self.has_select;
        c.at_waking = self.at_waking;
        c.inputs = SelectInputs {
            prev_load: None,
            prev_capacity: None,
            ..self.inputs
        };
        c.allowed = self.allowed.clone();
        c.rules = self.rules;
        c.tgid = self.tgid;
        c.preferred_cpu = self.preferred_cpu;
        c.task_util = self.task_util;
        c.compute_front(t, st, self.front.wide);
        c
    }

    /// The same wakeup under other `wake_affine` rules and the FRONT they gave
    /// ([`Ctx::front_under`]), every input as recorded: for a policy modelling a flip of
    /// `WA_IDLE` or `WA_WEIGHT`.
    pub fn with_front(&self, rules: KernelRules, front: Front) -> Self {
        let mut c = self.clone();
        c.rules = rules;
        c.front = front;
        c.sis_util_memo.set(None);
        c
    }

    /// Starts a policy's evaluation: clears the "used a reconstructed input" flag.
    pub fn begin(&self) {
        self.inexact.set(!self.has_select);
    }

    /// Whether the current evaluation used only probe-read kernel inputs (plus the stream).
    pub fn was_exact(&self) -> bool {
        !self.inexact.get()
    }

    pub fn mark_inexact(&self) {
        self.inexact.set(true);
    }

    /// FRONT's result (records its inexactness in the current evaluation).
    pub fn front(&self) -> Front {
        if self.front.inexact {
            self.mark_inexact();
        }
        self.front
    }

    /// Whether the wakee may run on `cpu` (true when its mask is unknown or all CPUs).
    #[inline]
    pub fn allows(&self, cpu: u32) -> bool {
        self.allowed.as_ref().is_none_or(|m| m.contains(cpu))
    }

    /// `select_task_rq()`'s `is_cpu_allowed` check: a choice outside the mask becomes
    /// `select_fallback_rq`'s, the first allowed CPU of prev's node, else the first allowed.
    #[inline]
    pub fn enforce_allowed(&self, t: &ShadowTopo, d: &mut Decision) {
        let Some(m) = self.allowed.as_ref() else {
            return;
        };
        if m.contains(d.cpu) {
            return;
        }
        let node = t.node(self.p);
        if let Some(c) = m
            .iter()
            .find(|&c| t.node(c) == node)
            .or_else(|| m.iter().next())
        {
            d.cpu = c;
        }
    }

    /// The waker is a per-CPU kthread (`PF_KTHREAD`, one allowed CPU) in task context:
    /// `None` when not read. `in_task()` is assumed unless the waker is an idle task.
    pub fn per_cpu_kthread_waker(&self) -> Option<bool> {
        self.inputs
            .per_cpu_kthread_waker()
            .map(|k| k && self.waker_pid != 0)
    }

    /// The sync test of `wake_affine_idle`: "the waker runs alone" as the recorded kernel
    /// counts it. Returns (answer, whether the raw and delayed-aware tests differ).
    fn sync_single(&self, st: &State) -> (bool, bool) {
        let n = self.nr_running_w(st);
        let raw = n == 1;
        if !self.rules.delayed_sync {
            return (raw, false);
        }
        match self.inputs.waker_h_nr_delayed {
            Some(d) => {
                let delayed = n.saturating_sub(d) == 1;
                (delayed, raw != delayed)
            }
            None => {
                self.mark_inexact();
                (raw, false)
            }
        }
    }

    /// `wake_affine_weight()` (fair.c): `Some(true)` = the waker's CPU, `Some(false)` = keep
    /// prev, `None` = the loads were not read. Capacities default to 1024 (inexact) and the
    /// waker's `task_h_load` to 0 (inexact) when not read.
    pub fn wake_affine_weight(&self, t: &ShadowTopo, sync: bool) -> Option<bool> {
        let i = &self.inputs;
        let (wl, pl, tl) = (i.waker_load?, i.prev_load?, i.task_h_load?);
        let (wl, pl, tl) = (i64::from(wl), i64::from(pl), i64::from(tl));
        let cap = |c: Option<u32>| {
            c.map_or_else(
                || {
                    self.mark_inexact();
                    1024
                },
                i64::from,
            )
        };
        let (cap_w, cap_p) = (cap(i.waker_capacity), cap(i.prev_capacity));
        if i.task_in_group {
            self.mark_inexact();
        }
        let mut this_eff = wl;
        if sync {
            let cur = i.waker_h_load.map_or_else(
                || {
                    self.mark_inexact();
                    0
                },
                i64::from,
            );
            if cur > this_eff {
                return Some(true);
            }
            this_eff -= cur;
        }
        this_eff += tl;
        if self.rules.wa_bias {
            this_eff *= 100;
        }
        this_eff *= cap_p;
        let mut prev_eff = pl - tl;
        if self.rules.wa_bias {
            prev_eff *= 100 + (i64::from(t.imbalance_pct(self.w, self.p)) - 100) / 2;
        }
        prev_eff *= cap_w;
        if sync {
            prev_eff += 1;
        }
        Some(this_eff < prev_eff)
    }

    pub fn sync(&self) -> bool {
        self.wake_flags.is_some_and(|f| f & wf::SYNC != 0)
    }

    /// `cpu_rq(W)->nr_running`, exact when read by the probe.
    pub fn nr_running_w(&self, st: &State) -> u32 {
        match self.exact.waker_nr_running {
            Some(n) => n,
            None => {
                self.mark_inexact();
                st.nr_running(self.w)
            }
        }
    }

    /// `test_idle_cores()` for LLC `llc`: the probe's read for W's or P's LLC, else the
    /// emulated hint. Always false without SMT (`sched_smt_active()` guards the read).
    pub fn has_idle_cores(&self, t: &ShadowTopo, st: &State, llc: u32) -> bool {
        if !t.smt {
            return false;
        }
        let exact = if llc == t.llc(self.w) {
            self.exact.w_has_idle_cores
        } else if llc == t.llc(self.p) {
            self.exact.p_has_idle_cores
        } else {
            None
        };
        exact.unwrap_or_else(|| {
            self.mark_inexact();
            st.hic.get(llc as usize).copied().unwrap_or(false)
        })
    }

    /// `sd_llc_shared->nr_idle_scan` of LLC `llc`: the probe's read, else the emulation.
    pub fn nr_idle_scan(&self, t: &ShadowTopo, st: &State, llc: u32) -> u32 {
        let exact = if llc == t.llc(self.w) {
            self.exact.w_nr_idle_scan
        } else if llc == t.llc(self.p) {
            self.exact.p_nr_idle_scan
        } else {
            None
        };
        exact.unwrap_or_else(|| {
            self.mark_inexact();
            st.nr_idle_scan.get(llc as usize).copied().unwrap_or(0)
        })
    }

    /// FRONT (`wake_wide`, `wake_affine` in kernel/sched/fair.c: `WA_IDLE`, then `WA_WEIGHT`, as
    /// the recorded features say). `wide` is
    /// `wake_wide()`'s answer from the reconstructed `record_wakee` state.
    pub fn compute_front(&mut self, t: &ShadowTopo, st: &State, wide: bool) {
        self.sis_util_memo.set(None);
        self.begin();
        self.front = self.front_of(t, st, wide, self.rules);
    }

    /// FRONT of this wakeup under `rules` instead of the recorded ones, leaving this
    /// context (its FRONT and the current evaluation's exactness) as it was.
    pub fn front_under(&self, t: &ShadowTopo, st: &State, rules: KernelRules) -> Front {
        let before = self.inexact.get();
        self.begin();
        let f = self.front_of(t, st, self.front.wide, rules);
        self.inexact.set(before);
        f
    }

    /// FRONT under `rules`; its exactness is that of the evaluation begun before the call.
    fn front_of(&self, t: &ShadowTopo, st: &State, wide: bool, rules: KernelRules) -> Front {
        let (w, p) = (self.w, self.p);
        let sync = self.sync();
        let mut f = Front {
            target: p,
            rule: FrontRule::NotAffine,
            sync,
            wide,
            probes: 0,
            inexact: false,
            delayed_split: false,
        };
        if self.wake_flags.is_some_and(|fl| fl & wf::CURRENT_CPU != 0) {
            f.target = w;
            f.rule = FrontRule::CurrentCpu;
        } else if wide || !self.allows(w) || !t.affine_domain(w, p) {
            f.rule = FrontRule::NotAffine;
        } else if w == p {
            f.rule = FrontRule::SameCpu;
        } else if !rules.wa_idle {
            f.rule = self.weight_rule(t, sync, &mut f, rules);
        } else {
            f.probes += 1;
            if st.is_idle(w) && t.share_llc(w, p) {
                f.probes += 1;
                f.target = if st.is_idle(p) { p } else { w };
                f.rule = FrontRule::IdleWaker;
            } else if sync && {
                let (single, split) = self.sync_single(st);
                f.delayed_split = split;
                single
            } {
                f.target = w;
                f.rule = FrontRule::SyncSingle;
            } else {
                f.probes += 1;
                f.rule = if st.is_idle(p) {
                    FrontRule::IdlePrev
                } else {
                    self.weight_rule(t, sync, &mut f, rules)
                };
            }
        }
        f.inexact = !self.was_exact();
        f
    }

    /// `wake_affine`'s second step, where `wake_affine_idle` left the choice open (or
    /// `WA_IDLE` is off): `WA_WEIGHT` when it is on and computable, else undecided (prev).
    fn weight_rule(
        &self,
        t: &ShadowTopo,
        sync: bool,
        f: &mut Front,
        rules: KernelRules,
    ) -> FrontRule {
        if !rules.wa_weight {
            return FrontRule::Undecided;
        }
        match self.wake_affine_weight(t, sync) {
            Some(true) => {
                f.target = self.w;
                FrontRule::WeightWaker
            }
            Some(false) => FrontRule::WeightPrev,
            None => FrontRule::Undecided,
        }
    }
}

/// A remembered idle-core scan: (LLC, start CPU) -> (idle core, fallback, probes).
type CoreMemo = (u32, u32, Option<u32>, Option<u32>, u32);

/// A remembered SHORTCUTS run: (target, hint, previous CPU) -> (answer, probes spent, whether
/// it read a reconstructed input). The previous CPU is part of the key because a policy may
/// decide as if another CPU were prev ([`Ctx::with_prev`]).
type ShortcutMemo = (u32, bool, u32, Option<(u32, Stage)>, u32, bool);

/// Reusable buffers, so no decision allocates, and a per-wakeup memo of idle-core scans
/// (several policies scan the same LLC from the same CPU; the state does not change while
/// one wakeup is being decided).
#[derive(Clone, Debug)]
pub struct Scratch {
    pub cand: CpuSet,
    memo: [CoreMemo; 4],
    memo_len: usize,
    /// Six of the ten kernel-like policies run SHORTCUTS, mostly from the same target with
    /// the same hint: a pure function of the context and the state, so run once per wakeup.
    sc_memo: [ShortcutMemo; 4],
    sc_len: usize,
    /// The wakee's allowed CPUs for this wakeup (`None`: all), and the scan span
    /// `llc ∩ allowed` built from it.
    allowed: Option<CpuSet>,
    span: CpuSet,
}

impl Scratch {
    pub fn new(t: &ShadowTopo) -> Self {
        Self {
            cand: CpuSet::with_bound(t.bound),
            memo: [(0, 0, None, None, 0); 4],
            memo_len: 0,
            sc_memo: [(0, false, 0, None, 0, false); 4],
            sc_len: 0,
            allowed: None,
            span: CpuSet::with_bound(t.bound),
        }
    }

    /// Forgets the memo: call whenever the state may have changed (each new wakeup).
    pub fn reset(&mut self) {
        self.memo_len = 0;
        self.sc_len = 0;
    }

    /// [`shortcuts`] for target `tg` with hint `hic`, memoised per wakeup: adds the same
    /// probes and marks the evaluation inexact exactly as running it again would.
    pub fn shortcuts(
        &mut self,
        ctx: &Ctx,
        t: &ShadowTopo,
        st: &State,
        tg: u32,
        hic: bool,
        probes: &mut u32,
    ) -> Option<(u32, Stage)> {
        if let Some(m) = self.sc_memo[..self.sc_len]
            .iter()
            .find(|m| m.0 == tg && m.1 == hic && m.2 == ctx.p)
        {
            if m.5 {
                ctx.mark_inexact();
            }
            *probes += m.4;
            return m.3;
        }
        let before = ctx.inexact.get();
        ctx.inexact.set(false);
        let mut n = 0;
        let r = shortcuts(ctx, t, st, tg, hic, &mut n);
        let used = ctx.inexact.get();
        ctx.inexact.set(before || used);
        *probes += n;
        let i = self.sc_len % self.sc_memo.len();
        self.sc_memo[i] = (tg, hic, ctx.p, r, n, used);
        self.sc_len = (self.sc_len + 1).min(self.sc_memo.len());
        r
    }

    /// The wakee's allowed mask for this wakeup's scans (call after [`Self::reset`]).
    pub fn set_allowed(&mut self, allowed: Option<&CpuSet>) {
        match (allowed, self.allowed.as_mut()) {
            (None, _) => self.allowed = None,
            (Some(a), Some(mine)) if mine.words().len() == a.words().len() => mine.copy_from(a),
            (Some(a), _) => self.allowed = Some(a.clone()),
        }
    }

    /// `cpumask_and(cpus, sched_domain_span(sd), p->cpus_ptr)` for LLC `llc` into `span`;
    /// false when every CPU is allowed (scan the LLC mask itself).
    fn restrict(&mut self, t: &ShadowTopo, llc: u32) -> bool {
        let Some(a) = self.allowed.as_ref() else {
            return false;
        };
        self.span.copy_from(t.llc_mask(llc));
        let aw = a.words();
        for (i, w) in self.span.words_mut().iter_mut().enumerate() {
            *w &= aw.get(i).copied().unwrap_or(0);
        }
        true
    }

    /// `core_scan` over the whole LLC `llc` from `start`, memoised per wakeup.
    pub fn llc_core_scan(
        &mut self,
        t: &ShadowTopo,
        st: &State,
        llc: u32,
        start: u32,
    ) -> (Option<u32>, Option<u32>, u32) {
        if let Some(m) = self.memo[..self.memo_len]
            .iter()
            .find(|m| m.0 == llc && m.1 == start)
        {
            return (m.2, m.3, m.4);
        }
        let restricted = self.restrict(t, llc);
        let (core, fallback, probes) = match t.core_walk(llc, start) {
            Some(walk) if !restricted => core_walk_scan(t, st, walk, t.llc_mask(llc)),
            _ => {
                let mask = if restricted {
                    &self.span
                } else {
                    t.llc_mask(llc)
                };
                self.cand.copy_from(mask);
                core_scan(t, st, &mut self.cand, mask, start)
            }
        };
        let i = self.memo_len % self.memo.len();
        self.memo[i] = (llc, start, core, fallback, probes);
        self.memo_len = (self.memo_len + 1).min(self.memo.len());
        (core, fallback, probes)
    }
}

/// One policy's answer for one wakeup.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Decision {
    pub cpu: u32,
    /// Idle tests spent (see the module docs).
    pub probes: u32,
    pub rule: Rule,
    /// A failed idle-core scan cleared this LLC's hint (`set_idle_cores(target, false)`).
    /// Applied to the shared state only for the policy standing for the running kernel.
    pub clear_hint: Option<u32>,
    /// Queued the wakee behind the running waker (WF_SYNC wake-local): the evaluator then
    /// watches whether the waker really slept.
    pub behind_waker: bool,
    /// CPUs the kernel's `select_idle_cpu` tested for this decision (an idle-core walk counts
    /// each CPU of each core); `None` when that function did not run.
    pub scan: Option<u32>,
}

impl Decision {
    /// A decision with no hint to clear and nothing queued behind the waker.
    pub const fn new(cpu: u32, probes: u32, rule: Rule) -> Self {
        Self {
            cpu,
            probes,
            rule,
            clear_hint: None,
            behind_waker: false,
            scan: None,
        }
    }
}

/// Which policy the running kernel applies, from its release (see [`super::kernel_policy`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum KernelFlavour {
    /// `SIS_PROP` on, `SIS_UTIL` off or absent (the default before 6.0).
    SisProp,
    /// `SIS_UTIL` on (the default from 6.0).
    SisUtil,
    /// Neither: `select_idle_cpu` scans the whole LLC (`NO_SIS_UTIL` on 6.7+, where SIS_PROP
    /// is gone or off).
    FullScan,
}

/// How the running kernel's policy was chosen, said in the report: a release string is wrong
/// for a kernel that backported SIS_UTIL or runs with a feature flipped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FlavourSource {
    /// From the recording's `sched/features` (the file read at capture start).
    SchedFeatures,
    /// From the kernel release: the recording has no features list (debugfs unreadable, or
    /// an older recording).
    KernelRelease,
}

/// A placement policy: re-decides one wakeup from the reconstructed state. Open loop: the
/// decision changes nothing in `State`; a policy may keep private state of its own, fed by
/// [`Policy::on_event`]. Everything the report says about a policy comes from here, so a new
/// policy is one file plus its line in `policies::registry`.
pub trait Policy: Send {
    /// Registry name, used in the report and the JSON (`sis_util`, `wf_sync`, ...).
    fn name(&self) -> &'static str;
    /// Spec id and one line of what it is, for the report.
    fn describe(&self) -> &'static str;
    /// The baseline: the kernel's own choice, filled in by the evaluator at placement time.
    fn is_observed(&self) -> bool {
        false
    }
    /// Names of the policy's own rules: [`Rule::own`]`(n)` is reported as `rules()[n]` (at
    /// most [`super::rule::MAX_OWN`]).
    fn rules(&self) -> &'static [&'static str] {
        &[]
    }
    /// What this policy models only approximately, one caveat per entry, for the report.
    fn approximations(&self) -> &'static [&'static str] {
        &[]
    }
    /// The kernel flavour this policy reproduces, if any: the evaluator measures fidelity
    /// against the policy standing for the recorded kernel's.
    fn kernel_flavour(&self) -> Option<KernelFlavour> {
        None
    }
    /// Why this policy's choice cannot differ from the kernel model's when the capture has no
    /// `select_task_rq_fair` records (tracepoint-only: no wake flags, no select inputs), if it
    /// depends on them: its row then says n/a with this reason instead of a delta of 0.
    fn needs_select_records(&self) -> Option<&'static str> {
        None
    }
    /// The event kinds [`Policy::on_event`] wants (the evaluator calls it for those only: it
    /// is on the per-event path).
    fn event_kinds(&self) -> &'static [Kind] {
        &[]
    }
    /// Sees every event of [`Policy::event_kinds`], in stream order, before the shared state
    /// takes it and before any decision it triggers: for private state of the policy.
    fn on_event(&mut self, _e: &Event, _t: &ShadowTopo, _st: &State) {}
    fn decide(&mut self, ctx: &Ctx, t: &ShadowTopo, st: &State, s: &mut Scratch) -> Decision;
}

/// Outcome of `select_idle_cpu`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ScanOut {
    pub cpu: Option<u32>,
    pub rule: Stage,
    pub probes: u32,
    /// Idle-core mode found no idle core (the LLC hint gets cleared).
    pub core_failed: bool,
    /// The scan returned early because the budget ran out (SIS_PROP accounting skips it).
    pub budget_out: bool,
    /// `select_idle_cpu` was called at all.
    pub ran: bool,
}

impl ScanOut {
    /// CPUs tested, when the scan ran (a zero budget is a scan with no test, as the kernel's
    /// early return is).
    pub const fn tests(&self) -> Option<u32> {
        if self.ran { Some(self.probes) } else { None }
    }
}

/// `select_idle_cpu(p, sd_llc, has_idle_core, target)` on LLC `llc`: wrap order from
/// `target + 1`. `limit` is the most CPUs probed outside idle-core mode (`None` = no limit);
/// `Some(0)` returns at once (SIS_UTIL with `nr_idle_scan == 0`, even in idle-core mode).
pub fn select_idle_cpu(
    t: &ShadowTopo,
    st: &State,
    s: &mut Scratch,
    llc: u32,
    target: u32,
    hic: bool,
    limit: Option<u32>,
) -> ScanOut {
    let mut out = ScanOut {
        ran: true,
        rule: Stage::Stacked,
        ..ScanOut::default()
    };
    if limit == Some(0) {
        out.budget_out = true;
        return out;
    }
    let start = target.wrapping_add(1);
    if hic {
        let (core, fallback, probes) = s.llc_core_scan(t, st, llc, start);
        out.probes = probes;
        if let Some(c) = core {
            out.cpu = Some(c);
            out.rule = Stage::ScanCore;
        } else {
            out.core_failed = true;
            if let Some(c) = fallback {
                out.cpu = Some(c);
                out.rule = Stage::ScanFallback;
            }
        }
    } else {
        let lim = limit.unwrap_or(u32::MAX);
        let mask = if s.restrict(t, llc) {
            &s.span
        } else {
            t.llc_mask(llc)
        };
        let (hit, probes) = mask.wrap_first(&st.idle, start, lim);
        out.probes = probes;
        match hit {
            Some(c) => {
                out.cpu = Some(c);
                out.rule = Stage::ScanIdle;
            }
            None => out.budget_out = probes >= lim && (lim as usize) < mask.len(),
        }
    }
    out
}

/// Idle-core mode of `select_idle_cpu`: visits each core once, at its first sibling in wrap
/// order, walking its siblings like `select_idle_core` (a busy sibling ends the walk once a
/// fallback idle CPU is known). Returns (idle core's iterated CPU, fallback idle CPU, probes).
/// `cand` is consumed.
pub fn core_scan(
    t: &ShadowTopo,
    st: &State,
    cand: &mut CpuSet,
    span: &CpuSet,
    start: u32,
) -> (Option<u32>, Option<u32>, u32) {
    // The innermost loop of the idle-core policies: the idle map and the span as plain words,
    // each core's siblings looked up once.
    let (idle, span) = (st.idle.words(), span.words());
    let cand = cand.words_mut();
    let nw = cand.len();
    let mut probes = 0;
    let mut fallback = None;
    let mut k = 0;
    while let Some((w, mask)) = CpuSet::wrap_segment(nw, start, k) {
        k += 1;
        loop {
            let m = cand[w] & mask;
            if m == 0 {
                break;
            }
            let b = m.trailing_zeros();
            cand[w] &= !(1u64 << b);
            let c = w as u32 * 64 + b;
            let sibs = t.siblings(c);
            if probe_core(sibs, idle, span, &mut probes, &mut fallback) {
                return (Some(c), fallback, probes);
            }
            for &sib in sibs {
                CpuSet::words_set(cand, sib, false);
            }
        }
    }
    (None, fallback, probes)
}

/// [`core_scan`] over a whole LLC whose visiting order is known ([`ShadowTopo::core_walk`]):
/// the same probes and answers, without deriving the order from the candidate bits.
fn core_walk_scan(
    t: &ShadowTopo,
    st: &State,
    walk: &[WalkStep],
    span: &CpuSet,
) -> (Option<u32>, Option<u32>, u32) {
    let (idle, span) = (st.idle.words(), span.words());
    let mut probes = 0;
    let mut fallback = None;
    for step in walk {
        if probe_core(
            t.step_siblings(step),
            idle,
            span,
            &mut probes,
            &mut fallback,
        ) {
            return (Some(step.cpu), fallback, probes);
        }
    }
    (None, fallback, probes)
}

/// One core of an idle-core scan: whether every sibling is idle, counting each sibling looked
/// at in `probes` and noting the first idle one in `span` as the idle-CPU `fallback`. Once a
/// busy sibling is seen and a fallback is known, the rest of the core cannot change the answer.
#[inline(always)]
fn probe_core(
    sibs: &[u32],
    idle: &[u64],
    span: &[u64],
    probes: &mut u32,
    fallback: &mut Option<u32>,
) -> bool {
    let mut all = true;
    for &sib in sibs {
        *probes += 1;
        if !CpuSet::words_contain(idle, sib) {
            all = false;
            if fallback.is_some() {
                break;
            }
            continue;
        }
        if fallback.is_none() && CpuSet::words_contain(span, sib) {
            *fallback = Some(sib);
        }
    }
    all
}

/// SHORTCUTS (the early returns of `select_idle_sibling`) for target `tg` with idle-core hint
/// `hic`. Returns the CPU and rule, or `None` when the scan must run.
pub fn shortcuts(
    ctx: &Ctx,
    t: &ShadowTopo,
    st: &State,
    tg: u32,
    hic: bool,
    probes: &mut u32,
) -> Option<(u32, Stage)> {
    let p = ctx.p;
    *probes += 1;
    if st.is_idle(tg) {
        return Some((tg, Stage::Target));
    }
    if p != tg && t.share_llc(p, tg) {
        *probes += 1;
        if st.is_idle(p) {
            return Some((p, Stage::Prev));
        }
    }
    // Per-CPU kthread stacking: `is_per_cpu_kthread(current) && in_task() && prev ==
    // smp_processor_id() && this_rq()->nr_running <= 1` (IO completions).
    if p == ctx.w && ctx.per_cpu_kthread_waker() == Some(true) && ctx.nr_running_w(st) <= 1 {
        return Some((p, Stage::KthreadPrev));
    }
    let r = ctx.recent_used_cpu;
    if r != NONE && r != p && r != tg && t.share_llc(r, tg) && ctx.allows(r) {
        *probes += 1;
        if st.is_idle(r) {
            return Some((r, Stage::Recent));
        }
    }
    if t.smt && !hic && t.share_llc(p, tg) {
        let llc = t.llc(tg);
        for &sib in t.siblings(p) {
            if sib == p || t.llc(sib) != llc || !ctx.allows(sib) {
                continue;
            }
            *probes += 1;
            if st.is_idle(sib) {
                return Some((sib, Stage::SmtOfPrev));
            }
        }
    }
    None
}

/// What a SIS-shaped policy does before its own scan: FRONT (`WF_CURRENT_CPU` ends there) and
/// SHORTCUTS from FRONT's target. `Ok`: decided; `Err((target, idle-core hint, probes so
/// far))`: the scan comes next.
pub fn before_scan(
    ctx: &Ctx,
    t: &ShadowTopo,
    st: &State,
    s: &mut Scratch,
) -> Result<Decision, (u32, bool, u32)> {
    let f = ctx.front();
    if let Some(d) = f.current_cpu() {
        return Ok(d);
    }
    let tg = f.target;
    let hic = ctx.has_idle_cores(t, st, t.llc(tg));
    let mut probes = f.probes;
    match s.shortcuts(ctx, t, st, tg, hic, &mut probes) {
        Some((cpu, rule)) => Ok(Decision::new(cpu, probes, rule.into())),
        None => Err((tg, hic, probes)),
    }
}

/// How a kernel-like policy bounds the scan, given the target LLC and the idle-core hint.
pub type BudgetFn<'a> = &'a mut dyn FnMut(&Ctx, &ShadowTopo, &State, u32, bool) -> Option<u32>;

/// `select_idle_sibling` from target `tg`: SHORTCUTS, then `select_idle_cpu` bounded by
/// `budget`, then the target. `hic` comes from the caller (kernel hint or ground truth).
pub fn select_idle_sibling(
    ctx: &Ctx,
    t: &ShadowTopo,
    st: &State,
    s: &mut Scratch,
    tg: u32,
    hic: bool,
    budget: BudgetFn<'_>,
) -> (Decision, ScanOut) {
    let mut probes = 0;
    if let Some((cpu, rule)) = s.shortcuts(ctx, t, st, tg, hic, &mut probes) {
        return (
            Decision {
                cpu,
                probes,
                rule: rule.into(),
                clear_hint: None,
                behind_waker: false,
                scan: None,
            },
            ScanOut::default(),
        );
    }
    let llc = t.llc(tg);
    let limit = budget(ctx, t, st, llc, hic);
    let scan = select_idle_cpu(t, st, s, llc, tg, hic, limit);
    (
        Decision {
            cpu: scan.cpu.unwrap_or(tg),
            probes: probes + scan.probes,
            rule: scan.rule.into(),
            clear_hint: scan.core_failed.then_some(llc),
            behind_waker: false,
            scan: scan.tests(),
        },
        scan,
    )
}

/// SIS_UTIL's budget: `nr_idle_scan` of the target LLC bounds the plain scan; zero skips
/// the scan even in idle-core mode; idle-core mode is otherwise unbounded.
pub fn sis_util_budget(ctx: &Ctx, t: &ShadowTopo, st: &State, llc: u32, hic: bool) -> Option<u32> {
    let nis = ctx.nr_idle_scan(t, st, llc);
    if nis == 0 {
        Some(0)
    } else if hic {
        None
    } else {
        Some(nis)
    }
}

/// P1 in full: FRONT, SHORTCUTS, SIS_UTIL-bounded scan. Shared by the policies layered on it
/// (computed once per wakeup: it is a pure function of the context and the state).
impl Ctx {
    /// The SIS_UTIL scan of this context, when a policy computed it.
    pub fn sis_util_scan(&self) -> Option<ScanOut> {
        self.sis_util_memo.get().map(|(_, s, _)| s)
    }
}

pub fn sis_util(ctx: &Ctx, t: &ShadowTopo, st: &State, s: &mut Scratch) -> (Decision, ScanOut) {
    if let Some((d, scan, inexact)) = ctx.sis_util_memo.get() {
        if inexact {
            ctx.mark_inexact();
        }
        return (d, scan);
    }
    let before = ctx.inexact.get();
    ctx.inexact.set(!ctx.has_select);
    let (d, scan) = sis_util_uncached(ctx, t, st, s);
    let used = ctx.inexact.get();
    ctx.inexact.set(before || used);
    ctx.sis_util_memo.set(Some((d, scan, used)));
    (d, scan)
}

fn sis_util_uncached(
    ctx: &Ctx,
    t: &ShadowTopo,
    st: &State,
    s: &mut Scratch,
) -> (Decision, ScanOut) {
    let f = ctx.front();
    if let Some(d) = f.current_cpu() {
        return (d, ScanOut::default());
    }
    let hic = ctx.has_idle_cores(t, st, t.llc(f.target));
    let (mut d, scan) = select_idle_sibling(ctx, t, st, s, f.target, hic, &mut sis_util_budget);
    d.probes += f.probes;
    (d, scan)
}

/// Vagin's WF_SYNC condition: skip SIS and queue on the waker's CPU when the
/// wakeup is sync, the affine step settled on the waker's CPU, and the waker runs alone.
pub const fn wf_sync_wake_local(sync: bool, new_cpu: u32, waker_cpu: u32, nr_running: u32) -> bool {
    sync && new_cpu == waker_cpu && nr_running == 1
}

#[cfg(test)]
mod core_walk_tests {
    use super::*;
    use crate::topology::fixture;

    /// The precomputed visiting order gives `core_scan`'s exact answer and probe count, from
    /// every start (past the last CPU too, where the scan wraps) and for idle maps of every
    /// density, on SMT, non-SMT and irregular topologies.
    #[test]
    fn the_walk_table_scans_exactly_like_the_bit_walk() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut compared = 0;
        for name in ["zen3-nps4", "xeon-e5-2690v3", "irregular", "vm-2cpu"] {
            let topo = fixture::named_topology(name).expect("fixture");
            let t = ShadowTopo::new(&topo, super::super::topo::NODE_RECLAIM_DISTANCE);
            let mut st = State::new(&t);
            for density in [0u64, 10, 50, 90, 100] {
                for _ in 0..4 {
                    for cpu in 0..t.bound as u32 {
                        rng = rng
                            .wrapping_mul(6_364_136_223_846_793_005)
                            .wrapping_add(1_442_695_040_888_963_407);
                        st.idle
                            .set(cpu, t.valid(cpu) && (rng >> 33) % 100 < density);
                    }
                    for l in 0..t.n_llcs() as u32 {
                        let mask = t.llc_mask(l);
                        for start in 0..(t.nwords * 64 + 3) as u32 {
                            let walk = t.core_walk(l, start).expect("table built");
                            let fast = core_walk_scan(&t, &st, walk, mask);
                            let slow = core_scan(&t, &st, &mut mask.clone(), mask, start);
                            assert_eq!(fast, slow, "{name} llc {l} start {start}");
                            compared += 1;
                        }
                    }
                }
            }
        }
        assert!(compared > 10_000, "{compared}");
    }
}
