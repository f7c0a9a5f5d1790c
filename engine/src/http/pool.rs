//! Keep-alive connection pool of our own, with one sub-pool per lane.
//!
//! Idle connections are kept per ([`Authority`], lane) and reused most-recent first, so the
//! hottest connection (largest congestion window) carries the next request. A checkout takes
//! the lane [`Lanes::choose`] names (fewest connections in use): it reuses an
//! idle connection of that lane, or opens one there on the next of the server's addresses.
//! Lanes therefore stay balanced whatever the mix of requests, and a quarantined lane is used
//! only when every other one failed too.
//!
//! The pool does not cap connections itself: the scheduler's connection slots bound how many
//! requests run at once, and a request holds at most one connection, so open connections never
//! exceed the slot count plus the idle ones, which expire after `idle_timeout`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::connector::{Authority, Connector, Sender};
use super::lanes::{Lane, Lanes};
use crate::error::{Error, ErrorKind, Operation};
use crate::metrics::Metrics;

#[derive(Debug)]
struct Idle {
    sender: Sender,
    since: Instant,
}

/// Shared pool state.
#[derive(Debug)]
pub(crate) struct Pool {
    idle: Mutex<HashMap<(Authority, usize), Vec<Idle>>>,
    pub(crate) connector: Connector,
    pub(crate) lanes: Lanes,
    idle_timeout: Duration,
    metrics: Arc<Metrics>,
}

/// A connection checked out of the pool. Give it back with [`PooledConn::release`] once its
/// response is fully read; dropping it instead closes its socket at once (its state is
/// unknown, and a cancelled request must stop sending).
#[derive(Debug)]
pub(crate) struct PooledConn {
    sender: Option<Sender>,
    authority: Authority,
    lane: usize,
    pool: Arc<Pool>,
}

impl Pool {
    pub(crate) fn new(connector: Connector, lanes: Lanes, idle_timeout: Duration, metrics: Arc<Metrics>) -> Arc<Self> {
        Arc::new(Pool { idle: Mutex::new(HashMap::new()), connector, lanes, idle_timeout, metrics })
    }

    /// A ready connection to `authority`, on the least-busy lane that works.
    pub(crate) async fn checkout(self: &Arc<Self>, authority: &Authority, op: Operation) -> Result<PooledConn, Error> {
        let mut last = None;
        let mut tried = Vec::new();
        while let Some(lane) = self.lanes.choose(&tried) {
            // From here the lane counts this request as in use; the guard undoes that
            // unless the connection is handed out.
            let mut conn = PooledConn { sender: None, authority: authority.clone(), lane, pool: self.clone() };
            if let Some(sender) = self.reuse(authority, lane).await {
                conn.sender = Some(sender);
                return Ok(conn);
            }
            let (host, port) = self.connector.dial_target(authority);
            let addrs = self
                .lanes
                .addresses(host, port)
                .await
                .map_err(|e| Error::new(ErrorKind::Connect, op, format!("cannot resolve {host}")).with_source(e))?;
            let bind = &self.lanes.get(lane).bind;
            match self
                .connector
                .connect(authority, bind, &addrs, op, |a, ok| self.lanes.record_connect(lane, a, ok))
                .await
            {
                Ok(sender) => {
                    self.metrics.add_connection_opened();
                    self.lanes.get(lane).connections_opened.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    conn.sender = Some(sender);
                    return Ok(conn);
                }
                // A binding that cannot work is a set-up mistake: say so instead of hiding it.
                Err(e) if e.kind() == ErrorKind::InvalidInput => return Err(e),
                Err(e) => last = Some(e),
            }
            tried.push(lane);
        }
        Err(last.expect("there is always at least one lane"))
    }

    async fn reuse(&self, authority: &Authority, lane: usize) -> Option<Sender> {
        while let Some(mut idle) = self.pop_idle(authority, lane) {
            if idle.since.elapsed() > self.idle_timeout || idle.sender.send.is_closed() {
                idle.sender.driver.abort();
                continue;
            }
            // After a response ends, hyper's connection task marks the connection ready again
            // almost at once; a connection that errors here was closed by the server.
            if idle.sender.send.ready().await.is_ok() {
                return Some(idle.sender);
            }
            idle.sender.driver.abort();
        }
        None
    }

    fn pop_idle(&self, authority: &Authority, lane: usize) -> Option<Idle> {
        self.idle.lock().expect("pool lock").get_mut(&(authority.clone(), lane))?.pop()
    }
}

impl PooledConn {
    /// The lane this connection leaves from (for per-lane byte counts).
    pub(crate) fn lane(&self) -> &Lane {
        self.pool.lanes.get(self.lane)
    }

    /// Sends a request on this connection.
    pub(crate) fn send_request(
        &mut self,
        req: http::Request<super::RequestBody>,
    ) -> impl std::future::Future<Output = hyper::Result<http::Response<hyper::body::Incoming>>> {
        self.sender.as_mut().expect("present until released").send.send_request(req)
    }

    /// Returns the connection for reuse: call only after the response body ended cleanly.
    pub(crate) fn release(mut self) {
        let Some(sender) = self.sender.take() else { return };
        if sender.send.is_closed() {
            sender.driver.abort();
            return;
        }
        let mut idle = self.pool.idle.lock().expect("pool lock");
        let list = idle.entry((self.authority.clone(), self.lane)).or_default();
        // Drop expired entries while we hold the lock anyway (they sit at the front).
        let now = Instant::now();
        list.retain(|i| {
            let fresh = now.duration_since(i.since) <= self.pool.idle_timeout;
            if !fresh {
                i.sender.driver.abort();
            }
            fresh
        });
        list.push(Idle { sender, since: now });
    }
}

impl Drop for PooledConn {
    fn drop(&mut self) {
        self.pool.lanes.get(self.lane).release();
        if let Some(sender) = self.sender.take() {
            sender.driver.abort();
        }
    }
}
