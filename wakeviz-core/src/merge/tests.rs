//! Property tests on seeded, shuffled synthetic streams: several CPUs per ring, records
//! reordered inside a ring by less than the grace, rings delivered in random interleavings
//! with the clock readings a real consumer would report.
use super::*;
use crate::event::Switch;

/// The tests' grace: small against their streams (a few ms each), so the watermark releases
/// events mid-stream rather than all at the end.
const G: u64 = 2_000_000;

/// splitmix64: a seeded, reproducible source of shuffles.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn ev(ts: u64, cpu: u32, id: u32) -> Event {
    Event::Switch(Switch {
        ts_ns: ts,
        cpu,
        prev_pid: id,
        next_pid: 0,
        prev_state: 0,
        prev_prio: 0,
        next_prio: 0,
    })
}

fn id(e: &Event) -> u32 {
    match e {
        Event::Switch(s) => s.prev_pid,
        _ => u32::MAX,
    }
}

/// One ring's deliveries: (events, clock read before the drain).
type Deliveries = Vec<(Vec<Event>, u64)>;

/// Builds `rings` rings of `cpus_per_ring` CPUs each. Every CPU stamps events at random gaps;
/// a ring's records are ordered by the time they took the ring's lock, up to `jitter` ns after
/// their stamp (so a ring is out of order by less than `jitter`). A consumer drains at random
/// times: the clock it reports is the drain time, and it gets every record locked before it.
fn streams(
    rng: &mut Rng,
    rings: usize,
    cpus_per_ring: usize,
    per_cpu: usize,
    jitter: u64,
) -> Vec<Deliveries> {
    let mut next_id = 0u32;
    let mut out = Vec::new();
    for r in 0..rings {
        let mut recs: Vec<(u64, Event)> = Vec::new();
        for c in 0..cpus_per_ring {
            let cpu = (r * cpus_per_ring + c) as u32;
            let mut ts = 1_000 + rng.below(50_000);
            for _ in 0..per_cpu {
                ts += 1 + rng.below(40_000);
                let locked = ts + rng.below(jitter);
                recs.push((locked, ev(ts, cpu, next_id)));
                next_id += 1;
            }
        }
        recs.sort_by_key(|(l, _)| *l);
        let mut deliveries = Vec::new();
        let mut i = 0;
        let mut clock = 0u64;
        while i < recs.len() {
            clock += 1 + rng.below(3_000_000);
            let start = i;
            while i < recs.len() && recs[i].0 < clock {
                i += 1;
            }
            deliveries.push((
                recs[start..i].iter().map(|(_, e)| e.clone()).collect(),
                clock,
            ));
        }
        out.push(deliveries);
    }
    out
}

/// Feeds the rings' deliveries in a random interleaving (each ring's own order kept), then
/// closes every ring.
fn run(rng: &mut Rng, m: &mut Merger, rings: Vec<Deliveries>) -> Vec<Event> {
    let mut queues: Vec<std::collections::VecDeque<(Vec<Event>, u64)>> =
        rings.into_iter().map(Into::into).collect();
    let mut out = Vec::new();
    loop {
        let open: Vec<usize> = (0..queues.len())
            .filter(|&r| !queues[r].is_empty())
            .collect();
        if open.is_empty() {
            break;
        }
        let r = open[rng.below(open.len() as u64) as usize];
        if let Some((evs, clock)) = queues[r].pop_front() {
            m.push(r, evs.iter().cloned(), clock, &mut out);
            if queues[r].is_empty() {
                m.close(r, &mut out);
            }
        }
    }
    m.finish(&mut out);
    out
}

fn total(rings: &[Deliveries]) -> usize {
    rings.iter().flatten().map(|(e, _)| e.len()).sum()
}

fn assert_sorted(out: &[Event]) {
    for w in out.windows(2) {
        assert!(
            w[0].ts_ns() <= w[1].ts_ns(),
            "out of order: {:?} then {:?}",
            w[0],
            w[1]
        );
    }
}

#[test]
fn shuffled_streams_come_out_sorted_and_complete() {
    for seed in 0..40u64 {
        let mut rng = Rng(seed);
        let rings = 1 + rng.below(8) as usize;
        let per_ring = 1 + rng.below(4) as usize;
        let input = streams(&mut rng, rings, per_ring, 200, G / 2);
        let n = total(&input);
        let mut want: Vec<u32> = input
            .iter()
            .flatten()
            .flat_map(|(e, _)| e.iter().map(id))
            .collect();
        want.sort_unstable();
        let mut m = Merger::with_grace(rings, DEFAULT_CAP, G);
        let out = run(&mut rng, &mut m, input);
        assert_sorted(&out);
        assert_eq!(m.stats(), MergeStats::default(), "seed {seed}");
        let mut got: Vec<u32> = out.iter().map(id).collect();
        got.sort_unstable();
        assert_eq!(got.len(), n, "seed {seed}");
        assert_eq!(got, want, "seed {seed}: events lost or duplicated");
        assert_eq!(m.held(), 0);
    }
}

#[test]
fn the_watermark_waits_for_a_slow_ring() {
    let mut m = Merger::with_grace(2, DEFAULT_CAP, 0);
    let mut out = Vec::new();
    m.push(0, [ev(10, 0, 0), ev(30, 0, 1)], 40, &mut out);
    assert!(out.is_empty(), "ring 1 has not reported: nothing may go");
    m.push(1, [ev(20, 1, 2)], 25, &mut out);
    assert_eq!(out.iter().map(id).collect::<Vec<_>>(), [0, 2]);
    // An idle ring's clock alone moves the watermark.
    m.push(1, [], 100, &mut out);
    assert_eq!(out.iter().map(id).collect::<Vec<_>>(), [0, 2, 1]);
}

#[test]
fn late_events_are_counted_exactly_and_left_out() {
    let mut late_seen = 0;
    for seed in 100..130u64 {
        let mut rng = Rng(seed);
        let rings = 2 + rng.below(6) as usize;
        let mut input = streams(&mut rng, rings, 2, 150, G / 2);
        // Stamped at 1 ns, before every real event: late exactly when something was already
        // released when they arrive.
        let mut injected = Vec::new();
        for k in 0..20u32 {
            let r = rng.below(rings as u64) as usize;
            let d = rng.below(input[r].len() as u64) as usize;
            let tag = 1_000_000 + k;
            input[r][d].0.push(ev(1, r as u32, tag));
            injected.push(tag);
        }
        let n = total(&input);
        let mut m = Merger::with_grace(rings, DEFAULT_CAP, G);
        // Replay by hand to know, at each injected event's arrival, whether anything had gone.
        let mut queues: Vec<std::collections::VecDeque<(Vec<Event>, u64)>> =
            input.into_iter().map(Into::into).collect();
        let mut out = Vec::new();
        let mut expect_late = 0;
        loop {
            let open: Vec<usize> = (0..rings).filter(|&r| !queues[r].is_empty()).collect();
            if open.is_empty() {
                break;
            }
            let r = open[rng.below(open.len() as u64) as usize];
            let Some((evs, clock)) = queues[r].pop_front() else {
                break;
            };
            let released_before = !out.is_empty();
            let ts1_before = evs.iter().filter(|e| e.ts_ns() == 1).count() as u64;
            // Within a batch, real events come first, so earlier records of this batch can
            // only be released by the push itself (after every insert): the flag above is exact.
            if released_before {
                expect_late += ts1_before;
            }
            m.push(r, evs.iter().cloned(), clock, &mut out);
            if queues[r].is_empty() {
                m.close(r, &mut out);
            }
        }
        m.finish(&mut out);
        assert_sorted(&out);
        assert_eq!(m.stats().late_events, expect_late, "seed {seed}");
        assert_eq!(
            out.len() as u64 + m.stats().late_events,
            n as u64,
            "seed {seed}"
        );
        let passed = out.iter().filter(|e| injected.contains(&id(e))).count() as u64;
        assert_eq!(passed + expect_late, 20, "seed {seed}");
        late_seen += expect_late;
    }
    // After the first late event the grace widens past the whole stream, so about one a seed.
    assert!(
        late_seen >= 15,
        "the seeds injected too few late events: {late_seen}"
    );
}

#[test]
fn a_late_event_widens_the_grace() {
    let mut m = Merger::with_grace(1, DEFAULT_CAP, 10);
    let mut out = Vec::new();
    m.push(0, [ev(100, 0, 0)], 200, &mut out);
    assert_eq!(out.len(), 1);
    m.push(0, [ev(70, 0, 1)], 200, &mut out);
    assert_eq!(m.stats().late_events, 1);
    assert_eq!(m.grace_ns(), 60, "twice the 30 ns lateness");
    // Now held back further: 250 - 60 = 190 releases 180 but not 195.
    m.push(0, [ev(180, 0, 2), ev(195, 0, 3)], 250, &mut out);
    assert_eq!(out.iter().map(id).collect::<Vec<_>>(), [0, 2]);
}

#[test]
fn the_cap_bounds_memory_and_counts_what_it_forced() {
    let mut rng = Rng(7);
    let input = streams(&mut rng, 4, 2, 500, G / 2);
    let n = total(&input) as u64;
    let mut m = Merger::with_grace(4, 64, G);
    let mut max_held = 0;
    let mut queues: Vec<std::collections::VecDeque<(Vec<Event>, u64)>> =
        input.into_iter().map(Into::into).collect();
    let mut out = Vec::new();
    // Ring 3 is starved until the end: without the cap everything would wait for it.
    for r in [0usize, 1, 2, 3] {
        while let Some((evs, clock)) = queues[r].pop_front() {
            m.push(r, evs.iter().cloned(), clock, &mut out);
            max_held = max_held.max(m.held());
        }
        m.close(r, &mut out);
    }
    m.finish(&mut out);
    let s = m.stats();
    assert!(s.forced > 0);
    assert!(max_held <= 64 + 500 * 2, "held {max_held}");
    assert_eq!(out.len() as u64 + s.late_events, n);
    assert!(
        s.late_events > 0,
        "ring 3's old events came after forced releases"
    );
    assert_sorted(&out);
}

/// One batch reading: clock before the first slot, clock after the last, oldest stamp seen.
type Reading = (u64, u64, Option<u64>);

/// Per-CPU batches: each CPU's records wait in its batch from their stamp until the batch is
/// sent (a random hold, up to many graces), then go to the CPU's ring. Returns the rings'
/// deliveries and the batch readings a watcher would take: each spans up to a grace, and each
/// CPU's slot is read at its own moment inside it.
fn batched_streams(
    rng: &mut Rng,
    rings: usize,
    cpus_per_ring: usize,
    per_cpu: usize,
) -> (Vec<Deliveries>, Vec<Reading>) {
    let mut next_id = 0u32;
    let mut out = Vec::new();
    // (cpu, stamp, sent) of every record, for the readings.
    let mut held: Vec<(u32, u64, u64)> = Vec::new();
    let mut end = 0u64;
    for r in 0..rings {
        let mut sent: Vec<(u64, Event)> = Vec::new();
        for c in 0..cpus_per_ring {
            let cpu = (r * cpus_per_ring + c) as u32;
            let mut t = 1_000 + rng.below(50_000);
            let mut left = per_cpu;
            while left > 0 {
                let k = (1 + rng.below(40) as usize).min(left);
                left -= k;
                let mut stamps = Vec::with_capacity(k);
                for _ in 0..k {
                    t += 1 + rng.below(40_000);
                    stamps.push(t);
                }
                // Sent when full, on the next record's age check, or by a kick: up to 5 graces
                // after the last record, so the rings' clocks alone would overtake them.
                let send = t + rng.below(5 * G);
                for ts in stamps {
                    sent.push((send, ev(ts, cpu, next_id)));
                    held.push((cpu, ts, send));
                    next_id += 1;
                }
                t = send;
            }
            end = end.max(t);
        }
        sent.sort_by_key(|(s, _)| *s);
        let mut deliveries = Vec::new();
        let (mut i, mut clock) = (0, 0u64);
        while i < sent.len() {
            clock += 1 + rng.below(3_000_000);
            let start = i;
            while i < sent.len() && sent[i].0 < clock {
                i += 1;
            }
            deliveries.push((
                sent[start..i].iter().map(|(_, e)| e.clone()).collect(),
                clock,
            ));
        }
        out.push(deliveries);
    }
    let ncpus = rings * cpus_per_ring;
    let mut readings = Vec::new();
    let mut at = 0u64;
    while at <= end + 3 * G {
        at += 1 + rng.below(2 * G);
        let done = at + rng.below(G);
        let slot_read: Vec<u64> = (0..ncpus).map(|_| at + rng.below(done - at + 1)).collect();
        let oldest = held
            .iter()
            .filter(|&&(cpu, ts, send)| {
                let r = slot_read[cpu as usize];
                ts <= r && r < send
            })
            .map(|&(_, ts, _)| ts)
            .min();
        readings.push((at, done, oldest));
        at = done;
    }
    (out, readings)
}

/// The same readings, each taken as if it had ended where it began.
fn readings_at_start(r: &[Reading]) -> Vec<Reading> {
    r.iter().map(|&(at, _, oldest)| (at, at, oldest)).collect()
}

/// Like [`run`], with the batch readings as one more source in the interleaving.
fn run_batched(
    rng: &mut Rng,
    m: &mut Merger,
    rings: Vec<Deliveries>,
    readings: Vec<Reading>,
) -> Vec<Event> {
    let mut queues: Vec<std::collections::VecDeque<(Vec<Event>, u64)>> =
        rings.into_iter().map(Into::into).collect();
    let mut readings: std::collections::VecDeque<_> = readings.into();
    let mut out = Vec::new();
    loop {
        let mut open: Vec<usize> = (0..queues.len())
            .filter(|&r| !queues[r].is_empty())
            .collect();
        if !readings.is_empty() {
            open.push(usize::MAX);
        }
        if open.is_empty() {
            break;
        }
        match open[rng.below(open.len() as u64) as usize] {
            usize::MAX => {
                if let Some((at, done, oldest)) = readings.pop_front() {
                    m.note_batches(at, done, oldest, &mut out);
                }
            }
            r => {
                if let Some((evs, clock)) = queues[r].pop_front() {
                    m.push(r, evs, clock, &mut out);
                    if queues[r].is_empty() {
                        m.close(r, &mut out);
                    }
                }
            }
        }
    }
    m.finish(&mut out);
    out
}

#[test]
fn batched_streams_come_out_sorted_complete_and_never_late() {
    let (mut late_without, mut late_at_start) = (0, 0);
    for seed in 200..240u64 {
        let mut rng = Rng(seed);
        let rings = 1 + rng.below(6) as usize;
        let per_ring = 1 + rng.below(4) as usize;
        let (input, readings) = batched_streams(&mut rng, rings, per_ring, 150);
        let n = total(&input);
        let mut m = Merger::with_grace(rings, DEFAULT_CAP, G).with_batches();
        let out = run_batched(&mut rng, &mut m, input.clone(), readings.clone());
        assert_sorted(&out);
        assert_eq!(m.stats(), MergeStats::default(), "seed {seed}");
        assert_eq!(out.len(), n, "seed {seed}");
        // The controls: the readings taken as instants at their start, and no readings at
        // all (the rings' clocks alone).
        let mut instant = Merger::with_grace(rings, DEFAULT_CAP, G).with_batches();
        let starts = readings_at_start(&readings);
        let _ = run_batched(&mut rng, &mut instant, input.clone(), starts);
        late_at_start += instant.stats().late_events;
        let mut plain = Merger::with_grace(rings, DEFAULT_CAP, G);
        let _ = run(&mut rng, &mut plain, input);
        late_without += plain.stats().late_events;
    }
    assert!(
        late_without > 0,
        "the batches never outwaited the grace: the test would pass without the readings"
    );
    assert!(
        late_at_start > 0,
        "no batch left during a reading: the test would pass with instantaneous readings"
    );
}

#[test]
fn nothing_is_released_before_a_usable_batch_reading() {
    let mut m = Merger::with_grace(1, DEFAULT_CAP, 0).with_batches();
    let mut out = Vec::new();
    m.push(0, [ev(10, 0, 0), ev(30, 0, 1)], 100, &mut out);
    assert!(out.is_empty(), "no reading yet: a batch may hold anything");
    // Read at 50 with a record stamped 20 still held: up to 20.
    m.note_batches(50, 50, Some(20), &mut out);
    assert_eq!(out.iter().map(id).collect::<Vec<_>>(), [0]);
    // A reading later than the ring's clock is not usable yet.
    m.note_batches(150, 150, None, &mut out);
    assert_eq!(out.len(), 1);
    m.push(0, [ev(20, 0, 2)], 160, &mut out);
    assert_eq!(out.iter().map(id).collect::<Vec<_>>(), [0, 2, 1]);
}

/// The capture's race, step by step: the slots are read between 100 and 120; CPU 0's batch
/// (a record stamped 10) leaves at 110, so its slot reads empty; ring 0 was drained at 105, before
/// the batch arrived. Waiting only for the rings to pass 100 releases 50 ahead of 10.
#[test]
fn late_when_a_batch_leaves_during_the_reading() {
    let run = |from: u64, until: u64| {
        let mut m = Merger::with_grace(2, DEFAULT_CAP, 0).with_batches();
        let mut out = Vec::new();
        m.note_batches(from, until, None, &mut out);
        m.push(0, [], 105, &mut out);
        m.push(1, [ev(50, 1, 1)], 200, &mut out);
        m.push(0, [ev(10, 0, 0)], 130, &mut out);
        m.finish(&mut out);
        (
            m.stats().late_events,
            out.iter().map(id).collect::<Vec<_>>(),
        )
    };
    assert_eq!(run(100, 120), (0, vec![0, 1]));
    // The reading taken as an instant at its start: the batch is overtaken.
    assert_eq!(run(100, 100), (1, vec![1]));
}
