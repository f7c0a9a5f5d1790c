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

#[cfg(test)]
mod tests {
    //! The pool against a tiny HTTP/1.1 server on loopback that numbers its connections and
    //! says which one answered (`x-conn`), so a test sees exactly which socket was reused.

    use std::sync::atomic::{AtomicUsize, Ordering};

    use http_body_util::BodyExt;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// Serves `ok` on every request; closes a connection after one answer when `close_after`.
    async fn server(close_after: bool) -> (u16, Arc<AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let counter = accepted.clone();
        tokio::spawn(async move {
            loop {
                let (mut sock, _) = listener.accept().await.unwrap();
                let id = counter.fetch_add(1, Ordering::SeqCst) + 1;
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 1024];
                    loop {
                        let Ok(n) = sock.read(&mut chunk).await else { return };
                        if n == 0 {
                            return;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            buf.drain(..end + 4);
                            let answer = format!("HTTP/1.1 200 OK\r\ncontent-length: 2\r\nx-conn: {id}\r\n\r\nok");
                            if sock.write_all(answer.as_bytes()).await.is_err() {
                                return;
                            }
                            if close_after {
                                return;
                            }
                        }
                    }
                });
            }
        });
        (port, accepted)
    }

    fn new_pool(idle_timeout: Duration) -> Arc<Pool> {
        let connector = Connector::new(Duration::from_secs(2), Duration::from_secs(2), None, None);
        Pool::new(connector, Lanes::new(&[], &[]), idle_timeout, Arc::new(Metrics::default()))
    }

    /// One request on a checked-out connection; returns which server connection answered.
    async fn ask(conn: &mut PooledConn, port: u16) -> usize {
        let req = http::Request::get(format!("http://127.0.0.1:{port}/"))
            .header("host", "127.0.0.1")
            .body(crate::http::RequestBody::new([]))
            .unwrap();
        let resp = conn.send_request(req).await.unwrap();
        let id = resp.headers()["x-conn"].to_str().unwrap().parse().unwrap();
        resp.into_body().collect().await.unwrap();
        id
    }

    fn authority(port: u16) -> Authority {
        Authority { tls: false, host: "127.0.0.1".into(), port }
    }

    #[tokio::test]
    async fn a_released_connection_is_reused_most_recent_first() {
        let (port, accepted) = server(false).await;
        let pool = new_pool(Duration::from_secs(30));
        let at = authority(port);
        let (mut a, mut b) = (
            pool.checkout(&at, Operation::GetObject).await.unwrap(),
            pool.checkout(&at, Operation::GetObject).await.unwrap(),
        );
        let (id_a, id_b) = (ask(&mut a, port).await, ask(&mut b, port).await);
        assert_ne!(id_a, id_b);
        a.release();
        b.release();
        // The last one returned is the next one out (its congestion window is the warmest).
        let mut c = pool.checkout(&at, Operation::GetObject).await.unwrap();
        assert_eq!(ask(&mut c, port).await, id_b);
        let mut d = pool.checkout(&at, Operation::GetObject).await.unwrap();
        assert_eq!(ask(&mut d, port).await, id_a);
        assert_eq!(accepted.load(Ordering::SeqCst), 2, "no new connection while idle ones were there");
        assert_eq!(pool.lanes.get(0).in_use(), 2);
        drop((c, d));
        assert_eq!(pool.lanes.get(0).in_use(), 0, "a dropped connection frees its lane");
    }

    #[tokio::test]
    async fn a_dropped_connection_is_closed_not_reused() {
        let (port, accepted) = server(false).await;
        let pool = new_pool(Duration::from_secs(30));
        let at = authority(port);
        let mut a = pool.checkout(&at, Operation::GetObject).await.unwrap();
        ask(&mut a, port).await;
        // Dropped instead of released: its state is unknown (a cancelled request).
        drop(a);
        let mut b = pool.checkout(&at, Operation::GetObject).await.unwrap();
        assert_eq!(ask(&mut b, port).await, 2);
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn expired_and_server_closed_connections_are_replaced() {
        // Expired: idle longer than the timeout.
        let (port, accepted) = server(false).await;
        let pool = new_pool(Duration::from_millis(50));
        let at = authority(port);
        let mut a = pool.checkout(&at, Operation::GetObject).await.unwrap();
        ask(&mut a, port).await;
        a.release();
        tokio::time::sleep(Duration::from_millis(120)).await;
        let mut b = pool.checkout(&at, Operation::GetObject).await.unwrap();
        assert_eq!(ask(&mut b, port).await, 2, "the expired connection was not reused");
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
        // Closed by the server after its answer: found closed at checkout, replaced.
        let (port, accepted) = server(true).await;
        let pool = new_pool(Duration::from_secs(30));
        let at = authority(port);
        let mut a = pool.checkout(&at, Operation::GetObject).await.unwrap();
        ask(&mut a, port).await;
        a.release();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut b = pool.checkout(&at, Operation::GetObject).await.unwrap();
        assert_eq!(ask(&mut b, port).await, 2);
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }
}
