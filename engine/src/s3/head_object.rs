//! HeadObject.

use http::Method;

use super::{header_str, S3Request, S3};
use crate::error::{Error, ErrorKind, Operation};
use crate::types::ObjectInfo;

impl S3 {
    /// Size, ETag and metadata of `bucket/key`.
    pub(crate) async fn head_object(&self, bucket: &str, key: &str) -> Result<ObjectInfo, Error> {
        let op = Operation::HeadObject;
        let req = S3Request::new(op, Method::HEAD, bucket, Some(key));
        let (parts, _) = self.execute(&req).await?;
        let h = &parts.headers;
        let size = header_str(h, "content-length")
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| Error::new(ErrorKind::Protocol, op, "HEAD answer without Content-Length"))?;
        Ok(ObjectInfo {
            size,
            etag: header_str(h, "etag"),
            last_modified: header_str(h, "last-modified"),
            content_type: header_str(h, "content-type"),
            verification: None,
        })
    }
}
