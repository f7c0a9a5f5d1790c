//! UploadPart.

use bytes::Bytes;
use http::Method;

use super::{header_str, S3Request, S3};
use crate::error::{Error, ErrorKind, Operation};

impl S3 {
    /// Uploads part `part_number` (1-based) of `upload_id`; returns the part's ETag.
    pub(crate) async fn upload_part(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part_number: u32,
        body: Bytes,
    ) -> Result<String, Error> {
        let op = Operation::UploadPart;
        let req = S3Request::new(op, Method::PUT, bucket, Some(key))
            .query("partNumber", part_number.to_string())
            .query("uploadId", upload_id)
            .body(body);
        let (parts, _) = self.execute(&req).await?;
        header_str(&parts.headers, "etag")
            .ok_or_else(|| Error::new(ErrorKind::Protocol, op, format!("UploadPart {part_number} answer has no ETag")))
    }
}
