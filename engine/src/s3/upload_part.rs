//! UploadPart.

use bytes::Bytes;
use http::Method;

use super::{header_str, S3Request, S3};
use crate::checksum::Crc;
use crate::error::{Error, ErrorKind, Operation};

/// What CompleteMultipartUpload needs to know about one uploaded part.
#[derive(Debug, Clone)]
pub(crate) struct UploadedPart {
    pub(crate) number: u32,
    pub(crate) etag: String,
    /// Bytes in the part: a retried Complete that meets `NoSuchUpload` checks the object's
    /// size against the sum (see [`super::lost_complete`]).
    pub(crate) size: u64,
    pub(crate) checksum: Option<Crc>,
}

impl S3 {
    /// Uploads part `part_number` (1-based) of `upload_id` with the configured checksum;
    /// `precomputed` is that checksum when the caller already hashed the bytes on the way in
    /// (see [`S3::upload_checksum_algorithm`]), saving a pass over them.
    pub(crate) async fn upload_part(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part_number: u32,
        body: Bytes,
        precomputed: Option<Crc>,
    ) -> Result<UploadedPart, Error> {
        let op = Operation::UploadPart;
        debug_assert!(precomputed.is_none_or(|c| Some(c.algorithm) == self.upload_checksum_algorithm(bucket)));
        let checksum = precomputed.or_else(|| self.upload_checksum(bucket, &body));
        let size = body.len() as u64;
        let req = S3Request::new(op, Method::PUT, bucket, Some(key))
            .query("partNumber", part_number.to_string())
            .query("uploadId", upload_id)
            .body(body)
            .checksum(checksum);
        let (parts, _) = self.execute(&req).await?;
        let etag = header_str(&parts.headers, "etag").ok_or_else(|| {
            Error::new(ErrorKind::Protocol, op, format!("UploadPart {part_number} answer has no ETag"))
        })?;
        Ok(UploadedPart { number: part_number, etag, size, checksum })
    }
}
