//! Public result types of S3 operations.

use crate::checksum::S3ChecksumAlgorithm;

/// What HeadObject (or the first part of a download) tells about an object, and for a
/// finished download how its bytes were verified.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ObjectInfo {
    /// Size in bytes.
    pub size: u64,
    /// The entity tag, quotes included, as S3 sends it.
    pub etag: Option<String>,
    /// `Last-Modified` header as sent.
    pub last_modified: Option<String>,
    /// `Content-Type` header as sent.
    pub content_type: Option<String>,
    /// The version read (`x-amz-version-id`), on versioned buckets; pass it as
    /// [`crate::GetOptions::version_id`] to read exactly this version again.
    pub version_id: Option<String>,
    /// How the downloaded bytes were checked against the object's stored checksum. `Some`
    /// in what a finished download returns ([`crate::Client::get_into`],
    /// [`crate::Client::get_range_into`], [`crate::Client::download_to_file`],
    /// [`crate::Client::download_to_writer`]); `None` from HeadObject and in
    /// [`crate::GetStream::info`] (a stream knows only at its end: see
    /// [`crate::GetStream::verification`]).
    pub verification: Option<Verification>,
}

/// How a download's bytes were checked against the checksum the server stores with the
/// object. A download whose bytes do not match fails with
/// [`crate::ErrorKind::ChecksumMismatch`] instead; this says what a successful one proved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Verification {
    /// Every byte matched the object's full-object checksum of this algorithm.
    FullObject(S3ChecksumAlgorithm),
    /// The object's checksum is composite (`<base64>-N`, a checksum of its upload parts'
    /// checksums), and each of its `parts` upload parts matched that part's checksum of
    /// `algorithm`, which together match the composite value.
    Parts {
        /// The algorithm of the part checksums.
        algorithm: S3ChecksumAlgorithm,
        /// How many upload parts were checked (the `N` of `-N`).
        parts: u32,
    },
    /// The bytes were not checked; the reason says why.
    NotVerified(NotVerifiedReason),
}

impl Verification {
    /// The algorithm that verified the bytes; `None` when they were not verified.
    pub fn algorithm(&self) -> Option<S3ChecksumAlgorithm> {
        match self {
            Verification::FullObject(a) | Verification::Parts { algorithm: a, .. } => Some(*a),
            Verification::NotVerified(_) => None,
        }
    }

    /// Whether every byte was checked.
    pub fn is_verified(&self) -> bool {
        self.algorithm().is_some()
    }
}

impl std::fmt::Display for Verification {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verification::FullObject(a) => write!(f, "verified with {a}"),
            Verification::Parts { algorithm, parts } => write!(f, "verified with {algorithm} in {parts} parts"),
            Verification::NotVerified(r) => write!(f, "not verified: {}", r.description()),
        }
    }
}

/// Why a download's bytes were not checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NotVerifiedReason {
    /// The server returned no checksum for the object (none stored, or a store that does not
    /// return them).
    NoChecksum,
    /// The object's checksum of this algorithm is composite (a checksum of its parts'
    /// checksums) and the parts' checksums could not be had or checked: the server does not
    /// answer GetObjectAttributes, lists no part checksums, or lists parts that do not add up
    /// to the object.
    Composite(S3ChecksumAlgorithm),
    /// Verification is off ([`crate::Checksums::verify_downloads`] is `false`).
    Disabled,
    /// A ranged read: S3 returns an object's checksum only with the whole object.
    RangedRead,
}

impl NotVerifiedReason {
    /// A stable snake_case name for machine-readable output: `no_checksum`, `composite`,
    /// `disabled`, `ranged_read`.
    pub fn as_str(&self) -> &'static str {
        match self {
            NotVerifiedReason::NoChecksum => "no_checksum",
            NotVerifiedReason::Composite(_) => "composite",
            NotVerifiedReason::Disabled => "disabled",
            NotVerifiedReason::RangedRead => "ranged_read",
        }
    }

    fn description(&self) -> String {
        match self {
            NotVerifiedReason::NoChecksum => "the server returned no checksum".into(),
            NotVerifiedReason::Composite(a) => format!("the {a} checksum is composite and its parts' are unavailable"),
            NotVerifiedReason::Disabled => "verification is disabled".into(),
            NotVerifiedReason::RangedRead => "a ranged read has no checksum".into(),
        }
    }
}

/// One object in a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
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
#[non_exhaustive]
pub struct ListPage {
    /// Objects in this page.
    pub objects: Vec<ObjectSummary>,
    /// Common prefixes (with a delimiter).
    pub common_prefixes: Vec<String>,
    /// Token for the next page; `None` when this was the last page.
    pub next_continuation_token: Option<String>,
}

/// Options of one ListObjectsV2 call. Build it with [`ListOptions::new`] and the setters
/// (`#[non_exhaustive]`, so a new option does not break callers).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
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

impl ListOptions {
    /// The first page of every key, at the server's page size.
    pub fn new() -> Self {
        ListOptions::default()
    }

    /// Sets [`ListOptions::prefix`].
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    /// Sets [`ListOptions::delimiter`].
    #[must_use]
    pub fn delimiter(mut self, delimiter: impl Into<String>) -> Self {
        self.delimiter = Some(delimiter.into());
        self
    }

    /// Sets [`ListOptions::max_keys`].
    #[must_use]
    pub fn max_keys(mut self, max_keys: u32) -> Self {
        self.max_keys = Some(max_keys);
        self
    }

    /// Sets [`ListOptions::continuation_token`].
    #[must_use]
    pub fn continuation_token(mut self, token: impl Into<String>) -> Self {
        self.continuation_token = Some(token.into());
        self
    }
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

/// Result of an append ([`crate::Client::append`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AppendOutput {
    /// The object's ETag after the append.
    pub etag: String,
    /// The object's size after the append: the offset of the next one.
    pub size: u64,
}

/// Result of an upload.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PutOutput {
    /// ETag of the new object.
    pub etag: Option<String>,
    /// Bytes uploaded.
    pub size: u64,
    /// Number of parts (1 for a single PutObject).
    pub parts: u32,
}

/// Options of a server-side copy ([`crate::Client::copy_object_with`]). Build it with
/// [`CopyOptions::new`] and the setters (`#[non_exhaustive]`, so a new option does not break
/// callers).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CopyOptions {
    /// The source's size, as a listing reported it. See [`CopyOptions::source_size`].
    pub source_size: Option<u64>,
}

impl CopyOptions {
    /// No options: the source is HEADed first, as [`crate::Client::copy_object`] does.
    pub fn new() -> Self {
        Self::default()
    }

    /// The source's size, known from a listing. Why: a fleet copy has just listed every
    /// source, and a HEAD per object doubles its requests. Up to the copy threshold the copy
    /// is then one CopyObject with nothing before it; the source is not pinned to a version,
    /// so an object replaced since the listing is copied as it now is (as `aws s3 cp` and
    /// s5cmd do), and [`CopyOutput::size`] is the size given here. Above the threshold the
    /// source is still HEADed: the parts need its content type and its ETag to pin the version.
    pub fn source_size(mut self, size: u64) -> Self {
        self.source_size = Some(size);
        self
    }
}

/// Result of a server-side copy ([`crate::Client::copy_object`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CopyOutput {
    /// ETag of the new object.
    pub etag: String,
    /// Bytes copied (the source's size).
    pub size: u64,
    /// 1 for a single CopyObject, else the number of UploadPartCopy parts.
    pub parts: u32,
}

/// One key a batch delete could not remove ([`crate::Client::delete_objects`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeleteObjectError {
    /// The key.
    pub key: String,
    /// The S3 error code (`AccessDenied`, `InternalError`, ...).
    pub code: Option<String>,
    /// The server's message.
    pub message: Option<String>,
}

/// Result of [`crate::Client::delete_objects`]: every key was either deleted (a missing key
/// counts as deleted, as S3 says) or is listed in `errors`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeleteObjectsOutput {
    /// Keys deleted.
    pub deleted: u64,
    /// Keys the server refused, with its reason for each.
    pub errors: Vec<DeleteObjectError>,
}

/// One bucket of [`crate::Client::list_buckets`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BucketSummary {
    /// The bucket's name.
    pub name: String,
    /// When it was created, as S3 formats it.
    pub creation_date: Option<String>,
}
