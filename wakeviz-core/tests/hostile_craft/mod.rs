//! Builds crafted recordings in code, each one a case a root tool must survive (hostile
//! input): lengths and counts that lie, topologies beyond every limit, chunks that decompress
//! into gigabytes, files of distinct or colliding pids. Shared by `wakeviz-core/tests/hostile*.rs`
//! and `wakeviz/tests/hostile.rs` (`#[path]`), so the library and the binary see the same files.
#![allow(dead_code, reason = "each test binary uses a different subset")]

mod columns;

use serde_json::{Value, json};
use wakeviz_core::{
    event::{Event, Migrate, Switch, Wake},
    format::{
        CaptureStats, FORMAT_VERSION, MAGIC,
        chunk::{self, ChunkHeader},
        codec::{self, Encoder},
    },
};

/// A topology as a recording's header holds it: `n` CPUs (one per core, no SMT), LLCs of
/// `per_llc` CPUs, one node and one package.
pub fn topology(n: u32, per_llc: u32) -> Value {
    let per_llc = per_llc.max(1);
    let cpus: Vec<Value> = (0..n)
        .map(|c| json!({"cpu": c, "package": 0, "die": 0, "core_id": c, "node": 0, "llc": c / per_llc, "core": c}))
        .collect();
    let cores: Vec<Value> = (0..n)
        .map(|c| json!({"id": c, "cpus": c.to_string()}))
        .collect();
    let llcs: Vec<Value> = (0..n.div_ceil(per_llc))
        .map(|l| {
            let last = ((l + 1) * per_llc).min(n) - 1;
            json!({"id": l * per_llc, "cpus": format!("{}-{last}", l * per_llc)})
        })
        .collect();
    let all = format!("0-{}", n.saturating_sub(1));
    json!({
        "cpus": cpus, "offline": "", "cores": cores, "llcs": llcs, "llc_level": 3,
        "nodes": [{"id": 0, "cpus": all}], "distances": [[10]],
        "packages": [{"id": 0, "cpus": all}]
    })
}

/// A plausible header (as JSON, to be bent by the cases) over `topology`.
pub fn header(topology: Value) -> Value {
    json!({
        "format_version": FORMAT_VERSION,
        "abi_version": wakeviz_common::ABI_VERSION,
        "tool_version": "crafted",
        "kernel_release": "6.12.0-crafted",
        "hostname": "attacker",
        "realtime_offset_ns": 0,
        "start_ts_ns": 0,
        "probes": [],
        "scan_source": "none",
        "topology": topology,
        "ringbuf_bytes": 1 << 20,
    })
}

/// Preamble (with `version`) and the header.
pub fn preamble(version: u32, header: &Value) -> Vec<u8> {
    let json = serde_json::to_vec(header).expect("header serialises");
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&json).to_le_bytes());
    out.extend_from_slice(&json);
    out
}

/// A chunk with a valid checksum whatever it claims: `count` is written as given.
pub fn chunk(kind: u8, raw: &[u8], count: u32, zstd: bool) -> Vec<u8> {
    let (codec, stored) = if zstd {
        let z = zstd::bulk::compress(raw, 3).expect("zstd compresses");
        (chunk::CODEC_ZSTD, z)
    } else {
        (chunk::CODEC_RAW, raw.to_vec())
    };
    let h = ChunkHeader::seal(kind, codec, raw.len() as u32, count, &stored);
    let mut out = h.to_bytes().to_vec();
    out.extend_from_slice(&stored);
    out
}

/// The format version whose `EVENTS` chunks are rows of varints (`codec::Encoder`), the layout
/// every helper here writes; `columns` crafts the current, columnar one.
pub const ROWS: u32 = 1;

/// Encoded events (rows, format 1) and their count.
pub fn encode(evs: impl IntoIterator<Item = Event>) -> (Vec<u8>, u32) {
    let mut e = Encoder::default();
    for ev in evs {
        e.push(&ev);
    }
    (e.buf, e.count)
}

pub fn end() -> Vec<u8> {
    let s = serde_json::to_vec(&CaptureStats::default()).expect("stats serialise");
    chunk(chunk::KIND_END, &s, 0, false)
}

/// A whole format-1 file (row chunks): the header over `topology`, `chunks`, END.
pub fn file(topology: Value, chunks: &[Vec<u8>]) -> Vec<u8> {
    file_of(ROWS, topology, chunks)
}

/// A whole file of format `version`: the header over `topology`, `chunks`, END.
pub fn file_of(version: u32, topology: Value, chunks: &[Vec<u8>]) -> Vec<u8> {
    let mut h = header(topology);
    h["format_version"] = json!(version);
    let mut out = preamble(version, &h);
    for c in chunks {
        out.extend_from_slice(c);
    }
    out.extend_from_slice(&end());
    out
}

pub fn wake(ts_ns: u64, cpu: u32, pid: u32, target_cpu: u32, waker_pid: u32) -> Wake {
    Wake {
        ts_ns,
        cpu,
        pid,
        target_cpu,
        waker_pid,
        prio: 120,
    }
}

/// A plausible scheduling round of `pid` (waking, wakeup, switch in, switch out, migrate) on a
/// `ncpus` machine: each event reaches the joiner, the analyses and the shadow state.
pub fn round(i: u64, pid: u32, ncpus: u32) -> [Event; 5] {
    let ts = 1_000_000 + i * 5_000;
    let cpu = (i % u64::from(ncpus.max(1))) as u32;
    let other = (cpu + 1) % ncpus.max(1);
    [
        Event::Waking(wake(ts, other, pid, cpu, 1)),
        Event::Wakeup(wake(ts + 1_000, cpu, pid, cpu, 1)),
        Event::Switch(Switch {
            ts_ns: ts + 2_000,
            cpu,
            prev_pid: 0,
            next_pid: pid,
            prev_state: 0,
            prev_prio: 120,
            next_prio: 120,
        }),
        Event::Switch(Switch {
            ts_ns: ts + 3_000,
            cpu,
            prev_pid: pid,
            next_pid: 0,
            prev_state: 1,
            prev_prio: 120,
            next_prio: 120,
        }),
        Event::Migrate(Migrate {
            ts_ns: ts + 4_000,
            cpu,
            pid,
            orig_cpu: cpu,
            dest_cpu: other,
        }),
    ]
}

/// Events of `pids` in chunks of the writer's size.
pub fn rounds(pids: impl IntoIterator<Item = u32>, ncpus: u32) -> Vec<Vec<u8>> {
    let evs: Vec<Event> = pids
        .into_iter()
        .enumerate()
        .flat_map(|(i, p)| round(i as u64, p, ncpus))
        .collect();
    evs.chunks(1 << 16)
        .map(|c| {
            let (raw, n) = encode(c.iter().cloned());
            chunk(chunk::KIND_EVENTS, &raw, n, true)
        })
        .collect()
}

/// Every crafted case of the issue on the reading side: (name, file bytes, whether a reader
/// must refuse it outright; `false` means a bounded, possibly degraded, replay).
pub fn cases() -> Vec<(&'static str, Vec<u8>, bool)> {
    let t4 = || topology(4, 4);
    let bent = |f: &dyn Fn(&mut Value)| {
        let mut t = t4();
        f(&mut t);
        file(t, &[])
    };
    let (one, _) = encode(round(0, 100, 4));
    let mut v = Vec::new();
    v.push((
        "count-0xffffffff",
        file(t4(), &[chunk(chunk::KIND_EVENTS, &one, u32::MAX, false)]),
        true,
    ));
    v.push((
        "count-50M",
        file(t4(), &[chunk(chunk::KIND_EVENTS, &one, 50_000_000, false)]),
        true,
    ));
    v.push((
        "tasks-count-0xffffffff",
        file(t4(), &[chunk(chunk::KIND_TASKS, &[1, 0], u32::MAX, false)]),
        true,
    ));
    // 11 M identical events, about 7 bytes each: 77 MB of raw payload, a few KB compressed.
    let bomb = {
        let (raw, _) = encode(std::iter::once(Event::Waking(wake(0, 0, 1, 0, 1))));
        let raw = raw.repeat(11_000_000);
        chunk(chunk::KIND_EVENTS, &raw, 11_000_000, true)
    };
    v.push(("zstd-11M-identical-events", file(t4(), &[bomb]), true));
    // At the per-chunk limit, several times: each chunk is accepted, memory stays one chunk.
    let full = {
        let (raw, _) = encode(std::iter::once(Event::Waking(wake(0, 0, 1, 0, 1))));
        let raw = raw.repeat(chunk::MAX_CHUNK_ENTRIES as usize);
        chunk(chunk::KIND_EVENTS, &raw, chunk::MAX_CHUNK_ENTRIES, true)
    };
    v.push((
        "zstd-chunks-at-the-limit",
        file(t4(), &[full.clone(), full.clone(), full]),
        false,
    ));
    v.push((
        "cpu-4000000000",
        bent(&|t| t["cpus"][3]["cpu"] = json!(4_000_000_000u32)),
        true,
    ));
    v.push((
        "cpu-8192",
        bent(&|t| t["cpus"][3]["cpu"] = json!(8192)),
        true,
    ));
    v.push((
        "cpus-out-of-order",
        bent(&|t| t["cpus"][3]["cpu"] = json!(1)),
        true,
    ));
    v.push((
        "cpu-llc-index-9",
        bent(&|t| t["cpus"][3]["llc"] = json!(9)),
        true,
    ));
    v.push((
        "offline-4294967295",
        bent(&|t| t["offline"] = json!("4294967295")),
        true,
    ));
    v.push((
        "offline-range-to-4294967295",
        bent(&|t| t["offline"] = json!("4294966000-4294967295")),
        true,
    ));
    v.push((
        "twelve-cpusets-0-4294967295",
        bent(&|t| {
            for i in 0..4 {
                t["cores"][i]["cpus"] = json!("0-4294967295");
            }
            for k in ["llcs", "nodes", "packages"] {
                t[k][0]["cpus"] = json!("0-4294967295");
            }
            t["offline"] = json!("0-4294967295");
            t["llcs"] = json!([{"id": 0, "cpus": "0-4294967295"}, {"id": 1, "cpus": "4294967295"}]);
            t["nodes"] =
                json!([{"id": 0, "cpus": "0-4294967295"}, {"id": 1, "cpus": "4294967295"}]);
        }),
        true,
    ));
    v.push((
        "twelve-cpusets-high-ranges",
        bent(&|t| {
            for i in 0..4 {
                t["cores"][i]["cpus"] = json!("4293918720-4294967295");
            }
            for k in ["llcs", "nodes", "packages"] {
                t[k][0]["cpus"] = json!("4293918720-4294967295");
            }
            t["offline"] = json!("4293918720-4294967295");
        }),
        true,
    ));
    v.push((
        "group-member-not-listed",
        bent(&|t| t["llcs"][0]["cpus"] = json!("0-7000")),
        true,
    ));
    v.push((
        "distances-not-square",
        bent(&|t| t["distances"] = json!([[10, 20]])),
        true,
    ));
    v.push(("100k-cpus", file(topology(100_000, 16), &[]), true));
    v.push((
        "100k-nodes",
        bent(&|t| {
            t["nodes"] = Value::Array((0..100_000).map(|i| json!({"id": i, "cpus": ""})).collect());
        }),
        true,
    ));
    v.push((
        "version-0",
        {
            let mut f = file(t4(), &[]);
            f[8..12].copy_from_slice(&0u32.to_le_bytes());
            f
        },
        true,
    ));
    v.push((
        "version-newer",
        {
            let mut f = file(t4(), &[]);
            f[8..12].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
            f
        },
        true,
    ));
    v.push((
        "json-format-version-99",
        {
            let mut h = header(t4());
            h["format_version"] = json!(99);
            let mut f = preamble(FORMAT_VERSION, &h);
            f.extend_from_slice(&end());
            f
        },
        true,
    ));
    v.push((
        "header-len-beyond-limit",
        {
            let mut f = file(t4(), &[]);
            f[12..16].copy_from_slice(&(64u32 << 20).to_le_bytes());
            f
        },
        true,
    ));
    v.push((
        "raw-chunk-lying-raw-len",
        {
            let h = ChunkHeader::seal(chunk::KIND_EVENTS, chunk::CODEC_RAW, 16 << 20, 1, &one[..7]);
            let mut c = h.to_bytes().to_vec();
            c.extend_from_slice(&one[..7]);
            file(t4(), &[c])
        },
        true,
    ));
    let sample = |ts_ns: u64, text: &[u8]| {
        let mut raw = ts_ns.to_le_bytes().to_vec();
        raw.extend_from_slice(text);
        chunk(chunk::KIND_SCHEDSTAT, &raw, 1, true)
    };
    v.push((
        "schedstat-chunk-in-format-2",
        file_of(2, t4(), &[sample(1, b"version 17\n")]),
        true,
    ));
    v.push((
        "schedstat-not-utf8",
        file_of(3, t4(), &[sample(1, b"version 17\ncpu0 \xff\xfe\n")]),
        true,
    ));
    v.push((
        "schedstat-two-samples-claiming",
        file_of(3, t4(), &[chunk(chunk::KIND_SCHEDSTAT, &[0; 8], 2, false)]),
        true,
    ));
    // Two samples near the chunk limit: thousands of domains spanning every CPU a kernel can
    // have, for one CPU. Each sample is parsed and its spans walked once, not per snapshot.
    let wide = |ts: u64, remote: u64| {
        let mask = vec!["ffffffff"; 256].join(",");
        let zeros = vec!["0"; 42].join(" ");
        let mut t = format!("version 17\ntimestamp {ts}\ncpu0 0 0 0 0 0 0 0 0 0\n");
        for i in 0..6000 {
            t.push_str(&format!("domain{i} NUMA {mask} {zeros} {remote} 0 0\n"));
        }
        sample(ts, t.as_bytes())
    };
    v.push((
        "schedstat-6000-full-domains",
        file_of(3, t4(), &[wide(1, 0), wide(2, 5), wide(3, 9)]),
        false,
    ));
    v.push((
        "schedstat-escape-in-domain-name",
        file_of(
            3,
            t4(),
            &[
                sample(1, b"version 17\ncpu0 0 0 0 0 0 0 0 0 0\n"),
                sample(
                    2,
                    b"version 17\ncpu0 0 0 0 0 1 1 0 0 0\ndomain0 \x1b[2J 1 0\n",
                ),
            ],
        ),
        false,
    ));
    v.push((
        "data-after-end",
        {
            let mut f = file(t4(), &rounds(0..10, 4));
            f.extend_from_slice(&[0xAB; 1000]);
            f
        },
        false,
    ));
    v
}

/// 3 MB-ish of distinct pids (a round each): the per-pid maps must stay within their budget.
pub fn distinct_pids(n: u32) -> Vec<u8> {
    file(topology(4, 4), &rounds(1..=n, 4))
}

/// `n` wakings of distinct pids woken by distinct wakers, all left pending (never woken up):
/// the cheapest file per distinct pid for the joiner, the analyses and the shadow state.
pub fn pending_wakings(n: u32) -> Vec<u8> {
    let evs = (0..n).map(|i| {
        Event::Waking(wake(
            1_000 + u64::from(i),
            i % 4,
            i + 1,
            (i + 1) % 4,
            n + i + 1,
        ))
    });
    let evs: Vec<Event> = evs.collect();
    let chunks: Vec<Vec<u8>> = evs
        .chunks(1 << 16)
        .map(|c| {
            let (raw, k) = encode(c.iter().cloned());
            chunk(chunk::KIND_EVENTS, &raw, k, true)
        })
        .collect();
    file(topology(4, 4), &chunks)
}

/// Pids that collide under a fixed multiplicative hash (multiples of a large power of two):
/// with the per-process random seed, a replay of them costs what distinct small pids cost.
pub fn colliding_pids(n: u32) -> Vec<u8> {
    file(topology(4, 4), &rounds((1..=n).map(|i| i << 12), 4))
}

/// TASKS chunks naming `pids` (`t<pid>`), as the recorder writes them.
pub fn names(pids: impl IntoIterator<Item = u32>) -> Vec<Vec<u8>> {
    let pids: Vec<u32> = pids.into_iter().collect();
    pids.chunks(1 << 16)
        .map(|c| {
            let mut raw = Vec::with_capacity(c.len() * 12);
            for &p in c {
                codec::put_varint(&mut raw, u64::from(p));
                let name = format!("t{p}");
                raw.push(name.len() as u8);
                raw.extend_from_slice(name.as_bytes());
            }
            chunk(chunk::KIND_TASKS, &raw, c.len() as u32, true)
        })
        .collect()
}
