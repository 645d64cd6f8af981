//! Ring-buffer records (the `wakeviz-common` ABI) to [`Event`]s. Pure byte parsing, so the fuzzer
//! and the tests reach it without a kernel.
use wakeviz_common::{
    EventHeader, EventKind, MigrateEvent, SelectEvent, SelectEventMasked, SelectEventMaskedV3,
    SelectEventV2, SelectEventV3, SelectFlips, SwitchEvent, UNKNOWN_U32, WakeEvent, exact,
    scan_path,
};
use zerocopy::FromBytes;

use crate::event::{
    Comm, Event, Migrate, ScanMeasure, Select, SelectInputs, Switch, TaskName, Wake, WakeeFlips,
};

mod encode;
mod ring;
pub use encode::encode_record;
pub use ring::{RingRecords, ring_records};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DecodeError {
    #[error("record of {len} bytes is shorter than its header")]
    ShortHeader { len: usize },
    #[error("unknown record kind {kind}")]
    UnknownKind { kind: u16 },
    #[error("record of kind {kind} has {len} bytes, expected {expected}")]
    ShortRecord {
        kind: u16,
        len: usize,
        expected: usize,
    },
    #[error("batch claims {claimed} bytes of records, {present} present")]
    BatchOverrun { claimed: usize, present: usize },
    /// A batch framing where one record was expected (inside a batch, or handed to
    /// [`decode_record`] without [`ring_records`]).
    #[error("a batch where a record was expected")]
    UnexpectedBatch,
}

/// Reads a `T` from the start of `bytes`, which may be longer (ring-buffer records are padded
/// to 8 bytes); a short record is an error, counted by the caller, never a panic.
fn need<T: FromBytes>(bytes: &[u8], kind: u16) -> Result<T, DecodeError> {
    T::read_from_prefix(bytes)
        .map(|(v, _)| v)
        .map_err(|_| DecodeError::ShortRecord {
            kind,
            len: bytes.len(),
            expected: size_of::<T>(),
        })
}

fn wake(e: &WakeEvent) -> Wake {
    Wake {
        ts_ns: e.hdr.ts_ns,
        cpu: u32::from(e.hdr.cpu),
        pid: e.hdr.pid,
        target_cpu: e.target_cpu,
        waker_pid: e.waker_pid,
        prio: e.prio,
    }
}

/// Decodes one record. The second value is a task name the record carried, for the task table.
pub fn decode_record(bytes: &[u8]) -> Result<(Event, Option<TaskName>), DecodeError> {
    let (hdr, _) = EventHeader::read_from_prefix(bytes)
        .map_err(|_| DecodeError::ShortHeader { len: bytes.len() })?;
    let kind = EventKind::from_u16(hdr.kind).ok_or(DecodeError::UnknownKind { kind: hdr.kind })?;
    Ok(match kind {
        EventKind::Waking | EventKind::Wakeup | EventKind::WakeupNew => {
            let e: WakeEvent = need(bytes, hdr.kind)?;
            let w = wake(&e);
            let name = TaskName {
                pid: e.hdr.pid,
                comm: Comm(e.comm),
                tgid: e.tgid,
                cgroup: 0,
            };
            let ev = match kind {
                EventKind::Waking => Event::Waking(w),
                EventKind::Wakeup => Event::Wakeup(w),
                _ => Event::WakeupNew(w),
            };
            (ev, Some(name))
        }
        EventKind::Switch => {
            let e: SwitchEvent = need(bytes, hdr.kind)?;
            let ev = Event::Switch(Switch {
                ts_ns: e.hdr.ts_ns,
                cpu: u32::from(e.hdr.cpu),
                prev_pid: e.hdr.pid,
                next_pid: e.next_pid,
                prev_state: e.prev_state,
                prev_prio: e.prev_prio,
                next_prio: e.next_prio,
            });
            let name = (e.next_pid != 0).then_some(TaskName {
                pid: e.next_pid,
                comm: Comm(e.next_comm),
                tgid: 0,
                cgroup: 0,
            });
            (ev, name)
        }
        EventKind::Migrate => {
            let e: MigrateEvent = need(bytes, hdr.kind)?;
            let ev = Event::Migrate(Migrate {
                ts_ns: e.hdr.ts_ns,
                cpu: u32::from(e.hdr.cpu),
                pid: e.hdr.pid,
                orig_cpu: e.orig_cpu,
                dest_cpu: e.dest_cpu,
            });
            (ev, None)
        }
        EventKind::Batch => return Err(DecodeError::UnexpectedBatch),
        EventKind::Select => {
            let e: SelectEvent = need(bytes, hdr.kind)?;
            let has = |bit| e.exact_mask & bit != 0;
            let ev = Event::Select(Box::new(Select {
                ts_ns: e.hdr.ts_ns,
                entry_ts_ns: e.entry_ts_ns,
                cpu: u32::from(e.hdr.cpu),
                pid: e.hdr.pid,
                prev_cpu: e.prev_cpu,
                wake_flags: e.wake_flags,
                chosen_cpu: e.chosen_cpu,
                waker_pid: e.waker_pid,
                waker_nr_running: has(exact::NR_RUNNING).then_some(e.waker_nr_running),
                nr_idle_scan: has(exact::NR_IDLE_SCAN).then_some(e.nr_idle_scan),
                has_idle_cores: has(exact::HAS_IDLE_CORES).then_some(e.has_idle_cores != 0),
                prev_nr_idle_scan: has(exact::PREV_NR_IDLE_SCAN).then_some(e.prev_nr_idle_scan),
                prev_has_idle_cores: has(exact::PREV_HAS_IDLE_CORES)
                    .then_some(e.prev_has_idle_cores != 0),
                idle_scan_ns: (e.idle_scan_ns != UNKNOWN_U32).then_some(e.idle_scan_ns),
                scan: has(exact::SCAN).then_some(ScanMeasure {
                    cpus: e.scan_cpus,
                    path: e.scan_path & scan_path::ALL,
                }),
                inputs: select_inputs(bytes, &e, hdr.kind)?,
            }));
            (ev, None)
        }
    })
}

/// The ABI-2 extension of a select record, when its `exact_mask` says one follows (a
/// version-1 record never has [`exact::INPUTS`]: its inputs stay unknown).
fn select_inputs(bytes: &[u8], e: &SelectEvent, kind: u16) -> Result<SelectInputs, DecodeError> {
    let m = e.exact_mask;
    if m & exact::INPUTS == 0 {
        return Ok(SelectInputs::default());
    }
    // ABI 3 appends the flips block to every record with inputs; an ABI-2 record is shorter.
    let v3 = |v3_len: usize| bytes.len() >= v3_len;
    let (i, flips, allowed) = if m & exact::MASK != 0 {
        if v3(size_of::<SelectEventMaskedV3>()) {
            let v: SelectEventMaskedV3 = need(bytes, kind)?;
            (v.inputs, Some(v.flips), Some(v.mask.bits))
        } else {
            let v: SelectEventMasked = need(bytes, kind)?;
            (v.inputs, None, Some(v.mask.bits))
        }
    } else if v3(size_of::<SelectEventV3>()) {
        let v: SelectEventV3 = need(bytes, kind)?;
        (v.inputs, Some(v.flips), None)
    } else {
        let v: SelectEventV2 = need(bytes, kind)?;
        (v.inputs, None, None)
    };
    let has = |bit| m & bit != 0;
    let on = |bit, v: u32| has(bit).then_some(v);
    Ok(SelectInputs {
        waker_load: on(exact::LOADS, i.waker_load),
        prev_load: on(exact::LOADS, i.prev_load),
        waker_capacity: on(exact::CAPACITY, i.waker_capacity),
        prev_capacity: on(exact::CAPACITY, i.prev_capacity),
        task_h_load: on(exact::TASK_H_LOAD, i.task_h_load),
        waker_h_load: on(exact::WAKER_H_LOAD, i.waker_h_load),
        task_in_group: has(exact::TASK_IN_GROUP),
        waker_h_nr_delayed: on(exact::H_NR_DELAYED, i.waker_h_nr_delayed),
        waker_kthread: has(exact::WAKER_KTHREAD).then_some(i.waker_kthread != 0),
        waker_nr_cpus_allowed: on(exact::WAKER_KTHREAD, i.waker_nr_cpus_allowed),
        task_nr_cpus_allowed: on(exact::TASK_CPUS, i.task_nr_cpus_allowed),
        allowed,
        flips: flips
            .filter(|_| has(exact::FLIPS))
            .map(|f: SelectFlips| WakeeFlips {
                waker: f.waker_wakee_flips,
                wakee: f.task_wakee_flips,
                waker_decay_jiffies: f.waker_flip_decay_jiffies,
                jiffies: f.jiffies,
                waker_last_wakee_is_task: f.waker_last_wakee_is_task != 0,
            }),
    })
}

/// True if `cpu` is the ABI's "unknown" marker.
pub const fn is_unknown(cpu: u32) -> bool {
    cpu == UNKNOWN_U32
}

#[cfg(test)]
mod tests {
    use zerocopy::{Immutable, IntoBytes};

    use super::*;

    fn bytes<T: IntoBytes + Immutable>(v: &T) -> Vec<u8> {
        v.as_bytes().to_vec()
    }

    fn hdr(kind: EventKind, cpu: u16, pid: u32) -> EventHeader {
        EventHeader {
            ts_ns: 1234,
            kind: kind as u16,
            cpu,
            pid,
        }
    }

    #[test]
    fn waking_round_trip() {
        let mut comm = [0u8; 16];
        comm[..4].copy_from_slice(b"pong");
        let e = WakeEvent {
            hdr: hdr(EventKind::Waking, 3, 77),
            target_cpu: 1,
            waker_pid: 76,
            prio: 120,
            tgid: 0,
            comm,
        };
        let (ev, name) = decode_record(&bytes(&e)).unwrap();
        assert_eq!(
            ev,
            Event::Waking(Wake {
                ts_ns: 1234,
                cpu: 3,
                pid: 77,
                target_cpu: 1,
                waker_pid: 76,
                prio: 120
            })
        );
        assert_eq!(name.unwrap().comm.as_str(), "pong");
    }

    /// A select record of pid 9 woken by pid 8 on CPU 0, with `exact_mask`.
    fn select_record(exact_mask: u32) -> SelectEvent {
        SelectEvent {
            hdr: hdr(EventKind::Select, 0, 9),
            entry_ts_ns: 1000,
            prev_cpu: 1,
            wake_flags: 0x18,
            chosen_cpu: 0,
            waker_pid: 8,
            waker_nr_running: 1,
            nr_idle_scan: 5,
            has_idle_cores: 1,
            prev_nr_idle_scan: 0,
            prev_has_idle_cores: 0,
            idle_scan_ns: UNKNOWN_U32,
            exact_mask,
            scan_cpus: 0,
            scan_path: 0,
        }
    }

    /// The scan fields mean something only with `exact::SCAN`: older probes wrote zeros there
    /// (the struct's tail padding), which must not read as "no scan ran".
    #[test]
    fn the_measured_scan_needs_its_bit() {
        let mut e = select_record(exact::SCAN);
        (e.scan_cpus, e.scan_path) = (3, scan_path::SCAN | scan_path::CORE | 0x100);
        let (Event::Select(s), None) = decode_record(&bytes(&e)).unwrap() else {
            panic!("not a select")
        };
        let m = s.scan.expect("measured");
        assert_eq!((m.cpus, m.path), (3, scan_path::SCAN | scan_path::CORE));
        assert!(m.ran());
        let e = select_record(0);
        let (Event::Select(s), None) = decode_record(&bytes(&e)).unwrap() else {
            panic!("not a select")
        };
        assert_eq!(s.scan, None);
    }

    #[test]
    fn select_exact_bits() {
        let e = select_record(exact::NR_RUNNING | exact::HAS_IDLE_CORES);
        let (Event::Select(s), None) = decode_record(&bytes(&e)).unwrap() else {
            panic!("not a select")
        };
        assert_eq!(s.duration_ns(), 234);
        assert_eq!(s.waker_nr_running, Some(1));
        assert_eq!(s.nr_idle_scan, None);
        assert_eq!(s.has_idle_cores, Some(true));
    }

    /// ABI-3 records carry the flips block; ABI-2 ones (shorter) still decode, flips unknown.
    #[test]
    fn select_inputs_of_abi_2_and_3() {
        let ev = select_record(exact::INPUTS | exact::LOADS | exact::FLIPS);
        let inputs = wakeviz_common::SelectInputs {
            waker_load: 700,
            prev_load: 300,
            ..Default::default()
        };
        let flips = SelectFlips {
            waker_wakee_flips: 31,
            task_wakee_flips: 5,
            waker_flip_decay_jiffies: 100,
            jiffies: 350,
            waker_last_wakee_is_task: 1,
            _pad0: 0,
        };
        let mask = wakeviz_common::SelectMask {
            bits: [0b1010, 0, 0, 0],
        };
        let get = |b: &[u8]| match decode_record(b) {
            Ok((Event::Select(s), None)) => s.inputs,
            other => panic!("not a select: {other:?}"),
        };
        let i = get(&bytes(&SelectEventV3 { ev, inputs, flips }));
        assert_eq!(i.waker_load, Some(700));
        let f = i.flips.expect("flips read");
        assert_eq!((f.waker, f.wakee, f.jiffies), (31, 5, 350));
        assert!(f.waker_last_wakee_is_task);
        // 250 jiffies old is not "after HZ": no halving; last wakee is p: no flip.
        assert_eq!(f.waker_after_record(250), 31);
        assert_eq!(f.waker_after_record(249), 15);
        let mut evm = ev;
        evm.exact_mask |= exact::MASK;
        let r = SelectEventMaskedV3 {
            ev: evm,
            inputs,
            flips,
            mask,
        };
        let i = get(&bytes(&r));
        assert_eq!(
            (i.allowed, i.flips.map(|f| f.wakee)),
            (Some(mask.bits), Some(5))
        );
        // ABI 2: no flips block, whatever the bit says.
        let i = get(&bytes(&SelectEventV2 { ev, inputs }));
        assert_eq!((i.waker_load, i.flips), (Some(700), None));
        let r = SelectEventMasked {
            ev: evm,
            inputs,
            mask,
        };
        assert_eq!(get(&bytes(&r)).allowed, Some(mask.bits));
        // ABI 3 without the FLIPS bit (fields absent from BTF): the zeros are not a reading.
        let mut evn = ev;
        evn.exact_mask &= !exact::FLIPS;
        let r = SelectEventV3 {
            ev: evn,
            inputs,
            flips,
        };
        assert_eq!(get(&bytes(&r)).flips, None);
    }

    #[test]
    fn short_and_unknown_records_are_errors() {
        assert_eq!(
            decode_record(&[0u8; 4]),
            Err(DecodeError::ShortHeader { len: 4 })
        );
        let mut h = bytes(&hdr(EventKind::Switch, 0, 1));
        assert!(matches!(
            decode_record(&h),
            Err(DecodeError::ShortRecord { kind: 4, .. })
        ));
        h[8] = 99;
        assert_eq!(
            decode_record(&h),
            Err(DecodeError::UnknownKind { kind: 99 })
        );
    }

    /// Every record kind cut at every length short of its size is a counted error; padded to
    /// the ring buffer's 8-byte granularity and beyond it still decodes.
    #[test]
    fn wrong_sizes_are_errors_not_panics() {
        let wake = WakeEvent {
            hdr: hdr(EventKind::Wakeup, 1, 2),
            target_cpu: 1,
            waker_pid: 3,
            prio: 120,
            tgid: 0,
            comm: [b'a'; 16],
        };
        let switch = SwitchEvent {
            hdr: hdr(EventKind::Switch, 1, 2),
            next_pid: 4,
            prev_state: 1,
            prev_prio: 120,
            next_prio: 110,
            next_comm: [b'b'; 16],
        };
        let migrate = MigrateEvent {
            hdr: hdr(EventKind::Migrate, 1, 2),
            orig_cpu: 0,
            dest_cpu: 1,
        };
        let select = SelectEvent::read_from_bytes(&[0u8; size_of::<SelectEvent>()][..])
            .map(|mut e| {
                e.hdr = hdr(EventKind::Select, 1, 2);
                e
            })
            .unwrap();
        for rec in [
            bytes(&wake),
            bytes(&switch),
            bytes(&migrate),
            bytes(&select),
        ] {
            let kind = u16::from_le_bytes([rec[8], rec[9]]);
            for len in 0..rec.len() {
                let err = decode_record(&rec[..len]).unwrap_err();
                if len < size_of::<EventHeader>() {
                    assert_eq!(err, DecodeError::ShortHeader { len });
                } else {
                    assert_eq!(
                        err,
                        DecodeError::ShortRecord {
                            kind,
                            len,
                            expected: rec.len()
                        }
                    );
                }
            }
            let mut padded = rec.clone();
            padded.extend_from_slice(&[0xff; 8]);
            assert_eq!(decode_record(&padded), decode_record(&rec));
            assert!(decode_record(&rec).is_ok());
        }
    }
}
