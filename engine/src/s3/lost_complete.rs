//! A repeated CompleteMultipartUpload that meets `NoSuchUpload`: did an earlier attempt
//! complete the upload?
//!
//! When the answer to a Complete is lost (a reset or a timeout after the request went out),
//! the retry may find the upload already completed. S3 forgets a completed upload's id, and
//! a second Complete of it (at least once some time has passed) answers `NoSuchUpload`, which
//! would fail a transfer that succeeded. So a *retried* Complete that meets `NoSuchUpload`
//! looks at the object with one HEAD (`x-amz-checksum-mode: ENABLED`) and reports success
//! when it is the object these parts make:
//!
//! - its ETag ends in `-N` for our N parts, and its size is the sum of our part sizes; and
//! - its ETag is S3's multipart ETag of our parts (`"<MD5 of the part MD5s>-N"`, computable
//!   when every part ETag is a plain MD5, as S3 sends them without SSE-KMS/SSE-C), or, failing
//!   that, its full-object checksum equals the one combined from our part CRCs.
//!
//! Only when neither the MD5 ETag nor a checksum can be computed does the `-N` and size check
//! stand alone (logged as a weak check). Anything else returns the original `NoSuchUpload`
//! error: the upload was aborted by someone else, or another writer's object is there.

use http::{HeaderName, Method};
use md5::{Digest, Md5};

use super::upload_part::UploadedPart;
use super::{header_str, Attempts, S3Request, S3};
use crate::checksum::Crc;
use crate::error::{Error, Operation};

/// What the object made by completing a list of parts must look like.
#[derive(Debug, Clone)]
pub(crate) struct ExpectedObject {
    parts: usize,
    size: u64,
    /// S3's multipart ETag (quoted), when every part ETag is an MD5 in hex.
    md5_etag: Option<String>,
    /// The full-object checksum combined from the part CRCs, when every part carried one.
    checksum: Option<Crc>,
}

/// How a HEAD answer compares with the expected object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// The MD5 ETag or the checksum matches (with the part count and size).
    Confirmed,
    /// Only the part count and size could be compared, and they match.
    Plausible,
    /// Another object, or none.
    Different,
}

impl ExpectedObject {
    /// The object `parts` (in ascending order) make, with `checksum` the full-object CRC the
    /// Complete request carried.
    pub(crate) fn of(parts: &[UploadedPart], checksum: Option<Crc>) -> Self {
        ExpectedObject {
            parts: parts.len(),
            size: parts.iter().map(|p| p.size).sum(),
            md5_etag: multipart_etag(parts.iter().map(|p| p.etag.as_str())),
            checksum,
        }
    }

    /// Compares a HEAD answer (its ETag, size and, for our algorithm, checksum header).
    fn verdict(&self, etag: Option<&str>, size: Option<u64>, checksum: Option<&str>) -> Verdict {
        let Some(etag) = etag else { return Verdict::Different };
        let suffix = format!("-{}", self.parts);
        if !unquote(etag).ends_with(&suffix) || size != Some(self.size) {
            return Verdict::Different;
        }
        if self.md5_etag.as_deref().is_some_and(|m| unquote(m) == unquote(etag)) {
            return Verdict::Confirmed;
        }
        match (&self.checksum, checksum) {
            (Some(ours), Some(theirs)) if ours.encoded() == theirs.trim() => Verdict::Confirmed,
            (Some(_), Some(_)) => Verdict::Different,
            // An MD5 ETag we could compute and that differs, with no checksum to say more.
            _ if self.md5_etag.is_some() => Verdict::Different,
            _ => Verdict::Plausible,
        }
    }
}

/// S3's ETag for an object completed from parts with these ETags: the MD5 of the parts' binary
/// MD5s, then `-N`. `None` when a part ETag is not a plain MD5 in hex (SSE-KMS, SSE-C and many
/// other stores use other ETags).
fn multipart_etag<'a>(part_etags: impl ExactSizeIterator<Item = &'a str>) -> Option<String> {
    let n = part_etags.len();
    let mut md5 = Md5::new();
    for etag in part_etags {
        let digest = hex::decode(unquote(etag)).ok().filter(|d| d.len() == 16)?;
        md5.update(&digest);
    }
    Some(format!("\"{}-{n}\"", hex::encode(md5.finalize())))
}

fn unquote(etag: &str) -> &str {
    etag.trim().trim_start_matches("W/").trim_matches('"')
}

impl S3 {
    /// After a retried Complete of `bucket/key` met `NoSuchUpload` (`err`): the object's ETag
    /// when it is the object `expected` describes (an earlier attempt completed the upload
    /// and its answer was lost), else `err`.
    pub(crate) async fn confirm_completed(
        &self,
        bucket: &str,
        key: &str,
        expected: &ExpectedObject,
        attempts: Attempts,
        err: Error,
    ) -> Result<String, Error> {
        let lost = attempts.lost_answers;
        let req = S3Request::new(Operation::HeadObject, Method::HEAD, bucket, Some(key))
            .header(HeaderName::from_static("x-amz-checksum-mode"), "ENABLED")?;
        let head = match self.execute(&req).await {
            Ok((parts, _)) => parts,
            Err(head_err) => {
                tracing::debug!(error = %head_err, "no object after NoSuchUpload on a retried Complete");
                return Err(err);
            }
        };
        let h = &head.headers;
        let etag = header_str(h, "etag");
        let size = header_str(h, "content-length").and_then(|v| v.parse().ok());
        let checksum = expected.checksum.and_then(|c| header_str(h, c.algorithm.header()));
        match expected.verdict(etag.as_deref(), size, checksum.as_deref()) {
            Verdict::Confirmed => {
                tracing::info!(%bucket, %key, etag = etag.as_deref(), lost,
                    "a retried Complete met NoSuchUpload; the object an earlier attempt made is there");
            }
            Verdict::Plausible => {
                tracing::warn!(%bucket, %key, etag = etag.as_deref(), lost,
                    "a retried Complete met NoSuchUpload; an object of the same size and part count is there \
                     (no MD5 ETag or checksum to compare)");
            }
            Verdict::Different => return Err(err),
        }
        Ok(etag.unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checksum::ChecksumAlgorithm;

    fn part(number: u32, etag: &str, size: u64, checksum: Option<Crc>) -> UploadedPart {
        UploadedPart { number, etag: etag.to_string(), size, checksum }
    }

    #[test]
    fn s3_multipart_etag() {
        // Two parts "a" and "b": MD5s 0cc175b9c0f1b6a831c399e269772661 and
        // 92eb5ffee6ae2fec3ad71c777531578f; the MD5 of their 32 bytes, then -2.
        let etags = ["\"0cc175b9c0f1b6a831c399e269772661\"", "92eb5ffee6ae2fec3ad71c777531578f"];
        let mut concat = Vec::new();
        for e in etags {
            concat.extend(hex::decode(unquote(e)).unwrap());
        }
        let want = format!("\"{}-2\"", hex::encode(Md5::digest(&concat)));
        assert_eq!(multipart_etag(etags.into_iter()), Some(want));
        // Not MD5s: no ETag to compute.
        assert_eq!(multipart_etag(["\"abc\"", "92eb5ffee6ae2fec3ad71c777531578f"].into_iter()), None);
    }

    #[test]
    fn verdicts() {
        let md5_parts = [
            part(1, "\"0cc175b9c0f1b6a831c399e269772661\"", 5, None),
            part(2, "\"92eb5ffee6ae2fec3ad71c777531578f\"", 3, None),
        ];
        let e = ExpectedObject::of(&md5_parts, None);
        let etag = e.md5_etag.clone().unwrap();
        assert_eq!(e.verdict(Some(&etag), Some(8), None), Verdict::Confirmed);
        assert_eq!(e.verdict(Some(&etag), Some(9), None), Verdict::Different, "size");
        assert_eq!(e.verdict(Some("\"00000000000000000000000000000000-2\""), Some(8), None), Verdict::Different);
        assert_eq!(e.verdict(None, Some(8), None), Verdict::Different);

        // Part ETags that are not MD5s: the checksum decides, or -N and size alone.
        let crc = ChecksumAlgorithm::Crc64Nvme.checksum(b"abcdefgh");
        let other = ChecksumAlgorithm::Crc64Nvme.checksum(b"abcdefgX");
        let opaque = [part(1, "\"kms-1\"", 5, None), part(2, "\"kms-2\"", 3, None)];
        let e = ExpectedObject::of(&opaque, Some(crc));
        assert_eq!(e.verdict(Some("\"x-2\""), Some(8), Some(&crc.encoded())), Verdict::Confirmed);
        assert_eq!(e.verdict(Some("\"x-2\""), Some(8), Some(&other.encoded())), Verdict::Different);
        assert_eq!(e.verdict(Some("\"x-3\""), Some(8), Some(&crc.encoded())), Verdict::Different, "-N");
        assert_eq!(e.verdict(Some("\"x-2\""), Some(8), None), Verdict::Plausible);
        let e = ExpectedObject::of(&opaque, None);
        assert_eq!(e.verdict(Some("\"x-2\""), Some(8), None), Verdict::Plausible);
        assert_eq!(e.verdict(Some("\"x\""), Some(8), None), Verdict::Different, "a single-PUT object");

        // MD5-looking part ETags whose object ETag is something else (a store with its own
        // ETags): the checksum still decides.
        let e = ExpectedObject::of(&md5_parts, Some(crc));
        assert_eq!(e.verdict(Some("\"f00-2\""), Some(8), Some(&crc.encoded())), Verdict::Confirmed);
        assert_eq!(e.verdict(Some("\"f00-2\""), Some(8), None), Verdict::Different);
    }
}
