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
//!
//! How the bytes are checked against the object's stored checksum is planned from the first
//! answer, before any other part is admitted: see [`verify`].

pub(crate) mod hedge;
pub(crate) mod options;
pub(crate) mod plan;
pub(crate) mod stream;
#[cfg(test)]
mod tests;
pub(crate) mod to_file;
pub(crate) mod to_writer;
pub(crate) mod verify;

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use crate::buffer_pool::MemoryPermit;
use crate::checksum::{Claim, Hasher, S3ChecksumAlgorithm, Sum, Verifier};
use crate::context::Context;
use crate::error::{Error, ErrorKind, Operation, Result};
use crate::object_client::{GetPart, ObjectClient};
use crate::retry::Retry;
use crate::s3::get_object::RangeHead;
use crate::scheduler::{Admission, ConnectionSlot};
use crate::types::{ObjectInfo, Verification};
use hedge::{Opening, Race, Read, Source};
use options::GetOptions;
use verify::{Check, TeeChunk};

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
    pub(crate) _memory: Arc<MemoryPermit>,
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

/// Where one part task puts its bytes: its consumer, and the ordered hasher when the
/// download has one ([`verify`]). The part's memory stays reserved while either holds them.
struct PartSink {
    out: Out,
    permit: Arc<MemoryPermit>,
    tee: Option<mpsc::UnboundedSender<TeeChunk>>,
}

enum Out {
    Copy(mpsc::UnboundedSender<Chunk>),
    Stream(mpsc::UnboundedSender<Result<Bytes>>),
}

impl PartSink {
    fn put(&mut self, offset: u64, data: Bytes) -> Result<()> {
        if let Some(tee) = &self.tee {
            // The hasher goes away only after every part is done.
            let _ = tee.send(TeeChunk { offset, data: data.clone(), _permit: self.permit.clone() });
        }
        match &self.out {
            Out::Copy(tx) => {
                tx.send(Chunk { offset, data, _permit: self.permit.clone() }).map_err(|_| Error::cancelled(OP))
            }
            Out::Stream(tx) => tx.send(Ok(data)).map_err(|_| Error::cancelled(OP)),
        }
    }

    fn is_stream(&self) -> bool {
        matches!(self.out, Out::Stream(_))
    }

    fn fail(&self, err: &Error) {
        if let Out::Stream(tx) = &self.out {
            let _ = tx.send(Err(clone_error(err)));
        }
    }
}

/// What a part task checks of its own bytes.
#[derive(Debug, Clone, Copy)]
enum PartCheck {
    None,
    /// The part is the whole object: its bytes must match this full-object checksum.
    Whole(Claim),
    /// The part's CRC, to be combined with the others'.
    Crc(S3ChecksumAlgorithm),
}

/// A part's CRC: `(first byte, value, length)`.
type PartCrc = (u64, Sum, u64);

/// Errors are not `Clone` (they own their source); a stream reader gets a copy of the data.
fn clone_error(err: &Error) -> Error {
    let mut e = Error::new(err.kind(), err.operation(), err.to_string()).with_retryable(err.is_retryable());
    if let Some(status) = err.http_status() {
        e = e.with_http(status, err.s3_code().map(str::to_string), err.request_id().map(str::to_string));
    }
    e
}

/// What one download reads: the object and the caller's [`GetOptions`].
#[derive(Debug)]
pub(crate) struct Download {
    pub(crate) bucket: Arc<str>,
    pub(crate) key: Arc<str>,
    pub(crate) options: GetOptions,
}

impl Download {
    pub(crate) fn new(bucket: &str, key: &str, options: &GetOptions) -> Arc<Download> {
        Arc::new(Download { bucket: bucket.into(), key: key.into(), options: options.clone() })
    }

    /// The part size of this download: the caller's or the client's.
    fn part_size<C: ObjectClient>(&self, ctx: &Context<C>) -> u64 {
        self.options.part_size_bytes.unwrap_or(ctx.config.part_size_bytes).max(1)
    }

    /// Whether the bytes are verified against the stored checksum.
    fn verifies<C: ObjectClient>(&self, ctx: &Context<C>) -> bool {
        self.options.verifies(ctx.config.checksums.verify_downloads)
    }
}

/// Runs one download to completion: the driver described in the module docs. Returns how
/// its bytes were verified.
///
/// A multi-part download is checked against the object's checksum only once every part is in;
/// the damaged part is unknown, so the whole download runs once more when its bytes can still
/// be overwritten (the `Copy` delivery). A stream has handed its bytes out: its reader gets
/// the error (through the driver) before the end of the stream, and it is final.
pub(crate) async fn run<C: ObjectClient>(
    ctx: Arc<Context<C>>,
    job: Arc<Download>,
    delivery: Delivery,
    head_tx: oneshot::Sender<ObjectInfo>,
) -> Result<Verification> {
    let mut head = Head::Wanted(head_tx);
    let mut rerun = matches!(delivery, Delivery::Copy(_));
    loop {
        match run_once(&ctx, &job, &delivery, &mut head).await? {
            Outcome::Done(verification) => {
                ctx.metrics.add_download_verification(&verification);
                return Ok(verification);
            }
            Outcome::WholeObjectMismatch(_) if rerun => rerun = false,
            Outcome::WholeObjectMismatch(e) if matches!(delivery, Delivery::Stream { .. }) => {
                return Err(e.with_retryable(false))
            }
            Outcome::WholeObjectMismatch(e) => return Err(e),
        }
    }
}

/// The object's metadata: still to be sent to the caller, or what the caller was given (a
/// rerun must find the same object).
enum Head {
    Wanted(oneshot::Sender<ObjectInfo>),
    Sent(ObjectInfo),
    Taken,
}

/// How a complete pass over the parts ended.
enum Outcome {
    Done(Verification),
    /// Every part arrived, but together they do not match the object's checksum.
    WholeObjectMismatch(Error),
}

fn window_of(delivery: &Delivery) -> Option<&Arc<Semaphore>> {
    match delivery {
        Delivery::Stream { window, .. } => Some(window),
        Delivery::Copy(_) => None,
    }
}

async fn run_once<C: ObjectClient>(
    ctx: &Arc<Context<C>>,
    job: &Arc<Download>,
    delivery: &Delivery,
    sent: &mut Head,
) -> Result<Outcome> {
    let part_size = job.part_size(ctx);
    let range = job.options.range.clone();
    let (start, end) = range.as_ref().map_or((0, u64::MAX), |r| (r.start, r.end));
    if start >= end {
        return Err(Error::invalid(OP, format!("empty byte range {start}..{end}")));
    }
    let admission = ctx.scheduler.admit(window_of(delivery), Some(part_size)).await;
    let first = start..end.min(start.saturating_add(part_size));
    // Verifying a whole download needs the object's checksum, which S3 sends only on an
    // unranged GET: ask for the whole object then and read only the first part from it.
    let unranged = range.is_none() && job.verifies(ctx);
    let (head, body) = open_first(ctx, job, first, start == 0, unranged).await?;
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
        version_id: head.version_id.clone(),
        verification: None,
    };
    *sent = match std::mem::replace(sent, Head::Taken) {
        Head::Wanted(tx) => {
            // Counted once per download, not again on a rerun.
            ctx.metrics.add_download_expected(limit - start);
            tx.send(info.clone()).map_err(|_| Error::cancelled(OP))?;
            Head::Sent(info)
        }
        Head::Sent(first) if (&first.etag, first.size) != (&info.etag, info.size) => {
            return Err(Error::new(ErrorKind::ObjectChanged, OP, "the object changed before the download was rerun")
                .with_retryable(false));
        }
        other => other,
    };
    let validator = Arc::new(Validator { etag: head.etag.clone(), total });
    let mut tasks = JoinSet::new();
    let first_range = head.start..head.end.min(head.start + part_size);
    let plan = match job.verifies(ctx) {
        true => Box::pin(verify::plan(ctx, job, &head, first_range.end >= limit)).await,
        false => verify::Plan::none(crate::types::NotVerifiedReason::Disabled),
    };
    let (first_check, part_check, ordered) = match &plan.check {
        Check::None => (PartCheck::None, PartCheck::None, None),
        Check::Response(claim) => (PartCheck::Whole(*claim), PartCheck::None, None),
        Check::Combine(claim) => (PartCheck::Crc(claim.algorithm), PartCheck::Crc(claim.algorithm), None),
        Check::Ordered { algorithm, segments, composite } => {
            let hasher = verify::spawn_ordered(*algorithm, segments.clone(), *composite);
            (PartCheck::None, PartCheck::None, Some(hasher))
        }
    };
    let tee = ordered.as_ref().map(|(tx, _)| tx);
    let mut part_crcs = Vec::new();
    let job_of = |range: Range<u64>, admission: Admission, initial, check| {
        let len = range.end - range.start;
        let (sink, slot) = make_sink(delivery, len, admission, tee);
        PartJob {
            ctx: ctx.clone(),
            download: job.clone(),
            range,
            validator: validator.clone(),
            initial,
            slot,
            sink,
            check,
        }
    };
    let first_job = job_of(first_range.clone(), admission, Some((head, body)), first_check);
    if first_range.end >= limit {
        // A download of one part (most small objects) runs it in the driver's own task: a
        // task spawned and joined per object cost two wake-ups and a future moved to the heap.
        // Boxed: its state (the race of bodies) would otherwise sit in the driver's future.
        part_crcs.extend(Box::pin(first_job.run()).await?);
    } else {
        tasks.spawn(first_job.run());
    }

    for range in plan::later_parts(first_range.end, limit, part_size) {
        let admission = ctx.scheduler.admit(window_of(delivery), Some(range.end - range.start)).await;
        // Fail fast: stop admitting parts once one has failed.
        while let Some(done) = tasks.try_join_next() {
            part_crcs.extend(joined(done)?);
        }
        tasks.spawn(job_of(range, admission, None, part_check).run());
    }
    while let Some(done) = tasks.join_next().await {
        part_crcs.extend(joined(done)?);
    }
    let mismatch = match (plan.check, ordered) {
        (Check::Combine(claim), _) => {
            part_crcs.sort_unstable_by_key(|(start, _, _)| *start);
            let algorithm = claim.algorithm;
            let combined = part_crcs
                .into_iter()
                .map(|(_, sum, len)| (sum, len))
                .reduce(|(a, _), (b, len_b)| (algorithm.combine(a, b, len_b).expect("a CRC combines"), len_b));
            combined.and_then(|(sum, _)| crate::checksum::check(algorithm, claim.sum, sum).err()).map(|m| (None, m))
        }
        (_, Some((tx, hasher))) => {
            drop(tx);
            let result = hasher.await.map_err(|_| {
                Error::new(ErrorKind::Internal, OP, "the checksum thread panicked").with_retryable(false)
            })?;
            result.err()
        }
        _ => None,
    };
    if let Some((part, (algorithm, want, got))) = mismatch {
        ctx.metrics.add_failure(ErrorKind::ChecksumMismatch, false);
        let what = match part {
            Some(n) => format!("upload part {n} of the object does not match its {algorithm} checksum"),
            None => format!("the object's bytes do not match its {algorithm} checksum"),
        };
        return Ok(Outcome::WholeObjectMismatch(Error::new(
            ErrorKind::ChecksumMismatch,
            OP,
            format!("{what} (expected {want}, computed {got})"),
        )));
    }
    if matches!(plan.verification, Verification::FullObject(_) | Verification::Parts { .. })
        && !matches!(first_check, PartCheck::Whole(_))
    {
        ctx.metrics.add_verified();
    }
    Ok(Outcome::Done(plan.verification))
}

fn joined(done: std::result::Result<Result<Option<PartCrc>>, tokio::task::JoinError>) -> Result<Option<PartCrc>> {
    done.map_err(|_| Error::new(ErrorKind::Internal, OP, "a part task panicked").with_retryable(false))?
}

/// Where a part admitted with `admission` puts its bytes; returns the sink and the slot the
/// part's exchange holds.
fn make_sink(
    delivery: &Delivery,
    len: u64,
    admission: Admission,
    tee: Option<&mpsc::UnboundedSender<TeeChunk>>,
) -> (PartSink, ConnectionSlot) {
    let Admission { window, memory, slot } = admission;
    let permit = Arc::new(memory.expect("download parts reserve memory"));
    let out = match delivery {
        Delivery::Copy(tx) => Out::Copy(tx.clone()),
        Delivery::Stream { parts, .. } => {
            let (tx, rx) = mpsc::unbounded_channel();
            // The reader gets parts in admission order, which is part order.
            let _ = parts.send(StreamPart {
                len,
                rx,
                _memory: permit.clone(),
                _window: window.expect("stream parts hold a window permit"),
            });
            Out::Stream(tx)
        }
    };
    (PartSink { out, permit, tee: tee.cloned() }, slot)
}

/// What the caller's conditions failing on the first request means: a 412 to the caller's
/// `If-Match` is [`ErrorKind::PreconditionFailed`] (the S3 layer calls every 412
/// `ObjectChanged`, which is what it means for the pinned later parts), a 304 to
/// `If-None-Match` is [`ErrorKind::NotModified`]. Both are final.
pub(crate) fn condition_error(options: &GetOptions, e: Error) -> Error {
    let kind = match e.http_status() {
        Some(412) if options.if_match.is_some() => ErrorKind::PreconditionFailed,
        Some(304) if options.if_none_match.is_some() => ErrorKind::NotModified,
        _ => return e,
    };
    let what = match kind {
        ErrorKind::NotModified => "the object still has the ETag given as If-None-Match",
        _ => "the object does not have the ETag given as If-Match",
    };
    let mut out = Error::new(kind, e.operation(), format!("{what} ({e})")).with_retryable(false);
    if let Some(status) = e.http_status() {
        out = out.with_http(status, e.s3_code().map(str::to_string), e.request_id().map(str::to_string));
    }
    out
}

/// The first request: discovers size and ETag (see the module docs for 416 and 200). A 416
/// means an empty object only when the read starts at 0 (`may_be_empty`); otherwise the range
/// lies past the end of the object and the 416 is the answer.
async fn open_first<C: ObjectClient>(
    ctx: &Context<C>,
    job: &Download,
    first: Range<u64>,
    may_be_empty: bool,
    unranged: bool,
) -> Result<(RangeHead, C::Body)> {
    let o = &job.options;
    let mut part = GetPart {
        range: (!unranged).then(|| first.clone()),
        if_match: o.if_match.as_deref(),
        if_none_match: o.if_none_match.as_deref(),
        version_id: o.version_id.as_deref(),
        checksum_mode: job.verifies(ctx),
    };
    let mut retry = Retry::new(ctx.store.retry_policy());
    loop {
        // Boxed: the request future is kilobytes, and every driver future holding it inline
        // was copied whole when spawned (a visible share of a small GET's CPU).
        let result = match Box::pin(ctx.store.get(&job.bucket, &job.key, &part, retry.attempt())).await {
            Err(e) if may_be_empty && e.http_status() == Some(416) => {
                part.range = None;
                let whole = Box::pin(ctx.store.get(&job.bucket, &job.key, &part, retry.attempt())).await;
                part.range = (!unranged).then(|| first.clone());
                whole
            }
            other => other,
        };
        match result {
            Ok(v) => {
                retry.succeeded();
                return Ok(v);
            }
            Err(e) => retry.on_error(condition_error(o, e)).await?,
        }
    }
}

/// One part request, admitted and ready to run in a task of its own.
struct PartJob<C: ObjectClient> {
    ctx: Arc<Context<C>>,
    download: Arc<Download>,
    range: Range<u64>,
    validator: Arc<Validator>,
    /// The first part's answer, already open.
    initial: Option<(RangeHead, C::Body)>,
    slot: ConnectionSlot,
    sink: PartSink,
    check: PartCheck,
}

impl<C: ObjectClient> PartJob<C> {
    /// Receives the part into its sink (with retries); frees the slot when the exchange ends.
    /// A failure is passed to a stream's reader too.
    async fn run(self) -> Result<Option<PartCrc>> {
        let PartJob { ctx, download, range, validator, initial, slot, mut sink, check } = self;
        let start = range.start;
        let req = PartRequest { ctx: &ctx, download: &download, range, validator: &validator };
        let result = req.fetch(initial, &mut sink, check).await;
        drop(slot);
        if let Err(e) = &result {
            sink.fail(e);
        }
        result.map(|crc| crc.map(|(sum, len)| (start, sum, len)))
    }
}

/// What of a part has been received so far, across attempts.
struct Progress {
    /// First byte not yet delivered (or held).
    next: u64,
    /// The object's checksum, when this part is the whole object and is checked on its own.
    expected: Option<Claim>,
    /// That checksum and the hash of the bytes so far (started at the part's first byte, and
    /// kept across attempts that resume mid-part: ranged answers carry no checksum).
    verifier: Option<Verifier>,
    /// Bytes of an in-order stream held back until the checksum has been checked, so a
    /// reader never sees bytes that fail verification.
    held: Vec<Bytes>,
    /// The CRC of this part's bytes, when the whole download is checked from part CRCs.
    hasher: Option<Hasher>,
}

/// One part's request parameters.
struct PartRequest<'a, C: ObjectClient> {
    ctx: &'a Context<C>,
    download: &'a Download,
    range: Range<u64>,
    validator: &'a Validator,
}

impl<C: ObjectClient> PartRequest<'_, C> {
    /// Receives the range into `sink`, retrying and resuming from the first byte not yet
    /// delivered. A checksum mismatch restarts the part from its first byte (the bad byte
    /// could be anywhere).
    async fn fetch(
        &self,
        mut initial: Option<(RangeHead, C::Body)>,
        sink: &mut PartSink,
        check: PartCheck,
    ) -> Result<Option<(Sum, u64)>> {
        let (expected, hasher) = match check {
            PartCheck::None => (None, None),
            PartCheck::Whole(claim) => (Some(claim), None),
            PartCheck::Crc(algorithm) => (None, Some(algorithm.hasher())),
        };
        let range = &self.range;
        let mut progress = Progress { next: range.start, expected, verifier: None, held: Vec::new(), hasher };
        let mut retry = Retry::new(self.ctx.store.retry_policy());
        loop {
            let started = tokio::time::Instant::now();
            let result = self.attempt(initial.take(), &mut progress, sink, retry.attempt(), started).await;
            match result {
                Ok(()) => {
                    retry.succeeded();
                    let part_size = self.download.part_size(self.ctx);
                    self.ctx.part_latency.record(started.elapsed(), range.end - range.start, part_size);
                    return Ok(progress.hasher.map(|h| (h.finish(), h.len())));
                }
                Err(e) => {
                    if e.kind() == ErrorKind::ChecksumMismatch {
                        progress.next = range.start;
                        progress.verifier = None;
                        progress.held.clear();
                    }
                    retry.on_error(e).await?
                }
            }
        }
    }

    async fn open(&self, from: u64, attempt: u32) -> Result<(RangeHead, C::Body)> {
        let part = GetPart {
            range: Some(from..self.range.end),
            if_match: self.validator.etag.as_deref(),
            if_none_match: None,
            version_id: self.download.options.version_id.as_deref(),
            checksum_mode: false,
        };
        // Boxed for the same reason as in `open_first`.
        Box::pin(self.ctx.store.get(&self.download.bucket, &self.download.key, &part, attempt)).await
    }

    /// One attempt: reads from `next` to the end of the range, hedging if the part is slow.
    async fn attempt(
        &self,
        initial: Option<(RangeHead, C::Body)>,
        progress: &mut Progress,
        sink: &mut PartSink,
        attempt: u32,
        started: tokio::time::Instant,
    ) -> Result<()> {
        let (head, body) = match initial {
            Some(first) => first,
            None => self.open(progress.next, attempt).await?,
        };
        let overruns = head.start == progress.next && head.end > self.range.end;
        self.validator.check(&head, progress.next, if overruns { head.end } else { self.range.end })?;
        if progress.next == self.range.start {
            progress.verifier = progress.expected.map(Verifier::new);
        }
        let primary = Source { pos: progress.next, body, hedge: false, overruns };
        let hedge_after = self.ctx.part_latency.hedge_after(
            &self.ctx.config.hedging,
            self.range.end - self.range.start,
            self.download.part_size(self.ctx),
        );
        let mut race = Race::new(primary, hedge_after.map(|d| started + d));
        let try_slot = || {
            let slot = self.ctx.scheduler.try_slot();
            if slot.is_some() {
                self.ctx.metrics.add_hedge(false);
            }
            slot
        };
        while progress.next < self.range.end {
            let next = progress.next;
            let open = |slot| -> Opening<'_, C::Body> {
                Box::pin(async move {
                    let (head, body) = self.open(next, 0).await?;
                    Ok((head, body, slot))
                })
            };
            let accept =
                |head: &RangeHead| self.validator.check(head, head.start, self.range.end).is_ok() && head.start <= next;
            match race.next(try_slot, open, accept).await {
                Read::Primary(chunk) => match self.take(&mut race.primary, chunk, progress, sink) {
                    Ok(()) => {}
                    // The hedge carries on alone when the original request fails.
                    Err(e) if e.kind() != ErrorKind::Cancelled && race.hedge.is_some() => {
                        tracing::debug!(error = %e, "original request failed; the hedge goes on");
                        race.promote();
                    }
                    Err(e) => return Err(e),
                },
                Read::Hedge(chunk) => {
                    let source = race.hedge.as_mut().expect("a hedge read comes from a hedge");
                    if let Err(e) = self.take(source, chunk, progress, sink) {
                        if e.kind() == ErrorKind::Cancelled {
                            return Err(e);
                        }
                        tracing::debug!(error = %e, "hedge request failed");
                        race.drop_hedge();
                    }
                }
            }
        }
        if race.hedge_won(self.range.end) {
            self.ctx.metrics.add_hedge(true);
        }
        race.finish(self.range.end).await;
        if let Some(verifier) = &progress.verifier {
            if let Err((algorithm, want, got)) = verifier.finish() {
                progress.held.clear();
                return Err(Error::new(
                    ErrorKind::ChecksumMismatch,
                    OP,
                    format!("the bytes received do not match the object's {algorithm} checksum (expected {want}, computed {got})"),
                ));
            }
            self.ctx.metrics.add_verified();
        }
        let mut offset = self.range.start;
        for data in std::mem::take(&mut progress.held) {
            let len = data.len() as u64;
            sink.put(offset, data)?;
            offset += len;
        }
        Ok(())
    }

    /// Handles one read of `source`: delivers the bytes beyond `progress.next` (another source
    /// may have delivered the rest already), or checks that an ended body ended where it should.
    fn take(
        &self,
        source: &mut Source<C::Body>,
        chunk: Result<Option<Bytes>>,
        progress: &mut Progress,
        sink: &mut PartSink,
    ) -> Result<()> {
        let Some(chunk) = chunk? else {
            if source.pos != self.range.end {
                return Err(Error::new(
                    ErrorKind::Protocol,
                    OP,
                    format!("the body ended at byte {} of {}", source.pos, self.range.end),
                ));
            }
            return Ok(());
        };
        let mut chunk = chunk;
        if source.pos + chunk.len() as u64 > self.range.end {
            if !source.overruns {
                return Err(Error::new(ErrorKind::Protocol, OP, "the body is longer than its range"));
            }
            chunk.truncate((self.range.end - source.pos) as usize);
        }
        let len = chunk.len() as u64;
        let end = source.pos + len;
        if end > progress.next {
            let fresh = chunk.slice((progress.next - source.pos) as usize..);
            if let Some(v) = &mut progress.verifier {
                v.update(&fresh);
            }
            if let Some(h) = &mut progress.hasher {
                h.update(&fresh);
            }
            let at = progress.next;
            progress.next = end;
            match &progress.verifier {
                Some(_) if sink.is_stream() => progress.held.push(fresh),
                _ => sink.put(at, fresh)?,
            }
        }
        source.pos = end;
        Ok(())
    }
}
