use wakeviz_common::{
    BatchHeader, EventHeader, MigrateEvent, SelectEventMaskedV3, SelectEventV3, SelectFlips,
    SelectInputs, SelectMask, SwitchEvent, WakeEvent, exact,
};
use zerocopy::IntoBytes;

use super::*;
use crate::{decode::decode_record, event::Event};

fn hdr(kind: EventKind, ts_ns: u64, pid: u32) -> EventHeader {
    EventHeader {
        ts_ns,
        kind: kind as u16,
        cpu: 3,
        pid,
    }
}

fn wake(ts_ns: u64) -> Vec<u8> {
    WakeEvent {
        hdr: hdr(EventKind::Waking, ts_ns, 7),
        target_cpu: 1,
        waker_pid: 9,
        prio: 120,
        tgid: 0,
        comm: [b'a'; 16],
    }
    .as_bytes()
    .to_vec()
}

fn switch(ts_ns: u64) -> Vec<u8> {
    SwitchEvent {
        hdr: hdr(EventKind::Switch, ts_ns, 7),
        next_pid: 0,
        prev_state: 1,
        prev_prio: 120,
        next_prio: 120,
        next_comm: [0; 16],
    }
    .as_bytes()
    .to_vec()
}

fn migrate(ts_ns: u64) -> Vec<u8> {
    MigrateEvent {
        hdr: hdr(EventKind::Migrate, ts_ns, 7),
        orig_cpu: 1,
        dest_cpu: 2,
    }
    .as_bytes()
    .to_vec()
}

fn select(ts_ns: u64, exact_mask: u32) -> SelectEvent {
    SelectEvent {
        hdr: hdr(EventKind::Select, ts_ns, 7),
        entry_ts_ns: ts_ns - 5,
        prev_cpu: 1,
        wake_flags: 0,
        chosen_cpu: 2,
        waker_pid: 9,
        waker_nr_running: 1,
        nr_idle_scan: 2,
        has_idle_cores: 0,
        prev_nr_idle_scan: 3,
        prev_has_idle_cores: 1,
        exact_mask,
        idle_scan_ns: u32::MAX,
        scan_cpus: 0,
        scan_path: 0,
    }
}

fn batch(records: &[Vec<u8>]) -> Vec<u8> {
    let body: Vec<u8> = records.concat();
    let mut out = BatchHeader {
        ts_ns: 999,
        kind: EventKind::Batch as u16,
        cpu: 3,
        len: body.len() as u32,
    }
    .as_bytes()
    .to_vec();
    out.extend(body);
    out
}

fn split(bytes: &[u8]) -> Vec<Result<&[u8], DecodeError>> {
    ring_records(bytes).collect()
}

#[test]
fn a_single_record_is_handed_on_whole() {
    let w = wake(5);
    assert_eq!(split(&w), vec![Ok(&w[..])]);
    // Too short to say what it is: still handed on, for `decode_record` to reject.
    assert_eq!(split(&w[..3]), vec![Ok(&w[..3])]);
}

#[test]
fn a_batch_splits_into_its_records_of_every_kind_and_length() {
    let masked = SelectEventMaskedV3 {
        ev: select(40, exact::INPUTS | exact::MASK | exact::FLIPS),
        inputs: SelectInputs::default(),
        flips: SelectFlips::default(),
        mask: SelectMask { bits: [1, 2, 3, 4] },
    };
    let v3 = SelectEventV3 {
        ev: select(50, exact::INPUTS),
        inputs: SelectInputs::default(),
        flips: SelectFlips::default(),
    };
    let recs = vec![
        wake(10),
        switch(20),
        migrate(30),
        masked.as_bytes().to_vec(),
        v3.as_bytes().to_vec(),
        select(60, 0).as_bytes().to_vec(),
    ];
    let b = batch(&recs);
    let parts: Vec<&[u8]> = split(&b).into_iter().map(Result::unwrap).collect();
    assert_eq!(parts.len(), recs.len());
    for (p, r) in parts.iter().zip(&recs) {
        assert_eq!(*p, &r[..]);
    }
    let ts: Vec<u64> = parts
        .iter()
        .map(|p| decode_record(p).map(|(e, _)| e.ts_ns()).unwrap())
        .collect();
    assert_eq!(ts, [10, 20, 30, 40, 50, 60]);
    let Ok((Event::Select(s), _)) = decode_record(parts[3]) else {
        panic!("not a select record")
    };
    assert_eq!(s.inputs.allowed, Some([1, 2, 3, 4]));
}

#[test]
fn an_empty_batch_has_no_records() {
    assert!(split(&batch(&[])).is_empty());
}

#[test]
fn a_batch_claiming_more_than_it_holds_is_one_error() {
    let mut b = batch(&[wake(1), wake(2)]);
    b.truncate(b.len() - 1);
    assert_eq!(
        split(&b),
        vec![Err(DecodeError::BatchOverrun {
            claimed: 96,
            present: 95
        })]
    );
}

#[test]
fn a_bad_record_ends_the_batch_after_the_good_ones() {
    // A truncated last record.
    let mut body = [wake(1), switch(2)].concat();
    body.truncate(body.len() - 8);
    let mut b = batch(&[body]);
    let parts = split(&b);
    assert_eq!(parts.len(), 2);
    assert!(parts[0].is_ok());
    assert!(matches!(parts[1], Err(DecodeError::ShortRecord { .. })));
    // An unknown kind in the middle: what follows cannot be found.
    let mut junk = wake(3);
    junk[8] = 0xee;
    b = batch(&[wake(1), junk, wake(4)]);
    let parts = split(&b);
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[1], Err(DecodeError::UnknownKind { kind: 0xee }));
    // A batch inside a batch.
    b = batch(&[wake(1), batch(&[wake(2)])]);
    assert_eq!(split(&b)[1], Err(DecodeError::UnexpectedBatch));
    // A select record cut before its mask word.
    let sel = select(5, exact::INPUTS).as_bytes()[..40].to_vec();
    assert!(matches!(
        split(&batch(&[sel]))[0],
        Err(DecodeError::ShortRecord { .. })
    ));
}

#[test]
fn decode_record_refuses_a_batch() {
    assert_eq!(
        decode_record(&batch(&[wake(1)])).map(|_| ()),
        Err(DecodeError::UnexpectedBatch)
    );
}
