//! The HTTP side of `--serve`: one thread, `wakeviz-serve`, accepting and serving every
//! connection as a task of its own single-threaded runtime, at most [`MAX_CONNECTIONS`] at
//! once, `GET`/`HEAD /metrics` only, `Connection: close`. A client gets [`REQUEST_DEADLINE`] to
//! send at most [`MAX_REQUEST`] bytes of request head and as long again to take the reply, so a
//! slow or hostile client holds one connection slot for about 4 s at most, never the other
//! clients (slow clients are served side by side, a normal scrape is not queued behind them)
//! and never the capture, which only ever swaps a pointer (see [`super::Slot`]). A connection
//! beyond the limit is closed at once.
//!
//! No thread is started per connection: the thread exists before the capture starts, so it is
//! in the recorded list of wakeviz's own threads and a scrape's wakeups are never counted as
//! the workload's.
//!
//! Hand-written on `tokio::net` and `httparse` rather than `tiny_http` (0.12), which starts a
//! thread for every waiting connection without a bound and sets no socket timeouts.
use std::{
    io,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::{TcpListener, TcpStream},
};

use super::{Slot, metrics};

/// Bytes of request line and headers accepted; a GET from Prometheus is about 300.
pub const MAX_REQUEST: usize = 8 << 10;
/// Time a client has to send its request, and again to read the reply.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(2);
const MAX_HEADERS: usize = 32;
/// Connections served at once. Scrapers are a handful; the bound is for clients that connect
/// and dawdle: each costs a task and its buffers for the deadlines above at most.
pub const MAX_CONNECTIONS: usize = 256;

/// Serves until `stop` is set (checked at each accept: see [`super::Server`]'s drop). In-flight
/// connections end with the runtime.
pub(super) fn serve(listener: std::net::TcpListener, slot: Arc<Slot>, stop: Arc<AtomicBool>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    match rt {
        Ok(rt) => rt.block_on(accept(listener, slot, stop)),
        Err(e) => log::warn!("serve: cannot start the server's runtime: {e}"),
    }
}

async fn accept(listener: std::net::TcpListener, slot: Arc<Slot>, stop: Arc<AtomicBool>) {
    let listener = match listener
        .set_nonblocking(true)
        .and_then(|()| TcpListener::from_std(listener))
    {
        Ok(l) => l,
        Err(e) => {
            log::warn!("serve: cannot watch the listening socket: {e}");
            return;
        }
    };
    let active = Arc::new(AtomicUsize::new(0));
    loop {
        let accepted = listener.accept().await;
        if stop.load(Ordering::Acquire) {
            return;
        }
        match accepted {
            Ok((stream, peer)) => {
                if active.load(Ordering::Acquire) >= MAX_CONNECTIONS {
                    // Full: closed unread rather than queued, so the backlog never fills with
                    // connections that would wait for a slot.
                    log::debug!("serve: {peer}: {MAX_CONNECTIONS} connections open, closed");
                    drop(stream);
                    continue;
                }
                active.fetch_add(1, Ordering::AcqRel);
                let slot = slot.clone();
                let done = Open(active.clone());
                tokio::spawn(async move {
                    let _done = done;
                    if let Err(e) = handle(stream, &slot).await {
                        log::debug!("serve: {peer}: {e}");
                    }
                });
            }
            Err(e) => {
                // Out of descriptors and the like: do not spin.
                log::warn!("serve: accept: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// One connection's place in the count of open ones, given back when its thread ends.
struct Open(Arc<AtomicUsize>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A reply: status line, extra headers, body (left out for HEAD).
struct Reply {
    status: &'static str,
    headers: Vec<(&'static str, String)>,
    body: String,
}

impl Reply {
    fn text(status: &'static str, body: &str) -> Self {
        Self {
            status,
            headers: vec![("Content-Type", "text/plain; charset=utf-8".into())],
            body: format!("{body}\n"),
        }
    }
}

async fn handle(mut stream: TcpStream, slot: &Slot) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let reply = match tokio::time::timeout(REQUEST_DEADLINE, read_request(&mut stream)).await {
        Ok(Ok(Head::Request(Request { head, path }))) => Some((route(&path, slot), head)),
        Ok(Ok(Head::Refused(r))) => Some((r, false)),
        Ok(Ok(Head::Closed)) => None,
        Ok(Err(e)) => return Err(e),
        Err(_) => Some((
            Reply::text("408 Request Timeout", "request too slow"),
            false,
        )),
    };
    if let Some((r, head)) = reply {
        write_reply(&mut stream, &r, head).await?;
    }
    linger(&mut stream).await;
    Ok(())
}

/// Closes gently: closing with unread input makes the kernel send a reset, which can destroy
/// a reply (a refused oversized request) before the client reads it. So the write side is
/// shut first and what the client still sends is read away, for [`LINGER`] at most.
async fn linger(stream: &mut TcpStream) {
    const LINGER: Duration = Duration::from_millis(250);
    if stream.shutdown().await.is_err() {
        return;
    }
    let mut sink = [0u8; 4096];
    let _ = tokio::time::timeout(LINGER, async {
        while let Ok(n) = stream.read(&mut sink).await {
            if n == 0 {
                break;
            }
        }
    })
    .await;
}

struct Request {
    /// A HEAD request: the reply carries no body.
    head: bool,
    path: String,
}

/// What a connection sent before its deadline.
enum Head {
    Request(Request),
    /// Malformed, oversized or not a GET/HEAD: answered with this.
    Refused(Reply),
    /// The client closed before finishing a request.
    Closed,
}

/// Reads one request head (the caller bounds the time it may take).
async fn read_request(stream: &mut TcpStream) -> io::Result<Head> {
    let mut buf = vec![0u8; MAX_REQUEST];
    let mut n = 0;
    loop {
        let got = match stream.read(&mut buf[n..]).await {
            Ok(0) => return Ok(Head::Closed),
            Ok(k) => k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        n += got;
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut headers);
        let refused = |status, why: &str| Ok(Head::Refused(Reply::text(status, why)));
        match req.parse(&buf[..n]) {
            Ok(httparse::Status::Complete(_)) => {
                let method = req.method.unwrap_or_default();
                let path = req.path.unwrap_or_default().to_string();
                if method != "GET" && method != "HEAD" {
                    let mut r = Reply::text("405 Method Not Allowed", "only GET and HEAD");
                    r.headers.push(("Allow", "GET, HEAD".into()));
                    return Ok(Head::Refused(r));
                }
                return Ok(Head::Request(Request {
                    head: method == "HEAD",
                    path,
                }));
            }
            Ok(httparse::Status::Partial) if n == buf.len() => {
                return refused(
                    "431 Request Header Fields Too Large",
                    "request head too large",
                );
            }
            Ok(httparse::Status::Partial) => {}
            Err(httparse::Error::TooManyHeaders) => {
                return refused("431 Request Header Fields Too Large", "too many headers");
            }
            Err(e) => return refused("400 Bad Request", &e.to_string()),
        }
    }
}

fn route(path: &str, slot: &Slot) -> Reply {
    // Prometheus may append parameters; the path alone decides.
    if path.split('?').next() != Some("/metrics") {
        return Reply::text("404 Not Found", "not found: the metrics are at /metrics");
    }
    let Some(p) = slot.latest() else {
        let mut r = Reply::text(
            "503 Service Unavailable",
            "no snapshot yet: capture starting",
        );
        r.headers.push(("Retry-After", "1".into()));
        return r;
    };
    match metrics::encode(&p) {
        Ok(body) => Reply {
            status: "200 OK",
            headers: vec![("Content-Type", metrics::CONTENT_TYPE.into())],
            body,
        },
        Err(e) => Reply::text(
            "500 Internal Server Error",
            &format!("encoding failed: {e}"),
        ),
    }
}

async fn write_reply(stream: &mut TcpStream, r: &Reply, head: bool) -> io::Result<()> {
    let mut out = format!("HTTP/1.1 {}\r\n", r.status);
    for (k, v) in &r.headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        r.body.len()
    ));
    let mut bytes = out.into_bytes();
    if !head {
        bytes.extend_from_slice(r.body.as_bytes());
    }
    // One deadline for the whole reply: a reader taking a byte at a time cannot stretch it.
    match tokio::time::timeout(REQUEST_DEADLINE, async {
        stream.write_all(&bytes).await?;
        stream.flush().await
    })
    .await
    {
        Ok(r) => r,
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "reply not read in time",
        )),
    }
}
