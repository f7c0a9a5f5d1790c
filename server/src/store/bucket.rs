//! Buckets: directories under the root with a valid bucket name. CreateBucket, DeleteBucket
//! (`BucketNotEmpty` while an object is left), HeadBucket, GetBucketLocation, ListBuckets.
//!
//! Any directory with a bucket's name is a bucket, including one made by hand (`mkdir
//! ROOT/data`), so `gantry serve --bucket` and tests can create buckets without a request.

use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result};

use super::{blocking, internal, layout, timestamp, Store};

pub(super) async fn create_bucket(
    store: &Store,
    req: S3Request<CreateBucketInput>,
) -> S3Result<S3Response<CreateBucketOutput>> {
    let bucket = req.input.bucket;
    let dir = store
        .layout
        .bucket(&bucket)
        .ok_or_else(|| s3_error!(InvalidBucketName, "The specified bucket is not valid."))?;
    match tokio::fs::create_dir(&dir).await {
        Ok(()) => Ok(S3Response::new(CreateBucketOutput { location: Some(format!("/{bucket}")) })),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(s3_error!(
            BucketAlreadyOwnedByYou,
            "Your previous request to create the named bucket succeeded and you already own it."
        )),
        Err(e) => Err(internal(e)),
    }
}

pub(super) async fn delete_bucket(
    store: &Store,
    req: S3Request<DeleteBucketInput>,
) -> S3Result<S3Response<DeleteBucketOutput>> {
    let dir = store.bucket_dir(&req.input.bucket).await?;
    let probe = dir.clone();
    let has_objects = blocking(move || {
        std::fs::read_dir(&probe)
            .map(|entries| entries.flatten().any(|e| layout::is_object_file_name(&e.file_name().to_string_lossy())))
    })
    .await?
    .map_err(internal)?;
    if has_objects {
        return Err(s3_error!(BucketNotEmpty, "The bucket you tried to delete is not empty"));
    }
    // What is left is ours (uploads in progress, temporary files) or foreign files, which a
    // bucket directory should not hold: all of it goes with the bucket.
    tokio::fs::remove_dir_all(&dir).await.map_err(internal)?;
    Ok(S3Response::new(DeleteBucketOutput {}))
}

pub(super) async fn head_bucket(
    store: &Store,
    req: S3Request<HeadBucketInput>,
) -> S3Result<S3Response<HeadBucketOutput>> {
    store.bucket_dir(&req.input.bucket).await?;
    Ok(S3Response::new(HeadBucketOutput::default()))
}

pub(super) async fn get_bucket_location(
    store: &Store,
    req: S3Request<GetBucketLocationInput>,
) -> S3Result<S3Response<GetBucketLocationOutput>> {
    store.bucket_dir(&req.input.bucket).await?;
    Ok(S3Response::new(GetBucketLocationOutput::default()))
}

pub(super) async fn list_buckets(
    store: &Store,
    _req: S3Request<ListBucketsInput>,
) -> S3Result<S3Response<ListBucketsOutput>> {
    let root = store.layout.root().to_path_buf();
    let mut buckets = blocking(move || -> std::io::Result<Vec<Bucket>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&root)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if !entry.file_type()?.is_dir() || !layout::valid_bucket_name(&name) {
                continue;
            }
            let meta = entry.metadata()?;
            let created = meta.created().or_else(|_| meta.modified())?;
            out.push(Bucket { name: Some(name), creation_date: Some(timestamp(created)), bucket_region: None });
        }
        Ok(out)
    })
    .await?
    .map_err(internal)?;
    buckets.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(S3Response::new(ListBucketsOutput { buckets: Some(buckets), ..Default::default() }))
}
