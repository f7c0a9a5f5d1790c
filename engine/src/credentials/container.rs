//! Container credentials: ECS task roles (`AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`, served at
//! 169.254.170.2) and EKS Pod Identity / custom endpoints
//! (`AWS_CONTAINER_CREDENTIALS_FULL_URI`), with the authorization token from
//! `AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE` (re-read on every fetch: Pod Identity rotates it)
//! or `AWS_CONTAINER_AUTHORIZATION_TOKEN`.
//!
//! A full URI over plain http must point at this machine or at the ECS / Pod Identity agent
//! addresses, as the SDKs require: credentials must never be fetched from an arbitrary host in
//! clear text.

use std::net::IpAddr;
use std::time::Duration;

use futures::future::BoxFuture;
use http::Method;
use serde::Deserialize;

use super::fetch::Fetcher;
use super::{credentials_error, time, Credentials, Env, ProvideCredentials};
use crate::error::Result;

const ECS_HOST: &str = "http://169.254.170.2";
const DEADLINE: Duration = Duration::from_secs(5);
const ATTEMPTS: u32 = 3;

/// Where the token comes from.
#[derive(Debug, Clone)]
enum Token {
    None,
    Value(String),
    File(std::path::PathBuf),
}

/// Fetches credentials from the container endpoint.
#[derive(Debug)]
pub(crate) struct ContainerProvider {
    fetcher: Fetcher,
    url: String,
    token: Token,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Answer {
    access_key_id: Option<String>,
    secret_access_key: Option<String>,
    token: Option<String>,
    expiration: Option<String>,
    code: Option<String>,
    message: Option<String>,
}

impl ContainerProvider {
    /// The provider the environment describes; `Ok(None)` when neither URI variable is set.
    pub(crate) fn from_env(env: &Env, fetcher: Fetcher) -> Result<Option<Self>> {
        let url = if let Some(rel) = env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") {
            format!("{ECS_HOST}{}{rel}", if rel.starts_with('/') { "" } else { "/" })
        } else if let Some(full) = env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI") {
            check_full_uri(&full)?;
            full
        } else {
            return Ok(None);
        };
        let token =
            match (env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"), env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN")) {
                (Some(file), _) => Token::File(file.into()),
                (None, Some(value)) => Token::Value(value),
                (None, None) => Token::None,
            };
        Ok(Some(ContainerProvider { fetcher, url, token }))
    }

    async fn fetch(&self) -> Result<Credentials> {
        let source = "container credentials";
        let token = match &self.token {
            Token::None => None,
            Token::Value(v) => Some(v.clone()),
            Token::File(path) => Some(
                tokio::fs::read_to_string(path)
                    .await
                    .map_err(|e| {
                        credentials_error(
                            source,
                            format!("cannot read the authorization token file {}", path.display()),
                        )
                        .with_source(e)
                    })?
                    .trim()
                    .to_string(),
            ),
        };
        if token.as_deref().is_some_and(|t| t.contains(['\r', '\n'])) {
            return Err(credentials_error(source, "the authorization token contains a line break"));
        }
        let headers: Vec<(&str, &str)> = token.iter().map(|t| ("authorization", t.as_str())).collect();
        let mut attempt = 0;
        let answer = loop {
            attempt += 1;
            let result =
                self.fetcher.send(source, Method::GET, &self.url, &headers, Default::default(), DEADLINE).await;
            let retry = match &result {
                Err(e) => e.is_retryable(),
                Ok(a) => a.status.is_server_error() || a.status.as_u16() == 429,
            };
            if retry && attempt < ATTEMPTS {
                tokio::time::sleep(Duration::from_millis(100 * u64::from(attempt))).await;
                continue;
            }
            break result?;
        };
        let parsed: Option<Answer> = serde_json::from_slice(&answer.body).ok();
        if !answer.status.is_success() {
            let detail = parsed.and_then(|a| a.message.or(a.code)).map(|m| format!(": {m}")).unwrap_or_default();
            return Err(credentials_error(
                source,
                format!("{} answered HTTP {}{detail}", self.url, answer.status.as_u16()),
            )
            .with_http(answer.status.as_u16(), None, None));
        }
        let a = parsed
            .ok_or_else(|| credentials_error(source, format!("{} answered something that is not JSON", self.url)))?;
        let (Some(id), Some(secret)) = (a.access_key_id, a.secret_access_key) else {
            return Err(credentials_error(source, "the answer lacks AccessKeyId or SecretAccessKey"));
        };
        let mut c = Credentials::new(id, secret);
        c.session_token = a.token;
        if let Some(e) = a.expiration {
            c.expiry = Some(
                time::parse_rfc3339(&e)
                    .ok_or_else(|| credentials_error(source, format!("Expiration {e:?} is not an RFC 3339 time")))?,
            );
        }
        Ok(c)
    }
}

impl ProvideCredentials for ContainerProvider {
    fn provide_credentials(&self) -> BoxFuture<'_, Result<Credentials>> {
        Box::pin(self.fetch())
    }
}

/// Refuses a full URI that would send the token in clear text to another machine.
fn check_full_uri(url: &str) -> Result<()> {
    let bad = |why: &str| {
        credentials_error("container credentials", format!("AWS_CONTAINER_CREDENTIALS_FULL_URI {url:?} {why}"))
    };
    let uri: http::Uri = url.parse().map_err(|_| bad("is not a URL"))?;
    match uri.scheme_str() {
        Some("https") => return Ok(()),
        Some("http") => {}
        _ => return Err(bad("must be http or https")),
    }
    let host = uri.host().ok_or_else(|| bad("has no host"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let allowed = host == "localhost"
        || host.parse::<IpAddr>().is_ok_and(|ip| {
            ip.is_loopback()
                || ip == IpAddr::from([169, 254, 170, 2])
                || ip == IpAddr::from([169, 254, 170, 23])
                || ip == "fd00:ec2::23".parse::<IpAddr>().expect("valid address")
        });
    if allowed {
        Ok(())
    } else {
        Err(bad("uses plain http to a host that is not loopback, 169.254.170.2, 169.254.170.23 or fd00:ec2::23"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_uri_hosts() {
        for ok in [
            "http://127.0.0.1:8080/creds",
            "http://localhost/x",
            "http://169.254.170.23/v1/credentials",
            "http://[fd00:ec2::23]/v1/credentials",
            "http://169.254.170.2/x",
            "http://[::1]:9/x",
            "https://creds.example.com/x",
        ] {
            assert!(check_full_uri(ok).is_ok(), "{ok}");
        }
        for bad in ["http://creds.example.com/x", "http://10.0.0.1/x", "ftp://127.0.0.1/x"] {
            let e = check_full_uri(bad).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::Credentials, "{bad}");
        }
    }
}
