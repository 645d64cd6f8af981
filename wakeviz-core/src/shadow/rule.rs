//! Which rule produced a decision, counted per policy in the report. The shared stages
//! (FRONT, SHORTCUTS, the LLC scan) and the baseline have [`Stage`] rules; a policy with rules
//! of its own names them in [`super::policy::Policy::rules`] and returns [`Rule::Own`], so a new
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
pub const MAX_OWN: usize = 6;

/// Which rule produced a decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    Stage(Stage),
    /// The deciding policy's rule number `n`, named by its `Policy::rules()[n]`.
    Own(u8),
}

impl Default for Rule {
    fn default() -> Self {
        Self::Stage(Stage::default())
    }
}

impl From<Stage> for Rule {
    fn from(s: Stage) -> Self {
        Self::Stage(s)
    }
}

impl Rule {
    /// Counter slots per policy: every stage rule, then [`MAX_OWN`] own rules.
    pub const SLOTS: usize = Stage::COUNT + MAX_OWN;

    /// Counter slot (an out-of-range own rule shares the last slot).
    #[inline]
    pub const fn index(self) -> usize {
        match self {
            Self::Stage(s) => s as usize,
            Self::Own(n) => {
                let n = n as usize;
                Stage::COUNT + if n < MAX_OWN { n } else { MAX_OWN - 1 }
            }
        }
    }

    /// The rule's report name, given the deciding policy's own rule names; `None` for an own
    /// rule the policy did not name.
    pub fn name(self, own: &[&'static str]) -> Option<&'static str> {
        match self {
            Self::Stage(s) => Some(s.into()),
            Self::Own(n) => own.get(n as usize).copied(),
        }
    }

    /// The rule counted in slot `i`, the inverse of [`Rule::index`].
    pub fn from_index(i: usize) -> Option<Self> {
        use strum::IntoEnumIterator;
        if i < Stage::COUNT {
            Stage::iter().nth(i).map(Self::Stage)
        } else if i < Self::SLOTS {
            u8::try_from(i - Stage::COUNT).ok().map(Self::Own)
        } else {
            None
        }
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
                "recent_used_idle",
                "smt_sibling_of_prev",
                "scan_idle_cpu",
                "scan_idle_core",
                "scan_core_fallback_cpu",
                "no_idle_target"
            ]
        );
        assert_eq!(Rule::Own(1).name(&["a", "b"]), Some("b"));
        assert_eq!(Rule::Own(2).name(&["a", "b"]), None);
    }
}
