//! Auto-ranged GET: one download (meta-request) split into parallel ranged part requests.
//!
//! The algorithm:
//!
//! 1. The first part request asks for `bytes=0-(part_size-1)` without a condition. Its
//!    `Content-Range` gives the object size and its `ETag` pins the version, so no HEAD round
//!    trip is spent. (A 416 means an empty object: one unranged GET confirms it. A 200 means the
//!    server ignored the range: that one body then carries the whole object.)
//! 2. As soon as the first head arrives, its body keeps streaming in its own task while the
//!    driver admits the remaining parts one by one through the [scheduler](crate::scheduler)
//!    (memory, then a connection slot). Every later part carries `If-Match: <etag>`, and its
//!    answer is checked too (ETag, total size, exact range), so an object replaced
//!    mid-download fails with [`ErrorKind::ObjectChanged`] instead of mixing two versions,
//!    even on servers that ignore `If-Match`.
//! 3. Each part task retries on its own. A body that breaks midway resumes from the first byte
//!    not yet delivered, so no byte is fetched or delivered twice.
//! 4. Bytes go out without an intermediate part buffer, as they arrive: either as
//!    `(offset, chunk)` pairs to one consumer (a copy into caller memory, or a writer thread
//!    doing positional file writes), or in order to a stream. Chunks are released as soon as
//!    they are consumed, so hyper can reuse its read buffers: holding whole parts instead made
//!    every read land in freshly faulted pages, which cost 8 s of system time per GiB here.
//!
//! The first failing part fails the download; dropping the driver's task aborts every part
//! task (closing their connections) and releases their memory and slots.

pub(crate) mod plan;
pub(crate) mod stream;

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use crate::buffer_pool::MemoryPermit;
use crate::client::Shared;
use crate::error::{Error, ErrorKind, Operation, Result};
use crate::http::Body;
use crate::retry::Retry;
use crate::s3::get_object::RangeHead;
use crate::scheduler::ConnectionSlot;
use crate::types::ObjectInfo;

const OP: Operation = Operation::GetObject;

/// A chunk for the caller to copy at `offset`; the permit travels with it so the memory
/// stays reserved until the copy is done.
#[derive(Debug)]
pub(crate) struct Chunk {
    pub(crate) offset: u64,
    pub(crate) data: Bytes,
    pub(crate) _permit: Arc<MemoryPermit>,
}

/// One part of an in-order stream, handed to the reader in part order.
#[derive(Debug)]
pub(crate) struct StreamPart {
    pub(crate) len: u64,
    pub(crate) rx: mpsc::UnboundedReceiver<Result<Bytes>>,
    pub(crate) _memory: MemoryPermit,
    pub(crate) _window: OwnedSemaphorePermit,
}

/// Where a download's bytes go.
#[derive(Debug)]
pub(crate) enum Delivery {
    /// Unordered `(offset, chunk)` pairs to one consumer (caller memory or a file writer).
    Copy(mpsc::UnboundedSender<Chunk>),
    /// In order, with at most `window` parts fetched ahead of the reader.
    Stream { parts: mpsc::UnboundedSender<StreamPart>, window: Arc<Semaphore> },
}

/// The version and size every part must match.
#[derive(Debug, Clone)]
struct Validator {
    etag: Option<String>,
    total: u64,
}

impl Validator {
    fn check(&self, head: &RangeHead, start: u64, end: u64) -> Result<()> {
        if let (Some(want), Some(got)) = (&self.etag, &head.etag) {
            if want != got {
                return Err(Error::new(
                    ErrorKind::ObjectChanged,
                    OP,
                    format!("the object changed during the download (ETag {want} became {got})"),
                )
                .with_retryable(false));
            }
        }
        if head.total != self.total {
            return Err(Error::new(
                ErrorKind::ObjectChanged,
                OP,
                format!("the object changed during the download (size {} became {})", self.total, head.total),
            )
            .with_retryable(false));
        }
        if head.start != start || head.end != end {
            return Err(Error::new(
                ErrorKind::Protocol,
                OP,
                format!("asked for bytes {start}-{end}, got {}-{}", head.start, head.end),
            ));
        }
        Ok(())
    }
}

/// Where one part task puts its bytes.
enum PartSink {
    Copy { tx: mpsc::UnboundedSender<Chunk>, permit: Arc<MemoryPermit> },
    Stream { tx: mpsc::UnboundedSender<Result<Bytes>> },
}

impl PartSink {
    fn put(&mut self, offset: u64, data: Bytes) -> Result<()> {
        match self {
            PartSink::Copy { tx, permit } => {
                tx.send(Chunk { offset, data, _permit: permit.clone() }).map_err(|_| Error::cancelled(OP))
            }
            PartSink::Stream { tx } => tx.send(Ok(data)).map_err(|_| Error::cancelled(OP)),
        }
    }

    fn fail(&self, err: &Error) {
        if let PartSink::Stream { tx } = self {
            let _ = tx.send(Err(clone_error(err)));
        }
    }
}

/// Errors are not `Clone` (they own their source); a stream reader gets a copy of the data.
fn clone_error(err: &Error) -> Error {
    let mut e = Error::new(err.kind(), err.operation(), err.to_string()).with_retryable(err.is_retryable());
    if let Some(status) = err.http_status() {
        e = e.with_http(status, err.s3_code().map(str::to_string), err.request_id().map(str::to_string));
    }
    e
}

/// Runs one download to completion: the driver described in the module docs.
pub(crate) async fn run(
    shared: Arc<Shared>,
    bucket: Arc<str>,
    key: Arc<str>,
    range: Option<Range<u64>>,
    delivery: Delivery,
    head_tx: oneshot::Sender<ObjectInfo>,
) -> Result<()> {
    let part_size = shared.config.part_size_bytes;
    let (start, end) = range.as_ref().map_or((0, u64::MAX), |r| (r.start, r.end));
    if start >= end {
        return Err(Error::invalid(OP, format!("empty byte range {start}..{end}")));
    }
    let memory = shared.scheduler.memory.reserve(part_size).await;
    let window = acquire_window(&delivery).await;
    let slot = shared.scheduler.slot().await;
    let first = start..end.min(start.saturating_add(part_size));
    let (head, body) = open_first(&shared, &bucket, &key, first, start == 0).await?;
    if head.start != start {
        return Err(Error::new(ErrorKind::Protocol, OP, format!("asked for bytes from {start}, got {}", head.start)));
    }
    let total = head.total;
    let limit = end.min(total);
    let info = ObjectInfo {
        size: total,
        etag: head.etag.clone(),
        last_modified: head.last_modified.clone(),
        content_type: head.content_type.clone(),
    };
    if head_tx.send(info).is_err() {
        return Err(Error::cancelled(OP));
    }
    let validator = Arc::new(Validator { etag: head.etag.clone(), total });
    let mut tasks = JoinSet::new();
    let first_range = head.start..head.end;
    let sink = make_sink(&delivery, first_range.end - first_range.start, memory, window);
    tasks.spawn(part_task(
        shared.clone(),
        bucket.clone(),
        key.clone(),
        first_range.clone(),
        validator.clone(),
        Some((head, body)),
        slot,
        sink,
    ));

    for range in plan::later_parts(first_range.end, limit, part_size) {
        let memory = shared.scheduler.memory.reserve(range.end - range.start).await;
        let window = acquire_window(&delivery).await;
        let slot = shared.scheduler.slot().await;
        // Fail fast: stop admitting parts once one has failed.
        while let Some(done) = tasks.try_join_next() {
            joined(done)?;
        }
        let sink = make_sink(&delivery, range.end - range.start, memory, window);
        tasks.spawn(part_task(shared.clone(), bucket.clone(), key.clone(), range, validator.clone(), None, slot, sink));
    }
    drop(delivery);
    while let Some(done) = tasks.join_next().await {
        joined(done)?;
    }
    Ok(())
}

fn joined(done: std::result::Result<Result<()>, tokio::task::JoinError>) -> Result<()> {
    done.map_err(|_| Error::new(ErrorKind::Internal, OP, "a part task panicked").with_retryable(false))?
}

async fn acquire_window(delivery: &Delivery) -> Option<OwnedSemaphorePermit> {
    match delivery {
        Delivery::Stream { window, .. } => Some(window.clone().acquire_owned().await.expect("window never closed")),
        _ => None,
    }
}

fn make_sink(delivery: &Delivery, len: u64, memory: MemoryPermit, window: Option<OwnedSemaphorePermit>) -> PartSink {
    match delivery {
        Delivery::Copy(tx) => PartSink::Copy { tx: tx.clone(), permit: Arc::new(memory) },
        Delivery::Stream { parts, .. } => {
            let (tx, rx) = mpsc::unbounded_channel();
            // The reader gets parts in admission order, which is part order.
            let _ = parts.send(StreamPart {
                len,
                rx,
                _memory: memory,
                _window: window.expect("stream parts hold a window permit"),
            });
            PartSink::Stream { tx }
        }
    }
}

/// The first request: discovers size and ETag (see the module docs for 416 and 200). A 416
/// means an empty object only when the read starts at 0 (`may_be_empty`); otherwise the range
/// lies past the end of the object and the 416 is the answer.
async fn open_first(
    shared: &Shared,
    bucket: &str,
    key: &str,
    first: Range<u64>,
    may_be_empty: bool,
) -> Result<(RangeHead, Body)> {
    let mut retry = Retry::new(&shared.s3.retry);
    loop {
        let result = match shared.s3.get_range(bucket, key, Some(first.clone()), None, retry.attempt()).await {
            Err(e) if may_be_empty && e.http_status() == Some(416) => {
                shared.s3.get_range(bucket, key, None, None, retry.attempt()).await
            }
            other => other,
        };
        match result {
            Ok(v) => return Ok(v),
            Err(e) => retry.on_error(e).await?,
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn part_task(
    shared: Arc<Shared>,
    bucket: Arc<str>,
    key: Arc<str>,
    range: Range<u64>,
    validator: Arc<Validator>,
    initial: Option<(RangeHead, Body)>,
    slot: ConnectionSlot,
    mut sink: PartSink,
) -> Result<()> {
    let result = fetch_part(&shared, &bucket, &key, range, &validator, initial, &mut sink).await;
    drop(slot);
    if let Err(e) = &result {
        sink.fail(e);
    }
    result
}

/// Receives `range` into `sink`, retrying and resuming from the first byte not yet delivered.
async fn fetch_part(
    shared: &Shared,
    bucket: &str,
    key: &str,
    range: Range<u64>,
    validator: &Validator,
    mut initial: Option<(RangeHead, Body)>,
    sink: &mut PartSink,
) -> Result<()> {
    let mut next = range.start;
    let mut retry = Retry::new(&shared.s3.retry);
    loop {
        let attempt = retry.attempt();
        let result = async {
            let (head, mut body) = match initial.take() {
                Some(first) => first,
                None => {
                    shared.s3.get_range(bucket, key, Some(next..range.end), validator.etag.as_deref(), attempt).await?
                }
            };
            validator.check(&head, next, range.end)?;
            while let Some(chunk) = body.chunk().await? {
                let len = chunk.len() as u64;
                if next + len > range.end {
                    return Err(Error::new(ErrorKind::Protocol, OP, "the body is longer than its range"));
                }
                sink.put(next, chunk)?;
                next += len;
            }
            if next != range.end {
                return Err(Error::new(
                    ErrorKind::Protocol,
                    OP,
                    format!("the body ended at byte {next} of {}", range.end),
                ));
            }
            Ok(())
        }
        .await;
        match result {
            Ok(()) => return Ok(()),
            Err(e) => retry.on_error(e).await?,
        }
    }
}
