//! GetObjectAttributes for an object's parts: their sizes and checksums, which is what a
//! download of an object with a *composite* checksum (`<base64>-N`) is verified against.
//!
//! `GET /bucket/key?attributes` with `x-amz-object-attributes: ETag,Checksum,ObjectParts,ObjectSize`,
//! paginated by `x-amz-max-parts` / `x-amz-part-number-marker` (S3 lists at most 1,000 parts
//! per page; an object has up to 10,000).

use http::{HeaderName, Method};

use super::{xml, S3Request, S3};
use crate::checksum::{S3ChecksumAlgorithm, Sum};
use crate::error::{Error, ErrorKind, Operation};

/// Parts asked for per page (S3's maximum).
const MAX_PARTS: u32 = 1000;
/// More pages than an object with 10,000 parts needs: a server that never stops paging is
/// broken, not large.
const MAX_PAGES: usize = 20;

/// What GetObjectAttributes says about a multipart object.
#[derive(Debug, Clone)]
pub(crate) struct ObjectParts {
    /// The ETag, quotes removed (S3 sends it unquoted here).
    pub(crate) etag: Option<String>,
    /// The object's `ChecksumType` (`FULL_OBJECT` or `COMPOSITE`), when it has a checksum.
    pub(crate) checksum_type: Option<String>,
    pub(crate) object_size: Option<u64>,
    /// Every part in order: its size and, when the server lists one, its checksum of the
    /// algorithm asked for.
    pub(crate) parts: Vec<(u64, Option<Sum>)>,
}

impl S3 {
    /// The parts of `bucket/key` with their `algorithm` checksums, every page. A part whose
    /// listed checksum is malformed counts as having none.
    pub(crate) async fn object_parts(
        &self,
        bucket: &str,
        key: &str,
        algorithm: S3ChecksumAlgorithm,
    ) -> Result<ObjectParts, Error> {
        let op = Operation::GetObject;
        let mut marker: Option<u32> = None;
        let mut count: Option<u32> = None;
        let mut out = ObjectParts { etag: None, checksum_type: None, object_size: None, parts: Vec::new() };
        for _ in 0..MAX_PAGES {
            let mut req = S3Request::new(op, Method::GET, bucket, Some(key))
                .query("attributes", "")
                .header(HeaderName::from_static("x-amz-object-attributes"), "ETag,Checksum,ObjectParts,ObjectSize")?
                .header(HeaderName::from_static("x-amz-max-parts"), &MAX_PARTS.to_string())?;
            if let Some(m) = marker {
                req = req.header(HeaderName::from_static("x-amz-part-number-marker"), &m.to_string())?;
            }
            let (_, body) = self.execute(&req).await?;
            let page: xml::GetObjectAttributesResponse = xml::parse(&body, op)?;
            out.etag = page.etag.map(|e| e.trim().trim_matches('"').to_string());
            out.object_size = page.object_size;
            if let Some(c) = page.checksum {
                out.checksum_type = c.checksum_type;
            }
            let Some(parts) = page.object_parts else { return Ok(out) };
            count = parts.parts_count.or(count);
            let mut last = marker.unwrap_or(0);
            for p in parts.parts {
                if p.part_number <= last {
                    return Err(Error::new(ErrorKind::Protocol, op, "GetObjectAttributes listed parts out of order"));
                }
                last = p.part_number;
                let text = match algorithm {
                    S3ChecksumAlgorithm::Crc32 => p.crc32,
                    S3ChecksumAlgorithm::Crc32c => p.crc32c,
                    S3ChecksumAlgorithm::Crc64Nvme => p.crc64nvme,
                    S3ChecksumAlgorithm::Sha1 => p.sha1,
                    S3ChecksumAlgorithm::Sha256 => p.sha256,
                };
                out.parts.push((p.size, text.and_then(|t| algorithm.decode(&t))));
            }
            if !parts.is_truncated {
                if count.is_some_and(|n| n as usize != out.parts.len()) {
                    return Err(Error::new(
                        ErrorKind::Protocol,
                        op,
                        "GetObjectAttributes listed fewer parts than it counts",
                    ));
                }
                return Ok(out);
            }
            match parts.next_part_number_marker {
                Some(next) if next >= last && next > marker.unwrap_or(0) => marker = Some(next),
                _ => return Err(Error::new(ErrorKind::Protocol, op, "GetObjectAttributes paging does not advance")),
            }
        }
        Err(Error::new(ErrorKind::Protocol, op, "GetObjectAttributes pages never end"))
    }
}
