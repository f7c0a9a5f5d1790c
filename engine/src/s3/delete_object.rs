//! DeleteObject.

use http::Method;

use super::{S3Request, S3};
use crate::error::{Error, Operation};

impl S3 {
    /// Deletes `bucket/key` (S3 answers success for a missing key too).
    pub(crate) async fn delete_object(&self, bucket: &str, key: &str) -> Result<(), Error> {
        let req = S3Request::new(Operation::DeleteObject, Method::DELETE, bucket, Some(key));
        self.execute(&req).await.map(|_| ())
    }
}
