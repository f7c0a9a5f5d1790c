//! Lost answers of the two multipart calls that are not idempotent, against the fault server's
//! `ResetAfterAct`: the server carries the request out, then resets the connection instead of
//! answering, which is what a response lost by the network or a proxy looks like to a client.
//!
//! - A lost CompleteMultipartUpload answer: the retry meets `NoSuchUpload` (S3's answer to a
//!   second Complete of an upload it has completed), and the upload must still succeed.
//! - A lost CreateMultipartUpload answer: the retry makes a second upload, and the first, whose
//!   id the client never learned, must be aborted rather than left behind.
//!
//! Each test checks the exact bytes and ETag on the server and what is left open afterwards.

use std::io::{Read, Write};
use std::time::Duration;

use gantry::{Client, ClientConfig, Credentials, CredentialsSource, RetryConfig, Timeouts};
use gantry_faults::{Fault, FaultServer, Match, Op, Rule};
use gantry_integration::{pattern, sha256, with_deadline, PART};

const BUCKET: &str = "lost";
/// Three parts, the last one short.
const SIZE: usize = (2 * PART + PART / 2) as usize;

fn client(server: &FaultServer) -> Client {
    let config = ClientConfig::builder()
        .ignore_environment()
        .endpoint_url(server.endpoint())
        .credentials(CredentialsSource::Static(Credentials::new("AKID", "SECRET")))
        .part_size_bytes(PART)
        .max_connections(4)
        .worker_threads(2)
        .retry(
            RetryConfig::default()
                .max_attempts(4)
                .initial_backoff(Duration::from_millis(5))
                .max_backoff(Duration::from_millis(50)),
        )
        .timeouts(Timeouts::default().first_byte(Duration::from_secs(2)))
        .build()
        .expect("config");
    Client::new(config).expect("client")
}

fn deadline(f: impl FnOnce() + Send + 'static) {
    with_deadline(Duration::from_secs(60), f)
}

/// The bucket's in-progress uploads as (key, upload id), through ListMultipartUploads.
fn open_uploads(c: &Client) -> Vec<(String, String)> {
    let list = c.block_on(c.list_multipart_uploads(BUCKET, None)).expect("ListMultipartUploads");
    list.into_iter().map(|u| (u.key, u.upload_id)).collect()
}

/// Starts a multipart upload of `key` with a raw request (another writer's upload, which the
/// engine must leave alone); returns its id.
fn foreign_upload(server: &FaultServer, key: &str) -> String {
    let mut s = std::net::TcpStream::connect(server.addr()).unwrap();
    write!(s, "POST /{BUCKET}/{key}?uploads HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let id = answer.split("<UploadId>").nth(1).and_then(|r| r.split("</UploadId>").next());
    id.unwrap_or_else(|| panic!("no upload id in {answer}")).to_string()
}

/// A lost CompleteMultipartUpload answer. The server completes the upload and resets the
/// connection; the engine sends Complete again and meets `NoSuchUpload`, as S3 answers a
/// second Complete of an upload it has completed (at least once some time has passed). The
/// upload must succeed with the object's bytes and ETag, and leave no upload open. Both a
/// buffer and a writer upload (the two drivers of Complete).
#[test]
fn a_lost_complete_answer_is_a_success() {
    deadline(|| {
        let server = FaultServer::start();
        server.create_bucket(BUCKET);
        let data = pattern(SIZE, 31);
        let c = client(&server);
        for (key, writer) in [("buffer", false), ("writer", true)] {
            server.clear_rules();
            server.reset_log();
            server.add_rule(Rule::new(Match::op(Op::CompleteMultipartUpload), Fault::ResetAfterAct).times(1));
            let out = c
                .block_on(async {
                    if writer {
                        let mut up = c.upload(BUCKET, key);
                        up.write(&data).await?;
                        up.complete().await
                    } else {
                        c.put(BUCKET, key, data.clone()).await
                    }
                })
                .unwrap_or_else(|e| panic!("{key}: a completed upload must not fail: {e}"));
            assert_eq!(server.object(BUCKET, key).map(|o| sha256(&o)), Some(sha256(&data)), "{key}: exact bytes");
            assert_eq!(out.etag, server.object_etag(BUCKET, key), "{key}: the object's ETag");
            assert_eq!(out.parts, 3, "{key}");
            assert_eq!(server.request_count(Op::CompleteMultipartUpload), 2, "{key}: one retry");
            assert_eq!(server.request_count(Op::HeadObject), 1, "{key}: one HEAD to check the object");
            assert_eq!(open_uploads(&c), [], "{key}: no upload left in progress");
        }
    });
}

/// A lost CreateMultipartUpload answer. The server creates the upload and resets the
/// connection, so the engine never learns that upload's id; its retry creates a second one,
/// which carries the object. The first must be found (ListMultipartUploads for the key) and
/// aborted: otherwise it stays until a lifecycle rule removes it. Another writer's upload of
/// a key sharing the prefix, and an older upload of the same key, are left alone.
#[test]
fn a_lost_create_answer_leaves_no_upload_behind() {
    deadline(|| {
        let server = FaultServer::start();
        server.create_bucket(BUCKET);
        let data = pattern(SIZE, 32);
        let c = client(&server);
        let older = foreign_upload(&server, "k");
        let other = foreign_upload(&server, "k-other");
        // Older than the clean-up window (the engine allows 2 s of clock skew between S3 hosts).
        std::thread::sleep(Duration::from_millis(3_500));
        server.reset_log();
        server.add_rule(Rule::new(Match::op(Op::CreateMultipartUpload), Fault::ResetAfterAct).times(1));
        let out = c.block_on(c.put(BUCKET, "k", data.clone())).expect("the upload succeeds");
        assert_eq!(server.object(BUCKET, "k").map(|o| sha256(&o)), Some(sha256(&data)), "exact bytes");
        assert_eq!(out.etag, server.object_etag(BUCKET, "k"));
        assert_eq!(server.request_count(Op::CreateMultipartUpload), 2, "one retry");
        let mut left = open_uploads(&c);
        left.sort();
        assert_eq!(left, [("k".to_string(), older), ("k-other".to_string(), other)], "only others' uploads remain");
        assert_eq!(server.request_count(Op::AbortMultipartUpload), 1, "only the orphan is aborted");
    });
}
