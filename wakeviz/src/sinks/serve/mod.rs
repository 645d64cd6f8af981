//! `--serve ADDR`: an OpenMetrics `/metrics` endpoint.
//!
//! Whoever produces figures (the process's one fold through a [`Publisher`], or an in-kernel
//! aggregate)
//! hands the server a whole [`Snapshot`]; a scrape encodes the latest one ([`metrics`]), so
//! every series of one scrape comes from the same moment, and the capture never waits on a
//! client: publishing swaps an `Arc` under a lock the server holds only to clone that `Arc`.
pub mod http;
pub mod metrics;

use std::{
    net::{SocketAddr, TcpListener, TcpStream},
    sync::{
        Arc, Mutex, TryLockError,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::Context as _;
use wakeviz_core::{
    analysis::{Analysis, Snapshot},
    source::{Batch, EventSource},
};

use crate::driver::{Flow, Sink, Turn};
use metrics::Published;

/// How often the streaming sink folds a new snapshot: a snapshot allocates the whole report
/// (shadow rows included), and Prometheus scrapes every few seconds at most.
pub const PUBLISH_EVERY: Duration = Duration::from_millis(500);

/// The latest published snapshot, shared by the publisher and the server thread.
#[derive(Debug, Default)]
pub struct Slot {
    latest: Mutex<Option<Published>>,
}

impl Slot {
    fn latest(&self) -> Option<Published> {
        // A poisoned lock still holds a whole `Option<Published>` (only swaps happen under it).
        self.latest
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn put(slot: &mut Option<Published>, snap: Arc<Snapshot>) {
        let seq = slot.as_ref().map_or(0, |p| p.seq) + 1;
        *slot = Some(Published { seq, snap });
    }
}

/// The endpoint: bound at once (so a bad or busy address fails before any probe is attached),
/// served by one background thread until dropped.
pub struct Server {
    slot: Arc<Slot>,
    stop: Arc<AtomicBool>,
    addr: SocketAddr,
}

/// What the endpoint gives away, for the refusal and the warning of a public address.
const EXPOSES: &str = "the endpoint exposes per-CPU and per-policy scheduling data of every task on the machine, to anyone who connects";

impl Server {
    /// Binds `addr`. Only a loopback address unless `public` (`--serve-public`): a wildcard
    /// or interface address serves every task's scheduling data to the network, so it is
    /// refused without the flag and warned about with it.
    pub fn bind(addr: SocketAddr, public: bool) -> anyhow::Result<Self> {
        if !addr.ip().to_canonical().is_loopback() {
            if !public {
                anyhow::bail!(
                    "--serve {addr}: not a loopback address, and {EXPOSES}: add --serve-public to serve beyond this machine (or use 127.0.0.1 or [::1])"
                );
            }
            say!(
                "wakeviz: warning: --serve {addr} is reachable from other machines: {EXPOSES}, unauthenticated"
            );
        }
        let listener = TcpListener::bind(addr)
            .with_context(|| format!("--serve {addr}: cannot listen there"))?;
        let addr = listener
            .local_addr()
            .context("--serve: the bound address")?;
        let slot = Arc::new(Slot::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (slot.clone(), stop.clone());
        std::thread::Builder::new()
            .name("wakeviz-serve".into())
            .spawn(move || http::serve(listener, s, st))
            .context("--serve: starting the server thread")?;
        Ok(Self { slot, stop, addr })
    }

    /// Where it listens (the port the kernel chose for `:0`).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Replaces what scrapes see. Waits at most for a scrape to clone an `Arc`.
    pub fn publish(&self, snap: Arc<Snapshot>) {
        let mut g = self
            .slot
            .latest
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Slot::put(&mut g, snap);
    }

    /// [`Server::publish`] without waiting: the snapshot comes back if a scrape holds the lock.
    #[cfg(test)]
    pub fn try_publish(&self, snap: Arc<Snapshot>) -> Result<(), Arc<Snapshot>> {
        match self.slot.latest.try_lock() {
            Ok(mut g) => {
                Slot::put(&mut g, snap);
                Ok(())
            }
            Err(TryLockError::Poisoned(p)) => {
                Slot::put(&mut p.into_inner(), snap);
                Ok(())
            }
            Err(TryLockError::WouldBlock) => Err(snap),
        }
    }

    /// What publishes to this endpoint the snapshots of a fold it does not own; `first` (the
    /// fold before any event) is served at once, so scrapes see the capture's probes and
    /// topology from its first moment.
    pub fn publisher(&self, first: Snapshot) -> Publisher {
        self.publish(Arc::new(first));
        Publisher {
            slot: Arc::clone(&self.slot),
            published: Some(Instant::now()),
            dirty: false,
        }
    }
}

impl Drop for Server {
    /// Stops the thread at its next accept, which a connection of our own makes happen now;
    /// not joined: a client it is serving has [`http::REQUEST_DEADLINE`] left at most, and the
    /// process exit ends the thread anyway.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        let mut wake = self.addr;
        if wake.ip().is_unspecified() {
            wake.set_ip(match wake {
                SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        let _ = TcpStream::connect_timeout(&wake, Duration::from_millis(100));
    }
}

/// Publishes the snapshots of the process's one fold (the dashboard's, the report's, or a
/// [`Fold`] of its own) at most every [`PUBLISH_EVERY`], and at once when the stream ends: the
/// endpoint never folds the stream a second time, so `/metrics` and the dashboard agree.
pub struct Publisher {
    slot: Arc<Slot>,
    published: Option<Instant>,
    dirty: bool,
}

impl Publisher {
    /// The fold took a batch.
    pub fn changed(&mut self) {
        self.dirty = true;
    }

    /// Publishes `snap()` when something changed and one is due (or the stream `ended`); a
    /// scrape holding the slot makes it try again on the next turn.
    pub fn offer(&mut self, ended: bool, snap: impl FnOnce() -> Snapshot) {
        let due = self.published.is_none_or(|p| p.elapsed() >= PUBLISH_EVERY);
        if !(self.dirty && (ended || due)) {
            return;
        }
        match self.slot.latest.try_lock() {
            Ok(mut g) => Slot::put(&mut g, Arc::new(snap())),
            // Only swaps happen under the lock: a poisoned one still holds a whole value.
            Err(TryLockError::Poisoned(p)) => Slot::put(&mut p.into_inner(), Arc::new(snap())),
            Err(TryLockError::WouldBlock) => return,
        }
        self.published = Some(Instant::now());
        self.dirty = false;
    }
}

/// A fold that publishes: the report's [`Analysis`] (borrowed, printed after the run), or one
/// of its own when nothing else folds (a headless `--serve`).
pub struct Fold<'a> {
    pub analysis: &'a mut Analysis,
    pub publisher: Option<Publisher>,
}

impl Sink for Fold<'_> {
    fn on_batch(&mut self, b: &Batch) -> anyhow::Result<()> {
        self.analysis.on_batch(b);
        if let Some(p) = self.publisher.as_mut() {
            p.changed();
        }
        Ok(())
    }

    fn on_turn(&mut self, _src: &dyn EventSource, t: Turn) -> anyhow::Result<Flow> {
        if let Some(p) = self.publisher.as_mut() {
            let a = &*self.analysis;
            p.offer(t.ended, || a.snapshot());
        }
        Ok(Flow::Continue)
    }
}

#[cfg(test)]
mod tests;
