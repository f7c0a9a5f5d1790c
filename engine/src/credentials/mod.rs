//! Where the signing keys come from, and how they stay fresh.
//!
//! The default chain is the AWS SDKs' order: explicit keys, the `AWS_*` environment variables,
//! web identity (IRSA), the shared config and credentials files (keys, `credential_process`,
//! roles assumed through STS, SSO), the container endpoint (ECS, EKS Pod Identity) and the EC2
//! instance metadata service. Which source applies is decided when the client is built (from
//! the environment and the profile files, which are cheap to read); the credentials themselves
//! are fetched on first use and then kept fresh by [`cache::CredentialsCache`], which every
//! request signs through.
//!
//! Every provider that talks to a service does it through the engine's own HTTP stack
//! ([`fetch::Fetcher`]), with its own short timeouts: no second HTTP client.
//!
//! Secrets never reach a log, an error or a `Debug` output: [`Credentials`]' `Debug` prints
//! only the key id, and provider errors name the source and the reason, never a value.

pub(crate) mod cache;
mod chain;
mod container;
mod env;
pub(crate) mod fetch;
mod imds;
mod process;
mod profile;
mod sso;
mod sts;
pub(crate) mod time;
mod web_identity;

use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use futures::future::BoxFuture;

pub(crate) use chain::{default_provider, ChainContext};
pub(crate) use env::Env;
pub(crate) use imds::ImdsClient;

use crate::error::{Error, ErrorKind, Operation, Result};

/// An access key pair, optionally with a session token and an expiry time.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Credentials {
    /// `AWS_ACCESS_KEY_ID`.
    pub access_key_id: String,
    /// `AWS_SECRET_ACCESS_KEY` (never logged).
    pub secret_access_key: String,
    /// `AWS_SESSION_TOKEN` for temporary credentials (never logged).
    pub session_token: Option<String>,
    /// When temporary credentials stop working; `None` for long-term keys. The cache refreshes
    /// ahead of this time.
    pub expiry: Option<SystemTime>,
}

impl Credentials {
    /// Static credentials without a session token.
    pub fn new(access_key_id: impl Into<String>, secret_access_key: impl Into<String>) -> Self {
        Credentials {
            access_key_id: access_key_id.into(),
            secret_access_key: secret_access_key.into(),
            session_token: None,
            expiry: None,
        }
    }

    /// Adds a session token (temporary credentials).
    #[must_use]
    pub fn with_session_token(mut self, token: impl Into<String>) -> Self {
        self.session_token = Some(token.into());
        self
    }

    /// Adds an expiry time (temporary credentials).
    #[must_use]
    pub fn with_expiry(mut self, expiry: SystemTime) -> Self {
        self.expiry = Some(expiry);
        self
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"** redacted **")
            .field("session_token", &self.session_token.as_ref().map(|_| "** redacted **"))
            .field("expiry", &self.expiry)
            .finish()
    }
}

/// A source of credentials the engine asks whenever it needs fresh ones.
///
/// Why a trait: an embedding program often has its own credential machinery (a vault, the
/// AWS SDK of its language, a sidecar); it plugs in here and gets the engine's caching,
/// background refresh and retry-on-expiry for free.
///
/// The engine calls [`ProvideCredentials::provide_credentials`] from one of its worker
/// threads, at most once at a time per client (single-flight), ahead of the previous
/// credentials' [`Credentials::expiry`]. Return credentials with an expiry when they are
/// temporary, so the cache knows when to refresh; an error keeps the last good credentials in
/// use for a while (with a warning) if there are any.
pub trait ProvideCredentials: Send + Sync + fmt::Debug {
    /// Fetches a fresh set of credentials.
    fn provide_credentials(&self) -> BoxFuture<'_, Result<Credentials>>;
}

/// How the client finds its credentials.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum CredentialsSource {
    /// Exactly these keys.
    Static(Credentials),
    /// The AWS SDKs' default chain: environment, web identity, the named profile (or
    /// `AWS_PROFILE`, else `default`) of the shared files, the container endpoint, then EC2
    /// instance metadata.
    Default {
        /// Profile name overriding `AWS_PROFILE`.
        profile: Option<String>,
    },
    /// A provider of the caller's own.
    Provider(Arc<dyn ProvideCredentials>),
    /// Send unsigned requests (public buckets).
    Anonymous,
}

impl PartialEq for CredentialsSource {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (CredentialsSource::Static(a), CredentialsSource::Static(b)) => a == b,
            (CredentialsSource::Default { profile: a }, CredentialsSource::Default { profile: b }) => a == b,
            (CredentialsSource::Provider(a), CredentialsSource::Provider(b)) => Arc::ptr_eq(a, b),
            (CredentialsSource::Anonymous, CredentialsSource::Anonymous) => true,
            _ => false,
        }
    }
}

/// Parses an RFC 3339 time as AWS writes them (shared with the S3 layer's listings).
pub(crate) fn parse_time(text: &str) -> Option<SystemTime> {
    time::parse_rfc3339(text)
}

/// A [`ErrorKind::Credentials`] error naming its source: "IMDS: no role attached".
pub(crate) fn credentials_error(source: &str, message: impl fmt::Display) -> Error {
    Error::new(ErrorKind::Credentials, Operation::FetchCredentials, format!("{source}: {message}"))
}

/// The cache a client signs through for `source`; `None` for anonymous requests. The default
/// chain is resolved here (environment and files only; nothing is fetched yet).
pub(crate) fn cache_for(
    source: &CredentialsSource,
    region: &str,
    connector: &crate::http::Connector,
) -> Result<Option<Arc<cache::CredentialsCache>>> {
    Ok(Some(match source {
        CredentialsSource::Anonymous => return Ok(None),
        CredentialsSource::Static(c) => {
            let cache = cache::CredentialsCache::new(Arc::new(StaticProvider(c.clone())), "config");
            cache.prime(c.clone());
            cache
        }
        CredentialsSource::Provider(p) => cache::CredentialsCache::new(p.clone(), "custom provider"),
        CredentialsSource::Default { profile } => {
            let ctx = ChainContext::new(Env::process(), fetch::Fetcher::new(connector.clone()), region.to_string());
            let (provider, name) = default_provider(&ctx, profile.as_deref())?;
            cache::CredentialsCache::new(provider, name)
        }
    }))
}

/// The settings (`region`, `endpoint_url`, `ca_bundle`, ...) of the profile the default chain
/// would use (`profile`, else `AWS_PROFILE`, else `default`), read once from the process
/// environment's files; empty when there is no such profile or the files cannot be read.
pub(crate) fn profile_settings(profile: Option<&str>) -> std::collections::HashMap<String, String> {
    let env = Env::process();
    let name = profile.map(str::to_string).or_else(|| env.get("AWS_PROFILE")).unwrap_or_else(|| "default".into());
    profile::Profiles::load(&env)
        .ok()
        .and_then(|p| p.get(&name).cloned())
        .map(|s| s.into_iter().filter(|(_, v)| !v.is_empty()).collect())
        .unwrap_or_default()
}

/// The instance's region from IMDS (`placement/region`), for a client given no region at
/// all. Blocks the calling thread for at most about two seconds (IMDS's short deadlines) and
/// works from any context: the lookup runs on a thread and runtime of its own.
pub(crate) fn imds_region() -> Option<String> {
    let env = Env::process();
    let t = crate::config::Timeouts::default();
    let connector = crate::http::Connector::new(t.connect, t.tls_handshake, None, None);
    let client = ImdsClient::from_env(&env, fetch::Fetcher::new(connector))?;
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
        let region = rt.block_on(client.region());
        match region {
            Ok(r) => r.filter(|r| !r.is_empty()),
            Err(e) => {
                tracing::debug!(error = %e, "no region from IMDS");
                None
            }
        }
    })
    .join()
    .ok()
    .flatten()
}

/// Credentials that are fixed for the client's life (explicit keys, environment, profile keys).
#[derive(Debug)]
pub(crate) struct StaticProvider(pub(crate) Credentials);

impl ProvideCredentials for StaticProvider {
    fn provide_credentials(&self) -> BoxFuture<'_, Result<Credentials>> {
        Box::pin(async move { Ok(self.0.clone()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_prints_secrets() {
        let c = Credentials::new("AKID", "SECRETVALUE").with_session_token("TOKENVALUE");
        let s = format!("{c:?}");
        assert!(s.contains("AKID"));
        assert!(!s.contains("SECRETVALUE") && !s.contains("TOKENVALUE"));
    }
}
