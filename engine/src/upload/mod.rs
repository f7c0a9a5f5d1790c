//! Uploads: a single PutObject at or below the multipart threshold, otherwise
//! CreateMultipartUpload → parallel UploadPart → CompleteMultipartUpload.
//!
//! A [`Multipart`] session owns the upload id and its part tasks. Whatever happens, it ends
//! in exactly one of CompleteMultipartUpload or AbortMultipartUpload: failures abort
//! explicitly (and wait for the abort), and dropping a session that was neither completed
//! nor aborted (a cancelled future, a dropped writer) aborts in the background, so no
//! orphaned parts are left behind to be billed.
//!
//! Part sizes grow so that no upload needs more than S3's 10,000 parts: for a known size the
//! part size is raised up front; for a stream of unknown length it doubles every 1,000 parts.

pub(crate) mod copy;
#[cfg(test)]
mod driver_tests;
pub(crate) mod options;
pub(crate) mod writer;

use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use tokio::task::JoinSet;

use crate::checksum::{Crc, PartHasher};
use crate::config::{MAX_PARTS, MAX_PART_SIZE, MIB};
use crate::context::Context;
use crate::error::{Error, ErrorKind, Operation, Result};
use crate::object_client::ObjectClient;
use crate::s3::copy_object::CopySource;
use crate::s3::upload_part::UploadedPart;
use crate::scheduler::Admission;
use crate::types::PutOutput;
use options::PutOptions;

/// Bytes per positional read of a file part: hashed right after it lands, while in cache.
const READ_PIECE: usize = 256 * 1024;

/// Part size for an upload of `size` bytes: the configured size, raised (in whole MiB) until
/// the upload fits in 10,000 parts.
pub(crate) fn part_size_for(size: u64, base: u64) -> Result<u64> {
    let needed = size.div_ceil(MAX_PARTS).div_ceil(MIB) * MIB;
    let part = base.max(needed);
    if part > MAX_PART_SIZE {
        return Err(Error::invalid(Operation::PutObject, format!("{size} bytes exceed S3's largest object")));
    }
    Ok(part)
}

/// Part size of part `number` (1-based) of a stream of unknown length: doubles every 1,000
/// parts, so 10,000 parts of a stream starting at 8 MiB reach past S3's 5 TiB object limit.
pub(crate) fn stream_part_size(base: u64, number: u32, cap: u64) -> u64 {
    let doublings = ((number.saturating_sub(1)) / 1000).min(20);
    (base << doublings).min(MAX_PART_SIZE).min(cap.max(base))
}

/// Where a part's bytes come from.
#[derive(Debug)]
pub(crate) enum PartBody {
    /// Bytes already in memory (caller's buffer slice or a filled writer buffer), with their
    /// checksum when it was computed while they were written.
    Ready(Bytes, Option<Crc>),
    /// A range of a file, read inside the part task into a pooled buffer.
    File(Arc<std::fs::File>, Range<u64>),
    /// A range of an object the server copies (UploadPartCopy): no bytes pass through here.
    Copy(Arc<CopySource>, Range<u64>),
}

/// One multipart upload in progress.
#[derive(Debug)]
pub(crate) struct Multipart<C: ObjectClient> {
    shared: Arc<Context<C>>,
    bucket: Arc<str>,
    key: Arc<str>,
    upload_id: Arc<str>,
    tasks: JoinSet<Result<UploadedPart>>,
    done: Vec<UploadedPart>,
    size: u64,
    ended: bool,
}

impl<C: ObjectClient> Multipart<C> {
    /// CreateMultipartUpload. Runs on the engine runtime.
    pub(crate) async fn create(
        shared: Arc<Context<C>>,
        bucket: Arc<str>,
        key: Arc<str>,
        options: Arc<PutOptions>,
    ) -> Result<Self> {
        let slot = shared.scheduler.slot().await;
        let upload_id = shared.store.create_multipart(&bucket, &key, &options).await?;
        drop(slot);
        Ok(Multipart {
            shared,
            bucket,
            key,
            upload_id: upload_id.into(),
            tasks: JoinSet::new(),
            done: Vec::new(),
            size: 0,
            ended: false,
        })
    }

    /// Collects finished parts; returns the first part failure.
    pub(crate) fn reap(&mut self) -> Result<()> {
        while let Some(joined) = self.tasks.try_join_next() {
            self.done.push(part_result(joined)?);
        }
        Ok(())
    }

    /// Starts uploading part `number` on the engine runtime, holding what it was admitted
    /// with (a slot, and memory when it reads into a buffer of its own).
    pub(crate) fn spawn_part(&mut self, number: u32, body: PartBody, len: u64, admission: Admission) -> Result<()> {
        if u64::from(number) > MAX_PARTS {
            return Err(Error::invalid(Operation::UploadPart, "the upload needs more than 10,000 parts"));
        }
        self.size += len;
        let (shared, bucket, key, id) =
            (self.shared.clone(), self.bucket.clone(), self.key.clone(), self.upload_id.clone());
        let part = PartUpload { ctx: shared, bucket, key, upload_id: id, number, body, admission };
        self.tasks.spawn_on(part.run(), &self.shared.handle);
        Ok(())
    }

    /// Waits for every part, then CompleteMultipartUpload. Aborts instead on any failure.
    pub(crate) async fn complete(mut self) -> Result<PutOutput> {
        let result = self.complete_inner().await;
        if result.is_err() {
            self.abort().await;
        }
        result
    }

    async fn complete_inner(&mut self) -> Result<PutOutput> {
        while let Some(joined) = self.tasks.join_next().await {
            self.done.push(part_result(joined)?);
        }
        let mut parts = std::mem::take(&mut self.done);
        parts.sort_unstable_by_key(|p| p.number);
        let count = parts.len() as u32;
        let slot = self.shared.scheduler.slot().await;
        let etag = self.shared.store.complete_multipart(&self.bucket, &self.key, &self.upload_id, parts).await?;
        drop(slot);
        self.ended = true;
        Ok(PutOutput { etag: Some(etag), size: self.size, parts: count })
    }

    /// Stops the part tasks and aborts the upload on the server, waiting for the answer.
    /// An abort that fails is logged: the caller's original error matters more.
    pub(crate) async fn abort(mut self) {
        self.tasks.abort_all();
        while self.tasks.join_next().await.is_some() {}
        self.ended = true;
        if let Err(e) = self.shared.store.abort_multipart(&self.bucket, &self.key, &self.upload_id).await {
            tracing::warn!(error = %e, bucket = %self.bucket, key = %self.key, "AbortMultipartUpload failed; the upload may be left behind");
        }
    }
}

impl<C: ObjectClient> Drop for Multipart<C> {
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        // Cancelled: stop the parts now and abort on the server in the background.
        self.tasks.abort_all();
        let (shared, bucket, key, id) =
            (self.shared.clone(), self.bucket.clone(), self.key.clone(), self.upload_id.clone());
        let tracked = self.shared.background.enter();
        self.shared.handle.spawn(async move {
            let _tracked = tracked;
            if let Err(e) = shared.store.abort_multipart(&bucket, &key, &id).await {
                tracing::warn!(error = %e, %bucket, %key, "AbortMultipartUpload after cancel failed");
            }
        });
    }
}

fn part_result(joined: std::result::Result<Result<UploadedPart>, tokio::task::JoinError>) -> Result<UploadedPart> {
    joined.map_err(|e| {
        if e.is_cancelled() {
            Error::cancelled(Operation::UploadPart)
        } else {
            Error::new(ErrorKind::Internal, Operation::UploadPart, "an upload task panicked").with_retryable(false)
        }
    })?
}

/// One admitted UploadPart, ready to run in a task of its own.
struct PartUpload<C: ObjectClient> {
    ctx: Arc<Context<C>>,
    bucket: Arc<str>,
    key: Arc<str>,
    upload_id: Arc<str>,
    number: u32,
    body: PartBody,
    admission: Admission,
}

impl<C: ObjectClient> PartUpload<C> {
    async fn run(self) -> Result<UploadedPart> {
        let PartUpload { ctx, bucket, key, upload_id, number, body, admission } = self;
        let (bytes, crc) = match body {
            PartBody::Ready(b, crc) => (b, crc),
            PartBody::File(file, range) => read_file_range(&ctx, &bucket, file, range).await?,
            PartBody::Copy(source, range) => {
                let part = ctx.store.upload_part_copy(&source, &bucket, &key, &upload_id, number, range).await;
                drop(admission);
                return part;
            }
        };
        let part = ctx.store.upload_part(&bucket, &key, &upload_id, number, bytes.clone(), crc).await?;
        let Admission { memory, slot, .. } = admission;
        drop(slot);
        // Recycle the buffer if nobody else holds it (hyper has dropped its copy by now).
        if memory.is_some() {
            if let Ok(buf) = bytes.try_into_mut() {
                ctx.scheduler.memory.give_back(buf.into());
            }
        }
        drop(memory);
        Ok(part)
    }
}

/// Reads `range` of `file` into a pooled buffer on the blocking pool, hashing each piece
/// right after reading it (while it is in cache) when uploads carry a checksum.
pub(crate) async fn read_file_range<C: ObjectClient>(
    shared: &Arc<Context<C>>,
    bucket: &str,
    file: Arc<std::fs::File>,
    range: Range<u64>,
) -> Result<(Bytes, Option<Crc>)> {
    let len = (range.end - range.start) as usize;
    let mut buf = shared.scheduler.memory.take(len);
    let mut hasher = shared.store.upload_checksum_algorithm(bucket).map(PartHasher::new);
    tokio::task::spawn_blocking(move || {
        buf.resize(len, 0);
        let mut at = 0;
        for piece in buf.chunks_mut(READ_PIECE) {
            file.read_exact_at(piece, range.start + at)
                .map_err(|e| Error::local_io("cannot read the source file", e))?;
            if let Some(h) = hasher.as_mut() {
                h.update(piece);
            }
            at += piece.len() as u64;
        }
        Ok((Bytes::from(buf), hasher.map(|h| h.finish())))
    })
    .await
    .map_err(|_| Error::new(ErrorKind::Internal, Operation::LocalIo, "file reader task failed"))?
}

/// Uploads caller bytes: zero-copy slices of `body` become the parts.
pub(crate) async fn put_bytes<C: ObjectClient>(
    shared: Arc<Context<C>>,
    bucket: Arc<str>,
    key: Arc<str>,
    options: Arc<PutOptions>,
    body: Bytes,
) -> Result<PutOutput> {
    let size = body.len() as u64;
    if size <= shared.config.multipart_threshold_bytes {
        let slot = shared.scheduler.slot().await;
        let etag = shared.store.put_object(&bucket, &key, &options, body).await?;
        drop(slot);
        return Ok(PutOutput { etag: Some(etag), size, parts: 1 });
    }
    let plan = PartPlan { size, base_part_size: shared.config.part_size_bytes, reserve_memory: false };
    multipart_known_size(shared, bucket, key, options, plan, |r| {
        PartBody::Ready(body.slice(r.start as usize..r.end as usize), None)
    })
    .await
}

/// Uploads a file with parallel positional reads.
pub(crate) async fn put_file<C: ObjectClient>(
    shared: Arc<Context<C>>,
    bucket: Arc<str>,
    key: Arc<str>,
    options: Arc<PutOptions>,
    path: &Path,
) -> Result<PutOutput> {
    let path_buf = path.to_path_buf();
    let file = tokio::task::spawn_blocking(move || std::fs::File::open(&path_buf))
        .await
        .map_err(|_| Error::new(ErrorKind::Internal, Operation::LocalIo, "file task failed"))?
        .map_err(|e| Error::local_io(format!("cannot open {}", path.display()), e))?;
    let meta = file.metadata().map_err(|e| Error::local_io(format!("cannot read {}", path.display()), e))?;
    if meta.is_dir() {
        return Err(Error::invalid(Operation::PutObject, format!("{} is a directory, not a file", path.display())));
    }
    let size = meta.len();
    let file = Arc::new(file);
    if size <= shared.config.multipart_threshold_bytes {
        let memory = shared.scheduler.memory.reserve(size).await;
        let (body, _) = read_file_range(&shared, &bucket, file, 0..size).await?;
        let out = put_bytes(shared, bucket, key, options, body).await;
        drop(memory);
        return out;
    }
    let plan = PartPlan { size, base_part_size: shared.config.part_size_bytes, reserve_memory: true };
    multipart_known_size(shared, bucket, key, options, plan, |r| PartBody::File(file.clone(), r)).await
}

/// How a known-size multipart upload is cut.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PartPlan {
    /// The object's size.
    pub(crate) size: u64,
    /// The part size, grown to fit 10,000 parts.
    pub(crate) base_part_size: u64,
    /// Whether each part first reserves its bytes from the memory budget (it will read them
    /// into a buffer); caller-owned bytes and server-side copies need no reservation.
    pub(crate) reserve_memory: bool,
}

/// A multipart upload cut as `plan` says, whose parts come from `part(range)`.
pub(crate) async fn multipart_known_size<C: ObjectClient>(
    shared: Arc<Context<C>>,
    bucket: Arc<str>,
    key: Arc<str>,
    options: Arc<PutOptions>,
    plan: PartPlan,
    part: impl Fn(Range<u64>) -> PartBody,
) -> Result<PutOutput> {
    let PartPlan { size, base_part_size, reserve_memory } = plan;
    let part_size = part_size_for(size, base_part_size)?;
    let mut mp = Multipart::create(shared.clone(), bucket, key, options).await?;
    let submitted = async {
        for (i, start) in (0..size).step_by(part_size as usize).enumerate() {
            let end = (start + part_size).min(size);
            let admission = shared.scheduler.admit(None, reserve_memory.then_some(end - start)).await;
            mp.reap()?;
            mp.spawn_part(i as u32 + 1, part(start..end), end - start, admission)?;
        }
        Ok(())
    }
    .await;
    match submitted {
        Ok(()) => mp.complete().await,
        Err(e) => {
            mp.abort().await;
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_size_grows_to_fit_10000_parts() {
        assert_eq!(part_size_for(0, 8 * MIB).unwrap(), 8 * MIB);
        assert_eq!(part_size_for(80_000 * MIB, 8 * MIB).unwrap(), 8 * MIB);
        let big = 200_000 * MIB;
        let p = part_size_for(big, 8 * MIB).unwrap();
        assert!(big.div_ceil(p) <= MAX_PARTS && p % MIB == 0 && p > 8 * MIB);
        assert!(part_size_for(u64::MAX / 2, 8 * MIB).is_err());
    }

    #[test]
    fn stream_parts_double_every_thousand() {
        assert_eq!(stream_part_size(8 * MIB, 1, u64::MAX), 8 * MIB);
        assert_eq!(stream_part_size(8 * MIB, 1000, u64::MAX), 8 * MIB);
        assert_eq!(stream_part_size(8 * MIB, 1001, u64::MAX), 16 * MIB);
        assert_eq!(stream_part_size(8 * MIB, 1001, 10 * MIB), 10 * MIB);
        let total: u64 = (1..=10_000).map(|n| stream_part_size(8 * MIB, n, u64::MAX)).sum();
        assert!(total > 5 * 1024 * 1024 * MIB, "10,000 parts must reach 5 TiB");
    }
}
