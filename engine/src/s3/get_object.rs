//! GetObject for one byte range (one part of a download).

use http::{header, Method, StatusCode};

use super::{header_str, S3Request, S3};
use crate::checksum::Claim;
use crate::error::{Error, ErrorKind, Operation};
use crate::http::Body;
use crate::object_client::GetPart;

/// What a ranged GET's response head says.
#[derive(Debug, Clone)]
pub(crate) struct RangeHead {
    /// Entity tag of the object version served.
    pub(crate) etag: Option<String>,
    /// First byte of the body within the object.
    pub(crate) start: u64,
    /// One past the last byte of the body.
    pub(crate) end: u64,
    /// Size of the whole object.
    pub(crate) total: u64,
    pub(crate) last_modified: Option<String>,
    pub(crate) content_type: Option<String>,
    /// `x-amz-version-id`: the version served (versioned buckets only).
    pub(crate) version_id: Option<String>,
    /// The object's checksum, when this answer is the whole object and says one (and
    /// downloads are verified).
    pub(crate) claim: Option<Claim>,
}

impl S3 {
    /// One attempt at the GET `part` describes (a byte range or the whole object, its
    /// conditions and version).
    pub(crate) async fn get_part(
        &self,
        bucket: &str,
        key: &str,
        part: &GetPart<'_>,
        attempt: u32,
    ) -> Result<(RangeHead, Body), Error> {
        let op = Operation::GetObject;
        let mut req = S3Request::new(op, Method::GET, bucket, Some(key)).conditions(part)?;
        if let Some(r) = &part.range {
            req = req.header(header::RANGE, &format!("bytes={}-{}", r.start, r.end - 1))?;
        }
        if part.checksum_mode {
            req = req.header(http::HeaderName::from_static("x-amz-checksum-mode"), "ENABLED")?;
        }
        let response = self.send(&req, attempt).await?;
        let (parts, body) = response.into_parts();
        let h = &parts.headers;
        let content_length: Option<u64> = header_str(h, "content-length").and_then(|v| v.parse().ok());
        let (start, end, total) = match parts.status {
            StatusCode::PARTIAL_CONTENT => {
                let cr = header_str(h, "content-range")
                    .ok_or_else(|| Error::new(ErrorKind::Protocol, op, "206 without Content-Range"))?;
                parse_content_range(&cr)
                    .ok_or_else(|| Error::new(ErrorKind::Protocol, op, format!("bad Content-Range {cr:?}")))?
            }
            // A whole-object answer: the server ignored the range or none was asked for.
            _ => {
                let len =
                    content_length.ok_or_else(|| Error::new(ErrorKind::Protocol, op, "200 without Content-Length"))?;
                (0, len, len)
            }
        };
        if let Some(len) = content_length {
            if len != end - start {
                return Err(Error::new(
                    ErrorKind::Protocol,
                    op,
                    format!("Content-Length {len} disagrees with the range {start}-{end}"),
                ));
            }
        }
        let head = RangeHead {
            etag: header_str(h, "etag"),
            start,
            end,
            total,
            last_modified: header_str(h, "last-modified"),
            content_type: header_str(h, "content-type"),
            version_id: header_str(h, "x-amz-version-id"),
            // S3 omits checksums on ranged answers; a server that sends one anyway for a
            // partial body would be giving the whole object's value, which the bytes cannot match.
            claim: match part.checksum_mode && start == 0 && end == total {
                true => Claim::from_headers(h),
                false => None,
            },
        };
        Ok((head, body))
    }
}

impl<'a> S3Request<'a> {
    /// Adds what GET and HEAD share: the version asked for and the caller's conditions
    /// (`If-Match`, `If-None-Match`).
    pub(crate) fn conditions(mut self, part: &GetPart<'_>) -> Result<Self, Error> {
        if let Some(v) = part.version_id {
            self = self.query("versionId", v);
        }
        if let Some(etag) = part.if_match {
            self = self.header(header::IF_MATCH, etag)?;
        }
        if let Some(etag) = part.if_none_match {
            self = self.header(header::IF_NONE_MATCH, etag)?;
        }
        Ok(self)
    }
}

/// Parses `bytes START-END/TOTAL` into `(start, end_exclusive, total)`.
pub(crate) fn parse_content_range(value: &str) -> Option<(u64, u64, u64)> {
    let rest = value.trim().strip_prefix("bytes ")?;
    let (range, total) = rest.split_once('/')?;
    let (a, b) = range.split_once('-')?;
    let (start, last, total): (u64, u64, u64) = (a.parse().ok()?, b.parse().ok()?, total.parse().ok()?);
    if start > last || last >= total {
        return None;
    }
    Some((start, last + 1, total))
}

#[cfg(test)]
mod tests {
    use super::parse_content_range;

    #[test]
    fn content_range() {
        assert_eq!(parse_content_range("bytes 0-99/1000"), Some((0, 100, 1000)));
        assert_eq!(parse_content_range("bytes 999-999/1000"), Some((999, 1000, 1000)));
        assert_eq!(parse_content_range("bytes 5-4/1000"), None);
        assert_eq!(parse_content_range("bytes 0-1000/1000"), None);
        assert_eq!(parse_content_range("bytes */0"), None);
        assert_eq!(parse_content_range("items 0-1/2"), None);
    }

    proptest::proptest! {
        /// Any header text: parsed ranges are always well formed, and a formatted range
        /// always parses back.
        #[test]
        fn content_range_fuzz(text in "\\PC{0,40}", start in 0u64..1 << 50, len in 1u64..1 << 30, extra in 0u64..1 << 30) {
            if let Some((s, e, t)) = parse_content_range(&text) {
                proptest::prop_assert!(s < e && e <= t);
            }
            let total = start + len + extra;
            let header = format!("bytes {}-{}/{}", start, start + len - 1, total);
            proptest::prop_assert_eq!(parse_content_range(&header), Some((start, start + len, total)));
        }
    }
}
