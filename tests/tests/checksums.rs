//! Downloads verify every checksum S3 stores (CRC32, CRC32C, CRC64NVME, SHA1, SHA256), whole or
//! per upload part, and say how: against the fault server holding objects exactly as S3 would
//! after each kind of upload (single PUT, multipart with a full-object or a composite
//! checksum), intact or damaged at rest.
//!
//! Shapes, each downloaded into a buffer, a file and a stream:
//! - `small`: a single PUT smaller than a part (the download is one response, checked whole);
//! - `big`: a single PUT of 3.5 parts (full-object value, several ranged parts: CRCs are
//!   combined, SHAs hashed in order);
//! - `composite`: a multipart upload of 3 parts whose checksum is composite (`-3`): checked
//!   part by part against GetObjectAttributes' part checksums.

use std::time::Duration;

use bytes::Bytes;
use gantry::{
    Checksums, Client, ClientConfig, ClientConfigBuilder, Credentials, CredentialsSource, ErrorKind, NotVerifiedReason,
    ObjectInfo, RetryConfig, S3ChecksumAlgorithm, Verification,
};
use gantry_faults::{ChecksumAlgo, Fault, FaultServer, Match, ObjectChecksum, Op, Rule};
use gantry_integration::{pattern, sha256, with_deadline, PART};

const BUCKET: &str = "sums";
const SMALL: usize = (PART / 2) as usize;
const BIG: usize = (3 * PART + PART / 2) as usize;
/// Upload parts of the composite object: none lines up with the download's 5 MiB parts.
const UPLOAD_PARTS: [usize; 3] = [7 << 20, 6 << 20, (3 << 20) + 12_345];

const ALGORITHMS: [(ChecksumAlgo, S3ChecksumAlgorithm); 5] = [
    (ChecksumAlgo::Crc32, S3ChecksumAlgorithm::Crc32),
    (ChecksumAlgo::Crc32c, S3ChecksumAlgorithm::Crc32c),
    (ChecksumAlgo::Crc64Nvme, S3ChecksumAlgorithm::Crc64Nvme),
    (ChecksumAlgo::Sha1, S3ChecksumAlgorithm::Sha1),
    (ChecksumAlgo::Sha256, S3ChecksumAlgorithm::Sha256),
];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Delivery {
    Buffer,
    File,
    Stream,
}

const DELIVERIES: [Delivery; 3] = [Delivery::Buffer, Delivery::File, Delivery::Stream];

fn config(server: &FaultServer) -> ClientConfigBuilder {
    ClientConfig::builder()
        .ignore_environment()
        .endpoint_url(server.endpoint())
        .credentials(CredentialsSource::Static(Credentials::new("AKID", "SECRET")))
        .part_size_bytes(PART)
        .max_connections(4)
        .memory_limit_bytes(64 * PART)
        .worker_threads(2)
        .retry(
            RetryConfig::default()
                .max_attempts(3)
                .initial_backoff(Duration::from_millis(5))
                .max_backoff(Duration::from_millis(20)),
        )
}

fn client(server: &FaultServer) -> Client {
    Client::new(config(server).build().expect("config")).expect("client")
}

/// Downloads `key` as `how` delivers it; returns the bytes and what the download reported.
fn download(client: &Client, key: &str, how: Delivery) -> gantry::Result<(Vec<u8>, ObjectInfo)> {
    client.block_on(async {
        match how {
            Delivery::Buffer => {
                let mut buf = vec![0u8; BIG + PART as usize];
                let info = client.get_into(BUCKET, key, &mut buf).await?;
                buf.truncate(info.size as usize);
                Ok((buf, info))
            }
            Delivery::File => {
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join("out");
                match client.download_to_file(BUCKET, key, &path).await {
                    Ok(info) => Ok((std::fs::read(&path).unwrap(), info)),
                    Err(e) => {
                        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
                        assert!(left.is_empty(), "a failed download leaves no file: {left:?}");
                        Err(e)
                    }
                }
            }
            Delivery::Stream => {
                let mut s = client.get_stream(BUCKET, key).await?;
                assert_eq!(s.info().verification, None, "a stream knows only at its end");
                let mut out = Vec::new();
                while let Some(c) = s.next_chunk().await {
                    out.extend_from_slice(&c?);
                }
                let mut info = s.info().clone();
                info.verification = s.verification();
                assert!(info.verification.is_some(), "an ended stream says how it was verified");
                Ok((out, info))
            }
        }
    })
}

/// A server holding, for every algorithm, the three shapes of the module docs under
/// `<shape>-<ALGORITHM>`; returns it with the data of each shape.
fn server_with_every_shape() -> (FaultServer, Vec<u8>, Vec<u8>, Vec<u8>) {
    let server = FaultServer::start();
    let (small, big) = (pattern(SMALL, 1), pattern(BIG, 2));
    let composite = pattern(UPLOAD_PARTS.iter().sum(), 3);
    for (algo, _) in ALGORITHMS {
        let name = algo.name();
        server.insert_object_with(
            BUCKET,
            &format!("small-{name}"),
            Bytes::from(small.clone()),
            &ObjectChecksum::single(algo),
        );
        server.insert_object_with(
            BUCKET,
            &format!("big-{name}"),
            Bytes::from(big.clone()),
            &ObjectChecksum::single(algo),
        );
        let parts = ObjectChecksum::multipart(algo, UPLOAD_PARTS.to_vec(), true);
        server.insert_object_with(BUCKET, &format!("composite-{name}"), Bytes::from(composite.clone()), &parts);
    }
    (server, small, big, composite)
}

fn deadline(f: impl FnOnce() + Send + 'static) {
    with_deadline(Duration::from_secs(240), f)
}

/// Every algorithm, every shape, every delivery: the exact bytes, and the algorithm that
/// verified them is reported (whole object, or per upload part for a composite checksum) and
/// counted in the metrics.
#[test]
fn intact_objects_verify_and_report_the_algorithm() {
    deadline(|| {
        let (server, small, big, composite) = server_with_every_shape();
        let c = client(&server);
        for (algo, alg) in ALGORITHMS {
            let name = algo.name();
            let shapes = [
                ("small", &small, Verification::FullObject(alg)),
                ("big", &big, Verification::FullObject(alg)),
                ("composite", &composite, Verification::Parts { algorithm: alg, parts: UPLOAD_PARTS.len() as u32 }),
            ];
            for (shape, data, want) in shapes {
                for how in DELIVERIES {
                    let before = c.metrics();
                    let key = format!("{shape}-{name}");
                    let (got, info) = download(&c, &key, how).unwrap_or_else(|e| panic!("{key} {how:?}: {e}"));
                    assert_eq!(sha256(&got), sha256(data), "{key} {how:?}: exact bytes");
                    assert_eq!(info.verification, Some(want), "{key} {how:?}");
                    assert_eq!(info.verification.unwrap().algorithm(), Some(alg));
                    let m = c.metrics().since(&before);
                    assert_eq!(m.downloads_verified.get(alg), 1, "{key} {how:?}: {m:?}");
                    assert_eq!((m.downloads_verified.total(), m.downloads_not_verified), (1, 0), "{key} {how:?}");
                    assert_eq!(m.checksum_failures, 0, "{key} {how:?}");
                }
            }
        }
    });
}

/// A byte damaged at rest: every algorithm, every shape, every delivery fails with
/// `ChecksumMismatch` naming the algorithm and the expected and computed values, and no file
/// is left behind. (Before every algorithm was verified, CRC32, SHA1 and SHA256 objects, and
/// every composite one, downloaded "successfully".)
#[test]
fn objects_damaged_at_rest_fail_for_every_algorithm() {
    deadline(|| {
        let (server, small, big, composite) = server_with_every_shape();
        // The damaged byte: in the second download part of `big`, in the second upload part
        // (and the second download part) of `composite`.
        let (at_small, at_big, at_composite) = (SMALL / 3, PART as usize + 77, UPLOAD_PARTS[0] + 5);
        let c = client(&server);
        for (algo, alg) in ALGORITHMS {
            let name = algo.name();
            let damaged = |data: &[u8], at: usize| {
                let mut d = data.to_vec();
                d[at] ^= 1;
                d
            };
            let composite_part = |data: &[u8]| algo.encoded(&data[UPLOAD_PARTS[0]..UPLOAD_PARTS[0] + UPLOAD_PARTS[1]]);
            let shapes = [
                ("small", at_small, algo.encoded(&small), algo.encoded(&damaged(&small, at_small))),
                ("big", at_big, algo.encoded(&big), algo.encoded(&damaged(&big, at_big))),
                (
                    "composite",
                    at_composite,
                    composite_part(&composite),
                    composite_part(&damaged(&composite, at_composite)),
                ),
            ];
            for (shape, at, expected, computed) in shapes {
                let key = format!("{shape}-{name}");
                server.corrupt_object(BUCKET, &key, at);
                for how in DELIVERIES {
                    let e = download(&c, &key, how).map(|(_, i)| i).expect_err(&format!("{key} {how:?} must fail"));
                    assert_eq!(e.kind(), ErrorKind::ChecksumMismatch, "{key} {how:?}: {e}");
                    let msg = e.to_string();
                    assert!(msg.contains(alg.name()), "{key} {how:?}: names the algorithm: {msg}");
                    assert!(msg.contains(&expected), "{key} {how:?}: names the expected {expected}: {msg}");
                    assert!(msg.contains(&computed), "{key} {how:?}: names the computed {computed}: {msg}");
                    if shape != "small" && how == Delivery::Stream {
                        assert!(!e.is_retryable(), "{key}: a stream has handed its bytes out");
                    }
                }
            }
        }
        assert!(c.metrics().checksum_failures >= 45, "{:?}", c.metrics());
    });
}

/// A byte flipped in transit in a multi-part download of a SHA or composite object: a download
/// into memory or a file runs once more and gets the right bytes; a stream reports the
/// mismatch before its end.
#[test]
fn transient_corruption_reruns_copies_and_fails_streams() {
    deadline(|| {
        let (server, _, big, composite) = server_with_every_shape();
        for (algo, _) in ALGORITHMS {
            for (shape, data) in [("big", &big), ("composite", &composite)] {
                let key = format!("{shape}-{}", algo.name());
                for how in DELIVERIES {
                    server.clear_rules();
                    let flip = Match::op(Op::GetObject).key(&key).range_start(2 * PART);
                    server.add_rule(Rule::new(flip, Fault::FlipByte).times(1));
                    let c = client(&server);
                    match (how, download(&c, &key, how)) {
                        (Delivery::Stream, Err(e)) => assert_eq!(e.kind(), ErrorKind::ChecksumMismatch, "{key}: {e}"),
                        (Delivery::Stream, Ok(_)) => panic!("{key}: a stream must report the mismatch"),
                        (_, got) => {
                            let (got, info) = got.unwrap_or_else(|e| panic!("{key} {how:?}: {e}"));
                            assert_eq!(sha256(&got), sha256(data), "{key} {how:?}");
                            assert!(info.verification.unwrap().is_verified());
                        }
                    }
                    assert_eq!(c.metrics().checksum_failures, 1, "{key} {how:?}");
                }
            }
        }
    });
}

/// Whether a download larger than one part is verified at all: the first request asks for
/// the whole object (no Range) with checksum mode on, the answer carries the object's
/// checksum, later parts are ranged, and the result says the whole object was verified.
#[test]
fn multi_part_downloads_are_verified_from_the_unranged_first_answer() {
    deadline(|| {
        let (server, _, big, _) = server_with_every_shape();
        let c = client(&server);
        for (algo, alg) in ALGORITHMS {
            let key = format!("big-{}", algo.name());
            server.reset_log();
            let (got, info) = download(&c, &key, Delivery::File).unwrap();
            assert_eq!(sha256(&got), sha256(&big));
            assert_eq!(info.verification, Some(Verification::FullObject(alg)));
            let gets: Vec<_> = server.requests().into_iter().filter(|r| r.op == Op::GetObject).collect();
            assert_eq!(gets.len(), 4, "{key}: one request per part");
            assert_eq!(gets[0].range, None, "{key}: the first request is unranged");
            assert!(gets[0].headers.iter().any(|(n, v)| n == "x-amz-checksum-mode" && v == "ENABLED"));
            assert!(gets[1..].iter().all(|r| r.range.is_some()), "{key}: later parts are ranged");
        }
    });
}

/// A composite checksum on a store without GetObjectAttributes: the download succeeds and
/// says it was not verified, and why. Also: verification off, and ranged reads.
#[test]
fn unverifiable_downloads_say_why() {
    deadline(|| {
        let (server, small, _, composite) = server_with_every_shape();
        server.set_reject_attributes(true);
        let c = client(&server);
        for (algo, alg) in ALGORITHMS {
            let key = format!("composite-{}", algo.name());
            for how in DELIVERIES {
                let before = c.metrics();
                let (got, info) = download(&c, &key, how).unwrap_or_else(|e| panic!("{key} {how:?}: {e}"));
                assert_eq!(sha256(&got), sha256(&composite));
                assert_eq!(info.verification, Some(Verification::NotVerified(NotVerifiedReason::Composite(alg))));
                let m = c.metrics().since(&before);
                assert_eq!((m.downloads_verified.total(), m.downloads_not_verified), (0, 1), "{key} {how:?}");
            }
        }
        server.set_reject_attributes(false);

        let off = Client::new(config(&server).checksums(Checksums::default().verify_downloads(false)).build().unwrap())
            .unwrap();
        let (got, info) = download(&off, "small-SHA256", Delivery::File).unwrap();
        assert_eq!(sha256(&got), sha256(&small));
        assert_eq!(info.verification, Some(Verification::NotVerified(NotVerifiedReason::Disabled)));

        let mut buf = vec![0u8; 1000];
        let info = c.block_on(c.get_range_into(BUCKET, "small-SHA256", 10..1010, &mut buf)).unwrap();
        assert_eq!(&buf[..], &small[10..1010]);
        assert_eq!(info.verification, Some(Verification::NotVerified(NotVerifiedReason::RangedRead)));
        assert_eq!(info.verification.unwrap().algorithm(), None);
        let head = c.block_on(c.head_object(BUCKET, "small-SHA256")).unwrap();
        assert_eq!(head.verification, None, "HeadObject downloads nothing");
    });
}

/// GetObjectAttributes pages (S3 lists at most 1,000 parts per answer): an object of 2,500
/// tiny upload parts is checked part by part across three pages; one damaged byte in part
/// 2,222 is named.
#[test]
fn part_checksums_are_read_across_pages() {
    deadline(|| {
        let server = FaultServer::start();
        let sizes = vec![1000usize; 2500];
        let data = pattern(2_500_000, 9);
        let algo = ChecksumAlgo::Crc32c;
        server.insert_object_with(
            BUCKET,
            "many",
            Bytes::from(data.clone()),
            &ObjectChecksum::multipart(algo, sizes, true),
        );
        let c = client(&server);
        let (got, info) = download(&c, "many", Delivery::Buffer).unwrap();
        assert_eq!(sha256(&got), sha256(&data));
        let want = Verification::Parts { algorithm: S3ChecksumAlgorithm::Crc32c, parts: 2500 };
        assert_eq!(info.verification, Some(want));
        let attribute_requests = server.requests().iter().filter(|r| r.op == Op::Other).count();
        assert_eq!(attribute_requests, 3, "three pages of parts");
        server.corrupt_object(BUCKET, "many", 2_221_500);
        let e = download(&c, "many", Delivery::File).map(|_| ()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ChecksumMismatch);
        assert!(e.to_string().contains("upload part 2222 "), "{e}");
    });
}

/// CPU ticks each client thread (`gantry-worker*`: network workers, the file writer, the
/// ordered hasher) has used so far, by thread id, from /proc; the fault server's threads are
/// left out.
fn client_cpu_ticks() -> std::collections::HashMap<String, u64> {
    let mut out = std::collections::HashMap::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else { continue };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else { continue };
        if !stat[open + 1..close].starts_with("gantry-worker") {
            continue;
        }
        let fields: Vec<&str> = stat[close + 2..].split(' ').collect();
        let ticks = fields[11].parse::<u64>().unwrap_or(0) + fields[12].parse::<u64>().unwrap_or(0);
        out.insert(task.file_name().to_string_lossy().into_owned(), ticks);
    }
    out
}

/// CPU seconds the client's threads used since `before` (USER_HZ = 100).
fn client_cpu_since(before: &std::collections::HashMap<String, u64>) -> f64 {
    let now = client_cpu_ticks();
    now.iter().map(|(tid, t)| t - before.get(tid).copied().unwrap_or(0)).sum::<u64>() as f64 / 100.0
}

/// What verification costs: client CPU seconds per GiB of a 1 GiB download into a file on
/// tmpfs, with each algorithm and with verification off. Run with
/// `cargo test --release -p gantry-integration --test checksums -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement: 1 GiB per case, prints CPU s/GiB"]
fn measure_verification_cost() {
    const GIB: usize = 1 << 30;
    let server = FaultServer::start();
    server.set_request_log(false);
    let data = Bytes::from(pattern(GIB, 42));
    let cases = [
        ("CRC32", ObjectChecksum::single(ChecksumAlgo::Crc32), true),
        ("none", ObjectChecksum::single(ChecksumAlgo::Crc32), false),
        ("CRC64NVME", ObjectChecksum::single(ChecksumAlgo::Crc64Nvme), true),
        ("SHA256", ObjectChecksum::single(ChecksumAlgo::Sha256), true),
        ("SHA256-composite", ObjectChecksum::multipart(ChecksumAlgo::Sha256, vec![16 << 20; 64], true), true),
    ];
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let path = dir.path().join("out");
    for (name, checksum, verify) in cases {
        server.insert_object_with(BUCKET, name, data.clone(), &checksum);
        let c = Client::new(
            config(&server)
                .part_size_bytes(8 << 20)
                .max_connections(8)
                .memory_limit_bytes(512 << 20)
                .checksums(Checksums::default().verify_downloads(verify))
                .build()
                .unwrap(),
        )
        .unwrap();
        let mut runs = Vec::new();
        for _ in 0..3 {
            let (cpu, wall) = (client_cpu_ticks(), std::time::Instant::now());
            let info = c.block_on(c.download_to_file(BUCKET, name, &path)).unwrap();
            runs.push((client_cpu_since(&cpu), wall.elapsed().as_secs_f64()));
            assert_eq!(info.verification.unwrap().is_verified(), verify);
            std::fs::remove_file(&path).unwrap();
        }
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (cpu, wall) = runs[1];
        println!("{name:>17}: {cpu:.2} CPU s/GiB (median of 3), {wall:.2} s wall; runs {runs:.2?}");
    }
}

/// What gantry's own uploads store verifies on the way back: every upload checksum setting,
/// single PUT and multipart (a full-object CRC combined from the parts), reads back verified,
/// and with checksums off the server's own CRC64NVME verifies it.
#[test]
fn own_uploads_download_verified() {
    use gantry::{ChecksumAlgorithm, ChecksumUpload};
    deadline(|| {
        let server = FaultServer::start();
        server.create_bucket(BUCKET);
        let (small, big) = (pattern(SMALL, 5), pattern(BIG, 6));
        for algorithm in [ChecksumAlgorithm::Crc64Nvme, ChecksumAlgorithm::Crc32c] {
            for upload in [ChecksumUpload::Header, ChecksumUpload::Trailer, ChecksumUpload::None] {
                let checksums = Checksums::default().algorithm(algorithm).upload(upload).verify_downloads(true);
                let c = Client::new(config(&server).checksums(checksums).build().unwrap()).unwrap();
                for (key, data) in [("up-small", &small), ("up-big", &big)] {
                    c.block_on(c.put(BUCKET, key, data.clone())).unwrap();
                    for how in DELIVERIES {
                        let (got, info) = download(&c, key, how).unwrap();
                        assert_eq!(sha256(&got), sha256(data), "{algorithm:?} {upload:?} {key} {how:?}");
                        let v = info.verification.unwrap();
                        assert!(
                            matches!(v, Verification::FullObject(_)),
                            "{algorithm:?} {upload:?} {key} {how:?}: {v}"
                        );
                    }
                }
            }
        }
    });
}
