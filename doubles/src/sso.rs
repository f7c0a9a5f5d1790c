//! IAM Identity Center (SSO) portal double: `GetRoleCredentials`.
//!
//! Reproduced: `GET /federation/credentials?role_name=<role>&account_id=<account>` with the
//! access token in `x-amz-sso_bearer_token`. A missing or unknown token is 401
//! `{"message":"Session token not found or invalid"}` with `x-amzn-ErrorType:
//! UnauthorizedException`; missing parameters are 400 `InvalidRequestException`. Success is
//! `application/json` `{"roleCredentials":{"accessKeyId","secretAccessKey","sessionToken",
//! "expiration"}}` with `expiration` in epoch milliseconds, and `x-amzn-RequestId`.
//!
//! Simplified: every (account, role) pair is allowed for an accepted token (no 403
//! `ForbiddenException`); other portal operations (`ListAccounts`, `Logout`) are 404;
//! [`Mode`] applies to every request.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use http::{Method, Request, Response};
use hyper::body::Incoming;

use crate::server::{hang, respond, with_header, Body, Server};
use crate::util::{epoch_millis, form_decode, json_str, lock, request_id};
use crate::{Issuer, Mode};

/// One `GetRoleCredentials` call as the double saw it (recorded even when rejected).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SsoCall {
    /// `account_id` query parameter.
    pub account_id: String,
    /// `role_name` query parameter.
    pub role_name: String,
    /// `x-amz-sso_bearer_token` header (`None` if absent).
    pub access_token: Option<String>,
    /// HTTP status of the answer.
    pub status: u16,
}

struct State {
    issuer: Arc<dyn Issuer>,
    mode: Mutex<Mode>,
    tokens: Mutex<HashSet<String>>,
    calls: Mutex<Vec<SsoCall>>,
    requests: AtomicUsize,
    unauthorized: AtomicUsize,
}

/// A running SSO portal double; dropping it stops it. Accepts no token until told to.
pub struct SsoServer {
    state: Arc<State>,
    server: Server,
}

impl SsoServer {
    /// Starts on a free loopback port; credentials come from `issuer` with source
    /// `"sso:<account id>:<role name>"`.
    pub fn start(issuer: Arc<dyn Issuer>) -> SsoServer {
        let state = Arc::new(State {
            issuer,
            mode: Mutex::new(Mode::Normal),
            tokens: Mutex::new(HashSet::new()),
            calls: Mutex::new(Vec::new()),
            requests: AtomicUsize::new(0),
            unauthorized: AtomicUsize::new(0),
        });
        let st = state.clone();
        let server = Server::start("sso", move |req| handle(st.clone(), req));
        SsoServer { state, server }
    }

    /// Portal URL, e.g. `http://127.0.0.1:41234` (in place of
    /// `https://portal.sso.<region>.amazonaws.com`).
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// Accepts this access token (the `accessToken` of the SSO token cache).
    pub fn accept_token(&self, token: &str) {
        lock(&self.state.tokens).insert(token.into());
    }

    /// Stops accepting this access token (as after logout or expiry).
    pub fn revoke_token(&self, token: &str) {
        lock(&self.state.tokens).remove(token);
    }

    /// How later requests are answered.
    pub fn set_mode(&self, mode: Mode) {
        *lock(&self.state.mode) = mode;
    }

    /// Every `GetRoleCredentials` call so far, in arrival order.
    pub fn calls(&self) -> Vec<SsoCall> {
        lock(&self.state.calls).clone()
    }

    /// Requests of any kind received.
    pub fn requests(&self) -> usize {
        self.state.requests.load(Relaxed)
    }

    /// 401 answers sent.
    pub fn unauthorized(&self) -> usize {
        self.state.unauthorized.load(Relaxed)
    }
}

impl std::fmt::Debug for SsoServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SsoServer").field("addr", &self.addr()).finish_non_exhaustive()
    }
}

fn error(status: u16, kind: &str, message: &str) -> Response<Body> {
    let resp = respond(status, "application/json", format!("{{\"message\":{}}}", json_str(message)));
    with_header(with_header(resp, "x-amzn-errortype", kind), "x-amzn-requestid", &request_id())
}

async fn handle(st: Arc<State>, req: Request<Incoming>) -> Response<Body> {
    st.requests.fetch_add(1, Relaxed);
    let mode = *lock(&st.mode);
    match mode {
        Mode::Hang => return hang().await,
        Mode::Error500 => return error(500, "InternalServerException", "Internal server error"),
        _ => {}
    }
    if req.method() != Method::GET || req.uri().path() != "/federation/credentials" {
        return error(404, "ResourceNotFoundException", "Not found");
    }
    let params = req.uri().query().map(form_decode).unwrap_or_default();
    let param = |name: &str| params.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let token = req.headers().get("x-amz-sso_bearer_token").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let mut call = SsoCall {
        account_id: param("account_id").unwrap_or_default(),
        role_name: param("role_name").unwrap_or_default(),
        access_token: token.clone(),
        status: 200,
    };
    let resp = if call.account_id.is_empty() || call.role_name.is_empty() {
        error(400, "InvalidRequestException", "role_name and account_id are required")
    } else if !token.is_some_and(|t| lock(&st.tokens).contains(&t)) {
        st.unauthorized.fetch_add(1, Relaxed);
        error(401, "UnauthorizedException", "Session token not found or invalid")
    } else if mode == Mode::NotJson {
        respond(200, "application/json", "<html>not json</html>")
    } else {
        let c = st.issuer.issue(&format!("sso:{}:{}", call.account_id, call.role_name));
        let body = format!(
            "{{\"roleCredentials\":{{\"accessKeyId\":{},\"secretAccessKey\":{},\"sessionToken\":{},\"expiration\":{}}}}}",
            json_str(&c.access_key_id),
            json_str(&c.secret_access_key),
            json_str(&c.session_token),
            epoch_millis(c.expiration)
        );
        with_header(respond(200, "application/json", body), "x-amzn-requestid", &request_id())
    };
    call.status = resp.status().as_u16();
    lock(&st.calls).push(call);
    resp
}
