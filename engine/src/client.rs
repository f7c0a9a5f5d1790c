//! The public [`Client`]: owns (or borrows) a tokio runtime and runs every transfer on it.

use std::future::Future;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use tokio::runtime::{Handle, Runtime};
use tokio::sync::{mpsc, oneshot, Semaphore};

use crate::config::ClientConfig;
use crate::context::Context;
use crate::download::{self, options::GetOptions, stream::GetStream, Delivery, Download};
use crate::error::{Error, ErrorKind, Operation, Result};
use crate::metrics::{Metrics, MetricsSnapshot};
use crate::object_client::{GetPart, ObjectClient};
use crate::s3::S3;
use crate::task::TaskHandle;
use crate::types::{
    AppendOutput, BucketSummary, CopyOptions, CopyOutput, DeleteObjectError, DeleteObjectsOutput, ListOptions,
    ListPage, MultipartUploadSummary, ObjectInfo, ObjectSummary, PutOutput,
};
use crate::upload::{self, options::PutOptions, writer::Upload};

#[derive(Debug)]
struct ClientInner {
    shared: Arc<Context>,
    runtime: Option<Runtime>,
}

impl Drop for ClientInner {
    fn drop(&mut self) {
        // Never blocks, so a client may be dropped anywhere, even inside async code.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// An S3 client tuned for throughput. Cheap to clone (clones share connections, memory
/// budget and runtime); dropping the last clone stops its runtime and cancels transfers.
///
/// Every async method may be awaited from any executor: the work runs on the engine's own
/// tokio runtime, and the future only waits for it. Dropping a method's future cancels the
/// transfer (in-flight parts are dropped, an unfinished multipart upload is aborted).
#[derive(Debug, Clone)]
pub struct Client {
    inner: Arc<ClientInner>,
}

impl Client {
    /// A client with its own multi-threaded runtime (`worker_threads` from the config).
    pub fn new(config: ClientConfig) -> Result<Client> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.worker_threads)
            .thread_name("gantry-worker")
            .enable_all()
            .build()
            .map_err(|e| Error::local_io("cannot start the engine runtime", e).with_operation(Operation::Config))?;
        let handle = runtime.handle().clone();
        Self::build(config, handle, Some(runtime))
    }

    /// A client whose tasks run on the caller's runtime `handle` (which must have the IO and
    /// time drivers enabled and outlive the client).
    pub fn with_runtime(config: ClientConfig, handle: Handle) -> Result<Client> {
        Self::build(config, handle, None)
    }

    fn build(config: ClientConfig, handle: Handle, runtime: Option<Runtime>) -> Result<Client> {
        let metrics = Arc::new(Metrics::default());
        let s3 = S3::from_config(&config, metrics.clone())?;
        let shared = Arc::new(Context::new(s3, config, handle, metrics));
        Ok(Client { inner: Arc::new(ClientInner { shared, runtime }) })
    }

    fn shared(&self) -> &Arc<Context> {
        &self.inner.shared
    }

    fn spawn<T: Send + 'static>(
        &self,
        op: Operation,
        fut: impl Future<Output = Result<T>> + Send + 'static,
    ) -> TaskHandle<T> {
        let tracked = self.shared().background.enter();
        let fut = with_deadline(self.shared().config.timeouts.operation, op, fut);
        TaskHandle::spawn(&self.shared().handle, op, async move {
            let _tracked = tracked;
            fut.await
        })
    }

    /// Waits, at most `limit`, until the work that cancelled transfers leave behind is done:
    /// an aborted multipart upload's AbortMultipartUpload answered, a cancelled download's
    /// temporary file removed. Returns whether everything finished in time.
    ///
    /// Why: dropping a transfer's future cancels it at once, but the clean-up runs on the
    /// client's runtime; a program that exits right after (on Ctrl-C) would cut it short and
    /// leave billed parts or a hidden partial file behind.
    pub async fn wait_for_background(&self, limit: std::time::Duration) -> bool {
        let background = self.shared().background.clone();
        let waiter = self.shared().handle.spawn(async move { tokio::time::timeout(limit, background.idle()).await });
        matches!(waiter.await, Ok(Ok(())))
    }

    /// The runtime the client's transfers run on. Bindings use it to run their own glue
    /// tasks (completion callbacks of asynchronous C requests) next to the transfers instead
    /// of on a thread per request.
    pub fn runtime_handle(&self) -> &Handle {
        &self.shared().handle
    }

    /// The validated configuration.
    pub fn config(&self) -> &ClientConfig {
        &self.shared().config
    }

    /// A copy of the client's counters, with what zero configuration detected.
    pub fn metrics(&self) -> MetricsSnapshot {
        let shared = self.shared();
        let mut m = shared.metrics.snapshot(
            shared.store.http.lanes(),
            &shared.scheduler.memory,
            shared.store.credentials.as_deref(),
        );
        m.auto_config = shared.config.auto_config.clone();
        let express = shared.store.sessions.stats();
        m.express_sessions_created = express.created;
        m.express_sessions_refreshed = express.refreshed;
        m.express_sessions_invalidated = express.invalidated;
        m.express_session_reuses = express.reused;
        m
    }

    /// Where the credentials come from: `config` (explicit keys), `environment`,
    /// `web identity`, `profile`, `container`, `imds`, `custom provider`; `None` when
    /// requests are unsigned.
    pub fn credentials_source(&self) -> Option<&'static str> {
        self.shared().store.credentials.as_ref().map(|c| c.source())
    }

    /// Runs `fut` to completion on the calling thread: the blocking entry point for
    /// synchronous callers (CLI, C ABI). Must not be called from inside async code.
    pub fn block_on<F: Future>(&self, fut: F) -> F::Output {
        futures::executor::block_on(fut)
    }

    /// Downloads `bucket/key` into `buf` (which must be at least the object's size); returns
    /// the object's metadata. Bytes land in `buf` straight from the network buffers.
    pub async fn get_into(&self, bucket: &str, key: &str, buf: &mut [u8]) -> Result<ObjectInfo> {
        self.get_into_with(bucket, key, &GetOptions::new(), buf).await
    }

    /// Downloads what `options` select of `bucket/key` into the start of `buf`, with parallel
    /// ranged GETs: the whole object (the buffer must hold it), or
    /// [`GetOptions::range`], of which `min(range.end, size) - range.start` bytes are written
    /// (`size` is the returned [`ObjectInfo::size`]).
    pub async fn get_into_with(
        &self,
        bucket: &str,
        key: &str,
        options: &GetOptions,
        buf: &mut [u8],
    ) -> Result<ObjectInfo> {
        let start = options.range.as_ref().map_or(0, |r| r.start);
        if let Some(range) = &options.range {
            let wanted = range.end.saturating_sub(range.start);
            if wanted > buf.len() as u64 {
                return Err(Error::invalid(
                    Operation::GetObject,
                    format!("the buffer holds {} bytes but the range has {wanted}", buf.len()),
                ));
            }
        }
        let (tx, mut rx) = mpsc::unbounded_channel();
        let (head_tx, head_rx) = oneshot::channel();
        let job = Download::new(bucket, key, options);
        let driver =
            self.spawn(Operation::GetObject, download::run(self.shared().clone(), job, Delivery::Copy(tx), head_tx));
        let Ok(info) = head_rx.await else {
            return Err(driver.await.err().unwrap_or_else(|| Error::cancelled(Operation::GetObject)));
        };
        if options.range.is_none() && info.size > buf.len() as u64 {
            return Err(Error::invalid(
                Operation::GetObject,
                format!("the buffer holds {} bytes but s3://{bucket}/{key} has {}", buf.len(), info.size),
            ));
        }
        while let Some(chunk) = rx.recv().await {
            let at = (chunk.offset - start) as usize;
            buf[at..at + chunk.data.len()].copy_from_slice(&chunk.data);
        }
        let verification = driver.await?;
        Ok(ObjectInfo { verification: Some(verification), ..info })
    }

    /// Downloads bytes `range` of `bucket/key` into the start of `buf` with parallel ranged
    /// GETs (the same version checks as a whole download). A range reaching past the end of
    /// the object is cut at the end; the bytes written are `min(range.end, size) - range.start`
    /// where `size` is the returned [`ObjectInfo::size`]. A range starting at or past the end
    /// fails with the server's 416 (`InvalidRange`).
    pub async fn get_range_into(
        &self,
        bucket: &str,
        key: &str,
        range: std::ops::Range<u64>,
        buf: &mut [u8],
    ) -> Result<ObjectInfo> {
        self.get_into_with(bucket, key, &GetOptions::new().range(range), buf).await
    }

    /// Downloads `bucket/key` into the file at `path` with parallel positional writes. The
    /// bytes go to a temporary file in the same directory that is renamed over `path` only
    /// when the download succeeded, so a failure never leaves a partial file at `path`.
    ///
    /// When `path` already exists and is not a regular file (a device such as `/dev/null`, a
    /// FIFO, a socket), it is opened and written in order instead: renaming over it would
    /// replace the device node, and a pipe's reader wants the bytes in order. A directory is
    /// refused before any request.
    pub async fn download_to_file(&self, bucket: &str, key: &str, path: impl AsRef<Path>) -> Result<ObjectInfo> {
        self.download_to_file_with(bucket, key, &GetOptions::new(), path).await
    }

    /// [`Client::download_to_file`] of what `options` select (a range is written at the
    /// start of the file).
    pub async fn download_to_file_with(
        &self,
        bucket: &str,
        key: &str,
        options: &GetOptions,
        path: impl AsRef<Path>,
    ) -> Result<ObjectInfo> {
        let path = path.as_ref().to_path_buf();
        match std::fs::metadata(&path) {
            Ok(meta) if meta.is_dir() => {
                return Err(Error::invalid(Operation::LocalIo, format!("{} is a directory", path.display())))
            }
            Ok(meta) if !meta.is_file() => return self.download_to_special_file(bucket, key, options, &path).await,
            _ => {}
        }
        let (ctx, job) = (self.shared().clone(), Download::new(bucket, key, options));
        self.spawn(Operation::GetObject, async move { download::to_file::download_file(ctx, job, &path).await }).await
    }

    /// Writes the object into `writer` in order (standard output, a socket, a pipe) and
    /// returns its size, ETag and metadata. Writes happen on a blocking thread of their own, so
    /// a writer that blocks (a pipe whose reader is slow) never stalls a network worker; it
    /// holds the download back through the stream's read window instead of filling memory.
    /// Chunks that arrive together are written together (one vectored write per batch of up
    /// to 1 MiB). The writer is flushed at the end and dropped on the writer thread.
    pub async fn download_to_writer<W: Write + Send + 'static>(
        &self,
        bucket: &str,
        key: &str,
        writer: W,
    ) -> Result<ObjectInfo> {
        self.download_to_writer_with(bucket, key, &GetOptions::new(), writer).await
    }

    /// [`Client::download_to_writer`] of what `options` select.
    pub async fn download_to_writer_with<W: Write + Send + 'static>(
        &self,
        bucket: &str,
        key: &str,
        options: &GetOptions,
        writer: W,
    ) -> Result<ObjectInfo> {
        self.download_into(bucket, key, options, move || Ok(writer)).await
    }

    /// The in-order path of [`Client::download_to_file`] for devices and pipes: renaming a
    /// temporary file over them would replace the node, and a pipe's reader wants the bytes in
    /// order. The file is opened on the writer's thread: opening a FIFO for writing waits for
    /// its reader.
    async fn download_to_special_file(
        &self,
        bucket: &str,
        key: &str,
        options: &GetOptions,
        path: &Path,
    ) -> Result<ObjectInfo> {
        let path = path.to_path_buf();
        self.download_into(bucket, key, options, move || {
            std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .map_err(|e| Error::local_io(format!("cannot open {}", path.display()), e))
        })
        .await
    }

    /// Streams the object into the writer `open` returns, on the client's workers (not the
    /// caller's thread, which may be a `block_on` that would be woken for every chunk).
    async fn download_into<W, O>(&self, bucket: &str, key: &str, options: &GetOptions, open: O) -> Result<ObjectInfo>
    where
        W: Write + 'static,
        O: FnOnce() -> Result<W> + Send + 'static,
    {
        let stream = self.get_stream_with(bucket, key, options).await?;
        let info = stream.info().clone();
        let verification = self.spawn(Operation::GetObject, download::to_writer::stream_into(stream, open)).await?;
        Ok(ObjectInfo { verification: Some(verification), ..info })
    }

    /// Opens `bucket/key` as an in-order stream with a bounded read window (see
    /// [`GetStream`]). Fails here, before any byte, if the object cannot be read.
    pub async fn get_stream(&self, bucket: &str, key: &str) -> Result<GetStream> {
        self.get_stream_with(bucket, key, &GetOptions::new()).await
    }

    /// Opens bytes `range` of `bucket/key` as an in-order stream (the first chunk is byte
    /// `range.start`), so a reader of one record in a large shard fetches only that record,
    /// still with parallel parts. The range is cut at the end of the object; a range starting
    /// at or past the end fails here with the server's 416 (`InvalidRange`).
    pub async fn get_range_stream(&self, bucket: &str, key: &str, range: std::ops::Range<u64>) -> Result<GetStream> {
        self.get_stream_with(bucket, key, &GetOptions::new().range(range)).await
    }

    /// Opens what `options` select of `bucket/key` as an in-order stream.
    pub async fn get_stream_with(&self, bucket: &str, key: &str, options: &GetOptions) -> Result<GetStream> {
        let shared = self.shared().clone();
        let part_size = options.part_size_bytes.unwrap_or(shared.config.part_size_bytes).max(1);
        let window_parts = (shared.config.read_window_bytes / part_size).max(1) as usize;
        let (parts_tx, parts_rx) = mpsc::unbounded_channel();
        let (head_tx, head_rx) = oneshot::channel();
        let delivery = Delivery::Stream { parts: parts_tx, window: Arc::new(Semaphore::new(window_parts)) };
        let job = Download::new(bucket, key, options);
        let driver = self.spawn(Operation::GetObject, download::run(shared, job, delivery, head_tx));
        match head_rx.await {
            Ok(info) => Ok(GetStream::new(info, parts_rx, driver)),
            Err(_) => Err(driver.await.err().unwrap_or_else(|| Error::cancelled(Operation::GetObject))),
        }
    }

    /// Uploads `body` (zero-copy: parts are slices of it).
    pub async fn put(&self, bucket: &str, key: &str, body: impl Into<Bytes>) -> Result<PutOutput> {
        self.put_with(bucket, key, body, &PutOptions::new()).await
    }

    /// [`Client::put`] with per-object settings such as the content type.
    pub async fn put_with(
        &self,
        bucket: &str,
        key: &str,
        body: impl Into<Bytes>,
        options: &PutOptions,
    ) -> Result<PutOutput> {
        let options = Arc::new(options.clone());
        let (shared, bucket, key, body) = (self.shared().clone(), bucket.into(), key.into(), body.into());
        self.spawn(Operation::PutObject, upload::put_bytes(shared, bucket, key, options, body)).await
    }

    /// Uploads the file at `path`, reading parts in parallel with positional reads.
    pub async fn put_file(&self, bucket: &str, key: &str, path: impl AsRef<Path>) -> Result<PutOutput> {
        self.put_file_with(bucket, key, path, &PutOptions::new()).await
    }

    /// [`Client::put_file`] with per-object settings such as the content type (the engine
    /// does not guess one from the file name: `gantry cp` does, callers may).
    pub async fn put_file_with(
        &self,
        bucket: &str,
        key: &str,
        path: impl AsRef<Path>,
        options: &PutOptions,
    ) -> Result<PutOutput> {
        let (shared, bucket, key): (_, Arc<str>, Arc<str>) = (self.shared().clone(), bucket.into(), key.into());
        let (path, options) = (path.as_ref().to_path_buf(), Arc::new(options.clone()));
        self.spawn(Operation::PutObject, async move { upload::put_file(shared, bucket, key, options, &path).await })
            .await
    }

    /// Starts a writer-style upload of unknown length (see [`Upload`]).
    pub fn upload(&self, bucket: &str, key: &str) -> Upload {
        self.upload_with(bucket, key, &PutOptions::new())
    }

    /// [`Client::upload`] with per-object settings such as the content type.
    pub fn upload_with(&self, bucket: &str, key: &str, options: &PutOptions) -> Upload {
        Upload::new(self.shared().clone(), bucket.into(), key.into(), Arc::new(options.clone()))
    }

    /// HeadObject: size, ETag and metadata.
    pub async fn head_object(&self, bucket: &str, key: &str) -> Result<ObjectInfo> {
        self.head_object_with(bucket, key, &GetOptions::new()).await
    }

    /// HeadObject of the version and under the conditions `options` name (its range, part
    /// size and checksum mode do not apply): what a GET with the same options would find.
    pub async fn head_object_with(&self, bucket: &str, key: &str, options: &GetOptions) -> Result<ObjectInfo> {
        let (shared, job) = (self.shared().clone(), Download::new(bucket, key, options));
        self.spawn(Operation::HeadObject, async move {
            let o = &job.options;
            let part = GetPart {
                if_match: o.if_match.as_deref(),
                if_none_match: o.if_none_match.as_deref(),
                version_id: o.version_id.as_deref(),
                ..GetPart::default()
            };
            let head = shared.store.head(&job.bucket, &job.key, &part).await;
            head.map_err(|e| download::condition_error(o, e))
        })
        .await
    }

    /// Appends `body` to `bucket/key` in a directory bucket (S3 Express One Zone), where
    /// `offset` must be the object's current size (0 creates it); returns the new ETag and
    /// size, the offset of the next append. A stale offset fails with
    /// [`ErrorKind::WrongWriteOffset`](crate::ErrorKind::WrongWriteOffset); general-purpose
    /// buckets refuse appends (`NotImplemented`). One request, up to 5 GiB; an object takes at
    /// most 10,000 appends. A retry after a lost answer checks whether the append landed.
    pub async fn append(&self, bucket: &str, key: &str, offset: u64, body: impl Into<Bytes>) -> Result<AppendOutput> {
        let (shared, bucket, key, body) = (self.shared().clone(), bucket.to_string(), key.to_string(), body.into());
        self.spawn(Operation::PutObject, async move {
            let len = body.len() as u64;
            let etag = shared.store.append_object(&bucket, &key, offset, body).await?;
            Ok(AppendOutput { etag, size: offset + len })
        })
        .await
    }

    /// DeleteObject.
    pub async fn delete_object(&self, bucket: &str, key: &str) -> Result<()> {
        let (shared, bucket, key) = (self.shared().clone(), bucket.to_string(), key.to_string());
        self.spawn(Operation::DeleteObject, async move { shared.store.delete_object(&bucket, &key).await }).await
    }

    /// Deletes `keys` from `bucket` with DeleteObjects, 1,000 keys a request, the requests in
    /// flight together (within the connection limit). A key that does not exist counts as
    /// deleted (as S3 says); a key the server refuses is listed in
    /// [`DeleteObjectsOutput::errors`] with its code while the others go on. A batch whose
    /// request fails as a whole (after its retries) lists each of its keys there with that
    /// failure's S3 code and message, and the other batches still run; only when every batch
    /// failed does the call fail, with the first batch's error (nothing was deleted).
    pub async fn delete_objects<I, K>(&self, bucket: &str, keys: I) -> Result<DeleteObjectsOutput>
    where
        I: IntoIterator<Item = K>,
        K: Into<String>,
    {
        let keys: Vec<String> = keys.into_iter().map(Into::into).collect();
        let (shared, bucket) = (self.shared().clone(), bucket.to_string());
        self.spawn(Operation::DeleteObjects, async move {
            let batches = keys.chunks(crate::s3::delete_objects::MAX_KEYS_PER_DELETE).map(|batch| {
                let (shared, bucket) = (&shared, &bucket);
                async move {
                    let slot = shared.scheduler.slot().await;
                    let refused = shared.store.delete_objects(bucket, batch).await;
                    drop(slot);
                    refused.map(|r| (batch.len(), r))
                }
            });
            let results = futures::future::join_all(batches).await;
            if !results.iter().any(Result::is_ok) {
                if let Some(Err(e)) = results.into_iter().next() {
                    return Err(e);
                }
                return Ok(DeleteObjectsOutput::default());
            }
            let mut out = DeleteObjectsOutput::default();
            for (batch, result) in keys.chunks(crate::s3::delete_objects::MAX_KEYS_PER_DELETE).zip(results) {
                match result {
                    Ok((sent, refused)) => {
                        out.deleted += (sent - refused.len()) as u64;
                        out.errors.extend(refused);
                    }
                    Err(e) => out.errors.extend(batch.iter().map(|key| DeleteObjectError {
                        key: key.clone(),
                        code: Some(e.s3_code().map_or_else(|| format!("{:?}", e.kind()), str::to_string)),
                        message: Some(e.message().to_string()),
                    })),
                }
            }
            Ok(out)
        })
        .await
    }

    /// Copies `src_bucket/src_key` to `bucket/key` on the server: CopyObject up to the copy
    /// threshold (1 GiB by default, as the CRT), parallel UploadPartCopy parts of the copy part
    /// size (128 MiB) above it (as many in flight as the connection limit allows), aborted on
    /// failure as uploads are. The source's ETag pins
    /// its version ([`ErrorKind::ObjectChanged`](crate::ErrorKind::ObjectChanged) if it is
    /// replaced mid-copy); the content type is kept. A single CopyObject asks the server for
    /// the configured upload checksum of the copy; a multipart copy leaves the checksum to the
    /// server's default. No object bytes cross this client.
    pub async fn copy_object(&self, src_bucket: &str, src_key: &str, bucket: &str, key: &str) -> Result<CopyOutput> {
        self.copy_object_with(src_bucket, src_key, bucket, key, &CopyOptions::new()).await
    }

    /// [`Client::copy_object`] with options: a source size known from a listing
    /// ([`CopyOptions::source_size`]) saves the HEAD before a single CopyObject, which halves
    /// the requests of a fleet of small copies.
    pub async fn copy_object_with(
        &self,
        src_bucket: &str,
        src_key: &str,
        bucket: &str,
        key: &str,
        options: &CopyOptions,
    ) -> Result<CopyOutput> {
        let (shared, src_bucket, src_key) = (self.shared().clone(), src_bucket.to_string(), src_key.to_string());
        let (bucket, key): (Arc<str>, Arc<str>) = (bucket.into(), key.into());
        let options = options.clone();
        self.spawn(Operation::CopyObject, async move {
            upload::copy::copy_object(shared, &src_bucket, &src_key, bucket, key, &options).await
        })
        .await
    }

    /// One page of ListObjectsV2.
    pub async fn list_objects(&self, bucket: &str, options: &ListOptions) -> Result<ListPage> {
        let (shared, bucket, options) = (self.shared().clone(), bucket.to_string(), options.clone());
        self.spawn(Operation::ListObjectsV2, async move { shared.store.list(&bucket, &options).await }).await
    }

    /// Every object under `prefix`, following continuation tokens.
    pub async fn list_all(&self, bucket: &str, prefix: Option<&str>) -> Result<Vec<ObjectSummary>> {
        let mut options = ListOptions { prefix: prefix.map(str::to_string), ..Default::default() };
        let mut all = Vec::new();
        loop {
            let page = self.list_objects(bucket, &options).await?;
            all.extend(page.objects);
            match page.next_continuation_token {
                Some(token) => options.continuation_token = Some(token),
                None => return Ok(all),
            }
        }
    }

    /// Aborts the multipart upload `upload_id` of `bucket/key`: its parts are deleted and no
    /// longer billed. For what a killed process left behind (`gantry uploads abort`).
    pub async fn abort_multipart_upload(&self, bucket: &str, key: &str, upload_id: &str) -> Result<()> {
        let (shared, bucket, key, id) =
            (self.shared().clone(), bucket.to_string(), key.to_string(), upload_id.to_string());
        self.spawn(
            Operation::AbortMultipartUpload,
            async move { shared.store.abort_multipart(&bucket, &key, &id).await },
        )
        .await
    }

    /// In-progress multipart uploads under `prefix`, every page (what was left behind).
    pub async fn list_multipart_uploads(
        &self,
        bucket: &str,
        prefix: Option<&str>,
    ) -> Result<Vec<MultipartUploadSummary>> {
        let (shared, bucket, prefix) = (self.shared().clone(), bucket.to_string(), prefix.map(str::to_string));
        self.spawn(Operation::ListMultipartUploads, async move {
            shared.store.list_multipart_uploads(&bucket, prefix.as_deref()).await
        })
        .await
    }

    /// ListBuckets: the buckets the credentials own (`gantry ls` with no argument).
    pub async fn list_buckets(&self) -> Result<Vec<BucketSummary>> {
        let shared = self.shared().clone();
        self.spawn(Operation::ListBuckets, async move { shared.store.list_buckets().await }).await
    }

    /// CreateBucket (for S3-compatible stores and tests; AWS buckets are usually made elsewhere).
    pub async fn create_bucket(&self, bucket: &str) -> Result<()> {
        let (shared, bucket) = (self.shared().clone(), bucket.to_string());
        self.spawn(Operation::CreateBucket, async move { shared.store.create_bucket(&bucket).await }).await
    }
}

/// Bounds `fut` by the per-operation deadline, when one is configured. On expiry the future is
/// dropped, which cancels the transfer the usual way (parts stop, uploads abort).
async fn with_deadline<T>(
    deadline: Option<std::time::Duration>,
    op: Operation,
    fut: impl Future<Output = Result<T>>,
) -> Result<T> {
    let Some(limit) = deadline else { return fut.await };
    match tokio::time::timeout(limit, fut).await {
        Ok(result) => result,
        Err(_) => Err(Error::new(ErrorKind::Timeout, op, format!("the operation deadline of {limit:?} passed"))
            .with_retryable(false)),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn client_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<super::Client>();
    }
}
