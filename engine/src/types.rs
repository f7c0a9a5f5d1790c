//! Public result types of S3 operations.

/// What HeadObject (or the first part of a download) tells about an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectInfo {
    /// Size in bytes.
    pub size: u64,
    /// The entity tag, quotes included, as S3 sends it.
    pub etag: Option<String>,
    /// `Last-Modified` header as sent.
    pub last_modified: Option<String>,
    /// `Content-Type` header as sent.
    pub content_type: Option<String>,
}

/// One object in a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectSummary {
    /// Full key.
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// Entity tag, quotes included.
    pub etag: Option<String>,
    /// Last modification time as S3 formats it.
    pub last_modified: Option<String>,
}

/// One page of ListObjectsV2.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListPage {
    /// Objects in this page.
    pub objects: Vec<ObjectSummary>,
    /// Common prefixes (with a delimiter).
    pub common_prefixes: Vec<String>,
    /// Token for the next page; `None` when this was the last page.
    pub next_continuation_token: Option<String>,
}

/// Options of one ListObjectsV2 call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// Only keys starting with this.
    pub prefix: Option<String>,
    /// Group keys by this delimiter into common prefixes.
    pub delimiter: Option<String>,
    /// Page size (S3 caps it at 1,000).
    pub max_keys: Option<u32>,
    /// Continue after a previous page.
    pub continuation_token: Option<String>,
}

/// An in-progress multipart upload as ListMultipartUploads reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MultipartUploadSummary {
    /// The object key.
    pub key: String,
    /// The upload id.
    pub upload_id: String,
    /// When the upload was created (`Initiated`), if the server said.
    pub initiated: Option<std::time::SystemTime>,
}

/// Result of an upload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutOutput {
    /// ETag of the new object.
    pub etag: Option<String>,
    /// Bytes uploaded.
    pub size: u64,
    /// Number of parts (1 for a single PutObject).
    pub parts: u32,
}
