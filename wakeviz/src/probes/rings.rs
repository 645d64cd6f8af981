//! Several ring buffers: ring 0 is the object's `EVENTS`, rings 1.. are created here at the same
//! size and stored in the probes' `RINGS` array of maps; every CPU's `RING_OF_CPU` slot says
//! which one its probes write to. Done before anything is attached, so no record goes to a ring
//! its CPU was not assigned (the merge's watermark relies on every ring's consumer having seen
//! all records stamped before its last clock reading, give or take the grace).
use aya::{
    Ebpf,
    maps::{ArrayOfMaps, Map, MapData, PerCpuArray, PerCpuValues, RingBuf},
};
use aya_obj::generated::bpf_map_type;
use wakeviz_common::names::map;
use wakeviz_core::rings::RingPlan;

use super::{LoadError, reason};

/// Creates rings 1.. of `plan` with `bytes` each and points every CPU at its ring. Returns the
/// created rings, in order (ring 1 first); nothing for a single-ring plan.
pub(crate) fn setup(
    ebpf: &mut Ebpf,
    plan: &RingPlan,
    bytes: u32,
) -> Result<Vec<RingBuf<MapData>>, LoadError> {
    if plan.len() <= 1 {
        return Ok(Vec::new());
    }
    let refused = |what: &str, e: &(dyn std::error::Error + 'static)| {
        LoadError::Refused(format!("{what}: {}", reason(e)))
    };
    let mut rings = Vec::with_capacity(plan.len() - 1);
    {
        let outer = ebpf.map_mut(map::RINGS).ok_or(LoadError::ObjectMismatch {
            what: "map",
            name: map::RINGS.into(),
        })?;
        let mut outer: ArrayOfMaps<&mut MapData> =
            ArrayOfMaps::try_from(outer).map_err(|e| refused("RINGS", &e))?;
        for i in 1..plan.len() {
            let def = aya_obj::Map::new_from_params(
                bpf_map_type::BPF_MAP_TYPE_RINGBUF as u32,
                0,
                0,
                bytes,
                0,
            );
            let data = MapData::create(def, &format!("wakeviz_ring{i}"), None)
                .map_err(|e| refused(&format!("creating ring buffer {i}"), &e))?;
            outer
                .set(i as u32, &data, 0)
                .map_err(|e| refused(&format!("storing ring buffer {i} in RINGS"), &e))?;
            let ring = RingBuf::try_from(Map::RingBuf(data))
                .map_err(|e| refused(&format!("ring buffer {i}"), &e))?;
            rings.push(ring);
        }
    }
    let slot = ebpf
        .map_mut(map::RING_OF_CPU)
        .ok_or(LoadError::ObjectMismatch {
            what: "map",
            name: map::RING_OF_CPU.into(),
        })?;
    let mut slot: PerCpuArray<&mut MapData, u32> =
        PerCpuArray::try_from(slot).map_err(|e| refused("RING_OF_CPU", &e))?;
    let possible = aya::util::nr_cpus().map_err(|(p, e)| refused(p, &e))?;
    let mut per_cpu = plan.ring_of_cpu();
    // CPUs beyond the plan (offline now, online later) write to ring 0.
    per_cpu.resize(possible, 0);
    per_cpu.truncate(possible);
    let values = PerCpuValues::try_from(per_cpu).map_err(|e| refused("RING_OF_CPU values", &e))?;
    slot.set(0, values, 0)
        .map_err(|e| refused("writing RING_OF_CPU", &e))?;
    Ok(rings)
}
