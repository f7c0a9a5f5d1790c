//! AbortMultipartUpload.

use http::Method;

use super::{S3Request, S3};
use crate::error::{Error, Operation};

impl S3 {
    /// Aborts `upload_id`, discarding its parts so nothing is billed or left behind.
    pub(crate) async fn abort_multipart(&self, bucket: &str, key: &str, upload_id: &str) -> Result<(), Error> {
        let req = S3Request::new(Operation::AbortMultipartUpload, Method::DELETE, bucket, Some(key))
            .query("uploadId", upload_id);
        self.execute(&req).await.map(|_| ())
    }
}
