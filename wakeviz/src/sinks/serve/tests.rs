//! The endpoint over real sockets: routes, methods, bounds, and clients that cannot stall it.
use std::{
    io::{Read as _, Write as _},
    net::{SocketAddr, TcpStream},
    sync::Arc,
    time::{Duration, Instant},
};

use super::{Server, http, metrics::tests::snapshot};

fn server() -> Server {
    Server::bind("127.0.0.1:0".parse().expect("addr"), false).expect("bind a free port")
}

/// Sends `req` as is and returns the whole reply (the server closes after one).
fn exchange(addr: SocketAddr, req: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    s.write_all(req).expect("send");
    let mut out = Vec::new();
    s.read_to_end(&mut out).expect("reply");
    String::from_utf8(out).expect("utf-8 reply")
}

fn get(addr: SocketAddr, path: &str) -> String {
    exchange(
        addr,
        format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes(),
    )
}

fn status(reply: &str) -> &str {
    reply.lines().next().unwrap_or_default()
}

#[test]
fn metrics_after_the_first_snapshot_and_nothing_else() {
    let srv = server();
    let a = srv.local_addr();
    let r = get(a, "/metrics");
    assert_eq!(status(&r), "HTTP/1.1 503 Service Unavailable", "{r}");
    assert!(r.contains("Retry-After: 1\r\n"), "{r}");

    srv.publish(Arc::new(snapshot(2_000)));
    srv.publish(Arc::new(snapshot(4_000)));
    let r = get(a, "/metrics");
    assert_eq!(status(&r), "HTTP/1.1 200 OK", "{r}");
    assert!(
        r.contains(
            "\r\nContent-Type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\n"
        ),
        "{r}"
    );
    let (head, body) = r.split_once("\r\n\r\n").expect("head and body");
    assert!(body.ends_with("# EOF\n"));
    assert!(
        body.contains("\nwakeviz_snapshots_published_total 2\n"),
        "{body}"
    );
    assert!(
        head.contains(&format!("Content-Length: {}", body.len())),
        "{head}"
    );

    let h = exchange(a, b"HEAD /metrics HTTP/1.1\r\n\r\n");
    let (hhead, hbody) = h.split_once("\r\n\r\n").expect("head");
    assert_eq!(status(&h), "HTTP/1.1 200 OK");
    assert!(hbody.is_empty(), "HEAD has no body: {hbody}");
    assert!(hhead.contains(&format!("Content-Length: {}", body.len())));

    assert!(get(a, "/metrics?x=1").starts_with("HTTP/1.1 200 OK"));
    for p in ["/", "/metricsx", "/metrics/"] {
        assert_eq!(status(&get(a, p)), "HTTP/1.1 404 Not Found", "{p}");
    }
    let r = exchange(a, b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(status(&r), "HTTP/1.1 405 Method Not Allowed", "{r}");
    assert!(r.contains("Allow: GET, HEAD\r\n"), "{r}");
    let r = exchange(a, b"\x16\x03\x01garbage\r\n\r\n");
    assert_eq!(status(&r), "HTTP/1.1 400 Bad Request", "{r}");
}

#[test]
fn an_oversized_request_is_refused_unread() {
    let srv = server();
    srv.publish(Arc::new(snapshot(100)));
    let big = format!(
        "GET /metrics HTTP/1.1\r\nX-Pad: {}\r\n\r\n",
        "a".repeat(http::MAX_REQUEST)
    );
    let r = exchange(srv.local_addr(), big.as_bytes());
    assert_eq!(
        status(&r),
        "HTTP/1.1 431 Request Header Fields Too Large",
        "{r}"
    );
    // And the endpoint still serves.
    assert!(get(srv.local_addr(), "/metrics").starts_with("HTTP/1.1 200 OK"));
}

#[test]
fn a_silent_client_delays_scrapes_by_the_deadline_and_never_the_publisher() {
    let srv = server();
    let a = srv.local_addr();
    srv.publish(Arc::new(snapshot(100)));
    // Connected, sends half a request line, then nothing.
    let mut silent = TcpStream::connect(a).expect("connect");
    silent.write_all(b"GET /met").expect("send");
    std::thread::sleep(Duration::from_millis(100));
    let snap = Arc::new(snapshot(0));
    let t = Instant::now();
    let mut published = 0;
    while t.elapsed() < Duration::from_millis(500) {
        assert!(srv.try_publish(snap.clone()).is_ok());
        published += 1;
    }
    assert!(published > 10, "publishing went on: {published}");
    let t = Instant::now();
    let r = get(a, "/metrics");
    assert_eq!(status(&r), "HTTP/1.1 200 OK");
    let waited = t.elapsed();
    assert!(
        waited < http::REQUEST_DEADLINE + Duration::from_secs(1),
        "the next scrape waited {waited:?}"
    );
    // The silent client was cut off with a 408.
    let mut out = String::new();
    silent
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    silent.read_to_string(&mut out).expect("reply");
    assert_eq!(status(&out), "HTTP/1.1 408 Request Timeout", "{out}");
}

#[test]
fn a_busy_or_bad_address_is_one_line() {
    let srv = server();
    let e = match Server::bind(srv.local_addr(), false) {
        Ok(_) => panic!("bound a port in use"),
        Err(e) => format!("{e:#}"),
    };
    assert!(
        e.starts_with(&format!(
            "--serve {}: cannot listen there: ",
            srv.local_addr()
        )),
        "{e}"
    );
    assert!(e.contains("in use") && !e.contains('\n'), "{e}");
}

#[test]
fn dropping_the_server_closes_the_port() {
    let srv = server();
    let a = srv.local_addr();
    drop(srv);
    let t = Instant::now();
    while TcpStream::connect_timeout(&a, Duration::from_millis(100)).is_ok() {
        assert!(t.elapsed() < Duration::from_secs(3), "still listening");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_report_fold_publishes_itself_at_most_twice_a_second() {
    use wakeviz_core::{
        analysis::Analysis,
        source::{EventSource as _, ReplaySource},
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let topo = crate::dashboard::app::tests::topo();
    let path = crate::dashboard::app::tests::recording(dir.path(), &topo, 50_000);
    let srv = server();
    let mut src = ReplaySource::open(&path).expect("open");
    let built = wakeviz_core::shadow::evaluators_built();
    let mut report = Analysis::new(src.header());
    let publisher = srv.publisher(report.snapshot());
    let first = srv.slot.latest().expect("published at once");
    assert_eq!((first.seq, first.snap.placement.wakeups.count), (1, 0));
    let mut fold = super::Fold {
        analysis: &mut report,
        publisher: Some(publisher),
    };
    let t = Instant::now();
    let out = crate::driver::run(
        &mut src,
        &mut [&mut fold],
        &crate::driver::Options::default(),
        None,
    );
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(
        wakeviz_core::shadow::evaluators_built() - built,
        1,
        "the report and /metrics share one fold"
    );
    let last = srv.slot.latest().expect("published");
    let want = report.snapshot();
    assert!(want.placement.wakeups.count > 1000);
    assert_eq!(*last.snap, want, "the last publication is the whole stream");
    let most = 2 + (t.elapsed().as_millis() / super::PUBLISH_EVERY.as_millis()) as u64;
    assert!(
        last.seq >= 2 && last.seq <= most,
        "{} publications",
        last.seq
    );
}

/// The dashboard's fold is the one `/metrics` serves; a filter or a reset made in the dashboard
/// folds into a view of its own and never resets the published figures.
#[test]
fn the_dashboard_fold_is_published_and_its_filter_is_a_view() {
    use wakeviz_core::{
        analysis::Filter,
        source::{EventSource as _, ReplaySource},
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let topo = crate::dashboard::app::tests::topo();
    let path = crate::dashboard::app::tests::recording(dir.path(), &topo, 20_000);
    let mut src = ReplaySource::open(&path).expect("open");
    let built = wakeviz_core::shadow::evaluators_built();
    let mut data = crate::dashboard::app::data::Data::new(src.header(), true);
    assert_eq!(wakeviz_core::shadow::evaluators_built() - built, 1);
    let mut half = true;
    loop {
        match src.poll(Duration::ZERO).expect("poll") {
            wakeviz_core::source::Poll::Batch(b) => {
                data.on_batch(&b);
                if half && data.run_snapshot().events.total() > 10_000 {
                    half = false;
                    data.set_filter(Some(Filter::Pid(1)));
                    data.reset();
                }
            }
            wakeviz_core::source::Poll::Pending => {}
            wakeviz_core::source::Poll::End => break,
        }
    }
    data.refresh();
    let run = data.run_snapshot();
    assert_eq!(run.events.total(), 20_000, "published counters never reset");
    assert!(
        data.snap.events.total() < 20_000,
        "the view counts from its reset"
    );
    assert_eq!(run.placement.filter, None);
    assert_eq!(data.snap.placement.filter.as_deref(), Some("pid:1"));
    data.set_filter(None);
    data.refresh();
    assert_eq!(
        data.snap, run,
        "clearing the filter shows the run's fold again"
    );
}

/// A scrape with its own bound: the reply within `limit`, or why not.
fn scrape_within(a: SocketAddr, limit: Duration) -> Result<String, String> {
    let mut s = TcpStream::connect_timeout(&a, limit).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(limit)).map_err(|e| e.to_string())?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .map_err(|e| format!("send: {e}"))?;
    let mut out = Vec::new();
    s.read_to_end(&mut out).map_err(|e| format!("reply: {e}"))?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Slowloris: 200 clients connected, each sending its request a byte a second. Served one at
/// a time, a scrape behind them waited minutes; served side by side it is answered at once.
#[test]
fn two_hundred_slow_clients_do_not_delay_a_scrape() {
    const SLOW: usize = 200;
    let srv = server();
    let a = srv.local_addr();
    srv.publish(Arc::new(snapshot(100)));
    let mut slow: Vec<TcpStream> = (0..SLOW)
        .map(|_| TcpStream::connect_timeout(&a, Duration::from_secs(2)).expect("connect"))
        .collect();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let dripping = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let req = b"GET /metrics HTTP/1.1\r\n";
            // Bounded: a byte a second for 5 s at most, whatever the server does.
            for i in 0..5 {
                if stop.load(std::sync::atomic::Ordering::Acquire) {
                    break;
                }
                for s in &mut slow {
                    let _ = s.write_all(&req[i..=i]);
                }
                std::thread::sleep(Duration::from_secs(1));
            }
        })
    };
    // Every slow client has sent a byte and been accepted.
    std::thread::sleep(Duration::from_millis(300));
    let t = Instant::now();
    let r = scrape_within(a, Duration::from_secs(3));
    let took = t.elapsed();
    stop.store(true, std::sync::atomic::Ordering::Release);
    dripping.join().expect("drip thread");
    let r = r.unwrap_or_else(|e| panic!("scrape failed after {took:?}: {e}"));
    assert_eq!(status(&r), "HTTP/1.1 200 OK", "{r}");
    assert!(
        took < Duration::from_secs(1),
        "the scrape took {took:?} behind {SLOW} slow clients"
    );
}

#[test]
fn beyond_loopback_only_with_the_flag() {
    for addr in ["0.0.0.0:0", "[::]:0"] {
        let addr: SocketAddr = addr.parse().expect("addr");
        let e = match Server::bind(addr, false) {
            Ok(_) => panic!("{addr}: bound without --serve-public"),
            Err(e) => format!("{e:#}"),
        };
        assert!(
            e.contains("--serve-public") && e.contains("every task") && !e.contains('\n'),
            "{e}"
        );
    }
    let srv = Server::bind("0.0.0.0:0".parse().expect("addr"), true).expect("bind with the flag");
    assert!(srv.local_addr().ip().is_unspecified());
    for addr in ["127.0.0.1:0", "127.0.0.2:0"] {
        assert!(
            Server::bind(addr.parse().expect("addr"), false).is_ok(),
            "{addr}"
        );
    }
}
