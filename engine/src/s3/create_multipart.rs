//! CreateMultipartUpload.

use http::Method;

use super::{xml, S3Request, S3};
use crate::error::{Error, Operation};

impl S3 {
    /// Starts a multipart upload; returns its upload id.
    pub(crate) async fn create_multipart(&self, bucket: &str, key: &str) -> Result<String, Error> {
        let op = Operation::CreateMultipartUpload;
        let req = S3Request::new(op, Method::POST, bucket, Some(key)).query("uploads", "");
        let (_, body) = self.execute(&req).await?;
        let result: xml::InitiateMultipartUploadResult = xml::parse(&body, op)?;
        Ok(result.upload_id)
    }
}
