//! S3's XML documents, parsed and written with quick-xml's serde support.

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind, Operation};

/// `<Error>` body of a failed request (also sent inside a 200 by CompleteMultipartUpload).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct ErrorBody {
    pub(crate) code: Option<String>,
    pub(crate) message: Option<String>,
    pub(crate) request_id: Option<String>,
    /// The bucket's region, in `AuthorizationHeaderMalformed` and `PermanentRedirect` answers.
    pub(crate) region: Option<String>,
}

/// The `<Region>` of an error document, if it has one.
pub(crate) fn error_region(body: &[u8]) -> Option<String> {
    if body.is_empty() {
        return None;
    }
    quick_xml::de::from_reader::<_, ErrorBody>(body).ok()?.region
}

/// `<InitiateMultipartUploadResult>`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct InitiateMultipartUploadResult {
    pub(crate) upload_id: String,
}

/// `<CompleteMultipartUploadResult>` (only the fields we use).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct CompleteMultipartUploadResult {
    #[serde(rename = "ETag")]
    pub(crate) etag: Option<String>,
}

/// `<CopyObjectResult>` of CopyObject and `<CopyPartResult>` of UploadPartCopy (the same
/// fields; only those we use).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct CopyResult {
    #[serde(rename = "ETag")]
    pub(crate) etag: Option<String>,
    #[serde(rename = "ChecksumCRC64NVME")]
    pub(crate) checksum_crc64nvme: Option<String>,
    #[serde(rename = "ChecksumCRC32C")]
    pub(crate) checksum_crc32c: Option<String>,
}

/// `<Delete>` request body of DeleteObjects.
#[derive(Debug, Serialize)]
#[serde(rename = "Delete")]
pub(crate) struct Delete {
    #[serde(rename = "@xmlns")]
    pub(crate) xmlns: &'static str,
    #[serde(rename = "Object")]
    pub(crate) objects: Vec<DeleteObject>,
    /// Only failures are listed in the answer.
    #[serde(rename = "Quiet")]
    pub(crate) quiet: bool,
}

/// One `<Object>` of a `<Delete>`.
#[derive(Debug, Serialize)]
pub(crate) struct DeleteObject {
    #[serde(rename = "Key")]
    pub(crate) key: String,
}

/// `<DeleteResult>` of DeleteObjects: its `<Error>` entries (the `<Deleted>` ones, which a
/// quiet request does not get and some servers send anyway, are not needed).
#[derive(Debug, Deserialize)]
pub(crate) struct DeleteResult {
    #[serde(rename = "Error", default)]
    pub(crate) errors: Vec<DeleteErrorEntry>,
}

/// An `<Error>` entry: one key the server did not delete.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct DeleteErrorEntry {
    pub(crate) key: String,
    pub(crate) code: Option<String>,
    pub(crate) message: Option<String>,
}

/// `<CompleteMultipartUpload>` request body.
#[derive(Debug, Serialize)]
#[serde(rename = "CompleteMultipartUpload")]
pub(crate) struct CompleteMultipartUpload {
    #[serde(rename = "Part")]
    pub(crate) parts: Vec<CompletedPart>,
}

/// One `<Part>` of [`CompleteMultipartUpload`].
#[derive(Debug, Serialize)]
pub(crate) struct CompletedPart {
    #[serde(rename = "PartNumber")]
    pub(crate) part_number: u32,
    #[serde(rename = "ETag")]
    pub(crate) etag: String,
    #[serde(rename = "ChecksumCRC64NVME", skip_serializing_if = "Option::is_none")]
    pub(crate) checksum_crc64nvme: Option<String>,
    #[serde(rename = "ChecksumCRC32C", skip_serializing_if = "Option::is_none")]
    pub(crate) checksum_crc32c: Option<String>,
}

/// `<ListBucketResult>` of ListObjectsV2.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct ListBucketResult {
    #[serde(default)]
    pub(crate) contents: Vec<ListEntry>,
    #[serde(default)]
    pub(crate) common_prefixes: Vec<CommonPrefix>,
    #[serde(default)]
    pub(crate) is_truncated: bool,
    pub(crate) next_continuation_token: Option<String>,
    /// `url` when the server applied `encoding-type=url` to keys and prefixes.
    pub(crate) encoding_type: Option<String>,
}

/// One `<Contents>` entry.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct ListEntry {
    pub(crate) key: String,
    #[serde(default)]
    pub(crate) size: u64,
    #[serde(rename = "ETag")]
    pub(crate) etag: Option<String>,
    pub(crate) last_modified: Option<String>,
}

/// `<ListAllMyBucketsResult>` of ListBuckets.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct ListAllMyBucketsResult {
    #[serde(default)]
    pub(crate) buckets: BucketList,
}

/// `<Buckets>`: its `<Bucket>` entries.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct BucketList {
    #[serde(rename = "Bucket", default)]
    pub(crate) buckets: Vec<BucketEntry>,
}

/// One `<Bucket>`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct BucketEntry {
    pub(crate) name: String,
    pub(crate) creation_date: Option<String>,
}

/// One `<CommonPrefixes>` entry.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct CommonPrefix {
    pub(crate) prefix: String,
}

/// `<ListMultipartUploadsResult>`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct ListMultipartUploadsResult {
    #[serde(default, rename = "Upload")]
    pub(crate) uploads: Vec<UploadEntry>,
    #[serde(default)]
    pub(crate) is_truncated: bool,
    pub(crate) next_key_marker: Option<String>,
    pub(crate) next_upload_id_marker: Option<String>,
}

/// One `<Upload>` entry.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct UploadEntry {
    pub(crate) key: String,
    pub(crate) upload_id: String,
    pub(crate) initiated: Option<String>,
}

/// `<GetObjectAttributesResponse>` (the `ETag`, `Checksum`, `ObjectParts` and `ObjectSize`
/// attributes). S3 sends the ETag *without* quotes here, unlike in the `ETag` header.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct GetObjectAttributesResponse {
    #[serde(rename = "ETag")]
    pub(crate) etag: Option<String>,
    pub(crate) checksum: Option<ChecksumElements>,
    pub(crate) object_parts: Option<ObjectPartsElement>,
    pub(crate) object_size: Option<u64>,
}

/// `<Checksum>` of GetObjectAttributes: only its type is used (the value comes with the GET).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ChecksumElements {
    /// `FULL_OBJECT` or `COMPOSITE`.
    #[serde(rename = "ChecksumType")]
    pub(crate) checksum_type: Option<String>,
}

/// `<ObjectParts>`: one page of the parts of a multipart object.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct ObjectPartsElement {
    #[serde(default)]
    pub(crate) is_truncated: bool,
    pub(crate) next_part_number_marker: Option<u32>,
    pub(crate) parts_count: Option<u32>,
    #[serde(default, rename = "Part")]
    pub(crate) parts: Vec<ObjectPartElement>,
}

/// One `<Part>` of [`ObjectPartsElement`]: its number, size and checksum (when the upload
/// sent checksums).
#[derive(Debug, Deserialize)]
pub(crate) struct ObjectPartElement {
    #[serde(rename = "PartNumber")]
    pub(crate) part_number: u32,
    #[serde(rename = "Size")]
    pub(crate) size: u64,
    #[serde(rename = "ChecksumCRC32")]
    pub(crate) crc32: Option<String>,
    #[serde(rename = "ChecksumCRC32C")]
    pub(crate) crc32c: Option<String>,
    #[serde(rename = "ChecksumCRC64NVME")]
    pub(crate) crc64nvme: Option<String>,
    #[serde(rename = "ChecksumSHA1")]
    pub(crate) sha1: Option<String>,
    #[serde(rename = "ChecksumSHA256")]
    pub(crate) sha256: Option<String>,
}

/// Parses an S3 XML document, mapping failure to a retryable protocol error.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(body: &[u8], op: Operation) -> Result<T, Error> {
    let text = std::str::from_utf8(body)
        .map_err(|e| Error::new(ErrorKind::Protocol, op, "response XML is not UTF-8").with_source(e))?;
    quick_xml::de::from_str(text)
        .map_err(|e| Error::new(ErrorKind::Protocol, op, "cannot parse the response XML").with_source(e))
}

/// Whether a 200 body is really an `<Error>` document (CompleteMultipartUpload does this).
pub(crate) fn is_error_document(body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(&body[..body.len().min(512)]);
    let start = text.trim_start();
    let start = match start.strip_prefix("<?xml") {
        Some(rest) => rest.split_once("?>").map_or("", |(_, r)| r).trim_start(),
        None => start,
    };
    start.starts_with("<Error>")
}

/// Serialises a request document.
pub(crate) fn to_string<T: Serialize>(doc: &T) -> String {
    quick_xml::se::to_string(doc).expect("S3 request documents always serialise")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_list_result() {
        let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix></Prefix>
<KeyCount>2</KeyCount><MaxKeys>2</MaxKeys><IsTruncated>true</IsTruncated>
<Contents><Key>a&amp;b</Key><LastModified>2024-01-01T00:00:00.000Z</LastModified><ETag>"e1"</ETag><Size>5</Size></Contents>
<Contents><Key>c</Key><Size>0</Size></Contents>
<NextContinuationToken>tok</NextContinuationToken></ListBucketResult>"#;
        let r: ListBucketResult = parse(xml.as_bytes(), Operation::ListObjectsV2).unwrap();
        assert_eq!(r.contents.len(), 2);
        assert_eq!(r.contents[0].key, "a&b");
        assert_eq!(r.contents[0].etag.as_deref(), Some("\"e1\""));
        assert!(r.is_truncated);
        assert_eq!(r.next_continuation_token.as_deref(), Some("tok"));
    }

    #[test]
    fn parses_error_and_detects_error_in_200() {
        let xml = b"<?xml version=\"1.0\"?>\n<Error><Code>SlowDown</Code><Message>m</Message><RequestId>R</RequestId></Error>";
        let e: ErrorBody = parse(xml, Operation::GetObject).unwrap();
        assert_eq!(e.code.as_deref(), Some("SlowDown"));
        assert_eq!(e.request_id.as_deref(), Some("R"));
        assert!(is_error_document(xml));
        assert!(!is_error_document(b"<CompleteMultipartUploadResult></CompleteMultipartUploadResult>"));
    }

    #[test]
    fn copy_and_delete_documents() {
        let copy: CopyResult = parse(
            br#"<CopyPartResult><LastModified>2026-01-01T00:00:00Z</LastModified><ETag>"e1"</ETag><ChecksumCRC64NVME>AAAAAAAAACo=</ChecksumCRC64NVME></CopyPartResult>"#,
            Operation::UploadPartCopy,
        )
        .unwrap();
        assert_eq!(copy.etag.as_deref(), Some("\"e1\""));
        assert_eq!(copy.checksum_crc64nvme.as_deref(), Some("AAAAAAAAACo="));
        let doc = to_string(&Delete {
            xmlns: "http://s3.amazonaws.com/doc/2006-03-01/",
            objects: vec![DeleteObject { key: "a&b<c>".into() }, DeleteObject { key: "d".into() }],
            quiet: true,
        });
        assert_eq!(
            doc,
            r#"<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Object><Key>a&amp;b&lt;c&gt;</Key></Object><Object><Key>d</Key></Object><Quiet>true</Quiet></Delete>"#
        );
        let result: DeleteResult = parse(
            br#"<DeleteResult><Deleted><Key>d</Key></Deleted><Error><Key>a&amp;b</Key><Code>AccessDenied</Code><Message>no</Message></Error></DeleteResult>"#,
            Operation::DeleteObjects,
        )
        .unwrap();
        assert_eq!(result.errors.len(), 1);
        assert_eq!(result.errors[0].key, "a&b");
        assert_eq!(result.errors[0].code.as_deref(), Some("AccessDenied"));
        let empty: DeleteResult = parse(b"<DeleteResult/>", Operation::DeleteObjects).unwrap();
        assert!(empty.errors.is_empty());
    }

    #[test]
    fn parses_bucket_list() {
        let doc: ListAllMyBucketsResult = parse(
            br#"<ListAllMyBucketsResult><Owner><ID>o</ID></Owner><Buckets><Bucket><Name>a</Name><CreationDate>2026-01-01T00:00:00.000Z</CreationDate></Bucket><Bucket><Name>b</Name></Bucket></Buckets></ListAllMyBucketsResult>"#,
            Operation::ListBuckets,
        )
        .unwrap();
        let names: Vec<_> = doc.buckets.buckets.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(doc.buckets.buckets[0].creation_date.as_deref(), Some("2026-01-01T00:00:00.000Z"));
        let none: ListAllMyBucketsResult =
            parse(b"<ListAllMyBucketsResult><Buckets/></ListAllMyBucketsResult>", Operation::ListBuckets).unwrap();
        assert!(none.buckets.buckets.is_empty());
    }

    #[test]
    fn writes_complete_document() {
        let part = |n, crc: Option<&str>| CompletedPart {
            part_number: n,
            etag: "\"a&b\"".into(),
            checksum_crc64nvme: crc.map(str::to_string),
            checksum_crc32c: None,
        };
        let doc = CompleteMultipartUpload { parts: vec![part(1, None)] };
        let s = to_string(&doc);
        assert_eq!(
            s,
            "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>\"a&amp;b\"</ETag></Part></CompleteMultipartUpload>"
        );
        let s = to_string(&CompleteMultipartUpload { parts: vec![part(2, Some("AAAAAAAAAAA="))] });
        assert!(s.contains("<PartNumber>2</PartNumber><ETag>\"a&amp;b\"</ETag><ChecksumCRC64NVME>AAAAAAAAAAA=</ChecksumCRC64NVME></Part>"), "{s}");
    }

    #[test]
    fn parses_object_attributes() {
        // The shape of S3's documented answer, ETag unquoted.
        let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<GetObjectAttributesResponse xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><ETag>abc-2</ETag>
<Checksum><ChecksumSHA256>e3b0xyz=-2</ChecksumSHA256><ChecksumType>COMPOSITE</ChecksumType></Checksum>
<ObjectParts><IsTruncated>true</IsTruncated><MaxParts>2</MaxParts><NextPartNumberMarker>2</NextPartNumberMarker>
<PartNumberMarker>0</PartNumberMarker><Part><ChecksumSHA256>aa==</ChecksumSHA256><PartNumber>1</PartNumber><Size>5242880</Size></Part>
<Part><PartNumber>2</PartNumber><Size>7</Size></Part><PartsCount>3</PartsCount></ObjectParts>
<StorageClass>STANDARD</StorageClass><ObjectSize>5242894</ObjectSize></GetObjectAttributesResponse>"#;
        let r: GetObjectAttributesResponse = parse(xml.as_bytes(), Operation::GetObject).unwrap();
        assert_eq!(r.etag.as_deref(), Some("abc-2"));
        let c = r.checksum.unwrap();
        assert_eq!(c.checksum_type.as_deref(), Some("COMPOSITE"));
        let p = r.object_parts.unwrap();
        assert!(p.is_truncated);
        assert_eq!((p.next_part_number_marker, p.parts_count), (Some(2), Some(3)));
        assert_eq!(p.parts.len(), 2);
        assert_eq!((p.parts[0].part_number, p.parts[0].size, p.parts[0].sha256.as_deref()), (1, 5242880, Some("aa==")));
        assert_eq!((p.parts[1].size, p.parts[1].sha256.as_deref()), (7, None));
        assert_eq!(r.object_size, Some(5242894));
    }

    #[test]
    fn garbage_is_a_retryable_protocol_error() {
        let e = parse::<ListBucketResult>(b"<<<", Operation::ListObjectsV2).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Protocol);
        assert!(e.is_retryable());
    }

    mod fuzz {
        //! Property tests standing in for a fuzzer: whatever bytes a server sends, parsing
        //! returns a typed error or a value, never a panic, and errors stay retryable
        //! protocol errors (a broken proxy usually recovers).
        use super::super::*;
        use proptest::prelude::*;

        fn xmlish() -> impl Strategy<Value = Vec<u8>> {
            let tokens = prop_oneof![
                Just("<ListBucketResult>".to_string()),
                Just("</ListBucketResult>".to_string()),
                Just("<Contents><Key>".to_string()),
                Just("</Key><Size>".to_string()),
                Just("</Size></Contents>".to_string()),
                Just("<Error><Code>".to_string()),
                Just("</Code></Error>".to_string()),
                Just("<IsTruncated>true</IsTruncated>".to_string()),
                Just("<?xml version=\"1.0\"?>".to_string()),
                Just("&amp;&#0;&bogus;".to_string()),
                "[a-zA-Z0-9 <>/=\"-]{0,12}",
                "\\PC{0,6}",
            ];
            proptest::collection::vec(tokens, 0..40).prop_map(|t| t.concat().into_bytes())
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]
            #[test]
            fn parsers_never_panic(body in xmlish()) {
                for result in [
                    parse::<ListBucketResult>(&body, Operation::ListObjectsV2).err(),
                    parse::<ErrorBody>(&body, Operation::GetObject).err(),
                    parse::<InitiateMultipartUploadResult>(&body, Operation::CreateMultipartUpload).err(),
                    parse::<CompleteMultipartUploadResult>(&body, Operation::CompleteMultipartUpload).err(),
                    parse::<GetObjectAttributesResponse>(&body, Operation::GetObject).err(),
                ].into_iter().flatten() {
                    prop_assert_eq!(result.kind(), crate::error::ErrorKind::Protocol);
                    prop_assert!(result.is_retryable());
                }
                let _ = is_error_document(&body);
            }

            #[test]
            fn raw_bytes_never_panic(body in proptest::collection::vec(any::<u8>(), 0..512)) {
                let _ = parse::<ListBucketResult>(&body, Operation::ListObjectsV2);
                let _ = parse::<ErrorBody>(&body, Operation::GetObject);
                let _ = is_error_document(&body);
            }
        }
    }
}
