//! The in-kernel aggregate mode's loader and map reader (`wakeviz-ebpf/src/aggregate.rs`):
//! the topology written into `AGG_TOPO`, the `agg_*` programs attached tp_btf first, raw_tp as
//! the fallback, and the per-CPU counters summed on demand into
//! [`wakeviz_core::analysis::aggregate::KernelCounters`]. No ring buffer is read (the object's
//! `EVENTS` map is created at its smallest size and never written in this mode).
use std::path::Path;

use anyhow::Context as _;
use aya::{
    Btf, Ebpf, EbpfLoader, Pod,
    maps::{Array, MapData, PerCpuArray},
};
use wakeviz_common::{
    agg::{self, CpuCounts, CpuPlace, LogHist, PlaceCounts},
    names::{aggregate_map as amap, aggregate_program, map},
};
use wakeviz_core::{
    analysis::aggregate::{KernelCounters, cpu_places},
    format::{ProbeMode, ProbeState, ProbeStatus},
    topology::Topology,
};

use super::{
    LoadError, MapValue as V, attach_raw_tp, attach_tp_btf, btf, globals, load_object,
    raise_memlock, recursion_misses, run_time_stats, status,
};

// SAFETY: each T below is repr(C) plain integers with every byte a named field (checked by the
// zerocopy derives in wakeviz-common): any bit pattern is valid and none is padding.
unsafe impl Pod for V<CpuPlace> {}
// SAFETY: as above.
unsafe impl Pod for V<CpuCounts> {}
// SAFETY: as above.
unsafe impl Pod for V<PlaceCounts> {}
// SAFETY: as above.
unsafe impl Pod for V<LogHist> {}

/// Entry counts of the aggregate maps for a topology (pass to `EbpfLoader::map_max_entries`,
/// or to [`super::load_with`] when the programs run beside the streaming ones).
pub fn map_sizes(t: &Topology) -> Vec<(&'static str, u32)> {
    let cpus = u32::try_from(t.cpu_bound()).unwrap_or(u32::MAX).max(1);
    vec![
        (amap::AGG_TOPO, cpus),
        (amap::AGG_CPU, cpus),
        (amap::AGG_TASKS, agg::PENDING_ENTRIES),
    ]
}

/// Reads the aggregate counters (the maps, taken out of the object).
pub struct Reader {
    cpu: PerCpuArray<MapData, V<CpuCounts>>,
    totals: PerCpuArray<MapData, V<PlaceCounts>>,
    hist: PerCpuArray<MapData, V<LogHist>>,
    stats: PerCpuArray<MapData, u64>,
    cpus: u32,
}

fn take<T>(ebpf: &mut Ebpf, name: &str) -> anyhow::Result<T>
where
    T: TryFrom<aya::maps::Map, Error = aya::maps::MapError>,
{
    let m = ebpf
        .take_map(name)
        .with_context(|| format!("probe object has no {name} map (rebuild wakeviz)"))?;
    T::try_from(m).with_context(|| format!("{name}: unexpected map type"))
}

impl Reader {
    fn sum<T: Pod>(
        m: &PerCpuArray<MapData, T>,
        i: u32,
        into: &mut dyn FnMut(&T),
    ) -> anyhow::Result<()> {
        let v = m.get(&i, 0).with_context(|| format!("reading slot {i}"))?;
        for x in v.iter() {
            into(x);
        }
        Ok(())
    }

    /// The counters now, each summed over the CPUs' copies. `misses` is the programs' skipped
    /// runs (the caller owns the programs).
    pub fn read(&self, misses: u64) -> anyhow::Result<KernelCounters> {
        let mut k = KernelCounters {
            per_cpu: vec![CpuCounts::default(); self.cpus as usize],
            hists: vec![LogHist::default(); agg::hist::LEN as usize],
            stats: vec![0; agg::stat::LEN as usize],
            probe_misses: misses,
            ..KernelCounters::default()
        };
        for (i, slot) in k.per_cpu.iter_mut().enumerate() {
            Self::sum(&self.cpu, i as u32, &mut |v| {
                slot.landed.merge(&v.0.landed);
                slot.woke.merge(&v.0.woke);
            })
            .context("AGG_CPU")?;
        }
        Self::sum(&self.totals, agg::totals::NEW_TASKS, &mut |v| {
            k.new_tasks.merge(&v.0);
        })
        .context("AGG_TOTALS")?;
        Self::sum(&self.totals, agg::totals::BEYOND, &mut |v| {
            k.beyond.merge(&v.0)
        })
        .context("AGG_TOTALS")?;
        for (i, h) in k.hists.iter_mut().enumerate() {
            Self::sum(&self.hist, i as u32, &mut |v| h.merge(&v.0)).context("AGG_HIST")?;
        }
        for (i, s) in k.stats.iter_mut().enumerate() {
            Self::sum(&self.stats, i as u32, &mut |v| *s += *v).context("AGG_STATS")?;
        }
        Ok(k)
    }
}

fn attach_one(
    ebpf: &mut Ebpf,
    btf: Option<&Btf>,
    tp: &aggregate_program::Tracepoint,
) -> ProbeStatus {
    let name = tp.name;
    let mut fallbacks = Vec::new();
    match btf {
        Some(btf) => match attach_tp_btf(ebpf, tp.tp_btf, name, btf) {
            Ok(()) => return status(name, ProbeMode::TpBtf, fallbacks),
            Err(why) => fallbacks.push(why),
        },
        None => fallbacks.push("tp_btf: no kernel BTF".into()),
    }
    match attach_raw_tp(ebpf, tp.raw_tp, name) {
        Ok(()) => status(name, ProbeMode::RawTp, fallbacks),
        Err(why) => ProbeStatus {
            name: name.into(),
            mode: None,
            state: ProbeState::Failed(why),
            fallbacks,
        },
    }
}

/// Writes the topology and attaches the aggregate programs on an object loaded with
/// [`map_sizes`]; takes the counter maps out for the returned [`Reader`].
pub fn attach(
    ebpf: &mut Ebpf,
    btf: Option<&Btf>,
    t: &Topology,
) -> anyhow::Result<(Vec<ProbeStatus>, Reader)> {
    let places = cpu_places(t);
    {
        let m = ebpf
            .map_mut(amap::AGG_TOPO)
            .context("probe object has no AGG_TOPO map (rebuild wakeviz)")?;
        let mut topo: Array<&mut MapData, V<CpuPlace>> =
            Array::try_from(m).context("AGG_TOPO: unexpected map type")?;
        for (i, p) in places.iter().enumerate() {
            topo.set(i as u32, V(*p), 0)
                .with_context(|| format!("writing AGG_TOPO[{i}] (sized for the topology?)"))?;
        }
    }
    let status: Vec<ProbeStatus> = aggregate_program::TRACEPOINTS
        .iter()
        .map(|tp| attach_one(ebpf, btf, tp))
        .collect();
    let reader = Reader {
        cpu: take(ebpf, amap::AGG_CPU)?,
        totals: take(ebpf, amap::AGG_TOTALS)?,
        hist: take(ebpf, amap::AGG_HIST)?,
        stats: take(ebpf, amap::AGG_STATS)?,
        cpus: places.len() as u32,
    };
    Ok((status, reader))
}

/// The aggregate mode alone: the object loaded with the smallest ring buffer, only the
/// aggregate programs attached.
pub struct AggregateProbes {
    ebpf: Ebpf,
    /// Keeps BPF_ENABLE_STATS on while it lives (`--bpf-stats`).
    _stats_fd: Option<std::os::fd::OwnedFd>,
    pub status: Vec<ProbeStatus>,
    pub notes: Vec<String>,
    pub reader: Reader,
}

impl AggregateProbes {
    pub fn load(t: &Topology, bpf_stats: bool) -> anyhow::Result<Self> {
        raise_memlock();
        let mut notes = Vec::new();
        let stats_fd = run_time_stats(bpf_stats, &mut notes);
        let kbtf = btf::KernelBtf::open(Path::new("/sys/kernel/btf/vmlinux")).ok();
        let offsets = kbtf
            .as_ref()
            .map(btf::KernelBtf::offsets)
            .unwrap_or_default();
        if !offsets.task_ok() {
            return Err(LoadError::NothingAttached(
                "the aggregate mode needs task_struct offsets from /sys/kernel/btf/vmlinux".into(),
            )
            .into());
        }
        let aya_btf = Btf::from_sys_fs().ok();
        let globals = globals(&offsets, &mut notes);
        let mut loader = EbpfLoader::new();
        loader.btf(aya_btf.as_ref());
        // The smallest ring buffer the kernel accepts (a page): nothing writes it here.
        loader.map_max_entries(map::EVENTS, 4096);
        let sizes = map_sizes(t);
        for (name, n) in &sizes {
            loader.map_max_entries(name, *n);
        }
        let mut ebpf = load_object(&mut loader, &globals)?;
        for name in amap::ALL.iter().chain(aggregate_program::ALL) {
            if ebpf.map(name).is_none() && ebpf.program(name).is_none() {
                return Err(LoadError::ObjectMismatch {
                    what: "map or program",
                    name: (*name).to_string(),
                }
                .into());
            }
        }
        let (mut status, reader) = attach(&mut ebpf, aya_btf.as_ref(), t)?;
        if status.iter().all(|s| !s.attached()) {
            let why = status
                .iter()
                .filter_map(|s| s.state.reason())
                .next()
                .unwrap_or("unknown")
                .to_string();
            return Err(if why.contains("EPERM") {
                LoadError::NotPermitted(why)
            } else {
                LoadError::NothingAttached(why)
            }
            .into());
        }
        for f in wakeviz_common::names::program::FUNCTIONS {
            status.push(ProbeStatus {
                name: f.name.into(),
                mode: None,
                state: ProbeState::Unavailable("not used by the in-kernel aggregate mode".into()),
                fallbacks: Vec::new(),
            });
        }
        Ok(Self {
            ebpf,
            _stats_fd: stats_fd,
            status,
            notes,
            reader,
        })
    }

    /// Program runs the kernel skipped (a BPF program already running on that CPU).
    pub fn misses(&self) -> u64 {
        self.ebpf
            .programs()
            .filter_map(|(_, p)| recursion_misses(p))
            .sum()
    }

    /// Run counts and times of the programs (`--bpf-stats`).
    pub fn run_stats(&self) -> Vec<super::RunStat> {
        super::run_stats_of(&self.ebpf)
    }

    pub fn read(&self) -> anyhow::Result<KernelCounters> {
        self.reader.read(self.misses())
    }
}
