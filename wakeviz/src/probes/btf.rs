//! Field offsets of the running kernel, from `/sys/kernel/btf/vmlinux`. Aya's Rust programs get
//! no CO-RE relocations, so the probes read `task_struct` & co. at offsets computed here and
//! handed over as load-time globals; a kernel with another layout just gets other numbers.
use std::path::Path;

use btf_rs::{Btf, Type};

/// Byte offsets the probes need; `None` where this kernel lacks the field.
#[derive(Debug, Default, Clone)]
pub struct Offsets {
    pub task_pid: Option<u64>,
    pub task_tgid: Option<u64>,
    pub task_prio: Option<u64>,
    pub task_comm: Option<u64>,
    pub task_cpu: Option<u64>,
    pub task_se_cfs_rq: Option<u64>,
    pub cfs_rq_rq: Option<u64>,
    pub rq_nr_running: Option<u64>,
    pub rq_sd: Option<u64>,
    pub rq_cpu: Option<u64>,
    pub sd_parent: Option<u64>,
    pub sd_shared: Option<u64>,
    pub sds_has_idle_cores: Option<u64>,
    pub sds_nr_idle_scan: Option<u64>,
    /// ABI-2 select inputs; each absent one is named in the probe notes.
    pub task_se_load_avg: Option<u64>,
    pub task_flags: Option<u64>,
    pub task_nr_cpus_allowed: Option<u64>,
    pub task_cpus_ptr: Option<u64>,
    pub rq_cfs: Option<u64>,
    pub rq_cpu_capacity: Option<u64>,
    pub cfs_rq_load_avg: Option<u64>,
    /// Only with `CONFIG_FAIR_GROUP_SCHED`; without it `task_h_load` is the task's own load.
    pub cfs_rq_h_load: Option<u64>,
    /// 6.13 (and 6.12.y): the delayed count, used when the two below are absent.
    pub cfs_rq_h_nr_delayed: Option<u64>,
    /// 6.14+ and later 6.12.y: `cfs_h_nr_delayed()` = `h_nr_queued - h_nr_runnable`, the
    /// wake_up_sync fix's definition (preferred).
    pub cfs_rq_h_nr_queued: Option<u64>,
    pub cfs_rq_h_nr_runnable: Option<u64>,
    /// ABI-3 `record_wakee()` state (`wake_wide()`'s inputs).
    pub task_wakee_flips: Option<u64>,
    pub task_wakee_flip_decay_ts: Option<u64>,
    pub task_last_wakee: Option<u64>,
}

impl Offsets {
    /// The task fields every tracepoint program needs.
    pub fn task_ok(&self) -> bool {
        self.task_pid.is_some() && self.task_comm.is_some() && self.task_cpu.is_some()
    }

    /// All fields for the run-queue reads in the select probe.
    pub fn rq_ok(&self) -> bool {
        self.task_se_cfs_rq.is_some()
            && self.cfs_rq_rq.is_some()
            && self.rq_nr_running.is_some()
            && self.rq_sd.is_some()
            && self.sd_parent.is_some()
            && self.sd_shared.is_some()
            && self.sds_has_idle_cores.is_some()
            && self.sds_nr_idle_scan.is_some()
    }

    /// The ABI-2 select inputs this kernel's BTF lacks, by the field's kernel name (said in the
    /// recording's probe notes: the shadow treats those inputs as unknown).
    pub fn missing_inputs(&self) -> Vec<&'static str> {
        let delayed = self.cfs_rq_h_nr_delayed.is_some()
            || (self.cfs_rq_h_nr_queued.is_some() && self.cfs_rq_h_nr_runnable.is_some());
        [
            (
                "task_struct.se.avg.load_avg",
                self.task_se_load_avg.is_some(),
            ),
            ("task_struct.flags", self.task_flags.is_some()),
            (
                "task_struct.nr_cpus_allowed",
                self.task_nr_cpus_allowed.is_some(),
            ),
            ("task_struct.cpus_ptr", self.task_cpus_ptr.is_some()),
            ("rq.cfs", self.rq_cfs.is_some()),
            ("rq.cpu_capacity", self.rq_cpu_capacity.is_some()),
            ("cfs_rq.avg.load_avg", self.cfs_rq_load_avg.is_some()),
            ("cfs_rq.h_load", self.cfs_rq_h_load.is_some()),
            (
                "cfs_rq.h_nr_delayed (or h_nr_queued/h_nr_runnable)",
                delayed,
            ),
            ("task_struct.wakee_flips", self.task_wakee_flips.is_some()),
            (
                "task_struct.wakee_flip_decay_ts",
                self.task_wakee_flip_decay_ts.is_some(),
            ),
            ("task_struct.last_wakee", self.task_last_wakee.is_some()),
        ]
        .into_iter()
        .filter(|(_, ok)| !ok)
        .map(|(n, _)| n)
        .collect()
    }
}

/// vmlinux BTF plus the lookups wakeviz does on it.
pub struct KernelBtf {
    btf: Btf,
}

impl KernelBtf {
    /// Parses from memory: btf-rs's file reader asks the kernel for its position once per type
    /// (about 125,000 `lseek` calls for a distribution kernel), one read of the file does not.
    pub fn open(path: &Path) -> anyhow::Result<Self> {
        let bytes = std::fs::read(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        let btf =
            Btf::from_bytes(&bytes).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        Ok(Self { btf })
    }

    fn struct_named(&self, name: &str) -> Option<btf_rs::Struct> {
        let types = self.btf.resolve_types_by_name(name).ok()?;
        types.into_iter().find_map(|t| match t {
            Type::Struct(s) if !s.members.is_empty() => Some(s),
            _ => None,
        })
    }

    /// Offset in bytes of `field` among `members`, descending into anonymous structs/unions.
    fn member_offset(&self, members: &[btf_rs::Member], field: &str) -> Option<(u64, Type)> {
        for m in members {
            let name = self.btf.resolve_name(m).unwrap_or_default();
            let Ok(ty) = self.btf.resolve_chained_type(m) else {
                continue;
            };
            if name == field {
                return Some((u64::from(m.bit_offset() / 8), ty));
            }
            if name.is_empty() {
                let inner = match &ty {
                    Type::Struct(inner) => self.member_offset(&inner.members, field),
                    Type::Union(u) => self.member_offset(&u.members, field),
                    _ => None,
                };
                if let Some((off, t)) = inner {
                    return Some((u64::from(m.bit_offset() / 8) + off, t));
                }
            }
        }
        None
    }

    /// `struct_name.a.b` style path offsets.
    pub fn offset(&self, struct_name: &str, path: &[&str]) -> Option<u64> {
        let mut s = self.struct_named(struct_name)?;
        let mut total = 0;
        for (i, field) in path.iter().enumerate() {
            let (off, ty) = self.member_offset(&s.members, field)?;
            total += off;
            if i + 1 < path.len() {
                s = match ty {
                    Type::Struct(inner) => inner,
                    _ => return None,
                };
            }
        }
        Some(total)
    }

    /// True if BTF describes a function of that exact name.
    pub fn has_func(&self, name: &str) -> bool {
        self.btf
            .resolve_types_by_name(name)
            .is_ok_and(|v| v.iter().any(|t| matches!(t, Type::Func(_))))
    }

    pub fn offsets(&self) -> Offsets {
        let task_cpu = self
            .offset("task_struct", &["thread_info", "cpu"])
            .or_else(|| self.offset("task_struct", &["cpu"]));
        Offsets {
            task_pid: self.offset("task_struct", &["pid"]),
            task_tgid: self.offset("task_struct", &["tgid"]),
            task_prio: self.offset("task_struct", &["prio"]),
            task_comm: self.offset("task_struct", &["comm"]),
            task_cpu,
            task_se_cfs_rq: self.offset("task_struct", &["se", "cfs_rq"]),
            cfs_rq_rq: self.offset("cfs_rq", &["rq"]),
            rq_nr_running: self.offset("rq", &["nr_running"]),
            rq_sd: self.offset("rq", &["sd"]),
            rq_cpu: self.offset("rq", &["cpu"]),
            sd_parent: self.offset("sched_domain", &["parent"]),
            sd_shared: self.offset("sched_domain", &["shared"]),
            sds_has_idle_cores: self.offset("sched_domain_shared", &["has_idle_cores"]),
            sds_nr_idle_scan: self.offset("sched_domain_shared", &["nr_idle_scan"]),
            task_se_load_avg: self.offset("task_struct", &["se", "avg", "load_avg"]),
            task_flags: self.offset("task_struct", &["flags"]),
            task_nr_cpus_allowed: self.offset("task_struct", &["nr_cpus_allowed"]),
            task_cpus_ptr: self.offset("task_struct", &["cpus_ptr"]),
            rq_cfs: self.offset("rq", &["cfs"]),
            rq_cpu_capacity: self.offset("rq", &["cpu_capacity"]),
            cfs_rq_load_avg: self.offset("cfs_rq", &["avg", "load_avg"]),
            cfs_rq_h_load: self.offset("cfs_rq", &["h_load"]),
            cfs_rq_h_nr_delayed: self.offset("cfs_rq", &["h_nr_delayed"]),
            cfs_rq_h_nr_queued: self.offset("cfs_rq", &["h_nr_queued"]),
            cfs_rq_h_nr_runnable: self.offset("cfs_rq", &["h_nr_runnable"]),
            task_wakee_flips: self.offset("task_struct", &["wakee_flips"]),
            task_wakee_flip_decay_ts: self.offset("task_struct", &["wakee_flip_decay_ts"]),
            task_last_wakee: self.offset("task_struct", &["last_wakee"]),
        }
    }
}
