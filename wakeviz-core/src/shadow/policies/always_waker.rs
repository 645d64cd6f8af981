//! Test-only policy proving that a policy is one file plus one registry line: it has its own
//! rules, its own state fed by the event hook, and its own caveat, and shows up in the typed
//! report, the JSON and the text report without any other file knowing about it.
//!
//! The policy: the waker's CPU, no idle test; before it has seen any `sched_switch` (its
//! private state), the previous CPU.
use crate::{
    event::{Event, Kind},
    shadow::{
        policy::{Ctx, Decision, Policy, Rule, Scratch},
        state::State,
        topo::ShadowTopo,
    },
};

#[derive(Default)]
pub struct AlwaysWaker {
    switches: u64,
}

const WAKER_CPU: Rule = Rule::own(0);
const NO_SWITCH_YET: Rule = Rule::own(1);

impl Policy for AlwaysWaker {
    fn name(&self) -> &'static str {
        "always_waker"
    }
    fn describe(&self) -> &'static str {
        "test: the waker's CPU, no search"
    }
    fn rules(&self) -> &'static [&'static str] {
        &["waker_cpu", "no_switch_seen_yet"]
    }
    fn approximations(&self) -> &'static [&'static str] {
        &["always_waker exists only in tests"]
    }
    fn event_kinds(&self) -> &'static [Kind] {
        &[Kind::Switch]
    }
    fn on_event(&mut self, e: &Event, _t: &ShadowTopo, _st: &State) {
        self.switches += u64::from(matches!(e, Event::Switch(_)));
    }
    fn decide(&mut self, ctx: &Ctx, _t: &ShadowTopo, _st: &State, _s: &mut Scratch) -> Decision {
        let (cpu, rule) = if self.switches > 0 {
            (ctx.w, WAKER_CPU)
        } else {
            (ctx.p, NO_SWITCH_YET)
        };
        Decision::new(cpu, 0, rule)
    }
}

#[cfg(test)]
mod tests {
    use crate::{
        join::Joiner,
        shadow::{ShadowEval, Tally},
        synth::{self, SynthConfig},
        topology::fixture,
    };

    #[test]
    fn a_policy_in_one_file_reaches_every_report() {
        let topo = fixture::named_topology("xeon-e5-2690v3").expect("fixture");
        let cfg = SynthConfig::new(50_000, 5);
        let s = synth::events(&topo, &cfg).expect("synth");
        let hdr = synth::header(&topo, &cfg, &s);
        let mut ev = ShadowEval::new(&hdr);
        let mut j = Joiner::new();
        let mut tally = Tally::new(&ev);
        let mut scored = 0;
        for e in s {
            ev.on_event(&e);
            if let Some(pl) = j.on_event(&e)
                && let Some(sc) = ev.on_placement(&pl)
            {
                scored += 1;
                if sc.pid % 2 == 0 {
                    tally.add(&sc);
                }
            }
        }
        assert!(scored > 100, "{scored} scored");
        let r = ev.report(None);
        let row = r
            .policies
            .iter()
            .find(|r| r.name == "always_waker")
            .expect("typed row");
        assert_eq!(row.evaluated, scored);
        let waker = row.rules.0.iter().find(|(n, _)| *n == "waker_cpu");
        assert!(waker.is_some_and(|&(_, n)| n > 0), "{:?}", row.rules);
        // Its choices are the waker's CPU: every one is "same CPU" vs the waker, but the
        // few taken before the first switch.
        let same = row.placement.vs_waker.get(crate::topology::Level::SameCpu);
        assert!(same > 0 && same <= scored, "{same}");

        let v = serde_json::to_value(&r).expect("json");
        let pj = &v["policies"]["always_waker"];
        assert_eq!(pj["description"], "test: the waker's CPU, no search");
        assert_eq!(pj["rules"]["waker_cpu"], waker.map_or(0, |w| w.1));
        assert!(
            v["approximations"]
                .as_array()
                .is_some_and(|a| a.iter().any(|x| x == "always_waker exists only in tests"))
        );

        let text = crate::analysis::report::shadow::text(&r);
        assert!(
            text.lines().any(|l| l.starts_with("always_waker ")),
            "{text}"
        );
        assert!(
            text.contains("  - always_waker exists only in tests"),
            "{text}"
        );

        // The subset: half the wakees, the same policy row restricted to them.
        let f = ev.report(Some(&tally));
        assert!(f.filtered);
        let frow = f
            .policies
            .iter()
            .find(|r| r.name == "always_waker")
            .expect("filtered row");
        assert_eq!(frow.evaluated, tally.evaluated());
        assert!(frow.evaluated > 0 && frow.evaluated < scored);
        assert_eq!(f.evaluated, tally.evaluated());
    }
}
