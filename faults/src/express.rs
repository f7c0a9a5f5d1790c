//! S3 Express One Zone session authentication, as a directory bucket's zonal endpoint does it.
//!
//! Reproduced AWS behaviour (API reference: CreateSession; "Authorizing Zonal endpoint API
//! operations with CreateSession"):
//! - A directory bucket is named `<base>--<az-id>--x-s3`. Once enabled
//!   ([`crate::FaultServer::enable_express`]), every request to such a bucket needs a session,
//!   except `CreateSession` itself (`GET /bucket?session`).
//! - `CreateSession` is signed with the caller's own credentials for the `s3express` service.
//!   Its answer is `<CreateSessionResult><Credentials>` with `SessionToken`, `SecretAccessKey`,
//!   `AccessKeyId` and `Expiration` (ISO 8601). Sessions last five minutes on AWS; here the
//!   lifetime is the test's choice. `x-amz-create-session-mode: ReadOnly` makes a session that
//!   may not write.
//! - A data request carries the token in `x-amz-s3session-token` (not
//!   `x-amz-security-token`) and is SigV4-signed for `s3express` with the session's key pair.
//!   The signature is checked here by signing the request again as received (its signed
//!   headers, its `x-amz-date`) with the session's secret and comparing.
//! - Refusals: no token, or a token this server never issued or has revoked, is
//!   `403 AccessDenied`; an expired session is `400 ExpiredToken` (S3's code for an expired
//!   temporary credential); a signature that does not verify is `403 SignatureDoesNotMatch`;
//!   a write with a read-only session is `403 AccessDenied`. Every refusal is counted.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{
    sign, PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
    UriPathNormalizationMode,
};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use http::{HeaderMap, Method};

/// The header a session token travels in.
pub(crate) const SESSION_TOKEN_HEADER: &str = "x-amz-s3session-token";

/// Whether `bucket` is a directory bucket's name: `<base>--<az-id>--x-s3`.
pub fn is_directory_bucket(bucket: &str) -> bool {
    bucket
        .strip_suffix("--x-s3")
        .and_then(|rest| rest.rsplit_once("--"))
        .is_some_and(|(base, az)| !base.is_empty() && !az.is_empty())
}

/// What a test configures: the base key pair CreateSession must be signed with, and how long
/// sessions last.
#[derive(Debug, Clone)]
pub struct ExpressSettings {
    /// The access key id CreateSession requests must be signed with.
    pub base_access_key: String,
    /// Its secret, to verify CreateSession signatures.
    pub base_secret_key: String,
    /// How long a session is valid (AWS: 5 minutes).
    pub session_lifetime: Duration,
}

/// Counts of what the session layer did, for tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExpressStats {
    /// Sessions handed out by CreateSession.
    pub sessions_created: u64,
    /// Data requests refused for their session (missing, unknown, revoked, expired, bad
    /// signature, read-only).
    pub refused: u64,
    /// Data requests to directory buckets served with a valid session.
    pub authorized: u64,
}

#[derive(Debug, Clone)]
struct Session {
    access_key: String,
    secret_key: String,
    bucket: String,
    read_only: bool,
    expires: Instant,
}

/// The session layer's state (disabled until a test enables it).
#[derive(Debug, Default)]
pub(crate) struct Express {
    settings: Mutex<Option<ExpressSettings>>,
    sessions: Mutex<HashMap<String, Session>>,
    created: AtomicU64,
    refused: AtomicU64,
    authorized: AtomicU64,
}

/// A refusal: HTTP status, S3 error code, message.
pub(crate) type Refusal = (u16, &'static str, String);

impl Express {
    pub(crate) fn enable(&self, settings: ExpressSettings) {
        *self.settings.lock().unwrap_or_else(|e| e.into_inner()) = Some(settings);
    }

    pub(crate) fn enabled(&self) -> bool {
        self.settings.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    pub(crate) fn set_lifetime(&self, lifetime: Duration) {
        if let Some(s) = self.settings.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            s.session_lifetime = lifetime;
        }
    }

    /// Ends every live session: their next request is refused as unknown.
    pub(crate) fn revoke_all(&self) {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    pub(crate) fn stats(&self) -> ExpressStats {
        ExpressStats {
            sessions_created: self.created.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
            authorized: self.authorized.load(Ordering::Relaxed),
        }
    }

    fn refuse(&self, status: u16, code: &'static str, message: impl Into<String>) -> Refusal {
        self.refused.fetch_add(1, Ordering::Relaxed);
        (status, code, message.into())
    }

    /// CreateSession for `bucket`: checks the base signature, then returns the answer's XML.
    pub(crate) fn create_session(
        &self,
        bucket: &str,
        method: &Method,
        uri: &str,
        headers: &HeaderMap,
    ) -> Result<String, Refusal> {
        let settings = self.settings.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let Some(settings) = settings else {
            return Err((501, "NotImplemented", "CreateSession is not enabled on this server".into()));
        };
        let auth = parse_authorization(headers).ok_or_else(|| self.refuse(403, "AccessDenied", "no signature"))?;
        if auth.service != "s3express" {
            return Err(self.refuse(403, "AccessDenied", format!("CreateSession signed for {}", auth.service)));
        }
        if auth.access_key != settings.base_access_key {
            return Err(self.refuse(403, "InvalidAccessKeyId", "unknown access key"));
        }
        verify(method, uri, headers, &auth, &settings.base_secret_key, None)
            .map_err(|m| self.refuse(403, "SignatureDoesNotMatch", m))?;
        let read_only = match headers.get("x-amz-create-session-mode").and_then(|v| v.to_str().ok()) {
            None | Some("ReadWrite") => false,
            Some("ReadOnly") => true,
            Some(other) => return Err((400, "InvalidArgument", format!("session mode {other}"))),
        };
        let n = self.created.fetch_add(1, Ordering::Relaxed) + 1;
        let session = Session {
            access_key: format!("ASIAEXPRESS{n:08}"),
            secret_key: format!("express-secret-{n}-{}", rand::random::<u64>()),
            bucket: bucket.to_string(),
            read_only,
            expires: Instant::now() + settings.session_lifetime,
        };
        let token = format!("express-token-{n}-{:016x}", rand::random::<u64>());
        let expiration = SystemTime::now() + settings.session_lifetime;
        let doc = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CreateSessionResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
             <Credentials><SessionToken>{token}</SessionToken><SecretAccessKey>{}</SecretAccessKey>\
             <AccessKeyId>{}</AccessKeyId><Expiration>{}</Expiration></Credentials></CreateSessionResult>",
            session.secret_key,
            session.access_key,
            crate::http_util::iso8601(expiration),
        );
        self.sessions.lock().unwrap_or_else(|e| e.into_inner()).insert(token, session);
        Ok(doc)
    }

    /// Checks the session of a data request to directory bucket `bucket`.
    pub(crate) fn authorize(
        &self,
        bucket: &str,
        method: &Method,
        uri: &str,
        headers: &HeaderMap,
        writes: bool,
    ) -> Result<(), Refusal> {
        let Some(token) = headers.get(SESSION_TOKEN_HEADER).and_then(|v| v.to_str().ok()) else {
            return Err(self.refuse(403, "AccessDenied", "a directory bucket needs a session (x-amz-s3session-token)"));
        };
        let session = self.sessions.lock().unwrap_or_else(|e| e.into_inner()).get(token).cloned();
        let Some(session) = session else {
            return Err(self.refuse(403, "AccessDenied", "the session token is not valid"));
        };
        if Instant::now() >= session.expires {
            return Err(self.refuse(400, "ExpiredToken", "The provided token has expired."));
        }
        if session.bucket != bucket {
            return Err(self.refuse(403, "AccessDenied", "the session belongs to another bucket"));
        }
        let auth = parse_authorization(headers).ok_or_else(|| self.refuse(403, "AccessDenied", "no signature"))?;
        if auth.service != "s3express" || auth.access_key != session.access_key {
            return Err(self.refuse(
                403,
                "AccessDenied",
                format!("signed for {} with {}, not s3express with the session's key", auth.service, auth.access_key),
            ));
        }
        verify(method, uri, headers, &auth, &session.secret_key, Some(token))
            .map_err(|m| self.refuse(403, "SignatureDoesNotMatch", m))?;
        if writes && session.read_only {
            return Err(self.refuse(403, "AccessDenied", "the session is read-only"));
        }
        self.authorized.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// The parts of an `Authorization: AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…,
/// Signature=…` header.
#[derive(Debug)]
struct Authorization {
    access_key: String,
    region: String,
    service: String,
    signed_headers: Vec<String>,
    signature: String,
}

fn parse_authorization(headers: &HeaderMap) -> Option<Authorization> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let rest = value.strip_prefix("AWS4-HMAC-SHA256")?.trim();
    let mut credential = None;
    let mut signed = None;
    let mut signature = None;
    for part in rest.split(',') {
        let (k, v) = part.trim().split_once('=')?;
        match k {
            "Credential" => credential = Some(v),
            "SignedHeaders" => signed = Some(v),
            "Signature" => signature = Some(v),
            _ => {}
        }
    }
    let mut scope = credential?.split('/');
    let access_key = scope.next()?.to_string();
    let _date = scope.next()?;
    let region = scope.next()?.to_string();
    let service = scope.next()?.to_string();
    Some(Authorization {
        access_key,
        region,
        service,
        signed_headers: signed?.split(';').map(str::to_string).collect(),
        signature: signature?.to_string(),
    })
}

/// `20261124T001500Z` as a time.
fn amz_date(s: &str) -> Option<SystemTime> {
    if s.len() != 16 || &s[8..9] != "T" || !s.ends_with('Z') {
        return None;
    }
    let n = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (n(0..4)?, n(4..6)?, n(6..8)?);
    let (hh, mm, ss) = (n(9..11)?, n(11..13)?, n(13..15)?);
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + hh * 3600 + mm * 60 + ss;
    Some(UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).ok()?))
}

/// Signs the request again as received, with `secret`, and compares the signature.
fn verify(
    method: &Method,
    uri: &str,
    headers: &HeaderMap,
    auth: &Authorization,
    secret: &str,
    session_token: Option<&str>,
) -> Result<(), String> {
    let date = headers.get("x-amz-date").and_then(|v| v.to_str().ok()).and_then(amz_date);
    let date = date.ok_or("no valid x-amz-date")?;
    let payload = headers.get("x-amz-content-sha256").and_then(|v| v.to_str().ok()).unwrap_or("UNSIGNED-PAYLOAD");
    let host = headers.get(http::header::HOST).and_then(|v| v.to_str().ok()).ok_or("no Host header")?;
    // The headers the client signed, minus those the signer adds itself.
    let added = ["x-amz-date", "x-amz-content-sha256", "x-amz-security-token", SESSION_TOKEN_HEADER, "authorization"];
    let mut signed: Vec<(&str, &str)> = Vec::new();
    for name in &auth.signed_headers {
        if added.contains(&name.as_str()) {
            continue;
        }
        let value =
            headers.get(name.as_str()).and_then(|v| v.to_str().ok()).ok_or(format!("signed header {name} missing"))?;
        signed.push((name.as_str(), value));
    }
    if !auth.signed_headers.iter().any(|h| h == "host") {
        return Err("the Host header is not signed".into());
    }
    if session_token.is_some() && !auth.signed_headers.iter().any(|h| h == SESSION_TOKEN_HEADER) {
        return Err("the session token header is not signed".into());
    }
    let mut settings = SigningSettings::default();
    settings.percent_encoding_mode = PercentEncodingMode::Single;
    settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
    settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
    settings.session_token_name_override = Some(SESSION_TOKEN_HEADER);
    // Sign every header the client listed (the defaults would drop some, e.g. user-agent).
    settings.excluded_headers = None;
    let identity: Identity =
        Credentials::new(&auth.access_key, secret, session_token.map(str::to_string), None, "express").into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(&auth.region)
        .name(&auth.service)
        .time(date)
        .settings(settings)
        .build()
        .map_err(|e| format!("signing parameters: {e}"))?
        .into();
    let full_uri = format!("http://{host}{uri}");
    let signable = SignableRequest::new(
        method.as_str(),
        full_uri.as_str(),
        signed.into_iter(),
        SignableBody::Precomputed(payload.to_string()),
    )
    .map_err(|e| format!("request cannot be signed: {e}"))?;
    let (_, signature) = sign(signable, &params).map_err(|e| format!("signing: {e}"))?.into_parts();
    if signature == auth.signature {
        Ok(())
    } else {
        Err("The request signature we calculated does not match the signature you provided.".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directory_bucket_names() {
        assert!(is_directory_bucket("ckpt--use1-az4--x-s3"));
        assert!(is_directory_bucket("a-b--usw2-az1--x-s3"));
        assert!(!is_directory_bucket("ckpt"));
        assert!(!is_directory_bucket("--use1-az4--x-s3"));
        assert!(!is_directory_bucket("ckpt--x-s3"));
    }

    #[test]
    fn amz_dates() {
        let t = amz_date("20261124T001500Z").unwrap();
        assert_eq!(t.duration_since(UNIX_EPOCH).unwrap().as_secs(), 1_795_479_300);
        assert!(amz_date("2026-11-24").is_none());
    }
}
