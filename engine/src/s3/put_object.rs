//! PutObject: a whole object in one request.

use bytes::Bytes;
use http::{header, Method};

use super::{header_str, S3Request, S3};
use crate::error::{Error, Operation};
use crate::upload::options::PutOptions;

impl S3 {
    /// Uploads `body` as `bucket/key` with the configured checksum; returns the new ETag.
    pub(crate) async fn put_object(
        &self,
        bucket: &str,
        key: &str,
        options: &PutOptions,
        body: Bytes,
    ) -> Result<Option<String>, Error> {
        let crc = self.upload_checksum(&body);
        let mut req = S3Request::new(Operation::PutObject, Method::PUT, bucket, Some(key)).body(body).checksum(crc);
        if let Some(ct) = &options.content_type {
            req = req.header(header::CONTENT_TYPE, ct)?;
        }
        let (parts, _) = self.execute(&req).await?;
        Ok(header_str(&parts.headers, "etag"))
    }
}
