//! Unit tests of the features file handling, on plain files (`Store::Emulated`).
use super::*;

/// A list as a 6.12 kernel prints it (its order, not another kernel's).
const LIST: &str = "PLACE_LAG PLACE_DEADLINE_INITIAL RUN_TO_PARITY NEXT_BUDDY CACHE_HOT_BUDDY \
    WAKEUP_PREEMPTION HRTICK NO_HRTICK_DL NONTASK_CAPACITY TTWU_QUEUE SIS_UTIL NO_WARN_DOUBLE_CLOCK \
    WA_IDLE WA_WEIGHT WA_BIAS UTIL_EST LATENCY_WARN \n";

fn store() -> (tempfile::TempDir, Store) {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("features");
    std::fs::write(&p, LIST).unwrap();
    (d, Store::Emulated(p))
}

fn on(store: &Store, base: &str) -> Option<bool> {
    parse(&store.read().unwrap())
        .into_iter()
        .find(|(n, _)| n == base)
        .map(|(_, o)| o)
}

fn req(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn names_not_bits() {
    let l = parse(LIST);
    assert_eq!(l.len(), 17);
    assert_eq!(l[7], ("HRTICK_DL".into(), false));
    assert_eq!(l[8], ("NONTASK_CAPACITY".into(), true));
    // Another kernel's order: the same request means the same feature.
    let mut rev = l.clone();
    rev.reverse();
    assert_eq!(
        validate(&req(&["NO_SIS_UTIL"]), &l).unwrap(),
        validate(&req(&["NO_SIS_UTIL"]), &rev).unwrap()
    );
    assert_eq!(render(&l), LIST.trim());
}

#[test]
fn validation_refuses_unknown_and_contradictory_names() {
    let l = parse(LIST);
    let e = validate(&req(&["NO_SIS_UTL"]), &l).unwrap_err().to_string();
    assert!(e.contains("did you mean NO_SIS_UTIL"), "{e}");
    assert!(e.contains("known: CACHE_HOT_BUDDY HRTICK"), "{e}");
    assert!(!e.contains('\n'));
    let e = validate(&req(&["no_sis_util"]), &l)
        .unwrap_err()
        .to_string();
    assert!(e.contains("did you mean NO_SIS_UTIL"), "{e}");
    let e = validate(&req(&["ZZZZZZZZZZZZ"]), &l)
        .unwrap_err()
        .to_string();
    assert!(!e.contains("did you mean"), "{e}");
    let e = validate(&req(&["NO_WA_BIAS", "WA_BIAS"]), &l).unwrap_err();
    assert!(matches!(e, FeatureError::Conflict { .. }), "{e}");
    assert_eq!(
        validate(&req(&["NO_WA_BIAS", "NO_WA_BIAS", "HRTICK_DL"]), &l).unwrap(),
        [("WA_BIAS".to_string(), false), ("HRTICK_DL".into(), true)]
    );
}

// The tests below write to one global (the active changes), so they run as one test.
#[test]
fn set_restore_and_failure_paths() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: --sched-feature needs root");
        return;
    }
    let (_d, s) = store();
    // Set and restored on drop; a feature already as asked is not touched.
    {
        let g = apply(
            s.clone(),
            &req(&["NO_SIS_UTIL", "NO_WARN_DOUBLE_CLOCK"]),
            false,
        )
        .unwrap();
        assert_eq!(g.requested(), ["NO_SIS_UTIL", "NO_WARN_DOUBLE_CLOCK"]);
        assert_eq!(on(&s, "SIS_UTIL"), Some(false));
        // Someone else changes another feature meanwhile: not ours to restore.
        s.write("NO_WA_IDLE").unwrap();
    }
    assert_eq!(on(&s, "SIS_UTIL"), Some(true));
    assert_eq!(on(&s, "WARN_DOUBLE_CLOCK"), Some(false));
    assert_eq!(on(&s, "WA_IDLE"), Some(false));
    s.write("WA_IDLE").unwrap();
    assert_eq!(std::fs::read_to_string(s.path()).unwrap(), LIST);

    // A bad name changes nothing, even after good ones.
    let e = apply(s.clone(), &req(&["NO_SIS_UTIL", "NO_BOGUS"]), false).unwrap_err();
    assert!(matches!(e, FeatureError::Unknown { .. }));
    assert_eq!(std::fs::read_to_string(s.path()).unwrap(), LIST);

    // A panic unwinds through the guard, which restores.
    let s2 = s.clone();
    let r = std::panic::catch_unwind(move || {
        let _g = apply(s2.clone(), &req(&["NO_TTWU_QUEUE", "NO_WA_BIAS"]), false).unwrap();
        assert_eq!(on(&s2, "TTWU_QUEUE"), Some(false));
        panic!("boom");
    });
    assert!(r.is_err());
    assert_eq!(std::fs::read_to_string(s.path()).unwrap(), LIST);

    // A restore that cannot write reports it and says so.
    let g = apply(s.clone(), &req(&["NO_SIS_UTIL"]), false).unwrap();
    let p = s.path().to_path_buf();
    std::fs::remove_file(&p).unwrap();
    drop(g);
    assert!(restore_active(), "nothing left once a restore was tried");
    std::fs::write(&p, LIST).unwrap();

    // The watchdog's path: restored without the guard being dropped.
    let g = apply(s.clone(), &req(&["NO_SIS_UTIL"]), false).unwrap();
    assert!(restore_active());
    assert_eq!(on(&s, "SIS_UTIL"), Some(true));
    std::mem::forget(g);

    // Missing file and read-only are one line each, nothing written.
    let missing = Store::Emulated(p.with_file_name("nope"));
    let e = apply(missing, &req(&["NO_SIS_UTIL"]), false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("does not exist"), "{e}");
    assert!(!e.contains('\n'));
}

#[test]
fn a_file_that_cannot_be_read_is_one_line() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return;
    }
    // A directory: reading it fails with EISDIR.
    let d = tempfile::tempdir().unwrap();
    let e = check(&Store::Emulated(d.path().into()), &req(&["NO_SIS_UTIL"])).unwrap_err();
    assert!(matches!(e, FeatureError::Unreadable { .. }), "{e}");
    assert!(!e.to_string().contains('\n'));
}

/// The lock: a second taker is refused with the holder's pid; a record left behind (the holder
/// died before restoring) names what still differs from its originals, and only that.
#[test]
fn the_lock_refuses_a_second_run_and_keeps_the_originals() {
    let (_d, s) = store();
    let mut a = lock::Lock::acquire(&s).unwrap();
    a.record(
        &s,
        vec![
            lock::Original {
                feature: "SIS_UTIL".into(),
                was_on: true,
            },
            lock::Original {
                feature: "WA_BIAS".into(),
                was_on: true,
            },
        ],
    )
    .unwrap();
    match lock::Lock::acquire(&s) {
        Err(FeatureError::Busy { holder, .. }) => {
            assert!(
                holder.starts_with(&format!("pid {} (`", std::process::id())),
                "{holder}"
            );
        }
        other => panic!("a second taker must be refused: {other:?}"),
    }
    // SIS_UTIL set, then the holder dies (the lock goes with its file, the record stays).
    s.write("NO_SIS_UTIL").unwrap();
    drop(a);
    let b = lock::Lock::acquire(&s).unwrap();
    let left = b.leftovers(&parse(&s.read().unwrap()));
    assert_eq!(
        left,
        [lock::Leftover {
            feature: "SIS_UTIL".into(),
            was_on: true
        }]
    );
    assert_eq!(
        lock::restore_command(&s, &left),
        format!("echo SIS_UTIL > {}", s.path().display())
    );
    drop(b);
    // Refused without --restore-leftovers (stdin is not a terminal under the test harness
    // when run by CI; at a terminal this would ask), restored with it.
    if !std::io::stdin().is_terminal() {
        let e = lock_and_check(&s, false).unwrap_err();
        assert!(matches!(e, FeatureError::Leftovers { .. }), "{e}");
        assert_eq!(on(&s, "SIS_UTIL"), Some(false), "refused: nothing changed");
    }
    let l = lock_and_check(&s, true).unwrap();
    assert_eq!(on(&s, "SIS_UTIL"), Some(true));
    assert!(l.leftovers(&parse(&s.read().unwrap())).is_empty());
    drop(l);
    // Nothing left: the record was emptied.
    let c = lock::Lock::acquire(&s).unwrap();
    assert!(c.previous().original.is_empty());
}
