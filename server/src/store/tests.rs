//! The store through its S3 trait, concurrently: what the wire tests cannot time precisely
//! (many writers of one key, many parts of one upload at once, nothing left behind).

use std::sync::Arc;

use futures::StreamExt;
use s3s::dto::*;
use s3s::{S3Request, S3};

use super::Store;

fn req<T>(input: T) -> S3Request<T> {
    S3Request {
        input,
        method: http::Method::PUT,
        uri: http::Uri::from_static("/"),
        headers: http::HeaderMap::new(),
        extensions: http::Extensions::new(),
        credentials: None,
        region: None,
        service: None,
        trailing_headers: None,
    }
}

fn blob(data: Vec<u8>) -> StreamingBlob {
    StreamingBlob::from(s3s::Body::from(data))
}

async fn get(store: &Store, key: &str, part: Option<i32>) -> (Vec<u8>, GetObjectOutput) {
    let mut b = GetObjectInput::builder();
    b.set_bucket("data".into());
    b.set_key(key.into());
    b.set_part_number(part);
    let mut out = store.get_object(req(b.build().unwrap())).await.unwrap().output;
    let mut body = out.body.take().unwrap();
    let mut bytes = Vec::new();
    while let Some(chunk) = body.next().await {
        bytes.extend_from_slice(&chunk.unwrap());
    }
    (bytes, out)
}

fn md5_hex(data: &[u8]) -> String {
    use s3s::crypto::Checksum as _;
    hex::encode(s3s::crypto::Md5::checksum(data))
}

fn store() -> (tempfile::TempDir, Arc<Store>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    let store = Arc::new(Store::new(dir.path()).unwrap());
    (dir, store)
}

/// Only object files are left in the bucket: no temporary file survives a finished write.
fn assert_no_temp_files(dir: &std::path::Path) {
    for e in std::fs::read_dir(dir.join("data")).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(!name.starts_with(super::layout::TEMP_PREFIX), "left behind: {name}");
    }
}

/// Sixteen PUTs of one key at once: the object is exactly one of them, bytes and ETag alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_puts_of_one_key_leave_one_whole_version() {
    let (dir, store) = store();
    let bodies: Vec<Vec<u8>> = (0..16u8).map(|i| vec![i; 300_000 + usize::from(i) * 1000]).collect();
    let tasks: Vec<_> = bodies
        .iter()
        .cloned()
        .map(|body| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut b = PutObjectInput::builder();
                b.set_bucket("data".into());
                b.set_key("same".into());
                b.set_body(Some(blob(body)));
                store.put_object(req(b.build().unwrap())).await.unwrap();
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let (got, out) = get(&store, "same", None).await;
    assert!(bodies.contains(&got), "a mix of versions: {} bytes", got.len());
    assert_eq!(out.e_tag.unwrap().value(), md5_hex(&got), "the ETag describes the bytes sent");
    assert_eq!(std::fs::read_dir(dir.path().join("data")).unwrap().count(), 1);
    assert_no_temp_files(dir.path());
}

/// Twenty parts uploaded at once (small ones: accepted on purpose) complete in order, and the
/// upload leaves nothing behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_parts_complete_in_order() {
    let (dir, store) = store();
    let mut b = CreateMultipartUploadInput::builder();
    b.set_bucket("data".into());
    b.set_key("mp".into());
    b.set_checksum_algorithm(Some(ChecksumAlgorithm::from_static(ChecksumAlgorithm::CRC32C)));
    let id = store.create_multipart_upload(req(b.build().unwrap())).await.unwrap().output.upload_id.unwrap();
    let parts: Vec<Vec<u8>> =
        (1..=20u8).map(|i| (0..50_000).map(|j| i.wrapping_mul(31) ^ (j as u8)).collect()).collect();
    let tasks: Vec<_> = parts
        .iter()
        .cloned()
        .enumerate()
        .map(|(i, body)| {
            let (store, id) = (store.clone(), id.clone());
            tokio::spawn(async move {
                let mut b = UploadPartInput::builder();
                b.set_bucket("data".into());
                b.set_key("mp".into());
                b.set_upload_id(id);
                b.set_part_number(i as i32 + 1);
                b.set_body(Some(blob(body)));
                let out = store.upload_part(req(b.build().unwrap())).await.unwrap().output;
                (i as i32 + 1, out.e_tag.unwrap(), out.checksum_crc32c.unwrap())
            })
        })
        .collect();
    let mut done = Vec::new();
    for t in tasks {
        let (n, etag, crc) = t.await.unwrap();
        done.push(CompletedPart {
            part_number: Some(n),
            e_tag: Some(etag),
            checksum_crc32c: Some(crc),
            ..Default::default()
        });
    }
    // Out of order is refused; in order completes.
    let complete = |parts: Vec<CompletedPart>| {
        let mut b = CompleteMultipartUploadInput::builder();
        b.set_bucket("data".into());
        b.set_key("mp".into());
        b.set_upload_id(id.clone());
        b.set_multipart_upload(Some(CompletedMultipartUpload { parts: Some(parts) }));
        req(b.build().unwrap())
    };
    let mut swapped = done.clone();
    swapped.swap(0, 1);
    let e = store.complete_multipart_upload(complete(swapped)).await.unwrap_err();
    assert_eq!(e.code().as_str(), "InvalidPartOrder");
    let mut wrong = done.clone();
    wrong[3].e_tag = Some(ETag::Strong("0".repeat(32)));
    assert_eq!(store.complete_multipart_upload(complete(wrong)).await.unwrap_err().code().as_str(), "InvalidPart");
    let out = store.complete_multipart_upload(complete(done)).await.unwrap().output;
    assert!(out.e_tag.unwrap().value().ends_with("-20"));
    assert!(out.checksum_crc32c.unwrap().ends_with("-20"), "COMPOSITE by default for CRC32C");

    let whole: Vec<u8> = parts.concat();
    let (got, _) = get(&store, "mp", None).await;
    assert!(got == whole, "assembled bytes differ");
    let (got, out) = get(&store, "mp", Some(7)).await;
    assert!(got == parts[6], "part 7");
    assert_eq!(out.parts_count, Some(20));
    assert_eq!(out.content_range.as_deref(), Some("bytes 300000-349999/1000000"));
    assert!(!dir.path().join("data/.uploads").read_dir().unwrap().any(|_| true), "upload left behind");
    assert_no_temp_files(dir.path());
}

/// A missing bucket is `NoSuchBucket` for a write (never created by it), a missing key
/// `NoSuchKey`, an unknown upload `NoSuchUpload`.
#[tokio::test]
async fn missing_things_are_named() {
    let (dir, store) = store();
    let mut b = PutObjectInput::builder();
    b.set_bucket("nothere".into());
    b.set_key("k".into());
    b.set_body(Some(blob(b"x".to_vec())));
    assert_eq!(store.put_object(req(b.build().unwrap())).await.unwrap_err().code().as_str(), "NoSuchBucket");
    assert!(!dir.path().join("nothere").exists());
    let mut b = GetObjectInput::builder();
    b.set_bucket("data".into());
    b.set_key("k".into());
    assert_eq!(store.get_object(req(b.build().unwrap())).await.unwrap_err().code().as_str(), "NoSuchKey");
    let mut b = UploadPartInput::builder();
    b.set_bucket("data".into());
    b.set_key("k".into());
    b.set_upload_id("0".repeat(32));
    b.set_part_number(1);
    b.set_body(Some(blob(b"x".to_vec())));
    assert_eq!(store.upload_part(req(b.build().unwrap())).await.unwrap_err().code().as_str(), "NoSuchUpload");
}
