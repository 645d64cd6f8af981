//! Structure-aware: a sysfs `devices/system` tree written to a temporary directory from
//! `arbitrary` choices (which of the files the reader consumes exist, and what they hold:
//! plausible lists and numbers mostly, sometimes junk or values beyond the limits), then read
//! with `from_sysfs`. Never a panic, and nothing a file says sizes memory past the limits.
#![no_main]

use std::path::PathBuf;

use libfuzzer_sys::{
    arbitrary::{Result, Unstructured},
    fuzz_target,
};
use wakeviz_fuzz::{cpulist, num};

fn content(u: &mut Unstructured, n: u32, list: bool) -> Result<String> {
    Ok(match u.int_in_range(0..=9u8)? {
        0 => {
            let s: &str = u.arbitrary()?;
            s.chars().take(128).collect()
        }
        1 => String::new(),
        _ if list => cpulist(u, n)?,
        _ => num(u, n)?.to_string(),
    } + "\n")
}

fn tree(u: &mut Unstructured) -> Result<Vec<(String, String)>> {
    let n = u.int_in_range(1..=8u32)?;
    let mut files = Vec::new();
    let online = if u.ratio(7, 8)? {
        format!("0-{}\n", n - 1)
    } else {
        content(u, n, true)?
    };
    files.push(("cpu/online".into(), online));
    if u.arbitrary()? {
        files.push(("cpu/present".into(), content(u, n, true)?));
    }
    for c in 0..n {
        let t = format!("cpu/cpu{c}/topology");
        for (f, list) in [
            ("physical_package_id", false),
            ("die_id", false),
            ("core_id", false),
            ("thread_siblings_list", true),
        ] {
            if u.ratio(7, 8)? {
                files.push((format!("{t}/{f}"), content(u, n, list)?));
            }
        }
        for i in 0..u.int_in_range(0..=3u8)? {
            let d = format!("cpu/cpu{c}/cache/index{i}");
            let kind = *u.choose(&["Data", "Instruction", "Unified", "junk"])?;
            files.push((format!("{d}/type"), format!("{kind}\n")));
            files.push((format!("{d}/level"), content(u, 4, false)?));
            files.push((format!("{d}/shared_cpu_list"), content(u, n, true)?));
            files.push((format!("{d}/id"), content(u, n, false)?));
        }
    }
    let nodes = u.int_in_range(0..=4u32)?;
    for k in 0..nodes {
        files.push((format!("node/node{k}/cpulist"), content(u, n, true)?));
        if u.ratio(3, 4)? {
            let row: Vec<String> = (0..nodes)
                .map(|j| {
                    Ok(if j == k {
                        10
                    } else {
                        u.int_in_range(10..=40u32)?
                    }
                    .to_string())
                })
                .collect::<Result<_>>()?;
            files.push((format!("node/node{k}/distance"), row.join(" ") + "\n"));
        }
    }
    Ok(files)
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(files) = tree(&mut u) else {
        return;
    };
    let root: PathBuf =
        std::env::temp_dir().join(format!("wakeviz-fuzz-sysfs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for (rel, body) in &files {
        let p = root.join(rel);
        if let Some(d) = p.parent() {
            let _ = std::fs::create_dir_all(d);
        }
        let _ = std::fs::write(&p, body);
    }
    if let Ok(t) = wakeviz_core::topology::from_sysfs(&root) {
        let _ = (t.summary(), t.domain_rows());
    }
    let _ = std::fs::remove_dir_all(&root);
});
