//! CompleteMultipartUpload.

use bytes::Bytes;
use http::Method;

use super::{xml, S3Request, S3};
use crate::error::{Error, Operation};

impl S3 {
    /// Completes `upload_id` from `(part number, ETag)` pairs in ascending order; returns the
    /// object's ETag. A 200 whose body is an `<Error>` is an error (S3 does this).
    pub(crate) async fn complete_multipart(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        parts: Vec<(u32, String)>,
    ) -> Result<Option<String>, Error> {
        let op = Operation::CompleteMultipartUpload;
        let doc = xml::CompleteMultipartUpload {
            parts: parts.into_iter().map(|(part_number, etag)| xml::CompletedPart { part_number, etag }).collect(),
        };
        let req = S3Request::new(op, Method::POST, bucket, Some(key))
            .query("uploadId", upload_id)
            .body(Bytes::from(xml::to_string(&doc)));
        let (_, body) = self.execute(&req).await?;
        let result: xml::CompleteMultipartUploadResult = xml::parse(&body, op)?;
        Ok(result.etag)
    }
}
