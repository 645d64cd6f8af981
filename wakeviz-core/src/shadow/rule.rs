//! Which rule produced a decision, counted per policy in the report. The shared stages
//! (FRONT, SHORTCUTS, the LLC scan) and the baseline have [`Stage`] rules; a policy with rules
//! of its own names them in [`super::policy::Policy::rules`] and returns [`Rule::own`], so a new
//! policy never touches this file.
use strum::{EnumCount, EnumIter, IntoStaticStr};

/// Rules of the shared stages. The strum names are the report's and the JSON's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, EnumCount, EnumIter, IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum Stage {
    /// The kernel's own choice (the baseline).
    #[default]
    Observed,
    /// `WF_CURRENT_CPU`: the waker's CPU, no search.
    CurrentCpu,
    /// SIS: the target was idle.
    #[strum(serialize = "target_idle")]
    Target,
    /// SIS: `prev_cpu` shares the target's LLC and was idle.
    #[strum(serialize = "prev_idle")]
    Prev,
    /// SIS: the waker is a per-CPU kthread on prev's CPU running alone: stack on prev.
    #[strum(serialize = "per_cpu_kthread_prev")]
    KthreadPrev,
    /// SIS: `recent_used_cpu` shares the target's LLC and was idle.
    #[strum(serialize = "recent_used_idle")]
    Recent,
    /// SIS: an idle SMT sibling of `prev_cpu` (no idle core hinted).
    #[strum(serialize = "smt_sibling_of_prev")]
    SmtOfPrev,
    /// Scan: first idle CPU within the budget.
    #[strum(serialize = "scan_idle_cpu")]
    ScanIdle,
    /// Scan in idle-core mode: a fully idle core.
    #[strum(serialize = "scan_idle_core")]
    ScanCore,
    /// Scan in idle-core mode found no idle core but met an idle CPU on the way.
    #[strum(serialize = "scan_core_fallback_cpu")]
    ScanFallback,
    /// Nothing idle found (or the budget was zero): the target, busy.
    #[strum(serialize = "no_idle_target")]
    Stacked,
}

/// Most rules a policy may define besides the stages' (the per-policy counters are a fixed
/// array, so recording never allocates).
pub const MAX_OWN: usize = 5;
const _: () = assert!(Rule::SLOTS.is_power_of_two());

/// Which rule produced a decision: a [`Stage`] rule, or the deciding policy's own rule `n`
/// (named by its `Policy::rules()[n]`). One byte, the counter slot itself, because it is
/// stored with every parked outcome and counted on every placement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Rule(u8);

impl From<Stage> for Rule {
    fn from(s: Stage) -> Self {
        Self::stage(s)
    }
}

impl Rule {
    /// Counter slots per policy: every stage rule, then [`MAX_OWN`] own rules.
    pub const SLOTS: usize = Stage::COUNT + MAX_OWN;

    pub const fn stage(s: Stage) -> Self {
        Self(s as u8)
    }

    /// The deciding policy's rule `n` (past [`MAX_OWN`], the last slot).
    pub const fn own(n: u8) -> Self {
        let n = if (n as usize) < MAX_OWN {
            n
        } else {
            MAX_OWN as u8 - 1
        };
        Self(Stage::COUNT as u8 + n)
    }

    /// The stage rule, if it is one.
    pub fn as_stage(self) -> Option<Stage> {
        use strum::IntoEnumIterator;
        Stage::iter().nth(self.0 as usize)
    }

    /// The own rule number, if it is one.
    pub const fn as_own(self) -> Option<u8> {
        if (self.0 as usize) < Stage::COUNT {
            None
        } else {
            Some(self.0 - Stage::COUNT as u8)
        }
    }

    /// Counter slot (masked to [`Rule::SLOTS`], a power of two, so indexing a counter array
    /// needs no bounds check on the hot path; every constructor stays below it anyway).
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize & (Self::SLOTS - 1)
    }

    /// The rule's report name, given the deciding policy's own rule names; `None` for an own
    /// rule the policy did not name.
    pub fn name(self, own: &[&'static str]) -> Option<&'static str> {
        match self.as_own() {
            None => self.as_stage().map(Into::into),
            Some(n) => own.get(n as usize).copied(),
        }
    }

    /// The rule counted in slot `i`, the inverse of [`Rule::index`].
    pub fn from_index(i: usize) -> Option<Self> {
        (i < Self::SLOTS).then_some(Self(i as u8))
    }
}

#[cfg(test)]
mod tests {
    use strum::IntoEnumIterator;

    use super::*;

    #[test]
    fn slots_round_trip_and_keep_the_report_names() {
        for i in 0..Rule::SLOTS {
            let r = Rule::from_index(i).expect("slot");
            assert_eq!(r.index(), i);
        }
        let names: Vec<&str> = Stage::iter().map(Into::into).collect();
        assert_eq!(
            names,
            [
                "observed",
                "current_cpu",
                "target_idle",
                "prev_idle",
                "per_cpu_kthread_prev",
                "recent_used_idle",
                "smt_sibling_of_prev",
                "scan_idle_cpu",
                "scan_idle_core",
                "scan_core_fallback_cpu",
                "no_idle_target"
            ]
        );
        assert_eq!(Rule::own(1).name(&["a", "b"]), Some("b"));
        assert_eq!(Rule::own(2).name(&["a", "b"]), None);
        assert_eq!(Rule::stage(Stage::Prev).as_stage(), Some(Stage::Prev));
        assert_eq!(Rule::own(200), Rule::own(MAX_OWN as u8 - 1));
        assert_eq!(Rule::own(0).as_stage(), None);
    }
}
