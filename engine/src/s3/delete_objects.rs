//! DeleteObjects: up to 1,000 keys in one request.

use base64::Engine as _;
use bytes::Bytes;
use http::{HeaderName, Method};
use md5::{Digest, Md5};

use super::{xml, S3Request, S3};
use crate::error::{Error, Operation};
use crate::types::DeleteObjectError;

/// S3's limit of keys per DeleteObjects request.
pub(crate) const MAX_KEYS_PER_DELETE: usize = 1000;

impl S3 {
    /// Deletes `keys` (at most 1,000) from `bucket` in one quiet request; returns the keys the
    /// server refused, each with its code. A key that does not exist counts as deleted, as S3
    /// says. The body's MD5 goes in `Content-MD5`: S3 documents it as required, and stores
    /// that predate flexible checksums (older MinIO, Ceph) refuse the request without it.
    pub(crate) async fn delete_objects(&self, bucket: &str, keys: &[String]) -> Result<Vec<DeleteObjectError>, Error> {
        let op = Operation::DeleteObjects;
        if keys.len() > MAX_KEYS_PER_DELETE {
            return Err(Error::invalid(op, format!("{} keys in one DeleteObjects (at most 1,000)", keys.len())));
        }
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let doc = xml::Delete {
            xmlns: "http://s3.amazonaws.com/doc/2006-03-01/",
            objects: keys.iter().map(|k| xml::DeleteObject { key: k.clone() }).collect(),
            quiet: true,
        };
        let body = Bytes::from(xml::to_string(&doc));
        let md5 = base64::engine::general_purpose::STANDARD.encode(Md5::digest(&body));
        let req = S3Request::new(op, Method::POST, bucket, None)
            .query("delete", "")
            .body(body)
            .header(HeaderName::from_static("content-md5"), &md5)?;
        let (_, answer) = self.execute(&req).await?;
        let result: xml::DeleteResult = xml::parse(&answer, op)?;
        Ok(result
            .errors
            .into_iter()
            .map(|e| DeleteObjectError { key: e.key, code: e.code, message: e.message })
            .collect())
    }
}
