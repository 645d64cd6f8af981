//! Item 3, the merge: can one consumer thread put 256 CPUs' records back in time order? The
//! synthetic 256-CPU stream is delivered as the live capture delivers it: each CPU's records
//! in per-CPU batches (sent at 42 records or 2 ms of age), each batch to its CPU's ring (16
//! CPUs a ring, the default rule on that machine), each ring's consumer handing over what it
//! read every 10 ms of stream time with its clock, and a reading of the held batches every
//! 5 ms. `wakeviz_core::merge::Merger` then runs alone on one thread over that input.
use std::time::Duration;

use wakeviz_core::{event::Event, merge::Merger};

use super::thread_cpu;

const CPUS_PER_RING: u32 = 16;
const BATCH_RECORDS: usize = 42;
const BATCH_AGE_NS: u64 = 2_000_000;
const HAND_OVER_NS: u64 = 10_000_000;
const READING_NS: u64 = 5_000_000;

enum Input {
    Chunk {
        ring: usize,
        events: Vec<Event>,
        clock_ns: u64,
    },
    Reading {
        at_ns: u64,
        oldest_ns: Option<u64>,
    },
}

/// The deliveries of `events` (in time order), in the order the consumer would see them.
fn deliveries(events: &[Event], rings: usize) -> Vec<Input> {
    // (sent_ns, ring, event) for every record, and (stamp, sent) for the readings.
    let mut sent: Vec<(u64, usize, Event)> = Vec::with_capacity(events.len());
    let mut batches: std::collections::HashMap<u32, Vec<Event>> = Default::default();
    let flush = |b: &mut Vec<Event>, at: u64, sent: &mut Vec<(u64, usize, Event)>, cpu: u32| {
        let ring = (cpu / CPUS_PER_RING) as usize;
        for e in b.drain(..) {
            sent.push((at, ring, e));
        }
    };
    for e in events {
        let cpu = e.cpu();
        let b = batches.entry(cpu).or_default();
        let old = b
            .first()
            .is_some_and(|f| e.ts_ns() - f.ts_ns() > BATCH_AGE_NS);
        b.push(e.clone());
        if b.len() >= BATCH_RECORDS || old {
            flush(b, e.ts_ns(), &mut sent, cpu);
        }
    }
    let end = events.last().map_or(0, Event::ts_ns);
    for (cpu, mut b) in batches {
        flush(&mut b, end, &mut sent, cpu);
    }
    sent.sort_by_key(|s| s.0);
    let start = events.first().map_or(0, Event::ts_ns);
    let mut out = Vec::new();
    let mut per_ring: Vec<Vec<Event>> = vec![Vec::new(); rings];
    let mut i = 0;
    let mut t = start;
    let mut next_reading = start;
    while t <= end + HAND_OVER_NS {
        t += HAND_OVER_NS;
        while i < sent.len() && sent[i].0 < t {
            let (_, r, e) = &sent[i];
            per_ring[*r].push(e.clone());
            i += 1;
        }
        while next_reading < t {
            // The oldest record still in a batch at the reading: a record sent after it.
            let oldest = sent[i..]
                .iter()
                .take_while(|s| s.0 < next_reading + BATCH_AGE_NS * 2)
                .filter(|s| s.0 >= next_reading && s.2.ts_ns() <= next_reading)
                .map(|s| s.2.ts_ns())
                .min();
            out.push(Input::Reading {
                at_ns: next_reading,
                oldest_ns: oldest,
            });
            next_reading += READING_NS;
        }
        for (ring, evs) in per_ring.iter_mut().enumerate() {
            out.push(Input::Chunk {
                ring,
                events: std::mem::take(evs),
                clock_ns: t,
            });
        }
    }
    out
}

pub struct MergePass {
    pub events: u64,
    pub cpu: Duration,
    pub late: u64,
}

/// Builds the deliveries once, then times the merge over them `passes` times.
pub fn passes(events: &[Event], nr_cpus: usize, passes: usize) -> anyhow::Result<Vec<MergePass>> {
    let rings = nr_cpus.div_ceil(CPUS_PER_RING as usize).max(1);
    let input = deliveries(events, rings);
    let mut out = Vec::with_capacity(passes);
    for _ in 0..passes {
        let input: Vec<Input> = input
            .iter()
            .map(|i| match i {
                Input::Chunk {
                    ring,
                    events,
                    clock_ns,
                } => Input::Chunk {
                    ring: *ring,
                    events: events.clone(),
                    clock_ns: *clock_ns,
                },
                Input::Reading { at_ns, oldest_ns } => Input::Reading {
                    at_ns: *at_ns,
                    oldest_ns: *oldest_ns,
                },
            })
            .collect();
        let c0 = thread_cpu();
        let mut m = Merger::new(rings, wakeviz_core::merge::DEFAULT_CAP).with_batches();
        let mut released = Vec::with_capacity(8192);
        let mut n = 0u64;
        let mut last = 0u64;
        let mut sorted = true;
        let mut take = |released: &mut Vec<Event>| {
            for e in released.drain(..) {
                sorted &= e.ts_ns() >= last;
                last = e.ts_ns();
                n += 1;
            }
        };
        for i in input {
            match i {
                Input::Chunk {
                    ring,
                    events,
                    clock_ns,
                } => m.push(ring, events, clock_ns, &mut released),
                Input::Reading { at_ns, oldest_ns } => {
                    m.note_batches(at_ns, at_ns, oldest_ns, &mut released);
                }
            }
            take(&mut released);
        }
        for r in 0..rings {
            m.close(r, &mut released);
        }
        m.finish(&mut released);
        take(&mut released);
        let cpu = thread_cpu() - c0;
        anyhow::ensure!(sorted, "the merge released events out of order");
        anyhow::ensure!(
            n + m.stats().late_events == events.len() as u64,
            "the merge lost events: {n} released + {} late of {}",
            m.stats().late_events,
            events.len()
        );
        out.push(MergePass {
            events: n,
            cpu,
            late: m.stats().late_events,
        });
    }
    Ok(out)
}
