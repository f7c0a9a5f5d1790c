//! STS's Query API: `AssumeRole` (signed with the source credentials, for `role_arn` profiles)
//! and `AssumeRoleWithWebIdentity` (unsigned, with an OIDC token: IRSA and
//! `web_identity_token_file`). The endpoint is `AWS_ENDPOINT_URL_STS`, else `AWS_ENDPOINT_URL`,
//! else the regional `https://sts.<region>.amazonaws.com`, as the SDKs resolve it.

use std::time::Duration;

use aws_smithy_runtime_api::client::identity::Identity;
use bytes::Bytes;
use http::Method;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde::Deserialize;

use super::fetch::{Answer, Fetcher};
use super::{credentials_error, time, Credentials, Env};
use crate::error::{Operation, Result};
use crate::s3::sign::{Payload, Signer};

/// Form-encoding keeps only RFC 3986 unreserved characters.
const FORM: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');
/// One STS call, connect to answer.
const STS_DEADLINE: Duration = Duration::from_secs(10);
/// Attempts for a call that failed in transport, was throttled or met a 5xx.
const STS_ATTEMPTS: u32 = 3;

/// A client of one STS endpoint.
#[derive(Debug, Clone)]
pub(crate) struct Sts {
    fetcher: Fetcher,
    endpoint: String,
    region: String,
}

/// What to assume.
#[derive(Debug, Clone)]
pub(crate) struct RoleRequest {
    pub(crate) role_arn: String,
    pub(crate) session_name: String,
    pub(crate) external_id: Option<String>,
    pub(crate) duration_seconds: Option<u32>,
}

#[derive(Deserialize)]
struct Response {
    #[serde(rename = "AssumeRoleResult", alias = "AssumeRoleWithWebIdentityResult")]
    result: RoleResult,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RoleResult {
    credentials: XmlCredentials,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct XmlCredentials {
    access_key_id: String,
    secret_access_key: String,
    session_token: String,
    expiration: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
struct ErrorResponse {
    error: ErrorBody,
    request_id: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
struct ErrorBody {
    code: Option<String>,
    message: Option<String>,
}

impl Sts {
    pub(crate) fn new(fetcher: Fetcher, env: &Env, region: &str) -> Self {
        let endpoint = env
            .get("AWS_ENDPOINT_URL_STS")
            .or_else(|| env.get("AWS_ENDPOINT_URL"))
            .unwrap_or_else(|| format!("https://sts.{region}.amazonaws.com"));
        Sts { fetcher, endpoint: endpoint.trim_end_matches('/').to_string(), region: region.to_string() }
    }

    /// `AssumeRole`, signed with `source`.
    pub(crate) async fn assume_role(&self, source: &Credentials, req: &RoleRequest) -> Result<Credentials> {
        let mut form = vec![
            ("Action", "AssumeRole".to_string()),
            ("Version", "2011-06-15".to_string()),
            ("RoleArn", req.role_arn.clone()),
            ("RoleSessionName", req.session_name.clone()),
        ];
        if let Some(id) = &req.external_id {
            form.push(("ExternalId", id.clone()));
        }
        if let Some(d) = req.duration_seconds {
            form.push(("DurationSeconds", d.to_string()));
        }
        let identity: Identity = aws_credential_types::Credentials::new(
            source.access_key_id.clone(),
            source.secret_access_key.clone(),
            source.session_token.clone(),
            None,
            "gantry",
        )
        .into();
        self.call("STS AssumeRole", &form, Some(&identity), &req.role_arn).await
    }

    /// `AssumeRoleWithWebIdentity` with the OIDC `token` (unsigned, as STS defines it).
    pub(crate) async fn assume_role_with_web_identity(&self, req: &RoleRequest, token: &str) -> Result<Credentials> {
        let form = vec![
            ("Action", "AssumeRoleWithWebIdentity".to_string()),
            ("Version", "2011-06-15".to_string()),
            ("RoleArn", req.role_arn.clone()),
            ("RoleSessionName", req.session_name.clone()),
            ("WebIdentityToken", token.to_string()),
        ];
        self.call("STS AssumeRoleWithWebIdentity", &form, None, &req.role_arn).await
    }

    async fn call(
        &self,
        what: &str,
        form: &[(&str, String)],
        identity: Option<&Identity>,
        role: &str,
    ) -> Result<Credentials> {
        let body: String =
            form.iter().map(|(k, v)| format!("{k}={}", utf8_percent_encode(v, FORM))).collect::<Vec<_>>().join("&");
        let body = Bytes::from(body);
        let url = format!("{}/", self.endpoint);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut headers = vec![("content-type".to_string(), "application/x-www-form-urlencoded".to_string())];
            if let Some(identity) = identity {
                headers.extend(self.sign(&url, &body, identity)?);
            }
            let refs: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let result = self.fetcher.send(what, Method::POST, &url, &refs, body.clone(), STS_DEADLINE).await;
            let retry = match &result {
                Err(e) => e.is_retryable(),
                Ok(a) => a.status.is_server_error() || a.status.as_u16() == 429 || is_throttle(a),
            };
            if retry && attempt < STS_ATTEMPTS {
                tokio::time::sleep(Duration::from_millis(200 * u64::from(attempt))).await;
                continue;
            }
            return parse_answer(what, role, &result?);
        }
    }

    /// The SigV4 headers for a POST of `body` to `url` (service `sts`).
    fn sign(&self, url: &str, body: &Bytes, identity: &Identity) -> Result<Vec<(String, String)>> {
        let mut req = http::Request::builder()
            .method(Method::POST)
            .uri(url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(())
            .map_err(|e| credentials_error("STS", "cannot build the request").with_source(e))?;
        Signer::new(self.region.clone(), "sts").sign(
            &mut req,
            Payload::Signed(body),
            Operation::FetchCredentials,
            identity,
        )?;
        Ok(req
            .headers()
            .iter()
            .filter(|(k, _)| *k != "content-type")
            .filter_map(|(k, v)| Some((k.to_string(), v.to_str().ok()?.to_string())))
            .collect())
    }
}

fn is_throttle(a: &Answer) -> bool {
    let text = a.text();
    text.contains("<Code>Throttling</Code>") || text.contains("<Code>RequestLimitExceeded</Code>")
}

fn parse_answer(what: &str, role: &str, answer: &Answer) -> Result<Credentials> {
    let text = answer.text();
    if !answer.status.is_success() {
        let e: ErrorResponse = quick_xml::de::from_str(&text).unwrap_or_default();
        let code = e.error.code.unwrap_or_else(|| "no error code".into());
        let message = e.error.message.map(|m| format!(": {m}")).unwrap_or_default();
        let id = e.request_id.map(|r| format!(", request id {r}")).unwrap_or_default();
        return Err(credentials_error(what, format!("{role}: {code}{message} (HTTP {}{id})", answer.status.as_u16()))
            .with_http(answer.status.as_u16(), Some(code), None));
    }
    let r: Response = quick_xml::de::from_str(&text)
        .map_err(|e| credentials_error(what, format!("{role}: the answer is not the expected XML ({e})")))?;
    let c = r.result.credentials;
    let expiry = time::parse_rfc3339(&c.expiration)
        .ok_or_else(|| credentials_error(what, format!("Expiration {:?} is not an RFC 3339 time", c.expiration)))?;
    Ok(Credentials::new(c.access_key_id, c.secret_access_key).with_session_token(c.session_token).with_expiry(expiry))
}

/// The session name a role is assumed under when the profile names none.
pub(crate) fn default_session_name() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    format!("gantry-{secs}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, body: &str) -> Answer {
        Answer { status: http::StatusCode::from_u16(status).unwrap(), body: Bytes::from(body.to_string()) }
    }

    #[test]
    fn parses_sts_xml() {
        let ok = r#"<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <SubjectFromWebIdentityToken>system:serviceaccount:ns:sa</SubjectFromWebIdentityToken>
    <Credentials>
      <SessionToken>TOKEN</SessionToken><SecretAccessKey>SECRET</SecretAccessKey>
      <Expiration>2030-01-01T00:00:00Z</Expiration><AccessKeyId>ASIA1</AccessKeyId>
    </Credentials>
  </AssumeRoleWithWebIdentityResult>
  <ResponseMetadata><RequestId>r1</RequestId></ResponseMetadata>
</AssumeRoleWithWebIdentityResponse>"#;
        let c = parse_answer("STS", "arn:r", &answer(200, ok)).unwrap();
        assert_eq!((c.access_key_id.as_str(), c.session_token.as_deref()), ("ASIA1", Some("TOKEN")));
        let err = r#"<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type>
<Code>AccessDenied</Code><Message>not authorized to perform sts:AssumeRole</Message></Error><RequestId>r2</RequestId></ErrorResponse>"#;
        let e = parse_answer("STS AssumeRole", "arn:r", &answer(403, err)).unwrap_err();
        assert_eq!(
            (e.kind(), e.http_status(), e.s3_code()),
            (crate::ErrorKind::Credentials, Some(403), Some("AccessDenied"))
        );
        assert!(e.message().contains("not authorized") && e.message().contains("r2"), "{e}");
        assert!(parse_answer("STS", "r", &answer(200, "<html/>")).is_err());
    }
}
