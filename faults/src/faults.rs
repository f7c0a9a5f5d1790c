//! The fault catalogue and the response-body stream that injects faults and shaping.
//!
//! Response bodies are streamed from the stored `Bytes` as zero-copy 256 KiB slices; every
//! fault that acts on a body (stall, pacing, corruption, cut-off) is a property of this one
//! stream so faults compose with shaping.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use tokio::time::{sleep, sleep_until, Instant};

use crate::conn::{ConnCtl, EndAction};

/// Boxed error type used for response bodies and the service.
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// The response body type of every answer.
pub(crate) type RespBody = http_body_util::combinators::UnsyncBoxBody<Bytes, BoxError>;

/// A fault to inject into one request. See each variant for its effect on downloads (GET,
/// and any other response with a body) and on uploads (PutObject, UploadPart,
/// CompleteMultipartUpload, whose request body the server reads).
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// An S3 XML error answer: `<Error><Code>..</Code><Message>..</Message><RequestId>..</RequestId></Error>`,
    /// with `x-amz-request-id`. Uploads: the request body is read and discarded first.
    Status {
        /// HTTP status code.
        status: u16,
        /// S3 error code, e.g. `SlowDown`.
        code: &'static str,
    },
    /// Close the connection with a TCP RST before any response byte (uploads: after reading
    /// about half the request body).
    ResetBeforeHead,
    /// Send the head and half the body, then RST the connection (uploads: read about half the
    /// request body, then RST).
    ResetMidBody,
    /// Carry out the request (store the object or part, create the upload, complete it, ...),
    /// then close the connection with a TCP RST instead of answering: a lost answer, which is
    /// what a client sees when the network or a proxy drops the response of a request the
    /// server did act on. Retrying a non-idempotent request after this meets the effect of
    /// the first one (a second upload id; `NoSuchUpload` for a completed upload).
    ResetAfterAct,
    /// Send the head with the full Content-Length, then only half the body, then close with a
    /// FIN (a clean but truncated stream). No-op for uploads.
    ShortBody,
    /// Send the head, then no body byte for this long, then the rest. Uploads and answers
    /// without a body (HEAD, PUT, DELETE): read the request, wait, then answer.
    Stall(Duration),
    /// Send the body at this many bytes per second, in small paced chunks. No-op for uploads.
    Trickle {
        /// Target rate.
        bytes_per_sec: u64,
    },
    /// Downloads: flip one byte (xor 0xff) in the middle of the body sent. Uploads: flip one
    /// byte of the received payload before checksum verification and storage.
    FlipByte,
    /// GET/HEAD: answer normally but with an ETag header different from the object's. No-op
    /// for other operations.
    WrongEtag,
}

impl Fault {
    /// 503 SlowDown, S3's throttling answer (clients must back off and retry).
    pub fn slow_down() -> Fault {
        Fault::Status { status: 503, code: "SlowDown" }
    }

    /// 500 InternalError, a transient server error clients retry.
    pub fn internal_error() -> Fault {
        Fault::Status { status: 500, code: "InternalError" }
    }

    /// 400 RequestTimeout, which S3 sends when an upload body arrives too slowly; retryable.
    pub fn request_timeout() -> Fault {
        Fault::Status { status: 400, code: "RequestTimeout" }
    }

    /// 403 ExpiredToken, which should make clients refresh credentials.
    pub fn expired_token() -> Fault {
        Fault::Status { status: 403, code: "ExpiredToken" }
    }

    /// 404 NoSuchKey, a non-retryable failure.
    pub fn not_found() -> Fault {
        Fault::Status { status: 404, code: "NoSuchKey" }
    }
}

/// How a response body is sent: the data plus every fault and shaping effect on it.
#[derive(Debug, Default)]
pub(crate) struct BodyPlan {
    /// Wait this long after the head before the first body byte.
    pub stall: Option<Duration>,
    /// Pace the body to this many bytes per second.
    pub rate: Option<u64>,
    /// Chunk size used while pacing (smaller chunks = smoother pacing).
    pub paced_chunk: Option<usize>,
    /// The instant pacing counts from (the nominal first-byte time); None = the first poll.
    pub origin: Option<Instant>,
    /// Flip the byte at this offset.
    pub flip_at: Option<usize>,
    /// Stop after this many bytes and end the connection this way.
    pub cut: Option<(usize, EndAction)>,
}

/// Zero-copy slice size of unpaced bodies.
const CHUNK: usize = 256 * 1024;

/// Extra time an RST waits after the cut-off data left hyper's buffer, so bytes already
/// written reach a reading client before the RST discards the socket's send queue.
const RESET_GRACE: Duration = Duration::from_millis(20);

struct StreamState {
    data: Bytes,
    pos: usize,
    plan: BodyPlan,
    chunk: usize,
    started: Option<Instant>,
    ctl: Arc<ConnCtl>,
    done: bool,
}

/// Pacing chunk for a rate: about 50 paces per second, between 1 byte and 256 KiB.
pub(crate) fn paced_chunk(rate: u64, per_sec: u64) -> usize {
    ((rate / per_sec).max(1) as usize).min(CHUNK)
}

impl BodyPlan {
    /// Builds the streaming body. `ctl` lets the stream ask the connection to end with a
    /// FIN or RST once everything before the cut-off has been flushed to the socket.
    pub(crate) fn into_body(self, data: Bytes, ctl: Arc<ConnCtl>) -> RespBody {
        let chunk = self.paced_chunk.unwrap_or(CHUNK).clamp(1, CHUNK);
        let st = StreamState { data, pos: 0, started: self.origin, plan: self, chunk, ctl, done: false };
        let stream = futures::stream::unfold(st, |mut st| async move {
            if st.done {
                return None;
            }
            if let Some(d) = st.plan.stall.take() {
                sleep(d).await;
            }
            let limit = st.plan.cut.map_or(st.data.len(), |(at, _)| at.min(st.data.len()));
            if st.pos >= limit {
                let (_, action) = st.plan.cut.take()?;
                // Let hyper flush what it has buffered, then have the connection end the way
                // the fault asks. The body then errors, which makes hyper drop the connection.
                let flushed = st.ctl.request_end(action);
                let _ = flushed.await;
                if action == EndAction::Reset {
                    sleep(RESET_GRACE).await;
                }
                st.done = true;
                let err: BoxError = format!("gantry-faults: injected {action:?}").into();
                return Some((Err(err), st));
            }
            let end = (st.pos + st.chunk).min(limit);
            if let Some(rate) = st.plan.rate.filter(|r| *r > 0) {
                // Pace against the start instant so timer slack does not accumulate: the chunk
                // ending at `end` is released when `end / rate` seconds have elapsed.
                let start = *st.started.get_or_insert_with(Instant::now);
                sleep_until(start + Duration::from_secs_f64(end as f64 / rate as f64)).await;
            }
            let mut bytes = st.data.slice(st.pos..end);
            if let Some(f) = st.plan.flip_at.filter(|f| (st.pos..end).contains(f)) {
                let mut copy = BytesMut::from(&bytes[..]);
                copy[f - st.pos] ^= 0xff;
                bytes = copy.freeze();
            }
            st.pos = end;
            Some((Ok(Frame::data(bytes)), st))
        });
        StreamBody::new(stream).boxed_unsync()
    }
}
