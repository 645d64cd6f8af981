//! Which placement policy the recorded kernel runs (its "flavour"), from the recording's
//! scheduler features or its release string, and `wake_wide()`, the one FRONT rule the
//! evaluator applies before any policy runs.
use super::policy::{FlavourSource, KernelFlavour};
use crate::format::Header;
use crate::sched_feature::SchedFeature;

/// The policy the running kernel uses, from its release: SIS_PROP before 6.0, else SIS_UTIL.
/// (The features file is not in the header; 6.0-6.6 kernels with `SIS_PROP` switched back on
/// are misjudged.)
/// The policy of the recorded kernel: from its scheduler features when the recording has
/// them (`SIS_UTIL` on -> SIS_UTIL, which also wins when both it and `SIS_PROP` are on, as its
/// limit is the tighter one on these loads; `SIS_PROP` alone -> SIS_PROP; neither -> a full
/// LLC scan), else from the release string.
pub fn kernel_flavour(header: &Header) -> (KernelFlavour, FlavourSource) {
    flavour_of(header.run.sched_features.as_deref(), &header.kernel_release)
}

fn flavour_of(features: Option<&[String]>, release: &str) -> (KernelFlavour, FlavourSource) {
    match features {
        Some(f) if !f.is_empty() => (flavour_of_features(f), FlavourSource::SchedFeatures),
        _ => (kernel_policy(release), FlavourSource::KernelRelease),
    }
}

/// `features`: the names as the debugfs file lists them (`NO_X` = X off).
pub fn flavour_of_features(features: &[String]) -> KernelFlavour {
    if SchedFeature::SisUtil.is_on(features) {
        KernelFlavour::SisUtil
    } else if SchedFeature::SisProp.is_on(features) {
        KernelFlavour::SisProp
    } else {
        KernelFlavour::FullScan
    }
}

/// The release-string guess: SIS_PROP before 6.0, SIS_UTIL after.
pub fn kernel_policy(release: &str) -> KernelFlavour {
    let mut it = release
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<u32>().unwrap_or(0));
    match it.next() {
        Some(major) if major < 6 && major > 0 => KernelFlavour::SisProp,
        _ => KernelFlavour::SisUtil,
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn names(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn the_features_choose_the_kernel_policy_not_the_release() {
        // A 6.12 features file as read, then with NO_SIS_UTIL.
        let on = names("PLACE_LAG RUN_TO_PARITY SIS_UTIL WA_IDLE WA_BIAS TTWU_QUEUE");
        let off = names("PLACE_LAG RUN_TO_PARITY NO_SIS_UTIL WA_IDLE WA_BIAS TTWU_QUEUE");
        assert_eq!(flavour_of_features(&on), KernelFlavour::SisUtil);
        assert_eq!(flavour_of_features(&off), KernelFlavour::FullScan);
        // 6.0-6.6 list both; SIS_PROP on by hand and SIS_UTIL off.
        assert_eq!(
            flavour_of_features(&names("NO_SIS_PROP SIS_UTIL")),
            KernelFlavour::SisUtil
        );
        assert_eq!(
            flavour_of_features(&names("SIS_PROP NO_SIS_UTIL")),
            KernelFlavour::SisProp
        );
        // A 5.x kernel that backported SIS_UTIL: the release string would say SIS_PROP.
        assert_eq!(kernel_policy("5.15.0-1-amd64"), KernelFlavour::SisProp);
        assert_eq!(
            flavour_of_features(&names("NO_SIS_PROP SIS_UTIL")),
            KernelFlavour::SisUtil
        );
    }

    #[test]
    fn without_features_the_release_decides_and_says_so() {
        assert_eq!(
            flavour_of(None, "5.10.0"),
            (KernelFlavour::SisProp, FlavourSource::KernelRelease)
        );
        assert_eq!(
            flavour_of(Some(&[]), "6.12.0"),
            (KernelFlavour::SisUtil, FlavourSource::KernelRelease)
        );
        assert_eq!(
            flavour_of(Some(&names("NO_SIS_UTIL")), "5.10.0"),
            (KernelFlavour::FullScan, FlavourSource::SchedFeatures)
        );
    }
}
