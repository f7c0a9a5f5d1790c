//! PutObject: a whole object in one request.

use bytes::Bytes;
use http::Method;

use super::{header_str, S3Request, S3};
use crate::error::{Error, Operation};

impl S3 {
    /// Uploads `body` as `bucket/key`; returns the new ETag.
    pub(crate) async fn put_object(&self, bucket: &str, key: &str, body: Bytes) -> Result<Option<String>, Error> {
        let req = S3Request::new(Operation::PutObject, Method::PUT, bucket, Some(key)).body(body);
        let (parts, _) = self.execute(&req).await?;
        Ok(header_str(&parts.headers, "etag"))
    }
}
