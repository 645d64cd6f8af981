//! Shadow policies: per policy, how often it agreed with the kernel, found an idle CPU,
//! stacked the wakee, and how far it scanned; and the fidelity of the kernel's model.
use super::{Better, Def, DefUnit, Family, FigureKind, NotAvailable, Out, Section, key};
use crate::analysis::Snapshot;

const fn def(
    name: &'static str,
    unit: DefUnit,
    kind: FigureKind,
    better: Option<Better>,
    help: &'static str,
) -> Def {
    Def {
        name,
        section: Section::Shadow,
        unit,
        kind,
        better,
        topology_bound: false,
        na_rule: "no wakeup evaluated; absent with the shadow off",
        help,
    }
}

static POLICY: [Def; 5] = [
    def(
        "shadow.{policy}.agreement.share",
        DefUnit::Share,
        FigureKind::Share,
        None,
        "Wakeups where the policy chose the kernel's CPU",
    ),
    def(
        "shadow.{policy}.idle.share",
        DefUnit::Share,
        FigureKind::Share,
        Some(Better::Higher),
        "Wakeups where the policy's CPU was idle",
    ),
    def(
        "shadow.{policy}.stacked.share",
        DefUnit::Share,
        FigureKind::Share,
        Some(Better::Lower),
        "Wakeups the policy placed on a busy CPU",
    ),
    def(
        "shadow.{policy}.probes_mean",
        DefUnit::Probes,
        FigureKind::Mean,
        Some(Better::Lower),
        "Idle tests the policy spent per wakeup (affine step, shortcuts and scan), mean",
    ),
    def(
        "shadow.{policy}.est_scan_ns",
        DefUnit::Ns,
        FigureKind::Mean,
        Some(Better::Lower),
        "Estimated scan cost per wakeup (probes times the measured cost per probe)",
    ),
];

const fn cache(
    name: &'static str,
    unit: DefUnit,
    kind: FigureKind,
    better: Option<Better>,
    na_rule: &'static str,
    help: &'static str,
) -> Def {
    Def {
        na_rule,
        ..def(name, unit, kind, better, help)
    }
}

/// The questions the cache-aware and pick-idle proposals raise, per policy.
static CACHE: [Def; 5] = [
    cache(
        "shadow.{policy}.preferred_llc.share",
        DefUnit::Share,
        FigureKind::Share,
        None,
        "no wakee's process had a preferred LLC (no tgid in the recording, or too little runtime); absent with the shadow off",
        "Of wakeups whose process had a preferred LLC (cache-aware occupancy, modelled), those placed in it",
    ),
    cache(
        "shadow.{policy}.llc_moves.share",
        DefUnit::Share,
        FigureKind::Share,
        Some(Better::Lower),
        "no task was woken twice; absent with the shadow off",
        "Of wakeups of a task woken before, those the policy placed in another LLC than the task's previous wakeup",
    ),
    cache(
        "shadow.{policy}.stacked_idle_left.share",
        DefUnit::Share,
        FigureKind::Share,
        Some(Better::Lower),
        "no wakeup evaluated; absent with the shadow off",
        "Wakeups the policy stacked on a busy CPU while a CPU of the same LLC was idle",
    ),
    cache(
        "shadow.{policy}.idle_left_mean",
        DefUnit::Cpus,
        FigureKind::Mean,
        Some(Better::Lower),
        "nothing stacked beside an idle CPU; absent with the shadow off",
        "Idle CPUs in the LLC where the policy stacked a wakee, mean over those stackings",
    ),
    cache(
        "shadow.{policy}.llcs_per_process",
        DefUnit::Llcs,
        FigureKind::Mean,
        None,
        "no multi-threaded process with known threads woken; absent with the shadow off",
        "LLCs the policy placed a multi-threaded process's wakees in, mean over processes",
    ),
];

/// The kernel's idle scan (`select_idle_cpu`) as each policy runs it; the observed row's is
/// the measured one where the debug-info scan probes were on.
static SCAN: [Def; 2] = [
    def(
        "shadow.{policy}.scan.scans.share",
        DefUnit::Share,
        FigureKind::Share,
        None,
        "Wakeups where the policy ran select_idle_cpu (observed: measured by the debug-info probes where on, else the model's)",
    ),
    cache(
        "shadow.{policy}.scan.cpus_per_scan",
        DefUnit::Cpus,
        FigureKind::Mean,
        Some(Better::Lower),
        "the policy never ran select_idle_cpu; absent with the shadow off",
        "CPUs select_idle_cpu tested per scan, mean (the probes count an idle-core walk per core, the model per CPU)",
    ),
];

static FIDELITY: [Def; 2] = [
    def(
        "shadow.fidelity.agreement.share",
        DefUnit::Share,
        FigureKind::Share,
        Some(Better::Higher),
        "How often the model of the running kernel reproduces the kernel's choice",
    ),
    def(
        "shadow.fidelity.exact_inputs_agreement.share",
        DefUnit::Share,
        FigureKind::Share,
        Some(Better::Higher),
        "The same, on decisions whose inputs were all read, not modelled",
    ),
];

static ALL: [&Def; 14] = [
    &FIDELITY[0],
    &FIDELITY[1],
    &POLICY[0],
    &POLICY[1],
    &POLICY[2],
    &POLICY[3],
    &POLICY[4],
    &CACHE[0],
    &CACHE[1],
    &CACHE[2],
    &CACHE[3],
    &CACHE[4],
    &SCAN[0],
    &SCAN[1],
];

pub struct Shadow;

impl Family for Shadow {
    fn defs(&self) -> &'static [&'static Def] {
        &ALL
    }

    fn eval(&self, s: &Snapshot, o: &mut Out) {
        let Some(sh) = &s.shadow else {
            return;
        };
        let na = NotAvailable::NoSamples;
        for r in &sh.policies {
            let k = key(r.name);
            let l = r.name;
            // Agreement is a fraction in the shadow report; a share like the others here.
            let values = [
                (r.agreement.map(|a| a * 100.0), "agreement"),
                (r.idle_pct, "idle hits"),
                (r.stacked_pct, "stacked"),
                (r.probes_mean, "probes mean"),
                (r.est_scan_ns_mean, "est. scan cost"),
            ];
            for (d, (v, words)) in POLICY.iter().zip(values) {
                o.push(d, &[&k], format!("{l} {words}"), v, na);
            }
            let c = &r.cache;
            let values = [
                (c.preferred_llc_pct, "in preferred LLC"),
                (c.llc_moves_pct, "LLC moves"),
                (c.stacked_idle_left_pct, "stacked beside idle"),
                (c.idle_left_mean, "idle CPUs left"),
                (c.llcs_per_process, "LLCs per process"),
            ];
            for (d, (v, words)) in CACHE.iter().zip(values) {
                o.push(d, &[&k], format!("{l} {words}"), v, na);
            }
            let values = [
                (r.scan.scans_pct, "scans"),
                (r.scan.cpus_per_scan, "CPUs per scan"),
            ];
            for (d, (v, words)) in SCAN.iter().zip(values) {
                o.push(d, &[&k], format!("{l} {words}"), v, na);
            }
        }
        let f = &sh.fidelity;
        let label = format!("fidelity ({})", f.policy);
        let agree = f.agreement.map(|a| a * 100.0);
        o.push(&FIDELITY[0], &[], format!("{label} agreement"), agree, na);
        let exact = f.exact_inputs_agreement.map(|a| a * 100.0);
        let lb = format!("{label} exact-input agreement");
        o.push(&FIDELITY[1], &[], lb, exact, na);
    }
}
