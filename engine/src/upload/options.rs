//! Per-upload settings: what travels with one object, as opposed to the client-wide
//! [`crate::ClientConfig`].

/// Settings of one upload. The object's metadata belongs to the object, not to the client:
/// one client uploads files of many types.
///
/// `#[non_exhaustive]`: build it with [`PutOptions::new`] and the setters, so new settings
/// (metadata, storage class) do not break callers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PutOptions {
    /// `Content-Type` stored with the object and returned on GET, which browsers, CDNs and
    /// static-site hosting use to present it. `None` sends no header (S3 then stores
    /// `binary/octet-stream`, other servers `application/octet-stream`).
    pub content_type: Option<String>,
    /// The parts are copied by the server (UploadPartCopy), not sent: the upload then
    /// declares no checksum algorithm. S3-compatible stores differ on checksummed part copies
    /// (MinIO refuses a copied part into a CRC64NVME upload: "checksum missing"), and the
    /// client never holds the bytes to checksum them itself.
    pub(crate) copied_parts: bool,
}

impl PutOptions {
    /// No settings: the server's defaults.
    pub fn new() -> Self {
        PutOptions::default()
    }

    /// Sets [`PutOptions::content_type`].
    #[must_use]
    pub fn content_type(mut self, content_type: impl Into<String>) -> Self {
        self.content_type = Some(content_type.into());
        self
    }
}
