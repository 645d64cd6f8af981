//! The inverse of [`super::decode_record`]: the ring-buffer record a probe would have emitted
//! for an event, so benches and tests feed the capture's decoder without a kernel. It sits
//! beside the decoder so that a kind's two directions change together. A select record is
//! written without the ABI-2 inputs extension (its inputs decode as unknown).
use wakeviz_common::{
    COMM_LEN, EventHeader, EventKind, MigrateEvent, SelectEvent, SwitchEvent, UNKNOWN_U32,
    WakeEvent, exact,
};
use zerocopy::{Immutable, IntoBytes};

use crate::event::{Event, Select};

/// Appends `e`'s record to `out`; `comm` names a task as the probe would have read it. CPU
/// numbers past the ABI's `u16` are cut (the probes run on CPUs that fit).
pub fn encode_record(out: &mut Vec<u8>, e: &Event, comm: &dyn Fn(u32) -> [u8; COMM_LEN]) {
    let hdr = |kind: EventKind, pid: u32| EventHeader {
        ts_ns: e.ts_ns(),
        kind: kind as u16,
        cpu: e.cpu() as u16,
        pid,
    };
    match e {
        Event::Waking(w) | Event::Wakeup(w) | Event::WakeupNew(w) => {
            let kind = match e {
                Event::Waking(_) => EventKind::Waking,
                Event::Wakeup(_) => EventKind::Wakeup,
                _ => EventKind::WakeupNew,
            };
            put(
                out,
                &WakeEvent {
                    hdr: hdr(kind, w.pid),
                    target_cpu: w.target_cpu,
                    waker_pid: w.waker_pid,
                    prio: w.prio,
                    tgid: 0,
                    comm: comm(w.pid),
                },
            );
        }
        Event::Switch(s) => put(
            out,
            &SwitchEvent {
                hdr: hdr(EventKind::Switch, s.prev_pid),
                next_pid: s.next_pid,
                prev_state: s.prev_state,
                prev_prio: s.prev_prio,
                next_prio: s.next_prio,
                next_comm: comm(s.next_pid),
            },
        ),
        Event::Migrate(m) => put(
            out,
            &MigrateEvent {
                hdr: hdr(EventKind::Migrate, m.pid),
                orig_cpu: m.orig_cpu,
                dest_cpu: m.dest_cpu,
            },
        ),
        Event::Select(s) => put(out, &select(s, hdr(EventKind::Select, s.pid))),
        #[allow(
            unreachable_patterns,
            reason = "a kind no probe emits has no record; it never reaches the capture's decoder"
        )]
        _ => {}
    }
}

fn select(s: &Select, hdr: EventHeader) -> SelectEvent {
    let mut mask = 0;
    let mut bit = |o: Option<u32>, b: u32| {
        if o.is_some() {
            mask |= b;
        }
        o.unwrap_or(0)
    };
    let waker_nr_running = bit(s.waker_nr_running, exact::NR_RUNNING);
    let nr_idle_scan = bit(s.nr_idle_scan, exact::NR_IDLE_SCAN);
    let has_idle_cores = bit(s.has_idle_cores.map(u32::from), exact::HAS_IDLE_CORES);
    let prev_nr_idle_scan = bit(s.prev_nr_idle_scan, exact::PREV_NR_IDLE_SCAN);
    let prev_has_idle_cores = bit(
        s.prev_has_idle_cores.map(u32::from),
        exact::PREV_HAS_IDLE_CORES,
    );
    let scan = s.scan.unwrap_or_default();
    if s.scan.is_some() {
        mask |= exact::SCAN;
    }
    SelectEvent {
        hdr,
        entry_ts_ns: s.entry_ts_ns,
        prev_cpu: s.prev_cpu,
        wake_flags: s.wake_flags,
        chosen_cpu: s.chosen_cpu,
        waker_pid: s.waker_pid,
        waker_nr_running,
        nr_idle_scan,
        has_idle_cores,
        prev_nr_idle_scan,
        prev_has_idle_cores,
        exact_mask: mask,
        idle_scan_ns: s.idle_scan_ns.unwrap_or(UNKNOWN_U32),
        scan_cpus: scan.cpus,
        scan_path: scan.path,
    }
}

fn put<T: IntoBytes + Immutable>(out: &mut Vec<u8>, v: &T) {
    out.extend_from_slice(v.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        decode::decode_record,
        event::SelectInputs,
        synth::{self, SynthConfig},
        topology::fixture,
    };

    /// Every kind the generator makes decodes back to itself, and the record carries the name
    /// the probe would have read.
    #[test]
    fn decoding_an_encoded_event_gives_it_back() {
        let topo = fixture::named_topology("zen3-nps1").expect("fixture");
        let comm = |pid: u32| {
            let mut c = [0u8; COMM_LEN];
            c[..4].copy_from_slice(&pid.to_le_bytes());
            c
        };
        let mut kinds = std::collections::BTreeSet::new();
        for e in synth::events(&topo, &SynthConfig::new(20_000, 7)).expect("synth") {
            let mut want = e.clone();
            if let Event::Select(s) = &mut want {
                s.inputs = SelectInputs::default();
            }
            let mut buf = Vec::new();
            encode_record(&mut buf, &e, &comm);
            let (got, name) = decode_record(&buf).expect("decodes");
            assert_eq!(got, want);
            if let Some(n) = name {
                assert_eq!(n.comm.0, comm(n.pid));
            }
            kinds.insert(e.kind().name());
        }
        assert!(kinds.len() >= 5, "{kinds:?}");
    }
}
