//! CopyObject and UploadPartCopy: the server copies bytes between keys without them crossing
//! the client's network.

use http::{HeaderName, Method};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use super::upload_part::UploadedPart;
use super::{xml, S3Request, S3};
use crate::checksum::{ChecksumAlgorithm, Crc};
use crate::error::{Error, ErrorKind, Operation};
use crate::upload::options::PutOptions;

/// What `x-amz-copy-source` leaves unescaped (as botocore does): unreserved characters and
/// the `/` between segments. `+`, `?`, `%`, spaces and non-ASCII are escaped, so a key that
/// contains them names the same object on the server.
const COPY_SOURCE: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~').remove(b'/');

/// The object a copy reads, pinned to the version the copy started from.
#[derive(Debug, Clone)]
pub(crate) struct CopySource {
    pub(crate) bucket: String,
    pub(crate) key: String,
    /// Sent as `x-amz-copy-source-if-match`: a source replaced mid-copy fails with 412
    /// ([`ErrorKind::ObjectChanged`]) instead of mixing two versions' parts.
    pub(crate) etag: Option<String>,
}

impl CopySource {
    /// The `x-amz-copy-source` value: `bucket/key`, percent-encoded.
    pub(crate) fn header(&self) -> String {
        utf8_percent_encode(&format!("{}/{}", self.bucket, self.key), COPY_SOURCE).to_string()
    }

    fn apply<'a>(&self, mut req: S3Request<'a>) -> Result<S3Request<'a>, Error> {
        req = req.header(HeaderName::from_static("x-amz-copy-source"), &self.header())?;
        if let Some(etag) = &self.etag {
            req = req.header(HeaderName::from_static("x-amz-copy-source-if-match"), etag)?;
        }
        Ok(req)
    }
}

/// What a finished CopyObject reports.
#[derive(Debug, Clone)]
pub(crate) struct Copied {
    pub(crate) etag: String,
}

/// The checksum S3 returned for copied bytes (`<ChecksumCRC64NVME>` or `<ChecksumCRC32C>` of
/// CopyObjectResult / CopyPartResult), when it is the one the upload asked for.
fn returned_checksum(doc: &xml::CopyResult, algorithm: Option<ChecksumAlgorithm>, len: u64) -> Option<Crc> {
    let algorithm = algorithm?;
    let text = match algorithm {
        ChecksumAlgorithm::Crc64Nvme => doc.checksum_crc64nvme.as_deref(),
        ChecksumAlgorithm::Crc32c => doc.checksum_crc32c.as_deref(),
    }?;
    Some(Crc { algorithm, value: algorithm.decode(text)?, len })
}

fn etag_of(doc: &xml::CopyResult, op: Operation) -> Result<String, Error> {
    doc.etag.clone().ok_or_else(|| {
        Error::new(
            ErrorKind::Protocol,
            op,
            "the answer has no ETag: the endpoint is not an S3 server, or it copied nothing",
        )
        .with_retryable(false)
    })
}

impl S3 {
    /// CopyObject of `source` to `bucket/key` (sources up to 5 GiB). Metadata is copied from
    /// the source. With upload checksums on, `x-amz-checksum-algorithm` asks the server to
    /// compute the configured checksum of the new object, so it carries a full-object
    /// checksum even when the source was a multipart upload with a composite one.
    pub(crate) async fn copy_object(&self, source: &CopySource, bucket: &str, key: &str) -> Result<Copied, Error> {
        let op = Operation::CopyObject;
        let mut req = source.apply(S3Request::new(op, Method::PUT, bucket, Some(key)))?;
        if let Some(algorithm) = self.upload_checksum_algorithm(bucket) {
            req = req.header(HeaderName::from_static("x-amz-checksum-algorithm"), algorithm.name())?;
        }
        // A 200 carrying an <Error> (S3 does this for a copy that fails midway) is turned into
        // that error, and retried when it is retryable, by execute.
        let (_, body) = self.execute(&req).await?;
        let doc: xml::CopyResult = xml::parse(&body, op)?;
        Ok(Copied { etag: etag_of(&doc, op)? })
    }

    /// UploadPartCopy: part `number` of `upload_id` is bytes `range` of `source`. The part's
    /// checksum is the one the server returns (S3 does when the upload declared an algorithm,
    /// which the engine's copies do not: see [`PutOptions::copied_parts`]); without it, the
    /// part is listed without one on completion.
    pub(crate) async fn upload_part_copy(
        &self,
        source: &CopySource,
        bucket: &str,
        key: &str,
        upload_id: &str,
        number: u32,
        range: std::ops::Range<u64>,
    ) -> Result<UploadedPart, Error> {
        let op = Operation::UploadPartCopy;
        if range.is_empty() {
            return Err(Error::invalid(op, "an empty range cannot be a copied part"));
        }
        let req = source
            .apply(
                S3Request::new(op, Method::PUT, bucket, Some(key))
                    .query("partNumber", number.to_string())
                    .query("uploadId", upload_id),
            )?
            .header(
                HeaderName::from_static("x-amz-copy-source-range"),
                &format!("bytes={}-{}", range.start, range.end - 1),
            )?;
        let (_, body) = self.execute(&req).await?;
        let doc: xml::CopyResult = xml::parse(&body, op)?;
        let size = range.end - range.start;
        let checksum = returned_checksum(&doc, self.upload_checksum_algorithm(bucket), size);
        Ok(UploadedPart { number, etag: etag_of(&doc, op)?, size, checksum })
    }
}

/// The options of the multipart upload a large copy makes: the source's content type, since
/// CreateMultipartUpload does not copy metadata the way CopyObject does, and no declared
/// checksum (see [`PutOptions::copied_parts`]; S3 still gives the object its default
/// CRC64NVME).
pub(crate) fn copy_put_options(content_type: Option<&str>) -> PutOptions {
    let mut options = PutOptions { copied_parts: true, ..PutOptions::new() };
    if let Some(ct) = content_type {
        options = options.content_type(ct);
    }
    options
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_source_escapes_what_would_change_the_key() {
        let s = |key: &str| CopySource { bucket: "b".into(), key: key.into(), etag: None }.header();
        assert_eq!(s("dir/a b+c.txt"), "b/dir/a%20b%2Bc.txt");
        assert_eq!(s("q?x=1&y%"), "b/q%3Fx%3D1%26y%25");
        assert_eq!(s("ünï/~._-"), "b/%C3%BCn%C3%AF/~._-");
    }

    #[test]
    fn part_checksum_is_taken_only_for_the_upload_algorithm() {
        let doc = xml::CopyResult {
            etag: Some("\"e\"".into()),
            checksum_crc64nvme: Some(ChecksumAlgorithm::Crc64Nvme.encode(42)),
            checksum_crc32c: None,
        };
        let crc = returned_checksum(&doc, Some(ChecksumAlgorithm::Crc64Nvme), 10).unwrap();
        assert_eq!((crc.value, crc.len), (42, 10));
        assert!(returned_checksum(&doc, Some(ChecksumAlgorithm::Crc32c), 10).is_none());
        assert!(returned_checksum(&doc, None, 10).is_none());
    }
}
