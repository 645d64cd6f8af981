//! The evaluation driver: feeds the state reconstruction and every registered policy, parks
//! their answers (see `shadow::park`) and scores them against the kernel's choice when the
//! placement arrives. Calling order and decision time: see the module docs of [`super`].
use super::{
    fidelity::{Disagreement, Fidelity, Verdict},
    flavour::{kernel_flavour, wake_wide},
    hz::HzClock,
    metrics::{Counts, Outcome, PolicyMetrics},
    park::{Parking, Record},
    policies,
    policy::{Ctx, Exact, FlavourSource, KernelRules, Policy, Rule, Scratch, Stage},
    spread::Spread,
    state::{Run, State},
    tally::Scored,
    topo::{self, ShadowTopo},
    watch::SyncWatch,
};
use crate::{
    event::{Event, Select, wf},
    format::Header,
    join::Placement,
    topology::{CpuSet, Level},
};
use wakeviz_common::PINNED_SLOTS;

// The hooks' kind masks are one byte.
const _: () = assert!(crate::event::Kind::ALL.len() <= 8);

/// A policy's place in the registry ([`policies::registry`] order, baseline first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PolicyId(pub usize);

/// Drives the state reconstruction and every registered policy.
pub struct ShadowEval {
    pub(super) topo: ShadowTopo,
    state: State,
    pub(super) policies: Vec<Box<dyn Policy>>,
    /// Policies with an event hook, with the kinds it wants (bit `Kind::index`).
    hooked: Vec<(usize, u8)>,
    /// Per policy: the sync-wakeup figures (`SyncWatch` charges them), and the per-placement
    /// counts, folded into the rest of its figures by [`Self::policy_metrics`].
    pub(super) metrics: Vec<PolicyMetrics>,
    counts: Vec<Counts>,
    /// The policy standing for the running kernel (fidelity, hint clearing).
    pub(super) kernel: PolicyId,
    /// Whether `kernel` came from the recording's features or its release string.
    pub(super) flavour_source: FlavourSource,
    /// The baseline (filled in from the kernel's choice at placement time).
    observed: Option<usize>,
    pub(super) fidelity: Fidelity,
    scratch: Scratch,
    /// Select records exist (probe attached per header, or one was seen).
    pub(super) select_mode: bool,
    park: Parking,
    pub(super) sync: SyncWatch,
    pub(super) select_ns: Option<hdrhistogram::Histogram<u64>>,
    pub(super) excluded: super::Excluded,
    pub(super) evaluated: u64,
    pub(super) late: u64,
    events: u64,
    /// The last scored placement's levels of each policy's choice (vs waker, vs prev).
    last_levels: Vec<(Option<Level>, Option<Level>)>,
    pub(super) nr_cpus: usize,
    /// WA_WEIGHT / WA_BIAS / delayed-dequeue sync, from the recorded features.
    pub(super) rules: KernelRules,
    /// The kernel's HZ, from the ABI-3 records' jiffies.
    pub(super) hz: HzClock,
    /// Per task: each policy's LLC at its previous scored wakeup (for the LLC-move figure).
    last_llc: crate::pidslab::PidSlab<Vec<u16>>,
    /// Each outcome's LLC for the placement being scored (reused).
    llc_buf: Vec<u32>,
    pub(super) spread: Spread,
    /// Per CPU: the select inputs its `sched_waking` probe read for the wakeup whose waking
    /// record comes next on that CPU ([`Select::at_waking`]).
    waking_inputs: Vec<Option<Select>>,
    /// Per CPU, [`PINNED_SLOTS`] slots by pid: the last pinned at-waking record of a pid, which
    /// a later `sched_waking` of the same task from the same old CPU stands for when the probes
    /// leave repeats unsent (`wakeviz_common::PINNED_REPEATS_UNSENT_SINCE`; `None` on older
    /// probes).
    last_pinned: Option<Vec<Option<Select>>>,
    /// Tracepoint-only decisions made with inputs read at `sched_waking`.
    pub(super) with_waking_inputs: u64,
    /// Of those, the decisions whose `WF_SYNC` the probe read from the waker's stack.
    pub(super) with_stack_flags: u64,
    /// The model's scan against the measured one (debug-info probes).
    pub(super) scan_model: super::scan_model::ScanModelReport,
}

thread_local! {
    static BUILT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Evaluators built on this thread so far: a run must fold its stream once, and every
/// evaluator runs every policy on every wakeup, so tests count them.
pub fn evaluators_built() -> u64 {
    BUILT.with(std::cell::Cell::get)
}

impl ShadowEval {
    /// Per-task entries the evaluator dropped over the budget (see [`crate::pidmap`]).
    pub fn evicted(&self) -> u64 {
        self.state.evicted() + self.park.evicted() + self.last_llc.evicted() + self.spread.untracked
    }

    pub fn new(header: &Header) -> Self {
        Self::with_policies(header, policies::registry)
    }

    /// With the policies `registry` builds (baseline first) instead of the standard ones.
    pub fn with_policies(
        header: &Header,
        registry: impl FnOnce(&ShadowTopo) -> Vec<Box<dyn Policy>>,
    ) -> Self {
        BUILT.with(|b| b.set(b.get() + 1));
        let mut topo = ShadowTopo::new(
            &header.topology,
            topo::reclaim_distance_for(header.cpu_vendor.as_deref()),
        );
        if header.cpu_vendor.is_some() {
            topo.vendor_known();
        }
        let policies = registry(&topo);
        let (want, flavour_source) = kernel_flavour(header);
        let kernel = policies
            .iter()
            .position(|p| p.kernel_flavour() == Some(want))
            .or_else(|| policies.iter().position(|p| !p.is_observed()))
            .unwrap_or(0);
        let n = policies.len();
        let select_mode = header
            .probe("select_task_rq_fair")
            .is_some_and(|p| p.attached());
        Self {
            state: State::new(&topo),
            scratch: Scratch::new(&topo),
            metrics: vec![PolicyMetrics::default(); n],
            counts: vec![Counts::default(); n],
            kernel: PolicyId(kernel),
            flavour_source,
            observed: policies.iter().position(|p| p.is_observed()),
            hooked: policies
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let kinds = p.event_kinds().iter().fold(0u8, |m, k| m | 1 << k.index());
                    (i, kinds)
                })
                .filter(|&(_, kinds)| kinds != 0)
                .collect(),
            fidelity: Fidelity::default(),
            policies,
            select_mode,
            park: Parking::new(n, topo.nwords),
            sync: SyncWatch::new(topo.bound),
            select_ns: hdrhistogram::Histogram::new_with_bounds(1, 60_000_000_000, 2).ok(),
            waking_inputs: vec![None; topo.bound],
            last_pinned: (header.abi_version >= wakeviz_common::PINNED_REPEATS_UNSENT_SINCE)
                .then(|| vec![None; topo.bound * PINNED_SLOTS]),
            with_waking_inputs: 0,
            with_stack_flags: 0,
            scan_model: super::scan_model::ScanModelReport::default(),
            excluded: super::Excluded::default(),
            evaluated: 0,
            late: 0,
            events: 0,
            last_levels: vec![(None, None); n],
            nr_cpus: header.topology.nr_cpus(),
            rules: KernelRules::of_features(header.run.sched_features.as_deref()),
            hz: HzClock::default(),
            last_llc: crate::pidslab::PidSlab::default(),
            llc_buf: Vec::with_capacity(n),
            spread: Spread::new(topo.n_llcs(), n),
            topo,
        }
    }

    /// The CPU policy `policy` (registry index) chose for `pid`'s parked decision, which this
    /// releases: for a caller that acts on one policy's answer (the closed-loop simulator)
    /// instead of scoring them all against the kernel's.
    pub fn take_choice(&mut self, pid: u32, policy: usize) -> Option<u32> {
        let s = self.park.parked(pid)?;
        let cpu = self.park.outcomes(s).get(policy)?.cpu;
        self.park.release(pid);
        Some(cpu)
    }

    /// Registry names, baseline first.
    pub fn policy_names(&self) -> Vec<&'static str> {
        self.policies.iter().map(|p| p.name()).collect()
    }

    /// The policy whose agreement is the fidelity figure.
    pub fn fidelity_policy(&self) -> PolicyId {
        self.kernel
    }

    /// Placed wakeups compared so far.
    pub fn evaluated(&self) -> u64 {
        self.evaluated
    }

    pub fn excluded(&self) -> super::Excluded {
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

    /// Agreement of the running kernel's policy shadow with the kernel (0..1), once anything
    /// was compared.
    pub fn fidelity(&self) -> Option<f64> {
        self.fidelity.agreement()
    }

    /// A task fact from the stream: the task's process, when it says one.
    pub fn on_task(&mut self, t: &crate::event::TaskName) {
        self.state.set_tgid(t.pid, t.tgid);
    }

    pub fn on_event(&mut self, e: &Event) {
        self.events += 1;
        self.state.advance(e.ts_ns());
        self.state.expire_claims(&self.topo, e.ts_ns());
        if self.events.is_multiple_of(1 << 16) {
            self.park.purge(e.ts_ns());
        }
        if !self.hooked.is_empty() {
            let bit = 1u8 << e.kind().index();
            for &(i, kinds) in &self.hooked {
                if kinds & bit != 0 {
                    self.policies[i].on_event(e, &self.topo, &self.state);
                }
            }
        }
        match e {
            Event::Switch(s) => {
                self.sync
                    .resolve(&mut self.metrics, s.cpu, s.prev_pid, s.prev_state, s.ts_ns);
                if s.next_pid != 0
                    && self.topo.valid(s.cpu)
                    && let Some(g) = self.state.tgid(s.next_pid)
                {
                    self.spread.on_ran(g, self.topo.llc(s.cpu));
                }
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
                let read = self.take_waking_inputs(w);
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
                    let (select_path, run) = self.state.select_path_and_run(w.pid);
                    if !select_path && !matches!(run, Run::Queued(_) | Run::Running(_)) {
                        self.state.claim(&self.topo, w.pid, w.target_cpu);
                    }
                    return;
                }
                if !self.topo.valid(w.cpu) {
                    return;
                }
                if matches!(self.state.run_of(w.pid), Run::Queued(_) | Run::Running(_)) {
                    let slot = self.park.slot_for(w.pid);
                    *self.park.record_mut(slot) = Record {
                        live: true,
                        pid: w.pid,
                        decided_ns: w.ts_ns,
                        no_placement: true,
                        ..Record::default()
                    };
                    return;
                }
                let ctx = match read {
                    Some(s) => {
                        self.with_waking_inputs += 1;
                        self.with_stack_flags += u64::from(s.wake_flags & wf::FROM_STACK != 0);
                        waking_ctx(w, &s)
                    }
                    None => Ctx::new(w.ts_ns, w.pid, w.waker_pid, w.cpu, w.target_cpu),
                };
                self.decide(ctx);
                // ttwu_pending on the old CPU until a migrate record says otherwise.
                self.state.claim(&self.topo, w.pid, w.target_cpu);
            }
            Event::Select(s) if s.at_waking() => {
                if let Some(slot) = self.waking_inputs.get_mut(s.cpu as usize) {
                    *slot = Some(**s);
                }
                let at = pinned_slot(s.cpu, s.pid);
                if let Some(slot) = self.last_pinned.as_mut().and_then(|v| v.get_mut(at)) {
                    if s.inputs.task_nr_cpus_allowed == Some(1) {
                        *slot = Some(**s);
                    } else if slot.is_some_and(|l| l.pid == s.pid) {
                        *slot = None;
                    }
                }
            }
            Event::Select(s) => {
                self.select_mode = true;
                if let Some(h) = self.select_ns.as_mut() {
                    h.saturating_record(s.duration_ns().max(1));
                }
                let ttwu =
                    s.wake_flags & wf::TTWU != 0 && s.wake_flags & (wf::FORK | wf::EXEC) == 0;
                if ttwu && self.topo.valid(s.cpu) && self.topo.valid(s.prev_cpu) {
                    self.state.set_select_path_and_release(&self.topo, s.pid);
                    self.decide(select_ctx(s));
                }
                // Only a wakeup leaves the task in flight towards its CPU (`ttwu_pending`
                // until `sched_wakeup`; `sched_wakeup_new` ends a fork's). `sched_exec`
                // places a running task and no wakeup follows, so a claim would never end.
                if s.wake_flags & wf::EXEC == 0 {
                    self.state.claim(&self.topo, s.pid, s.chosen_cpu);
                }
            }
            #[allow(
                unreachable_patterns,
                reason = "a kind that says nothing about placement needs no arm here"
            )]
            _ => {}
        }
    }

    /// The inputs read at this `sched_waking`, when the record before it on its CPU has them.
    /// Or, with no record before it, the CPU's last pinned record when this wakeup would have
    /// repeated it.
    fn take_waking_inputs(&mut self, w: &crate::event::Wake) -> Option<Select> {
        let slot = self.waking_inputs.get_mut(w.cpu as usize)?;
        let Some(s) = slot.take() else {
            return self.repeated_pinned(w);
        };
        (s.pid == w.pid && s.prev_cpu == w.target_cpu && s.entry_ts_ns <= w.ts_ns).then_some(s)
    }

    /// The record the probe left unsent for this `sched_waking` as a repeat of its CPU's last
    /// pinned record, restamped at the waking.
    fn repeated_pinned(&self, w: &crate::event::Wake) -> Option<Select> {
        let at = pinned_slot(w.cpu, w.pid);
        let last = self.last_pinned.as_ref()?.get(at)?.as_ref()?;
        let repeat = w.pid != w.waker_pid && last.pid == w.pid && last.prev_cpu == w.target_cpu;
        repeat.then_some(Select {
            ts_ns: w.ts_ns,
            entry_ts_ns: w.ts_ns,
            waker_pid: w.waker_pid,
            ..*last
        })
    }

    /// Runs every policy on `ctx` as of now and parks the answers under the wakee's pid.
    fn decide(&mut self, mut ctx: Ctx) -> u32 {
        self.scratch.reset();
        self.scratch.set_allowed(ctx.allowed.as_ref());
        ctx.rules = self.rules;
        if !ctx.rules.nr_idle_scan_kept {
            ctx.exact.w_nr_idle_scan = None;
            ctx.exact.p_nr_idle_scan = None;
        }
        let (t, st) = (&self.topo, &mut self.state);
        st.refresh_nr_idle_scan(t, ctx.ts_ns);
        // An exact read of the kernel's hint resynchronises the emulation.
        if let Some(h) = ctx.exact.w_has_idle_cores {
            st.set_hic(t.llc(ctx.w), h);
        }
        if let Some(h) = ctx.exact.p_has_idle_cores {
            st.set_hic(t.llc(ctx.p), h);
        }
        // The probe's read replaces the replayed counts (inherited at fork, unseen otherwise).
        let read = ctx.inputs.flips.map(|f| {
            let hz = self.hz.observe(ctx.ts_ns, f.jiffies);
            (f.waker_after_record(hz), f.wakee)
        });
        let (wf, pf) = st.record_wakee(ctx.waker_pid, ctx.w, ctx.pid, ctx.ts_ns, read);
        let llc_size = t.llc_size.get(t.llc(ctx.w) as usize).copied().unwrap_or(1);
        let wide = wake_wide(wf, pf, llc_size);
        ctx.recent_used_cpu = st.recent_used(ctx.pid);
        ctx.tgid = st.tgid(ctx.pid);
        ctx.task_util = st.task_util(ctx.pid);
        ctx.preferred_cpu = ctx
            .tgid
            .and_then(|g| st.occ.preferred_cpu(t, g, ctx.ts_ns))
            .filter(|&c| t.valid(c));
        ctx.compute_front(t, st, wide);
        let nr_running_w = ctx
            .exact
            .waker_nr_running
            .unwrap_or_else(|| st.nr_running(ctx.w));

        let slot = self.park.slot_for(ctx.pid);
        let (t, st) = (&self.topo, &self.state);
        let mut clear = None;
        let mut fired = 0u64;
        let pref_llc = ctx.preferred_cpu.map(|c| t.llc(c));
        let outs = self.park.outcomes_mut(slot);
        // The policies mostly agree: the last answer's CPU, idle bit and queue length.
        let mut last: Option<(u32, u32, bool, u32)> = None;
        for (i, (pol, out)) in self.policies.iter_mut().zip(outs.iter_mut()).enumerate() {
            if Some(i) == self.observed {
                continue;
            }
            ctx.begin();
            let mut d = pol.decide(&ctx, t, st, &mut self.scratch);
            ctx.enforce_allowed(t, &mut d);
            let (cpu, idle, queue) = match last {
                Some((asked, cpu, idle, queue)) if asked == d.cpu => (cpu, idle, queue),
                _ => {
                    let cpu = if t.valid(d.cpu) { d.cpu } else { ctx.p };
                    let (idle, queue) = (st.is_idle(cpu), st.nr_running(cpu));
                    last = Some((d.cpu, cpu, idle, queue));
                    (cpu, idle, queue)
                }
            };
            *out = Outcome {
                cpu,
                probes: d.probes,
                rule: d.rule,
                idle,
                exact: ctx.was_exact(),
                queue,
                behind_waker: d.behind_waker,
                in_pref: pref_llc.map(|l| t.llc(cpu) == l),
                idle_left: if idle {
                    0
                } else {
                    idle_in_llc(t, st.idle.words(), cpu, ctx.allowed.as_ref())
                },
                llc_moved: None,
                scan: d.scan,
            };
            if i == self.kernel.0 {
                clear = d.clear_hint;
            }
            if d.behind_waker && i < 64 {
                fired |= 1 << i;
            }
        }
        let krule = outs.get(self.kernel.0).map(|o| o.rule);
        // The kernel's model computed SIS_UTIL's scan for this context (memoised there).
        let model_scan = (self.policies[self.kernel.0].name() == policies::name::SIS_UTIL)
            .then(|| ctx.sis_util_scan())
            .flatten()
            .map(|s| super::scan_model::ModelScan::of(&s));
        self.park
            .snap_mut(slot)
            .copy_from_slice(&st.idle.words()[..t.nwords]);
        *self.park.record_mut(slot) = Record {
            live: true,
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
            kthread: ctx.per_cpu_kthread_waker(),
            mask_unknown: ctx.allowed.is_none()
                && ctx
                    .inputs
                    .task_nr_cpus_allowed
                    .is_some_and(|n| (n as usize) < self.nr_cpus),
            flips_read: ctx.inputs.flips.is_some(),
            pref_llc,
            at_waking: ctx.at_waking,
            flags_known: ctx.wake_flags.is_some(),
            model_scan,
        };
        if let Some(l) = clear {
            self.state.set_hic(l, false);
        }
        // SIS overwrites `p->recent_used_cpu` only once past its target/prev early returns;
        // which path the kernel took is our kernel-flavour shadow's best guess.
        const SHORTCUT_EXITS: [Rule; 3] = [
            Rule::stage(Stage::Target),
            Rule::stage(Stage::Prev),
            Rule::stage(Stage::CurrentCpu),
        ];
        if !krule.is_some_and(|r| SHORTCUT_EXITS.contains(&r)) {
            self.state.set_recent_used(ctx.pid, ctx.p);
        }
        if ctx.front.sync {
            self.sync
                .watch(&mut self.metrics, ctx.w, ctx.waker_pid, ctx.ts_ns, fired);
        }
        slot
    }

    /// Scores the parked answers for `pl` against the kernel's choice. `Some` exactly when
    /// the placement was scored (not excluded), with what a subset [`super::Tally`] needs.
    pub fn on_placement(&mut self, pl: &Placement) -> Option<Scored<'_>> {
        let ttwu = pl.select.is_none_or(|s| {
            s.wake_flags & wf::TTWU != 0 && s.wake_flags & (wf::FORK | wf::EXEC) == 0
        });
        if pl.new_task || !ttwu {
            self.excluded.fork_exec += 1;
            self.park.release(pl.pid);
            return None;
        }
        if pl.select.is_none() && self.select_mode {
            self.excluded.no_placement += 1;
            self.excluded.no_select += 1;
            self.park.release(pl.pid);
            return None;
        }
        let parked = self.park.parked(pl.pid).filter(|&s| {
            let r = self.park.record(s);
            r.pid == pl.pid && r.decided_ns >= pl.waking_ts_ns && r.decided_ns <= pl.wakeup_ts_ns
        });
        let slot = match parked {
            Some(s) if self.park.record(s).no_placement => {
                self.excluded.no_placement += 1;
                self.excluded.runnable_at_waking += 1;
                self.park.release(pl.pid);
                return None;
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
                    self.park.release(pl.pid);
                    return None;
                }
                self.late += 1;
                self.decide(ctx)
            }
        };
        let kernel = pl.select.map_or(pl.chosen_cpu, |s| s.chosen_cpu);
        let rec = *self.park.record(slot);
        if !self.topo.valid(kernel) || !self.topo.valid(rec.w) || !self.topo.valid(rec.p) {
            self.excluded.invalid_cpu += 1;
            self.park.release(pl.pid);
            return None;
        }
        self.evaluated += 1;
        let kernel_idle = CpuSet::words_contain(self.park.snap(slot), kernel);
        let kernel_probes = self.park.outcomes(slot)[self.kernel.0].probes;
        // The kernel's scan as the debug-info probes counted it, else the model's.
        let kernel_scan = match pl.select.and_then(|s| s.scan) {
            Some(k) => k.ran().then_some(u32::from(k.cpus)),
            None => self.park.outcomes(slot)[self.kernel.0].scan,
        };
        if let Some(i) = self.observed {
            // The baseline is the kernel's choice. Queue length at decision time when the
            // select record named the CPU then; tracepoint-only: as of now (sched_wakeup),
            // minus this wakee.
            let queue = match rec.kernel_queue {
                Some((c, q)) if c == kernel => q,
                _ => self.state.nr_running(kernel).saturating_sub(1),
            };
            let idle_left = if kernel_idle {
                0
            } else {
                idle_in_llc(&self.topo, self.park.snap(slot), kernel, None)
            };
            self.park.outcomes_mut(slot)[i] = Outcome {
                cpu: kernel,
                probes: kernel_probes,
                rule: Rule::stage(Stage::Observed),
                idle: kernel_idle,
                exact: true,
                queue,
                behind_waker: false,
                in_pref: rec.pref_llc.map(|l| self.topo.llc(kernel) == l),
                idle_left,
                llc_moved: None,
                scan: kernel_scan,
            };
        }
        self.llc_buf.clear();
        let t = &self.topo;
        let llcs = self.park.outcomes(slot).iter().map(|o| t.llc(o.cpu));
        self.llc_buf.extend(llcs);
        self.note_llc_moves(pl.pid, slot);
        let outs = self.park.outcomes(slot);
        // Levels per distinct chosen CPU (policies mostly agree): (cpu, vs waker, vs prev).
        let mut levels: [(u32, Option<Level>, Option<Level>); 4] = [(u32::MAX, None, None); 4];
        let mut nlev = 0;
        let per_policy = self.counts.iter_mut().zip(self.last_levels.iter_mut());
        for (o, (counts, last_levels)) in outs.iter().zip(per_policy) {
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
            counts.record(o, kernel, rec.p, lw, lp);
            *last_levels = (lw, lp);
        }
        let fo = outs[self.kernel.0];
        let verdict = Verdict::of(
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
                kthread: rec.kthread,
                mask_unknown: rec.mask_unknown,
                flips_read: rec.flips_read,
                at_waking: rec.at_waking,
                flags_known: rec.flags_known,
            },
        );
        self.fidelity.add(&verdict);
        let scan = rec.model_scan.zip(pl.select.and_then(|s| s.scan));
        if let Some((m, k)) = scan {
            self.scan_model.add(m, k);
        }
        // The slot goes back to the pool, but its outcomes stay as they are until the next
        // decision, which cannot happen while the returned borrow lives.
        self.park.release(pl.pid);
        let tgid = self.state.tgid(pl.pid);
        if let Some(g) = tgid {
            self.spread
                .on_placed(g, pl.pid, self.llc_buf.iter().copied());
        }
        Some(Scored {
            pid: pl.pid,
            tgid,
            llc_of: &self.topo.llc_of,
            kernel,
            waker: rec.w,
            prev: rec.p,
            outcomes: self.park.outcomes(slot),
            levels: &self.last_levels,
            verdict,
            scan,
        })
    }

    /// Sets each outcome's `llc_moved` from the policy's LLC at `pid`'s previous scored wakeup
    /// (`llc_buf` holds the outcomes' LLCs).
    fn note_llc_moves(&mut self, pid: u32, slot: u32) {
        let np = self.policies.len();
        let last = self.last_llc.get_or_default(pid);
        if last.len() != np {
            last.clear();
            last.resize(np, u16::MAX);
        }
        let outs = self.park.outcomes_mut(slot).iter_mut();
        for ((o, l), &llc) in outs.zip(last.iter_mut()).zip(&self.llc_buf) {
            // LLC numbers are dense, below the CPU count; u16 halves the per-task memory.
            let now = u16::try_from(llc).unwrap_or(u16::MAX - 1);
            o.llc_moved = (*l != u16::MAX).then_some(*l != now);
            *l = now;
        }
    }

    /// Per-policy metrics, registry order (for [`super::Tally`] sizing and the report).
    pub fn policy_count(&self) -> usize {
        self.policies.len()
    }

    /// Each policy's figures so far, registry order.
    pub fn policy_metrics(&self) -> Vec<PolicyMetrics> {
        let mut m = self.metrics.clone();
        for (m, c) in m.iter_mut().zip(&self.counts) {
            c.fold_into(m);
        }
        m
    }
}

/// Idle CPUs the wakee may use in `cpu`'s LLC, from an idle map's words (at most `u16::MAX`).
fn idle_in_llc(t: &ShadowTopo, idle: &[u64], cpu: u32, allowed: Option<&CpuSet>) -> u16 {
    let mask = t.llc_mask(t.llc(cpu)).words();
    let allowed = allowed.map(CpuSet::words);
    let n: u32 = mask
        .iter()
        .zip(idle)
        .enumerate()
        .map(|(i, (m, x))| {
            let a = allowed.map_or(!0, |a| a.get(i).copied().unwrap_or(0));
            (m & x & a).count_ones()
        })
        .sum();
    n.min(u32::from(u16::MAX)) as u16
}

/// Index of `pid`'s slot of `cpu` in [`ShadowEval::last_pinned`], as the probes pick it.
fn pinned_slot(cpu: u32, pid: u32) -> usize {
    cpu as usize * PINNED_SLOTS + (pid as usize & (PINNED_SLOTS - 1))
}

fn select_ctx(s: &Select) -> Ctx {
    let mut c = Ctx::new(s.entry_ts_ns, s.pid, s.waker_pid, s.cpu, s.prev_cpu);
    c.wake_flags = Some(s.wake_flags);
    c.has_select = true;
    c.kernel_cpu = Some(s.chosen_cpu);
    read_inputs(&mut c, s);
    c
}

/// A tracepoint-only decision at `sched_waking` with the inputs its probe read. Its wake flags
/// are `WF_TTWU` plus the `WF_SYNC` the probe read from the waker's stack, where it did
/// ([`wf::FROM_STACK`]); otherwise unknown (WF_SYNC treated as not sync).
fn waking_ctx(w: &crate::event::Wake, s: &Select) -> Ctx {
    let mut c = Ctx::new(w.ts_ns, w.pid, w.waker_pid, w.cpu, w.target_cpu);
    c.at_waking = true;
    if s.wake_flags & wf::FROM_STACK != 0 {
        c.wake_flags = Some(wf::TTWU | (s.wake_flags & wf::SYNC));
    }
    read_inputs(&mut c, s);
    c
}

/// The kernel inputs a select record carries.
fn read_inputs(c: &mut Ctx, s: &Select) {
    c.exact = Exact {
        waker_nr_running: s.waker_nr_running,
        w_nr_idle_scan: s.nr_idle_scan,
        w_has_idle_cores: s.has_idle_cores,
        p_nr_idle_scan: s.prev_nr_idle_scan,
        p_has_idle_cores: s.prev_has_idle_cores,
    };
    c.inputs = s.inputs;
    c.allowed = s.inputs.allowed.map(|words| {
        let mut m = CpuSet::with_bound(256);
        m.words_mut().copy_from_slice(&words);
        m
    });
}
