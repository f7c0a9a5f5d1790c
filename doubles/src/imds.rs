//! EC2 Instance Metadata Service double, IMDSv2 only (`HttpTokens=required`).
//!
//! Reproduced: `PUT /latest/api/token` needs `x-aws-ec2-metadata-token-ttl-seconds` in
//! `1..=21600` (else 400) and is refused with 403 when `X-Forwarded-For` is present; the token
//! comes back as `text/plain` with the TTL header echoed. Every `GET` needs a live
//! `x-aws-ec2-metadata-token` (missing, unknown or older than its TTL: 401, as with IMDSv1
//! disabled). `iam/security-credentials/` lists the role (404 without one), and
//! `iam/security-credentials/<role>` returns the credential document in IMDS's own layout
//! (pretty-printed, `"Key" : value`, `Code`, `LastUpdated`, `Type` `AWS-HMAC`, RFC 3339 UTC
//! times with seconds precision). `placement/region`, `instance-type`,
//! `network/interfaces/macs/` (one `<mac>/` line each) and `…/macs/<mac>/network-card-index`
//! and `…/device-number` come from values set on the handle. Everything is `text/plain`;
//! errors carry IMDS's small HTML page.
//!
//! Simplified: only the paths above exist (others 404); each credential request calls the
//! issuer instead of serving one cached set until rotation; a token works from any client
//! address (no hop limit); [`Mode`] applies to every request, and `NotJson` replaces only
//! the credential document.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use base64::Engine;
use http::{Method, Request, Response};
use hyper::body::Incoming;

use crate::server::{hang, respond, with_header, Body, Server};
use crate::util::{json_str, lock, rfc3339};
use crate::{Issuer, Mode};

const TTL_HEADER: &str = "x-aws-ec2-metadata-token-ttl-seconds";
const TOKEN_HEADER: &str = "x-aws-ec2-metadata-token";
const CREDS_PREFIX: &str = "/latest/meta-data/iam/security-credentials/";

/// One network interface as IMDS lists it under `network/interfaces/macs/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetworkInterface {
    /// MAC address, e.g. `0e:49:61:0f:c3:11`.
    pub mac: String,
    /// `network-card-index` (0 unless the instance has several network cards).
    pub network_card_index: u32,
    /// `device-number` (0 for the primary interface).
    pub device_number: u32,
}

struct Config {
    role: Option<String>,
    region: String,
    instance_type: String,
    interfaces: Vec<NetworkInterface>,
    mode: Mode,
}

struct State {
    issuer: Arc<dyn Issuer>,
    config: Mutex<Config>,
    /// token -> (issued at, ttl)
    tokens: Mutex<HashMap<String, (Instant, Duration)>>,
    requests: AtomicUsize,
    token_requests: AtomicUsize,
    credential_requests: AtomicUsize,
    unauthorized: AtomicUsize,
}

/// A running IMDSv2 double; dropping it stops it.
///
/// Defaults: role `gantry-test-role`, region `us-east-1`, instance type `c6in.32xlarge`, one
/// interface `0e:00:00:00:00:01` (card 0, device 0), [`Mode::Normal`].
pub struct ImdsServer {
    state: Arc<State>,
    server: Server,
}

impl ImdsServer {
    /// Starts on a free loopback port; credentials come from `issuer` with source `"imds"`.
    pub fn start(issuer: Arc<dyn Issuer>) -> ImdsServer {
        let config = Config {
            role: Some("gantry-test-role".into()),
            region: "us-east-1".into(),
            instance_type: "c6in.32xlarge".into(),
            interfaces: vec![NetworkInterface {
                mac: "0e:00:00:00:00:01".into(),
                network_card_index: 0,
                device_number: 0,
            }],
            mode: Mode::Normal,
        };
        let state = Arc::new(State {
            issuer,
            config: Mutex::new(config),
            tokens: Mutex::new(HashMap::new()),
            requests: AtomicUsize::new(0),
            token_requests: AtomicUsize::new(0),
            credential_requests: AtomicUsize::new(0),
            unauthorized: AtomicUsize::new(0),
        });
        let st = state.clone();
        let server = Server::start("imds", move |req| handle(st.clone(), req));
        ImdsServer { state, server }
    }

    /// Endpoint URL, e.g. `http://127.0.0.1:41234` (for `AWS_EC2_METADATA_SERVICE_ENDPOINT`).
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// The instance profile's role name, or `None` for an instance without one (404s).
    pub fn set_role(&self, role: Option<&str>) {
        lock(&self.state.config).role = role.map(str::to_owned);
    }

    /// The value of `placement/region`.
    pub fn set_region(&self, region: &str) {
        lock(&self.state.config).region = region.into();
    }

    /// The value of `instance-type`.
    pub fn set_instance_type(&self, instance_type: &str) {
        lock(&self.state.config).instance_type = instance_type.into();
    }

    /// The interfaces listed under `network/interfaces/macs/`, in this order.
    pub fn set_interfaces(&self, interfaces: Vec<NetworkInterface>) {
        lock(&self.state.config).interfaces = interfaces;
    }

    /// How later requests are answered.
    pub fn set_mode(&self, mode: Mode) {
        lock(&self.state.config).mode = mode;
    }

    /// Makes every token issued so far stale: requests using them get 401.
    pub fn expire_tokens(&self) {
        lock(&self.state.tokens).clear();
    }

    /// Requests of any kind received.
    pub fn requests(&self) -> usize {
        self.state.requests.load(Relaxed)
    }

    /// `PUT /latest/api/token` requests received (valid or not).
    pub fn token_requests(&self) -> usize {
        self.state.token_requests.load(Relaxed)
    }

    /// `GET iam/security-credentials/<name>` requests received (authorized or not).
    pub fn credential_requests(&self) -> usize {
        self.state.credential_requests.load(Relaxed)
    }

    /// 401 answers sent (missing, unknown or expired token).
    pub fn unauthorized(&self) -> usize {
        self.state.unauthorized.load(Relaxed)
    }
}

impl std::fmt::Debug for ImdsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImdsServer").field("addr", &self.addr()).finish_non_exhaustive()
    }
}

/// IMDS's error page, sent as `text/html`.
fn error(status: u16, reason: &str) -> Response<Body> {
    let page = format!(
        "<?xml version=\"1.0\" encoding=\"iso-8859-1\"?>\n<!DOCTYPE html PUBLIC \"-//W3C//DTD XHTML 1.0 \
         Transitional//EN\"\n\t\"http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd\">\n<html \
         xmlns=\"http://www.w3.org/1999/xhtml\" xml:lang=\"en\" lang=\"en\">\n <head>\n  <title>{status} - \
         {reason}</title>\n </head>\n <body>\n  <h1>{status} - {reason}</h1>\n </body>\n</html>\n"
    );
    respond(status, "text/html", page)
}

fn text(body: String) -> Response<Body> {
    respond(200, "text/plain", body)
}

async fn handle(st: Arc<State>, req: Request<Incoming>) -> Response<Body> {
    st.requests.fetch_add(1, Relaxed);
    let path = req.uri().path().to_owned();
    if path == "/latest/api/token" {
        st.token_requests.fetch_add(1, Relaxed);
    } else if path.len() > CREDS_PREFIX.len() && path.starts_with(CREDS_PREFIX) {
        st.credential_requests.fetch_add(1, Relaxed);
    }
    let mode = lock(&st.config).mode;
    match mode {
        Mode::Hang => return hang().await,
        Mode::Error500 => return error(500, "Internal Server Error"),
        _ => {}
    }
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
    if path == "/latest/api/token" {
        if req.method() != Method::PUT {
            return with_header(error(405, "Method Not Allowed"), "allow", "PUT");
        }
        if req.headers().contains_key("x-forwarded-for") {
            return error(403, "Forbidden");
        }
        let Some(ttl) =
            header(TTL_HEADER).and_then(|v| v.trim().parse::<u32>().ok()).filter(|t| (1..=21_600).contains(t))
        else {
            return error(400, "Bad Request");
        };
        let token = base64::engine::general_purpose::STANDARD.encode(rand::random::<[u8; 42]>());
        lock(&st.tokens).insert(token.clone(), (Instant::now(), Duration::from_secs(ttl.into())));
        return with_header(text(token), TTL_HEADER, &ttl.to_string());
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return error(405, "Method Not Allowed");
    }
    let live = header(TOKEN_HEADER).is_some_and(|t| {
        let mut tokens = lock(&st.tokens);
        let live = tokens.get(t).is_some_and(|(at, ttl)| at.elapsed() < *ttl);
        if !live {
            tokens.remove(t);
        }
        live
    });
    if !live {
        st.unauthorized.fetch_add(1, Relaxed);
        return error(401, "Unauthorized");
    }
    metadata(&st, path.strip_prefix("/latest/meta-data").unwrap_or("<none>"))
}

/// Answers an authorized `GET /latest/meta-data<path>`.
fn metadata(st: &State, path: &str) -> Response<Body> {
    let config = lock(&st.config);
    let not_found = || error(404, "Not Found");
    match path.trim_end_matches('/') {
        "/iam/security-credentials" => config.role.clone().map_or_else(not_found, text),
        "/placement/region" => text(config.region.clone()),
        "/instance-type" => text(config.instance_type.clone()),
        "/network/interfaces/macs" => {
            text(config.interfaces.iter().map(|n| format!("{}/", n.mac)).collect::<Vec<_>>().join("\n"))
        }
        p if p.starts_with("/iam/security-credentials/") => {
            let name = &p["/iam/security-credentials/".len()..];
            if config.role.as_deref() != Some(name) {
                return not_found();
            }
            let mode = config.mode;
            drop(config);
            if mode == Mode::NotJson {
                return text("<html><body>Service Unavailable</body></html>".into());
            }
            let c = st.issuer.issue("imds");
            text(format!(
                "{{\n  \"Code\" : \"Success\",\n  \"LastUpdated\" : \"{}\",\n  \"Type\" : \"AWS-HMAC\",\n  \
                 \"AccessKeyId\" : {},\n  \"SecretAccessKey\" : {},\n  \"Token\" : {},\n  \"Expiration\" : \"{}\"\n}}",
                rfc3339(SystemTime::now()),
                json_str(&c.access_key_id),
                json_str(&c.secret_access_key),
                json_str(&c.session_token),
                rfc3339(c.expiration)
            ))
        }
        p => {
            let Some((mac, key)) = p.strip_prefix("/network/interfaces/macs/").and_then(|r| r.split_once('/')) else {
                return not_found();
            };
            let Some(nic) = config.interfaces.iter().find(|n| n.mac == mac) else { return not_found() };
            match key {
                "network-card-index" => text(nic.network_card_index.to_string()),
                "device-number" => text(nic.device_number.to_string()),
                _ => not_found(),
            }
        }
    }
}
