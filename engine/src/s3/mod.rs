//! S3 operations over the HTTP layer: one file per operation, sharing the request builder,
//! signer and error mapping here.
//!
//! An [`S3Request`] is a description (method, bucket, key, query, headers, body) that can be
//! built into a signed HTTP request any number of times: each retry signs afresh, so a long
//! backoff never sends a stale `x-amz-date`.

pub(crate) mod abort_multipart;
pub(crate) mod append;
pub(crate) mod complete_multipart;
pub(crate) mod copy_object;
pub(crate) mod create_bucket;
pub(crate) mod create_multipart;
pub(crate) mod delete_object;
pub(crate) mod delete_objects;
pub(crate) mod express;
pub(crate) mod get_object;
pub(crate) mod get_object_attributes;
pub(crate) mod head_object;
pub(crate) mod list_buckets;
pub(crate) mod list_multipart_uploads;
pub(crate) mod list_objects;
pub(crate) mod lost_complete;
pub(crate) mod lost_create;
pub(crate) mod put_object;
pub(crate) mod sign;
pub(crate) mod upload_part;
pub(crate) mod xml;

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method, StatusCode};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use crate::checksum::{ChecksumAlgorithm, ChecksumUpload, Crc};
use crate::config::{Addressing, Checksums, ClientConfig, Endpoint, PayloadSigning};
use crate::credentials::cache::{Cached, CredentialsCache};
use crate::error::{Error, ErrorKind, Operation};
use crate::http::{Authority, Body, Connector, HttpClient, Lanes, RequestBody};
use crate::metrics::Metrics;
use crate::retry::{Idempotency, Retry, RetryPolicy};
use sign::{As, Payload, Signer};

/// Characters kept as-is in a URI path: RFC 3986 unreserved plus `/`.
const PATH: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~').remove(b'/');
/// Characters kept as-is in a query component: RFC 3986 unreserved.
const QUERY: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// Largest XML answer we read (ListObjectsV2 with 1,000 long keys stays well below).
const MAX_XML_BYTES: usize = 16 << 20;

/// Everything needed to talk S3 to one endpoint. Shared behind an `Arc` so that what lives
/// longer than one call (S3 Express session refreshes, see [`express`]) can reach it without
/// owning it.
#[derive(Debug, Clone)]
pub(crate) struct S3 {
    inner: Arc<S3Inner>,
}

impl std::ops::Deref for S3 {
    type Target = S3Inner;
    fn deref(&self) -> &S3Inner {
        &self.inner
    }
}

/// The state of an [`S3`].
#[derive(Debug)]
pub(crate) struct S3Inner {
    pub(crate) http: HttpClient,
    signer: Signer,
    /// `None`: anonymous (unsigned) requests.
    pub(crate) credentials: Option<Arc<CredentialsCache>>,
    endpoint: Endpoint,
    /// The client's region: what requests are signed for unless a bucket lives elsewhere.
    region: String,
    /// Whether the endpoint is AWS's regional one (derived, not configured): then a bucket in
    /// another region is also reached at that region's endpoint.
    aws_endpoint: bool,
    /// Buckets found to live in another region (from S3's redirect answers).
    bucket_regions: std::sync::RwLock<std::collections::HashMap<String, String>>,
    addressing: Addressing,
    payload_signing: PayloadSigning,
    pub(crate) checksums: Checksums,
    pub(crate) retry: RetryPolicy,
    pub(crate) metrics: Arc<Metrics>,
    /// Whether directory buckets get S3 Express sessions, and of which mode.
    express_session_auth: bool,
    express_session_mode: crate::config::ExpressSessionMode,
    /// The S3 Express sessions, per directory bucket.
    pub(crate) sessions: express::Sessions,
}

/// A request description; [`S3::send`] builds, signs and sends it.
#[derive(Debug, Clone)]
pub(crate) struct S3Request<'a> {
    pub(crate) op: Operation,
    pub(crate) method: Method,
    pub(crate) bucket: &'a str,
    pub(crate) key: Option<&'a str>,
    pub(crate) query: Vec<(&'static str, String)>,
    pub(crate) headers: Vec<(HeaderName, HeaderValue)>,
    pub(crate) body: Bytes,
    /// The body's checksum, sent as the configured [`ChecksumUpload`] says.
    pub(crate) checksum: Option<Crc>,
    /// Whether a retry after a lost answer is safe: from the operation (see
    /// [`idempotency_of`]), raised to [`Idempotency::Recoverable`] by an operation that
    /// repairs what a repeat can do ([`S3Request::recoverable`]).
    pub(crate) idempotency: Idempotency,
}

/// What sending a request of `op` twice does. CreateMultipartUpload makes a second upload and
/// CompleteMultipartUpload of a completed upload answers `NoSuchUpload`, so neither is
/// idempotent; every other operation this engine sends leaves the same state when repeated
/// (PUTs overwrite, DELETEs of what is gone succeed or say so, reads change nothing).
pub(crate) fn idempotency_of(op: Operation) -> Idempotency {
    match op {
        Operation::CreateMultipartUpload | Operation::CompleteMultipartUpload => Idempotency::NotIdempotent,
        _ => Idempotency::Idempotent,
    }
}

/// What the attempts of one request went through: what an operation's recovery step after a
/// lost answer needs to know (see [`S3::execute_recorded`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Attempts {
    /// Attempts sent, the last one included.
    pub(crate) sent: u32,
    /// Failed attempts whose answer was lost: the server may have carried them out.
    pub(crate) lost_answers: u32,
    /// When the first attempt started, on the monotonic clock.
    pub(crate) started: std::time::Instant,
}

impl<'a> S3Request<'a> {
    pub(crate) fn new(op: Operation, method: Method, bucket: &'a str, key: Option<&'a str>) -> Self {
        S3Request {
            op,
            method,
            bucket,
            key,
            query: Vec::new(),
            headers: Vec::new(),
            body: Bytes::new(),
            checksum: None,
            idempotency: idempotency_of(op),
        }
    }

    /// Declares that the caller repairs what a repeat after a lost answer can do (it must
    /// look at the [`Attempts`] of [`S3::execute_recorded`]), so a lost answer is retried.
    pub(crate) fn recoverable(mut self) -> Self {
        if self.idempotency == Idempotency::NotIdempotent {
            self.idempotency = Idempotency::Recoverable;
        }
        self
    }

    pub(crate) fn query(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.query.push((name, value.into()));
        self
    }

    pub(crate) fn header(mut self, name: HeaderName, value: &str) -> Result<Self, Error> {
        let value = HeaderValue::from_str(value)
            .map_err(|_| Error::invalid(self.op, format!("header {name} has an invalid value")))?;
        self.headers.push((name, value));
        Ok(self)
    }

    pub(crate) fn body(mut self, body: Bytes) -> Self {
        self.body = body;
        self
    }

    /// Attaches the body's checksum (see [`S3::upload_checksum`]).
    pub(crate) fn checksum(mut self, crc: Option<Crc>) -> Self {
        self.checksum = crc;
        self
    }
}

impl S3 {
    pub(crate) fn new(
        config: &ClientConfig,
        http: HttpClient,
        credentials: Option<Arc<CredentialsCache>>,
        metrics: Arc<Metrics>,
    ) -> Self {
        let endpoint = config.endpoint.clone().unwrap_or_else(|| Endpoint {
            scheme: "https".into(),
            host: format!("s3.{}.amazonaws.com", config.region),
            port: 443,
        });
        let inner = S3Inner {
            http,
            signer: Signer::new(config.region.clone(), "s3"),
            credentials,
            endpoint,
            region: config.region.clone(),
            aws_endpoint: config.endpoint.is_none(),
            bucket_regions: Default::default(),
            addressing: config.addressing,
            payload_signing: config.payload_signing,
            checksums: config.checksums,
            retry: RetryPolicy::new(config.retry.clone(), metrics.clone()),
            metrics,
            express_session_auth: config.express_session_auth,
            express_session_mode: config.express_session_mode,
            sessions: Default::default(),
        };
        S3 { inner: Arc::new(inner) }
    }

    /// The S3 layer for `config` with its own connection pool (connector and NIC lanes from
    /// the config) and signer: what a client runs on, and what the micro-benchmarks build.
    pub(crate) fn from_config(config: &ClientConfig, metrics: Arc<Metrics>) -> Result<Self, Error> {
        let t = &config.timeouts;
        let connector =
            Connector::new(t.connect, t.tls_handshake, config.tcp_recv_buffer_bytes, config.tcp_send_buffer_bytes)
                .with_tls(crate::http::trust::client_config(&config.tls)?)
                .with_proxy(config.proxy.clone());
        let lanes = Lanes::new(&config.network_interfaces, &config.bind_addresses);
        let credentials = crate::credentials::cache_for(&config.credentials, &config.region, &connector)?;
        let http = HttpClient::new(connector, lanes, t, metrics.clone());
        Ok(S3::new(config, http, credentials, metrics))
    }

    /// The algorithm of the checksum uploads to `bucket` carry, or `None` when they carry
    /// none: the configured one, except CRC32C in directory buckets (see
    /// [`express::UPLOAD_CHECKSUM`]).
    pub(crate) fn upload_checksum_algorithm(&self, bucket: &str) -> Option<ChecksumAlgorithm> {
        let algorithm = match express::zone_of(bucket) {
            Some(_) => express::UPLOAD_CHECKSUM,
            None => self.checksums.algorithm,
        };
        (self.checksums.upload != ChecksumUpload::None).then_some(algorithm)
    }

    /// The checksum to send with an upload body to `bucket`, or `None` when uploads carry none.
    pub(crate) fn upload_checksum(&self, bucket: &str, body: &[u8]) -> Option<Crc> {
        self.upload_checksum_algorithm(bucket).map(|a| a.checksum(body))
    }

    fn path_style(&self, bucket: &str) -> bool {
        match self.addressing {
            Addressing::PathStyle => true,
            Addressing::VirtualHosted => false,
            // Dotted bucket names do not match the TLS wildcard certificate; non-DNS names
            // cannot be host names at all.
            Addressing::Auto => {
                !self.endpoint.is_aws()
                    || self.endpoint.is_ip_or_localhost()
                    || bucket.contains('.')
                    || !bucket.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            }
        }
    }

    /// The region `bucket` was found to live in, when it is not the client's.
    fn region_of(&self, bucket: &str) -> Option<String> {
        if bucket.is_empty() {
            return None;
        }
        self.bucket_regions.read().expect("bucket regions lock").get(bucket).cloned()
    }

    /// Builds and signs the HTTP request for one attempt with the credentials held now
    /// (without fetching any: synchronous callers such as the micro-benchmarks).
    #[cfg_attr(not(feature = "bench-internals"), allow(dead_code))]
    pub(crate) fn build(&self, req: &S3Request<'_>) -> Result<(Authority, http::Request<RequestBody>), Error> {
        let creds = self.credentials.as_ref().and_then(|c| c.peek());
        self.build_signed(req, creds.as_deref(), false)
    }

    /// Builds the HTTP request for one attempt, signed with `creds` (unsigned when `None`);
    /// `session`: `creds` are an S3 Express session of the request's directory bucket.
    pub(crate) fn build_signed(
        &self,
        req: &S3Request<'_>,
        creds: Option<&Cached>,
        session: bool,
    ) -> Result<(Authority, http::Request<RequestBody>), Error> {
        let path_style = self.path_style(req.bucket);
        let region = self.region_of(req.bucket);
        let zone = express::zone_of(req.bucket);
        let base = match (&region, zone) {
            // A directory bucket's zonal endpoint.
            (r, Some(az)) if self.aws_endpoint => {
                format!("s3express-{az}.{}.amazonaws.com", r.as_deref().unwrap_or(&self.region))
            }
            (Some(r), _) if self.aws_endpoint => format!("s3.{r}.amazonaws.com"),
            _ => self.endpoint.host.clone(),
        };
        // A request to no bucket (ListBuckets) goes to the endpoint itself.
        let host = if path_style || req.bucket.is_empty() { base } else { format!("{}.{}", req.bucket, base) };
        let mut path = String::with_capacity(64);
        path.push('/');
        if path_style && !req.bucket.is_empty() {
            path.extend(utf8_percent_encode(req.bucket, PATH));
            path.push('/');
        }
        if let Some(key) = req.key {
            path.extend(utf8_percent_encode(key, PATH));
        }
        let mut query = String::new();
        for (i, (k, v)) in req.query.iter().enumerate() {
            query.push(if i == 0 { '?' } else { '&' });
            query.push_str(k);
            if !v.is_empty() {
                query.push('=');
                query.extend(utf8_percent_encode(v, QUERY));
            }
        }
        let default_port = if self.endpoint.scheme == "https" { 443 } else { 80 };
        let host_header = if self.endpoint.port == default_port {
            bracket(&host)
        } else {
            format!("{}:{}", bracket(&host), self.endpoint.port)
        };
        let uri = format!("{}://{}{}{}", self.endpoint.scheme, host_header, path, query);
        let mut builder =
            http::Request::builder().method(req.method.clone()).uri(&uri).header(http::header::HOST, &host_header);
        for (k, v) in &req.headers {
            builder = builder.header(k, v);
        }
        let trailer = req.checksum.filter(|_| self.checksums.upload == ChecksumUpload::Trailer);
        let body = match (req.checksum, trailer) {
            (Some(crc), Some(_)) => {
                // aws-chunked with one data chunk and the checksum in the trailer.
                let name = crc.algorithm.header();
                builder = builder
                    .header("x-amz-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER")
                    .header(http::header::CONTENT_ENCODING, "aws-chunked")
                    .header("x-amz-decoded-content-length", req.body.len())
                    .header("x-amz-trailer", name);
                let tail = format!("0\r\n{name}:{}\r\n\r\n", crc.encoded());
                if req.body.is_empty() {
                    RequestBody::new([Bytes::from(tail)])
                } else {
                    let head = Bytes::from(format!("{:x}\r\n", req.body.len()));
                    RequestBody::new([head, req.body.clone(), Bytes::from(format!("\r\n{tail}"))])
                }
            }
            (Some(crc), None) => {
                builder = builder.header(crc.algorithm.header(), crc.encoded());
                RequestBody::new([req.body.clone()])
            }
            (None, _) => RequestBody::new([req.body.clone()]),
        };
        let mut request = builder
            .header(http::header::CONTENT_LENGTH, body.len())
            .body(body)
            .map_err(|e| Error::invalid(req.op, "cannot build the HTTP request").with_source(e))?;
        let payload = match self.payload_signing {
            _ if trailer.is_some() => Payload::Precomputed("STREAMING-UNSIGNED-PAYLOAD-TRAILER"),
            PayloadSigning::Signed => Payload::Signed(&req.body),
            PayloadSigning::Unsigned if req.body.is_empty() => Payload::Signed(&[]),
            PayloadSigning::Unsigned => Payload::Unsigned,
        };
        if let Some(creds) = creds {
            let region = region.as_deref().unwrap_or(&self.region);
            let who = match (session, self.uses_sessions(req.bucket)) {
                (true, _) => As::ExpressSession,
                // CreateSession, or a directory bucket with sessions off: the client's own
                // keys, for the zone's service.
                (false, true) => As::ExpressBase,
                (false, false) if zone.is_some() && !self.express_session_auth => As::ExpressBase,
                (false, false) => As::Own,
            };
            self.signer.sign_as(&mut request, payload, req.op, &creds.identity, region, who)?;
        }
        let authority = Authority { tls: self.endpoint.scheme == "https", host, port: self.endpoint.port };
        Ok((authority, request))
    }

    /// One attempt: sends the request and maps a non-2xx answer to a typed error (reading
    /// its XML body). The 2xx body is left for the caller to read.
    ///
    /// A refusal of the credentials as expired or invalid (`ExpiredToken`, `InvalidToken`,
    /// `TokenRefreshRequired`) with temporary credentials forces one refresh and one resend,
    /// inside this attempt: the request did nothing wrong, its keys just aged.
    pub(crate) async fn send(&self, req: &S3Request<'_>, attempt: u32) -> Result<http::Response<Body>, Error> {
        let mut creds = match &self.credentials {
            Some(cache) => Some(cache.get().await.map_err(|e| e.with_operation(req.op))?),
            None => None,
        };
        // A directory bucket: its session signs instead (see `express`).
        let sessions = self.session_cache(req).await?;
        let mut session = match &sessions {
            Some(cache) => {
                // A failed CreateSession keeps its own operation: that is what failed.
                let s = cache.get().await?;
                self.sessions.count_signed();
                Some(s)
            }
            None => None,
        };
        let mut refreshed = false;
        let mut redirected = false;
        let mut renewed_session = false;
        loop {
            let signing = session.as_deref().or(creds.as_deref());
            let (authority, request) = self.build_signed(req, signing, session.is_some())?;
            self.metrics.add_request(attempt > 0 || refreshed || redirected);
            let result = self.http.send(&authority, request, req.op).await;
            let mut response = match result {
                Ok(r) => r,
                Err(e) => {
                    self.metrics.add_error();
                    return Err(e);
                }
            };
            if response.status().is_success() {
                return Ok(response);
            }
            self.metrics.add_error();
            let status = response.status();
            let request_id = header_str(response.headers(), "x-amz-request-id");
            let region_header = header_str(response.headers(), "x-amz-bucket-region");
            let body = if req.method == Method::HEAD {
                Bytes::new()
            } else {
                response.body_mut().collect(64 << 10).await.unwrap_or_default()
            };
            // A bucket in another region: S3 names it (301 with x-amz-bucket-region, or 400
            // AuthorizationHeaderMalformed with <Region>). Re-sign for it, remember it for
            // every later request to the bucket, and send again, once.
            if !redirected && matches!(status.as_u16(), 301 | 307 | 400) {
                let named = region_header.or_else(|| xml::error_region(&body));
                let used = self.region_of(req.bucket).unwrap_or_else(|| self.region.clone());
                if let Some(region) = named.filter(|r| *r != used && !req.bucket.is_empty() && valid_region(r)) {
                    tracing::info!(bucket = req.bucket, %region, "bucket lives in another region; re-signing");
                    self.bucket_regions.write().expect("bucket regions lock").insert(req.bucket.to_string(), region);
                    redirected = true;
                    continue;
                }
            }
            let err = status_error(req.op, status, &body, request_id, req);
            if let (Some(cache), Some(used)) = (&sessions, &session) {
                if !renewed_session && express::refuses_session(&err) {
                    tracing::info!(
                        bucket = req.bucket,
                        code = err.s3_code(),
                        "S3 Express session refused; making a new one"
                    );
                    self.sessions.count_invalidation();
                    session = Some(cache.invalidate(used.generation).await?);
                    renewed_session = true;
                    continue;
                }
                return Err(err);
            }
            let stale = matches!(err.s3_code(), Some("ExpiredToken" | "InvalidToken" | "TokenRefreshRequired"));
            match (&self.credentials, &creds) {
                (Some(cache), Some(used)) if stale && !refreshed && used.is_temporary() => {
                    tracing::info!(code = err.s3_code(), "credentials refused as expired; refreshing once");
                    creds = Some(cache.invalidate(used.generation).await.map_err(|e| e.with_operation(req.op))?);
                    refreshed = true;
                }
                _ => return Err(err),
            }
        }
    }

    /// Sends a request whose answer is a small document, with retries; returns the response
    /// head and its whole body. A 200 carrying an `<Error>` document counts as that error.
    /// Whether a lost answer is retried follows the request's [`Idempotency`].
    pub(crate) async fn execute(&self, req: &S3Request<'_>) -> Result<(http::response::Parts, Bytes), Error> {
        self.execute_recorded(req).await.0
    }

    /// [`S3::execute`], also saying what the attempts went through: an operation whose
    /// repeat is not harmless ([`S3Request::recoverable`]) checks or repairs the outcome
    /// from it.
    pub(crate) async fn execute_recorded(
        &self,
        req: &S3Request<'_>,
    ) -> (Result<(http::response::Parts, Bytes), Error>, Attempts) {
        let mut retry = Retry::new(&self.retry).with_idempotency(req.idempotency);
        let started = std::time::Instant::now();
        let record =
            |retry: &Retry<'_>| Attempts { sent: retry.attempt() + 1, lost_answers: retry.lost_answers(), started };
        loop {
            let result = async {
                let response = self.send(req, retry.attempt()).await?;
                let (parts, mut body) = response.into_parts();
                let bytes = body.collect(MAX_XML_BYTES).await?;
                if xml::is_error_document(&bytes) {
                    let request_id = header_str(&parts.headers, "x-amz-request-id");
                    return Err(status_error(req.op, StatusCode::OK, &bytes, request_id, req));
                }
                Ok((parts, bytes))
            }
            .await;
            match result {
                Ok(v) => {
                    let attempts = record(&retry);
                    retry.succeeded();
                    return (Ok(v), attempts);
                }
                Err(e) => {
                    if let Err(e) = retry.on_error(e).await {
                        return (Err(e), record(&retry));
                    }
                }
            }
        }
    }
}

/// A region name as S3 sends it (`eu-west-1`): letters, digits and dashes only, since it
/// becomes part of a host name.
fn valid_region(r: &str) -> bool {
    !r.is_empty() && r.len() < 64 && r.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

fn bracket(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

pub(crate) fn header_str(headers: &http::HeaderMap, name: &str) -> Option<String> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string)
}

/// Maps an error answer to a typed error: kind from status and S3 code, retryability from
/// the kind with S3's special cases (`RequestTimeout` and `InternalError` retry; an expired
/// token does not).
fn status_error(
    op: Operation,
    status: StatusCode,
    body: &[u8],
    header_request_id: Option<String>,
    req: &S3Request<'_>,
) -> Error {
    let parsed: xml::ErrorBody =
        if body.is_empty() { Default::default() } else { xml::parse(body, op).unwrap_or_default() };
    let code = parsed.code;
    let kind = match (status.as_u16(), code.as_deref()) {
        (_, Some("SlowDown" | "Throttling" | "ThrottlingException" | "RequestLimitExceeded")) => ErrorKind::Throttled,
        (_, Some("RequestTimeout")) => ErrorKind::Timeout,
        (_, Some("InvalidWriteOffset")) => ErrorKind::WrongWriteOffset,
        // The server computed another checksum than we sent: the body was damaged on the way.
        (_, Some("BadDigest" | "InvalidDigest" | "XAmzContentChecksumMismatch")) => ErrorKind::ChecksumMismatch,
        (_, Some("InternalError" | "ServiceUnavailable")) => ErrorKind::ServerError,
        // A feature the store lacks (aws-chunked uploads on some stores): asking again won't help.
        (_, Some("NotImplemented")) | (501, _) => ErrorKind::ClientError,
        (_, Some("ExpiredToken" | "InvalidAccessKeyId" | "SignatureDoesNotMatch" | "InvalidToken")) => {
            ErrorKind::AccessDenied
        }
        (404, _) => ErrorKind::NotFound,
        (403, _) => ErrorKind::AccessDenied,
        (412, _) => ErrorKind::ObjectChanged,
        (429, _) | (503, _) => ErrorKind::Throttled,
        (500..=599, _) => ErrorKind::ServerError,
        (200..=299, _) => ErrorKind::ServerError,
        _ => ErrorKind::ClientError,
    };
    let target = match req.key {
        Some(k) => format!("s3://{}/{}", req.bucket, k),
        None => format!("s3://{}", req.bucket),
    };
    let detail = parsed.message.map(|m| format!(": {m}")).unwrap_or_default();
    let code = code.or_else(|| match status.as_u16() {
        404 if req.method == Method::HEAD => Some("NotFound".to_string()),
        _ => None,
    });
    Error::new(kind, op, format!("{target}{detail}")).with_http(
        status.as_u16(),
        code,
        header_request_id.or(parsed.request_id),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ClientConfig;
    use crate::credentials::{Credentials, CredentialsSource};

    fn s3(endpoint: &str, addressing: Addressing) -> S3 {
        let config = ClientConfig::builder()
            .ignore_environment()
            .endpoint_url(endpoint)
            .addressing(addressing)
            .credentials(CredentialsSource::Static(Credentials::new("AKID", "SECRET")))
            .build()
            .unwrap();
        S3::from_config(&config, Arc::new(Metrics::default())).unwrap()
    }

    #[test]
    fn path_style_for_every_endpoint_but_aws() {
        for endpoint in ["http://minio:9000", "http://LOCALHOST:9000", "https://ceph.corp.example", "http://[::1]:9"] {
            let s = s3(endpoint, Addressing::Auto);
            let (auth, r) = s.build(&S3Request::new(Operation::GetObject, Method::GET, "bkt", Some("k"))).unwrap();
            assert!(!auth.host.starts_with("bkt."), "{endpoint}: {auth:?}");
            assert!(r.uri().path().starts_with("/bkt/"), "{endpoint}: {}", r.uri());
        }
        // Asked for, virtual-hosted it is.
        let s = s3("http://minio:9000", Addressing::VirtualHosted);
        let (auth, _) = s.build(&S3Request::new(Operation::GetObject, Method::GET, "bkt", Some("k"))).unwrap();
        assert_eq!(auth.host, "bkt.minio");
    }

    #[test]
    fn directory_buckets_go_to_their_zonal_endpoint_signed_for_s3express() {
        let config = ClientConfig::builder()
            .ignore_environment()
            .region("us-east-1")
            .credentials(CredentialsSource::Static(Credentials::new("AKID", "SECRET")))
            .build()
            .unwrap();
        let s = S3::from_config(&config, Arc::new(Metrics::default())).unwrap();
        let dir = "ckpt--use1-az4--x-s3";
        let req = S3Request::new(Operation::CreateSession, Method::GET, dir, None).query("session", "");
        let (auth, r) = s.build(&req).unwrap();
        assert_eq!(auth.host, "ckpt--use1-az4--x-s3.s3express-use1-az4.us-east-1.amazonaws.com");
        assert_eq!(r.uri().path_and_query().unwrap().as_str(), "/?session");
        let signed = r.headers()["authorization"].to_str().unwrap();
        assert!(signed.contains("/us-east-1/s3express/aws4_request"), "{signed}");
        // A general-purpose bucket is untouched.
        let (auth, r) = s.build(&S3Request::new(Operation::GetObject, Method::GET, "plain", Some("k"))).unwrap();
        assert_eq!(auth.host, "plain.s3.us-east-1.amazonaws.com");
        assert!(r.headers()["authorization"].to_str().unwrap().contains("/us-east-1/s3/aws4_request"));
    }

    #[test]
    fn path_style_for_ip_endpoints_and_encoding() {
        let s = s3("http://127.0.0.1:9000", Addressing::Auto);
        let req =
            S3Request::new(Operation::GetObject, Method::GET, "bkt", Some("dir/a b+c%.bin")).query("uploadId", "x/y=");
        let (auth, r) = s.build(&req).unwrap();
        assert_eq!(auth.host, "127.0.0.1");
        assert_eq!(r.uri().to_string(), "http://127.0.0.1:9000/bkt/dir/a%20b%2Bc%25.bin?uploadId=x%2Fy%3D");
        assert_eq!(r.headers()["host"], "127.0.0.1:9000");
        assert!(r.headers()["authorization"].to_str().unwrap().starts_with("AWS4-HMAC-SHA256 Credential=AKID/"));
        assert_eq!(
            r.headers()["x-amz-content-sha256"],
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn virtual_hosted_for_aws_names() {
        let s = s3("https://s3.us-west-2.amazonaws.com", Addressing::Auto);
        let req = S3Request::new(Operation::PutObject, Method::PUT, "bkt", Some("k")).body(Bytes::from_static(b"x"));
        let (auth, r) = s.build(&req).unwrap();
        assert_eq!(auth.host, "bkt.s3.us-west-2.amazonaws.com");
        assert_eq!(r.uri().to_string(), "https://bkt.s3.us-west-2.amazonaws.com/k");
        assert_eq!(r.headers()["x-amz-content-sha256"], "UNSIGNED-PAYLOAD");
        // Dotted bucket names fall back to path-style.
        let req = S3Request::new(Operation::GetObject, Method::GET, "my.bucket", Some("k"));
        let (auth, _) = s.build(&req).unwrap();
        assert_eq!(auth.host, "s3.us-west-2.amazonaws.com");
    }

    #[test]
    fn remembered_bucket_region_moves_host_and_signature() {
        let config = ClientConfig::builder()
            .ignore_environment()
            .region("us-east-1")
            .credentials(CredentialsSource::Static(Credentials::new("AKID", "SECRET")))
            .build()
            .unwrap();
        let s = S3::from_config(&config, Arc::new(Metrics::default())).unwrap();
        s.bucket_regions.write().unwrap().insert("far".into(), "eu-west-1".into());
        let (auth, r) = s.build(&S3Request::new(Operation::GetObject, Method::GET, "far", Some("k"))).unwrap();
        assert_eq!(auth.host, "far.s3.eu-west-1.amazonaws.com");
        let sig = r.headers()["authorization"].to_str().unwrap().to_string();
        assert!(sig.contains("/eu-west-1/s3/aws4_request"), "{sig}");
        let (auth, r) = s.build(&S3Request::new(Operation::GetObject, Method::GET, "near", Some("k"))).unwrap();
        assert_eq!(auth.host, "near.s3.us-east-1.amazonaws.com");
        assert!(r.headers()["authorization"].to_str().unwrap().contains("/us-east-1/s3/"));
        assert!(!valid_region("eu-west-1.evil.com") && valid_region("ap-southeast-2"));
        assert_eq!(
            xml::error_region(b"<Error><Code>AuthorizationHeaderMalformed</Code><Region>eu-west-1</Region></Error>"),
            Some("eu-west-1".into())
        );
    }

    /// Only the two multipart calls whose repeat meets the first one's effect are not
    /// idempotent; everything else is retried after a lost answer as before.
    #[test]
    fn idempotency_per_operation() {
        use Operation::*;
        for op in [GetObject, HeadObject, PutObject, UploadPart, AbortMultipartUpload, DeleteObject, ListObjectsV2] {
            let req = S3Request::new(op, Method::GET, "b", Some("k"));
            assert_eq!(req.idempotency, Idempotency::Idempotent, "{op:?}");
        }
        for op in [CreateMultipartUpload, CompleteMultipartUpload] {
            assert_eq!(idempotency_of(op), Idempotency::NotIdempotent, "{op:?}");
        }
    }

    #[test]
    fn status_mapping() {
        let req = S3Request::new(Operation::GetObject, Method::GET, "b", Some("k"));
        let body = b"<Error><Code>SlowDown</Code><Message>Reduce</Message><RequestId>R1</RequestId></Error>";
        let e = status_error(Operation::GetObject, StatusCode::SERVICE_UNAVAILABLE, body, None, &req);
        assert_eq!(e.kind(), ErrorKind::Throttled);
        assert!(e.is_retryable());
        assert_eq!(e.request_id(), Some("R1"));
        let e = status_error(
            Operation::GetObject,
            StatusCode::NOT_FOUND,
            b"<Error><Code>NoSuchKey</Code></Error>",
            Some("H".into()),
            &req,
        );
        assert_eq!((e.kind(), e.s3_code(), e.request_id()), (ErrorKind::NotFound, Some("NoSuchKey"), Some("H")));
        assert!(!e.is_retryable());
        let e = status_error(
            Operation::GetObject,
            StatusCode::BAD_REQUEST,
            b"<Error><Code>RequestTimeout</Code></Error>",
            None,
            &req,
        );
        assert!(e.is_retryable());
        let e = status_error(Operation::GetObject, StatusCode::FORBIDDEN, b"", None, &req);
        assert_eq!(e.kind(), ErrorKind::AccessDenied);
        assert!(!e.is_retryable());
    }
}

#[cfg(test)]
mod token_tests {
    use super::*;
    use crate::credentials::{Credentials, CredentialsSource};

    #[test]
    fn session_token_is_sent_and_anonymous_is_unsigned() {
        let creds = Credentials::new("AKID", "SECRET").with_session_token("TOKEN");
        for (source, signed) in [(CredentialsSource::Static(creds), true), (CredentialsSource::Anonymous, false)] {
            let config = ClientConfig::builder()
                .ignore_environment()
                .endpoint_url("http://127.0.0.1:1")
                .credentials(source)
                .build()
                .unwrap();
            let s = S3::from_config(&config, Arc::new(Metrics::default())).unwrap();
            let (_, r) = s.build(&S3Request::new(Operation::GetObject, Method::GET, "b", Some("k"))).unwrap();
            assert_eq!(r.headers().get("x-amz-security-token").is_some(), signed);
            assert_eq!(r.headers().get("authorization").is_some(), signed);
        }
    }
}
