//! The EC2 instance metadata service, version 2 only: a session token from
//! `PUT /latest/api/token` (with a TTL), then every read carries it; a 401 means the token went
//! stale and is fetched again once. Short deadlines and two attempts, so a machine without
//! IMDS moves on within about two seconds.
//!
//! The endpoint is `AWS_EC2_METADATA_SERVICE_ENDPOINT`, else `http://[fd00:ec2::254]` when
//! `AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE=IPv6`, else `http://169.254.169.254`.
//! `AWS_EC2_METADATA_DISABLED=true` turns it off. IMDS is never reached through a proxy.

use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use http::{Method, StatusCode};
use serde::Deserialize;
use tokio::sync::Mutex;

use super::fetch::Fetcher;
use super::{credentials_error, time, Credentials, Env, ProvideCredentials};
use crate::error::{Error, Result};

const SOURCE: &str = "IMDS";
/// Each exchange, connect to answer.
const DEADLINE: Duration = Duration::from_secs(1);
/// Attempts per read when IMDS does not answer.
const ATTEMPTS: u32 = 2;
/// Session token lifetime asked for (IMDS's maximum, 6 h).
const TOKEN_TTL: Duration = Duration::from_secs(21_600);

/// A client of the instance's metadata service, shared by every IMDS consumer of a client
/// (credentials, region, instance type, network cards) so they share one session token.
#[derive(Debug)]
pub(crate) struct ImdsClient {
    fetcher: Fetcher,
    endpoint: String,
    token: Mutex<Option<(String, Instant)>>,
}

impl ImdsClient {
    /// The client the environment describes, or `None` when IMDS is disabled.
    pub(crate) fn from_env(env: &Env, fetcher: Fetcher) -> Option<Self> {
        if env.is_true("AWS_EC2_METADATA_DISABLED") {
            return None;
        }
        let endpoint = env.get("AWS_EC2_METADATA_SERVICE_ENDPOINT").unwrap_or_else(|| {
            match env.get("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE").map(|m| m.to_ascii_lowercase()).as_deref() {
                Some("ipv6") => "http://[fd00:ec2::254]".to_string(),
                _ => "http://169.254.169.254".to_string(),
            }
        });
        Some(ImdsClient { fetcher, endpoint: endpoint.trim_end_matches('/').to_string(), token: Mutex::new(None) })
    }

    pub(crate) fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Reads a metadata path such as `/latest/meta-data/placement/region`; `Ok(None)` on 404.
    pub(crate) async fn get(&self, path: &str) -> Result<Option<String>> {
        for stale_retry in [false, true] {
            let token = self.token().await?;
            let url = format!("{}{path}", self.endpoint);
            let answer = self.with_attempts(Method::GET, &url, &[("x-aws-ec2-metadata-token", &token)]).await?;
            match answer.status {
                s if s.is_success() => return Ok(Some(answer.text())),
                StatusCode::NOT_FOUND => return Ok(None),
                StatusCode::UNAUTHORIZED if !stale_retry => {
                    *self.token.lock().await = None;
                }
                s => return Err(credentials_error(SOURCE, format!("{url} answered HTTP {}", s.as_u16()))),
            }
        }
        Err(credentials_error(SOURCE, "a fresh session token was refused (HTTP 401)"))
    }

    async fn token(&self) -> Result<String> {
        let mut slot = self.token.lock().await;
        if let Some((token, fetched)) = &*slot {
            if fetched.elapsed() + Duration::from_secs(60) < TOKEN_TTL {
                return Ok(token.clone());
            }
        }
        let url = format!("{}/latest/api/token", self.endpoint);
        let ttl = TOKEN_TTL.as_secs().to_string();
        let answer = self.with_attempts(Method::PUT, &url, &[("x-aws-ec2-metadata-token-ttl-seconds", &ttl)]).await?;
        if !answer.status.is_success() {
            let why = match answer.status.as_u16() {
                403 => "IMDS refused a session token (HTTP 403: IMDS disabled, or a proxy header was sent)".to_string(),
                s => format!("the session token request answered HTTP {s}"),
            };
            return Err(credentials_error(SOURCE, why));
        }
        let token = answer.text().trim().to_string();
        *slot = Some((token.clone(), Instant::now()));
        Ok(token)
    }

    async fn with_attempts(&self, method: Method, url: &str, headers: &[(&str, &str)]) -> Result<super::fetch::Answer> {
        let mut last: Option<Error> = None;
        for _ in 0..ATTEMPTS {
            match self.fetcher.send(SOURCE, method.clone(), url, headers, Default::default(), DEADLINE).await {
                Ok(a) if a.status.is_server_error() => {
                    last = Some(credentials_error(SOURCE, format!("{url} answered HTTP {}", a.status.as_u16())))
                }
                Ok(a) => return Ok(a),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| credentials_error(SOURCE, "no attempt made")))
    }

    /// The instance's region (`placement/region`), for a client with no region set.
    pub(crate) async fn region(&self) -> Result<Option<String>> {
        Ok(self.get("/latest/meta-data/placement/region").await?.map(|r| r.trim().to_string()))
    }
}

/// Credentials of the instance profile's role.
#[derive(Debug)]
pub(crate) struct ImdsProvider {
    pub(crate) client: std::sync::Arc<ImdsClient>,
    /// Set when the chain fell through to IMDS because nothing else was configured: then an
    /// unreachable IMDS means "no credentials anywhere", and the error says so.
    pub(crate) last_resort: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RoleCredentials {
    code: Option<String>,
    message: Option<String>,
    access_key_id: Option<String>,
    secret_access_key: Option<String>,
    token: Option<String>,
    expiration: Option<String>,
}

impl ImdsProvider {
    async fn fetch(&self) -> Result<Credentials> {
        self.fetch_inner().await.map_err(|e| {
            if self.last_resort && e.is_retryable() {
                credentials_error(
                    "no credentials",
                    format!(
                        "none in the environment, the profile files or a container endpoint, and the instance \
                         metadata service at {} did not answer ({}); set AWS_ACCESS_KEY_ID and \
                         AWS_SECRET_ACCESS_KEY, a profile, or run on EC2 with an instance profile",
                        self.client.endpoint(),
                        e.message()
                    ),
                )
            } else {
                e
            }
        })
    }

    async fn fetch_inner(&self) -> Result<Credentials> {
        const BASE: &str = "/latest/meta-data/iam/security-credentials/";
        let roles = self.client.get(BASE).await?;
        let role = roles.as_deref().and_then(|r| r.lines().map(str::trim).find(|l| !l.is_empty()));
        let Some(role) = role else {
            return Err(credentials_error(SOURCE, "no role attached to this instance (no instance profile)"));
        };
        let body = self
            .client
            .get(&format!("{BASE}{role}"))
            .await?
            .ok_or_else(|| credentials_error(SOURCE, format!("role {role:?} has no credentials (HTTP 404)")))?;
        let c: RoleCredentials = serde_json::from_str(&body)
            .map_err(|_| credentials_error(SOURCE, format!("the credentials of role {role:?} are not JSON")))?;
        if let Some(code) = c.code.as_deref().filter(|c| *c != "Success") {
            let message = c.message.map(|m| format!(": {m}")).unwrap_or_default();
            return Err(credentials_error(SOURCE, format!("role {role:?}: {code}{message}")));
        }
        let (Some(id), Some(secret)) = (c.access_key_id, c.secret_access_key) else {
            return Err(credentials_error(SOURCE, format!("the credentials of role {role:?} lack AccessKeyId")));
        };
        let mut creds = Credentials::new(id, secret);
        creds.session_token = c.token;
        creds.expiry = c.expiration.as_deref().and_then(time::parse_rfc3339);
        Ok(creds)
    }
}

impl ProvideCredentials for ImdsProvider {
    fn provide_credentials(&self) -> BoxFuture<'_, Result<Credentials>> {
        Box::pin(self.fetch())
    }
}
