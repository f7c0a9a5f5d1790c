//! S3 XML documents: the error body, listing and multipart answers we write, and the
//! CompleteMultipartUpload / DeleteObjects requests we parse.
//!
//! Answers are written by hand (S3's element order matters to some parsers); requests are
//! parsed with quick-xml's serde support, which ignores the namespace attribute and unknown
//! elements.

use std::fmt::Write as _;

use quick_xml::escape::escape;
use serde::Deserialize;

const DECL: &str = r#"<?xml version="1.0" encoding="UTF-8"?>"#;
const NS: &str = "http://s3.amazonaws.com/doc/2006-03-01/";

/// S3's standard message for an error code (clients log it; some match on it).
pub(crate) fn error_message(code: &str) -> &'static str {
    match code {
        "NoSuchBucket" => "The specified bucket does not exist",
        "NoSuchKey" => "The specified key does not exist.",
        "NoSuchUpload" => {
            "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed."
        }
        "InvalidRange" => "The requested range is not satisfiable",
        "PreconditionFailed" => "At least one of the pre-conditions you specified did not hold",
        "BadDigest" => "The Content-MD5 or checksum value that you specified did not match what the server received.",
        "NotImplemented" => "A header you provided implies functionality that is not implemented",
        "SlowDown" => "Please reduce your request rate.",
        "InternalError" => "We encountered an internal error. Please try again.",
        "RequestTimeout" => {
            "Your socket connection to the server was not read from or written to within the timeout period. Idle connections will be closed."
        }
        "ExpiredToken" => "The provided token has expired.",
        "InvalidPart" => {
            "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part's entity tag."
        }
        "InvalidPartOrder" => "The list of parts was not in ascending order. Parts must be ordered by part number.",
        "EntityTooSmall" => "Your proposed upload is smaller than the minimum allowed object size.",
        "MalformedXML" => "The XML you provided was not well-formed or did not validate against our published schema.",
        "IncompleteBody" => "You did not provide the number of bytes specified by the Content-Length HTTP header.",
        "MissingContentLength" => "You must provide the Content-Length HTTP header.",
        "BucketNotEmpty" => "The bucket you tried to delete is not empty",
        "MalformedTrailerError" => "The request contained trailing data that was not well-formed.",
        "AccessDenied" => "Access Denied",
        _ => "Injected or unspecified error.",
    }
}

/// The `<Error>` document of every S3 error answer.
pub(crate) fn error_doc(code: &str, message: &str, resource: &str, request_id: &str) -> String {
    format!(
        "{DECL}<Error><Code>{}</Code><Message>{}</Message><Resource>{}</Resource><RequestId>{}</RequestId></Error>",
        escape(code),
        escape(message),
        escape(resource),
        escape(request_id)
    )
}

/// Writes `<name>value</name>` with the value escaped.
fn el(out: &mut String, name: &str, value: &str) {
    let _ = write!(out, "<{name}>{}</{name}>", escape(value));
}

/// `CreateMultipartUpload` answer.
pub(crate) fn initiate_doc(bucket: &str, key: &str, upload_id: &str) -> String {
    let mut s = format!("{DECL}<InitiateMultipartUploadResult xmlns=\"{NS}\">");
    el(&mut s, "Bucket", bucket);
    el(&mut s, "Key", key);
    el(&mut s, "UploadId", upload_id);
    s.push_str("</InitiateMultipartUploadResult>");
    s
}

/// `CompleteMultipartUpload` answer; `checksum` is (element name, value) of the object's
/// checksum in the upload's algorithm.
pub(crate) fn complete_doc(
    location: &str,
    bucket: &str,
    key: &str,
    etag: &str,
    checksum: Option<(&str, &str)>,
) -> String {
    let mut s = format!("{DECL}<CompleteMultipartUploadResult xmlns=\"{NS}\">");
    el(&mut s, "Location", location);
    el(&mut s, "Bucket", bucket);
    el(&mut s, "Key", key);
    el(&mut s, "ETag", etag);
    if let Some((name, value)) = checksum {
        el(&mut s, name, value);
        el(&mut s, "ChecksumType", "FULL_OBJECT");
    }
    s.push_str("</CompleteMultipartUploadResult>");
    s
}

/// What a `GetObjectAttributes` answer holds; `None` fields were not asked for.
pub(crate) struct Attributes {
    /// The ETag *without* quotes, as S3 writes it in this document.
    pub etag: Option<String>,
    /// `(element name, value, type)` of the object's checksum.
    pub checksum: Option<(&'static str, String, &'static str)>,
    pub object_parts: Option<AttributeParts>,
    pub object_size: Option<u64>,
}

/// `<ObjectParts>` of a `GetObjectAttributes` answer: one page of parts.
pub(crate) struct AttributeParts {
    pub marker: u32,
    pub max_parts: u32,
    pub next_marker: Option<u32>,
    pub count: usize,
    pub parts: Vec<AttributePart>,
}

/// One `<Part>`: (number, size, (element name, value) of each checksum).
pub(crate) type AttributePart = (u32, u64, Vec<(&'static str, String)>);

/// `GetObjectAttributes` answer, elements in S3's order.
pub(crate) fn attributes_doc(a: &Attributes) -> String {
    let mut s = format!("{DECL}<GetObjectAttributesResponse xmlns=\"{NS}\">");
    if let Some(etag) = &a.etag {
        el(&mut s, "ETag", etag);
    }
    if let Some((name, value, kind)) = &a.checksum {
        s.push_str("<Checksum>");
        el(&mut s, name, value);
        el(&mut s, "ChecksumType", kind);
        s.push_str("</Checksum>");
    }
    if let Some(p) = &a.object_parts {
        s.push_str("<ObjectParts>");
        el(&mut s, "IsTruncated", if p.next_marker.is_some() { "true" } else { "false" });
        el(&mut s, "MaxParts", &p.max_parts.to_string());
        if let Some(n) = p.next_marker {
            el(&mut s, "NextPartNumberMarker", &n.to_string());
        }
        el(&mut s, "PartNumberMarker", &p.marker.to_string());
        for (number, size, sums) in &p.parts {
            s.push_str("<Part>");
            for (name, value) in sums {
                el(&mut s, name, value);
            }
            el(&mut s, "PartNumber", &number.to_string());
            el(&mut s, "Size", &size.to_string());
            s.push_str("</Part>");
        }
        el(&mut s, "PartsCount", &p.count.to_string());
        s.push_str("</ObjectParts>");
    }
    el(&mut s, "StorageClass", "STANDARD");
    if let Some(size) = a.object_size {
        el(&mut s, "ObjectSize", &size.to_string());
    }
    s.push_str("</GetObjectAttributesResponse>");
    s
}

/// One upload in a `ListMultipartUploads` answer.
pub(crate) struct UploadEntry {
    pub key: String,
    pub upload_id: String,
    pub initiated: String,
    pub algorithm: Option<&'static str>,
    pub checksum_type: Option<String>,
}

/// `ListMultipartUploads` answer (never truncated).
pub(crate) fn list_uploads_doc(bucket: &str, prefix: &str, uploads: &[UploadEntry]) -> String {
    let mut s = format!("{DECL}<ListMultipartUploadsResult xmlns=\"{NS}\">");
    el(&mut s, "Bucket", bucket);
    s.push_str("<KeyMarker></KeyMarker><UploadIdMarker></UploadIdMarker>");
    el(&mut s, "Prefix", prefix);
    s.push_str("<MaxUploads>1000</MaxUploads><IsTruncated>false</IsTruncated>");
    for u in uploads {
        s.push_str("<Upload>");
        el(&mut s, "Key", &u.key);
        el(&mut s, "UploadId", &u.upload_id);
        s.push_str("<StorageClass>STANDARD</StorageClass>");
        el(&mut s, "Initiated", &u.initiated);
        if let Some(a) = u.algorithm {
            el(&mut s, "ChecksumAlgorithm", a);
        }
        if let Some(t) = &u.checksum_type {
            el(&mut s, "ChecksumType", t);
        }
        s.push_str("</Upload>");
    }
    s.push_str("</ListMultipartUploadsResult>");
    s
}

/// One object in a listing.
pub(crate) struct ObjectEntry {
    pub key: String,
    pub size: u64,
    pub etag: String,
    pub last_modified: String,
}

/// Everything a `ListObjectsV2` answer reports.
pub(crate) struct ListV2 {
    pub bucket: String,
    pub prefix: String,
    pub delimiter: Option<String>,
    pub max_keys: usize,
    pub continuation_token: Option<String>,
    pub start_after: Option<String>,
    pub next_token: Option<String>,
    pub url_encoding: bool,
    pub contents: Vec<ObjectEntry>,
    pub common_prefixes: Vec<String>,
}

/// `ListObjectsV2` answer.
pub(crate) fn list_v2_doc(l: &ListV2) -> String {
    let enc = |v: &str| if l.url_encoding { crate::http_util::percent_encode_key(v) } else { v.to_string() };
    let mut s = format!("{DECL}<ListBucketResult xmlns=\"{NS}\">");
    el(&mut s, "Name", &l.bucket);
    el(&mut s, "Prefix", &enc(&l.prefix));
    if let Some(d) = &l.delimiter {
        el(&mut s, "Delimiter", &enc(d));
    }
    el(&mut s, "MaxKeys", &l.max_keys.to_string());
    el(&mut s, "KeyCount", &(l.contents.len() + l.common_prefixes.len()).to_string());
    el(&mut s, "IsTruncated", if l.next_token.is_some() { "true" } else { "false" });
    if l.url_encoding {
        el(&mut s, "EncodingType", "url");
    }
    if let Some(t) = &l.continuation_token {
        el(&mut s, "ContinuationToken", t);
    }
    if let Some(t) = &l.next_token {
        el(&mut s, "NextContinuationToken", t);
    }
    if let Some(sa) = &l.start_after {
        el(&mut s, "StartAfter", &enc(sa));
    }
    for o in &l.contents {
        s.push_str("<Contents>");
        el(&mut s, "Key", &enc(&o.key));
        el(&mut s, "LastModified", &o.last_modified);
        el(&mut s, "ETag", &o.etag);
        el(&mut s, "Size", &o.size.to_string());
        s.push_str("<StorageClass>STANDARD</StorageClass></Contents>");
    }
    for p in &l.common_prefixes {
        s.push_str("<CommonPrefixes>");
        el(&mut s, "Prefix", &enc(p));
        s.push_str("</CommonPrefixes>");
    }
    s.push_str("</ListBucketResult>");
    s
}

/// `ListBuckets` answer.
pub(crate) fn list_buckets_doc(buckets: &[(String, String)]) -> String {
    let mut s = format!("{DECL}<ListAllMyBucketsResult xmlns=\"{NS}\">");
    s.push_str("<Owner><ID>gantry-faults</ID><DisplayName>gantry-faults</DisplayName></Owner><Buckets>");
    for (name, created) in buckets {
        s.push_str("<Bucket>");
        el(&mut s, "Name", name);
        el(&mut s, "CreationDate", created);
        s.push_str("</Bucket>");
    }
    s.push_str("</Buckets></ListAllMyBucketsResult>");
    s
}

/// `GetBucketLocation` answer (always the default region).
pub(crate) fn location_doc() -> String {
    format!("{DECL}<LocationConstraint xmlns=\"{NS}\"></LocationConstraint>")
}

/// `<CopyObjectResult>` / `<CopyPartResult>` (`root`): ETag, LastModified and the checksums
/// as (element name, base64 value).
pub(crate) fn copy_result_doc(root: &str, etag: &str, last_modified: &str, checksums: &[(&str, String)]) -> String {
    let mut s = format!("{DECL}<{root} xmlns=\"{NS}\">");
    el(&mut s, "LastModified", last_modified);
    el(&mut s, "ETag", etag);
    for (name, value) in checksums {
        el(&mut s, name, value);
    }
    s.push_str(&format!("</{root}>"));
    s
}

/// `DeleteObjects` answer; `deleted` lists keys (omitted entirely in quiet mode), `refused`
/// the keys not deleted with their error codes (listed in quiet mode too, as S3 does).
pub(crate) fn delete_result_doc(deleted: &[String], refused: &[(String, &str)]) -> String {
    let mut s = format!("{DECL}<DeleteResult xmlns=\"{NS}\">");
    for k in deleted {
        s.push_str("<Deleted>");
        el(&mut s, "Key", k);
        s.push_str("</Deleted>");
    }
    for (k, code) in refused {
        s.push_str("<Error>");
        el(&mut s, "Key", k);
        el(&mut s, "Code", code);
        el(&mut s, "Message", error_message(code));
        s.push_str("</Error>");
    }
    s.push_str("</DeleteResult>");
    s
}

/// A `<Part>` of a CompleteMultipartUpload request.
#[derive(Debug, Deserialize)]
pub(crate) struct CompletedPart {
    #[serde(rename = "PartNumber")]
    pub part_number: u32,
    #[serde(rename = "ETag")]
    pub etag: String,
    #[serde(rename = "ChecksumCRC32", default)]
    pub crc32: Option<String>,
    #[serde(rename = "ChecksumCRC32C", default)]
    pub crc32c: Option<String>,
    #[serde(rename = "ChecksumCRC64NVME", default)]
    pub crc64nvme: Option<String>,
    #[serde(rename = "ChecksumSHA1", default)]
    pub sha1: Option<String>,
    #[serde(rename = "ChecksumSHA256", default)]
    pub sha256: Option<String>,
}

#[derive(Debug, Deserialize)]
struct CompleteRequest {
    #[serde(rename = "Part", default)]
    parts: Vec<CompletedPart>,
}

/// Parses a CompleteMultipartUpload body; `None` for malformed XML or no parts.
pub(crate) fn parse_complete(body: &[u8]) -> Option<Vec<CompletedPart>> {
    let text = std::str::from_utf8(body).ok()?;
    let req: CompleteRequest = quick_xml::de::from_str(text).ok()?;
    (!req.parts.is_empty()).then_some(req.parts)
}

#[derive(Debug, Deserialize)]
struct DeleteObject {
    #[serde(rename = "Key")]
    key: String,
}

#[derive(Debug, Deserialize)]
struct DeleteRequest {
    #[serde(rename = "Object", default)]
    objects: Vec<DeleteObject>,
    #[serde(rename = "Quiet", default)]
    quiet: Option<bool>,
}

/// Parses a DeleteObjects body into (keys, quiet).
pub(crate) fn parse_delete(body: &[u8]) -> Option<(Vec<String>, bool)> {
    let text = std::str::from_utf8(body).ok()?;
    let req: DeleteRequest = quick_xml::de::from_str(text).ok()?;
    Some((req.objects.into_iter().map(|o| o.key).collect(), req.quiet.unwrap_or(false)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complete_parses_namespaced_with_checksums() {
        let body = br#"<?xml version="1.0" encoding="UTF-8"?>
<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Part><ETag>"aa"</ETag><PartNumber>1</PartNumber><ChecksumCRC32C>AAAAAA==</ChecksumCRC32C></Part>
  <Part><PartNumber>2</PartNumber><ETag>&quot;bb&quot;</ETag><ChecksumSHA256>x</ChecksumSHA256></Part>
</CompleteMultipartUpload>"#;
        let parts = parse_complete(body).expect("parses");
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].part_number, 1);
        assert_eq!(parts[0].etag, "\"aa\"");
        assert_eq!(parts[0].crc32c.as_deref(), Some("AAAAAA=="));
        assert_eq!(parts[1].etag, "\"bb\"");
        assert!(parse_complete(b"<CompleteMultipartUpload></CompleteMultipartUpload>").is_none());
        assert!(parse_complete(b"<nope").is_none());
    }

    #[test]
    fn delete_parses() {
        let body = b"<Delete><Object><Key>a</Key></Object><Object><Key>b/c</Key></Object><Quiet>true</Quiet></Delete>";
        let (keys, quiet) = parse_delete(body).expect("parses");
        assert_eq!(keys, ["a", "b/c"]);
        assert!(quiet);
    }

    #[test]
    fn error_doc_escapes() {
        let d = error_doc("NoSuchKey", error_message("NoSuchKey"), "/b/a<b", "id1");
        assert!(d.contains("<Code>NoSuchKey</Code>"));
        assert!(d.contains("<Resource>/b/a&lt;b</Resource>"));
        assert!(d.contains("<RequestId>id1</RequestId>"));
    }
}
