//! Keep-alive connection pool of our own.
//!
//! Idle connections are kept per [`Authority`] (scheme, host, port) and reused most-recent
//! first, so the hottest connection (largest congestion window) carries the next request.
//! The key is where per-NIC and per-server-address sub-pools will slot in: a connection is
//! reusable only by a request that would have opened the same one.
//!
//! The pool does not cap connections itself: the scheduler's connection slots bound how many
//! requests run at once, and a request holds at most one connection, so open connections never
//! exceed the slot count plus the idle ones, which expire after `idle_timeout`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::connector::{Authority, Connector, Sender};
use crate::error::{Error, Operation};
use crate::metrics::Metrics;

#[derive(Debug)]
struct Idle {
    sender: Sender,
    since: Instant,
}

/// Shared pool state.
#[derive(Debug)]
pub(crate) struct Pool {
    idle: Mutex<HashMap<Authority, Vec<Idle>>>,
    connector: Connector,
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
    pool: Arc<Pool>,
}

impl Pool {
    pub(crate) fn new(connector: Connector, idle_timeout: Duration, metrics: Arc<Metrics>) -> Arc<Self> {
        Arc::new(Pool { idle: Mutex::new(HashMap::new()), connector, idle_timeout, metrics })
    }

    /// A ready connection to `authority`: a pooled one if any is alive, else a new one.
    pub(crate) async fn checkout(self: &Arc<Self>, authority: &Authority, op: Operation) -> Result<PooledConn, Error> {
        while let Some(mut idle) = self.pop_idle(authority) {
            if idle.since.elapsed() > self.idle_timeout || idle.sender.send.is_closed() {
                idle.sender.driver.abort();
                continue;
            }
            // After a response ends, hyper's connection task marks the connection ready again
            // almost at once; a connection that errors here was closed by the server.
            if idle.sender.send.ready().await.is_ok() {
                return Ok(PooledConn { sender: Some(idle.sender), authority: authority.clone(), pool: self.clone() });
            }
            idle.sender.driver.abort();
        }
        let sender = self.connector.connect(authority, op).await?;
        self.metrics.add_connection_opened();
        Ok(PooledConn { sender: Some(sender), authority: authority.clone(), pool: self.clone() })
    }

    fn pop_idle(&self, authority: &Authority) -> Option<Idle> {
        self.idle.lock().expect("pool lock").get_mut(authority)?.pop()
    }
}

impl PooledConn {
    /// The request sender of this connection.
    pub(crate) fn send_request(
        &mut self,
        req: http::Request<http_body_util::Full<bytes::Bytes>>,
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
        let list = idle.entry(self.authority.clone()).or_default();
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
        if let Some(sender) = self.sender.take() {
            sender.driver.abort();
        }
    }
}
