//! The runner every double shares: an HTTP/1.1 server on `127.0.0.1:0`, on its own thread
//! and current-thread runtime, stopped (connections closed, thread joined) on drop.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderValue, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::sync::oneshot;

/// Response body of every double (the proxy streams origin bodies through it).
pub(crate) type Body = BoxBody<Bytes, hyper::Error>;

/// A complete body.
pub(crate) fn full(body: impl Into<Bytes>) -> Body {
    Full::new(body.into()).map_err(|never| match never {}).boxed()
}

/// A complete response; `content_type` is omitted when empty.
pub(crate) fn respond(status: u16, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    let mut resp = Response::new(full(body));
    *resp.status_mut() = StatusCode::from_u16(status).expect("doubles use valid status codes");
    if !content_type.is_empty() {
        resp.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_str(content_type).expect("static content type"));
    }
    resp
}

/// Adds a header to a response (values come from the double itself, so they are valid).
pub(crate) fn with_header(mut resp: Response<Body>, name: &'static str, value: &str) -> Response<Body> {
    if let Ok(v) = HeaderValue::from_str(value) {
        resp.headers_mut().insert(name, v);
    }
    resp
}

/// Never completes; the connection stays open until the client or the server's drop ends it.
pub(crate) async fn hang() -> Response<Body> {
    std::future::pending().await
}

/// A running server; dropping it stops it.
pub(crate) struct Server {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Serves `handler` on a free loopback port. Panics if the listener, runtime or thread
    /// cannot be created, which would make every test moot anyway.
    pub(crate) fn start<F, Fut>(name: &str, handler: F) -> Server
    where
        F: Fn(Request<Incoming>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response<Body>> + Send + 'static,
    {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("gantry-doubles: cannot bind 127.0.0.1:0");
        listener.set_nonblocking(true).expect("gantry-doubles: cannot make the listener non-blocking");
        let addr = listener.local_addr().expect("gantry-doubles: listener has no address");
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("gantry-doubles: runtime");
        let (stop, stopped) = oneshot::channel();
        let handler = Arc::new(handler);
        let thread = std::thread::Builder::new()
            .name(format!("gantry-doubles-{name}"))
            .spawn(move || {
                rt.block_on(accept_loop(listener, handler, stopped));
                // Dropping the runtime drops every connection task, closing its socket.
                drop(rt);
            })
            .expect("gantry-doubles: cannot spawn the server thread");
        Server { addr, stop: Some(stop), thread: Some(thread) }
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn accept_loop<F, Fut>(listener: std::net::TcpListener, handler: Arc<F>, mut stopped: oneshot::Receiver<()>)
where
    F: Fn(Request<Incoming>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Response<Body>> + Send + 'static,
{
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => return eprintln!("gantry-doubles: cannot register listener: {e}"),
    };
    loop {
        let tcp = tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                Err(_) => {
                    // EMFILE and friends: back off briefly instead of spinning.
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    continue;
                }
            },
        };
        let _ = tcp.set_nodelay(true);
        let handler = handler.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req| {
                let fut = handler(req);
                async move { Ok::<_, Infallible>(fut.await) }
            });
            let _ = http1::Builder::new().serve_connection(TokioIo::new(tcp), svc).with_upgrades().await;
        });
    }
}
