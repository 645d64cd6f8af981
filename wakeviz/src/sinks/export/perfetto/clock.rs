//! Event times onto Perfetto's clock. trace_processor reads ftrace timestamps as BOOTTIME (the
//! bundles say nothing else) and TracePacket timestamps default to it too, while the probes
//! stamp events with CLOCK_MONOTONIC (`bpf_ktime_get_ns`); a ClockSnapshot then ties BOOTTIME
//! to MONOTONIC and REALTIME so the UI can show wall-clock time.
use perfetto_protos::{
    builtin_clock::BuiltinClock,
    clock_snapshot::{ClockSnapshot, clock_snapshot::Clock},
    trace_packet::TracePacket,
};
use wakeviz_core::format::{ClockSnapshot as Recorded, Header, ProbeClock};

/// How one recording's times map onto BOOTTIME.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimeBase {
    snapshot: Recorded,
    /// BOOTTIME minus the probe clock, assumed constant over the capture (the machine did not
    /// suspend while recording).
    boot_minus_probe: i64,
}

impl TimeBase {
    /// The recording's clock snapshot, or for recordings made before wakeviz stored one a
    /// snapshot derived from `start_ts_ns` and `realtime_offset_ns` with BOOTTIME taken equal
    /// to MONOTONIC; the second value then says so, for a note on stderr.
    pub fn from_header(h: &Header) -> (Self, Option<String>) {
        if let Some(c) = &h.clocks {
            return (Self::new(c.clone()), None);
        }
        let derived = Recorded {
            probe_clock: ProbeClock::Monotonic,
            monotonic_ns: h.start_ts_ns,
            boottime_ns: h.start_ts_ns,
            realtime_ns: (h.start_ts_ns as i64).saturating_add(h.realtime_offset_ns),
        };
        let note = "the recording has no clock snapshot (made before wakeviz stored one): \
                    BOOTTIME is taken equal to the probes' CLOCK_MONOTONIC and REALTIME comes \
                    from realtime_offset_ns, so times are off by any time the machine spent \
                    suspended before the capture"
            .to_string();
        (Self::new(derived), Some(note))
    }

    /// A monotonic probe clock with BOOTTIME `boottime_ns - monotonic_ns` ahead: the export
    /// tests' fixed time base.
    #[cfg(test)]
    pub(super) fn monotonic_for_test(monotonic_ns: u64, boottime_ns: u64) -> Self {
        Self::new(Recorded {
            probe_clock: ProbeClock::Monotonic,
            monotonic_ns,
            boottime_ns,
            realtime_ns: 0,
        })
    }

    fn new(snapshot: Recorded) -> Self {
        let boot_minus_probe = snapshot.boot_minus_probe_ns();
        Self {
            snapshot,
            boot_minus_probe,
        }
    }

    /// A probe timestamp on BOOTTIME (0 stays the floor: a corrupt time never wraps).
    pub fn boot(&self, probe_ns: u64) -> u64 {
        probe_ns.saturating_add_signed(self.boot_minus_probe)
    }

    /// BOOTTIME of the snapshot: the earliest time a part's preamble can claim.
    pub fn start_boot(&self) -> u64 {
        self.snapshot.boottime_ns
    }

    /// The ClockSnapshot packet: BOOTTIME as the trace clock, with MONOTONIC and REALTIME
    /// (REALTIME left out if negative: Perfetto's clocks are unsigned).
    pub fn snapshot_packet(&self, sequence: u32) -> TracePacket {
        let clock = |id: BuiltinClock, ts: u64| {
            let mut c = Clock::new();
            c.set_clock_id(id as u32);
            c.set_timestamp(ts);
            c
        };
        let s = &self.snapshot;
        let mut cs = ClockSnapshot::new();
        cs.clocks
            .push(clock(BuiltinClock::BUILTIN_CLOCK_BOOTTIME, s.boottime_ns));
        cs.clocks
            .push(clock(BuiltinClock::BUILTIN_CLOCK_MONOTONIC, s.monotonic_ns));
        if let Ok(real) = u64::try_from(s.realtime_ns) {
            cs.clocks
                .push(clock(BuiltinClock::BUILTIN_CLOCK_REALTIME, real));
        }
        cs.set_primary_trace_clock(BuiltinClock::BUILTIN_CLOCK_BOOTTIME);
        let mut p = TracePacket::new();
        p.set_timestamp(s.boottime_ns);
        p.set_trusted_packet_sequence_id(sequence);
        p.set_clock_snapshot(cs);
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The built-in demo's header (a VM recording), with the clock snapshot each test sets.
    fn header(clocks: Option<Recorded>) -> Header {
        let demo: &[u8] = include_bytes!("../../../../assets/demo.wvz");
        let r = wakeviz_core::format::Reader::new(demo, std::path::Path::new("demo.wvz")).unwrap();
        let mut h = r.header().clone();
        h.start_ts_ns = 5_000;
        h.realtime_offset_ns = 1_000_000;
        h.clocks = clocks;
        h
    }

    #[test]
    fn recorded_snapshot_shifts_by_the_suspend_time() {
        let (tb, note) = TimeBase::from_header(&header(Some(Recorded {
            probe_clock: ProbeClock::Monotonic,
            monotonic_ns: 10_000,
            boottime_ns: 12_500,
            realtime_ns: 99_000,
        })));
        assert!(note.is_none());
        assert_eq!(tb.boot(10_000), 12_500);
        assert_eq!(tb.boot(20_000), 22_500);
        let p = tb.snapshot_packet(7);
        let cs = p.clock_snapshot();
        let got: Vec<(u32, u64)> = cs
            .clocks
            .iter()
            .map(|c| (c.clock_id(), c.timestamp()))
            .collect();
        assert_eq!(got, [(6, 12_500), (3, 10_000), (1, 99_000)]);
        assert_eq!(p.timestamp(), 12_500);
        assert_eq!(p.trusted_packet_sequence_id(), 7);
    }

    #[test]
    fn old_recordings_derive_the_snapshot_and_say_so() {
        let (tb, note) = TimeBase::from_header(&header(None));
        assert!(note.unwrap().contains("realtime_offset_ns"));
        assert_eq!(tb.boot(5_000), 5_000);
        let cs = tb.snapshot_packet(1).clock_snapshot().clone();
        assert_eq!(cs.clocks[2].timestamp(), 1_005_000);
    }

    #[test]
    fn negative_realtime_is_left_out_and_times_never_wrap() {
        let (tb, _) = TimeBase::from_header(&header(Some(Recorded {
            probe_clock: ProbeClock::Monotonic,
            monotonic_ns: 100,
            boottime_ns: 40,
            realtime_ns: -5,
        })));
        assert_eq!(tb.boot(10), 0);
        assert_eq!(tb.snapshot_packet(1).clock_snapshot().clocks.len(), 2);
    }
}
