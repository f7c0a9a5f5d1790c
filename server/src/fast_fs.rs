//! s3s-fs with a faster GET body and `If-Match` on GET.
//!
//! s3s-fs streams object bodies in 4 KiB reads, each a hop to tokio's blocking pool, which
//! caps a download near 120 MiB/s on this machine and made the demo measure the server rather
//! than the client. Here GetObject keeps s3s-fs's answer (metadata, ETag, range checks) and
//! only swaps the body for 1 MiB positional reads. It also answers 412 when `If-Match` does not
//! match, as S3 does, so clients' version pinning is exercised against this server too.
//! Every other operation is s3s-fs's own.
//!
//! Uploads belong to the account, not to an access key: s3s-fs binds a multipart upload to
//! the key that created it and refuses parts signed with any other, which breaks every long
//! upload whose temporary credentials rotate (S3 authorizes by principal, and the rotated keys
//! are the same role). So every verified request is presented to s3s-fs as one principal.

use std::os::unix::fs::FileExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result, S3};

const READ_CHUNK: u64 = 1 << 20;
/// The one account every verified key belongs to (see the module docs).
const PRINCIPAL: &str = "gantry-account";

/// The S3 implementation served by [`crate::serve`].
#[derive(Debug)]
pub(crate) struct FastFs {
    inner: s3s_fs::FileSystem,
    root: PathBuf,
}

impl FastFs {
    pub(crate) fn new(root: &Path) -> std::io::Result<Self> {
        let root = root.canonicalize()?;
        let inner = s3s_fs::FileSystem::new(&root).map_err(|e| std::io::Error::other(format!("{e:?}")))?;
        Ok(FastFs { inner, root })
    }

    async fn get_object_fast(&self, req: S3Request<GetObjectInput>) -> S3Result<S3Response<GetObjectOutput>> {
        let if_match = req.input.if_match.clone();
        let path = plain_path(&self.root, &req.input.bucket, &req.input.key);
        let mut resp = self.inner.get_object(req).await?;
        let out = &mut resp.output;
        if let (Some(ETagCondition::ETag(want)), Some(have)) = (&if_match, &out.e_tag) {
            if want.value() != have.value() {
                return Err(s3_error!(
                    PreconditionFailed,
                    "At least one of the pre-conditions you specified did not hold"
                ));
            }
        }
        let (Some(path), Some(len)) = (path, out.content_length) else { return Ok(resp) };
        let start = match out.content_range.as_deref() {
            Some(cr) => {
                match cr.strip_prefix("bytes ").and_then(|r| r.split('-').next()).and_then(|s| s.parse().ok()) {
                    Some(start) => start,
                    None => return Ok(resp),
                }
            }
            None => 0,
        };
        let file = match std::fs::File::open(&path) {
            Ok(f) => Arc::new(f),
            Err(_) => return Ok(resp),
        };
        let end = start + len as u64;
        let stream = futures::stream::try_unfold(start, move |pos| {
            let file = file.clone();
            async move {
                if pos >= end {
                    return Ok(None);
                }
                let n = READ_CHUNK.min(end - pos) as usize;
                let chunk = tokio::task::spawn_blocking(move || {
                    let mut buf = vec![0u8; n];
                    file.read_exact_at(&mut buf, pos).map(|()| Bytes::from(buf))
                })
                .await
                .map_err(std::io::Error::other)??;
                Ok::<_, std::io::Error>(Some((chunk, pos + n as u64)))
            }
        });
        out.body = Some(StreamingBlob::wrap(stream));
        Ok(resp)
    }
}

/// `root/bucket/key` when the key is a plain relative path (no `..`, no `.`), else `None`
/// (then s3s-fs's own body is used).
fn plain_path(root: &Path, bucket: &str, key: &str) -> Option<PathBuf> {
    let rel = Path::new(bucket).join(key);
    rel.components().all(|c| matches!(c, Component::Normal(_))).then(|| root.join(rel))
}

macro_rules! delegate_to_s3s_fs {
    ($($op:ident: $input:ident => $output:ident),* $(,)?) => {
        #[async_trait::async_trait]
        impl S3 for FastFs {
            async fn get_object(&self, req: S3Request<GetObjectInput>) -> S3Result<S3Response<GetObjectOutput>> {
                self.get_object_fast(req).await
            }
            $(
                async fn $op(&self, mut req: S3Request<$input>) -> S3Result<S3Response<$output>> {
                    if let Some(c) = req.credentials.as_mut() {
                        c.access_key = PRINCIPAL.to_string();
                    }
                    self.inner.$op(req).await
                }
            )*
        }
    };
}

delegate_to_s3s_fs!(
    create_bucket: CreateBucketInput => CreateBucketOutput,
    copy_object: CopyObjectInput => CopyObjectOutput,
    delete_bucket: DeleteBucketInput => DeleteBucketOutput,
    delete_object: DeleteObjectInput => DeleteObjectOutput,
    delete_objects: DeleteObjectsInput => DeleteObjectsOutput,
    get_bucket_location: GetBucketLocationInput => GetBucketLocationOutput,
    head_bucket: HeadBucketInput => HeadBucketOutput,
    head_object: HeadObjectInput => HeadObjectOutput,
    list_buckets: ListBucketsInput => ListBucketsOutput,
    list_objects: ListObjectsInput => ListObjectsOutput,
    list_objects_v2: ListObjectsV2Input => ListObjectsV2Output,
    put_object: PutObjectInput => PutObjectOutput,
    create_multipart_upload: CreateMultipartUploadInput => CreateMultipartUploadOutput,
    upload_part: UploadPartInput => UploadPartOutput,
    upload_part_copy: UploadPartCopyInput => UploadPartCopyOutput,
    list_parts: ListPartsInput => ListPartsOutput,
    complete_multipart_upload: CompleteMultipartUploadInput => CompleteMultipartUploadOutput,
    abort_multipart_upload: AbortMultipartUploadInput => AbortMultipartUploadOutput,
);
