//! The HTTP side of `--serve`: an accepting thread and one short-lived thread per connection,
//! at most [`MAX_CONNECTIONS`] at once, `GET`/`HEAD /metrics` only, `Connection: close`. A
//! client gets [`REQUEST_DEADLINE`] to send at most [`MAX_REQUEST`] bytes of request head and
//! as long again to take the reply, so a slow or hostile client holds one connection slot for
//! about 4 s at most, never the other clients (slow clients are served side by side, a normal
//! scrape is not queued behind them) and never the capture, which only ever swaps a pointer
//! (see [`super::Slot`]). A connection beyond the limit is closed at once.
//!
//! Hand-written on `std::net` and `httparse` rather than `tiny_http` (0.12), which starts a
//! thread for every waiting connection without a bound and sets no socket timeouts.
use std::{
    io::{self, Read as _, Write as _},
    net::{TcpListener, TcpStream},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use super::{Slot, metrics};

/// Bytes of request line and headers accepted; a GET from Prometheus is about 300.
pub const MAX_REQUEST: usize = 8 << 10;
/// Time a client has to send its request, and again to read the reply.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(2);
const MAX_HEADERS: usize = 32;
/// Connections served at once. Scrapers are a handful; the bound is for clients that connect
/// and dawdle: each costs one thread with a small stack for the deadlines above at most.
pub const MAX_CONNECTIONS: usize = 256;
/// Stack of a connection thread: parsing and encoding need little, and a few hundred of them
/// must not reserve gigabytes of address space.
const THREAD_STACK: usize = 256 << 10;

/// Accepts until `stop` is set (the next connection after it, see [`super::Server`]'s drop).
pub(super) fn serve(listener: TcpListener, slot: Arc<Slot>, stop: Arc<AtomicBool>) {
    let active = Arc::new(AtomicUsize::new(0));
    loop {
        let accepted = listener.accept();
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
                let spawned = std::thread::Builder::new()
                    .name("wakeviz-serve-conn".into())
                    .stack_size(THREAD_STACK)
                    .spawn(move || {
                        let _done = done;
                        if let Err(e) = handle(stream, &slot) {
                            log::debug!("serve: {peer}: {e}");
                        }
                    });
                if let Err(e) = spawned {
                    // The closure (and with it the slot count) was dropped with the error.
                    log::warn!("serve: cannot start a connection thread: {e}");
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
            Err(e) => {
                // Out of descriptors and the like: do not spin.
                log::warn!("serve: accept: {e}");
                std::thread::sleep(Duration::from_millis(100));
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

fn handle(mut stream: TcpStream, slot: &Slot) -> io::Result<()> {
    let deadline = Instant::now() + REQUEST_DEADLINE;
    stream.set_nodelay(true)?;
    if let Some(Request { head, path }) = read_request(&mut stream, deadline)? {
        write_reply(&mut stream, &route(&path, slot), head)?;
    }
    linger(&mut stream);
    Ok(())
}

/// Closes gently: closing with unread input makes the kernel send a reset, which can destroy
/// a reply (a refused oversized request) before the client reads it. So the write side is
/// shut first and what the client still sends is read away, for [`LINGER`] at most.
fn linger(stream: &mut TcpStream) {
    const LINGER: Duration = Duration::from_millis(250);
    if stream.shutdown(std::net::Shutdown::Write).is_err() {
        return;
    }
    let end = Instant::now() + LINGER;
    let mut sink = [0u8; 4096];
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        if stream
            .set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .is_err()
        {
            return;
        }
        match stream.read(&mut sink) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

struct Request {
    /// A HEAD request: the reply carries no body.
    head: bool,
    path: String,
}

/// Reads one request head; a malformed, oversized or late one is answered here (`Ok(None)`),
/// as is a client that closed before finishing one.
fn read_request(stream: &mut TcpStream, deadline: Instant) -> io::Result<Option<Request>> {
    let mut buf = vec![0u8; MAX_REQUEST];
    let mut n = 0;
    let refuse = |stream: &mut TcpStream, status, why: &str| {
        write_reply(stream, &Reply::text(status, why), false).map(|()| None)
    };
    loop {
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            return refuse(stream, "408 Request Timeout", "request too slow");
        };
        stream.set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
        let got = match stream.read(&mut buf[n..]) {
            Ok(0) => return Ok(None),
            Ok(k) => k,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return refuse(stream, "408 Request Timeout", "request too slow");
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        n += got;
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&buf[..n]) {
            Ok(httparse::Status::Complete(_)) => {
                let method = req.method.unwrap_or_default();
                let path = req.path.unwrap_or_default().to_string();
                if method != "GET" && method != "HEAD" {
                    let mut r = Reply::text("405 Method Not Allowed", "only GET and HEAD");
                    r.headers.push(("Allow", "GET, HEAD".into()));
                    return write_reply(stream, &r, false).map(|()| None);
                }
                return Ok(Some(Request {
                    head: method == "HEAD",
                    path,
                }));
            }
            Ok(httparse::Status::Partial) if n == buf.len() => {
                return refuse(
                    stream,
                    "431 Request Header Fields Too Large",
                    "request head too large",
                );
            }
            Ok(httparse::Status::Partial) => {}
            Err(httparse::Error::TooManyHeaders) => {
                return refuse(
                    stream,
                    "431 Request Header Fields Too Large",
                    "too many headers",
                );
            }
            Err(e) => return refuse(stream, "400 Bad Request", &e.to_string()),
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

fn write_reply(stream: &mut TcpStream, r: &Reply, head: bool) -> io::Result<()> {
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
    let deadline = Instant::now() + REQUEST_DEADLINE;
    let mut off = 0;
    while off < bytes.len() {
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "reply not read in time",
            ));
        };
        stream.set_write_timeout(Some(left.max(Duration::from_millis(1))))?;
        match stream.write(&bytes[off..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(k) => off += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    stream.flush()
}
