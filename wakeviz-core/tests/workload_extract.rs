//! The workload extraction on synthetic recordings whose wake graph is known by construction
//! (the generator's pipe pairs ping-pong, its fan-out senders wake receivers whose reads wake
//! them back), and the rt-app file built from it.
mod analysis_support;

use analysis_support::topology;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value;
use wakeviz_core::{
    source::Batch,
    synth::{self, SynthConfig},
    workload::{Extractor, Shape, Waker, rtapp},
};

fn shape(pairs: usize, groups: usize, width: usize) -> Shape {
    let t = topology("zen3-nps2");
    let cfg = SynthConfig {
        pipe_pairs: Some(pairs),
        fanout_groups: Some(groups),
        fanout_width: Some(width),
        kworkers: false,
        ..SynthConfig::new(60_000, 5)
    };
    let mut s = synth::events(&t, &cfg).unwrap();
    let h = synth::header(&t, &cfg, &s);
    let tasks = s.tasks().to_vec();
    let events: Vec<_> = s.by_ref().collect();
    let mut x = Extractor::new(&h);
    x.on_batch(&Batch {
        tasks,
        events,
        ..Batch::default()
    });
    x.finish()
}

#[test]
fn pipe_pairs_are_each_others_wakers_and_become_one_client_stars() {
    let s = shape(3, 0, 0);
    let busy: Vec<_> = s.tasks.iter().filter(|t| t.woken >= 100).collect();
    assert_eq!(busy.len(), 6, "{:#?}", s.tasks);
    for t in &busy {
        let (w, share) = t.principal().unwrap();
        let Waker::Task(p) = w else {
            panic!("{} woken mostly by {w:?}", t.pid)
        };
        assert!(share > 0.95, "{}: {share}", t.pid);
        let partner = s.tasks.iter().find(|x| x.pid == p).unwrap();
        assert_eq!(partner.principal().unwrap().0, Waker::Task(t.pid));
        assert!(t.run.n > 0 && t.sleep.n > 0 && t.run.p50_us > 0.0);
        assert!(t.run.p10_us <= t.run.p50_us && t.run.p50_us <= t.run.p90_us);
    }
    let plan = rtapp::plan(&s);
    assert_eq!(plan.stars.len(), 3, "{plan:?}");
    for st in &plan.stars {
        assert_eq!(st.clients.len(), 1);
        let hub = s.tasks.iter().find(|t| t.pid == st.hub).unwrap();
        let c = st.clients[0];
        assert_eq!(hub.principal().unwrap().0, Waker::Task(c));
        // A round is one wakeup of the client by the hub.
        let client = s.tasks.iter().find(|t| t.pid == c).unwrap();
        assert_eq!(st.rounds, client.woken_by_task(st.hub));
    }
}

/// The generator's fan-out sender blocks when its pipes fill and its receivers' reads wake
/// it: a star whose hub answers to the receivers it wakes.
#[test]
fn a_fan_out_group_is_one_star_with_every_receiver() {
    let s = shape(0, 1, 4);
    let plan = rtapp::plan(&s);
    assert_eq!(plan.stars.len(), 1, "{plan:?}");
    let st = &plan.stars[0];
    assert_eq!(st.clients.len(), 4, "{plan:?}");
    let sent: Vec<u64> = st
        .clients
        .iter()
        .map(|c| {
            s.tasks
                .iter()
                .find(|t| t.pid == *c)
                .unwrap()
                .woken_by_task(st.hub)
        })
        .collect();
    let mean = sent.iter().sum::<u64>() as f64 / sent.len() as f64;
    assert_eq!(st.rounds, mean.round() as u64, "{sent:?}");
}

/// A JSON object's entries in file order (rt-app runs a phase's events in that order; a
/// `serde_json::Value` map sorts them).
struct Ordered<T>(Vec<(String, T)>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Ordered<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Ordered<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Ordered<T>, A::Error> {
                let mut v = Vec::new();
                while let Some(e) = m.next_entry()? {
                    v.push(e);
                }
                Ok(Ordered(v))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

#[derive(serde::Deserialize)]
struct Thread {
    phases: Ordered<Ordered<Value>>,
}

#[derive(serde::Deserialize)]
struct File {
    tasks: Ordered<Thread>,
}

/// Every resource the file waits on is signalled by another thread, every mutex a wait
/// names is locked by the waiter's star before, and the event keys run in order: what
/// rt-app 1.0 needs to run the file without a lost wakeup.
#[test]
fn the_rt_app_file_is_consistent() {
    let s = shape(2, 0, 0);
    let f = rtapp::rt_app(&s);
    let j: Value = serde_json::from_str(&f.json).unwrap();
    assert_eq!(j["global"]["duration"], -1);
    let file: File = serde_json::from_str(&f.json).unwrap();
    assert_eq!(file.tasks.0.len(), f.threads);
    let (mut waits, mut signals, mut locks) = (Vec::new(), Vec::new(), Vec::new());
    for (name, t) in &file.tasks.0 {
        assert!(name.len() <= 15, "{name}: the kernel keeps 15 bytes");
        for (_, phase) in &t.phases.0 {
            let mut last = 0;
            for (k, v) in &phase.0 {
                if k == "loop" {
                    assert!(v.as_i64().unwrap() >= 1);
                    continue;
                }
                if k == "cpus" {
                    assert!(v.as_array().unwrap().iter().all(Value::is_u64), "{v}");
                    continue;
                }
                let n: usize = k.trim_start_matches(char::is_alphabetic).parse().unwrap();
                assert_eq!(n, last + 1, "{name}: {k} out of order");
                last = n;
                match k.trim_end_matches(char::is_numeric) {
                    "wait" => waits.push((
                        v["ref"].as_str().unwrap().to_owned(),
                        v["mutex"].as_str().unwrap().to_owned(),
                    )),
                    "signal" => signals.push(v.as_str().unwrap().to_owned()),
                    "lock" => locks.push(v.as_str().unwrap().to_owned()),
                    "unlock" | "runtime" | "sleep" => {}
                    other => panic!("{name}: unexpected event {other}"),
                }
            }
        }
    }
    assert!(!waits.is_empty());
    for (r, m) in &waits {
        assert!(signals.contains(r), "{r} is waited on, never signalled");
        assert!(locks.contains(m), "{m} is waited with, never locked");
    }
}
