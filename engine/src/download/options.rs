//! Per-download settings: the one shape every GET takes, whatever its destination (caller
//! memory, a file, a writer, a stream). The `*_with` methods of [`crate::Client`] take it;
//! the plain methods are those with [`GetOptions::new`].

use std::ops::Range;

/// Whether a download checks its bytes against the object's stored checksum.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum DownloadChecksum {
    /// As the client is configured (`verify_downloads`, on by default).
    #[default]
    FromConfig,
    /// Verify, whatever the client's setting.
    Verify,
    /// Do not ask for the checksum nor check it (saves the hashing CPU for data checked
    /// elsewhere).
    Skip,
}

/// Settings of one download.
///
/// `#[non_exhaustive]`: build it with [`GetOptions::new`] and the setters, so new settings do
/// not break callers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct GetOptions {
    /// Bytes `range` of the object instead of all of it. A range reaching past the end is cut
    /// at the end; one starting at or past the end fails with the server's 416
    /// (`InvalidRange`). A ranged read is not checksum-verified (S3 sends no checksum for it).
    pub range: Option<Range<u64>>,
    /// Read only if the object's ETag is this one (`If-Match`); otherwise the download fails
    /// with [`crate::ErrorKind::PreconditionFailed`] before any byte. Every part request is
    /// pinned to the ETag of the first answer anyway; this pins the first one too.
    pub if_match: Option<String>,
    /// Read only if the object's ETag is not this one (`If-None-Match`); a match fails with
    /// [`crate::ErrorKind::NotModified`] (HTTP 304): the cached copy is current.
    pub if_none_match: Option<String>,
    /// A version of a versioned object (`versionId`); `None` reads the current version.
    pub version_id: Option<String>,
    /// Whether the bytes are verified against the stored checksum.
    pub checksum: DownloadChecksum,
    /// The size of the ranged part requests; `None` uses the client's `part_size_bytes`.
    /// Smaller parts start sooner on small reads; larger ones cost fewer requests.
    pub part_size_bytes: Option<u64>,
}

impl GetOptions {
    /// The whole current object, with the client's settings.
    pub fn new() -> Self {
        GetOptions::default()
    }

    /// Sets [`GetOptions::range`].
    #[must_use]
    pub fn range(mut self, range: Range<u64>) -> Self {
        self.range = Some(range);
        self
    }

    /// Sets [`GetOptions::if_match`].
    #[must_use]
    pub fn if_match(mut self, etag: impl Into<String>) -> Self {
        self.if_match = Some(etag.into());
        self
    }

    /// Sets [`GetOptions::if_none_match`].
    #[must_use]
    pub fn if_none_match(mut self, etag: impl Into<String>) -> Self {
        self.if_none_match = Some(etag.into());
        self
    }

    /// Sets [`GetOptions::version_id`].
    #[must_use]
    pub fn version_id(mut self, version: impl Into<String>) -> Self {
        self.version_id = Some(version.into());
        self
    }

    /// Sets [`GetOptions::checksum`].
    #[must_use]
    pub fn checksum(mut self, mode: DownloadChecksum) -> Self {
        self.checksum = mode;
        self
    }

    /// Sets [`GetOptions::part_size_bytes`].
    #[must_use]
    pub fn part_size_bytes(mut self, bytes: u64) -> Self {
        self.part_size_bytes = Some(bytes);
        self
    }

    /// Whether the download verifies, given the client's setting.
    pub(crate) fn verifies(&self, configured: bool) -> bool {
        match self.checksum {
            DownloadChecksum::FromConfig => configured,
            DownloadChecksum::Verify => true,
            DownloadChecksum::Skip => false,
        }
    }
}
