//! Structure-aware: a recording header whose topology is built from `arbitrary` choices
//! (CPU numbers, group indices, cpulist strings, distance tables, format versions), mostly
//! plausible and sometimes far beyond every limit, then a few events. Whatever the header
//! claims, the reader refuses it or the analyses and the shadow evaluation run on it without a
//! panic and within the fuzzer's memory limit.
#![no_main]

use libfuzzer_sys::{
    arbitrary::{Result, Unstructured},
    fuzz_target,
};
use serde_json::{Value, json};
use wakeviz_core::{analysis::Analysis, format::Reader, shadow::ShadowEval, source::Batch};
use wakeviz_fuzz::{cpulist, num};

fn groups(u: &mut Unstructured, n: u32) -> Result<Value> {
    let k = u.int_in_range(0..=n.saturating_add(1).min(64))?;
    let mut v = Vec::new();
    for _ in 0..k {
        v.push(json!({"id": num(u, n)?, "cpus": cpulist(u, n)?}));
    }
    Ok(Value::Array(v))
}

fn header(u: &mut Unstructured) -> Result<(u32, Value)> {
    let n = u.int_in_range(0..=64u32)?;
    let mut cpus = Vec::new();
    for i in 0..n {
        let cpu = if u.ratio(1, 8)? { num(u, n)? } else { i };
        cpus.push(json!({
            "cpu": cpu, "package": num(u, n)?, "die": num(u, n)?, "core_id": num(u, n)?,
            "node": u.int_in_range(0..=3u32)?, "llc": u.int_in_range(0..=n / 2 + 1)?,
            "core": if u.ratio(3, 4)? { i } else { num(u, n)? },
        }));
    }
    let nodes = groups(u, n)?;
    let nn = nodes.as_array().map_or(0, Vec::len);
    let square = u.ratio(3, 4)?;
    let mut distances = Vec::new();
    for r in 0..nn {
        let cols = if square {
            nn
        } else {
            u.int_in_range(0..=nn + 1)?
        };
        let row: Vec<u32> = (0..cols)
            .map(|c| {
                if r == c {
                    Ok(10)
                } else {
                    u.int_in_range(10..=255u32)
                }
            })
            .collect::<Result<_>>()?;
        distances.push(row);
    }
    let version = if u.ratio(7, 8)? { 1 } else { u.arbitrary()? };
    let json_version = if u.ratio(7, 8)? {
        version
    } else {
        u.arbitrary()?
    };
    let topology = json!({
        "cpus": cpus, "offline": cpulist(u, n)?, "cores": groups(u, n)?, "llcs": groups(u, n)?,
        "llc_level": u.int_in_range(0..=4u32)?, "nodes": nodes, "distances": distances,
        "packages": groups(u, n)?,
        "memory_only_nodes": (0..u.int_in_range(0..=3u8)?).map(|_| num(u, n)).collect::<Result<Vec<_>>>()?,
    });
    Ok((
        version,
        json!({
            "format_version": json_version, "abi_version": 1, "tool_version": "fuzz",
            "kernel_release": "6.12", "hostname": "fuzz", "realtime_offset_ns": 0,
            "start_ts_ns": 0, "probes": [], "scan_source": "none", "topology": topology,
            "ringbuf_bytes": 4096,
        }),
    ))
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok((version, h)) = header(&mut u) else {
        return;
    };
    // The rest of the input: event chunks, checksums fixed up.
    let json = serde_json::to_vec(&h).unwrap_or_default();
    let mut f = wakeviz_fuzz::recording(version, &json, u.take_rest());
    wakeviz_fuzz::fix_checksums(&mut f);
    let Ok(mut r) = Reader::new(f.as_slice(), std::path::Path::new("fuzz.wvz")) else {
        return;
    };
    let header = r.header().clone();
    let t = &header.topology;
    let _ = (t.summary(), t.domain_rows());
    for a in t.cpus.iter().take(8) {
        for b in t.cpus.iter().take(8) {
            let _ = t.level(a.cpu, b.cpu);
        }
    }
    let mut analysis = Analysis::new(&header);
    let mut shadow = ShadowEval::new(&header);
    while let Some(Ok(c)) = r.next_chunk() {
        if let wakeviz_core::format::ChunkPayload::Events(events) = c {
            for e in &events {
                shadow.on_event(e);
            }
            analysis.on_batch(&Batch {
                events,
                ..Batch::default()
            });
        }
    }
    let _ = analysis.report_json();
    let _ = shadow.report(None);
});
