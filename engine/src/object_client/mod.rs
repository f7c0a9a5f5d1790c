//! The seam between the transfer drivers and the wire: what a download or an upload asks of an
//! object store, one request at a time.
//!
//! The download and upload drivers are generic over [`ObjectClient`]. The S3 implementation
//! ([`crate::s3::S3`]) signs and sends real requests; the mock in `mock` (the crate's unit
//! tests) keeps objects in memory and injects faults, delays and broken bodies on tokio's clock. Why a trait and not only test
//! servers: the races the drivers must survive (a part failing while the next is admitted, a
//! hedge answering first, a reader lagging behind its window) depend on timing that a real
//! server cannot be made to produce on demand, and on a paused clock they run in milliseconds.
//!
//! Each method is **one attempt**: the drivers own the retry loops (they resume a part from
//! the byte it reached, which a generic retry wrapper could not), using
//! [`ObjectClient::retry_policy`].

#[cfg(test)]
pub(crate) mod mock;

use std::future::Future;
use std::ops::Range;

use bytes::Bytes;

use crate::checksum::{ChecksumAlgorithm, Crc, S3ChecksumAlgorithm};
use crate::error::Error;
use crate::retry::RetryPolicy;
use crate::s3::copy_object::{Copied, CopySource};
use crate::s3::get_object::RangeHead;
use crate::s3::get_object_attributes::ObjectParts;
use crate::s3::upload_part::UploadedPart;
use crate::types::{ListOptions, ListPage, ObjectInfo};
use crate::upload::options::PutOptions;

/// One GET request: what every part request of a download sends.
#[derive(Debug, Clone, Default)]
pub(crate) struct GetPart<'a> {
    /// The bytes asked for; `None` for the whole object.
    pub(crate) range: Option<Range<u64>>,
    /// `If-Match`: the caller's condition on the first request, the pinned ETag on the others.
    pub(crate) if_match: Option<&'a str>,
    /// `If-None-Match` (the first request only).
    pub(crate) if_none_match: Option<&'a str>,
    /// `versionId`: a specific version of a versioned object.
    pub(crate) version_id: Option<&'a str>,
    /// Whether to ask for the object's stored checksum (`x-amz-checksum-mode: ENABLED`).
    pub(crate) checksum_mode: bool,
}

/// A response body read chunk by chunk.
pub(crate) trait ResponseBody: Send + 'static {
    /// The next chunk, `None` at the end. Errors are typed like any request error; a body
    /// dropped before its end closes its connection.
    fn chunk(&mut self) -> impl Future<Output = Result<Option<Bytes>, Error>> + Send;
}

impl ResponseBody for crate::http::Body {
    fn chunk(&mut self) -> impl Future<Output = Result<Option<Bytes>, Error>> + Send {
        crate::http::Body::chunk(self)
    }
}

/// What the drivers need from an object store: one attempt of each request.
pub(crate) trait ObjectClient: Send + Sync + std::fmt::Debug + 'static {
    /// The body of a GET answer.
    type Body: ResponseBody;

    /// The retry policy (attempts, backoff, budget) every driver loop consults.
    fn retry_policy(&self) -> &RetryPolicy;

    /// The checksum algorithm uploads to `bucket` carry, `None` when they carry none.
    fn upload_checksum_algorithm(&self, bucket: &str) -> Option<ChecksumAlgorithm>;

    /// A GET for `part`; the head is checked (Content-Range, Content-Length) before it is
    /// returned, and a non-2xx answer is a typed error.
    fn get(
        &self,
        bucket: &str,
        key: &str,
        part: &GetPart<'_>,
        attempt: u32,
    ) -> impl Future<Output = Result<(RangeHead, Self::Body), Error>> + Send;

    /// HeadObject (with retries: it is a small request on its own).
    fn head(
        &self,
        bucket: &str,
        key: &str,
        part: &GetPart<'_>,
    ) -> impl Future<Output = Result<ObjectInfo, Error>> + Send;

    /// One page of ListObjectsV2 (with retries).
    fn list(&self, bucket: &str, options: &ListOptions) -> impl Future<Output = Result<ListPage, Error>> + Send;

    /// The object's upload parts with their `algorithm` checksums (GetObjectAttributes).
    fn object_parts(
        &self,
        bucket: &str,
        key: &str,
        algorithm: S3ChecksumAlgorithm,
    ) -> impl Future<Output = Result<ObjectParts, Error>> + Send;

    /// PutObject (with retries); returns the ETag.
    fn put_object(
        &self,
        bucket: &str,
        key: &str,
        options: &PutOptions,
        body: Bytes,
    ) -> impl Future<Output = Result<String, Error>> + Send;

    /// CreateMultipartUpload (with retries); returns the upload id.
    fn create_multipart(
        &self,
        bucket: &str,
        key: &str,
        options: &PutOptions,
    ) -> impl Future<Output = Result<String, Error>> + Send;

    /// UploadPart (with retries); `crc` is the body's checksum when already computed.
    fn upload_part(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        number: u32,
        body: Bytes,
        crc: Option<Crc>,
    ) -> impl Future<Output = Result<UploadedPart, Error>> + Send;

    /// CompleteMultipartUpload (with retries); returns the object's ETag.
    fn complete_multipart(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        parts: Vec<UploadedPart>,
    ) -> impl Future<Output = Result<String, Error>> + Send;

    /// AbortMultipartUpload (with retries).
    fn abort_multipart(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> impl Future<Output = Result<(), Error>> + Send;

    /// CopyObject (with retries): `source` to `bucket/key` in one request.
    fn copy_object(
        &self,
        source: &CopySource,
        bucket: &str,
        key: &str,
    ) -> impl Future<Output = Result<Copied, Error>> + Send;

    /// UploadPartCopy (with retries): part `number` of `upload_id` is bytes `range` of `source`.
    fn upload_part_copy(
        &self,
        source: &CopySource,
        bucket: &str,
        key: &str,
        upload_id: &str,
        number: u32,
        range: Range<u64>,
    ) -> impl Future<Output = Result<UploadedPart, Error>> + Send;
}

impl ObjectClient for crate::s3::S3 {
    type Body = crate::http::Body;

    fn retry_policy(&self) -> &RetryPolicy {
        &self.retry
    }

    fn upload_checksum_algorithm(&self, bucket: &str) -> Option<ChecksumAlgorithm> {
        crate::s3::S3::upload_checksum_algorithm(self, bucket)
    }

    fn get(
        &self,
        bucket: &str,
        key: &str,
        part: &GetPart<'_>,
        attempt: u32,
    ) -> impl Future<Output = Result<(RangeHead, Self::Body), Error>> + Send {
        self.get_part(bucket, key, part, attempt)
    }

    fn head(
        &self,
        bucket: &str,
        key: &str,
        part: &GetPart<'_>,
    ) -> impl Future<Output = Result<ObjectInfo, Error>> + Send {
        self.head_object(bucket, key, part)
    }

    fn list(&self, bucket: &str, options: &ListOptions) -> impl Future<Output = Result<ListPage, Error>> + Send {
        self.list_objects(bucket, options)
    }

    fn object_parts(
        &self,
        bucket: &str,
        key: &str,
        algorithm: S3ChecksumAlgorithm,
    ) -> impl Future<Output = Result<ObjectParts, Error>> + Send {
        crate::s3::S3::object_parts(self, bucket, key, algorithm)
    }

    fn put_object(
        &self,
        bucket: &str,
        key: &str,
        options: &PutOptions,
        body: Bytes,
    ) -> impl Future<Output = Result<String, Error>> + Send {
        crate::s3::S3::put_object(self, bucket, key, options, body)
    }

    fn create_multipart(
        &self,
        bucket: &str,
        key: &str,
        options: &PutOptions,
    ) -> impl Future<Output = Result<String, Error>> + Send {
        crate::s3::S3::create_multipart(self, bucket, key, options)
    }

    fn upload_part(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        number: u32,
        body: Bytes,
        crc: Option<Crc>,
    ) -> impl Future<Output = Result<UploadedPart, Error>> + Send {
        crate::s3::S3::upload_part(self, bucket, key, upload_id, number, body, crc)
    }

    fn complete_multipart(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        parts: Vec<UploadedPart>,
    ) -> impl Future<Output = Result<String, Error>> + Send {
        crate::s3::S3::complete_multipart(self, bucket, key, upload_id, parts)
    }

    fn abort_multipart(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> impl Future<Output = Result<(), Error>> + Send {
        crate::s3::S3::abort_multipart(self, bucket, key, upload_id)
    }

    fn copy_object(
        &self,
        source: &CopySource,
        bucket: &str,
        key: &str,
    ) -> impl Future<Output = Result<Copied, Error>> + Send {
        crate::s3::S3::copy_object(self, source, bucket, key)
    }

    fn upload_part_copy(
        &self,
        source: &CopySource,
        bucket: &str,
        key: &str,
        upload_id: &str,
        number: u32,
        range: Range<u64>,
    ) -> impl Future<Output = Result<UploadedPart, Error>> + Send {
        crate::s3::S3::upload_part_copy(self, source, bucket, key, upload_id, number, range)
    }
}
