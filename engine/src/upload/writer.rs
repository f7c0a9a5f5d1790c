//! A writer-style upload of unknown length (checkpoints, generated data).

use std::sync::Arc;

use bytes::Bytes;

use super::{stream_part_size, Multipart, PartBody, PutOptions};
use crate::buffer_pool::MemoryPermit;
use crate::checksum::PartHasher;
use crate::context::Context;
use crate::error::{Operation, Result};
use crate::object_client::ObjectClient;
use crate::s3::S3;
use crate::scheduler::Admission;
use crate::task::TaskHandle;
use crate::types::PutOutput;

/// An upload fed by successive writes, for data whose length is not known up front.
///
/// Bytes are gathered into part buffers (reserved from the memory budget, so a writer that
/// outpaces the network waits in [`Upload::write`] instead of growing memory). Small totals
/// become one PutObject; anything larger becomes a multipart upload whose parts upload while
/// later bytes are still being written.
///
/// Finish with [`Upload::complete`]; [`Upload::abort`] or dropping the writer discards
/// everything, including parts already on the server.
#[derive(Debug)]
pub struct Upload {
    inner: Writer<S3>,
}

impl Upload {
    pub(crate) fn new(shared: Arc<Context>, bucket: Arc<str>, key: Arc<str>, options: Arc<PutOptions>) -> Self {
        Upload { inner: Writer::new(shared, bucket, key, options) }
    }

    /// Appends `data`, taking ownership instead of copying: every whole part's worth that
    /// lines up with a part boundary is uploaded straight from `data`'s memory (which is held
    /// until that part is on the server); only the remainder is copied into a part buffer.
    /// Hand over large buffers (a multiple of the part size) to upload with no copy at all.
    /// Waits while every connection is busy (backpressure).
    pub async fn write_bytes(&mut self, data: Bytes) -> Result<()> {
        self.inner.write_bytes(data).await
    }

    /// Appends a copy of `data`. Waits when the memory budget is exhausted (backpressure).
    pub async fn write(&mut self, data: &[u8]) -> Result<()> {
        self.inner.write(data).await
    }

    /// Bytes written so far.
    pub fn bytes_written(&self) -> u64 {
        self.inner.written
    }

    /// Uploads what is left and completes the object.
    pub async fn complete(self) -> Result<PutOutput> {
        self.inner.complete().await
    }

    /// Discards the upload, aborting any multipart upload on the server, and waits for that.
    pub async fn abort(self) -> Result<()> {
        self.inner.abort().await
    }
}

/// The writer behind [`Upload`], generic over the object store so it runs on the mock in
/// unit tests.
#[derive(Debug)]
pub(crate) struct Writer<C: ObjectClient> {
    shared: Arc<Context<C>>,
    bucket: Arc<str>,
    key: Arc<str>,
    options: Arc<PutOptions>,
    buf: Vec<u8>,
    buf_permit: Option<MemoryPermit>,
    part_number: u32,
    multipart: Option<Multipart<C>>,
    written: u64,
    /// The CRC of `buf`, computed as bytes are copied in (None when uploads carry none).
    hasher: Option<PartHasher>,
    /// A whole part of caller-owned bytes from [`Upload::write_bytes`], waiting to be
    /// flushed; while it is held, `buf` is empty.
    held: Option<Bytes>,
}

impl<C: ObjectClient> Writer<C> {
    pub(crate) fn new(shared: Arc<Context<C>>, bucket: Arc<str>, key: Arc<str>, options: Arc<PutOptions>) -> Self {
        Writer {
            shared,
            bucket,
            key,
            options,
            buf: Vec::new(),
            buf_permit: None,
            part_number: 1,
            multipart: None,
            written: 0,
            hasher: None,
            held: None,
        }
    }

    fn current_part_size(&self) -> u64 {
        let c = &self.shared.config;
        stream_part_size(c.part_size_bytes, self.part_number, c.memory_limit_bytes)
    }

    /// Appends `data`, taking ownership instead of copying: every whole part's worth that
    /// lines up with a part boundary is uploaded straight from `data`'s memory (which is held
    /// until that part is on the server); only the remainder is copied into a part buffer.
    /// Hand over large buffers (a multiple of the part size) to upload with no copy at all.
    /// Waits while every connection is busy (backpressure).
    pub(crate) async fn write_bytes(&mut self, mut data: Bytes) -> Result<()> {
        while !data.is_empty() {
            self.flush_before_more().await?;
            let part_size = self.current_part_size() as usize;
            if self.buf.is_empty() && data.len() >= part_size {
                self.held = Some(data.split_to(part_size));
                self.written += part_size as u64;
                continue;
            }
            let piece = data.split_to((part_size - self.buf.len()).min(data.len()));
            self.write(&piece).await?;
        }
        Ok(())
    }

    /// Appends a copy of `data`. Waits when the memory budget is exhausted (backpressure).
    pub(crate) async fn write(&mut self, mut data: &[u8]) -> Result<()> {
        while !data.is_empty() {
            self.flush_before_more().await?;
            let part_size = self.current_part_size() as usize;
            if self.buf_permit.is_none() {
                self.buf_permit = Some(self.shared.scheduler.memory.reserve(part_size as u64).await);
                self.buf = self.shared.scheduler.memory.take(part_size);
                self.hasher = self.shared.store.upload_checksum_algorithm(&self.bucket).map(PartHasher::new);
            }
            let n = (part_size - self.buf.len()).min(data.len());
            match self.hasher.as_mut() {
                Some(h) => h.copy_from(&mut self.buf, &data[..n]),
                None => self.buf.extend_from_slice(&data[..n]),
            }
            self.written += n as u64;
            data = &data[n..];
        }
        Ok(())
    }

    /// Flushes a held or full part, called when more bytes are about to be added. Only then
    /// is that part known not to be the whole object: a stream of exactly one part stays a
    /// single PutObject.
    async fn flush_before_more(&mut self) -> Result<()> {
        if self.held.is_some() || self.buf.len() == self.current_part_size() as usize {
            self.flush_part().await?;
        }
        Ok(())
    }

    async fn flush_part(&mut self) -> Result<()> {
        if self.multipart.is_none() {
            let (shared, bucket, key) = (self.shared.clone(), self.bucket.clone(), self.key.clone());
            let handle = self.shared.handle.clone();
            let create = Multipart::create(shared, bucket, key, self.options.clone());
            self.multipart = Some(TaskHandle::spawn(&handle, Operation::CreateMultipartUpload, create).await?);
        }
        let slot = self.shared.scheduler.slot().await;
        // The part's memory was reserved when its buffer was started.
        let admission = Admission { window: None, memory: self.buf_permit.take(), slot };
        let mp = self.multipart.as_mut().expect("created above");
        mp.reap()?;
        // Caller-owned bytes are hashed by the part upload; copied ones were hashed on the way in.
        let (body, crc) = match self.held.take() {
            Some(held) => (held, None),
            None => (Bytes::from(std::mem::take(&mut self.buf)), self.hasher.take().map(|h| h.finish())),
        };
        let len = body.len() as u64;
        mp.spawn_part(self.part_number, PartBody::Ready(body, crc), len, admission)?;
        self.part_number += 1;
        Ok(())
    }

    /// Uploads what is left and completes the object.
    pub(crate) async fn complete(mut self) -> Result<PutOutput> {
        let handle = self.shared.handle.clone();
        match self.multipart.take() {
            None => {
                let body = self.held.take().unwrap_or_else(|| Bytes::from(std::mem::take(&mut self.buf)));
                let permit = self.buf_permit.take();
                let (shared, bucket, key) = (self.shared.clone(), self.bucket.clone(), self.key.clone());
                let fut = super::put_bytes(shared, bucket, key, self.options.clone(), body);
                let out = TaskHandle::spawn(&handle, Operation::PutObject, fut).await;
                drop(permit);
                out
            }
            Some(mp) => {
                self.multipart = Some(mp);
                if self.held.is_some() || !self.buf.is_empty() {
                    self.flush_part().await?;
                }
                let mp = self.multipart.take().expect("present");
                TaskHandle::spawn(&handle, Operation::CompleteMultipartUpload, mp.complete()).await
            }
        }
    }

    /// Discards the upload, aborting any multipart upload on the server, and waits for that.
    pub(crate) async fn abort(mut self) -> Result<()> {
        if let Some(mp) = self.multipart.take() {
            let handle = self.shared.handle.clone();
            TaskHandle::spawn(&handle, Operation::AbortMultipartUpload, async move {
                mp.abort().await;
                Ok(())
            })
            .await?;
        }
        Ok(())
    }
}

impl<C: ObjectClient> Drop for Writer<C> {
    fn drop(&mut self) {
        if self.buf.capacity() > 0 {
            self.shared.scheduler.memory.give_back(std::mem::take(&mut self.buf));
        }
        // A multipart upload still held here aborts itself when dropped.
    }
}
