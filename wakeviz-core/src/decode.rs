//! Ring-buffer records (the `wakeviz-common` ABI) to [`Event`]s. Pure byte parsing, so the fuzzer
//! and the tests reach it without a kernel.
use wakeviz_common::{
    EventHeader, EventKind, MigrateEvent, SelectEvent, SwitchEvent, UNKNOWN_U32, WakeEvent, exact,
};

use crate::event::{Comm, Event, Migrate, Select, Switch, TaskName, Wake};

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
}

/// Reads a `T` from the start of `bytes` if it is long enough.
fn read<T: Copy>(bytes: &[u8]) -> Option<T> {
    if bytes.len() < size_of::<T>() {
        return None;
    }
    // SAFETY: the length was checked; `T` is one of the wakeviz-common repr(C) integer-only
    // structs (no padding, every bit pattern valid), and read_unaligned has no alignment need.
    Some(unsafe { bytes.as_ptr().cast::<T>().read_unaligned() })
}

fn need<T: Copy>(bytes: &[u8], kind: u16) -> Result<T, DecodeError> {
    read(bytes).ok_or(DecodeError::ShortRecord {
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
    let hdr: EventHeader = read(bytes).ok_or(DecodeError::ShortHeader { len: bytes.len() })?;
    let kind = EventKind::from_u16(hdr.kind).ok_or(DecodeError::UnknownKind { kind: hdr.kind })?;
    Ok(match kind {
        EventKind::Waking | EventKind::Wakeup | EventKind::WakeupNew => {
            let e: WakeEvent = need(bytes, hdr.kind)?;
            let w = wake(&e);
            let name = TaskName {
                pid: e.hdr.pid,
                comm: Comm(e.comm),
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
        EventKind::Select => {
            let e: SelectEvent = need(bytes, hdr.kind)?;
            let has = |bit| e.exact_mask & bit != 0;
            let ev = Event::Select(Select {
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
            });
            (ev, None)
        }
    })
}

/// True if `cpu` is the ABI's "unknown" marker.
pub const fn is_unknown(cpu: u32) -> bool {
    cpu == UNKNOWN_U32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes<T: Copy>(v: &T) -> Vec<u8> {
        // SAFETY: T is a padding-free repr(C) ABI struct; viewing it as bytes is sound.
        unsafe { std::slice::from_raw_parts((v as *const T).cast::<u8>(), size_of::<T>()) }.to_vec()
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
            _pad0: 0,
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

    #[test]
    fn select_exact_bits() {
        let e = SelectEvent {
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
            exact_mask: exact::NR_RUNNING | exact::HAS_IDLE_CORES,
        };
        let (Event::Select(s), None) = decode_record(&bytes(&e)).unwrap() else {
            panic!("not a select")
        };
        assert_eq!(s.duration_ns(), 234);
        assert_eq!(s.waker_nr_running, Some(1));
        assert_eq!(s.nr_idle_scan, None);
        assert_eq!(s.has_idle_cores, Some(true));
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
}
