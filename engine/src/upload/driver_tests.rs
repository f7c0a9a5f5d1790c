//! The upload drivers on the in-memory mock store, on tokio's paused clock: every multipart
//! upload ends in exactly one Complete or Abort, whatever fails or is cancelled.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::options::PutOptions;
use super::writer::Writer;
use super::{put_bytes, put_file};
use crate::config::{ClientConfig, RetryConfig};
use crate::context::Context;
use crate::error::{ErrorKind, Operation};
use crate::metrics::Metrics;
use crate::object_client::mock::{Fault, Mock, MockStore};
use crate::task::TaskHandle;

const MIB: u64 = 1 << 20;
const PART: u64 = 5 * MIB;

fn context(store: &Mock) -> Arc<Context<Mock>> {
    let config = ClientConfig::builder()
        .ignore_environment()
        .auto_config(false)
        .part_size_bytes(PART)
        .multipart_threshold_bytes(PART)
        .max_connections(4)
        .memory_limit_bytes(64 * MIB)
        .build()
        .unwrap();
    Arc::new(Context::new(store.clone(), config, tokio::runtime::Handle::current(), Arc::new(Metrics::default())))
}

fn store() -> Mock {
    let retry = RetryConfig {
        max_attempts: 3,
        initial_backoff: Duration::from_millis(100),
        max_backoff: Duration::from_secs(2),
        budget_tokens: 500,
    };
    Arc::new(MockStore::new(retry))
}

fn pattern(len: u64) -> Bytes {
    (0..len).map(|i| (i * 13 % 251) as u8).collect::<Vec<u8>>().into()
}

fn options() -> Arc<PutOptions> {
    Arc::new(PutOptions::new())
}

#[tokio::test(start_paused = true)]
async fn bytes_become_parts_and_one_complete() {
    let store = store();
    let ctx = context(&store);
    let data = pattern(2 * PART + 77);
    let out = put_bytes(ctx.clone(), "b".into(), "k".into(), options(), data.clone()).await.unwrap();
    assert_eq!((out.size, out.parts), (data.len() as u64, 3));
    assert_eq!(store.object("k").unwrap(), data);
    assert_eq!(store.count(Operation::UploadPart), 3);
    assert_eq!(store.count(Operation::CompleteMultipartUpload), 1);
    assert_eq!(store.count(Operation::AbortMultipartUpload), 0);
    assert_eq!(store.open_uploads(), 0);
    // At or below the threshold: one PutObject.
    put_bytes(ctx, "b".into(), "small".into(), options(), pattern(PART)).await.unwrap();
    assert_eq!(store.count(Operation::PutObject), 1);
}

#[tokio::test(start_paused = true)]
async fn a_part_that_fails_for_good_aborts_the_upload() {
    let store = store();
    let ctx = context(&store);
    store.fault(Operation::UploadPart, None, Fault::Fail(ErrorKind::AccessDenied, Some(403)));
    let err = put_bytes(ctx.clone(), "b".into(), "k".into(), options(), pattern(3 * PART)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AccessDenied);
    assert_eq!(store.count(Operation::CompleteMultipartUpload), 0);
    assert_eq!(store.count(Operation::AbortMultipartUpload), 1);
    assert_eq!(store.open_uploads(), 0, "nothing left to be billed");
    assert!(store.object("k").is_none());
    assert_eq!(ctx.scheduler.memory.in_use_bytes(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_throttled_part_is_retried_and_the_upload_completes() {
    let store = store();
    let ctx = context(&store);
    store.fault(Operation::UploadPart, None, Fault::Fail(ErrorKind::Throttled, Some(503)));
    let data = pattern(2 * PART);
    put_bytes(ctx, "b".into(), "k".into(), options(), data.clone()).await.unwrap();
    assert_eq!(store.object("k").unwrap(), data);
    assert_eq!(store.count(Operation::UploadPart), 3, "two parts, one of them twice");
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_upload_is_aborted_in_the_background() {
    let store = store();
    let ctx = context(&store);
    // Parts take a while, so the upload is surely mid-way when it is dropped.
    for _ in 0..4 {
        store.fault(Operation::UploadPart, None, Fault::Delay(Duration::from_secs(5)));
    }
    let fut = put_bytes(ctx.clone(), "b".into(), "k".into(), options(), pattern(4 * PART));
    // Tracked as the client tracks its transfers, so `idle` waits for the clean-up.
    let tracked = ctx.background.enter();
    let task = TaskHandle::spawn(&ctx.handle, Operation::PutObject, async move {
        let _tracked = tracked;
        fut.await
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(store.open_uploads(), 1);
    drop(task);
    tokio::time::timeout(Duration::from_secs(10), ctx.background.idle()).await.expect("the abort finished");
    assert_eq!(store.count(Operation::AbortMultipartUpload), 1);
    assert_eq!(store.open_uploads(), 0);
    assert_eq!(store.count(Operation::CompleteMultipartUpload), 0);
}

#[tokio::test(start_paused = true)]
async fn a_writer_uploads_parts_as_they_fill() {
    let store = store();
    let ctx = context(&store);
    let data = pattern(2 * PART + PART / 2);
    let mut w = Writer::new(ctx.clone(), "b".into(), "k".into(), options());
    for piece in data.chunks(700_000) {
        w.write(piece).await.unwrap();
    }
    let out = w.complete().await.unwrap();
    assert_eq!(out.parts, 3);
    assert_eq!(store.object("k").unwrap(), data);
    // Exactly one part's worth: one PutObject, no multipart upload.
    let mut w = Writer::new(ctx.clone(), "b".into(), "one".into(), options());
    w.write(&pattern(PART)).await.unwrap();
    w.complete().await.unwrap();
    assert_eq!(store.count(Operation::CreateMultipartUpload), 1);
    assert_eq!(store.count(Operation::PutObject), 1);
    // An aborted writer leaves nothing.
    let mut w = Writer::new(ctx.clone(), "b".into(), "gone".into(), options());
    w.write(&pattern(2 * PART)).await.unwrap();
    w.write(&[1]).await.unwrap();
    w.abort().await.unwrap();
    assert_eq!(store.open_uploads(), 0);
    assert!(store.object("gone").is_none());
    assert_eq!(ctx.scheduler.memory.in_use_bytes(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_file_is_read_in_parts() {
    let store = store();
    let ctx = context(&store);
    let data = pattern(2 * PART + 1);
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), &data).unwrap();
    let out = put_file(ctx.clone(), "b".into(), "f".into(), options(), file.path()).await.unwrap();
    assert_eq!(out.parts, 3);
    assert_eq!(store.object("f").unwrap(), data);
    assert_eq!(ctx.scheduler.memory.in_use_bytes(), 0);
}
