//! ECS task role / EKS Pod Identity container credentials endpoint double.
//!
//! Reproduced: `GET <path>` (e.g. `/v2/credentials/<id>` for `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`
//! or `/v1/credentials` for a Pod Identity `AWS_CONTAINER_CREDENTIALS_FULL_URI`) answers
//! `application/json` `{"AccessKeyId","SecretAccessKey","Token","Expiration","RoleArn"}` with
//! RFC 3339 UTC seconds-precision `Expiration`. When an authorization token is configured, the
//! `Authorization` header must equal it byte for byte (else 401 with a JSON
//! `{"code","message"}` body); the token can change at run time, as a rotated token file does.
//!
//! Simplified: the path must match the request's path and query exactly (else 404); no
//! `AccountId` field (Pod Identity's agent adds one); methods other than `GET` get 405;
//! [`Mode`] applies to every request.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use http::header::AUTHORIZATION;
use http::{Method, Request, Response};
use hyper::body::Incoming;

use crate::server::{hang, respond, Body, Server};
use crate::util::{json_str, lock, rfc3339};
use crate::{Issuer, Mode};

struct Config {
    auth_token: Option<String>,
    role_arn: String,
    mode: Mode,
    last_authorization: Option<String>,
}

struct State {
    issuer: Arc<dyn Issuer>,
    path: String,
    config: Mutex<Config>,
    requests: AtomicUsize,
    served: AtomicUsize,
    unauthorized: AtomicUsize,
}

/// A running container credentials endpoint; dropping it stops it.
///
/// Defaults: no authorization token required, role `arn:aws:iam::123456789012:role/test`,
/// [`Mode::Normal`].
pub struct ContainerServer {
    state: Arc<State>,
    server: Server,
}

impl ContainerServer {
    /// Starts on a free loopback port, serving credentials from `issuer` (source
    /// `"container"`) at `path` (which starts with `/`).
    pub fn start(path: &str, issuer: Arc<dyn Issuer>) -> ContainerServer {
        let config = Config {
            auth_token: None,
            role_arn: "arn:aws:iam::123456789012:role/test".into(),
            mode: Mode::Normal,
            last_authorization: None,
        };
        let state = Arc::new(State {
            issuer,
            path: path.into(),
            config: Mutex::new(config),
            requests: AtomicUsize::new(0),
            served: AtomicUsize::new(0),
            unauthorized: AtomicUsize::new(0),
        });
        let st = state.clone();
        let server = Server::start("container", move |req| handle(st.clone(), req));
        ContainerServer { state, server }
    }

    /// The full credentials URI, e.g. `http://127.0.0.1:41234/v1/credentials` (for
    /// `AWS_CONTAINER_CREDENTIALS_FULL_URI`).
    pub fn url(&self) -> String {
        format!("{}{}", self.server.url(), self.state.path)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// Requires `Authorization: <token>` exactly (`None`: no header needed).
    pub fn set_auth_token(&self, token: Option<&str>) {
        lock(&self.state.config).auth_token = token.map(str::to_owned);
    }

    /// The `RoleArn` sent with the credentials.
    pub fn set_role_arn(&self, role_arn: &str) {
        lock(&self.state.config).role_arn = role_arn.into();
    }

    /// How later requests are answered.
    pub fn set_mode(&self, mode: Mode) {
        lock(&self.state.config).mode = mode;
    }

    /// The `Authorization` header of the latest request (`None` if it had none).
    pub fn last_authorization(&self) -> Option<String> {
        lock(&self.state.config).last_authorization.clone()
    }

    /// Requests of any kind received.
    pub fn requests(&self) -> usize {
        self.state.requests.load(Relaxed)
    }

    /// Credential documents served (200 with JSON).
    pub fn credentials_served(&self) -> usize {
        self.state.served.load(Relaxed)
    }

    /// 401 answers sent (missing or wrong `Authorization`).
    pub fn unauthorized(&self) -> usize {
        self.state.unauthorized.load(Relaxed)
    }
}

impl std::fmt::Debug for ContainerServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContainerServer").field("url", &self.url()).finish_non_exhaustive()
    }
}

fn json_error(status: u16, code: &str, message: &str) -> Response<Body> {
    respond(status, "application/json", format!("{{\"code\":{},\"message\":{}}}", json_str(code), json_str(message)))
}

async fn handle(st: Arc<State>, req: Request<Incoming>) -> Response<Body> {
    st.requests.fetch_add(1, Relaxed);
    let authorization = req.headers().get(AUTHORIZATION).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let (mode, expected, role_arn) = {
        let mut config = lock(&st.config);
        config.last_authorization = authorization.clone();
        (config.mode, config.auth_token.clone(), config.role_arn.clone())
    };
    match mode {
        Mode::Hang => return hang().await,
        Mode::Error500 => return json_error(500, "InternalServerError", "Internal server error"),
        _ => {}
    }
    if req.uri().path_and_query().map(|p| p.as_str()) != Some(st.path.as_str()) {
        return json_error(404, "NotFound", "Credentials not found for this path");
    }
    if req.method() != Method::GET {
        return json_error(405, "MethodNotAllowed", "Only GET is supported");
    }
    if expected.is_some() && authorization != expected {
        st.unauthorized.fetch_add(1, Relaxed);
        return json_error(401, "AccessDenied", "Unable to authorize request: invalid or missing Authorization");
    }
    if mode == Mode::NotJson {
        return respond(200, "application/json", "<html>not json</html>");
    }
    let c = st.issuer.issue("container");
    st.served.fetch_add(1, Relaxed);
    let body = format!(
        "{{\"AccessKeyId\":{},\"SecretAccessKey\":{},\"Token\":{},\"Expiration\":\"{}\",\"RoleArn\":{}}}",
        json_str(&c.access_key_id),
        json_str(&c.secret_access_key),
        json_str(&c.session_token),
        rfc3339(c.expiration),
        json_str(&role_arn)
    );
    respond(200, "application/json", body)
}
