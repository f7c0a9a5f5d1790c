//! An embedded S3-compatible server: the s3s protocol layer over s3s-fs (buckets are
//! directories under a root, objects are files), served by hyper on a TCP listener.
//!
//! It is a real, independent S3 implementation that verifies SigV4 when started with keys, so
//! it checks our signing and our protocol handling: `gantry serve`, `gantry demo` and the
//! integration tests all use it. It is not meant for production storage.

#![deny(missing_docs, missing_debug_implementations)]

mod fast_fs;

use std::net::SocketAddr;
use std::path::PathBuf;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use s3s::auth::SimpleAuth;
use s3s::service::S3ServiceBuilder;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// Keys the embedded server accepts when none are given (the demo and tests use them).
pub const DEFAULT_ACCESS_KEY: &str = "gantry";
/// Secret matching [`DEFAULT_ACCESS_KEY`].
pub const DEFAULT_SECRET_KEY: &str = "gantry-secret-key";

/// What to serve and where.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Root directory; each bucket is a directory below it.
    pub root: PathBuf,
    /// Listen address; port 0 picks a free port.
    pub addr: SocketAddr,
    /// Access key and secret to verify SigV4 against; `None` accepts any signature.
    pub credentials: Option<(String, String)>,
}

/// A server running on its own thread and runtime; stopped when dropped.
#[derive(Debug)]
pub struct BackgroundServer {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl BackgroundServer {
    /// The bound address (with the real port when 0 was asked for).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`, ready for a client's endpoint setting.
    pub fn endpoint_url(&self) -> String {
        format!("http://{}", self.addr)
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
/// bound, through `bound`, so callers know the port before the first request.
pub async fn serve(
    config: ServerConfig,
    bound: Option<oneshot::Sender<SocketAddr>>,
    shutdown: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    std::fs::create_dir_all(&config.root)?;
    let mut builder = S3ServiceBuilder::new(fast_fs::FastFs::new(&config.root)?);
    if let Some((ak, sk)) = config.credentials {
        builder.set_auth(SimpleAuth::from_single(ak, sk));
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
        let conn = http.serve_connection(TokioIo::new(socket), service.clone()).into_owned();
        tokio::spawn(async move {
            let _ = conn.await;
        });
    }
}

/// Starts a server on a thread of its own (with a `threads`-worker runtime), so it does not
/// share a runtime with the client under test.
pub fn start_background(config: ServerConfig, threads: usize) -> std::io::Result<BackgroundServer> {
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
    Ok(BackgroundServer { addr, stop: Some(stop_tx), thread: Some(thread) })
}
