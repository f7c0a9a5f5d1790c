//! An endpoint that accepts connections and never answers fails fast, with a message that
//! says so; an endpoint that has answered before keeps its regular timeout retries.
//!
//! The silent endpoint is a real socket: a tokio `TcpListener` that accepts every connection,
//! reads whatever arrives and never writes a byte. The answering endpoint is the fault server
//! with a stall rule.

use std::time::{Duration, Instant};

use bytes::Bytes;
use gantry::{Client, ClientConfig, ClientConfigBuilder, Credentials, CredentialsSource, ErrorKind, Timeouts};
use gantry_faults::{Fault, FaultServer, Match, Op, Rule};
use gantry_integration::with_deadline;
use tokio::io::AsyncReadExt;

/// A listener that accepts connections, drains them and never answers. Dropping the runtime
/// that runs it closes it.
struct Silent {
    endpoint: String,
    runtime: tokio::runtime::Runtime,
}

impl Silent {
    fn start() -> Silent {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        runtime.spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else { return };
                tokio::spawn(async move {
                    // Read (so uploads are not held up by a full receive window), never write.
                    let mut buf = vec![0u8; 64 << 10];
                    while matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {}
                    // The peer closed: hold nothing open.
                });
            }
        });
        Silent { endpoint, runtime }
    }
}

fn builder(endpoint: &str) -> ClientConfigBuilder {
    ClientConfig::builder()
        .ignore_environment()
        .endpoint_url(endpoint)
        .credentials(CredentialsSource::Static(Credentials::new("AKID", "SECRET")))
        .worker_threads(2)
}

fn client(b: ClientConfigBuilder) -> Client {
    Client::new(b.build().expect("config")).expect("client")
}

/// Asserts `e` is the final no-response error naming `endpoint`.
fn assert_no_response(e: &gantry::Error, endpoint: &str) {
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
    assert!(!e.is_retryable(), "{e}");
    let want = format!("no response from {endpoint} in ");
    assert!(e.message().starts_with(&want) && e.message().contains(" attempts"), "{e}");
}

/// With the defaults, a download and an upload to a silent endpoint both fail in about 20 s
/// (not 5 x 30 s each), saying which endpoint never answered.
#[test]
fn silent_endpoint_fails_within_the_default_bound() {
    with_deadline(Duration::from_secs(60), || {
        let silent = Silent::start();
        let c = client(builder(&silent.endpoint));
        let started = Instant::now();
        let (get, put) = c.block_on(async {
            let mut buf = vec![0u8; 1024];
            tokio::join!(c.get_into("b", "k", &mut buf), c.put("b", "k", Bytes::from_static(b"hello")))
        });
        let elapsed = started.elapsed();
        assert_no_response(&get.unwrap_err(), &silent.endpoint);
        assert_no_response(&put.unwrap_err(), &silent.endpoint);
        assert!(elapsed >= Duration::from_secs(19) && elapsed < Duration::from_secs(25), "{elapsed:?}");
        drop(silent.runtime);
    });
}

/// The bound is a config key; downloads (every delivery) and uploads (single and multipart)
/// each fail within it, one after the other on the same client.
#[test]
fn silent_endpoint_fails_within_a_configured_bound() {
    with_deadline(Duration::from_secs(60), || {
        let silent = Silent::start();
        let bound = Duration::from_millis(1200);
        let b = builder(&silent.endpoint).set("no_response_timeout_ms", "1200").unwrap();
        // Multipart above one 5 MiB part.
        let c = client(b.part_size_bytes(5 << 20));
        let dir = tempfile::tempdir().unwrap();
        let big = Bytes::from(vec![7u8; 6 << 20]);
        for what in ["get_into", "download_to_file", "get_stream", "put", "put multipart"] {
            let started = Instant::now();
            let e = c
                .block_on(async {
                    match what {
                        "get_into" => c.get_into("b", "k", &mut [0u8; 16]).await.map(drop),
                        "download_to_file" => c.download_to_file("b", "k", dir.path().join("out")).await.map(drop),
                        "get_stream" => c.get_stream("b", "k").await.map(drop),
                        "put" => c.put("b", "k", Bytes::from_static(b"x")).await.map(drop),
                        _ => c.put("b", "k", big.clone()).await.map(drop),
                    }
                })
                .unwrap_err();
            let elapsed = started.elapsed();
            assert_no_response(&e, &silent.endpoint);
            // The first request spends the bound; later ones probe once, a quarter of it.
            assert!(elapsed < bound + Duration::from_millis(800), "{what}: {elapsed:?}");
        }
        drop(silent.runtime);
    });
}

/// An endpoint that has answered once keeps the regular timeouts and retries: a stalled
/// answer longer than the no-response bound is retried until it succeeds.
#[test]
fn endpoint_that_answered_keeps_its_timeout_retries() {
    with_deadline(Duration::from_secs(60), || {
        let server = FaultServer::start();
        server.create_bucket("b");
        let b = builder(&server.endpoint()).timeouts(
            Timeouts::default().first_byte(Duration::from_millis(500)).no_response(Duration::from_millis(400)),
        );
        let c = client(b);
        // The first answer.
        c.block_on(c.put("b", "warm", Bytes::from_static(b"w"))).unwrap();
        // Then two answers stalled past the first-byte timeout: 2 x 500 ms of silence > 400 ms.
        server.add_rule(Rule::new(Match::op(Op::PutObject).key("k"), Fault::Stall(Duration::from_secs(3))).times(2));
        c.block_on(c.put("b", "k", Bytes::from_static(b"data"))).expect("retried after its timeouts");
        assert_eq!(c.metrics().timeouts, 2);
        assert_eq!(server.object("b", "k").as_deref(), Some(&b"data"[..]));
    });
}

/// A client whose endpoint stalls its very first answer gets the bound instead: the same stall
/// as above, on a fresh client, ends in the no-response error.
#[test]
fn endpoint_that_never_answered_gets_the_bound() {
    with_deadline(Duration::from_secs(60), || {
        let server = FaultServer::start();
        server.create_bucket("b");
        server.add_rule(Rule::new(Match::op(Op::PutObject).key("k"), Fault::Stall(Duration::from_secs(3))));
        let c = client(builder(&server.endpoint()).timeouts(
            Timeouts::default().first_byte(Duration::from_millis(500)).no_response(Duration::from_millis(400)),
        ));
        let e = c.block_on(c.put("b", "k", Bytes::from_static(b"data"))).unwrap_err();
        assert_no_response(&e, &server.endpoint());
    });
}
