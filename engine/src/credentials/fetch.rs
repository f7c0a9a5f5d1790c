//! One small HTTP exchange with a credential service (IMDS, the container endpoint, STS, the
//! SSO portal) over the engine's own connector: the same sockets, TLS trust and proxy rules
//! as S3 traffic, with a deadline of its own, and one fresh connection per exchange
//! (credential fetches are rare; a pooled connection to IMDS would only go stale).

use std::time::Duration;

use bytes::Bytes;
use http::{Method, StatusCode};
use http_body_util::BodyExt;

use super::credentials_error;
use crate::error::{Error, Operation, Result};
use crate::http::{lanes::LocalBind, Authority, Connector, RequestBody};

/// Largest answer read from a credential service (they are a few hundred bytes).
const MAX_ANSWER: usize = 1 << 20;

/// Sends credential-service requests through the engine's connector.
#[derive(Debug, Clone)]
pub(crate) struct Fetcher {
    connector: Connector,
}

/// A whole answer.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) body: Bytes,
}

impl Answer {
    /// The body as text (lossy), for parsing and for short error excerpts.
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

impl Fetcher {
    pub(crate) fn new(connector: Connector) -> Self {
        Fetcher { connector }
    }

    /// Sends `method url` with `headers` and `body`, and reads the whole answer, all within
    /// `deadline`. `source` names the service in errors ("IMDS", "STS"). Transport failures
    /// and the deadline are retryable [`crate::ErrorKind::Credentials`] errors.
    pub(crate) async fn send(
        &self,
        source: &str,
        method: Method,
        url: &str,
        headers: &[(&str, &str)],
        body: Bytes,
        deadline: Duration,
    ) -> Result<Answer> {
        let exchange = self.exchange(source, method, url, headers, body);
        match tokio::time::timeout(deadline, exchange).await {
            Ok(result) => result,
            Err(_) => {
                Err(credentials_error(source, format!("no answer from {url} within {deadline:?}")).with_retryable(true))
            }
        }
    }

    async fn exchange(
        &self,
        source: &str,
        method: Method,
        url: &str,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Result<Answer> {
        let uri: http::Uri = url.parse().map_err(|_| credentials_error(source, format!("{url:?} is not a URL")))?;
        let tls = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err(credentials_error(source, format!("{url:?} is not an http(s) URL"))),
        };
        let host = uri.host().ok_or_else(|| credentials_error(source, format!("{url:?} has no host")))?;
        let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
        let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
        let authority = Authority { tls, host: host.clone(), port };
        let (dial_host, dial_port) = self.connector.dial_target(&authority);
        let addrs: Vec<_> = tokio::net::lookup_host((dial_host, dial_port))
            .await
            .map_err(|e| transport(source, format!("cannot resolve {dial_host}"), e))?
            .collect();
        let mut sender = self
            .connector
            .connect(&authority, &LocalBind::Default, &addrs, Operation::FetchCredentials, |_, _| {})
            .await
            .map_err(|e| transport(source, format!("cannot connect to {url}"), e))?;
        let host_header = match uri.port_u16() {
            Some(p) => format!("{}:{p}", uri.host().unwrap_or_default()),
            None => uri.host().unwrap_or_default().to_string(),
        };
        let target = uri.path_and_query().map_or("/", |p| p.as_str());
        let forward_auth = self.connector.forward_proxy(&authority).and_then(|p| p.authorization.clone());
        let mut builder = http::Request::builder()
            .method(method)
            .uri(self.connector.request_target(&authority, url, target))
            .header(http::header::HOST, host_header)
            .header(http::header::CONTENT_LENGTH, body.len())
            .header(http::header::USER_AGENT, concat!("gantry/", env!("CARGO_PKG_VERSION")));
        for (k, v) in headers {
            builder = builder.header(*k, *v);
        }
        if let Some(auth) = forward_auth {
            builder = builder.header(http::header::PROXY_AUTHORIZATION, auth);
        }
        let request = builder
            .body(RequestBody::new([body]))
            .map_err(|e| credentials_error(source, "cannot build the request").with_source(e))?;
        let response = sender
            .send
            .send_request(request)
            .await
            .map_err(|e| transport(source, format!("{url}: the connection failed"), e))?;
        let (parts, incoming) = response.into_parts();
        let collected =
            incoming.collect().await.map_err(|e| transport(source, format!("{url}: the answer broke off"), e))?;
        sender.driver.abort();
        let body = collected.to_bytes();
        if body.len() > MAX_ANSWER {
            return Err(credentials_error(source, format!("{url}: answer larger than {MAX_ANSWER} bytes")));
        }
        Ok(Answer { status: parts.status, body })
    }
}

fn transport(source: &str, message: String, e: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>) -> Error {
    credentials_error(source, message).with_source(e).with_retryable(true)
}
