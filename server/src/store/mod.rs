//! gantry's own storage behind s3s's [`S3`] trait: buckets are directories under a root, each
//! object one file named by the hash of its key (see [`layout`]), holding its bytes and its
//! description (see [`record`]).
//!
//! Why not s3s-fs, which this replaces: it maps keys to paths, so distinct keys collide
//! (`a//b` and `a/b`), keys leave their bucket (`../other/f`), long keys fail after their data
//! is written, keys ending in `/` become directories; it ignores `encoding-type=url`, loses a
//! multipart upload's checksum, creates missing buckets on upload and implements neither
//! ListMultipartUploads nor GetObjectAttributes. Here a key is only ever data.
//!
//! What S3 does that this store does the same way:
//! - writes are atomic (temporary file, then `rename(2)`), last writer wins;
//! - ETags: hex MD5 of a single PUT, `md5(part md5s)-N` of a multipart object, stored (a GET
//!   never re-hashes);
//! - checksums of every algorithm, FULL_OBJECT and COMPOSITE, verified on upload
//!   (`BadDigest`), answered with `x-amz-checksum-mode: ENABLED` (see [`checksum`]);
//! - `NoSuchBucket` on every operation on a missing bucket, `NoSuchKey`, `NoSuchUpload`,
//!   `InvalidPart`/`InvalidPartOrder` on Complete, 412 on a failed `If-Match`, 416 on an
//!   unsatisfiable range.
//!
//! Where it differs on purpose: parts smaller than 5 MiB are accepted everywhere (S3 refuses
//! all but the last with `EntityTooSmall`), so tests can use small parts; there are no
//! versions, ACLs, encryption or storage classes; a crash of the machine (not the process) may
//! lose recent writes, as nothing is fsynced.
//!
//! Uploads belong to the account, not to an access key: S3 authorizes by principal, and a long
//! upload whose temporary keys rotate must keep its parts, so no operation here looks at the
//! key that signed it.

mod body;
mod bucket;
pub(crate) mod checksum;
mod layout;
mod list;
mod multipart;
mod object;
mod record;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use s3s::dto::*;
use s3s::{s3_error, S3Error, S3Request, S3Response, S3Result, S3};
use serde::{Deserialize, Serialize};

use layout::Layout;

/// The S3 implementation served by [`crate::serve`].
#[derive(Debug)]
pub(crate) struct Store {
    layout: Layout,
}

/// What an object's record says about it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ObjectMeta {
    /// The key, exactly (the file name is only its hash).
    key: String,
    /// Without quotes.
    etag: String,
    #[serde(default, flatten)]
    headers: Headers,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    checksum: Option<checksum::Stored>,
    /// The parts of a multipart object, in order (empty for a single PUT).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    parts: Vec<PartMeta>,
}

/// The stored request headers an object answers with.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Headers {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    content_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    content_encoding: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    content_disposition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    content_language: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cache_control: Option<String>,
    /// `x-amz-meta-*`, names lowercase.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    metadata: BTreeMap<String, String>,
}

impl Headers {
    fn new(
        content_type: Option<ContentType>,
        content_encoding: Option<String>,
        content_disposition: Option<String>,
        content_language: Option<String>,
        cache_control: Option<String>,
        metadata: Option<Metadata>,
    ) -> Headers {
        Headers {
            content_type: content_type.map(|t| t.to_string()),
            content_encoding,
            content_disposition,
            content_language,
            cache_control,
            metadata: metadata.unwrap_or_default().into_iter().collect(),
        }
    }

    fn metadata(&self) -> Option<Metadata> {
        (!self.metadata.is_empty()).then(|| self.metadata.clone().into_iter().collect())
    }
}

/// One part: of an upload (its part file's record) or of a completed multipart object.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct PartMeta {
    number: i32,
    size: u64,
    /// Hex MD5 of the part (its ETag).
    md5: String,
    /// Base64 checksum of the part in the upload's algorithm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    checksum: Option<String>,
}

impl Store {
    /// A store over `root` (created if missing). Removes temporary files a crashed server
    /// left behind.
    pub(crate) fn new(root: &Path) -> std::io::Result<Store> {
        std::fs::create_dir_all(root)?;
        let root = root.canonicalize()?;
        for bucket in std::fs::read_dir(&root)? {
            let bucket = bucket?;
            if !bucket.file_type()?.is_dir() {
                continue;
            }
            for entry in std::fs::read_dir(bucket.path())? {
                let entry = entry?;
                if entry.file_name().to_string_lossy().starts_with(layout::TEMP_PREFIX) {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
        Ok(Store { layout: Layout::new(root) })
    }

    /// The directory of `bucket`, or `NoSuchBucket`.
    async fn bucket_dir(&self, bucket: &str) -> S3Result<PathBuf> {
        let dir = self.layout.bucket(bucket).ok_or_else(no_such_bucket)?;
        match tokio::fs::metadata(&dir).await {
            Ok(m) if m.is_dir() => Ok(dir),
            _ => Err(no_such_bucket()),
        }
    }
}

fn no_such_bucket() -> S3Error {
    s3_error!(NoSuchBucket, "The specified bucket does not exist")
}

fn no_such_key() -> S3Error {
    s3_error!(NoSuchKey, "The specified key does not exist.")
}

fn no_such_upload() -> S3Error {
    s3_error!(NoSuchUpload, "The specified multipart upload does not exist.")
}

/// An unexpected failure (I/O, a panicked blocking task): 500 with the cause logged.
pub(crate) fn internal(e: impl std::fmt::Display) -> S3Error {
    tracing::warn!("storage error: {e}");
    s3_error!(InternalError, "{e}")
}

/// A record's description that names the key it holds. File names are only hashes, so a
/// record is the key's only when its description says so.
trait KeyedMeta: serde::de::DeserializeOwned + Send + 'static {
    fn key(&self) -> &str;
}

impl KeyedMeta for ObjectMeta {
    fn key(&self) -> &str {
        &self.key
    }
}

/// Opens the record at `path` when it holds `key`; otherwise the `missing` error
/// (`NoSuchKey`, `NoSuchUpload`): a file that is not this key's, or not ours, is no record.
async fn open_keyed<M: KeyedMeta>(path: PathBuf, key: &str, missing: fn() -> S3Error) -> S3Result<record::Record<M>> {
    let key = key.to_owned();
    blocking(move || match record::open::<M>(&path) {
        Ok(r) if r.meta.key() == key => Ok(r),
        Ok(_) => Err(missing()),
        Err(e) if e.is_not_found() => Err(missing()),
        Err(e) => Err(internal(e)),
    })
    .await?
}

/// Runs blocking file work on tokio's blocking pool.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> S3Result<T> {
    tokio::task::spawn_blocking(f).await.map_err(internal)
}

fn timestamp(t: std::time::SystemTime) -> Timestamp {
    Timestamp::from(t)
}

macro_rules! ops {
    ($($module:ident :: $op:ident: $input:ident => $output:ident),* $(,)?) => {
        #[async_trait::async_trait]
        impl S3 for Store {
            $(
                async fn $op(&self, req: S3Request<$input>) -> S3Result<S3Response<$output>> {
                    $module::$op(self, req).await
                }
            )*
        }
    };
}

ops!(
    bucket::create_bucket: CreateBucketInput => CreateBucketOutput,
    bucket::delete_bucket: DeleteBucketInput => DeleteBucketOutput,
    bucket::head_bucket: HeadBucketInput => HeadBucketOutput,
    bucket::get_bucket_location: GetBucketLocationInput => GetBucketLocationOutput,
    bucket::list_buckets: ListBucketsInput => ListBucketsOutput,
    object::put_object: PutObjectInput => PutObjectOutput,
    object::get_object: GetObjectInput => GetObjectOutput,
    object::head_object: HeadObjectInput => HeadObjectOutput,
    object::delete_object: DeleteObjectInput => DeleteObjectOutput,
    object::delete_objects: DeleteObjectsInput => DeleteObjectsOutput,
    object::copy_object: CopyObjectInput => CopyObjectOutput,
    object::get_object_attributes: GetObjectAttributesInput => GetObjectAttributesOutput,
    list::list_objects_v2: ListObjectsV2Input => ListObjectsV2Output,
    list::list_objects: ListObjectsInput => ListObjectsOutput,
    multipart::create_multipart_upload: CreateMultipartUploadInput => CreateMultipartUploadOutput,
    multipart::upload_part: UploadPartInput => UploadPartOutput,
    multipart::upload_part_copy: UploadPartCopyInput => UploadPartCopyOutput,
    multipart::list_parts: ListPartsInput => ListPartsOutput,
    multipart::complete_multipart_upload: CompleteMultipartUploadInput => CompleteMultipartUploadOutput,
    multipart::abort_multipart_upload: AbortMultipartUploadInput => AbortMultipartUploadOutput,
    multipart::list_multipart_uploads: ListMultipartUploadsInput => ListMultipartUploadsOutput,
);
