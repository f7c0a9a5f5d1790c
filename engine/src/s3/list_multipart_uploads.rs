//! ListMultipartUploads: how callers (and our tests) check that nothing was left behind.

use http::Method;

use super::{xml, S3Request, S3};
use crate::error::{Error, Operation};
use crate::types::MultipartUploadSummary;

impl S3 {
    /// In-progress multipart uploads in `bucket` under `prefix` (first page, up to 1,000).
    pub(crate) async fn list_multipart_uploads(
        &self,
        bucket: &str,
        prefix: Option<&str>,
    ) -> Result<Vec<MultipartUploadSummary>, Error> {
        let op = Operation::ListMultipartUploads;
        let mut req = S3Request::new(op, Method::GET, bucket, None).query("uploads", "");
        if let Some(p) = prefix {
            req = req.query("prefix", p);
        }
        let (_, body) = self.execute(&req).await?;
        let result: xml::ListMultipartUploadsResult = xml::parse(&body, op)?;
        Ok(result.uploads.into_iter().map(|u| MultipartUploadSummary { key: u.key, upload_id: u.upload_id }).collect())
    }
}
