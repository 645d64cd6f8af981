//! `--serve`: the endpoint of a live capture read by independent consumers. The Python
//! `prometheus_client` OpenMetrics parser reads the text; Debian's Prometheus server scrapes a
//! live `wakeviz --serve --headless` and its query API gives back the wakeup counter's
//! increase, which must match wakeviz's own counts. Live tests need root (CI is root); the
//! readers come from the project's set-up and are required when `CI=true`.
mod support;

use std::{
    collections::BTreeMap,
    io::{BufRead as _, BufReader, Read as _, Write as _},
    net::{SocketAddr, TcpListener, TcpStream},
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

const BIN: &str = env!("CARGO_BIN_EXE_wakeviz");

/// Outside CI a missing reader skips the test with the reason; in CI it fails it.
fn require(what: &str, found: bool) -> bool {
    if !found {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{what} is missing (scripts/setup.sh installs it)"
        );
        eprintln!("SKIPPED: {what} is missing (scripts/setup.sh installs it)");
    }
    found
}

fn python() -> Option<PathBuf> {
    let env = std::env::var_os("WAKEVIZ_PYENV").unwrap_or_else(|| "/opt/wakeviz-pyenv".into());
    let py = PathBuf::from(env).join("bin/python3");
    let ok = Command::new(&py)
        .args(["-c", "import prometheus_client.openmetrics.parser"])
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(py)
}

/// Live captures run one at a time: they share the machine's CPUs.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A child that is stopped (SIGKILL) if the test panics before stopping it properly.
struct Proc(Option<Child>);

impl Proc {
    /// Sends `sig` and waits: the exit status.
    fn stop(&mut self, sig: i32) -> std::process::ExitStatus {
        let mut c = self.0.take().expect("running");
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(c.id() as i32, sig) };
        c.wait().expect("wait")
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// `wakeviz --serve 127.0.0.1:0 --headless`, up and capturing, and the address it serves.
struct Live {
    proc: Proc,
    addr: SocketAddr,
    stderr: std::thread::JoinHandle<String>,
}

impl Live {
    fn start(extra: &[&std::ffi::OsStr]) -> Self {
        let mut c = Command::new(BIN)
            .args(["--serve", "127.0.0.1:0", "--headless", "--duration", "120s"])
            .args(extra)
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn wakeviz");
        let mut err = BufReader::new(c.stderr.take().expect("stderr"));
        let proc = Proc(Some(c));
        let mut seen = String::new();
        let mut addr = None;
        loop {
            let mut line = String::new();
            assert!(
                err.read_line(&mut line).expect("stderr") > 0,
                "wakeviz exited early:\n{seen}"
            );
            seen.push_str(&line);
            if let Some(rest) = line.strip_prefix("wakeviz: serving OpenMetrics at http://") {
                let a = rest.trim().trim_end_matches("/metrics");
                addr = Some(a.parse().expect("a socket address"));
            }
            if line.contains("capturing") {
                break;
            }
        }
        let addr = addr.unwrap_or_else(|| panic!("no serving line:\n{seen}"));
        let stderr = std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = err.read_to_string(&mut rest);
            seen + &rest
        });
        Self { proc, addr, stderr }
    }

    /// SIGINT, as a user's Ctrl-C: a clean exit, and everything it printed.
    fn stop(mut self) -> String {
        let st = self.proc.stop(libc::SIGINT);
        let err = self.stderr.join().expect("stderr reader");
        assert!(st.success(), "{st}\n{err}");
        err
    }
}

/// One HTTP/1.0 GET: status code and body.
fn http_get(addr: SocketAddr, target: &str) -> (u16, String) {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(s, "GET {target} HTTP/1.0\r\nHost: {addr}\r\n\r\n").expect("send");
    let mut out = Vec::new();
    s.read_to_end(&mut out).expect("read");
    let out = String::from_utf8(out).expect("utf-8");
    let (head, body) = out.split_once("\r\n\r\n").expect("a reply");
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("a status code");
    (code, body.to_string())
}

/// The value of the unlabelled sample `name` in an exposition.
fn sample(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in\n{text}"))
}

/// Wakeups from this process: a thread sleeping 500 µs at a time (a timer wakeup each).
struct Sleeper(Arc<AtomicBool>, Option<std::thread::JoinHandle<()>>);

impl Sleeper {
    fn start() -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let h = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_micros(500));
            }
        });
        Self(stop, Some(h))
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
        if let Some(h) = self.1.take() {
            let _ = h.join();
        }
    }
}

#[test]
fn the_text_parses_with_the_python_openmetrics_parser() {
    if !support::root() {
        return;
    }
    let Some(py) = python() else {
        require(
            "the Python venv with prometheus_client (WAKEVIZ_PYENV)",
            false,
        );
        return;
    };
    let _guard = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    // Recording keeps the per-event stream (and so the shadow's series) whatever mode a bare
    // `--serve --headless` runs in.
    let dir = tempfile::tempdir().expect("tempdir");
    let rec = dir.path().join("served.wvz");
    let live = Live::start(&["--record".as_ref(), rec.as_os_str()]);
    let work = Sleeper::start();
    std::thread::sleep(Duration::from_millis(1500));
    let (code, text) = http_get(live.addr, "/metrics");
    drop(work);
    live.stop();
    assert_eq!(code, 200, "{text}");
    let script = r#"
import sys, json
from prometheus_client.openmetrics.parser import text_string_to_metric_families
out = {}
for f in text_string_to_metric_families(sys.stdin.read()):
    out[f.name] = {"type": f.type, "unit": f.unit,
                   "samples": [[s.name, s.labels, s.value] for s in f.samples]}
print(json.dumps(out))
"#;
    let mut c = Command::new(&py)
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python");
    c.stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("feed");
    let out = c.wait_with_output().expect("python");
    assert!(
        out.status.success(),
        "the parser refused the text: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fams: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    for (name, ty, unit) in [
        ("wakeviz_build", "info", ""),
        ("wakeviz_probe", "info", ""),
        ("wakeviz_wakeups", "counter", ""),
        ("wakeviz_wakeup_placements", "counter", ""),
        ("wakeviz_migrations", "counter", ""),
        ("wakeviz_dropped_events", "counter", ""),
        ("wakeviz_wakeup_to_run_seconds", "histogram", "seconds"),
        (
            "wakeviz_wakeup_to_run_by_level_seconds",
            "histogram",
            "seconds",
        ),
        ("wakeviz_shadow_agreement_ratio", "gauge", "ratio"),
        ("wakeviz_shadow_idle_hit_ratio", "gauge", "ratio"),
    ] {
        let f = &fams[name];
        assert_eq!(f["type"], ty, "{name}: {f}");
        assert_eq!(f["unit"], unit, "{name}: {f}");
    }
    // The parser's figure is the one wakeviz wrote, and the capture saw the sleeper.
    let parsed = fams["wakeviz_wakeups"]["samples"][0][2]
        .as_f64()
        .expect("a value");
    assert_eq!(parsed, sample(&text, "wakeviz_wakeups_total"));
    assert!(parsed > 100.0, "{parsed} wakeups in 1.5 s of 500 µs sleeps");
    let levels = fams["wakeviz_wakeup_placements"]["samples"]
        .as_array()
        .expect("samples");
    let waker: f64 = levels
        .iter()
        .filter(|s| s[1]["relation"] == "vs_waker")
        .map(|s| s[2].as_f64().unwrap_or(0.0))
        .sum();
    assert!(waker > 0.0 && waker <= parsed, "{waker} of {parsed}");
    // Bounded labels only.
    for f in fams.as_object().expect("families").values() {
        for s in f["samples"].as_array().expect("samples") {
            for k in s[1].as_object().expect("labels").keys() {
                assert!(!["pid", "tid", "comm"].contains(&k.as_str()), "{s}");
            }
        }
    }
}

/// Percent-encodes a query parameter.
fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `/api/v1/query` at `time_ms`: the `data.result` array.
fn promql(addr: SocketAddr, q: &str, time_ms: i64) -> Vec<serde_json::Value> {
    let t = format!("{}.{:03}", time_ms / 1000, time_ms % 1000);
    let (code, body) = http_get(addr, &format!("/api/v1/query?query={}&time={t}", enc(q)));
    assert_eq!(code, 200, "{q}: {body}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(v["status"], "success", "{q}: {body}");
    v["data"]["result"].as_array().expect("result").clone()
}

/// `[(ts ms, value)]` of the one series a range selector returns.
fn points(result: &[serde_json::Value]) -> Vec<(i64, f64)> {
    assert_eq!(result.len(), 1, "one series: {result:?}");
    result[0]["values"]
        .as_array()
        .expect("values")
        .iter()
        .map(|p| {
            let ts = (p[0].as_f64().expect("ts") * 1000.0).round() as i64;
            let v = p[1].as_str().expect("value").parse().expect("number");
            (ts, v)
        })
        .collect()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Prometheus scrapes the live endpoint every second. Each scrape's `wakeviz_wakeups_total`
/// comes with `wakeviz_snapshots_published_total` from the same snapshot, and the test reads
/// every snapshot directly too (polling faster than they are published), so the two ends of
/// Prometheus' window are matched to wakeviz's own counts of the same snapshots: the
/// comparison is exact in principle, and the 1 % bound only absorbs what cannot happen.
#[test]
fn prometheus_scrapes_the_wakeup_counter_that_wakeviz_counts() {
    if !support::root() {
        return;
    }
    let prom = std::env::var_os("WAKEVIZ_PROMETHEUS")
        .map_or_else(|| PathBuf::from("/usr/bin/prometheus"), PathBuf::from);
    if !require("Debian's prometheus (/usr/bin/prometheus)", prom.exists()) {
        return;
    }
    let _guard = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let live = Live::start(&[]);
    let work = Sleeper::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = dir.path().join("prometheus.yml");
    std::fs::write(
        &cfg,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  \
             - job_name: wakeviz\n    static_configs:\n      - targets: ['{}']\n",
            live.addr
        ),
    )
    .expect("config");
    let papi: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().expect("addr");
    let log = std::fs::File::create(dir.path().join("prometheus.log")).expect("log");
    let mut p = Proc(Some(
        Command::new(&prom)
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={papi}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn prometheus"),
    ));
    let plog = || std::fs::read_to_string(dir.path().join("prometheus.log")).unwrap_or_default();
    let t = Instant::now();
    while TcpStream::connect(papi).is_err() || http_get(papi, "/-/ready").0 != 200 {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "prometheus not ready:\n{}",
            plog()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // wakeviz's own view of every snapshot: seq -> wakeups.
    let mut own: BTreeMap<u64, f64> = BTreeMap::new();
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(10) {
        let (code, text) = http_get(live.addr, "/metrics");
        assert_eq!(code, 200, "{text}");
        let seq = sample(&text, "wakeviz_snapshots_published_total") as u64;
        let n = sample(&text, "wakeviz_wakeups_total");
        let old = own.insert(seq, n);
        assert!(
            old.is_none_or(|o| o == n),
            "snapshot {seq}: {old:?} then {n}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(work);
    let at = now_ms();
    let wake = points(&promql(papi, "wakeviz_wakeups_total[30s]", at));
    let seqs = points(&promql(papi, "wakeviz_snapshots_published_total[30s]", at));
    let seq_at: BTreeMap<i64, u64> = seqs.iter().map(|&(ts, s)| (ts, s as u64)).collect();
    // Scrapes whose snapshot the test saw too.
    let matched: Vec<(i64, u64, f64)> = wake
        .iter()
        .filter_map(|&(ts, v)| {
            let s = *seq_at.get(&ts)?;
            own.contains_key(&s).then_some((ts, s, v))
        })
        .collect();
    let facts = format!("prometheus {wake:?}\nseqs {seqs:?}\nown {own:?}");
    assert!(matched.len() >= 4, "too few matched scrapes: {facts}");
    for &(_, s, v) in &matched {
        assert_eq!(own[&s], v, "snapshot {s}: {facts}");
    }
    let (&(t0, s0, _), &(t1, s1, _)) =
        (matched.first().expect("one"), matched.last().expect("one"));
    assert!(t1 - t0 >= 3_000, "window {} ms: {facts}", t1 - t0);
    // Prometheus' own increase over exactly that window (the sample at t1 minus the one at t0).
    let q = format!(
        "wakeviz_wakeups_total - wakeviz_wakeups_total offset {}ms",
        t1 - t0
    );
    let r = promql(papi, &q, t1);
    assert_eq!(r.len(), 1, "{q}: {r:?}");
    let increase: f64 = r[0]["value"][1]
        .as_str()
        .and_then(|v| v.parse().ok())
        .expect("a value");
    let direct = own[&s1] - own[&s0];
    eprintln!(
        "prometheus: {q} @ {t1} ms = {increase}; wakeviz /metrics, snapshots {s0}..{s1}: {direct}"
    );
    assert!(direct > 1000.0, "the sleeper woke: {direct}: {facts}");
    assert!(
        (increase - direct).abs() <= 0.01 * direct,
        "{increase} vs {direct}: {facts}"
    );
    assert!(p.stop(libc::SIGTERM).success(), "{}", plog());
    live.stop();
}

#[test]
fn a_busy_or_bad_address_is_one_line_before_anything_is_attached() {
    let taken = TcpListener::bind("127.0.0.1:0").expect("bind");
    let busy = taken.local_addr().expect("addr").to_string();
    for (addr, code, says) in [
        (busy.as_str(), 1, "Address already in use"),
        // Beyond loopback without the flag: refused, naming it.
        ("0.0.0.0:9345", 1, "--serve-public"),
        ("not-an-address", 2, "invalid socket address"),
    ] {
        let t = Instant::now();
        let out = Command::new(BIN)
            .args(["--serve", addr, "--headless", "--duration", "5s"])
            .output()
            .expect("run wakeviz");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{addr}: {err}");
        assert!(err.contains(says) && err.contains(addr), "{addr}: {err}");
        // Refused before the probes were loaded (their table is printed once attached).
        assert!(
            !err.contains("probes") && !err.contains("capturing"),
            "{err}"
        );
        assert!(t.elapsed() < Duration::from_secs(5), "{addr}: ran");
        if code == 1 {
            assert_eq!(err.trim().lines().count(), 1, "{err}");
            assert!(
                err.starts_with(&format!("wakeviz: --serve {addr}: ")),
                "{err}"
            );
        }
    }
}
