//! `--sched-feature NAME`: scheduler features set for one run and restored after it (issue 13,
//! part 1). Placeholder until it lands.
