//! The kernel's constants and scan-budget formulas the state reconstruction and the policies share:
//! SIS_UTIL's `nr_idle_scan` from LLC utilisation (`update_idle_cpu_scan`), SIS_PROP's scan depth
//! (`select_idle_cpu`, kernel/sched/fair.c), jiffies. (Re-exported by `shadow::state`, where they
//! were first.)

/// `CONFIG_HZ` assumed for jiffies-based rules (`record_wakee` decay, SIS_PROP ageing): the
/// recording header does not carry it; 250 is the distribution default on x86-64.
pub const HZ: u64 = 250;
pub const JIFFY_NS: u64 = 1_000_000_000 / HZ;
/// PELT's half-life: a CPU's utilisation estimate moves half-way to its current busy/idle
/// state in this time.
pub const UTIL_HALF_LIFE_NS: f64 = 32_000_000.0;
/// How often the emulated `nr_idle_scan` is recomputed. The kernel updates it from periodic
/// load balancing (every `|LLC|` ms on a partly idle LLC, far less often when busy); 4 ms keeps
/// the emulation slightly fresher than the kernel's own value and costs nothing.
pub const NR_IDLE_SCAN_PERIOD_NS: u64 = 4_000_000;
/// `sd->imbalance_pct` of the LLC (MC) domain.
pub const LLC_IMBALANCE_PCT: u64 = 117;
pub const SCHED_CAPACITY_SCALE: u64 = 1024;
/// `sysctl_sched_migration_cost`: SIS_PROP's `max_idle_balance_cost` floor.
pub const MIGRATION_COST_NS: u64 = 500_000;

/// `cpu_util_cfs`-based SIS_UTIL budget (`update_idle_cpu_scan` in kernel/sched/fair.c): how many
/// CPUs of an LLC of `llc_size` CPUs a wakeup may probe when the LLC's summed utilisation is
/// `sum_util` (each CPU 0..1024). Integer arithmetic as in the kernel.
pub fn sis_util_nr_idle_scan(llc_size: u32, sum_util: u64, imbalance_pct: u64) -> u32 {
    let w = u64::from(llc_size.max(1));
    let x = sum_util / w;
    let tmp = (x * x)
        .saturating_mul(imbalance_pct * imbalance_pct)
        .checked_div(10_000 * SCHED_CAPACITY_SCALE)
        .unwrap_or(0)
        .min(SCHED_CAPACITY_SCALE);
    let y = SCHED_CAPACITY_SCALE - tmp;
    (y * w / SCHED_CAPACITY_SCALE) as u32
}

/// SIS_PROP budget `nr` (`select_idle_cpu`, 5.14-6.6): `|LLC(T)| * avg_idle / (avg_scan_cost + 1)`
/// when that exceeds 4, else 4. The scan then probes at most `nr - 1` CPUs.
pub fn sis_prop_budget(llc_size: u32, wake_avg_idle_ns: u64, avg_scan_cost_ns: u64) -> u64 {
    let ac = avg_scan_cost_ns.saturating_add(1);
    let span_avg = u64::from(llc_size).saturating_mul(wake_avg_idle_ns);
    if span_avg > ac.saturating_mul(4) {
        span_avg / ac
    } else {
        4
    }
}

pub const fn jiffies(ts_ns: u64) -> u64 {
    ts_ns / JIFFY_NS
}
