//! IAM Identity Center (SSO) profiles: `sso_session` (with an `[sso-session NAME]` section)
//! or the legacy `sso_start_url` form. `aws sso login` leaves an access token in
//! `~/.aws/sso/cache/<sha1 of the session name, or of the start URL>.json`; we read it and
//! trade it at the portal's `GetRoleCredentials` for role credentials. We do not run the
//! browser login: an expired token ends in an error that says to run `aws sso login`.
//!
//! The portal is `https://portal.sso.<sso_region>.amazonaws.com`, or `AWS_ENDPOINT_URL_SSO`
//! / `AWS_ENDPOINT_URL`.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;
use http::Method;
use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use serde::Deserialize;
use sha1::{Digest, Sha1};

use super::fetch::Fetcher;
use super::{credentials_error, time, Credentials, Env, ProvideCredentials};
use crate::error::Result;

const DEADLINE: Duration = Duration::from_secs(10);

/// Role credentials through the SSO portal.
#[derive(Debug)]
pub(crate) struct SsoProvider {
    pub(crate) fetcher: Fetcher,
    pub(crate) profile: String,
    /// The `sso_session` name, or the start URL for legacy profiles: what names the cache file.
    pub(crate) cache_key: String,
    pub(crate) cache_dir: PathBuf,
    pub(crate) portal: String,
    pub(crate) account_id: String,
    pub(crate) role_name: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CachedToken {
    access_token: String,
    expires_at: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PortalAnswer {
    role_credentials: RoleCredentials,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RoleCredentials {
    access_key_id: String,
    secret_access_key: String,
    session_token: Option<String>,
    expiration: u64,
}

impl SsoProvider {
    pub(crate) fn portal_url(env: &Env, sso_region: &str) -> String {
        env.get("AWS_ENDPOINT_URL_SSO")
            .or_else(|| env.get("AWS_ENDPOINT_URL"))
            .unwrap_or_else(|| format!("https://portal.sso.{sso_region}.amazonaws.com"))
            .trim_end_matches('/')
            .to_string()
    }

    fn login_hint(&self) -> String {
        format!("run `aws sso login --profile {}`", self.profile)
    }

    async fn fetch(&self) -> Result<Credentials> {
        let source = "SSO";
        let file = self.cache_dir.join(format!("{}.json", hex::encode(Sha1::digest(self.cache_key.as_bytes()))));
        let text = tokio::fs::read_to_string(&file).await.map_err(|e| {
            credentials_error(source, format!("no cached SSO token at {} ({e}); {}", file.display(), self.login_hint()))
        })?;
        let token: CachedToken = serde_json::from_str(&text).map_err(|_| {
            credentials_error(
                source,
                format!("the cached token {} is not valid; {}", file.display(), self.login_hint()),
            )
        })?;
        let expires = time::parse_rfc3339(&token.expires_at);
        if expires.is_none_or(|t| t <= SystemTime::now()) {
            return Err(credentials_error(
                source,
                format!("the SSO token expired at {}; {}", token.expires_at, self.login_hint()),
            ));
        }
        let enc = |s: &str| utf8_percent_encode(s, NON_ALPHANUMERIC).to_string();
        let url = format!(
            "{}/federation/credentials?account_id={}&role_name={}",
            self.portal,
            enc(&self.account_id),
            enc(&self.role_name)
        );
        let answer = self
            .fetcher
            .send(
                source,
                Method::GET,
                &url,
                &[("x-amz-sso_bearer_token", &token.access_token)],
                Default::default(),
                DEADLINE,
            )
            .await?;
        if answer.status.as_u16() == 401 || answer.status.as_u16() == 403 {
            return Err(credentials_error(
                source,
                format!("the portal refused the cached token (HTTP {}); {}", answer.status.as_u16(), self.login_hint()),
            ));
        }
        if !answer.status.is_success() {
            let excerpt: String = answer.text().chars().take(200).collect();
            return Err(credentials_error(
                source,
                format!("GetRoleCredentials answered HTTP {}: {excerpt}", answer.status.as_u16()),
            ));
        }
        let a: PortalAnswer = serde_json::from_slice(&answer.body).map_err(|_| {
            credentials_error(source, "GetRoleCredentials answered something that is not the expected JSON")
        })?;
        let r = a.role_credentials;
        let mut c =
            Credentials::new(r.access_key_id, r.secret_access_key).with_expiry(time::from_epoch_millis(r.expiration));
        c.session_token = r.session_token;
        Ok(c)
    }
}

impl ProvideCredentials for SsoProvider {
    fn provide_credentials(&self) -> BoxFuture<'_, Result<Credentials>> {
        Box::pin(self.fetch())
    }
}
