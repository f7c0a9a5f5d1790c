//! STS Query API double: `AssumeRole` and `AssumeRoleWithWebIdentity`.
//!
//! Reproduced: parameters come from a `POST` body with `Content-Type:
//! application/x-www-form-urlencoded` or from the query string (`GET`); `Action` and
//! `Version=2011-06-15` are required (`InvalidAction` otherwise; a `POST` body of another
//! content type is ignored). `RoleArn` and `RoleSessionName` are validated as STS does
//! (`ValidationError`: ARN shape, session name `[\w+=,.@-]{2,64}`, `DurationSeconds` in
//! `900..=43200`). `AssumeRole` must carry
//! `Authorization: AWS4-HMAC-SHA256 Credential=<AKID>/<yyyymmdd>/<region>/sts/aws4_request,
//! SignedHeaders=…, Signature=…` with an `x-amz-date` of the same day: no header is 403
//! `MissingAuthenticationToken`, a malformed one or a scope for another service 403
//! `SignatureDoesNotMatch`, an AKID the double does not accept 403 `InvalidClientTokenId`;
//! keys registered with their session token also need that `x-amz-security-token`, and
//! once past their expiration get 403 `ExpiredToken`. `AssumeRoleWithWebIdentity` is
//! unsigned; an unknown `WebIdentityToken` is 400 `InvalidIdentityToken`. Responses are
//! `text/xml` with `x-amzn-RequestId`, in STS's element layout; errors are `ErrorResponse`
//! documents with `Type` `Sender` (or `Receiver` for 500s). For JWT tokens,
//! `SubjectFromWebIdentityToken`, `Audience` and `Provider` are the `sub`, `aud` and `iss`
//! claims.
//!
//! Simplified: signatures are not recomputed (only the scope, date and key are checked);
//! `DurationSeconds` does not shorten the issuer's expiration; policies, tags, MFA and
//! source identity are accepted and ignored; the JWT signature and `exp` are not checked.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use base64::Engine;
use http::header::{AUTHORIZATION, CONTENT_TYPE};
use http::{HeaderMap, Method, Request, Response};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use crate::server::{hang, respond, with_header, Body, Server};
use crate::util::{form_decode, lock, request_id, rfc3339, xml_escape};
use crate::{Issued, Issuer, Mode};

const XMLNS: &str = "https://sts.amazonaws.com/doc/2011-06-15/";

/// One STS call as the double saw it (recorded even when rejected).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct StsCall {
    /// `AssumeRole` or `AssumeRoleWithWebIdentity`.
    pub action: String,
    /// `RoleArn` parameter.
    pub role_arn: String,
    /// `RoleSessionName` parameter.
    pub role_session_name: String,
    /// AKID from the `Authorization` credential scope (`None` when unsigned).
    pub caller_access_key_id: Option<String>,
    /// `ExternalId` parameter.
    pub external_id: Option<String>,
    /// `DurationSeconds` parameter, as sent.
    pub duration_seconds: Option<String>,
    /// `WebIdentityToken` parameter.
    pub web_identity_token: Option<String>,
    /// HTTP status of the answer.
    pub status: u16,
}

/// An error [`StsServer::fail_next`] injects instead of a success.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StsFault {
    /// 400 `Throttling`, "Rate exceeded".
    Throttling,
    /// 403 `ExpiredToken`: the signing credentials' session token is expired.
    ExpiredToken,
    /// 400 `ExpiredTokenException`: the web identity token is expired.
    ExpiredTokenException,
    /// 403 `AccessDenied`: the caller may not assume the role.
    AccessDenied,
}

impl StsFault {
    fn parts(self) -> (u16, &'static str, &'static str) {
        match self {
            StsFault::Throttling => (400, "Throttling", "Rate exceeded"),
            StsFault::ExpiredToken => (403, "ExpiredToken", "The security token included in the request is expired"),
            StsFault::ExpiredTokenException => {
                (400, "ExpiredTokenException", "Token expired: current date/time is past the token's exp claim")
            }
            StsFault::AccessDenied => {
                (403, "AccessDenied", "User is not authorized to perform: sts:AssumeRole on this resource")
            }
        }
    }
}

/// Session token and expiration an accepted key must match (`None`: any).
type KeyRule = Option<(String, SystemTime)>;

struct State {
    issuer: Arc<dyn Issuer>,
    mode: Mutex<Mode>,
    fail: Mutex<Option<(StsFault, usize)>>,
    keys: Mutex<HashMap<String, KeyRule>>,
    web_tokens: Mutex<HashSet<String>>,
    accept_own: AtomicBool,
    calls: Mutex<Vec<StsCall>>,
    requests: AtomicUsize,
}

/// A running STS double; dropping it stops it. Accepts no key and no web identity token
/// until told to.
pub struct StsServer {
    state: Arc<State>,
    server: Server,
}

impl StsServer {
    /// Starts on a free loopback port; credentials come from `issuer` with source
    /// `"sts:<Action>:<RoleArn>"`.
    pub fn start(issuer: Arc<dyn Issuer>) -> StsServer {
        let state = Arc::new(State {
            issuer,
            mode: Mutex::new(Mode::Normal),
            fail: Mutex::new(None),
            keys: Mutex::new(HashMap::new()),
            web_tokens: Mutex::new(HashSet::new()),
            accept_own: AtomicBool::new(false),
            calls: Mutex::new(Vec::new()),
            requests: AtomicUsize::new(0),
        });
        let st = state.clone();
        let server = Server::start("sts", move |req| handle(st.clone(), req));
        StsServer { state, server }
    }

    /// Endpoint URL, e.g. `http://127.0.0.1:41234` (requests go to `/`).
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// Accepts `AssumeRole` signed with this access key id, with any session token.
    pub fn accept_access_key(&self, access_key_id: &str) {
        lock(&self.state.keys).insert(access_key_id.into(), None);
    }

    /// Accepts `AssumeRole` signed with these credentials: the request must carry their
    /// session token, and after their expiration it gets 403 `ExpiredToken`.
    pub fn accept_issued(&self, issued: &Issued) {
        let rule = Some((issued.session_token.clone(), issued.expiration));
        lock(&self.state.keys).insert(issued.access_key_id.clone(), rule);
    }

    /// Whether credentials this double hands out are accepted for later `AssumeRole` calls
    /// (role chaining), as with [`StsServer::accept_issued`]. Off by default.
    pub fn set_accept_own_keys(&self, accept: bool) {
        self.state.accept_own.store(accept, Relaxed);
    }

    /// Accepts this `WebIdentityToken` (e.g. the contents of the token file).
    pub fn accept_web_identity_token(&self, token: &str) {
        lock(&self.state.web_tokens).insert(token.into());
    }

    /// How later requests are answered (`NotJson`: a 200 whose body is not XML).
    pub fn set_mode(&self, mode: Mode) {
        *lock(&self.state.mode) = mode;
    }

    /// Answers the next `times` valid, authorized calls with `fault` instead of credentials.
    pub fn fail_next(&self, fault: StsFault, times: usize) {
        *lock(&self.state.fail) = (times > 0).then_some((fault, times));
    }

    /// Every recognised call so far, in arrival order.
    pub fn calls(&self) -> Vec<StsCall> {
        lock(&self.state.calls).clone()
    }

    /// Requests of any kind received.
    pub fn requests(&self) -> usize {
        self.state.requests.load(Relaxed)
    }
}

impl std::fmt::Debug for StsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StsServer").field("addr", &self.addr()).finish_non_exhaustive()
    }
}

fn error(status: u16, code: &str, message: &str) -> Response<Body> {
    let kind = if status >= 500 { "Receiver" } else { "Sender" };
    let id = request_id();
    let body = format!(
        "<ErrorResponse xmlns=\"{XMLNS}\">\n  <Error>\n    <Type>{kind}</Type>\n    <Code>{code}</Code>\n    \
         <Message>{}</Message>\n  </Error>\n  <RequestId>{id}</RequestId>\n</ErrorResponse>\n",
        xml_escape(message)
    );
    with_header(respond(status, "text/xml", body), "x-amzn-requestid", &id)
}

async fn handle(st: Arc<State>, req: Request<Incoming>) -> Response<Body> {
    st.requests.fetch_add(1, Relaxed);
    let (parts, body) = req.into_parts();
    let body = body.collect().await.map(|c| c.to_bytes()).unwrap_or_default();
    let mode = *lock(&st.mode);
    match mode {
        Mode::Hang => return hang().await,
        Mode::Error500 => return error(500, "InternalFailure", "An internal error occurred"),
        Mode::NotJson => return respond(200, "text/xml", "this is not XML"),
        _ => {}
    }
    let mut params = parts.uri.query().map(form_decode).unwrap_or_default();
    let form = parts.headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if parts.method == Method::POST && form.starts_with("application/x-www-form-urlencoded") {
        params.extend(form_decode(&String::from_utf8_lossy(&body)));
    }
    let param = |name: &str| params.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let action = param("Action").unwrap_or_default();
    let version = param("Version").unwrap_or_else(|| "NO_VERSION_SPECIFIED".into());
    let web = match action.as_str() {
        "AssumeRole" if version == "2011-06-15" => false,
        "AssumeRoleWithWebIdentity" if version == "2011-06-15" => true,
        _ => return error(400, "InvalidAction", &format!("Could not find operation {action} for version {version}")),
    };
    let mut call = StsCall {
        action: action.clone(),
        role_arn: param("RoleArn").unwrap_or_default(),
        role_session_name: param("RoleSessionName").unwrap_or_default(),
        caller_access_key_id: None,
        external_id: param("ExternalId"),
        duration_seconds: param("DurationSeconds"),
        web_identity_token: param("WebIdentityToken"),
        status: 0,
    };
    let resp = respond_to(&st, &parts.headers, &mut call, web);
    call.status = resp.status().as_u16();
    lock(&st.calls).push(call);
    resp
}

fn respond_to(st: &State, headers: &HeaderMap, call: &mut StsCall, web: bool) -> Response<Body> {
    let invalid = |msg: String| error(400, "ValidationError", &format!("1 validation error detected: {msg}"));
    let token = call.web_identity_token.clone().unwrap_or_default();
    let required =
        [("roleArn", &call.role_arn), ("roleSessionName", &call.role_session_name), ("webIdentityToken", &token)];
    for (field, value) in required.into_iter().take(if web { 3 } else { 2 }) {
        if value.is_empty() {
            return invalid(format!("Value null at '{field}' failed to satisfy constraint: Member must not be null"));
        }
    }
    let arn: Vec<&str> = call.role_arn.split(':').collect();
    if arn.len() < 6 || arn[0] != "arn" || !arn[5].starts_with("role/") {
        return invalid(format!("Value '{}' at 'roleArn' is not a valid role ARN", call.role_arn));
    }
    let name = &call.role_session_name;
    if !(2..=64).contains(&name.len()) || !name.chars().all(|c| c.is_ascii_alphanumeric() || "_+=,.@-".contains(c)) {
        return invalid(format!(
            "Value '{name}' at 'roleSessionName' failed to satisfy constraint: Member must satisfy regular expression \
             pattern: [\\w+=,.@-]*"
        ));
    }
    if let Some(d) =
        call.duration_seconds.as_ref().filter(|d| !d.parse().is_ok_and(|d: u32| (900..=43_200).contains(&d)))
    {
        return invalid(format!("Value '{d}' at 'durationSeconds' failed to satisfy constraint"));
    }
    let claims = if web {
        if !lock(&st.web_tokens).contains(&token) {
            return error(
                400,
                "InvalidIdentityToken",
                "The web identity token that was passed could not be validated by AWS. Get a new identity token from \
                 the identity provider and then retry the request.",
            );
        }
        jwt_claims(&token)
    } else {
        match check_signature(st, headers) {
            Ok(akid) => call.caller_access_key_id = Some(akid),
            Err((status, code, message)) => return error(status, code, message),
        }
        serde_json::Value::Null
    };
    let fault = {
        let mut fail = lock(&st.fail);
        let fault = fail.map(|(f, _)| f);
        *fail = match *fail {
            Some((f, left)) if left > 1 => Some((f, left - 1)),
            _ => None,
        };
        fault
    };
    if let Some(fault) = fault {
        let (status, code, message) = fault.parts();
        return error(status, code, message);
    }
    let c = st.issuer.issue(&format!("sts:{}:{}", call.action, call.role_arn));
    if st.accept_own.load(Relaxed) {
        lock(&st.keys).insert(c.access_key_id.clone(), Some((c.session_token.clone(), c.expiration)));
    }
    let role_name = arn[5].rsplit('/').next().unwrap_or_default();
    let role_id = format!("AROA{:017X}", fnv1a(&call.role_arn));
    let session = xml_escape(name);
    let user = format!(
        "    <AssumedRoleUser>\n      <AssumedRoleId>{role_id}:{session}</AssumedRoleId>\n      \
         <Arn>arn:{}:sts::{}:assumed-role/{}/{session}</Arn>\n    </AssumedRoleUser>\n",
        arn[1],
        arn[4],
        xml_escape(role_name)
    );
    let creds = format!(
        "    <Credentials>\n      <AccessKeyId>{}</AccessKeyId>\n      <SecretAccessKey>{}</SecretAccessKey>\n      \
         <SessionToken>{}</SessionToken>\n      <Expiration>{}</Expiration>\n    </Credentials>\n",
        xml_escape(&c.access_key_id),
        xml_escape(&c.secret_access_key),
        xml_escape(&c.session_token),
        rfc3339(c.expiration)
    );
    let claim = |k: &str, default: &str| {
        let v = &claims[k];
        xml_escape(v.as_str().or_else(|| v[0].as_str()).unwrap_or(default))
    };
    let extra = if web {
        format!(
            "    <SubjectFromWebIdentityToken>{}</SubjectFromWebIdentityToken>\n    <Audience>{}</Audience>\n    \
             <Provider>{}</Provider>\n",
            claim("sub", "gantry-test-subject"),
            claim("aud", "sts.amazonaws.com"),
            claim("iss", "gantry-test-provider")
        )
    } else {
        String::new()
    };
    let id = request_id();
    let action = &call.action;
    let body = format!(
        "<{action}Response xmlns=\"{XMLNS}\">\n  <{action}Result>\n{creds}{user}{extra}  </{action}Result>\n  \
         <ResponseMetadata>\n    <RequestId>{id}</RequestId>\n  </ResponseMetadata>\n</{action}Response>\n"
    );
    with_header(respond(200, "text/xml", body), "x-amzn-requestid", &id)
}

/// Checks the SigV4 `Authorization` header's shape, scope and key; returns the AKID or the
/// (status, code, message) to reject with.
fn check_signature(st: &State, headers: &HeaderMap) -> Result<String, (u16, &'static str, &'static str)> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let mismatch = |msg| Err((403, "SignatureDoesNotMatch", msg));
    let Some(auth) = header(AUTHORIZATION.as_str()) else {
        return Err((403, "MissingAuthenticationToken", "Request is missing Authentication Token"));
    };
    let Some(fields) = auth.strip_prefix("AWS4-HMAC-SHA256 ") else {
        return mismatch("Unsupported authorization scheme; expected AWS4-HMAC-SHA256");
    };
    let field = |name: &str| fields.split(',').find_map(|f| f.trim().strip_prefix(name));
    let (Some(credential), Some(_), Some(_)) = (field("Credential="), field("SignedHeaders="), field("Signature="))
    else {
        return mismatch("Authorization header requires Credential, SignedHeaders and Signature");
    };
    let scope: Vec<&str> = credential.split('/').collect();
    if scope.len() != 5 || scope[4] != "aws4_request" {
        return mismatch("Credential should be of the form <AKID>/<date>/<region>/sts/aws4_request");
    }
    if scope[3] != "sts" {
        return mismatch("Credential should be scoped to correct service: 'sts'. ");
    }
    if !header("x-amz-date").is_some_and(|d| d.starts_with(scope[1])) {
        return mismatch("Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP");
    }
    let invalid = Err((403, "InvalidClientTokenId", "The security token included in the request is invalid."));
    match lock(&st.keys).get(scope[0]) {
        None => invalid,
        Some(Some((token, _))) if header("x-amz-security-token") != Some(token.as_str()) => invalid,
        Some(Some((_, expiration))) if *expiration <= SystemTime::now() => {
            Err((403, "ExpiredToken", "The security token included in the request is expired"))
        }
        Some(_) => Ok(scope[0].into()),
    }
}

/// The payload of a JWT (`Null` if the token is not one).
fn jwt_claims(token: &str) -> serde_json::Value {
    let payload = token.split('.').nth(1).unwrap_or_default();
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// A stable 64-bit hash, for role ids that stay the same across calls.
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}
