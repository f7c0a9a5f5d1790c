//! An in-memory [`ObjectClient`] that injects faults: what the driver unit tests run on.
//!
//! Objects live in a map; every request is logged (operation, range, condition); faults are
//! queued per operation and consumed by the next matching request. Delays use tokio's clock,
//! so a test on a paused clock sees a 20 ms first byte or a 10 s stall in no real time.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;

use super::{GetPart, ObjectClient, ResponseBody};
use crate::checksum::{ChecksumAlgorithm, Claim, Crc, S3ChecksumAlgorithm};
use crate::config::RetryConfig;
use crate::error::{Error, ErrorKind, Operation};
use crate::metrics::Metrics;
use crate::retry::RetryPolicy;
use crate::s3::copy_object::{Copied, CopySource};
use crate::s3::get_object::RangeHead;
use crate::s3::get_object_attributes::ObjectParts;
use crate::s3::upload_part::UploadedPart;
use crate::types::{ListOptions, ListPage, ObjectInfo, ObjectSummary};
use crate::upload::options::PutOptions;

/// A request the mock received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Call {
    pub(crate) op: Operation,
    pub(crate) key: String,
    /// GETs: the range asked for.
    pub(crate) range: Option<std::ops::Range<u64>>,
    pub(crate) if_match: Option<String>,
    /// UploadPart: the part number.
    pub(crate) part: u32,
}

/// What goes wrong with the next matching request.
#[derive(Clone)]
pub(crate) enum Fault {
    /// Answer with this error (an HTTP status makes it look like a server's answer).
    Fail(ErrorKind, Option<u16>),
    /// Answer normally, but break the body (a connection reset) after this many bytes.
    CutBodyAfter(u64),
    /// Wait this long before answering.
    Delay(Duration),
    /// Answer at once, but wait this long before every chunk of the body.
    SlowBody(Duration),
    /// Run this before answering (replace the object, say).
    Hook(Arc<dyn Fn(&MockStore) + Send + Sync>),
}

#[derive(Debug, Default)]
struct Upload {
    key: String,
    parts: HashMap<u32, Bytes>,
}

/// The in-memory store.
#[derive(Debug)]
pub(crate) struct MockStore {
    objects: Mutex<HashMap<String, (Bytes, String)>>,
    uploads: Mutex<HashMap<String, Upload>>,
    faults: Mutex<Vec<(Operation, Option<u64>, Fault)>>,
    calls: Mutex<Vec<Call>>,
    retry: RetryPolicy,
    checksum: Option<ChecksumAlgorithm>,
    /// Bytes per body chunk.
    chunk: usize,
    /// Every answer's first byte waits this long.
    pub(crate) first_byte: Mutex<Duration>,
    /// Whether whole-object GETs carry a CRC64NVME checksum (as S3 does for new objects).
    pub(crate) send_checksums: bool,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    next_id: AtomicUsize,
}

impl std::fmt::Debug for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::Fail(kind, status) => write!(f, "Fail({kind:?}, {status:?})"),
            Fault::CutBodyAfter(n) => write!(f, "CutBodyAfter({n})"),
            Fault::Delay(d) => write!(f, "Delay({d:?})"),
            Fault::SlowBody(d) => write!(f, "SlowBody({d:?})"),
            Fault::Hook(_) => f.write_str("Hook"),
        }
    }
}

impl MockStore {
    /// An empty store whose retries follow `retry` (backoff on tokio's clock).
    pub(crate) fn new(retry: RetryConfig) -> Self {
        MockStore {
            objects: Default::default(),
            uploads: Default::default(),
            faults: Default::default(),
            calls: Default::default(),
            retry: RetryPolicy::new(retry, Arc::new(Metrics::default())),
            checksum: None,
            chunk: 64 << 10,
            first_byte: Mutex::new(Duration::ZERO),
            send_checksums: true,
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            next_id: AtomicUsize::new(1),
        }
    }

    /// Stores `bytes` as `key` with a fresh ETag.
    pub(crate) fn insert(&self, key: &str, bytes: impl Into<Bytes>) {
        let bytes = bytes.into();
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.objects.lock().unwrap().insert(key.to_string(), (bytes, format!("\"etag-{n}\"")));
    }

    /// The bytes of `key`, if stored.
    pub(crate) fn object(&self, key: &str) -> Option<Bytes> {
        self.objects.lock().unwrap().get(key).map(|(b, _)| b.clone())
    }

    /// Queues `fault` for the next request of `op` (for GETs starting at `at`, when given).
    pub(crate) fn fault(&self, op: Operation, at: Option<u64>, fault: Fault) {
        self.faults.lock().unwrap().push((op, at, fault));
    }

    /// Every request so far.
    pub(crate) fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    /// The requests of `op` so far.
    pub(crate) fn count(&self, op: Operation) -> usize {
        self.calls.lock().unwrap().iter().filter(|c| c.op == op).count()
    }

    /// Multipart uploads neither completed nor aborted.
    pub(crate) fn open_uploads(&self) -> usize {
        self.uploads.lock().unwrap().len()
    }

    /// The most requests that were in flight at once (a request is in flight from its start
    /// until its answer's body is dropped).
    pub(crate) fn max_in_flight(&self) -> usize {
        self.max_in_flight.load(Ordering::Relaxed)
    }

    fn log(&self, call: Call) -> Vec<Fault> {
        let mut faults = self.faults.lock().unwrap();
        let start = call.range.as_ref().map(|r| r.start);
        let mut due = Vec::new();
        // The queued faults for this request, up to and including its first error (a delay
        // and an error may be queued together; a second error is for the next attempt).
        let mut i = 0;
        while i < faults.len() {
            let (op, at, _) = &faults[i];
            if *op == call.op && (at.is_none() || *at == start) {
                let fault = faults.remove(i).2;
                let last = matches!(fault, Fault::Fail(..));
                due.push(fault);
                if last {
                    break;
                }
            } else {
                i += 1;
            }
        }
        drop(faults);
        self.calls.lock().unwrap().push(call);
        due
    }

    /// Applies the delays and hooks of `faults`; returns the error to answer with, if any,
    /// or how the body misbehaves (where it is cut, how slowly it comes).
    async fn apply(&self, op: Operation, faults: Vec<Fault>) -> Result<BodyFaults, Error> {
        let first_byte = *self.first_byte.lock().unwrap();
        tokio::time::sleep(first_byte).await;
        let mut body = BodyFaults::default();
        for fault in faults {
            match fault {
                Fault::Delay(d) => tokio::time::sleep(d).await,
                Fault::SlowBody(d) => body.slow = Some(d),
                Fault::Hook(f) => f(self),
                Fault::CutBodyAfter(n) => body.cut = Some(n),
                Fault::Fail(kind, status) => {
                    let mut e = Error::new(kind, op, "injected fault");
                    if let Some(s) = status {
                        e = e.with_http(s, None, Some("mock-request".into()));
                    }
                    return Err(e);
                }
            }
        }
        Ok(body)
    }

    /// Counts a request in flight until the returned guard drops.
    fn enter(self: &Arc<Self>) -> InFlight {
        let now = self.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        self.max_in_flight.fetch_max(now, Ordering::Relaxed);
        InFlight(self.clone())
    }

    /// One request made of attempts, as the S3 layer's small requests are: each attempt is
    /// logged and meets the faults queued for it; retryable ones are retried.
    async fn attempts(self: &Arc<Self>, call: Call) -> Result<(), Error> {
        let _flight = self.enter();
        let mut retry = crate::retry::Retry::new(&self.retry);
        loop {
            let faults = self.log(call.clone());
            match self.apply(call.op, faults).await {
                Ok(_) => {
                    retry.succeeded();
                    return Ok(());
                }
                Err(e) => retry.on_error(e).await?,
            }
        }
    }

    fn not_found(op: Operation) -> Error {
        Error::new(ErrorKind::NotFound, op, "no such key").with_http(404, Some("NoSuchKey".into()), None)
    }
}

/// How an answer's body misbehaves.
#[derive(Debug, Default, Clone, Copy)]
struct BodyFaults {
    cut: Option<u64>,
    slow: Option<Duration>,
}

/// Counts a request in flight until dropped.
#[derive(Debug)]
struct InFlight(Arc<MockStore>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A GET answer's body: chunks, and maybe a break after some bytes.
#[derive(Debug)]
pub(crate) struct MockBody {
    chunks: VecDeque<Bytes>,
    /// Bytes left before the injected break (`None`: no break).
    cut: Option<u64>,
    slow: Option<Duration>,
    _in_flight: InFlight,
}

impl ResponseBody for MockBody {
    fn chunk(&mut self) -> impl Future<Output = Result<Option<Bytes>, Error>> + Send {
        let next = match self.cut {
            Some(0) => Err(Error::new(ErrorKind::Transport, Operation::GetObject, "injected reset")),
            Some(left) => match self.chunks.pop_front() {
                Some(mut c) if c.len() as u64 > left => {
                    let rest = c.split_off(left as usize);
                    self.chunks.push_front(rest);
                    self.cut = Some(0);
                    Ok(Some(c))
                }
                Some(c) => {
                    self.cut = Some(left - c.len() as u64);
                    Ok(Some(c))
                }
                None => Ok(None),
            },
            None => Ok(self.chunks.pop_front()),
        };
        // A yield per chunk, as a socket read would, so other tasks interleave.
        let slow = self.slow;
        async move {
            match slow {
                Some(d) => tokio::time::sleep(d).await,
                None => tokio::task::yield_now().await,
            }
            next
        }
    }
}

/// Wrapper so [`MockStore`] can be shared by tests and the context.
pub(crate) type Mock = Arc<MockStore>;

impl ObjectClient for Mock {
    type Body = MockBody;

    fn retry_policy(&self) -> &RetryPolicy {
        &self.retry
    }

    fn upload_checksum_algorithm(&self, _bucket: &str) -> Option<ChecksumAlgorithm> {
        self.checksum
    }

    fn get(
        &self,
        _bucket: &str,
        key: &str,
        part: &GetPart<'_>,
        _attempt: u32,
    ) -> impl Future<Output = Result<(RangeHead, MockBody), Error>> + Send {
        let op = Operation::GetObject;
        let call = Call {
            op,
            key: key.to_string(),
            range: part.range.clone(),
            if_match: part.if_match.map(str::to_string),
            part: 0,
        };
        let (key, part) = (key.to_string(), part.clone());
        let (if_match, if_none_match) = (part.if_match.map(str::to_string), part.if_none_match.map(str::to_string));
        let this = self.clone();
        async move {
            let faults = this.log(call);
            let in_flight = this.enter();
            let BodyFaults { cut, slow } = this.apply(op, faults).await?;
            let (bytes, etag) =
                this.objects.lock().unwrap().get(&key).cloned().ok_or_else(|| MockStore::not_found(op))?;
            if if_match.as_ref().is_some_and(|m| *m != etag) {
                return Err(Error::new(ErrorKind::ObjectChanged, op, "precondition failed").with_http(412, None, None));
            }
            if if_none_match.as_ref().is_some_and(|m| *m == etag) {
                return Err(Error::new(ErrorKind::ClientError, op, "not modified").with_http(304, None, None));
            }
            let total = bytes.len() as u64;
            let (start, end) = match &part.range {
                Some(r) if r.start >= total => {
                    return Err(Error::new(ErrorKind::ClientError, op, "invalid range").with_http(
                        416,
                        Some("InvalidRange".into()),
                        None,
                    ))
                }
                Some(r) => (r.start, r.end.min(total)),
                None => (0, total),
            };
            let claim = (this.send_checksums && part.checksum_mode && start == 0 && end == total).then(|| {
                let algorithm = S3ChecksumAlgorithm::Crc64Nvme;
                let mut h = algorithm.hasher();
                h.update(&bytes);
                let mut headers = http::HeaderMap::new();
                headers.insert(algorithm.header(), h.finish().encoded().parse().unwrap());
                Claim::from_headers(&headers).expect("a well-formed checksum")
            });
            let head = RangeHead {
                etag: Some(etag),
                start,
                end,
                total,
                last_modified: None,
                content_type: None,
                version_id: part.version_id.map(str::to_string),
                claim,
            };
            let body = bytes.slice(start as usize..end as usize);
            let chunks = (0..body.len()).step_by(this.chunk).map(|i| body.slice(i..(i + this.chunk).min(body.len())));
            Ok((head, MockBody { chunks: chunks.collect(), cut, slow, _in_flight: in_flight }))
        }
    }

    fn head(
        &self,
        _bucket: &str,
        key: &str,
        _part: &GetPart<'_>,
    ) -> impl Future<Output = Result<ObjectInfo, Error>> + Send {
        let op = Operation::HeadObject;
        let call = Call { op, key: key.to_string(), range: None, if_match: None, part: 0 };
        let (this, key) = (self.clone(), key.to_string());
        async move {
            this.attempts(call).await?;
            let found = this.objects.lock().unwrap().get(&key).cloned();
            let (bytes, etag) = found.ok_or_else(|| MockStore::not_found(op))?;
            Ok(ObjectInfo {
                size: bytes.len() as u64,
                etag: Some(etag),
                last_modified: None,
                content_type: None,
                version_id: None,
                verification: None,
            })
        }
    }

    fn list(&self, _bucket: &str, options: &ListOptions) -> impl Future<Output = Result<ListPage, Error>> + Send {
        let prefix = options.prefix.clone().unwrap_or_default();
        let mut objects: Vec<ObjectSummary> = self
            .objects
            .lock()
            .unwrap()
            .iter()
            .filter(|(k, _)| k.starts_with(&prefix))
            .map(|(k, (b, e))| ObjectSummary {
                key: k.clone(),
                size: b.len() as u64,
                etag: Some(e.clone()),
                last_modified: None,
            })
            .collect();
        objects.sort_by(|a, b| a.key.cmp(&b.key));
        async move { Ok(ListPage { objects, common_prefixes: Vec::new(), next_continuation_token: None }) }
    }

    async fn object_parts(
        &self,
        _bucket: &str,
        _key: &str,
        _algorithm: S3ChecksumAlgorithm,
    ) -> Result<ObjectParts, Error> {
        Err(Error::new(ErrorKind::ClientError, Operation::GetObject, "no attributes in the mock"))
    }

    fn put_object(
        &self,
        _bucket: &str,
        key: &str,
        _options: &PutOptions,
        body: Bytes,
    ) -> impl Future<Output = Result<String, Error>> + Send {
        let op = Operation::PutObject;
        let call = Call { op, key: key.to_string(), range: None, if_match: None, part: 0 };
        let (this, key) = (self.clone(), key.to_string());
        async move {
            this.attempts(call).await?;
            this.insert(&key, body);
            Ok(this.objects.lock().unwrap()[&key].1.clone())
        }
    }

    fn create_multipart(
        &self,
        _bucket: &str,
        key: &str,
        _options: &PutOptions,
    ) -> impl Future<Output = Result<String, Error>> + Send {
        let op = Operation::CreateMultipartUpload;
        let call = Call { op, key: key.to_string(), range: None, if_match: None, part: 0 };
        let (this, key) = (self.clone(), key.to_string());
        async move {
            this.attempts(call).await?;
            let id = format!("upload-{}", this.next_id.fetch_add(1, Ordering::Relaxed));
            this.uploads.lock().unwrap().insert(id.clone(), Upload { key, parts: HashMap::new() });
            Ok(id)
        }
    }

    fn upload_part(
        &self,
        _bucket: &str,
        key: &str,
        upload_id: &str,
        number: u32,
        body: Bytes,
        crc: Option<Crc>,
    ) -> impl Future<Output = Result<UploadedPart, Error>> + Send {
        let op = Operation::UploadPart;
        let call = Call { op, key: key.to_string(), range: None, if_match: None, part: number };
        let (this, id) = (self.clone(), upload_id.to_string());
        async move {
            this.attempts(call).await?;
            let mut uploads = this.uploads.lock().unwrap();
            let upload = uploads.get_mut(&id).ok_or_else(|| {
                Error::new(ErrorKind::NotFound, op, "no such upload").with_http(404, Some("NoSuchUpload".into()), None)
            })?;
            let size = body.len() as u64;
            upload.parts.insert(number, body);
            Ok(UploadedPart { number, etag: format!("\"part-{number}\""), checksum: crc, size })
        }
    }

    fn complete_multipart(
        &self,
        _bucket: &str,
        key: &str,
        upload_id: &str,
        parts: Vec<UploadedPart>,
    ) -> impl Future<Output = Result<String, Error>> + Send {
        let op = Operation::CompleteMultipartUpload;
        let call = Call { op, key: key.to_string(), range: None, if_match: None, part: 0 };
        let (this, id) = (self.clone(), upload_id.to_string());
        async move {
            this.attempts(call).await?;
            let upload = this.uploads.lock().unwrap().remove(&id).ok_or_else(|| {
                Error::new(ErrorKind::NotFound, op, "no such upload").with_http(404, Some("NoSuchUpload".into()), None)
            })?;
            let mut all = Vec::new();
            for p in &parts {
                all.extend_from_slice(&upload.parts[&p.number]);
            }
            this.insert(&upload.key, all);
            Ok(this.objects.lock().unwrap()[&upload.key].1.clone())
        }
    }

    fn abort_multipart(
        &self,
        _bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> impl Future<Output = Result<(), Error>> + Send {
        let op = Operation::AbortMultipartUpload;
        let call = Call { op, key: key.to_string(), range: None, if_match: None, part: 0 };
        let (this, id) = (self.clone(), upload_id.to_string());
        async move {
            this.attempts(call).await?;
            this.uploads.lock().unwrap().remove(&id);
            Ok(())
        }
    }

    fn copy_object(
        &self,
        source: &CopySource,
        _bucket: &str,
        key: &str,
    ) -> impl Future<Output = Result<Copied, Error>> + Send {
        let op = Operation::CopyObject;
        let call = Call { op, key: key.to_string(), range: None, if_match: source.etag.clone(), part: 0 };
        let (this, source, key) = (self.clone(), source.clone(), key.to_string());
        async move {
            this.attempts(call).await?;
            let bytes = this.source_bytes(&source, op)?;
            this.insert(&key, bytes);
            Ok(Copied { etag: this.objects.lock().unwrap()[&key].1.clone() })
        }
    }

    fn upload_part_copy(
        &self,
        source: &CopySource,
        _bucket: &str,
        key: &str,
        upload_id: &str,
        number: u32,
        range: std::ops::Range<u64>,
    ) -> impl Future<Output = Result<UploadedPart, Error>> + Send {
        let op = Operation::UploadPartCopy;
        let call =
            Call { op, key: key.to_string(), range: Some(range.clone()), if_match: source.etag.clone(), part: number };
        let (this, source, id) = (self.clone(), source.clone(), upload_id.to_string());
        async move {
            this.attempts(call).await?;
            let bytes = this.source_bytes(&source, op)?;
            let part = bytes.slice(range.start as usize..(range.end as usize).min(bytes.len()));
            let mut uploads = this.uploads.lock().unwrap();
            let upload = uploads.get_mut(&id).ok_or_else(|| {
                Error::new(ErrorKind::NotFound, op, "no such upload").with_http(404, Some("NoSuchUpload".into()), None)
            })?;
            let size = part.len() as u64;
            let checksum = this.checksum.map(|a| a.checksum(&part));
            upload.parts.insert(number, part);
            Ok(UploadedPart { number, etag: format!("\"copy-{number}\""), checksum, size })
        }
    }
}

impl MockStore {
    /// The bytes of a copy's source, checked against its pinned ETag (412 when replaced).
    fn source_bytes(&self, source: &CopySource, op: Operation) -> Result<Bytes, Error> {
        let found = self.objects.lock().unwrap().get(&source.key).cloned();
        let (bytes, etag) = found.ok_or_else(|| MockStore::not_found(op))?;
        if source.etag.as_ref().is_some_and(|want| *want != etag) {
            return Err(Error::new(ErrorKind::ObjectChanged, op, "the source changed").with_http(
                412,
                Some("PreconditionFailed".into()),
                None,
            ));
        }
        Ok(bytes)
    }
}
