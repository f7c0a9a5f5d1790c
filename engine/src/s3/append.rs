//! Appends to objects in directory buckets: PutObject with `x-amz-write-offset-bytes`.
//!
//! S3 Express One Zone appends a request's body to an object when the offset equals the
//! object's size (0 creates it), and refuses any other offset with `InvalidWriteOffset`. That
//! makes an append not idempotent: when the answer to one is lost (a reset or a timeout after
//! the body went out), the retry meets `InvalidWriteOffset` because the first attempt did
//! append. So a retried append that meets it checks the object: when it now ends, at
//! `offset`, with exactly these bytes (a HEAD for the size, a ranged GET for the bytes, for
//! appends up to [`MAX_CHECKED_BYTES`]), the append succeeded.

use bytes::Bytes;
use http::{HeaderName, Method};

use super::{header_str, S3Request, S3};
use crate::error::{Error, ErrorKind, Operation};

/// Appends longer than this are checked after a lost answer by size alone (and say so).
const MAX_CHECKED_BYTES: usize = 16 << 20;

impl S3 {
    /// Appends `body` to `bucket/key` at `offset` (its size now; 0 creates it); returns the
    /// object's new ETag.
    pub(crate) async fn append_object(
        &self,
        bucket: &str,
        key: &str,
        offset: u64,
        body: Bytes,
    ) -> Result<String, Error> {
        let op = Operation::PutObject;
        let crc = self.upload_checksum(bucket, &body);
        let req = S3Request::new(op, Method::PUT, bucket, Some(key))
            .header(HeaderName::from_static("x-amz-write-offset-bytes"), &offset.to_string())?
            .body(body.clone())
            .checksum(crc);
        let (result, attempts) = self.execute_recorded(&req).await;
        match result {
            Ok((parts, _)) => header_str(&parts.headers, "etag").ok_or_else(|| {
                Error::new(ErrorKind::Protocol, op, "the append's answer has no ETag").with_retryable(false)
            }),
            Err(e) if e.kind() == ErrorKind::WrongWriteOffset && attempts.lost_answers > 0 => {
                match self.appended_already(bucket, key, offset, &body).await {
                    Some(etag) => {
                        tracing::info!(%bucket, %key, offset, "an append whose answer was lost had landed");
                        Ok(etag)
                    }
                    None => Err(e),
                }
            }
            Err(e) => Err(e),
        }
    }

    /// After a lost answer: the object's ETag if it holds `body` at `offset` and ends there.
    async fn appended_already(&self, bucket: &str, key: &str, offset: u64, body: &Bytes) -> Option<String> {
        let end = offset + body.len() as u64;
        let head = S3Request::new(Operation::HeadObject, Method::HEAD, bucket, Some(key));
        let (parts, _) = self.execute(&head).await.ok()?;
        let size: u64 = header_str(&parts.headers, "content-length")?.parse().ok()?;
        let etag = header_str(&parts.headers, "etag")?;
        if size != end {
            return None;
        }
        if body.is_empty() {
            return Some(etag);
        }
        if body.len() > MAX_CHECKED_BYTES {
            tracing::warn!(%bucket, %key, offset, "a lost append's object has the expected size; bytes not compared");
            return Some(etag);
        }
        let get = S3Request::new(Operation::GetObject, Method::GET, bucket, Some(key))
            .header(http::header::RANGE, &format!("bytes={offset}-{}", end - 1))
            .ok()?
            .header(HeaderName::from_static("if-match"), &etag)
            .ok()?;
        let (_, bytes) = self.execute(&get).await.ok()?;
        (bytes == *body).then_some(etag)
    }
}
