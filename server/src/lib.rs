//! An embedded S3-compatible server: the s3s protocol layer (requests, SigV4) over a storage
//! layout of our own (buckets are directories under a root, each object one file named by the
//! hash of its key; see `store`), served by hyper on a TCP listener.
//!
//! It is a real, independent S3 implementation that verifies SigV4 when started with keys, so
//! it checks our signing and our protocol handling: `gantry serve`, `gantry demo` and the
//! integration tests all use it. It is not meant for production storage.
//!
//! Options for tests that need a harsher server than loopback gives by default (see
//! [`ServerConfig`]): a [`KeyRing`] of access keys that can be rotated and expire while the
//! server runs, TLS ([`TlsConfig`], with [`tls::self_signed`] for throwaway certificates), and
//! per-connection bandwidth pacing ([`ServerConfig::pace_bytes_per_sec`]).

#![deny(missing_docs, missing_debug_implementations)]

mod keyring;
mod pace;
mod store;
pub mod tls;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use s3s::service::{S3Service, S3ServiceBuilder};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio_rustls::TlsAcceptor;

pub use keyring::{KeyRing, Refusals};
pub use tls::{SelfSigned, TlsConfig};

/// Keys the embedded server accepts when none are given (the demo and tests use them).
pub const DEFAULT_ACCESS_KEY: &str = "gantry";
/// Secret matching [`DEFAULT_ACCESS_KEY`].
pub const DEFAULT_SECRET_KEY: &str = "gantry-secret-key";

/// How long a client may take over the TLS handshake before its connection is dropped.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What to serve and where. Build it with [`ServerConfig::new`] and the `with_*` methods (the
/// struct is `#[non_exhaustive]`, so new options do not break callers).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerConfig {
    /// Root directory; each bucket is a directory below it. Created if missing.
    pub root: PathBuf,
    /// Listen address; port 0 picks a free port.
    pub addr: SocketAddr,
    /// Access keys to verify SigV4 against. `None` serves unsigned (anonymous) requests only:
    /// s3s answers signed ones with 501 `NotImplemented`, having no secret to check them with.
    /// Default: [`DEFAULT_ACCESS_KEY`] / [`DEFAULT_SECRET_KEY`], never expiring.
    pub credentials: Option<KeyRing>,
    /// Serve HTTPS with this certificate and key instead of plain HTTP. Default: `None`.
    pub tls: Option<TlsConfig>,
    /// Limit each direction of every connection to this many bytes per second (TLS overhead
    /// included); must not be 0. Default: `None`, unlimited.
    pub pace_bytes_per_sec: Option<u64>,
}

impl ServerConfig {
    /// Serve `root` on `addr` over plain HTTP, verifying signatures made with the default keys,
    /// with no pacing.
    pub fn new(root: impl Into<PathBuf>, addr: SocketAddr) -> Self {
        ServerConfig {
            root: root.into(),
            addr,
            credentials: Some(KeyRing::single(DEFAULT_ACCESS_KEY, DEFAULT_SECRET_KEY)),
            tls: None,
            pace_bytes_per_sec: None,
        }
    }

    /// Accept only this one key (never expiring).
    #[must_use]
    pub fn with_credentials(self, access_key_id: impl Into<String>, secret: impl Into<String>) -> Self {
        self.with_keyring(KeyRing::single(access_key_id, secret))
    }

    /// Accept the keys of `ring`; keep a clone of it to add, remove or expire keys while the
    /// server runs.
    #[must_use]
    pub fn with_keyring(mut self, ring: KeyRing) -> Self {
        self.credentials = Some(ring);
        self
    }

    /// Serve unsigned requests without any check (see [`credentials`](Self::credentials):
    /// signed requests are then refused).
    #[must_use]
    pub fn without_auth(mut self) -> Self {
        self.credentials = None;
        self
    }

    /// Serve HTTPS with `tls`.
    #[must_use]
    pub fn with_tls(mut self, tls: TlsConfig) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Limit each direction of every connection to `bytes_per_sec` (see
    /// [`pace_bytes_per_sec`](Self::pace_bytes_per_sec)).
    #[must_use]
    pub fn with_pace_bytes_per_sec(mut self, bytes_per_sec: u64) -> Self {
        self.pace_bytes_per_sec = Some(bytes_per_sec);
        self
    }

    /// `"https"` when TLS is configured, else `"http"`.
    pub fn scheme(&self) -> &'static str {
        if self.tls.is_some() {
            "https"
        } else {
            "http"
        }
    }
}

/// A server running on its own thread and runtime; stopped when dropped.
#[derive(Debug)]
pub struct BackgroundServer {
    addr: SocketAddr,
    scheme: &'static str,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl BackgroundServer {
    /// The bound address (with the real port when 0 was asked for).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`, or `https://ADDR` with TLS, ready for a client's endpoint setting.
    pub fn endpoint_url(&self) -> String {
        format!("{}://{}", self.scheme, self.addr)
    }
}

impl Drop for BackgroundServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Binds `config.addr` and serves until `shutdown` resolves. Returns once the listener is
/// bound, through `bound`, so callers know the port before the first request. Configuration
/// errors (unreadable TLS files, a pace of 0) are returned before binding.
pub async fn serve(
    config: ServerConfig,
    bound: Option<oneshot::Sender<SocketAddr>>,
    shutdown: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    if config.pace_bytes_per_sec == Some(0) {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "pace_bytes_per_sec must be positive"));
    }
    let tls = config.tls.as_ref().map(TlsConfig::load).transpose()?.map(TlsAcceptor::from);
    let mut builder = S3ServiceBuilder::new(store::Store::new(&config.root)?);
    if let Some(ring) = config.credentials {
        builder.set_auth(ring);
    }
    let service = builder.build();
    let listener = TcpListener::bind(config.addr).await?;
    if let Some(tx) = bound {
        let _ = tx.send(listener.local_addr()?);
    }
    let http = ConnBuilder::new(TokioExecutor::new());
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let socket = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((socket, _)) => socket,
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    continue;
                }
            },
            () = &mut shutdown => return Ok(()),
        };
        let _ = socket.set_nodelay(true);
        let (http, service, tls) = (http.clone(), service.clone(), tls.clone());
        match config.pace_bytes_per_sec {
            Some(rate) => tokio::spawn(serve_connection(pace::Paced::new(socket, rate), tls, http, service)),
            None => tokio::spawn(serve_connection(socket, tls, http, service)),
        };
    }
}

/// Runs one accepted connection to its end: the TLS handshake if any, then HTTP.
async fn serve_connection<IO>(io: IO, tls: Option<TlsAcceptor>, http: ConnBuilder<TokioExecutor>, service: S3Service)
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let result = match tls {
        None => http.serve_connection(TokioIo::new(io), service).await,
        Some(acceptor) => match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(io)).await {
            Ok(Ok(stream)) => http.serve_connection(TokioIo::new(stream), service).await,
            Ok(Err(e)) => {
                tracing::debug!("TLS handshake failed: {e}");
                return;
            }
            Err(_) => {
                tracing::debug!("TLS handshake timed out");
                return;
            }
        },
    };
    if let Err(e) = result {
        tracing::debug!("connection ended with an error: {e}");
    }
}

/// Starts a server on a thread of its own (with a `threads`-worker runtime), so it does not
/// share a runtime with the client under test.
pub fn start_background(config: ServerConfig, threads: usize) -> std::io::Result<BackgroundServer> {
    let scheme = config.scheme();
    let (bound_tx, bound_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let thread = std::thread::Builder::new().name("gantry-server".into()).spawn(move || {
        let rt = match tokio::runtime::Builder::new_multi_thread().worker_threads(threads.max(1)).enable_all().build() {
            Ok(rt) => rt,
            Err(e) => {
                let _ = bound_tx.send(Err(e));
                return;
            }
        };
        rt.block_on(async move {
            let (tx, rx) = oneshot::channel();
            let server = serve(config, Some(tx), async {
                let _ = stop_rx.await;
            });
            tokio::pin!(server);
            tokio::select! {
                addr = rx => {
                    if let Ok(addr) = addr {
                        let _ = bound_tx.send(Ok(addr));
                    }
                    if let Err(e) = server.await {
                        tracing::warn!("server stopped: {e}");
                    }
                }
                res = &mut server => {
                    let _ = bound_tx.send(Err(res.err().unwrap_or_else(|| std::io::Error::other("server stopped"))));
                }
            }
        });
        rt.shutdown_background();
    })?;
    let addr = bound_rx.recv().map_err(|_| std::io::Error::other("server thread died"))??;
    Ok(BackgroundServer { addr, scheme, stop: Some(stop_tx), thread: Some(thread) })
}
