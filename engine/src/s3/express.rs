//! S3 Express One Zone: directory buckets, whose requests are signed with a short-lived
//! session instead of the client's own credentials.
//!
//! - **Which buckets.** A directory bucket is named `<base>--<az-id>--x-s3`. On AWS its
//!   requests go to the zonal endpoint `<bucket>.s3express-<az-id>.<region>.amazonaws.com`;
//!   with a custom endpoint the name alone selects sessions (as the AWS SDKs do), so a local
//!   server can play the zone.
//! - **Sessions.** `CreateSession` (`GET /<bucket>?session`, signed with the client's
//!   credentials for the `s3express` service) returns a key pair and a token that last five
//!   minutes. Data requests are signed for `s3express` with that key pair, the token in
//!   `x-amz-s3session-token`.
//! - **The cache.** One [`CredentialsCache`] per (bucket, base access key, mode), whose
//!   provider calls CreateSession. That cache already has what sessions need: one fetch at a
//!   time (a thousand parts wait for one CreateSession), a refresh in the background once a
//!   session enters the second half of its life (so no request goes out with an expired
//!   one), and a forced refresh by generation when the server refuses a session. The map is
//!   bounded: the least recently used bucket's session goes first.
//! - **Refusals.** A request refused for its session (403 `AccessDenied`, `InvalidToken`,
//!   `ExpiredToken`, 400 `ExpiredToken`) invalidates that session and is sent again once
//!   with a new one (see `S3::send`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, Weak};

use http::{HeaderName, Method};
use serde::Deserialize;

use super::{xml, S3Inner, S3Request, S3};
use crate::config::ExpressSessionMode;
use crate::credentials::cache::CredentialsCache;
use crate::credentials::{Credentials, ProvideCredentials};
use crate::error::{Error, ErrorKind, Operation, Result};

/// Sessions kept at most (buckets × base keys × modes); the least recently used goes first.
const MAX_SESSIONS: usize = 100;

/// The checksum uploads to directory buckets carry, whatever `checksum_algorithm` says: the
/// directory-bucket documentation ("Data protection and encryption" for S3 Express One Zone)
/// lists CRC32, CRC32C, SHA-1 and SHA-256, not CRC64NVME, gantry's default elsewhere. CRC32C
/// is the fastest of those (hardware instructions on x86 and Arm) and one gantry already
/// combines across parts for full-object checksums.
pub(crate) const UPLOAD_CHECKSUM: crate::checksum::ChecksumAlgorithm = crate::checksum::ChecksumAlgorithm::Crc32c;

/// The service directory-bucket requests are signed for.
pub(crate) const SERVICE: &str = "s3express";
/// Where a session token goes instead of `x-amz-security-token`.
pub(crate) const TOKEN_HEADER: &str = "x-amz-s3session-token";

/// The availability zone id of a directory bucket (`use1-az4` of `ckpt--use1-az4--x-s3`), or
/// `None` for any other bucket name.
pub(crate) fn zone_of(bucket: &str) -> Option<&str> {
    let (base, az) = bucket.strip_suffix("--x-s3")?.rsplit_once("--")?;
    (!base.is_empty() && !az.is_empty() && az.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')).then_some(az)
}

/// `<CreateSessionResult><Credentials>`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct CreateSessionResult {
    pub(crate) credentials: SessionCredentials,
}

/// The session's key pair and token (never logged: no `Debug` of the secret parts).
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct SessionCredentials {
    pub(crate) access_key_id: String,
    pub(crate) secret_access_key: String,
    pub(crate) session_token: String,
    pub(crate) expiration: String,
}

impl std::fmt::Debug for SessionCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionCredentials").field("access_key_id", &self.access_key_id).finish_non_exhaustive()
    }
}

/// What the session layer did, for metrics.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ExpressStats {
    /// Sessions created by CreateSession (the first ones and renewals).
    pub(crate) created: u64,
    /// Of those, renewals of a session that existed (ahead of expiry or after a refusal).
    pub(crate) refreshed: u64,
    /// Sessions dropped because the server refused them.
    pub(crate) invalidated: u64,
    /// Requests signed with a session that was already held.
    pub(crate) reused: u64,
}

/// The directory-bucket sessions of one client.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    entries: Mutex<HashMap<Key, Entry>>,
    /// Orders entries by last use (a counter, not a clock).
    uses: AtomicU64,
    created: Arc<AtomicU64>,
    refreshed: Arc<AtomicU64>,
    invalidated: AtomicU64,
    /// Requests signed with a session.
    signed: AtomicU64,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    bucket: String,
    /// The base credentials' access key id (not secret): other keys get other sessions.
    base_key: String,
    read_only: bool,
}

#[derive(Debug)]
struct Entry {
    cache: Arc<CredentialsCache>,
    last_use: u64,
}

impl Sessions {
    pub(crate) fn stats(&self) -> ExpressStats {
        ExpressStats {
            created: self.created.load(Relaxed),
            refreshed: self.refreshed.load(Relaxed),
            invalidated: self.invalidated.load(Relaxed),
            // Every session-signed request counted; those that made the session are not reuses.
            reused: self.signed.load(Relaxed).saturating_sub(self.created.load(Relaxed)),
        }
    }

    /// The session cache for `bucket` under base key `base_key`, made on first use.
    fn cache_for(&self, s3: &S3, bucket: &str, base_key: &str, mode: ExpressSessionMode) -> Arc<CredentialsCache> {
        let key = Key {
            bucket: bucket.to_string(),
            base_key: base_key.to_string(),
            read_only: mode == ExpressSessionMode::ReadOnly,
        };
        let use_no = self.uses.fetch_add(1, Relaxed);
        let mut entries = self.entries.lock().expect("express sessions lock");
        if let Some(e) = entries.get_mut(&key) {
            e.last_use = use_no;
            return e.cache.clone();
        }
        if entries.len() >= MAX_SESSIONS {
            if let Some(oldest) = entries.iter().min_by_key(|(_, e)| e.last_use).map(|(k, _)| k.clone()) {
                entries.remove(&oldest);
            }
        }
        let provider = SessionProvider {
            s3: Arc::downgrade(&s3.inner),
            bucket: bucket.to_string(),
            mode,
            created: self.created.clone(),
            refreshed: self.refreshed.clone(),
            made: AtomicU64::new(0),
        };
        let cache = CredentialsCache::new(Arc::new(provider), "s3express");
        entries.insert(key, Entry { cache: cache.clone(), last_use: use_no });
        cache
    }

    /// A request is about to be signed with a session.
    pub(crate) fn count_signed(&self) {
        self.signed.fetch_add(1, Relaxed);
    }

    pub(crate) fn count_invalidation(&self) {
        self.invalidated.fetch_add(1, Relaxed);
    }
}

/// Fetches sessions for one bucket with CreateSession.
#[derive(Debug)]
struct SessionProvider {
    /// Weak: the client's S3 layer owns the sessions, not the other way round.
    s3: Weak<S3Inner>,
    bucket: String,
    mode: ExpressSessionMode,
    created: Arc<AtomicU64>,
    refreshed: Arc<AtomicU64>,
    /// Sessions this provider made.
    made: AtomicU64,
}

impl ProvideCredentials for SessionProvider {
    fn provide_credentials(&self) -> futures::future::BoxFuture<'_, Result<Credentials>> {
        Box::pin(async move {
            let inner = self
                .s3
                .upgrade()
                .ok_or_else(|| Error::new(ErrorKind::Cancelled, Operation::CreateSession, "the client was dropped"))?;
            let s3 = S3 { inner };
            let creds = s3.create_session(&self.bucket, self.mode).await?;
            self.created.fetch_add(1, Relaxed);
            if self.made.fetch_add(1, Relaxed) > 0 {
                self.refreshed.fetch_add(1, Relaxed);
            }
            Ok(creds)
        })
    }
}

impl S3 {
    /// Whether requests to `bucket` are signed with S3 Express sessions.
    pub(crate) fn uses_sessions(&self, bucket: &str) -> bool {
        self.express_session_auth && zone_of(bucket).is_some()
    }

    /// The session cache a request of `op` to `bucket` signs through, when it is one
    /// (directory bucket, sessions on, signed requests, and not CreateSession itself).
    pub(crate) async fn session_cache(&self, req: &S3Request<'_>) -> Result<Option<Arc<CredentialsCache>>> {
        if req.op == Operation::CreateSession || !self.uses_sessions(req.bucket) {
            return Ok(None);
        }
        let Some(base) = &self.credentials else { return Ok(None) };
        let base = base.get().await.map_err(|e| e.with_operation(req.op))?;
        let base_key = base.access_key_id().to_string();
        Ok(Some(self.sessions.cache_for(self, req.bucket, &base_key, self.express_session_mode)))
    }

    /// CreateSession for `bucket`: one session's credentials.
    pub(crate) async fn create_session(&self, bucket: &str, mode: ExpressSessionMode) -> Result<Credentials> {
        let op = Operation::CreateSession;
        let mut req = S3Request::new(op, Method::GET, bucket, None).query("session", "");
        if mode == ExpressSessionMode::ReadOnly {
            req = req.header(HeaderName::from_static("x-amz-create-session-mode"), "ReadOnly")?;
        }
        let (_, body) = self.execute(&req).await?;
        let result: CreateSessionResult = xml::parse(&body, op)?;
        let c = result.credentials;
        let expiry = crate::credentials::time::parse_rfc3339(&c.expiration).ok_or_else(|| {
            Error::new(
                ErrorKind::Protocol,
                op,
                format!("CreateSession answered an unreadable Expiration {:?}", c.expiration),
            )
        })?;
        tracing::debug!(%bucket, access_key_id = %c.access_key_id, "created an S3 Express session");
        let mut creds = Credentials::new(c.access_key_id, c.secret_access_key);
        creds.session_token = Some(c.session_token);
        creds.expiry = Some(expiry);
        Ok(creds)
    }
}

/// Whether a refusal of a request signed with a session says the session is no good (expired,
/// revoked, unknown): then a new session is made and the request sent again, once.
pub(crate) fn refuses_session(err: &Error) -> bool {
    matches!(
        (err.http_status(), err.s3_code()),
        (Some(400 | 403), Some("ExpiredToken" | "InvalidToken" | "TokenRefreshRequired"))
            | (Some(403), Some("AccessDenied"))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directory_bucket_names() {
        assert_eq!(zone_of("ckpt--use1-az4--x-s3"), Some("use1-az4"));
        assert_eq!(zone_of("my-data--usw2-az1--x-s3"), Some("usw2-az1"));
        assert_eq!(zone_of("ckpt"), None);
        assert_eq!(zone_of("ckpt--x-s3"), None);
        assert_eq!(zone_of("--use1-az4--x-s3"), None);
        assert_eq!(zone_of("a--b.c--x-s3"), None);
    }

    #[test]
    fn create_session_answer() {
        let doc = br#"<?xml version="1.0" encoding="UTF-8"?>
<CreateSessionResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Credentials><SessionToken>TOKEN</SessionToken><SecretAccessKey>SECRET</SecretAccessKey><AccessKeyId>AKID</AccessKeyId><Expiration>2026-11-24T00:20:00Z</Expiration></Credentials></CreateSessionResult>"#;
        let r: CreateSessionResult = xml::parse(doc, Operation::CreateSession).unwrap();
        assert_eq!(r.credentials.access_key_id, "AKID");
        assert_eq!(r.credentials.session_token, "TOKEN");
        assert!(!format!("{:?}", r.credentials).contains("SECRET"));
        assert!(!format!("{:?}", r.credentials).contains("TOKEN"));
    }
}
