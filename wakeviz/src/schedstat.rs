//! The kernel's own wakeup counters around a live run: `/proc/schedstat` read at the start and
//! at the end, compared with wakeviz's counts by the analysis. Where `kernel.sched_schedstats`
//! is off and we are root, it is switched on for the run and restored afterwards.
use wakeviz_core::analysis::Analysis;

const SCHEDSTAT: &str = "/proc/schedstat";
const SYSCTL: &str = "/proc/sys/kernel/sched_schedstats";

pub struct Session {
    start: Option<String>,
    restore: Option<String>,
}

impl Session {
    pub fn start() -> Self {
        let before = std::fs::read_to_string(SYSCTL).ok();
        let restore = match before.as_deref().map(str::trim) {
            Some("0") if std::fs::write(SYSCTL, "1").is_ok() => before,
            _ => None,
        };
        Self {
            start: std::fs::read_to_string(SCHEDSTAT).ok(),
            restore,
        }
    }

    /// Takes the end snapshot, hands both to the analysis and restores the sysctl.
    pub fn finish(self, a: &mut Analysis) {
        let end = std::fs::read_to_string(SCHEDSTAT).ok();
        if let Some(v) = &self.restore {
            let _ = std::fs::write(SYSCTL, v);
        }
        if let (Some(s), Some(e)) = (self.start, end)
            && let Err(err) = a.compare_schedstat(&s, &e)
        {
            eprintln!("wakeviz: note: schedstat cross-check skipped: {err}");
        }
    }
}
