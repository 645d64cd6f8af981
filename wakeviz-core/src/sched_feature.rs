//! The scheduler features wakeviz reads or models, as a type: a misspelt feature is a compile
//! error rather than a prediction or a kernel rule that silently never applies.

/// A `/sys/kernel/debug/sched/features` entry that a shadow policy, a kernel rule or a
/// prediction model depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SchedFeature {
    SisUtil,
    SisProp,
    SisNode,
    WaIdle,
    WaWeight,
    WaBias,
    DelayDequeue,
}

/// A feature's state in one features file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    On,
    Off,
    /// Not in the file: the kernel predates the feature.
    Absent,
}

impl SchedFeature {
    pub const ALL: [Self; 7] = [
        Self::SisUtil,
        Self::SisProp,
        Self::SisNode,
        Self::WaIdle,
        Self::WaWeight,
        Self::WaBias,
        Self::DelayDequeue,
    ];

    /// The name as the kernel spells it in the features file.
    pub const fn name(self) -> &'static str {
        match self {
            Self::SisUtil => "SIS_UTIL",
            Self::SisProp => "SIS_PROP",
            Self::SisNode => "SIS_NODE",
            Self::WaIdle => "WA_IDLE",
            Self::WaWeight => "WA_WEIGHT",
            Self::WaBias => "WA_BIAS",
            Self::DelayDequeue => "DELAY_DEQUEUE",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Its state in `features`, the file's entries (`NO_X` = X off).
    pub fn state_in(self, features: &[String]) -> State {
        let name = self.name();
        for f in features {
            match f.strip_prefix("NO_") {
                Some(n) if n == name => return State::Off,
                None if f == name => return State::On,
                _ => {}
            }
        }
        State::Absent
    }

    pub fn is_on(self, features: &[String]) -> bool {
        self.state_in(features) == State::On
    }

    /// How the features file would spell it in this state.
    pub fn spell(self, state: State) -> String {
        match state {
            State::On => self.name().to_string(),
            State::Off => format!("NO_{}", self.name()),
            State::Absent => format!("{} absent", self.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn names_round_trip_and_are_distinct() {
        for f in SchedFeature::ALL {
            assert_eq!(SchedFeature::from_name(f.name()), Some(f));
        }
        assert_eq!(SchedFeature::from_name("SIS_UTILX"), None);
    }

    #[test]
    fn state_reads_no_prefix_and_absence() {
        let f = file("NO_SIS_PROP SIS_UTIL WA_IDLE NO_WA_BIAS");
        assert_eq!(SchedFeature::SisUtil.state_in(&f), State::On);
        assert_eq!(SchedFeature::SisProp.state_in(&f), State::Off);
        assert_eq!(SchedFeature::WaBias.state_in(&f), State::Off);
        assert_eq!(SchedFeature::SisNode.state_in(&f), State::Absent);
        assert_eq!(SchedFeature::SisProp.spell(State::Off), "NO_SIS_PROP");
        assert_eq!(
            SchedFeature::SisNode.spell(State::Absent),
            "SIS_NODE absent"
        );
    }
}
