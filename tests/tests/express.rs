//! S3 Express One Zone directory buckets against the fault server's session double
//! (`gantry_faults::express`), which reproduces what a zonal endpoint does: CreateSession
//! (`GET /bucket?session`, signed with the caller's keys for `s3express`) hands out a key pair
//! and token, and every other request to a `<base>--<az-id>--x-s3` bucket is refused unless it
//! carries a live token in `x-amz-s3session-token` and is signed for `s3express` with that
//! session's key (the double signs each request again to check).

use std::time::{Duration, Instant};

use bytes::Bytes;
use gantry::{Client, ClientConfig, Credentials, CredentialsSource, ErrorKind, ExpressSessionMode, RetryConfig};
use gantry_faults::{ExpressSettings, Fault, FaultServer, Match, Op, Rule};
use gantry_integration::{pattern, sha256, with_deadline, PART};

const DIR: &str = "ckpt--use1-az4--x-s3";
const PLAIN: &str = "plain";

fn server(lifetime: Duration) -> FaultServer {
    let server = FaultServer::start();
    server.enable_express(ExpressSettings {
        base_access_key: "AKIDBASE".into(),
        base_secret_key: "base-secret".into(),
        session_lifetime: lifetime,
    });
    server.create_bucket(DIR);
    server.create_bucket(PLAIN);
    server
}

fn client_with(
    server: &FaultServer,
    tweak: impl FnOnce(gantry::ClientConfigBuilder) -> gantry::ClientConfigBuilder,
) -> Client {
    let b = ClientConfig::builder()
        .ignore_environment()
        .endpoint_url(server.endpoint())
        .credentials(CredentialsSource::Static(Credentials::new("AKIDBASE", "base-secret")))
        .part_size_bytes(PART)
        .max_connections(8)
        .worker_threads(2)
        .retry(RetryConfig::default().max_attempts(4).initial_backoff(Duration::from_millis(5)));
    Client::new(tweak(b).build().expect("config")).expect("client")
}

fn client(server: &FaultServer) -> Client {
    client_with(server, |b| b)
}

fn count(server: &FaultServer, op: Op) -> usize {
    server.requests().iter().filter(|r| r.op == op).count()
}

fn deadline(f: impl FnOnce() + Send + 'static) {
    with_deadline(Duration::from_secs(120), f)
}

#[test]
fn every_delivery_and_upload_round_trips_on_a_directory_bucket() {
    deadline(|| {
        let server = server(Duration::from_secs(300));
        let c = client(&server);
        let data = Bytes::from(pattern(3 * PART as usize + 1234, 7));
        let dir = tempfile::tempdir().unwrap();
        // Uploads: memory (multipart), a file, a stream of unknown length.
        c.block_on(c.put(DIR, "mem", data.clone())).expect("put from memory");
        let src = dir.path().join("src");
        std::fs::write(&src, &data).unwrap();
        c.block_on(c.put_file(DIR, "file", &src)).expect("put from a file");
        let mut up = c.upload(DIR, "stream");
        c.block_on(async {
            up.write(&data[..PART as usize + 10]).await?;
            up.write(&data[PART as usize + 10..]).await?;
            up.complete().await
        })
        .expect("streamed upload");
        for key in ["mem", "file", "stream"] {
            assert_eq!(server.object(DIR, key).map(|b| sha256(&b)), Some(sha256(&data)), "{key} on the server");
            // Deliveries: caller memory, a file, a stream.
            let mut buf = vec![0u8; data.len()];
            c.block_on(c.get_into(DIR, key, &mut buf)).expect("get_into");
            assert_eq!(sha256(&buf), sha256(&data));
            let out = dir.path().join(format!("{key}.out"));
            c.block_on(c.download_to_file(DIR, key, &out)).expect("download_to_file");
            assert_eq!(sha256(&std::fs::read(&out).unwrap()), sha256(&data));
            let mut got = Vec::new();
            let mut stream = c.block_on(c.get_stream(DIR, key)).expect("get_stream");
            while let Some(chunk) = c.block_on(stream.next_chunk()) {
                got.extend_from_slice(&chunk.unwrap());
            }
            assert_eq!(sha256(&got), sha256(&data));
            assert_eq!(c.block_on(c.head_object(DIR, key)).unwrap().size, data.len() as u64);
        }
        // Directory buckets get CRC32C (their documented algorithms have no CRC64NVME), on
        // every upload request, also multipart ones; downloads are verified (against what the
        // double stores: it adds CRC64NVME to every object).
        for r in server.requests().iter().filter(|r| matches!(r.op, Op::PutObject | Op::UploadPart)) {
            let names: Vec<&str> = r.headers.iter().map(|(n, _)| n.as_str()).collect();
            assert!(names.contains(&"x-amz-checksum-crc32c"), "{:?} without CRC32C: {names:?}", r.op);
            assert!(!names.contains(&"x-amz-checksum-crc64nvme"));
        }
        let v = c.metrics().downloads_verified;
        assert!(v.crc32 + v.crc32c + v.crc64nvme + v.sha1 + v.sha256 >= 6, "{v:?}");
        let listed = c.block_on(c.list_all(DIR, None)).unwrap();
        assert_eq!(listed.len(), 3);
        c.block_on(c.delete_object(DIR, "mem")).unwrap();
        let stats = server.express_stats();
        assert_eq!(stats.refused, 0, "no request went out without a good session");
        assert_eq!(stats.sessions_created, 1, "one session serves every request of a short run");
        assert_eq!(count(&server, Op::CreateSession), 1);
        let m = c.metrics();
        assert_eq!(m.express_sessions_created, 1);
        assert!(m.express_session_reuses > 20, "reuses {}", m.express_session_reuses);
    });
}

#[test]
fn a_general_purpose_bucket_never_gets_a_session() {
    deadline(|| {
        let server = server(Duration::from_secs(300));
        let c = client(&server);
        c.block_on(c.put(PLAIN, "k", Bytes::from_static(b"plain bytes"))).unwrap();
        let mut buf = vec![0u8; 11];
        c.block_on(c.get_into(PLAIN, "k", &mut buf)).unwrap();
        assert_eq!(&buf, b"plain bytes");
        assert_eq!(count(&server, Op::CreateSession), 0);
        assert_eq!(server.express_stats().authorized, 0);
        // And the double does refuse directory-bucket requests signed the ordinary way.
        let off = client_with(&server, |b| b.disable_s3_express_session_auth(true));
        let e = off.block_on(off.put(DIR, "k", Bytes::from_static(b"x"))).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::AccessDenied, "{e}");
        assert_eq!(e.http_status(), Some(403));
    });
}

#[test]
fn five_hundred_parallel_gets_create_one_session() {
    deadline(|| {
        let server = server(Duration::from_secs(300));
        for i in 0..500 {
            server.insert_object(DIR, &format!("small/{i:03}"), Bytes::from(vec![i as u8; 1000]));
        }
        let c = client_with(&server, |b| b.max_connections(64));
        let results = c.block_on(futures::future::join_all((0..500).map(|i| {
            let c = &c;
            async move {
                let mut buf = vec![0u8; 1000];
                c.get_into(DIR, &format!("small/{i:03}"), &mut buf).await.map(|_| buf[0] == i as u8)
            }
        })));
        assert!(results.iter().all(|r| matches!(r, Ok(true))), "every GET got its bytes");
        assert_eq!(count(&server, Op::CreateSession), 1, "single flight");
        assert_eq!(server.express_stats().refused, 0);
    });
}

#[test]
fn a_transfer_over_three_session_lifetimes_is_never_refused() {
    deadline(|| {
        // Sessions of 2 s; the transfer is paced to last over 6 s.
        let server = server(Duration::from_secs(2));
        let c = client_with(&server, |b| b.max_connections(2));
        let data = Bytes::from(pattern(PART as usize, 3));
        c.block_on(c.put(DIR, "obj", data.clone())).unwrap();
        let started = Instant::now();
        let mut rounds = 0;
        while started.elapsed() < Duration::from_millis(6500) {
            let mut buf = vec![0u8; data.len()];
            c.block_on(c.get_into(DIR, "obj", &mut buf)).expect("every GET succeeds");
            assert_eq!(sha256(&buf), sha256(&data));
            rounds += 1;
            std::thread::sleep(Duration::from_millis(100));
        }
        let stats = server.express_stats();
        eprintln!(
            "{rounds} GETs over {:.1} s with 2 s sessions: {} sessions, {} requests authorized, {} refused",
            started.elapsed().as_secs_f64(),
            stats.sessions_created,
            stats.authorized,
            stats.refused
        );
        assert_eq!(stats.refused, 0, "renewed ahead of expiry, never refused");
        let m = c.metrics();
        assert!(
            (3..=8).contains(&stats.sessions_created),
            "one session per renewal: {} sessions over {rounds} rounds",
            stats.sessions_created
        );
        assert_eq!(m.express_sessions_created, stats.sessions_created);
        assert_eq!(m.express_sessions_refreshed, stats.sessions_created - 1);
        assert_eq!(m.express_sessions_invalidated, 0);
    });
}

#[test]
fn a_revoked_session_costs_one_refusal_and_one_new_session() {
    deadline(|| {
        let server = server(Duration::from_secs(300));
        let c = client(&server);
        let data = Bytes::from(pattern(2 * PART as usize + 99, 5));
        c.block_on(c.put(DIR, "obj", data.clone())).unwrap();
        server.revoke_express_sessions();
        let mut buf = vec![0u8; data.len()];
        c.block_on(c.get_into(DIR, "obj", &mut buf)).expect("the GET recovers");
        assert_eq!(sha256(&buf), sha256(&data));
        let stats = server.express_stats();
        assert!((1..=3).contains(&stats.refused), "refused {}", stats.refused);
        assert_eq!(stats.sessions_created, 2, "one new session for all the parts");
        assert_eq!(c.metrics().express_sessions_created, 2);
        assert!(c.metrics().express_sessions_invalidated >= 1);
    });
}

#[test]
fn create_session_failures_are_retried_or_reported() {
    deadline(|| {
        let server = server(Duration::from_secs(300));
        // 503 SlowDown, then success: retried like any request.
        server.add_rule(Rule::new(Match::op(Op::CreateSession), Fault::slow_down()).times(1));
        let c = client(&server);
        c.block_on(c.put(DIR, "k", Bytes::from_static(b"after a 503"))).expect("CreateSession retried");
        assert_eq!(count(&server, Op::CreateSession), 2);
        // 403 AccessDenied: the caller's own error, typed, naming CreateSession.
        let other = "other--use1-az4--x-s3";
        server.create_bucket(other);
        server.add_rule(
            Rule::new(Match::op(Op::CreateSession), Fault::Status { status: 403, code: "AccessDenied" }).times(1),
        );
        let e = c.block_on(c.put(other, "k", Bytes::from_static(b"x"))).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::AccessDenied, "{e}");
        assert_eq!(e.operation(), gantry::Operation::CreateSession, "{e}");
        assert!(!e.is_retryable());
    });
}

#[test]
fn a_read_only_session_reads_and_refuses_writes() {
    deadline(|| {
        let server = server(Duration::from_secs(300));
        server.insert_object(DIR, "k", Bytes::from_static(b"readable"));
        let c = client_with(&server, |b| b.s3_express_session_mode(ExpressSessionMode::ReadOnly));
        let mut buf = vec![0u8; 8];
        c.block_on(c.get_into(DIR, "k", &mut buf)).unwrap();
        assert_eq!(&buf, b"readable");
        let e = c.block_on(c.put(DIR, "k2", Bytes::from_static(b"x"))).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::AccessDenied, "{e}");
        assert!(server.object(DIR, "k2").is_none());
    });
}

#[test]
fn appends_extend_an_object_at_the_right_offset_and_refuse_a_wrong_one() {
    deadline(|| {
        let server = server(Duration::from_secs(300));
        let c = client(&server);
        let a = c.block_on(c.append(DIR, "log", 0, Bytes::from_static(b"first line\n"))).expect("offset 0 creates");
        assert_eq!(a.size, 11);
        let b = c.block_on(c.append(DIR, "log", a.size, Bytes::from_static(b"second\n"))).expect("append at the size");
        assert_eq!(b.size, 18);
        assert_ne!(a.etag, b.etag);
        assert_eq!(server.object(DIR, "log").unwrap(), Bytes::from_static(b"first line\nsecond\n"));
        // A stale offset: typed, final, and nothing changes.
        let e = c.block_on(c.append(DIR, "log", 11, Bytes::from_static(b"late\n"))).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::WrongWriteOffset, "{e}");
        assert_eq!(e.s3_code(), Some("InvalidWriteOffset"));
        assert!(!e.is_retryable());
        let e = c.block_on(c.append(DIR, "new", 5, Bytes::from_static(b"x"))).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::WrongWriteOffset, "a missing object takes offset 0 only: {e}");
        assert_eq!(server.object(DIR, "log").unwrap().len(), 18);
        // General-purpose buckets have no appends.
        let e = c.block_on(c.append(PLAIN, "log", 0, Bytes::from_static(b"x"))).unwrap_err();
        assert_eq!(e.http_status(), Some(501), "{e}");
    });
}

#[test]
fn concurrent_appends_each_land_once() {
    deadline(|| {
        let server = server(Duration::from_secs(300));
        let c = client(&server);
        c.block_on(c.append(DIR, "shared", 0, Bytes::new())).unwrap();
        // Eight writers, each appending its record five times: on a stale offset a writer
        // reads the size again and retries, as an appending application does.
        let results = c.block_on(futures::future::join_all((0..8u8).map(|w| {
            let c = &c;
            async move {
                let mut stale = 0;
                for n in 0..5u8 {
                    let record = Bytes::from(vec![w * 16 + n; 100]);
                    loop {
                        let size = c.head_object(DIR, "shared").await?.size;
                        match c.append(DIR, "shared", size, record.clone()).await {
                            Ok(_) => break,
                            Err(e) if e.kind() == ErrorKind::WrongWriteOffset => stale += 1,
                            Err(e) => return Err(e),
                        }
                    }
                }
                Ok::<_, gantry::Error>(stale)
            }
        })));
        let stale: u32 = results.into_iter().map(|r| r.expect("every writer finishes")).sum();
        let data = server.object(DIR, "shared").unwrap();
        assert_eq!(data.len(), 8 * 5 * 100);
        let mut seen: Vec<u8> = data
            .chunks(100)
            .map(|r| {
                assert!(r.iter().all(|&b| b == r[0]), "records never interleave");
                r[0]
            })
            .collect();
        seen.sort_unstable();
        let want: Vec<u8> = (0..8u8).flat_map(|w| (0..5u8).map(move |n| w * 16 + n)).collect();
        assert_eq!(seen, want, "each record exactly once");
        eprintln!("{stale} stale offsets retried");
    });
}

#[test]
fn an_append_whose_answer_was_lost_is_not_applied_twice() {
    deadline(|| {
        let server = server(Duration::from_secs(300));
        let c = client(&server);
        c.block_on(c.append(DIR, "log", 0, Bytes::from_static(b"head\n"))).unwrap();
        // The server appends, then resets instead of answering.
        server.add_rule(Rule::new(Match::op(Op::PutObject), Fault::ResetAfterAct).times(1));
        let out =
            c.block_on(c.append(DIR, "log", 5, Bytes::from_static(b"body\n"))).expect("the landed append is a success");
        assert_eq!(out.size, 10);
        assert_eq!(server.object(DIR, "log").unwrap(), Bytes::from_static(b"head\nbody\n"));
        // Without a lost answer, the same stale offset stays an error: the check runs only
        // after an attempt whose answer was lost.
        let e = c.block_on(c.append(DIR, "log", 5, Bytes::from_static(b"body\n"))).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::WrongWriteOffset);
    });
}
