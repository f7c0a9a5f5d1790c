//! CreateMultipartUpload.

use http::{header, HeaderName, Method};

use super::{xml, S3Request, S3};
use crate::checksum::ChecksumUpload;
use crate::error::{Error, Operation};
use crate::upload::options::PutOptions;

impl S3 {
    /// Starts a multipart upload; returns its upload id. With checksums on, the upload is
    /// declared `FULL_OBJECT`, so the finished object carries a checksum of its bytes (not of
    /// its parts' checksums) that a later whole-object GET can verify.
    /// The object's metadata (`options`) is given here: the parts carry only bytes.
    pub(crate) async fn create_multipart(
        &self,
        bucket: &str,
        key: &str,
        options: &PutOptions,
    ) -> Result<String, Error> {
        let op = Operation::CreateMultipartUpload;
        let mut req = S3Request::new(op, Method::POST, bucket, Some(key)).query("uploads", "");
        if let Some(ct) = &options.content_type {
            req = req.header(header::CONTENT_TYPE, ct)?;
        }
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
