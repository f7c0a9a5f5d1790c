//! CreateMultipartUpload.

use http::{HeaderName, Method};

use super::{xml, S3Request, S3};
use crate::checksum::ChecksumUpload;
use crate::error::{Error, Operation};

impl S3 {
    /// Starts a multipart upload; returns its upload id. With checksums on, the upload is
    /// declared `FULL_OBJECT`, so the finished object carries a checksum of its bytes (not of
    /// its parts' checksums) that a later whole-object GET can verify.
    pub(crate) async fn create_multipart(&self, bucket: &str, key: &str) -> Result<String, Error> {
        let op = Operation::CreateMultipartUpload;
        let mut req = S3Request::new(op, Method::POST, bucket, Some(key)).query("uploads", "");
        if self.checksums.upload != ChecksumUpload::None {
            req = req
                .header(HeaderName::from_static("x-amz-checksum-algorithm"), self.checksums.algorithm.name())?
                .header(HeaderName::from_static("x-amz-checksum-type"), "FULL_OBJECT")?;
        }
        let (_, body) = self.execute(&req).await?;
        let result: xml::InitiateMultipartUploadResult = xml::parse(&body, op)?;
        Ok(result.upload_id)
    }
}
