//! HTTP forward proxy double, for `HTTP(S)_PROXY` tests.
//!
//! Reproduced: `CONNECT host:port` opens a TCP connection to the target, answers `200` and
//! copies bytes both ways until either side closes (502 if the target refuses). Absolute-form
//! requests (`GET http://host:port/path HTTP/1.1`) are sent to the origin in origin form with
//! the headers kept (minus `Proxy-Authorization` and `Proxy-Connection`) and the bodies
//! streamed both ways. With Basic auth configured, a request without the right
//! `Proxy-Authorization: Basic …` gets `407` with `Proxy-Authenticate: Basic
//! realm="gantry-test"`.
//!
//! Simplified: one origin connection per forwarded request (the client side keeps alive);
//! origin-form requests (not meant for a proxy) get 400; no `Via` header; no `https://`
//! absolute-form (clients use `CONNECT` for TLS).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use base64::Engine;
use http::header::{HOST, PROXY_AUTHENTICATE, PROXY_AUTHORIZATION};
use http::uri::{PathAndQuery, Uri};
use http::{HeaderValue, Method, Request, Response};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::server::{respond, with_header, Body, Server};
use crate::util::lock;

struct State {
    /// Expected `user:password`, if auth is required.
    credentials: Mutex<Option<String>>,
    targets: Mutex<Vec<String>>,
    tunnels: AtomicUsize,
    forwarded: AtomicUsize,
    auth_failures: AtomicUsize,
}

/// A running forward proxy; dropping it stops it and ends every tunnel. No auth by default.
pub struct ProxyServer {
    state: Arc<State>,
    server: Server,
}

impl ProxyServer {
    /// Starts on a free loopback port.
    pub fn start() -> ProxyServer {
        let state = Arc::new(State {
            credentials: Mutex::new(None),
            targets: Mutex::new(Vec::new()),
            tunnels: AtomicUsize::new(0),
            forwarded: AtomicUsize::new(0),
            auth_failures: AtomicUsize::new(0),
        });
        let st = state.clone();
        let server = Server::start("proxy", move |req| handle(st.clone(), req));
        ProxyServer { state, server }
    }

    /// Proxy URL, e.g. `http://127.0.0.1:41234` (for `HTTPS_PROXY`).
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// The proxy URL with credentials, e.g. `http://user:pass@127.0.0.1:41234` (not escaped).
    pub fn url_with_auth(&self, user: &str, password: &str) -> String {
        format!("http://{user}:{password}@{}", self.server.addr())
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// Requires `Proxy-Authorization: Basic base64(user:password)` (`None`: no auth).
    pub fn set_basic_auth(&self, credentials: Option<(&str, &str)>) {
        *lock(&self.state.credentials) = credentials.map(|(u, p)| format!("{u}:{p}"));
    }

    /// `CONNECT` tunnels opened.
    pub fn tunnels(&self) -> usize {
        self.state.tunnels.load(Relaxed)
    }

    /// Absolute-form requests forwarded to an origin.
    pub fn forwarded(&self) -> usize {
        self.state.forwarded.load(Relaxed)
    }

    /// 407 answers sent.
    pub fn auth_failures(&self) -> usize {
        self.state.auth_failures.load(Relaxed)
    }

    /// `host:port` of every authorized tunnel or forwarded request, in arrival order.
    pub fn targets(&self) -> Vec<String> {
        lock(&self.state.targets).clone()
    }
}

impl std::fmt::Debug for ProxyServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyServer").field("addr", &self.addr()).finish_non_exhaustive()
    }
}

fn authorized(expected: &str, header: Option<&HeaderValue>) -> bool {
    let Some((scheme, value)) = header.and_then(|h| h.to_str().ok()).and_then(|h| h.trim().split_once(' ')) else {
        return false;
    };
    let decoded = base64::engine::general_purpose::STANDARD.decode(value.trim()).unwrap_or_default();
    scheme.eq_ignore_ascii_case("basic") && decoded == expected.as_bytes()
}

async fn handle(st: Arc<State>, mut req: Request<Incoming>) -> Response<Body> {
    let expected = lock(&st.credentials).clone();
    if expected.is_some_and(|e| !authorized(&e, req.headers().get(PROXY_AUTHORIZATION))) {
        st.auth_failures.fetch_add(1, Relaxed);
        let resp = respond(407, "text/plain", "Proxy Authentication Required\n");
        return with_header(resp, PROXY_AUTHENTICATE.as_str(), "Basic realm=\"gantry-test\"");
    }
    let Some(authority) = req.uri().authority().cloned() else {
        return respond(400, "text/plain", "not a proxy request: expected CONNECT or an absolute-form URI\n");
    };
    let is_connect = req.method() == Method::CONNECT;
    if !is_connect && req.uri().scheme_str() != Some("http") {
        return respond(400, "text/plain", "only http:// URIs can be forwarded; use CONNECT for https\n");
    }
    let target = format!("{}:{}", authority.host(), authority.port_u16().unwrap_or(if is_connect { 443 } else { 80 }));
    lock(&st.targets).push(target.clone());
    let Ok(mut upstream) = TcpStream::connect(&target).await else {
        return respond(502, "text/plain", format!("cannot connect to {target}\n"));
    };
    if is_connect {
        st.tunnels.fetch_add(1, Relaxed);
        tokio::spawn(async move {
            if let Ok(upgraded) = hyper::upgrade::on(req).await {
                let _ = tokio::io::copy_bidirectional(&mut TokioIo::new(upgraded), &mut upstream).await;
            }
        });
        return respond(200, "", "");
    }
    let Ok((mut sender, conn)) = hyper::client::conn::http1::handshake(TokioIo::new(upstream)).await else {
        return respond(502, "text/plain", "origin handshake failed\n");
    };
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let path = req.uri().path_and_query().cloned().unwrap_or_else(|| PathAndQuery::from_static("/"));
    *req.uri_mut() = Uri::from(path);
    let headers = req.headers_mut();
    headers.remove(PROXY_AUTHORIZATION);
    headers.remove("proxy-connection");
    if !headers.contains_key(HOST) {
        if let Ok(host) = HeaderValue::from_str(authority.as_str()) {
            headers.insert(HOST, host);
        }
    }
    st.forwarded.fetch_add(1, Relaxed);
    match sender.send_request(req).await {
        Ok(resp) => resp.map(|b| b.boxed()),
        Err(e) => respond(502, "text/plain", format!("origin failed: {e}\n")),
    }
}
