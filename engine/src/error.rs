//! One public error type for everything the engine does.
//!
//! Callers decide what to do from *data*, never from message text: [`Error::kind`] says what
//! class of failure happened, [`Error::is_retryable`] whether trying again can help, and the
//! S3 metadata ([`Error::http_status`], [`Error::s3_code`], [`Error::request_id`]) is what a
//! support ticket to the storage provider needs.

use std::fmt;

/// The operation that failed, so an error says *what* was being attempted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Operation {
    /// A ranged or whole GetObject (one part of a download).
    GetObject,
    /// HeadObject.
    HeadObject,
    /// PutObject (single-request upload).
    PutObject,
    /// CreateMultipartUpload.
    CreateMultipartUpload,
    /// UploadPart.
    UploadPart,
    /// CompleteMultipartUpload.
    CompleteMultipartUpload,
    /// AbortMultipartUpload.
    AbortMultipartUpload,
    /// DeleteObject.
    DeleteObject,
    /// DeleteObjects: up to 1,000 keys in one request.
    DeleteObjects,
    /// CopyObject: a server-side copy in one request.
    CopyObject,
    /// UploadPartCopy: one part of a multipart server-side copy.
    UploadPartCopy,
    /// ListObjectsV2.
    ListObjectsV2,
    /// ListMultipartUploads.
    ListMultipartUploads,
    /// CreateBucket.
    CreateBucket,
    /// ListBuckets: the buckets the credentials own.
    ListBuckets,
    /// CreateSession: an S3 Express One Zone session for a directory bucket.
    CreateSession,
    /// Building a client from its configuration.
    Config,
    /// Fetching credentials (IMDS, STS, the container endpoint, SSO, a credential process).
    FetchCredentials,
    /// Local file or caller-buffer I/O around a transfer.
    LocalIo,
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// What class of failure happened. Drives retry decisions and lets callers branch on data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The bucket or key does not exist (HTTP 404, `NoSuchKey` / `NoSuchBucket`).
    NotFound,
    /// The server refused the credentials or the permission (HTTP 403).
    AccessDenied,
    /// The object changed while it was being downloaded (ETag differs between parts, or 412 on
    /// a part sent with `If-Match`). Retrying the part cannot help; restart the whole download.
    ObjectChanged,
    /// A condition the caller set was not met (HTTP 412 to [`crate::GetOptions::if_match`]):
    /// the object is not the version the caller expected. Final.
    PreconditionFailed,
    /// The object still has the ETag the caller named in
    /// [`crate::GetOptions::if_none_match`] (HTTP 304): the caller's copy is current. Final.
    NotModified,
    /// An append's offset is not the object's size (`InvalidWriteOffset`, HTTP 400): another
    /// writer appended meanwhile, or the caller's idea of the size is stale. Final: read the
    /// size again (HEAD) before appending.
    WrongWriteOffset,
    /// The bytes received do not match the checksum the server sent for them (corruption in
    /// transit or at rest), or the server rejected an upload's checksum (`BadDigest`).
    /// Retryable: a fresh copy usually arrives intact.
    ChecksumMismatch,
    /// The server throttled us (503 `SlowDown`, 429). Retryable.
    Throttled,
    /// A 5xx server error other than throttling. Retryable.
    ServerError,
    /// Any other 4xx answer from the server. Final.
    ClientError,
    /// TCP connect, DNS or TLS set-up failed. Retryable.
    Connect,
    /// The connection broke while sending or receiving. Retryable (see [`ErrorKind::Timeout`]
    /// for requests that are not idempotent).
    Transport,
    /// A configured timeout expired. Retryable, with one exception: when it struck after the
    /// whole request went out (waiting for the answer), the server may have carried the
    /// request out, and a request that is not idempotent (see `docs/reliability.md`) is then
    /// retried only where the operation can check or repair the outcome: a repeated
    /// CompleteMultipartUpload checks the object, a repeated CreateMultipartUpload aborts the
    /// upload the lost answer created. The same holds for [`ErrorKind::Transport`] and
    /// [`ErrorKind::Protocol`] errors on an answer.
    Timeout,
    /// The server answered something that breaks the protocol (bad XML, wrong Content-Range,
    /// short body). Retryable: a broken proxy or a truncated body usually recovers.
    Protocol,
    /// No usable credentials, or credentials that cannot be parsed.
    Credentials,
    /// The configuration or an argument is invalid (never retryable).
    InvalidInput,
    /// A local file or caller buffer could not be read or written.
    LocalIo,
    /// The transfer was cancelled by the caller.
    Cancelled,
    /// A bug in the engine (a task panicked). Please report it.
    Internal,
}

impl ErrorKind {
    /// Whether an error of this kind is, by default, worth retrying.
    pub fn default_retryable(self) -> bool {
        matches!(
            self,
            ErrorKind::Throttled
                | ErrorKind::ServerError
                | ErrorKind::Connect
                | ErrorKind::Transport
                | ErrorKind::Timeout
                | ErrorKind::Protocol
                | ErrorKind::ChecksumMismatch
        )
    }
}

/// The engine's error: what failed, whether to retry, and the S3 metadata of the answer.
pub struct Error {
    inner: Box<Inner>,
}

struct Inner {
    kind: ErrorKind,
    operation: Operation,
    message: String,
    retryable: bool,
    http_status: Option<u16>,
    s3_code: Option<String>,
    request_id: Option<String>,
    /// Whether the request went out whole and its answer was lost (see [`Error::answer_lost`]).
    answer_lost: bool,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl Error {
    /// A new error of `kind` while doing `operation`; retryability follows the kind.
    pub fn new(kind: ErrorKind, operation: Operation, message: impl Into<String>) -> Self {
        Error {
            inner: Box::new(Inner {
                kind,
                operation,
                message: message.into(),
                retryable: kind.default_retryable(),
                http_status: None,
                s3_code: None,
                request_id: None,
                answer_lost: false,
                source: None,
            }),
        }
    }

    pub(crate) fn with_source(mut self, source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>) -> Self {
        self.inner.source = Some(source.into());
        self
    }

    pub(crate) fn with_http(mut self, status: u16, s3_code: Option<String>, request_id: Option<String>) -> Self {
        self.inner.http_status = Some(status);
        self.inner.s3_code = s3_code;
        self.inner.request_id = request_id;
        self
    }

    pub(crate) fn with_retryable(mut self, retryable: bool) -> Self {
        self.inner.retryable = retryable;
        self
    }

    /// Marks the error as striking after the whole request went out and before its answer
    /// arrived intact: set by the HTTP layer, read by the retry decision.
    pub(crate) fn with_answer_lost(mut self) -> Self {
        self.inner.answer_lost = true;
        self
    }

    /// Whether the server may have carried the request out although this attempt failed: the
    /// request went out whole and the answer was lost (a reset or timeout waiting for the
    /// response head, a body cut or stalled). Retrying a request that is not idempotent after
    /// such an error can meet its first attempt's effect. Errors before sending (connect, DNS,
    /// TLS), and S3's error answers, prove nothing was done and are never marked.
    pub(crate) fn answer_lost(&self) -> bool {
        self.inner.answer_lost
    }

    pub(crate) fn with_operation(mut self, operation: Operation) -> Self {
        self.inner.operation = operation;
        self
    }

    pub(crate) fn invalid(operation: Operation, message: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidInput, operation, message)
    }

    pub(crate) fn local_io(message: impl Into<String>, source: std::io::Error) -> Self {
        Error::new(ErrorKind::LocalIo, Operation::LocalIo, message).with_source(source)
    }

    pub(crate) fn cancelled(operation: Operation) -> Self {
        Error::new(ErrorKind::Cancelled, operation, "the transfer was cancelled")
    }

    /// What class of failure this is.
    pub fn kind(&self) -> ErrorKind {
        self.inner.kind
    }

    /// The S3 operation (or local step) that failed.
    pub fn operation(&self) -> Operation {
        self.inner.operation
    }

    /// Whether trying the same request again may succeed.
    pub fn is_retryable(&self) -> bool {
        self.inner.retryable
    }

    /// The HTTP status of the server's answer, when there was one.
    pub fn http_status(&self) -> Option<u16> {
        self.inner.http_status
    }

    /// The S3 error code from the XML error body (`NoSuchKey`, `SlowDown`, ...), when there was one.
    pub fn s3_code(&self) -> Option<&str> {
        self.inner.s3_code.as_deref()
    }

    /// The request id the server gave (`x-amz-request-id`), for support tickets.
    pub fn request_id(&self) -> Option<&str> {
        self.inner.request_id.as_deref()
    }

    /// The human-readable message (for logs; never parse it).
    pub fn message(&self) -> &str {
        &self.inner.message
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("kind", &self.inner.kind)
            .field("operation", &self.inner.operation)
            .field("message", &self.inner.message)
            .field("retryable", &self.inner.retryable)
            .field("http_status", &self.inner.http_status)
            .field("s3_code", &self.inner.s3_code)
            .field("request_id", &self.inner.request_id)
            .field("answer_lost", &self.inner.answer_lost)
            .field("source", &self.inner.source)
            .finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A local file's trouble reads as the message alone ("cannot create out/x: ..."):
        // "LocalIo failed" names an engine internal, not something the user did.
        match self.inner.operation {
            Operation::LocalIo => write!(f, "{}", self.inner.message)?,
            op => write!(f, "{op} failed: {}", self.inner.message)?,
        }
        let mut meta = Vec::new();
        if let Some(code) = &self.inner.s3_code {
            meta.push(code.clone());
        }
        if let Some(status) = self.inner.http_status {
            meta.push(format!("HTTP {status}"));
        }
        if let Some(id) = &self.inner.request_id {
            meta.push(format!("request id {id}"));
        }
        if !meta.is_empty() {
            write!(f, " ({})", meta.join(", "))?;
        }
        if let Some(source) = &self.inner.source {
            write!(f, ": {source}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner.source.as_deref().map(|s| s as &(dyn std::error::Error + 'static))
    }
}

/// Shorthand for results of the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_carries_s3_metadata() {
        let e = Error::new(ErrorKind::NotFound, Operation::GetObject, "s3://b/k")
            .with_http(404, Some("NoSuchKey".into()), Some("REQ1".into()))
            .with_retryable(false);
        assert_eq!(e.to_string(), "GetObject failed: s3://b/k (NoSuchKey, HTTP 404, request id REQ1)");
        assert_eq!(e.s3_code(), Some("NoSuchKey"));
        assert!(!e.is_retryable());
    }

    #[test]
    fn retryability_follows_kind() {
        assert!(Error::new(ErrorKind::Throttled, Operation::UploadPart, "x").is_retryable());
        assert!(!Error::new(ErrorKind::AccessDenied, Operation::UploadPart, "x").is_retryable());
    }
}
