//! HTTP/1.1 transport: pooled connections, per-request timeouts, and a response body that
//! returns its connection to the pool only once it has been read to the end.
//!
//! Every future here must run on the engine's tokio runtime (it uses tokio timers and
//! sockets); the public API guarantees that by spawning onto the engine's handle.

pub(crate) mod connector;
pub(crate) mod lanes;
pub(crate) mod pool;
pub(crate) mod proxy;
pub(crate) mod request_body;
pub(crate) mod silence;
pub(crate) mod trust;

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;

pub(crate) use connector::{Authority, Connector};
pub(crate) use lanes::Lanes;
use pool::{Pool, PooledConn};
pub(crate) use request_body::RequestBody;
use silence::Silence;

use crate::config::Timeouts;
use crate::error::{Error, ErrorKind, Operation};
use crate::metrics::Metrics;

/// Sends requests over pooled connections with the configured timeouts.
#[derive(Debug)]
pub(crate) struct HttpClient {
    pool: Arc<Pool>,
    timeouts: Timeouts,
    /// Caps and budgets waits until the endpoint has answered once (see [`silence`]).
    silence: Silence,
    metrics: Arc<Metrics>,
}

/// A response body being received. Reading it to the end returns the connection to the pool;
/// dropping it earlier closes the connection (which is also how a part request is cancelled).
///
/// Every error reading it says the answer was lost ([`Error::answer_lost`]): a response head
/// arrived, so the server handled the request, and what it said is not known in full.
#[derive(Debug)]
pub(crate) struct Body {
    incoming: Incoming,
    conn: Option<PooledConn>,
    read_idle_timeout: Duration,
    floor: Option<ThroughputFloor>,
    op: Operation,
    metrics: Arc<Metrics>,
}

/// The minimum-throughput check of one body: bytes counted per window of fixed length.
#[derive(Debug)]
struct ThroughputFloor {
    bytes_per_sec: u64,
    window: Duration,
    window_start: Instant,
    window_bytes: u64,
}

impl ThroughputFloor {
    fn new(bytes_per_sec: u64, window: Duration) -> Option<Self> {
        (bytes_per_sec > 0).then(|| ThroughputFloor {
            bytes_per_sec,
            window,
            window_start: Instant::now(),
            window_bytes: 0,
        })
    }

    /// How long the next read may wait before the current window ends (and the floor is
    /// judged even if no byte came).
    fn time_left(&self) -> Duration {
        self.window.saturating_sub(self.window_start.elapsed())
    }

    /// Counts `n` bytes; `Err(rate)` when a finished window fell below the floor.
    fn record(&mut self, n: u64) -> Result<(), f64> {
        self.window_bytes += n;
        let elapsed = self.window_start.elapsed();
        if elapsed < self.window {
            return Ok(());
        }
        let rate = self.window_bytes as f64 / elapsed.as_secs_f64();
        if rate < self.bytes_per_sec as f64 {
            return Err(rate);
        }
        self.window_start = Instant::now();
        self.window_bytes = 0;
        Ok(())
    }
}

impl HttpClient {
    /// The client's lanes (for per-lane metrics).
    pub(crate) fn lanes(&self) -> &Lanes {
        &self.pool.lanes
    }

    pub(crate) fn new(connector: Connector, lanes: Lanes, timeouts: &Timeouts, metrics: Arc<Metrics>) -> Self {
        HttpClient {
            pool: Pool::new(connector, lanes, timeouts.pool_idle, metrics.clone()),
            timeouts: timeouts.clone(),
            silence: Silence::new(timeouts.no_response),
            metrics,
        }
    }

    /// Sends `req` and waits for the response head. The body is read through [`Body`].
    ///
    /// A failure after the whole request went out (a reset or a timeout while waiting for the
    /// head) is marked [`Error::answer_lost`]: the server may have carried the request out.
    /// Failures before that (connecting, a body that stopped going out, a request hyper never
    /// dispatched) are not: a request that did not arrive whole is not acted on.
    ///
    /// Until the endpoint has answered once, every wait on it is capped and counted against
    /// the no-response bound (see [`silence`]).
    pub(crate) async fn send(
        &self,
        authority: &Authority,
        req: http::Request<RequestBody>,
        op: Operation,
    ) -> Result<http::Response<Body>, Error> {
        let silent_cap = self.silence.attempt_cap();
        let started = Instant::now();
        let mut conn = match silent_cap {
            None => self.pool.checkout(authority, op).await?,
            Some(cap) => match tokio::time::timeout(cap, self.pool.checkout(authority, op)).await {
                Ok(Ok(conn)) => conn,
                Ok(Err(e)) if e.kind() == ErrorKind::Timeout => return Err(self.silent(e, started, authority, op)),
                Ok(Err(e)) => return Err(e),
                Err(_) => {
                    let e = Error::new(
                        ErrorKind::Timeout,
                        op,
                        format!("no connection within {cap:?} (capped until the endpoint answers)"),
                    );
                    return Err(self.silent(e, started, authority, op));
                }
            },
        };
        let mut req = req;
        match self.pool.connector.forward_proxy(authority) {
            // Absolute form (as signed) to a forwarding proxy, with its credentials.
            Some(proxy) => {
                if let Some(auth) = &proxy.authorization {
                    if let Ok(v) = http::HeaderValue::from_str(auth) {
                        req.headers_mut().insert(http::header::PROXY_AUTHORIZATION, v);
                    }
                }
            }
            // Origin form to the server itself.
            None => {
                if let Some(pq) = req.uri().path_and_query().cloned() {
                    *req.uri_mut() = http::Uri::from(pq);
                }
            }
        }
        let upload_len = req.body().len();
        let progress = req.body().progress();
        progress.restart();
        let sending = conn.send_request(req);
        tokio::pin!(sending);
        // While the body goes out, each slice hyper takes is progress (read-idle timeout
        // between slices); once it is all out, the first-byte timeout runs.
        let response = loop {
            let (last, done) = progress.last();
            let (mut limit, mut what) = match done {
                true => (self.timeouts.first_byte, "no response head within the first-byte timeout"),
                false => (self.timeouts.read_idle, "the request body stopped going out (read-idle timeout)"),
            };
            if let Some(cap) = silent_cap.filter(|cap| *cap < limit) {
                limit = cap;
                what = match done {
                    true => "no response head (wait capped until the endpoint answers)",
                    false => "the request body stopped going out (wait capped until the endpoint answers)",
                };
            }
            let deadline = tokio::time::Instant::from_std(last + limit);
            // While the body is going out, look again often: the clock to apply changes
            // when the last slice leaves.
            let wake = match done {
                true => deadline,
                false => deadline.min(tokio::time::Instant::now() + Duration::from_millis(50)),
            };
            tokio::select! {
                result = &mut sending => match result {
                    Ok(r) => break r,
                    Err(e) => {
                        // Sent whole unless hyper says it never dispatched it (a pooled
                        // connection found closed) or the body had not all gone out.
                        let sent = progress.last().1 && !e.is_canceled();
                        let err = Error::new(ErrorKind::Transport, op, "connection failed before the response head")
                            .with_source(e);
                        return Err(if sent { err.with_answer_lost() } else { err });
                    }
                },
                _ = tokio::time::sleep_until(wake) => {
                    if progress.last() == (last, done) && tokio::time::Instant::now() >= deadline {
                        let e = Error::new(ErrorKind::Timeout, op, format!("{what} ({limit:?})"));
                        // Waiting for the head after the whole request went out: it may
                        // have been carried out. A body that stopped going out was not.
                        let e = if done { e.with_answer_lost() } else { e };
                        return Err(match silent_cap {
                            Some(_) => self.silent(e, last, authority, op),
                            None => e,
                        });
                    }
                }
            }
        };
        self.silence.answered();
        self.metrics.add_uploaded(upload_len);
        conn.lane().bytes_uploaded.fetch_add(upload_len, Relaxed);
        let (parts, incoming) = response.into_parts();
        let body = Body {
            incoming,
            conn: Some(conn),
            read_idle_timeout: self.timeouts.read_idle,
            floor: ThroughputFloor::new(
                self.timeouts.min_throughput_bytes_per_sec,
                self.timeouts.min_throughput_window,
            ),
            op,
            metrics: self.metrics.clone(),
        };
        Ok(http::Response::from_parts(parts, body))
    }

    /// A wait since `since` on an endpoint that never answered ended in `timeout`: counts it,
    /// and gives the final no-response error instead once the bound is reached.
    fn silent(&self, timeout: Error, since: Instant, authority: &Authority, op: Operation) -> Error {
        self.silence.record(since, authority, op).unwrap_or(timeout)
    }
}

impl Body {
    /// The next chunk of the body, `None` at its end. Fails if no byte arrives for the
    /// read-idle timeout or the connection breaks.
    pub(crate) async fn chunk(&mut self) -> Result<Option<Bytes>, Error> {
        loop {
            // Wake up at the end of a throughput window even when nothing arrives, so a body
            // that stops below the floor is judged on time rather than at the idle timeout.
            let wait = match &self.floor {
                Some(f) => self.read_idle_timeout.min(f.time_left().max(Duration::from_millis(1))),
                None => self.read_idle_timeout,
            };
            let frame = match tokio::time::timeout(wait, self.incoming.frame()).await {
                // The wake-up was the end of a floor window, not the idle timeout.
                Err(_) if wait < self.read_idle_timeout => {
                    self.check_floor(0)?;
                    continue;
                }
                Err(_) => {
                    self.conn = None;
                    return Err(Error::new(
                        ErrorKind::Timeout,
                        self.op,
                        format!("no body bytes for {:?} (read-idle timeout)", self.read_idle_timeout),
                    )
                    .with_answer_lost());
                }
                Ok(None) => {
                    if let Some(conn) = self.conn.take() {
                        conn.release();
                    }
                    return Ok(None);
                }
                Ok(Some(Err(e))) => {
                    self.conn = None;
                    return Err(Error::new(ErrorKind::Transport, self.op, "connection broke while reading the body")
                        .with_source(e)
                        .with_answer_lost());
                }
                Ok(Some(Ok(frame))) => frame,
            };
            if let Ok(data) = frame.into_data() {
                if !data.is_empty() {
                    self.metrics.add_downloaded(data.len() as u64);
                    if let Some(conn) = &self.conn {
                        conn.lane().bytes_downloaded.fetch_add(data.len() as u64, Relaxed);
                    }
                    self.check_floor(data.len() as u64)?;
                    return Ok(Some(data));
                }
            }
        }
    }

    fn check_floor(&mut self, n: u64) -> Result<(), Error> {
        let Some(floor) = &mut self.floor else { return Ok(()) };
        if let Err(rate) = floor.record(n) {
            let (min, window) = (floor.bytes_per_sec, floor.window);
            self.conn = None;
            return Err(Error::new(
                ErrorKind::Timeout,
                self.op,
                format!("body arrived at {rate:.0} B/s over {window:?}, below the floor of {min} B/s"),
            )
            .with_answer_lost());
        }
        Ok(())
    }

    /// Reads a whole (small) body such as an XML document, refusing more than `limit` bytes.
    pub(crate) async fn collect(&mut self, limit: usize) -> Result<Bytes, Error> {
        let mut buf = Vec::new();
        while let Some(chunk) = self.chunk().await? {
            if buf.len() + chunk.len() > limit {
                self.conn = None;
                return Err(Error::new(
                    ErrorKind::Protocol,
                    self.op,
                    format!("response body larger than {limit} bytes"),
                )
                .with_answer_lost());
            }
            buf.extend_from_slice(&chunk);
        }
        Ok(Bytes::from(buf))
    }
}
