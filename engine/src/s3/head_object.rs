//! HeadObject.

use http::Method;

use super::{header_str, S3Request, S3};
use crate::error::{Error, ErrorKind, Operation};
use crate::object_client::GetPart;
use crate::types::ObjectInfo;

impl S3 {
    /// Size, ETag and metadata of `bucket/key` (of the version and under the conditions
    /// `part` names; its range is ignored).
    pub(crate) async fn head_object(&self, bucket: &str, key: &str, part: &GetPart<'_>) -> Result<ObjectInfo, Error> {
        let op = Operation::HeadObject;
        let req = S3Request::new(op, Method::HEAD, bucket, Some(key)).conditions(part)?;
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
            version_id: header_str(h, "x-amz-version-id"),
            verification: None,
        })
    }
}
