//! HTTP/1.1 transport: pooled connections, per-request timeouts, and a response body that
//! returns its connection to the pool only once it has been read to the end.
//!
//! Every future here must run on the engine's tokio runtime (it uses tokio timers and
//! sockets); the public API guarantees that by spawning onto the engine's handle.

pub(crate) mod connector;
pub(crate) mod lanes;
pub(crate) mod pool;

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;

pub(crate) use connector::{Authority, Connector};
pub(crate) use lanes::Lanes;
use pool::{Pool, PooledConn};

use crate::error::{Error, ErrorKind, Operation};
use crate::metrics::Metrics;

/// Sends requests over pooled connections with the configured timeouts.
#[derive(Debug)]
pub(crate) struct HttpClient {
    pool: Arc<Pool>,
    first_byte_timeout: Duration,
    read_idle_timeout: Duration,
    metrics: Arc<Metrics>,
}

/// A response body being received. Reading it to the end returns the connection to the pool;
/// dropping it earlier closes the connection (which is also how a part request is cancelled).
#[derive(Debug)]
pub(crate) struct Body {
    incoming: Incoming,
    conn: Option<PooledConn>,
    read_idle_timeout: Duration,
    op: Operation,
    metrics: Arc<Metrics>,
}

impl HttpClient {
    /// The client's lanes (for per-lane metrics).
    pub(crate) fn lanes(&self) -> &Lanes {
        &self.pool.lanes
    }

    pub(crate) fn new(
        connector: Connector,
        lanes: Lanes,
        pool_idle: Duration,
        first_byte_timeout: Duration,
        read_idle_timeout: Duration,
        metrics: Arc<Metrics>,
    ) -> Self {
        HttpClient {
            pool: Pool::new(connector, lanes, pool_idle, metrics.clone()),
            first_byte_timeout,
            read_idle_timeout,
            metrics,
        }
    }

    /// Sends `req` and waits for the response head. The body is read through [`Body`].
    pub(crate) async fn send(
        &self,
        authority: &Authority,
        req: http::Request<Full<Bytes>>,
        op: Operation,
    ) -> Result<http::Response<Body>, Error> {
        let mut conn = self.pool.checkout(authority, op).await?;
        let upload_len = http_body::Body::size_hint(req.body()).exact().unwrap_or(0);
        // The first-byte clock includes sending the request body; a large body is allowed the
        // read-idle budget per MiB on top so slow uplinks do not trip it.
        let budget = self.first_byte_timeout
            + self.read_idle_timeout.mul_f64(upload_len as f64 / (1 << 20) as f64).min(Duration::from_secs(3600));
        let response = match tokio::time::timeout(budget, conn.send_request(req)).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => {
                return Err(
                    Error::new(ErrorKind::Transport, op, "connection failed before the response head").with_source(e)
                )
            }
            Err(_) => {
                return Err(Error::new(
                    ErrorKind::Timeout,
                    op,
                    format!("no response head within {budget:?} (first-byte timeout)"),
                ))
            }
        };
        self.metrics.add_uploaded(upload_len);
        conn.lane().bytes_uploaded.fetch_add(upload_len, Relaxed);
        let (parts, incoming) = response.into_parts();
        let body = Body {
            incoming,
            conn: Some(conn),
            read_idle_timeout: self.read_idle_timeout,
            op,
            metrics: self.metrics.clone(),
        };
        Ok(http::Response::from_parts(parts, body))
    }
}

impl Body {
    /// The next chunk of the body, `None` at its end. Fails if no byte arrives for the
    /// read-idle timeout or the connection breaks.
    pub(crate) async fn chunk(&mut self) -> Result<Option<Bytes>, Error> {
        loop {
            let frame = match tokio::time::timeout(self.read_idle_timeout, self.incoming.frame()).await {
                Err(_) => {
                    self.conn = None;
                    return Err(Error::new(
                        ErrorKind::Timeout,
                        self.op,
                        format!("no body bytes for {:?} (read-idle timeout)", self.read_idle_timeout),
                    ));
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
                        .with_source(e));
                }
                Ok(Some(Ok(frame))) => frame,
            };
            if let Ok(data) = frame.into_data() {
                if !data.is_empty() {
                    self.metrics.add_downloaded(data.len() as u64);
                    if let Some(conn) = &self.conn {
                        conn.lane().bytes_downloaded.fetch_add(data.len() as u64, Relaxed);
                    }
                    return Ok(Some(data));
                }
            }
        }
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
                ));
            }
            buf.extend_from_slice(&chunk);
        }
        Ok(Bytes::from(buf))
    }
}
