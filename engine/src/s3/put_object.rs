//! PutObject: a whole object in one request.

use bytes::Bytes;
use http::{header, Method};

use super::{header_str, S3Request, S3};
use crate::error::{Error, ErrorKind, Operation};
use crate::upload::options::PutOptions;

impl S3 {
    /// Uploads `body` as `bucket/key` with the configured checksum; returns the new ETag.
    ///
    /// A 2xx answer without an ETag is a protocol error, not a success: every S3
    /// implementation sends one, and a server that answers 200 to anything (a web page, a
    /// misrouted proxy) has stored nothing.
    pub(crate) async fn put_object(
        &self,
        bucket: &str,
        key: &str,
        options: &PutOptions,
        body: Bytes,
    ) -> Result<String, Error> {
        let op = Operation::PutObject;
        let crc = self.upload_checksum(bucket, &body);
        let mut req = S3Request::new(op, Method::PUT, bucket, Some(key)).body(body).checksum(crc);
        if let Some(ct) = &options.content_type {
            req = req.header(header::CONTENT_TYPE, ct)?;
        }
        let (parts, _) = self.execute(&req).await?;
        header_str(&parts.headers, "etag").ok_or_else(|| {
            Error::new(
                ErrorKind::Protocol,
                op,
                "the answer has no ETag: the endpoint is not an S3 server, or it stored nothing",
            )
            .with_retryable(false)
        })
    }
}
