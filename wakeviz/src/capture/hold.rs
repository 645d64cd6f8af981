//! How long events waited between their probe's stamp and the analyses. Until every ring has
//! delivered and the first batch reading is in, the merge holds everything; that start-up hold
//! (130-250 ms in short runs here) is kept apart from the steady-state lag a live view shows.
use wakeviz_core::event::Event;

/// How long events waited between their probe and the analyses, start-up apart.
#[derive(Default)]
pub(super) struct Hold {
    /// When the first batch of events was handed over (`drain::now_ns` clock).
    pub(super) first_release_ns: Option<u64>,
    pub(super) steady_ns: u64,
    pub(super) startup_ns: u64,
}

impl Hold {
    /// Notes a batch handed over at `now_ns`: an event stamped before the first hand-over
    /// (this one included, the first time) counts as start-up.
    pub(super) fn note(&mut self, events: &[Event], now_ns: u64) {
        let first = *self.first_release_ns.get_or_insert(now_ns);
        for e in events {
            let (ts, held) = (e.ts_ns(), now_ns.saturating_sub(e.ts_ns()));
            let max = if ts < first {
                &mut self.startup_ns
            } else {
                &mut self.steady_ns
            };
            *max = (*max).max(held);
        }
    }
}

#[cfg(test)]
mod tests {
    use wakeviz_core::event::{Migrate, Wake};

    use super::*;

    fn at(ts_ns: u64) -> Event {
        Event::Migrate(Migrate {
            ts_ns,
            cpu: 0,
            pid: 1,
            orig_cpu: 0,
            dest_cpu: 1,
        })
    }

    #[test]
    fn start_up_and_steady_state_apart() {
        let mut h = Hold::default();
        // The first hand-over at 1000: everything in it is start-up.
        h.note(&[at(100), at(900)], 1_000);
        assert_eq!((h.startup_ns, h.steady_ns), (900, 0));
        // A late start-up event and a steady one in the same batch.
        h.note(&[at(50), at(1_500)], 1_600);
        assert_eq!((h.startup_ns, h.steady_ns), (1_550, 100));
        let w = Wake {
            ts_ns: 2_000,
            cpu: 0,
            pid: 1,
            target_cpu: 1,
            waker_pid: 2,
            prio: 120,
        };
        h.note(&[Event::Waking(w)], 2_300);
        assert_eq!((h.startup_ns, h.steady_ns), (1_550, 300));
    }
}
