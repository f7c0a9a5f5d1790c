//! Request routing and the S3 operations: classify, evaluate rules, log, read the request
//! body, answer, then apply faults and shaping to the answer.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;

use crate::checksum::ChecksumAlgo;
use crate::conn::{ConnCtl, EndAction};
use crate::faults::{paced_chunk, BodyPlan, BoxError, Fault, RespBody};
use crate::http_util::{http_date, iso8601, parse_query, parse_range, percent_decode};
use crate::rules::{Op, RequestInfo, RequestRecord};
use crate::s3xml;
use crate::store::{Draft, Marker, PartMeta};
use crate::State;

/// Every part but the last must be at least this large (S3's limit).
const MIN_PART_SIZE: usize = 5 * 1024 * 1024;
/// Largest body buffer preallocated from a (client-supplied) Content-Length.
const MAX_PREALLOC: usize = 1 << 30;
/// Trickle paces in chunks of at most this many bytes.
const TRICKLE_MAX_CHUNK: usize = 16 * 1024;

/// What a request asks for; finer than [`Op`] (several actions are `Op::Other`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Get,
    Head,
    Put,
    CreateMpu,
    UploadPart,
    CopyObject,
    UploadPartCopy,
    Complete,
    Abort,
    ListUploads,
    ListV2,
    Delete,
    CreateBucket,
    HeadBucket,
    DeleteBucket,
    ListBuckets,
    Location,
    DeleteObjects,
    Attributes,
    CreateSession,
    Unsupported,
}

impl Action {
    fn op(self) -> Op {
        match self {
            Action::Get => Op::GetObject,
            Action::Head => Op::HeadObject,
            Action::Put => Op::PutObject,
            Action::CreateMpu => Op::CreateMultipartUpload,
            Action::UploadPart => Op::UploadPart,
            Action::CopyObject => Op::CopyObject,
            Action::UploadPartCopy => Op::UploadPartCopy,
            Action::Complete => Op::CompleteMultipartUpload,
            Action::Abort => Op::AbortMultipartUpload,
            Action::ListUploads => Op::ListMultipartUploads,
            Action::ListV2 => Op::ListObjectsV2,
            Action::Delete => Op::DeleteObject,
            Action::CreateBucket => Op::CreateBucket,
            Action::CreateSession => Op::CreateSession,
            Action::DeleteObjects => Op::DeleteObjects,
            _ => Op::Other,
        }
    }
}

/// Object subresources this server does not implement (answered 501).
const OBJECT_SUBRESOURCES: &[&str] =
    &["tagging", "acl", "retention", "legal-hold", "torrent", "restore", "select", "renameObject"];
/// Parts per GetObjectAttributes page when the request names no `x-amz-max-parts` (S3's).
const DEFAULT_MAX_PARTS: u32 = 1000;
/// Query parameters a plain bucket GET (a listing) may carry.
const LIST_PARAMS: &[&str] = &[
    "list-type",
    "prefix",
    "delimiter",
    "max-keys",
    "continuation-token",
    "start-after",
    "encoding-type",
    "fetch-owner",
    "x-id",
    "marker",
];

fn classify(
    method: &Method,
    bucket: Option<&str>,
    key: Option<&str>,
    query: &[(String, String)],
    h: &HeaderMap,
) -> Action {
    let has = |n: &str| query.iter().any(|(k, _)| k == n);
    let only = |allowed: &[&str]| query.iter().all(|(k, _)| allowed.contains(&k.as_str()));
    match (bucket, key) {
        (None, _) => {
            if *method == Method::GET {
                Action::ListBuckets
            } else {
                Action::Unsupported
            }
        }
        (Some(_), None) => match *method {
            Method::GET if has("uploads") => Action::ListUploads,
            Method::GET if has("location") => Action::Location,
            Method::GET if has("session") => Action::CreateSession,
            Method::GET if only(LIST_PARAMS) => Action::ListV2,
            Method::HEAD => Action::HeadBucket,
            Method::PUT if only(&["x-id"]) => Action::CreateBucket,
            Method::DELETE if only(&["x-id"]) => Action::DeleteBucket,
            Method::POST if has("delete") => Action::DeleteObjects,
            _ => Action::Unsupported,
        },
        (Some(_), Some(_)) => {
            if *method == Method::GET && has("attributes") {
                return Action::Attributes;
            }
            if OBJECT_SUBRESOURCES.iter().any(|s| has(s)) {
                return Action::Unsupported;
            }
            match *method {
                Method::GET if has("uploadId") => Action::Unsupported,
                Method::GET => Action::Get,
                Method::HEAD => Action::Head,
                Method::PUT if h.contains_key("x-amz-copy-source") && (has("uploadId") || has("partNumber")) => {
                    Action::UploadPartCopy
                }
                Method::PUT if h.contains_key("x-amz-copy-source") => Action::CopyObject,
                Method::PUT if has("uploadId") || has("partNumber") => Action::UploadPart,
                Method::PUT => Action::Put,
                Method::POST if has("uploads") => Action::CreateMpu,
                Method::POST if has("uploadId") => Action::Complete,
                Method::DELETE if has("uploadId") => Action::Abort,
                Method::DELETE => Action::Delete,
                _ => Action::Unsupported,
            }
        }
    }
}

/// An answer before faults and shaping are applied.
struct Reply {
    status: u16,
    headers: HeaderMap,
    body: Bytes,
}

fn hv(s: &str) -> HeaderValue {
    HeaderValue::from_str(s).unwrap_or_else(|_| HeaderValue::from_static("invalid"))
}

impl Reply {
    fn new(status: u16) -> Reply {
        Reply { status, headers: HeaderMap::new(), body: Bytes::new() }
    }

    fn header(mut self, name: &'static str, value: &str) -> Reply {
        self.headers.append(HeaderName::from_static(name), hv(value));
        self
    }

    fn xml(status: u16, doc: String) -> Reply {
        let mut r = Reply::new(status).header("content-type", "application/xml");
        r.body = Bytes::from(doc);
        r
    }
}

/// Everything known about the request being served.
struct Ctx {
    state: Arc<State>,
    ctl: Arc<ConnCtl>,
    request_id: String,
    action: Action,
    op: Op,
    method: Method,
    path: String,
    /// The path and query exactly as received (what a signature covers).
    raw_uri: String,
    bucket: String,
    key: String,
    query: Vec<(String, String)>,
    headers: HeaderMap,
    fault: Option<Fault>,
}

fn header_str<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok()).map(str::trim)
}

fn unquote(s: &str) -> &str {
    s.trim().trim_start_matches("W/").trim_matches('"')
}

/// Entry point of the hyper service for one request.
pub(crate) async fn handle(
    state: Arc<State>,
    ctl: Arc<ConnCtl>,
    req: Request<Incoming>,
) -> Result<Response<RespBody>, BoxError> {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_string();
    let (bucket, key) = match path.strip_prefix('/').unwrap_or(&path).split_once('/') {
        Some((b, k)) if !k.is_empty() => (Some(percent_decode(b)), Some(percent_decode(k))),
        Some((b, _)) => (Some(percent_decode(b)), None),
        None if path.len() > 1 => (Some(percent_decode(&path[1..])), None),
        None => (None, None),
    };
    let query = parse_query(parts.uri.query());
    let action = classify(&parts.method, bucket.as_deref(), key.as_deref(), &query, &parts.headers);
    let op = action.op();
    let request_id = state.next_request_id();

    let range = if op == Op::GetObject {
        header_str(&parts.headers, "range").and_then(parse_range).and_then(|spec| match spec {
            crate::http_util::RangeSpec::From(a, b) => Some((a, b)),
            crate::http_util::RangeSpec::Suffix(_) => {
                let obj = state.store().get(bucket.as_deref().unwrap_or(""), key.as_deref().unwrap_or("")).ok()?;
                spec.resolve(obj.data.len() as u64).map(|(a, b)| (a, Some(b)))
            }
        })
    } else {
        None
    };
    let part_number = if matches!(op, Op::UploadPart | Op::UploadPartCopy) {
        query.iter().find(|(k, _)| k == "partNumber").and_then(|(_, v)| v.parse().ok())
    } else {
        None
    };
    let headers = if state.log_enabled.load(Ordering::Relaxed) {
        parts
            .headers
            .iter()
            .filter(|(n, _)| *n != header::AUTHORIZATION)
            .map(|(n, v)| (n.as_str().to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
            .collect()
    } else {
        Vec::new()
    };
    let fault = {
        // Evaluate and log under one lock so the log order is the rule-evaluation order.
        let mut rules = state.rules.lock().unwrap_or_else(|e| e.into_inner());
        let info = RequestInfo { op, key: key.as_deref(), range_start: range.map(|r| r.0), part_number };
        let fault = rules.evaluate(&info);
        if fault.is_some() {
            state.faults_fired.fetch_add(1, Ordering::Relaxed);
        }
        let fault_name = fault.as_ref().map(|f| format!("{f:?}"));
        state.record(RequestRecord { op, key: key.clone(), range, part_number, fault: fault_name, headers });
        fault
    };

    let ctx = Ctx {
        state,
        ctl,
        request_id,
        action,
        op,
        method: parts.method,
        raw_uri: parts.uri.path_and_query().map_or_else(|| "/".to_string(), |p| p.as_str().to_string()),
        path,
        bucket: bucket.unwrap_or_default(),
        key: key.unwrap_or_default(),
        query,
        headers: parts.headers,
        fault,
    };

    match (&ctx.fault, op.carries_body()) {
        (Some(Fault::ResetBeforeHead | Fault::ResetMidBody), true) => {
            read_half(body, &ctx.headers).await;
            return Err("gantry-faults: injected reset while reading the request body".into());
        }
        (Some(Fault::ResetBeforeHead), false) => {
            return Err("gantry-faults: injected reset before the response head".into());
        }
        _ => {}
    }

    let body = read_all(body, &ctx.headers).await?;
    if let Some(reply) = ctx.wrong_region() {
        return Ok(ctx.finish(reply).await);
    }
    if let Some(reply) = ctx.express_refusal() {
        return Ok(ctx.finish(reply).await);
    }
    let reply = match ctx.fault {
        Some(Fault::Status { status, code }) => ctx.error(status, code),
        _ => ctx.dispatch(body).await,
    };
    if ctx.fault == Some(Fault::ResetAfterAct) {
        // The operation is done; the answer is dropped (hyper resets the connection).
        return Err("gantry-faults: injected reset after acting, before the response head".into());
    }
    Ok(ctx.finish(reply).await)
}

/// Reads the whole request body, without copying when it arrives as a single frame.
async fn read_all(mut body: Incoming, headers: &HeaderMap) -> Result<Bytes, BoxError> {
    let hint = header_str(headers, "content-length").and_then(|v| v.parse::<usize>().ok()).unwrap_or(0);
    let mut first: Option<Bytes> = None;
    let mut buf: Option<BytesMut> = None;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame?.into_data() else { continue };
        if let Some(b) = buf.as_mut() {
            b.extend_from_slice(&data);
        } else if let Some(f) = first.take() {
            let mut b =
                BytesMut::with_capacity(hint.clamp(f.len() + data.len(), MAX_PREALLOC.max(f.len() + data.len())));
            b.extend_from_slice(&f);
            b.extend_from_slice(&data);
            buf = Some(b);
        } else {
            first = Some(data);
        }
    }
    Ok(match (buf, first) {
        (Some(b), _) => b.freeze(),
        (None, Some(f)) => f,
        (None, None) => Bytes::new(),
    })
}

/// Reads about half of the request body (by Content-Length), for upload resets.
async fn read_half(mut body: Incoming, headers: &HeaderMap) {
    let total = header_str(headers, "content-length")
        .or_else(|| header_str(headers, "x-amz-decoded-content-length"))
        .and_then(|v| v.parse::<u64>().ok());
    let target = total.map_or(u64::MAX, |t| t / 2);
    let mut seen = 0u64;
    while seen < target {
        match body.frame().await {
            Some(Ok(frame)) => seen += frame.data_ref().map_or(0, |d| d.len() as u64),
            _ => break,
        }
    }
}

/// The decoded payload of an upload plus its verified checksum, if the client sent one.
struct Payload {
    data: Bytes,
    checksum: Option<(ChecksumAlgo, Vec<u8>)>,
}

fn is_aws_chunked(h: &HeaderMap) -> bool {
    header_str(h, "content-encoding")
        .is_some_and(|v| v.split(',').any(|e| e.trim().eq_ignore_ascii_case("aws-chunked")))
        || header_str(h, "x-amz-content-sha256").is_some_and(|v| v.starts_with("STREAMING-"))
}

fn find_crlf(b: &[u8], from: usize) -> Option<usize> {
    b.get(from..)?.windows(2).position(|w| w == b"\r\n").map(|i| from + i)
}

/// Decodes an `aws-chunked` body: `hex-size[;ext]\r\n<data>\r\n` until size 0, then trailer
/// lines `name:value\r\n` up to an empty line. `None` when malformed.
fn decode_aws_chunked(raw: &[u8]) -> Option<(Bytes, Vec<(String, String)>)> {
    let mut out = BytesMut::new();
    let mut pos = 0;
    loop {
        let eol = find_crlf(raw, pos)?;
        let line = std::str::from_utf8(&raw[pos..eol]).ok()?;
        let size = usize::from_str_radix(line.split(';').next()?.trim(), 16).ok()?;
        pos = eol + 2;
        if size == 0 {
            break;
        }
        let data = raw.get(pos..pos.checked_add(size)?)?;
        out.extend_from_slice(data);
        pos += size;
        if raw.get(pos..pos + 2)? != b"\r\n" {
            return None;
        }
        pos += 2;
    }
    let mut trailers = Vec::new();
    while pos < raw.len() {
        let eol = find_crlf(raw, pos).unwrap_or(raw.len());
        let line = std::str::from_utf8(&raw[pos..eol]).ok()?.trim();
        pos = eol + 2;
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        trailers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    Some((out.freeze(), trailers))
}

fn flip_middle(data: Bytes) -> Bytes {
    if data.is_empty() {
        return data;
    }
    let mut m = BytesMut::from(&data[..]);
    let mid = m.len() / 2;
    m[mid] ^= 0xff;
    m.freeze()
}

impl Ctx {
    fn q(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    fn h(&self, name: &str) -> Option<&str> {
        header_str(&self.headers, name)
    }

    fn is_head(&self) -> bool {
        self.method == Method::HEAD
    }

    /// An S3 error answer (no body for HEAD, like S3).
    /// S3's answer to a request signed for another region than the bucket's (see
    /// [`crate::FaultServer::set_bucket_region`]).
    fn wrong_region(&self) -> Option<Reply> {
        let want = self.state.bucket_regions.lock().unwrap_or_else(|e| e.into_inner()).get(&self.bucket).cloned()?;
        // Credential=AKID/20261123/REGION/s3/aws4_request
        let auth = header_str(&self.headers, "authorization")?;
        let scope = auth.split("Credential=").nth(1)?.split([',', ' ']).next()?;
        let signed = scope.split('/').nth(2)?;
        if signed == want {
            return None;
        }
        if self.is_head() {
            return Some(Reply::new(301).header("x-amz-bucket-region", &want));
        }
        let doc = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AuthorizationHeaderMalformed</Code>\
             <Message>The authorization header is malformed; the region '{signed}' is wrong; expecting '{want}'</Message>\
             <Region>{want}</Region><RequestId>{}</RequestId></Error>",
            self.request_id
        );
        Some(Reply::xml(400, doc).header("x-amz-bucket-region", &want))
    }

    /// A directory bucket's refusal of a request without a valid session (see
    /// [`crate::express`]); `None` when the request may go on.
    fn express_refusal(&self) -> Option<Reply> {
        let express = &self.state.express;
        if self.action == Action::CreateSession
            || !express.enabled()
            || !crate::express::is_directory_bucket(&self.bucket)
        {
            return None;
        }
        let writes = matches!(
            self.action,
            Action::Put
                | Action::CreateMpu
                | Action::UploadPart
                | Action::CopyObject
                | Action::UploadPartCopy
                | Action::Complete
                | Action::Abort
                | Action::Delete
                | Action::DeleteObjects
                | Action::CreateBucket
                | Action::DeleteBucket
        );
        let (status, code, message) =
            express.authorize(&self.bucket, &self.method, &self.raw_uri, &self.headers, writes).err()?;
        Some(self.error_msg(status, code, &message))
    }

    fn error(&self, status: u16, code: &str) -> Reply {
        self.error_msg(status, code, s3xml::error_message(code))
    }

    fn error_msg(&self, status: u16, code: &str, message: &str) -> Reply {
        if self.is_head() {
            return Reply::new(status);
        }
        Reply::xml(status, s3xml::error_doc(code, message, &self.path, &self.request_id))
    }

    fn store(&self) -> std::sync::MutexGuard<'_, crate::store::Store> {
        self.state.store()
    }

    async fn dispatch(&self, body: Bytes) -> Reply {
        match self.action {
            Action::Get | Action::Head => self.get_object(),
            Action::Put => self.put_object(body),
            Action::CreateMpu => self.create_mpu(),
            Action::UploadPart => self.upload_part(body),
            Action::CopyObject => self.copy_object(),
            Action::UploadPartCopy => self.upload_part_copy(),
            Action::Complete => self.complete(body),
            Action::Abort => {
                match self.store().remove_upload(&self.bucket, &self.key, self.q("uploadId").unwrap_or("")) {
                    Ok(_) => Reply::new(204),
                    Err(code) => self.error(404, code),
                }
            }
            Action::ListUploads => self.list_uploads(),
            Action::ListV2 => self.list_v2(),
            Action::Delete => match self.store().delete(&self.bucket, &self.key) {
                Ok(()) => Reply::new(204),
                Err(code) => self.error(404, code),
            },
            Action::CreateBucket => {
                self.store().create_bucket(&self.bucket);
                Reply::new(200).header("location", &format!("/{}", self.bucket))
            }
            Action::HeadBucket => {
                if self.store().has_bucket(&self.bucket) {
                    Reply::new(200).header("x-amz-bucket-region", "us-east-1")
                } else {
                    Reply::new(404)
                }
            }
            Action::DeleteBucket => match self.store().delete_bucket(&self.bucket) {
                Ok(()) => Reply::new(204),
                Err(code @ "BucketNotEmpty") => self.error(409, code),
                Err(code) => self.error(404, code),
            },
            Action::ListBuckets => {
                let list: Vec<_> = self.store().buckets().into_iter().map(|(n, t)| (n, iso8601(t))).collect();
                Reply::xml(200, s3xml::list_buckets_doc(&list))
            }
            Action::Location => {
                if self.store().has_bucket(&self.bucket) {
                    Reply::xml(200, s3xml::location_doc())
                } else {
                    self.error(404, "NoSuchBucket")
                }
            }
            Action::DeleteObjects => self.delete_objects(&body),
            Action::Attributes if self.state.reject_attributes.load(Ordering::Relaxed) => {
                self.error(501, "NotImplemented")
            }
            Action::Attributes => self.object_attributes(),
            Action::CreateSession => {
                match self.state.express.create_session(&self.bucket, &self.method, &self.raw_uri, &self.headers) {
                    Ok(doc) => Reply::xml(200, doc),
                    Err((status, code, message)) => self.error_msg(status, code, &message),
                }
            }
            Action::Unsupported => self.error(501, "NotImplemented"),
        }
    }

    fn get_object(&self) -> Reply {
        let obj = match self.store().get(&self.bucket, &self.key) {
            Ok(o) => o,
            Err(code) => return self.error(404, code),
        };
        let etag = unquote(&obj.etag);
        if let Some(im) = self.h("if-match") {
            if !im.split(',').any(|t| t.trim() == "*" || unquote(t) == etag) {
                return self.error(412, "PreconditionFailed");
            }
        }
        if let Some(inm) = self.h("if-none-match") {
            if inm.split(',').any(|t| t.trim() == "*" || unquote(t) == etag) {
                return Reply::new(304).header("etag", &obj.etag);
            }
        }
        let total = obj.data.len() as u64;
        // GET ?partNumber=N: that upload part's bytes (S3: 206, its Content-Range, the
        // object's part count, and with checksum mode the *part's* checksum). A single-PUT
        // object has one part.
        let part = match self.q("partNumber") {
            None => None,
            Some(n) => {
                let count = obj.parts.len().max(1);
                match n.parse::<usize>() {
                    Ok(n) if (1..=count).contains(&n) => Some(n),
                    _ => {
                        return self.error_msg(416, "InvalidPartNumber", "The requested partnumber is not satisfiable")
                    }
                }
            }
        };
        let range = if self.is_head() || part.is_some() { None } else { self.h("range").and_then(parse_range) };
        let (status, start, end) = match (part, range) {
            (Some(n), _) if !obj.parts.is_empty() => {
                let start: u64 = obj.parts[..n - 1].iter().map(|p| p.size).sum();
                (206, start, start + obj.parts[n - 1].size)
            }
            (Some(_), _) => (206, 0, total),
            (None, None) => (200, 0, total),
            (None, Some(spec)) => match spec.resolve(total) {
                Some((a, b)) => (206, a, b + 1),
                None => {
                    return self.error(416, "InvalidRange").header("content-range", &format!("bytes */{total}"));
                }
            },
        };
        let mut r = Reply::new(status)
            .header("etag", &obj.etag)
            .header("last-modified", &http_date(obj.last_modified))
            .header("content-type", "application/octet-stream")
            .header("accept-ranges", "bytes")
            .header("content-length", &(end - start).to_string());
        if status == 206 {
            r = r.header("content-range", &format!("bytes {start}-{}/{total}", end.saturating_sub(1)));
        }
        if part.is_some() && !obj.parts.is_empty() {
            r = r.header("x-amz-mp-parts-count", &obj.parts.len().to_string());
        }
        let whole = start == 0 && end == total;
        let mode = self.h("x-amz-checksum-mode").is_some_and(|m| m.eq_ignore_ascii_case("ENABLED"));
        match part {
            Some(n) if mode && !obj.parts.is_empty() => {
                for (algo, value) in &obj.parts[n - 1].checksums {
                    r = r.header(algo.header(), &algo.encode(value));
                }
                if !obj.parts[n - 1].checksums.is_empty() {
                    r = r.header("x-amz-checksum-type", "FULL_OBJECT");
                }
            }
            _ if mode && whole => {
                for (algo, value) in &obj.checksums {
                    // A composite value carries the part count, as S3 sends it.
                    let text = match obj.composite {
                        true => format!("{}-{}", algo.encode(value), obj.parts.len()),
                        false => algo.encode(value),
                    };
                    r = r.header(algo.header(), &text);
                }
                if !obj.checksums.is_empty() {
                    r = r.header("x-amz-checksum-type", if obj.composite { "COMPOSITE" } else { "FULL_OBJECT" });
                }
            }
            _ => {}
        }
        if !self.is_head() {
            r.body = obj.data.slice(start as usize..end as usize);
        }
        r
    }

    /// Decodes (aws-chunked), corrupts (FlipByte) and verifies an upload body. `Err` is the
    /// error answer to send.
    fn payload(&self, raw: Bytes) -> Result<Payload, Box<Reply>> {
        let mut claims: Vec<(ChecksumAlgo, String)> =
            ChecksumAlgo::ALL.into_iter().filter_map(|a| self.h(a.header()).map(|v| (a, v.to_string()))).collect();
        let data = if is_aws_chunked(&self.headers) {
            if self.state.reject_trailers.load(Ordering::Relaxed) {
                return Err(Box::new(self.error(501, "NotImplemented")));
            }
            let Some(decoded_len) = self.h("x-amz-decoded-content-length").and_then(|v| v.parse::<usize>().ok()) else {
                return Err(Box::new(self.error(411, "MissingContentLength")));
            };
            let Some((data, trailers)) = decode_aws_chunked(&raw) else {
                return Err(Box::new(self.error(400, "IncompleteBody")));
            };
            if data.len() != decoded_len {
                return Err(Box::new(self.error(400, "IncompleteBody")));
            }
            for declared in self.h("x-amz-trailer").unwrap_or("").split(',').map(str::trim).filter(|s| !s.is_empty()) {
                if !trailers.iter().any(|(n, _)| n.eq_ignore_ascii_case(declared)) {
                    return Err(Box::new(self.error(400, "MalformedTrailerError")));
                }
            }
            claims.extend(trailers.iter().filter_map(|(n, v)| ChecksumAlgo::from_header(n).map(|a| (a, v.clone()))));
            data
        } else {
            raw
        };
        let data = if self.fault == Some(Fault::FlipByte) { flip_middle(data) } else { data };
        let Some((algo, value)) = claims.first().cloned() else {
            return Ok(Payload { data, checksum: None });
        };
        if claims.iter().any(|(a, v)| *a != algo || *v != value) {
            return Err(Box::new(self.error_msg(
                400,
                "InvalidRequest",
                "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.",
            )));
        }
        let Some(claimed) = algo.decode(&value) else {
            return Err(Box::new(self.error_msg(
                400,
                "InvalidRequest",
                &format!("Value for {} header is invalid.", algo.header()),
            )));
        };
        if algo.compute(&data) != claimed {
            return Err(Box::new(self.error(400, "BadDigest")));
        }
        Ok(Payload { data, checksum: Some((algo, claimed)) })
    }

    fn reject_transfer_encoding(&self) -> Option<Reply> {
        self.headers.contains_key(header::TRANSFER_ENCODING).then(|| {
            self.error_msg(501, "NotImplemented", "Transfer-Encoding is not supported; send a Content-Length.")
        })
    }

    fn put_object(&self, raw: Bytes) -> Reply {
        if let Some(r) = self.reject_transfer_encoding() {
            return r;
        }
        if !self.store().has_bucket(&self.bucket) {
            return self.error(404, "NoSuchBucket");
        }
        let p = match self.payload(raw) {
            Ok(p) => p,
            Err(r) => return *r,
        };
        if let Some(offset) = self.h("x-amz-write-offset-bytes") {
            return self.append(offset, p);
        }
        let draft = Draft::with_known(p.data, p.checksum.clone());
        let obj = match self.store().put(&self.bucket, &self.key, draft, None, false) {
            Ok(o) => o,
            Err(code) => return self.error(404, code),
        };
        let mut r = Reply::new(200).header("etag", &obj.etag);
        if let Some((algo, v)) = &p.checksum {
            r = r.header(algo.header(), &algo.encode(v)).header("x-amz-checksum-type", "FULL_OBJECT");
        }
        r
    }

    /// S3 Express One Zone's append (PutObject with `x-amz-write-offset-bytes`): only in
    /// directory buckets; the offset must be the object's size (0 creates it), else 400
    /// `InvalidWriteOffset`. The stored object gets fresh full-object checksums of all its
    /// bytes. Check and write happen under one lock, so concurrent appends at the same offset
    /// see exactly one succeed.
    fn append(&self, offset: &str, p: Payload) -> Reply {
        if !crate::express::is_directory_bucket(&self.bucket) {
            return self.error_msg(501, "NotImplemented", "appends are supported in directory buckets only");
        }
        let Ok(offset) = offset.parse::<u64>() else {
            return self.error_msg(400, "InvalidArgument", "x-amz-write-offset-bytes is not a number");
        };
        let mut store = self.store();
        let current = store.get(&self.bucket, &self.key).ok();
        let size = current.as_ref().map_or(0, |o| o.data.len() as u64);
        if offset != size || (current.is_none() && offset != 0) {
            return self.error_msg(
                400,
                "InvalidWriteOffset",
                "The write offset value that you specified does not match the current object size.",
            );
        }
        let mut data = BytesMut::with_capacity(size as usize + p.data.len());
        if let Some(o) = &current {
            data.extend_from_slice(&o.data);
        }
        data.extend_from_slice(&p.data);
        let draft = Draft::new(data.freeze(), p.checksum.as_ref().map(|(a, _)| *a));
        match store.put(&self.bucket, &self.key, draft, None, false) {
            Ok(obj) => Reply::new(200).header("etag", &obj.etag),
            Err(code) => self.error(404, code),
        }
    }

    /// The object `x-amz-copy-source` names (`bucket/key`, percent-encoded, an optional leading
    /// `/` and `?versionId=`, which this server has no versions for), checked against
    /// `x-amz-copy-source-if-match` (412 `PreconditionFailed` when the source changed).
    fn copy_source(&self) -> Result<Arc<crate::store::Object>, Box<Reply>> {
        let raw = self.h("x-amz-copy-source").unwrap_or("");
        let raw = raw.split_once("?versionId=").map_or(raw, |(p, _)| p);
        let decoded = percent_decode(raw);
        let Some((bucket, key)) =
            decoded.trim_start_matches('/').split_once('/').filter(|(b, k)| !b.is_empty() && !k.is_empty())
        else {
            return Err(Box::new(self.error_msg(
                400,
                "InvalidArgument",
                "Copy Source must mention the source bucket and key: sourcebucket/sourcekey.",
            )));
        };
        let obj = self.store().get(bucket, key).map_err(|code| Box::new(self.error(404, code)))?;
        if let Some(want) = self.h("x-amz-copy-source-if-match") {
            if want.trim_matches('"') != obj.etag.trim_matches('"') {
                return Err(Box::new(self.error(412, "PreconditionFailed")));
            }
        }
        Ok(obj)
    }

    /// CopyObject: the source's bytes become a new object (checksums computed afresh, as S3
    /// does when `x-amz-checksum-algorithm` is given or the source's was composite).
    fn copy_object(&self) -> Reply {
        let src = match self.copy_source() {
            Ok(o) => o,
            Err(r) => return *r,
        };
        let extra = match self.h("x-amz-checksum-algorithm") {
            None => None,
            Some(v) => match ChecksumAlgo::from_name(v) {
                Some(a) => Some(a),
                None => return self.error_msg(400, "InvalidRequest", "Unsupported x-amz-checksum-algorithm."),
            },
        };
        let obj = match self.store().put(&self.bucket, &self.key, Draft::new(src.data.clone(), extra), None, false) {
            Ok(o) => o,
            Err(code) => return self.error(404, code),
        };
        let checksums: Vec<_> = obj.checksums.iter().map(|(a, v)| (a.xml_name(), a.encode(v))).collect();
        Reply::xml(200, s3xml::copy_result_doc("CopyObjectResult", &obj.etag, &iso8601(obj.last_modified), &checksums))
    }

    /// The part number, upload id and the upload's checksum algorithm of an UploadPart or
    /// UploadPartCopy, or the answer refusing them (a bad number, an unknown upload).
    fn part_target(&self) -> Result<(u32, String, Option<ChecksumAlgo>), Box<Reply>> {
        let Some(number) =
            self.q("partNumber").and_then(|v| v.parse::<u32>().ok()).filter(|n| (1..=10_000).contains(n))
        else {
            return Err(Box::new(self.error_msg(
                400,
                "InvalidArgument",
                "Part number must be an integer between 1 and 10000, inclusive",
            )));
        };
        let id = self.q("uploadId").unwrap_or("").to_string();
        match self.store().upload(&self.bucket, &self.key, &id) {
            Ok(u) => Ok((number, id.clone(), u.algorithm)),
            Err(code) => Err(Box::new(self.error(404, code))),
        }
    }

    /// UploadPartCopy: bytes `x-amz-copy-source-range` (or all) of the source become a part;
    /// the answer carries the part's checksum when the upload declared an algorithm.
    fn upload_part_copy(&self) -> Reply {
        let (number, id, algo) = match self.part_target() {
            Ok(t) => t,
            Err(r) => return *r,
        };
        let src = match self.copy_source() {
            Ok(o) => o,
            Err(r) => return *r,
        };
        let len = src.data.len() as u64;
        let range = match self.h("x-amz-copy-source-range") {
            None => 0..len,
            Some(v) => {
                let parsed = v
                    .strip_prefix("bytes=")
                    .and_then(|r| r.split_once('-'))
                    .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)));
                match parsed {
                    Some((a, b)) if a <= b && b < len => a..b + 1,
                    _ => return self.error_msg(400, "InvalidArgument", "The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy"),
                }
            }
        };
        let data = src.data.slice(range.start as usize..range.end as usize);
        let crc64 = crate::checksum::crc64(&data);
        let checksum = algo.map(|a| (a.xml_name(), a.encoded(&data)));
        let etag = match self.store().put_part(&self.bucket, &self.key, &id, number, data, crc64) {
            Ok(e) => e,
            Err(code) => return self.error(404, code),
        };
        let checksums: Vec<_> = checksum.into_iter().collect();
        Reply::xml(
            200,
            s3xml::copy_result_doc("CopyPartResult", &etag, &iso8601(std::time::SystemTime::now()), &checksums),
        )
    }

    fn create_mpu(&self) -> Reply {
        let algo = match self.h("x-amz-checksum-algorithm") {
            None => None,
            Some(v) => match ChecksumAlgo::from_name(v) {
                Some(a) => Some(a),
                None => return self.error_msg(400, "InvalidRequest", "Unsupported x-amz-checksum-algorithm."),
            },
        };
        let ctype = self.h("x-amz-checksum-type").map(|v| v.to_ascii_uppercase());
        if ctype.as_deref().is_some_and(|t| t != "COMPOSITE" && t != "FULL_OBJECT") {
            return self.error_msg(400, "InvalidRequest", "Value for x-amz-checksum-type header is invalid.");
        }
        let id = match self.store().create_upload(&self.bucket, &self.key, algo, ctype.clone()) {
            Ok(id) => id,
            Err(code) => return self.error(404, code),
        };
        let mut r = Reply::xml(200, s3xml::initiate_doc(&self.bucket, &self.key, &id));
        if let Some(a) = algo {
            r = r.header("x-amz-checksum-algorithm", a.name());
        }
        if let Some(t) = &ctype {
            r = r.header("x-amz-checksum-type", t);
        }
        r
    }

    fn upload_part(&self, raw: Bytes) -> Reply {
        if let Some(r) = self.reject_transfer_encoding() {
            return r;
        }
        let (number, id, algo) = match self.part_target() {
            Ok(t) => t,
            Err(r) => return *r,
        };
        let p = match self.payload(raw) {
            Ok(p) => p,
            Err(r) => return *r,
        };
        if let (Some(expected), Some((got, _))) = (algo, &p.checksum) {
            let got = *got;
            if expected != got {
                return self.error_msg(
                    400,
                    "InvalidRequest",
                    &format!(
                        "Checksum Type mismatch occurred, expected checksum Type: {}, actual checksum Type: {}",
                        expected.name().to_lowercase(),
                        got.name().to_lowercase()
                    ),
                );
            }
        }
        let crc64 = crate::checksum::crc64(&p.data);
        let etag = match self.store().put_part(&self.bucket, &self.key, &id, number, p.data, crc64) {
            Ok(e) => e,
            Err(code) => return self.error(404, code),
        };
        let mut r = Reply::new(200).header("etag", &etag);
        if let Some((algo, v)) = &p.checksum {
            r = r.header(algo.header(), &algo.encode(v));
        }
        r
    }

    fn complete(&self, body: Bytes) -> Reply {
        let id = self.q("uploadId").unwrap_or("").to_string();
        let (algo, stored) = match self.store().upload(&self.bucket, &self.key, &id) {
            Ok(u) => (u.algorithm, u.parts.clone()),
            Err(code) => return self.error(404, code),
        };
        let Some(parts) = s3xml::parse_complete(&body) else {
            return self.error(400, "MalformedXML");
        };
        if parts.windows(2).any(|w| w[0].part_number >= w[1].part_number) {
            return self.error(400, "InvalidPartOrder");
        }
        let mut datas = Vec::with_capacity(parts.len());
        for (i, p) in parts.iter().enumerate() {
            let Some(sp) = stored.get(&p.part_number).filter(|sp| unquote(&sp.etag) == unquote(&p.etag)) else {
                return self.error(400, "InvalidPart");
            };
            let claimed = [
                (ChecksumAlgo::Crc32, &p.crc32),
                (ChecksumAlgo::Crc32c, &p.crc32c),
                (ChecksumAlgo::Crc64Nvme, &p.crc64nvme),
                (ChecksumAlgo::Sha1, &p.sha1),
                (ChecksumAlgo::Sha256, &p.sha256),
            ];
            for (a, v) in claimed {
                if let Some(v) = v {
                    if a.decode(v) != Some(a.compute(&sp.data)) {
                        return self.error(400, "InvalidPart");
                    }
                }
            }
            if i + 1 < parts.len() && sp.data.len() < MIN_PART_SIZE {
                return self.error(400, "EntityTooSmall");
            }
            datas.push(sp.data.clone());
        }
        // What GetObjectAttributes lists: each part's size and, when the upload declared an
        // algorithm, that part's checksum (S3 keeps the checksums the parts were sent with).
        let metas: Vec<PartMeta> = datas
            .iter()
            .map(|d| PartMeta {
                size: d.len() as u64,
                checksums: algo.map(|a| vec![(a, a.compute(d))]).unwrap_or_default(),
            })
            .collect();
        let total: usize = datas.iter().map(Bytes::len).sum();
        let mut buf = BytesMut::with_capacity(total);
        for d in &datas {
            buf.extend_from_slice(d);
        }
        let mut data = buf.freeze();
        if self.fault == Some(Fault::FlipByte) {
            data = flip_middle(data);
        }
        let mut known = None;
        for a in ChecksumAlgo::ALL {
            if let Some(v) = self.h(a.header()) {
                let actual = a.compute(&data);
                if a.decode(v).as_ref() != Some(&actual) {
                    return self.error(400, "BadDigest");
                }
                known = Some((a, actual));
            }
        }
        let extra = algo.or(known.as_ref().map(|k| k.0));
        let draft = match known {
            Some(k) if Some(k.0) == extra => Draft::with_known(data, Some(k)),
            _ => Draft::new(data, extra),
        }
        .with_parts(metas);
        let obj = {
            let mut store = self.store();
            if let Err(code) = store.remove_upload(&self.bucket, &self.key, &id) {
                return self.error(404, code);
            }
            match store.put(&self.bucket, &self.key, draft, Some(parts.len()), false) {
                Ok(o) => o,
                Err(code) => return self.error(404, code),
            }
        };
        let host = self.h("host").unwrap_or("localhost");
        let location = format!("http://{host}/{}/{}", self.bucket, crate::http_util::percent_encode_key(&self.key));
        let shown = extra.unwrap_or(ChecksumAlgo::Crc64Nvme);
        let value = obj.checksums.iter().find(|(a, _)| *a == shown).map(|(a, v)| a.encode(v));
        let checksum = value.as_deref().map(|v| (shown.xml_name(), v));
        Reply::xml(200, s3xml::complete_doc(&location, &self.bucket, &self.key, &obj.etag, checksum))
    }

    /// GetObjectAttributes (`GET /bucket/key?attributes`), as S3 answers it: only the
    /// attributes named in `x-amz-object-attributes`; the ETag unquoted; `Checksum` with the
    /// object's value (composite ones with their `-N`) and type; `ObjectParts` only for a
    /// multipart object, paged by `x-amz-max-parts` / `x-amz-part-number-marker`, each part
    /// with the checksums its upload sent. See [`crate::FaultServer::set_reject_attributes`]
    /// for stores that do not implement it.
    fn object_attributes(&self) -> Reply {
        let obj = match self.store().get(&self.bucket, &self.key) {
            Ok(o) => o,
            Err(code) => return self.error(404, code),
        };
        let wanted: Vec<String> = self
            .h("x-amz-object-attributes")
            .unwrap_or("")
            .split(',')
            .map(|a| a.trim().to_ascii_lowercase())
            .filter(|a| !a.is_empty())
            .collect();
        if wanted.is_empty() {
            return self.error_msg(400, "InvalidArgument", "Invalid attribute name specified.");
        }
        let wants = |name: &str| wanted.iter().any(|w| w == name);
        let max_parts = match self.h("x-amz-max-parts").map(str::parse::<u32>) {
            None => DEFAULT_MAX_PARTS,
            Some(Ok(n)) => n.min(DEFAULT_MAX_PARTS),
            Some(Err(_)) => return self.error_msg(400, "InvalidArgument", "Invalid max-parts"),
        };
        let marker = match self.h("x-amz-part-number-marker").map(str::parse::<u32>) {
            None => 0,
            Some(Ok(n)) => n,
            Some(Err(_)) => return self.error_msg(400, "InvalidArgument", "Invalid part-number-marker"),
        };
        let checksum = obj.checksums.last().filter(|_| wants("checksum")).map(|(a, v)| {
            let value = match obj.composite {
                true => format!("{}-{}", a.encode(v), obj.parts.len()),
                false => a.encode(v),
            };
            (a.xml_name(), value, if obj.composite { "COMPOSITE" } else { "FULL_OBJECT" })
        });
        let object_parts = (wants("objectparts") && !obj.parts.is_empty()).then(|| {
            let from = marker as usize;
            let page: Vec<_> = obj
                .parts
                .iter()
                .enumerate()
                .skip(from)
                .take(max_parts as usize)
                .map(|(i, p)| {
                    let sums = p.checksums.iter().map(|(a, v)| (a.xml_name(), a.encode(v))).collect();
                    (i as u32 + 1, p.size, sums)
                })
                .collect();
            let last = page.last().map_or(marker, |(n, _, _)| *n);
            s3xml::AttributeParts {
                marker,
                max_parts,
                next_marker: ((last as usize) < obj.parts.len()).then_some(last),
                count: obj.parts.len(),
                parts: page,
            }
        });
        let doc = s3xml::attributes_doc(&s3xml::Attributes {
            etag: wants("etag").then(|| unquote(&obj.etag).to_string()),
            checksum,
            object_parts,
            object_size: wants("objectsize").then_some(obj.data.len() as u64),
        });
        Reply::xml(200, doc).header("etag", &obj.etag).header("last-modified", &http_date(obj.last_modified))
    }

    fn list_uploads(&self) -> Reply {
        let prefix = self.q("prefix").unwrap_or("");
        match self.store().list_uploads(&self.bucket, prefix) {
            Ok(list) => {
                let entries: Vec<_> = list
                    .into_iter()
                    .map(|(key, upload_id, u)| s3xml::UploadEntry {
                        key,
                        upload_id,
                        initiated: iso8601(u.initiated),
                        algorithm: u.algorithm.map(ChecksumAlgo::name),
                        checksum_type: u.checksum_type.clone(),
                    })
                    .collect();
                Reply::xml(200, s3xml::list_uploads_doc(&self.bucket, prefix, &entries))
            }
            Err(code) => self.error(404, code),
        }
    }

    fn list_v2(&self) -> Reply {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let prefix = self.q("prefix").unwrap_or("").to_string();
        let delimiter = self.q("delimiter").filter(|d| !d.is_empty()).map(str::to_string);
        let max_keys = match self.q("max-keys").map(str::parse::<usize>) {
            None => 1000,
            Some(Ok(n)) => n.min(1000),
            Some(Err(_)) => {
                return self.error_msg(
                    400,
                    "InvalidArgument",
                    "Provided max-keys not an integer or within integer range",
                )
            }
        };
        let token = self.q("continuation-token").map(str::to_string);
        let marker = match &token {
            Some(t) => {
                let decoded = b64.decode(t).ok().and_then(|b| String::from_utf8(b).ok());
                match decoded.as_deref().and_then(|d| d.split_at_checked(2)) {
                    Some(("K:", k)) => Some(Marker::Key(k.to_string())),
                    Some(("P:", p)) => Some(Marker::Prefix(p.to_string())),
                    _ => return self.error_msg(400, "InvalidArgument", "The continuation token provided is incorrect"),
                }
            }
            None => self.q("start-after").filter(|s| !s.is_empty()).map(|s| Marker::Key(s.to_string())),
        };
        let page = match self.store().list(&self.bucket, &prefix, delimiter.as_deref(), marker.as_ref(), max_keys) {
            Ok(p) => p,
            Err(code) => return self.error(404, code),
        };
        let next_token = page.next.map(|m| match m {
            Marker::Key(k) => b64.encode(format!("K:{k}")),
            Marker::Prefix(p) => b64.encode(format!("P:{p}")),
        });
        let doc = s3xml::list_v2_doc(&s3xml::ListV2 {
            bucket: self.bucket.clone(),
            prefix,
            delimiter,
            max_keys,
            continuation_token: token,
            start_after: self.q("start-after").map(str::to_string),
            next_token,
            url_encoding: self.q("encoding-type") == Some("url"),
            contents: page
                .objects
                .into_iter()
                .map(|(key, o)| s3xml::ObjectEntry {
                    key,
                    size: o.data.len() as u64,
                    etag: o.etag.clone(),
                    last_modified: iso8601(o.last_modified),
                })
                .collect(),
            common_prefixes: page.prefixes,
        });
        Reply::xml(200, doc)
    }

    fn delete_objects(&self, body: &[u8]) -> Reply {
        let Some((keys, quiet)) = s3xml::parse_delete(body) else {
            return self.error(400, "MalformedXML");
        };
        // S3 authorizes each key of a batch as its own s3:DeleteObject: a key a policy denies
        // comes back as an <Error> entry of a 200 answer while the rest are deleted. A rule on
        // DeleteObject with a key and a Status fault reproduces that per key.
        let refused: Vec<(String, &'static str)> = {
            let mut rules = self.state.rules.lock().unwrap_or_else(|e| e.into_inner());
            keys.iter()
                .filter_map(|k| {
                    let info = RequestInfo { op: Op::DeleteObject, key: Some(k), range_start: None, part_number: None };
                    match rules.evaluate(&info) {
                        Some(Fault::Status { code, .. }) => Some((k.clone(), code)),
                        _ => None,
                    }
                })
                .collect()
        };
        let mut deleted = Vec::new();
        let mut store = self.store();
        for k in keys.iter().filter(|k| !refused.iter().any(|(r, _)| r == *k)) {
            if let Err(code) = store.delete(&self.bucket, k) {
                drop(store);
                return self.error(404, code);
            }
            deleted.push(k.clone());
        }
        drop(store);
        Reply::xml(200, s3xml::delete_result_doc(if quiet { &[] } else { &deleted }, &refused))
    }

    /// Applies shaping and response-side faults, then builds the hyper response.
    async fn finish(self, reply: Reply) -> Response<RespBody> {
        let Reply { status, mut headers, body } = reply;
        let shaping = self.state.shaping();
        let carries = self.op.carries_body();
        let has_body = !body.is_empty() && !self.is_head();
        let mut delay =
            if matches!(self.op, Op::GetObject | Op::HeadObject) { shaping.first_byte_delay } else { Duration::ZERO };
        let mut plan = BodyPlan::default();
        let len = body.len();
        match &self.fault {
            Some(Fault::Stall(d)) if has_body && !carries => plan.stall = Some(*d),
            Some(Fault::Stall(d)) => delay += *d,
            Some(Fault::ResetMidBody) if !carries => plan.cut = Some((len / 2, EndAction::Reset)),
            Some(Fault::ShortBody) if !carries => plan.cut = Some((len / 2, EndAction::Fin)),
            Some(Fault::Trickle { bytes_per_sec }) if !carries => {
                plan.rate = Some(*bytes_per_sec);
                plan.paced_chunk = Some(paced_chunk(*bytes_per_sec, 20).min(TRICKLE_MAX_CHUNK));
            }
            Some(Fault::FlipByte) if !carries && len > 0 => plan.flip_at = Some(len / 2),
            Some(Fault::WrongEtag) if headers.contains_key(header::ETAG) => {
                let wrong = format!("\"{:016x}{:016x}\"", 0xbad_e7a6_u64, self.state.next_counter());
                headers.insert(header::ETAG, hv(&wrong));
            }
            _ => {}
        }
        if self.op == Op::GetObject {
            if let Some(cap) = shaping.conn_rate_bytes_per_sec.filter(|c| *c > 0) {
                plan.rate = Some(plan.rate.map_or(cap, |r| r.min(cap)));
                let chunk = paced_chunk(cap, 50);
                plan.paced_chunk = Some(plan.paced_chunk.map_or(chunk, |c| c.min(chunk)));
            }
        }
        // Pacing runs on the nominal clock (answer due at arrival + delay), so timer slack on
        // the first-byte sleep is not added again to the body's schedule.
        let due = tokio::time::Instant::now() + delay;
        if plan.stall.is_none() {
            plan.origin = Some(due);
        }
        if !delay.is_zero() {
            tokio::time::sleep_until(due).await;
        }
        if !headers.contains_key(header::CONTENT_LENGTH) && status != 204 && status != 304 {
            headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
        }
        headers.insert("x-amz-request-id", hv(&self.request_id));
        headers.insert("x-amz-id-2", hv(&format!("gantry-faults/{}", self.request_id)));
        headers.insert(header::SERVER, HeaderValue::from_static("gantry-faults"));
        let body: RespBody = if has_body {
            plan.into_body(body, self.ctl.clone())
        } else {
            Empty::new().map_err(|never| match never {}).boxed_unsync()
        };
        let mut resp = Response::new(body);
        *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        *resp.headers_mut() = headers;
        resp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aws_chunked_decoding() {
        let raw = b"5;chunk-signature=abc\r\nhello\r\n6\r\n world\r\n0\r\nx-amz-checksum-crc32c:AAAAAA==\r\n\r\n";
        let (data, trailers) = decode_aws_chunked(raw).unwrap();
        assert_eq!(&data[..], b"hello world");
        assert_eq!(trailers, [("x-amz-checksum-crc32c".to_string(), "AAAAAA==".to_string())]);
        assert!(decode_aws_chunked(b"5\r\nhel").is_none());
        assert!(decode_aws_chunked(b"zz\r\n").is_none());
        let (data, trailers) = decode_aws_chunked(b"0\r\n\r\n").unwrap();
        assert!(data.is_empty() && trailers.is_empty());
    }

    #[test]
    fn classification() {
        let h = HeaderMap::new();
        let q = |s: &str| parse_query(Some(s));
        let c = |m: Method, b: Option<&str>, k: Option<&str>, qs: &str| classify(&m, b, k, &q(qs), &h);
        assert_eq!(c(Method::GET, Some("b"), Some("k"), "x-id=GetObject"), Action::Get);
        assert_eq!(c(Method::PUT, Some("b"), Some("k"), "partNumber=1&uploadId=u"), Action::UploadPart);
        assert_eq!(c(Method::POST, Some("b"), Some("k"), "uploads"), Action::CreateMpu);
        assert_eq!(c(Method::POST, Some("b"), Some("k"), "uploadId=u"), Action::Complete);
        assert_eq!(c(Method::DELETE, Some("b"), Some("k"), "uploadId=u"), Action::Abort);
        assert_eq!(c(Method::GET, Some("b"), None, "uploads"), Action::ListUploads);
        assert_eq!(c(Method::GET, Some("b"), None, "list-type=2&prefix=a"), Action::ListV2);
        assert_eq!(c(Method::GET, Some("b"), None, "versioning"), Action::Unsupported);
        assert_eq!(c(Method::PUT, Some("b"), None, ""), Action::CreateBucket);
        assert_eq!(c(Method::GET, Some("b"), Some("k"), "tagging"), Action::Unsupported);
        assert_eq!(c(Method::GET, None, None, ""), Action::ListBuckets);
    }
}
