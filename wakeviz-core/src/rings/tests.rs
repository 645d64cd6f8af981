use super::*;
use crate::topology::fixture;

fn topo(name: &str) -> Topology {
    fixture::named_topology(name).unwrap()
}

fn every_cpu_once(p: &RingPlan, t: &Topology) {
    let mut all: Vec<u32> = p.rings.iter().flatten().copied().collect();
    all.sort_unstable();
    let want: Vec<u32> = t.cpus.iter().map(|c| c.cpu).collect();
    assert_eq!(all, want);
    let map = p.ring_of_cpu();
    for (r, cpus) in p.rings.iter().enumerate() {
        for &c in cpus {
            assert_eq!(map[c as usize], r as u32);
        }
    }
}

#[test]
fn one_ring_per_llc_of_at_most_16_cpus() {
    // Zen3 2 x 64C/128T: 16 LLCs of 8 cores / 16 threads, each its own ring.
    let t = topo("zen3-nps1");
    let p = RingPlan::new(&t, None);
    assert_eq!(p.len(), 16);
    every_cpu_once(&p, &t);
    for cpus in &p.rings {
        let llc = t.cpu(cpus[0]).unwrap().llc;
        assert!(
            cpus.iter().all(|&c| t.cpu(c).unwrap().llc == llc),
            "a ring spans LLCs"
        );
        assert_eq!(cpus.len(), 16);
    }
    // Xeon: one 24-CPU LLC per socket, split in two rings of 12.
    let t = topo("xeon-e5-2690v3");
    let p = RingPlan::new(&t, None);
    assert_eq!(
        p.rings.iter().map(Vec::len).collect::<Vec<_>>(),
        [12, 12, 12, 12]
    );
    every_cpu_once(&p, &t);
    // This machine: one ring, as before.
    let t = topo("vm-2cpu");
    assert_eq!(RingPlan::new(&t, None).rings, [vec![0, 1]]);
}

#[test]
fn forced_counts_cut_evenly_and_stay_in_bounds() {
    let t = topo("vm-2cpu");
    assert_eq!(RingPlan::new(&t, Some(2)).rings, [vec![0], vec![1]]);
    assert_eq!(
        RingPlan::new(&t, Some(9)).len(),
        2,
        "never more rings than CPUs"
    );
    assert_eq!(RingPlan::new(&t, Some(0)).len(), 1);
    let t = topo("zen3-nps4");
    for n in [1, 3, 7, 64, 500] {
        let p = RingPlan::new(&t, Some(n));
        assert_eq!(p.len(), n.min(MAX_RINGS));
        every_cpu_once(&p, &t);
        let sizes: Vec<usize> = p.rings.iter().map(Vec::len).collect();
        assert!(
            sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1,
            "{sizes:?}"
        );
    }
    let t = topo("irregular");
    every_cpu_once(&RingPlan::new(&t, None), &t);
}
