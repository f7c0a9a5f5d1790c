//! CreateMultipartUpload.

use http::{header, HeaderName, Method};

use super::{xml, S3Request, S3};
use crate::error::{Error, Operation};
use crate::upload::options::PutOptions;

impl S3 {
    /// Starts a multipart upload; returns its upload id. With checksums on, the upload is
    /// declared `FULL_OBJECT`, so the finished object carries a checksum of its bytes (not of
    /// its parts' checksums) that a later whole-object GET can verify.
    /// The object's metadata (`options`) is given here: the parts carry only bytes.
    ///
    /// Creating is not idempotent: an attempt whose answer was lost may have made an upload
    /// whose id we never learn. When one did, the uploads it left are aborted once an attempt
    /// succeeds (see [`super::lost_create`]).
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
        if let Some(algorithm) = self.upload_checksum_algorithm(bucket).filter(|_| !options.copied_parts) {
            req = req
                .header(HeaderName::from_static("x-amz-checksum-algorithm"), algorithm.name())?
                .header(HeaderName::from_static("x-amz-checksum-type"), "FULL_OBJECT")?;
        }
        let (result, attempts) = self.execute_recorded(&req.recoverable()).await;
        let (head, body) = result?;
        let span = attempts.started.elapsed();
        let result: xml::InitiateMultipartUploadResult = xml::parse(&body, op)?;
        if attempts.lost_answers > 0 {
            let date = super::header_str(&head.headers, "date");
            self.abort_orphans(bucket, key, &result.upload_id, span, date.as_deref()).await;
        }
        Ok(result.upload_id)
    }
}
