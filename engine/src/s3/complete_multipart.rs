//! CompleteMultipartUpload.

use bytes::Bytes;
use http::{HeaderName, Method};

use super::lost_complete::ExpectedObject;
use super::upload_part::UploadedPart;
use super::{xml, S3Request, S3};
use crate::checksum::{ChecksumAlgorithm, Crc};
use crate::error::{Error, ErrorKind, Operation};

impl S3 {
    /// Completes `upload_id` from its parts in ascending order; returns the object's ETag. A
    /// 200 whose body is an `<Error>` is an error (S3 does this), and so is one without an
    /// ETag. When the parts carry
    /// checksums, each is listed and the full-object checksum, combined from the part CRCs,
    /// is sent for the server to check against the assembled object.
    ///
    /// Completing is not idempotent: an attempt whose answer was lost may have completed the
    /// upload, and its retry then meets `NoSuchUpload`. A retried Complete that does checks
    /// the object instead of failing (see [`super::lost_complete`]).
    pub(crate) async fn complete_multipart(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        parts: Vec<UploadedPart>,
    ) -> Result<String, Error> {
        let op = Operation::CompleteMultipartUpload;
        let full: Option<Crc> = parts
            .iter()
            .try_fold(None, |acc: Option<Crc>, p| {
                let crc = p.checksum?;
                Some(Some(acc.map_or(crc, |a| a.combine(crc))))
            })
            .flatten();
        let expected = ExpectedObject::of(&parts, full);
        let doc = xml::CompleteMultipartUpload {
            parts: parts
                .into_iter()
                .map(|p| {
                    let value = p.checksum.map(|c| (c.algorithm, c.encoded()));
                    let pick = |alg| value.as_ref().filter(|v| v.0 == alg).map(|v| v.1.clone());
                    xml::CompletedPart {
                        part_number: p.number,
                        etag: p.etag,
                        checksum_crc64nvme: pick(ChecksumAlgorithm::Crc64Nvme),
                        checksum_crc32c: pick(ChecksumAlgorithm::Crc32c),
                    }
                })
                .collect(),
        };
        let mut req = S3Request::new(op, Method::POST, bucket, Some(key))
            .query("uploadId", upload_id)
            .body(Bytes::from(xml::to_string(&doc)))
            .recoverable();
        if let Some(crc) = full {
            req = req
                .header(HeaderName::from_static(crc.algorithm.header()), &crc.encoded())?
                .header(HeaderName::from_static("x-amz-checksum-type"), "FULL_OBJECT")?;
        }
        let body = match self.execute_recorded(&req).await {
            (Ok((_, body)), _) => body,
            (Err(e), attempts) if attempts.sent > 1 && e.s3_code() == Some("NoSuchUpload") => {
                return self.confirm_completed(bucket, key, &expected, attempts, e).await;
            }
            (Err(e), _) => return Err(e),
        };
        let result: xml::CompleteMultipartUploadResult = xml::parse(&body, op)?;
        // Without an ETag nothing says an object was assembled (a server answering 200 to
        // anything): a protocol error rather than a reported success.
        result.etag.ok_or_else(|| {
            Error::new(
                ErrorKind::Protocol,
                op,
                "the answer has no ETag: the endpoint is not an S3 server, or it stored nothing",
            )
            .with_retryable(false)
        })
    }
}
