//! Reconstruction of the scheduler state every policy reads, from the event stream alone
//! (`sched_switch`, `sched_wakeup[_new]`, `sched_migrate_task`, the waking and select records).
//!
//! What is modelled, and how:
//! - per CPU: the current task (`sched_switch.next_pid`, pid 0 = idle), the number of other
//!   runnable tasks queued there, and the number of in-flight wakeups that claimed it. A CPU is
//!   idle when it runs the idle task, nothing is queued and nothing claimed it — the kernel's
//!   `idle_rq()` = `curr == idle && nr_running == 0 && !ttwu_pending`; the claim models
//!   `ttwu_pending`, held from the decision (select exit, or `sched_waking` without function
//!   probes or for a task never seen reaching the select) to that task's `sched_wakeup`, its
//!   next switch-in, or [`CLAIM_MAX_NS`], whichever comes first. A claim that outlives its
//!   wakeup marks an idle CPU busy for every later decision; on the VM recordings such leaks
//!   (exec placements, tasks exiting, wakeups before the capture started) made most idle
//!   waker CPUs look busy and cost 40 points of fidelity;
//! - per task: runnable or sleeping, and on which CPU, plus `recent_used_cpu` (the `prev_cpu`
//!   of its previous placement: SIS sets `p->recent_used_cpu = prev` on every pass) and the
//!   `record_wakee()` state (`wakee_flips`, `last_wakee`, decay stamp) for `wake_wide()`;
//! - per LLC: the `has_idle_cores` hint, set when a CPU switches to idle while all its SMT
//!   siblings are idle (`__update_idle_core`), cleared only by a failed idle-core scan of the
//!   policy that stands for the running kernel (closed loop with the kernel, as `select_idle_cpu`
//!   clears it in kernel/sched/fair.c);
//! - per LLC: SIS_UTIL's `nr_idle_scan`, recomputed with the kernel's formula
//!   (`update_idle_cpu_scan`) every [`NR_IDLE_SCAN_PERIOD_NS`] from per-CPU utilisation estimates:
//!   the busy fraction of each CPU with a PELT-like exponential decay of [`UTIL_HALF_LIFE_NS`]
//!   (util_est is not modelled);
//!
//! - per task: its process (from the stream's task facts), a PELT-like utilisation (same
//!   half-life, running = 1024) and when it last blocked; per process: its cache occupancy
//!   ([`super::occupancy`]).
//!
//! State only one policy reads (SIS_PROP's `avg_idle`) lives in that policy, fed by
//! `Policy::on_event`.
//!
//! Kernel inputs read exactly by the probes (the select record) override these per event; the
//! reconstruction is the fallback. Events naming CPUs outside the topology are ignored.
use std::collections::VecDeque;

use super::{
    occupancy::Occupancy,
    topo::{NONE, ShadowTopo},
};
use crate::topology::CpuSet;

pub use super::budget::{
    HZ, JIFFY_NS, LLC_IMBALANCE_PCT, MIGRATION_COST_NS, NR_IDLE_SCAN_PERIOD_NS,
    SCHED_CAPACITY_SCALE, UTIL_HALF_LIFE_NS, jiffies, sis_prop_budget, sis_util_nr_idle_scan,
};
pub use crate::horizons::CLAIM_MAX_NS;

/// Moves a task's utilisation towards 1024 for the time it ran (`ran`), towards 0 otherwise.
fn decay_task_util(t: &mut Task, ts: u64, ran: bool) {
    if t.util_ts != 0 && ts > t.util_ts {
        let d = (-((ts - t.util_ts) as f64) / UTIL_HALF_LIFE_NS).exp2() as f32;
        let target = if ran {
            SCHED_CAPACITY_SCALE as f32
        } else {
            0.0
        };
        t.util = target + (t.util - target) * d;
    }
    t.util_ts = ts;
}

/// A task's run state with stale queue entries (older queue epoch) read as unknown.
fn live_run(t: &Task, cpus: &[Cpu]) -> Run {
    match t.run {
        Run::Queued(x) if cpus.get(x as usize).map(|c| c.q_epoch) != Some(t.q_epoch) => {
            Run::Unknown
        }
        r => r,
    }
}

use crate::pidslab::PidSlab;

/// Where a task is, as far as the stream told us.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Run {
    /// Not seen since the capture started.
    #[default]
    Unknown,
    Sleeping,
    /// Runnable, waiting on this CPU's queue.
    Queued(u32),
    /// Currently running on this CPU.
    Running(u32),
}

/// `record_wakee()` state of one waker.
#[derive(Clone, Copy, Debug, Default)]
pub struct Flips {
    pub flips: u32,
    pub last_wakee: u32,
    pub decay_jiffies: u64,
}

#[derive(Clone, Copy, Debug)]
struct Task {
    run: Run,
    /// The CPU's queue epoch when the task was queued there (see [`State::on_switch`]).
    q_epoch: u32,
    recent_used: u32,
    claim: u32,
    claim_ns: u64,
    flips: Flips,
    /// A wakeup of this task reached `select_task_rq_fair` (so it is not pinned).
    select_path: bool,
    /// Its process (0: unknown).
    tgid: u32,
    /// PELT-like utilisation (0..1024) and when it was last decayed.
    util: f32,
    util_ts: u64,
    /// When it last blocked (0: not seen blocking).
    blocked_ns: u64,
}

impl Default for Task {
    fn default() -> Self {
        Self {
            run: Run::Unknown,
            q_epoch: 0,
            recent_used: NONE,
            claim: NONE,
            claim_ns: 0,
            flips: Flips::default(),
            select_path: false,
            tgid: 0,
            util: 0.0,
            util_ts: 0,
            blocked_ns: 0,
        }
    }
}

/// What the state keeps per CPU, in one record: every event updates several of these fields
/// of the same CPU, and the idle test reads three of them.
#[derive(Clone, Copy, Debug, Default)]
struct Cpu {
    /// The running task's pid (0: the idle task).
    curr: u32,
    /// Other runnable tasks queued there.
    queued: u32,
    /// In-flight wakeups that claimed it (`ttwu_pending`).
    claims: u32,
    /// Bumped when the CPU switches to idle: its queue is empty then, whatever we counted, so
    /// tasks still marked queued there from an earlier epoch (lost events) are stale.
    q_epoch: u32,
    /// Utilisation estimate (0..1024) and when it was last decayed.
    util: f32,
    util_ts: u64,
    /// When the running task was switched in.
    since: u64,
}

impl Cpu {
    /// `idle_rq()`: the idle task runs, nothing is queued and nothing claimed the CPU.
    #[inline]
    const fn idle(&self) -> bool {
        self.curr | self.queued | self.claims == 0
    }
}

/// The reconstructed scheduler state.
#[derive(Clone, Debug)]
pub struct State {
    /// Idle CPUs (the SIS predicate), one bit per CPU number.
    pub idle: CpuSet,
    cpus: Vec<Cpu>,
    /// (time, pid) of every claim in the order made, for [`State::expire_claims`].
    claim_log: VecDeque<(u64, u32)>,
    tasks: PidSlab<Task>,
    /// `record_wakee` state of each CPU's idle task: IRQ-context wakeups are charged to
    /// whatever `current` is, and the idle tasks all have pid 0.
    idle_flips: Vec<Flips>,
    /// Emulated `sd_llc_shared->has_idle_cores`, per LLC.
    pub hic: Vec<bool>,
    /// Ground truth kept incrementally: whether each core is fully idle, and how many fully
    /// idle cores each LLC has (so "is there an idle core" costs nothing).
    core_idle_now: Vec<bool>,
    idle_cores: Vec<u32>,
    /// Emulated `sd_llc_shared->nr_idle_scan`, per LLC.
    pub nr_idle_scan: Vec<u32>,
    scan_refreshed_ns: Option<u64>,
    pub now_ns: u64,
    /// Each process's cache occupancy (the cache-aware proposals' input).
    pub occ: Occupancy,
}

impl State {
    /// Tasks dropped over the budget (see [`crate::pidmap`]).
    pub fn evicted(&self) -> u64 {
        self.tasks.evicted() + self.occ.evicted() + self.occ.untracked
    }

    pub fn new(t: &ShadowTopo) -> Self {
        let n = t.bound;
        let idle = t.online.clone();
        Self {
            idle,
            cpus: vec![Cpu::default(); n],
            claim_log: VecDeque::new(),
            tasks: PidSlab::default(),
            idle_flips: vec![Flips::default(); n],
            hic: vec![t.smt; t.n_llcs()],
            core_idle_now: vec![true; t.n_cores()],
            idle_cores: (0..t.n_llcs() as u32)
                .map(|l| t.llc_cores(l).len() as u32)
                .collect(),
            nr_idle_scan: t.llc_size.clone(),
            scan_refreshed_ns: None,
            now_ns: 0,
            occ: Occupancy::new(t),
        }
    }

    /// Moves the state's clock (claims are stamped with it).
    pub fn advance(&mut self, ts_ns: u64) {
        self.now_ns = self.now_ns.max(ts_ns);
    }

    #[inline]
    pub fn is_idle(&self, cpu: u32) -> bool {
        self.idle.contains(cpu)
    }

    /// `rq->nr_running`: queued tasks plus the running one.
    #[inline]
    pub fn nr_running(&self, cpu: u32) -> u32 {
        self.cpus
            .get(cpu as usize)
            .map_or(0, |c| c.queued + u32::from(c.curr != 0))
    }

    /// Whether every SMT sibling of `cpu` (itself included) is idle.
    #[inline]
    pub fn core_idle(&self, t: &ShadowTopo, cpu: u32) -> bool {
        t.siblings(cpu).iter().all(|&s| self.is_idle(s))
    }

    pub fn run_of(&self, pid: u32) -> Run {
        self.tasks
            .get(pid)
            .map_or(Run::Unknown, |t| live_run(t, &self.cpus))
    }

    /// `p->recent_used_cpu` before this placement updates it.
    pub fn recent_used(&self, pid: u32) -> u32 {
        self.tasks.get(pid).map_or(NONE, |t| t.recent_used)
    }

    /// Whether a wakeup of `pid` was seen going through `select_task_rq_fair`.
    pub fn takes_select_path(&self, pid: u32) -> bool {
        self.tasks.get(pid).is_some_and(|t| t.select_path)
    }

    pub fn set_select_path(&mut self, pid: u32) {
        self.tasks.get_or_default(pid).select_path = true;
    }

    pub fn set_recent_used(&mut self, pid: u32, cpu: u32) {
        self.tasks.get_or_default(pid).recent_used = cpu;
    }

    fn refresh(&mut self, t: &ShadowTopo, cpu: u32) {
        let i = cpu as usize;
        let Some(c) = self.cpus.get(i) else {
            return;
        };
        let idle = c.idle();
        if !t.valid(cpu) || self.idle.contains(cpu) == idle {
            return;
        }
        self.idle.set(cpu, idle);
        let k = t.core_of[i] as usize;
        let now = idle && t.siblings(cpu).iter().all(|&s| self.idle.contains(s));
        if let Some(was) = self.core_idle_now.get_mut(k)
            && *was != now
        {
            *was = now;
            if let Some(n) = self.idle_cores.get_mut(t.llc_of[i] as usize) {
                *n = if now { *n + 1 } else { n.saturating_sub(1) };
            }
        }
    }

    /// Number of fully idle cores in LLC `llc` (ground truth from the idle map).
    #[inline]
    pub fn idle_cores(&self, llc: u32) -> u32 {
        self.idle_cores.get(llc as usize).copied().unwrap_or(0)
    }

    /// Marks `cpu` busy for everybody else until `pid`'s `sched_wakeup` (`ttwu_pending`).
    /// A second claim by the same task replaces the first.
    pub fn claim(&mut self, t: &ShadowTopo, pid: u32, cpu: u32) {
        if !t.valid(cpu) {
            self.release(t, pid);
            return;
        }
        // One lookup for the release of the old claim and the new one; each idle bit is
        // refreshed once its counter is final (as in `on_wakeup`), so a claim renewed on the
        // same CPU does not flip it twice.
        let now = self.now_ns;
        let task = self.tasks.get_or_default(pid);
        let old = std::mem::replace(&mut task.claim, cpu);
        task.claim_ns = now;
        if old != NONE
            && let Some(x) = self.cpus.get_mut(old as usize)
        {
            x.claims = x.claims.saturating_sub(1);
        }
        self.cpus[cpu as usize].claims += 1;
        if self.claim_log.len() == self.claim_log.capacity() {
            self.compact_claim_log();
        }
        self.claim_log.push_back((now, pid));
        if old != NONE && old != cpu {
            self.refresh(t, old);
        }
        self.refresh(t, cpu);
    }

    /// Releases claims older than [`CLAIM_MAX_NS`]: their `sched_wakeup` was lost (or came
    /// before the capture started), and a claim that never ends would keep a CPU busy for the
    /// rest of the stream. Cheap enough to call on every event: claims are logged in the order
    /// they were made, so only the expired head of that log is visited, and the common case
    /// (nothing expired) is one comparison inlined into the per-event path.
    #[inline]
    pub fn expire_claims(&mut self, t: &ShadowTopo, now: u64) {
        if self
            .claim_log
            .front()
            .is_some_and(|&(ts, _)| now.saturating_sub(ts) > CLAIM_MAX_NS)
        {
            self.expire_claims_slow(t, now);
        }
    }

    #[inline(never)]
    fn expire_claims_slow(&mut self, t: &ShadowTopo, now: u64) {
        while let Some(&(ts, pid)) = self.claim_log.front() {
            if now.saturating_sub(ts) <= CLAIM_MAX_NS {
                break;
            }
            self.claim_log.pop_front();
            // Only the claim made at that time; a newer claim by the same task stays.
            if self
                .tasks
                .get(pid)
                .is_some_and(|x| x.claim != NONE && x.claim_ns == ts)
            {
                self.release(t, pid);
            }
        }
    }

    /// Drops the entries of claims that have ended (most end at their `sched_wakeup`, within
    /// microseconds), keeping the order of the rest, before the log would grow. Expiry visits
    /// only the entries of live claims, so which claims it releases, and when, is unchanged;
    /// the log then holds about the live claims (at most one per task) instead of every claim
    /// of the last [`CLAIM_MAX_NS`], which a busy machine makes by the hundred thousand.
    #[cold]
    fn compact_claim_log(&mut self) {
        let tasks = &self.tasks;
        self.claim_log.retain(|&(ts, pid)| {
            tasks
                .get(pid)
                .is_some_and(|x| x.claim != NONE && x.claim_ns == ts)
        });
        // Half full at most, so that the next compaction is as many claims away as this one
        // visited: a constant cost per claim.
        if self.claim_log.len() > self.claim_log.capacity() / 2 {
            self.claim_log.reserve(self.claim_log.len());
        }
    }

    /// Drops `pid`'s claim (its own decision must not see its own claim).
    pub fn release(&mut self, t: &ShadowTopo, pid: u32) {
        let Some(task) = self.tasks.get_mut(pid) else {
            return;
        };
        let c = std::mem::replace(&mut task.claim, NONE);
        self.drop_claim(t, c);
    }

    /// The counter side of a release: claim `c` (taken from its task, or `NONE`) ends.
    #[inline]
    fn drop_claim(&mut self, t: &ShadowTopo, c: u32) {
        if c != NONE
            && let Some(x) = self.cpus.get_mut(c as usize)
        {
            x.claims = x.claims.saturating_sub(1);
            self.refresh(t, c);
        }
    }

    /// `set_select_path` then `release`, with one lookup.
    pub fn set_select_path_and_release(&mut self, t: &ShadowTopo, pid: u32) {
        let task = self.tasks.get_or_default(pid);
        task.select_path = true;
        let c = std::mem::replace(&mut task.claim, NONE);
        self.drop_claim(t, c);
    }

    /// `(takes_select_path(pid), run_of(pid))` with one lookup.
    pub fn select_path_and_run(&self, pid: u32) -> (bool, Run) {
        self.tasks.get(pid).map_or((false, Run::Unknown), |t| {
            (t.select_path, live_run(t, &self.cpus))
        })
    }

    /// Moves an in-flight claim (tracepoint-only mode learns the destination from
    /// `sched_migrate_task`, which ttwu emits before enqueueing).
    fn move_claim(&mut self, t: &ShadowTopo, pid: u32, dest: u32) {
        let c = self.tasks.get(pid).map_or(NONE, |x| x.claim);
        if c != NONE && c != dest {
            self.claim(t, pid, dest);
        }
    }

    /// Applies `record_wakee()` for `waker` (on `waker_cpu`) waking `wakee` and returns
    /// (waker flips, wakee flips) as `wake_wide()` then reads them. Once per second (HZ
    /// jiffies) the waker's count is halved; each change of wakee counts one flip. With
    /// `read` (the probe's counts, the waker's already past `record_wakee()`), those replace
    /// the replayed ones, which they resynchronise for the tracepoint-only decisions after.
    pub fn record_wakee(
        &mut self,
        waker: u32,
        waker_cpu: u32,
        wakee: u32,
        ts_ns: u64,
        read: Option<(u32, u32)>,
    ) -> (u32, u32) {
        let j = jiffies(ts_ns);
        let f = if waker == 0 {
            self.idle_flips.get_mut(waker_cpu as usize)
        } else {
            Some(&mut self.tasks.get_or_default(waker).flips)
        };
        let wf = match f {
            Some(f) => {
                if j > f.decay_jiffies + HZ {
                    f.flips >>= 1;
                    f.decay_jiffies = j;
                }
                if f.last_wakee != wakee {
                    f.last_wakee = wakee;
                    f.flips = f.flips.saturating_add(1);
                }
                if let Some((w, _)) = read {
                    f.flips = w;
                }
                f.flips
            }
            None => read.map_or(0, |(w, _)| w),
        };
        match read {
            Some((_, p)) => {
                if wakee != 0 {
                    self.tasks.get_or_default(wakee).flips.flips = p;
                }
                (wf, p)
            }
            None => (wf, self.flips_of(wakee)),
        }
    }

    /// `pid`'s process, when a task fact said it.
    pub fn tgid(&self, pid: u32) -> Option<u32> {
        self.tasks.get(pid).map(|t| t.tgid).filter(|&g| g != 0)
    }

    /// Records `pid`'s process (from the stream's task facts).
    pub fn set_tgid(&mut self, pid: u32, tgid: u32) {
        if pid != 0 && tgid != 0 {
            self.tasks.get_or_default(pid).tgid = tgid;
        }
    }

    /// `task_util(p)`: the task's utilisation (0..1024) as of its last switch, PELT-like.
    pub fn task_util(&self, pid: u32) -> f32 {
        self.tasks.get(pid).map_or(0.0, |t| t.util)
    }

    /// When `pid` last blocked, if it was seen blocking.
    pub fn blocked_at(&self, pid: u32) -> Option<u64> {
        self.tasks
            .get(pid)
            .map(|t| t.blocked_ns)
            .filter(|&b| b != 0)
    }

    /// The summed utilisation of LLC `llc` and its capacity (`sd_llc_shared->util_avg`,
    /// `sd_llc_size x 1024`), from the per-CPU estimates.
    pub fn llc_util(&self, t: &ShadowTopo, llc: u32) -> (u64, u64) {
        let cpus = t.llc_cpus(llc);
        let util: f32 = cpus.iter().map(|&c| self.util(c)).sum();
        (util as u64, cpus.len() as u64 * SCHED_CAPACITY_SCALE)
    }

    fn flips_of(&self, pid: u32) -> u32 {
        if pid == 0 {
            return 0;
        }
        self.tasks.get(pid).map_or(0, |t| t.flips.flips)
    }

    fn decay_util(c: &mut Cpu, ts: u64) {
        let last = c.util_ts;
        if ts <= last {
            return;
        }
        let d = (-((ts - last) as f64) / UTIL_HALF_LIFE_NS).exp2() as f32;
        let target = if c.curr != 0 {
            SCHED_CAPACITY_SCALE as f32
        } else {
            0.0
        };
        c.util = target + (c.util - target) * d;
        c.util_ts = ts;
    }

    /// Utilisation estimate of `cpu` (0..1024) as of the last update.
    pub fn util(&self, cpu: u32) -> f32 {
        self.cpus.get(cpu as usize).map_or(0.0, |c| c.util)
    }

    /// Recomputes every LLC's emulated `nr_idle_scan` if [`NR_IDLE_SCAN_PERIOD_NS`] passed.
    pub fn refresh_nr_idle_scan(&mut self, t: &ShadowTopo, now: u64) {
        if self
            .scan_refreshed_ns
            .is_some_and(|last| now < last + NR_IDLE_SCAN_PERIOD_NS)
        {
            return;
        }
        self.scan_refreshed_ns = Some(now);
        for l in 0..t.n_llcs() {
            let mut sum = 0.0f64;
            for &c in t.llc_cpus(l as u32) {
                if let Some(x) = self.cpus.get_mut(c as usize) {
                    Self::decay_util(x, now);
                    sum += f64::from(x.util);
                }
            }
            self.nr_idle_scan[l] =
                sis_util_nr_idle_scan(t.llc_size[l], sum as u64, LLC_IMBALANCE_PCT);
        }
    }

    /// Adjusts the emulated idle-core hint (a failed core scan, or an exact kernel read).
    pub fn set_hic(&mut self, llc: u32, v: bool) {
        if let Some(h) = self.hic.get_mut(llc as usize) {
            *h = v;
        }
    }

    pub fn on_switch(&mut self, t: &ShadowTopo, s: &crate::event::Switch) {
        self.now_ns = self.now_ns.max(s.ts_ns);
        let c = s.cpu;
        if !t.valid(c) {
            return;
        }
        let ci = c as usize;
        Self::decay_util(&mut self.cpus[ci], s.ts_ns);
        if s.next_pid != 0 {
            // Running means enqueued: any wakeup claim it still holds is over (its
            // `sched_wakeup` was lost or reordered after this switch).
            self.release(t, s.next_pid);
        }
        if s.prev_pid != 0 {
            let ran = s.ts_ns.saturating_sub(self.cpus[ci].since);
            let task = self.tasks.get_or_default(s.prev_pid);
            decay_task_util(task, s.ts_ns, true);
            if s.prev_state != 0 {
                task.blocked_ns = s.ts_ns;
            }
            let tgid = if task.tgid == 0 {
                s.prev_pid
            } else {
                task.tgid
            };
            if self.cpus[ci].since != 0 {
                self.occ.account(c, tgid, ran, s.ts_ns);
            }
            let task = self.tasks.get_or_default(s.prev_pid);
            let was = live_run(task, &self.cpus);
            if s.prev_state == 0 {
                if !matches!(was, Run::Queued(_)) {
                    let cpu = &mut self.cpus[ci];
                    task.run = Run::Queued(c);
                    task.q_epoch = cpu.q_epoch;
                    cpu.queued += 1;
                }
            } else {
                task.run = Run::Sleeping;
                if let Run::Queued(x) = was
                    && let Some(q) = self.cpus.get_mut(x as usize)
                {
                    q.queued = q.queued.saturating_sub(1);
                }
            }
        }
        self.cpus[ci].since = s.ts_ns;
        if s.next_pid != 0 {
            let task = self.tasks.get_or_default(s.next_pid);
            decay_task_util(task, s.ts_ns, false);
            let was = live_run(task, &self.cpus);
            task.run = Run::Running(c);
            if let Run::Queued(x) = was
                && let Some(q) = self.cpus.get_mut(x as usize)
            {
                q.queued = q.queued.saturating_sub(1);
                if x != c {
                    self.refresh(t, x);
                }
            }
        } else {
            // About to idle: the queue is empty (the idle task only runs then), so anything
            // still counted is a lost event.
            let cpu = &mut self.cpus[ci];
            cpu.queued = 0;
            cpu.q_epoch = cpu.q_epoch.wrapping_add(1);
        }
        self.cpus[ci].curr = s.next_pid;
        self.refresh(t, c);
        if s.next_pid == 0 && t.smt && t.siblings(c).iter().all(|&x| x == c || self.is_idle(x)) {
            self.set_hic(t.llc(c), true);
        }
    }

    /// `sched_wakeup` / `sched_wakeup_new`: the task is enqueued on `target_cpu`.
    pub fn on_wakeup(&mut self, t: &ShadowTopo, w: &crate::event::Wake) {
        self.now_ns = self.now_ns.max(w.ts_ns);
        let c = w.target_cpu;
        if !t.valid(c) {
            self.release(t, w.pid);
            return;
        }
        let ci = c as usize;
        // One lookup: the task's claim and run state change together.
        let task = self.tasks.get_or_default(w.pid);
        let claim = std::mem::replace(&mut task.claim, NONE);
        let epoch = self.cpus[ci].q_epoch;
        let from = match live_run(task, &self.cpus) {
            Run::Queued(x) if x != c => {
                task.run = Run::Queued(c);
                task.q_epoch = epoch;
                Some(x)
            }
            Run::Queued(_) | Run::Running(_) => None,
            Run::Unknown | Run::Sleeping => {
                task.run = Run::Queued(c);
                task.q_epoch = epoch;
                Some(NONE)
            }
        };
        if claim != NONE
            && let Some(x) = self.cpus.get_mut(claim as usize)
        {
            x.claims = x.claims.saturating_sub(1);
        }
        if let Some(x) = from {
            if let Some(q) = self.cpus.get_mut(x as usize) {
                q.queued = q.queued.saturating_sub(1);
            }
            self.cpus[ci].queued += 1;
        }
        // The idle bits of the CPUs whose counters changed, each once the counters are final:
        // the same bits as refreshing after each change (nothing reads them in between, and the
        // idle-core counts follow the final bits whatever the order), but a claim released and
        // an enqueue on the same CPU, the common case, no longer flip its bit twice.
        if claim != NONE && claim != c && Some(claim) != from {
            self.refresh(t, claim);
        }
        if let Some(x) = from
            && x != NONE
        {
            self.refresh(t, x);
        }
        self.refresh(t, c);
    }

    pub fn on_migrate(&mut self, t: &ShadowTopo, m: &crate::event::Migrate) {
        self.now_ns = self.now_ns.max(m.ts_ns);
        let d = m.dest_cpu;
        if !t.valid(d) {
            return;
        }
        let task = self.tasks.get_or_default(m.pid);
        if let Run::Queued(x) = live_run(task, &self.cpus)
            && x != d
        {
            task.run = Run::Queued(d);
            task.q_epoch = self.cpus[d as usize].q_epoch;
            if let Some(q) = self.cpus.get_mut(x as usize) {
                q.queued = q.queued.saturating_sub(1);
            }
            self.cpus[d as usize].queued += 1;
            self.refresh(t, x);
            self.refresh(t, d);
        }
        self.move_claim(t, m.pid, d);
    }
}

#[cfg(test)]
impl State {
    /// Test set-up: `pid` switches in on `cpu` at `ts_ns`, from idle.
    pub(crate) fn run_on(&mut self, t: &ShadowTopo, cpu: u32, pid: u32, ts_ns: u64) {
        let s = crate::event::Switch {
            ts_ns,
            cpu,
            prev_pid: 0,
            next_pid: pid,
            prev_state: 0,
            prev_prio: 120,
            next_prio: 120,
        };
        self.on_switch(t, &s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{event::Wake, topology::fixture};

    /// Claims that end at their wakeup leave the log, so a long run of them keeps it at about
    /// the live claims; a claim whose wakeup never comes is still released at
    /// [`CLAIM_MAX_NS`].
    #[test]
    fn ended_claims_leave_the_log_and_a_lost_wakeup_still_expires() {
        let topo = fixture::named_topology("zen3-nps4").expect("fixture");
        let t = ShadowTopo::new(&topo, crate::shadow::topo::NODE_RECLAIM_DISTANCE);
        let mut s = State::new(&t);
        s.advance(1);
        s.claim(&t, 7, 3);
        for i in 0..100_000u32 {
            let ts_ns = 10 + u64::from(i);
            let (pid, cpu) = (100 + i % 50, 16 + i % 16);
            s.advance(ts_ns);
            s.expire_claims(&t, ts_ns);
            s.claim(&t, pid, cpu);
            let w = Wake {
                ts_ns,
                cpu: 0,
                pid,
                target_cpu: cpu,
                waker_pid: 1,
                prio: 120,
            };
            s.on_wakeup(&t, &w);
        }
        assert!(s.claim_log.capacity() <= 64, "{}", s.claim_log.capacity());
        assert_eq!(s.cpus[3].claims, 1, "pid 7's claim is live");
        let late = 2 + CLAIM_MAX_NS;
        s.advance(late);
        s.expire_claims(&t, late);
        assert_eq!(s.cpus[3].claims, 0, "and expires");
    }
}
