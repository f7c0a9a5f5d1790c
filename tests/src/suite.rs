//! The conformance suite: the same cases run against every backend (see `tests/*.rs`).
//! Each case asserts exact bytes (sha256) or the exact error kind.

use std::time::Duration;

use gantry::{ErrorKind, ListOptions, MIB};

use crate::{pattern, sha256, Backend, PART};

/// Object sizes at every boundary of the part logic.
pub fn sizes() -> Vec<u64> {
    vec![0, 1, PART - 1, PART, PART + 1, 10 * PART + 7]
}

/// Every size: uploaded from a buffer, read back through all three deliveries.
pub fn put_bytes_then_all_deliveries(b: &Backend) {
    let client = b.client(|c| c);
    let bucket = b.bucket(&client);
    let dir = tempfile::tempdir().unwrap();
    for (i, size) in sizes().into_iter().enumerate() {
        let data = pattern(size as usize, i as u64 + 1);
        let want = sha256(&data);
        let key = format!("dir/obj-{size}");
        client.block_on(async {
            let out = client.put(&bucket, &key, data.clone()).await.unwrap();
            assert_eq!(out.size, size);
            let expected_parts = if size <= PART { 1 } else { size.div_ceil(PART) as u32 };
            assert_eq!(out.parts, expected_parts, "size {size}");

            let mut buf = vec![0u8; size as usize];
            let info = client.get_into(&bucket, &key, &mut buf).await.unwrap();
            assert_eq!(info.size, size);
            assert_eq!(sha256(&buf), want, "get_into size {size}");

            let mut stream = client.get_stream(&bucket, &key).await.unwrap();
            assert_eq!(stream.info().size, size);
            let mut got = Vec::new();
            while let Some(chunk) = stream.next_chunk().await {
                got.extend_from_slice(&chunk.unwrap());
            }
            assert_eq!(sha256(&got), want, "stream size {size}");

            let path = dir.path().join(format!("out-{size}"));
            let info = client.download_to_file(&bucket, &key, &path).await.unwrap();
            assert_eq!(info.size, size);
            assert_eq!(sha256(&std::fs::read(&path).unwrap()), want, "file size {size}");

            let head = client.head_object(&bucket, &key).await.unwrap();
            assert_eq!(head.size, size);
            assert_eq!(head.etag, info.etag);
        });
    }
    // Only the downloaded files are left: temporary files were renamed or removed.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), sizes().len());
}

/// Every size uploaded from a file and from the writer (unknown length), read back.
pub fn put_file_and_writer(b: &Backend) {
    let client = b.client(|c| c);
    let bucket = b.bucket(&client);
    let dir = tempfile::tempdir().unwrap();
    for (i, size) in sizes().into_iter().enumerate() {
        let data = pattern(size as usize, 100 + i as u64);
        let want = sha256(&data);
        let src = dir.path().join(format!("src-{size}"));
        std::fs::write(&src, &data).unwrap();
        client.block_on(async {
            let key = format!("file-{size}");
            let out = client.put_file(&bucket, &key, &src).await.unwrap();
            assert_eq!(out.size, size);
            let mut buf = vec![0u8; size as usize];
            client.get_into(&bucket, &key, &mut buf).await.unwrap();
            assert_eq!(sha256(&buf), want, "put_file size {size}");

            // Writes of an awkward size that never lines up with part boundaries.
            let key = format!("writer-{size}");
            let mut up = client.upload(&bucket, &key);
            for chunk in data.chunks(777_777) {
                up.write(chunk).await.unwrap();
            }
            assert_eq!(up.bytes_written(), size);
            let out = up.complete().await.unwrap();
            assert_eq!(out.size, size);
            let expected_parts = if size <= PART { 1 } else { size.div_ceil(PART) as u32 };
            assert_eq!(out.parts, expected_parts, "writer size {size}");
            let mut buf = vec![0u8; size as usize];
            client.get_into(&bucket, &key, &mut buf).await.unwrap();
            assert_eq!(sha256(&buf), want, "writer size {size}");

            // Owned writes: whole parts go out uncopied, odd pieces through the part buffer,
            // in an order that lands both on and off part boundaries.
            let key = format!("owned-{size}");
            let mut up = client.upload(&bucket, &key);
            let owned = bytes::Bytes::from(data.clone());
            let (mut at, mut step) = (0usize, 0usize);
            while at < owned.len() {
                let n = [2 * PART as usize, 777_777, PART as usize][step % 3].min(owned.len() - at);
                up.write_bytes(owned.slice(at..at + n)).await.unwrap();
                at += n;
                step += 1;
            }
            assert_eq!(up.bytes_written(), size);
            let out = up.complete().await.unwrap();
            assert_eq!(out.size, size);
            assert_eq!(out.parts, expected_parts, "owned writer size {size}");
            let mut buf = vec![0u8; size as usize];
            client.get_into(&bucket, &key, &mut buf).await.unwrap();
            assert_eq!(sha256(&buf), want, "owned writer size {size}");
        });
    }
}

/// Several downloads and uploads at once on one client with few connections: all correct.
pub fn concurrent_transfers(b: &Backend) {
    // Verification reads the first part from an unranged GET and closes that connection (the
    // server would go on sending the rest): one extra connection per multi-part download,
    // counted in the bound below.
    let client = b.client(|c| c.max_connections(3).memory_limit_bytes(4 * PART));
    let bucket = b.bucket(&client);
    let objects: Vec<(String, Vec<u8>)> =
        (0..4).map(|i| (format!("c{i}"), pattern((3 * PART + i * 1000) as usize, 40 + i))).collect();
    client.block_on(async {
        let puts = objects.iter().map(|(k, d)| client.put(&bucket, k, d.clone()));
        for r in futures::future::join_all(puts).await {
            r.unwrap();
        }
        let gets = objects.iter().map(|(k, d)| {
            let client = client.clone();
            let bucket = bucket.clone();
            async move {
                let mut buf = vec![0u8; d.len()];
                client.get_into(&bucket, k, &mut buf).await.unwrap();
                assert_eq!(sha256(&buf), sha256(d), "{k}");
            }
        });
        let streams = objects.iter().map(|(k, d)| {
            let client = client.clone();
            let bucket = bucket.clone();
            async move {
                let mut s = client.get_stream(&bucket, k).await.unwrap();
                let mut got = Vec::new();
                while let Some(c) = s.next_chunk().await {
                    got.extend_from_slice(&c.unwrap());
                }
                assert_eq!(sha256(&got), sha256(d), "{k}");
            }
        });
        futures::future::join(futures::future::join_all(gets), futures::future::join_all(streams)).await;
    });
    let m = client.metrics();
    let verified_downloads = 2 * 4;
    assert!(m.connections_opened <= 3 + 1 + verified_downloads, "connection count must stay near the cap: {m:?}");
    let plain = b.client(|c| c.max_connections(3).checksums(gantry::Checksums::default().verify_downloads(false)));
    plain.block_on(async {
        for (k, d) in &objects {
            let mut buf = vec![0u8; d.len()];
            plain.get_into(&bucket, k, &mut buf).await.unwrap();
        }
    });
    assert!(plain.metrics().connections_opened <= 3, "ranged GETs reuse pooled connections: {:?}", plain.metrics());
}

/// An object replaced between parts fails the download with `ObjectChanged`.
pub fn etag_change_mid_download(b: &Backend) {
    let client = b.client(|c| c.read_window_bytes(PART));
    let bucket = b.bucket(&client);
    let first = pattern(3 * PART as usize, 1);
    let second = pattern(3 * PART as usize, 2);
    client.block_on(async {
        client.put(&bucket, "k", first.clone()).await.unwrap();
        let mut s = client.get_stream(&bucket, "k").await.unwrap();
        let mut got = 0u64;
        // Read exactly the first part; with a one-part window the second part is requested
        // only after this part is released, i.e. after the overwrite below.
        while got < PART {
            got += s.next_chunk().await.unwrap().unwrap().len() as u64;
        }
        assert_eq!(got, PART);
        client.put(&bucket, "k", second.clone()).await.unwrap();
        let err = loop {
            match s.next_chunk().await {
                Some(Ok(_)) => continue,
                Some(Err(e)) => break e,
                None => panic!("the stream must fail, not end"),
            }
        };
        assert_eq!(err.kind(), ErrorKind::ObjectChanged, "{err}");
        // Both servers enforce the If-Match the later parts carry (the client's own ETag
        // check is the second line of defence, for servers that ignore it).
        assert_eq!(err.http_status(), Some(412), "{err}");
        assert!(!err.is_retryable());
        assert!(s.next_chunk().await.is_none(), "nothing after the error");
    });
}

/// A missing key is a typed NotFound through every entry point, never a retry loop.
pub fn missing_key_is_not_found(b: &Backend) {
    let client = b.client(|c| c);
    let bucket = b.bucket(&client);
    let dir = tempfile::tempdir().unwrap();
    client.block_on(async {
        let before = client.metrics();
        let e = client.get_into(&bucket, "nope", &mut [0u8; 10]).await.unwrap_err();
        assert_eq!(
            (e.kind(), e.http_status(), e.s3_code()),
            (ErrorKind::NotFound, Some(404), Some("NoSuchKey")),
            "{e}"
        );
        assert_eq!(client.metrics().since(&before).requests, 1, "404 is final: no retries");
        let e = client.get_stream(&bucket, "nope").await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
        let path = dir.path().join("nope");
        let e = client.download_to_file(&bucket, "nope", &path).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert!(!path.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no temporary file left");
        let e = client.head_object(&bucket, "nope").await.unwrap_err();
        assert_eq!((e.kind(), e.http_status()), (ErrorKind::NotFound, Some(404)));
        let e = client.get_into("no-such-bucket-gantry", "k", &mut [0u8; 1]).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
    });
}

/// A download to a FIFO or a device writes into it in order and leaves the node in place
/// (renaming a temporary file over `/dev/null` would replace the device); a directory is
/// refused before any request.
pub fn special_file_destinations(b: &Backend) {
    use std::os::unix::fs::FileTypeExt;
    use std::process::Command;
    let client = b.client(|c| c);
    let bucket = b.bucket(&client);
    let dir = tempfile::tempdir().unwrap();
    let size = 3 * PART + 5;
    let data = pattern(size as usize, 77);
    let want = sha256(&data);
    client.block_on(client.put(&bucket, "special", data)).unwrap();

    let fifo = dir.path().join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    let info = client.block_on(client.download_to_file(&bucket, "special", &fifo)).unwrap();
    assert_eq!(info.size, size);
    assert_eq!(sha256(&reader.join().unwrap()), want, "the FIFO's reader got the object in order");
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());

    // A private /dev/null (mknod needs root; CI runs as root).
    let null = dir.path().join("null");
    if Command::new("mknod").arg(&null).args(["c", "1", "3"]).status().is_ok_and(|s| s.success()) {
        let info = client.block_on(client.download_to_file(&bucket, "special", &null)).unwrap();
        assert_eq!(info.size, size);
        assert!(std::fs::metadata(&null).unwrap().file_type().is_char_device(), "the device node is still there");
    }

    let e = client.block_on(client.download_to_file(&bucket, "special", dir.path())).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(names.len() <= 2, "no temporary file left: {names:?}");
}

/// `download_to_writer` delivers every byte in order into a writer that takes only a few
/// bytes per call and sometimes stalls (as a pipe does), and a writer that fails stops the
/// download with the writer's error, not a hang.
pub fn download_to_writer(b: &Backend) {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    /// Takes at most 100,000 bytes per call and sleeps now and then; fails after `fail_after`.
    struct Choppy {
        out: Arc<Mutex<Vec<u8>>>,
        calls: u64,
        fail_after: usize,
    }
    impl Write for Choppy {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let mut out = self.out.lock().unwrap();
            if out.len() >= self.fail_after {
                return Err(std::io::Error::new(std::io::ErrorKind::BrokenPipe, "reader went away"));
            }
            self.calls += 1;
            if self.calls.is_multiple_of(16) {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            let n = buf.len().min(100_000);
            out.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    let client = b.client(|c| c);
    let bucket = b.bucket(&client);
    let size = 3 * PART + 12_345;
    let data = pattern(size as usize, 91);
    let want = sha256(&data);
    client.block_on(client.put(&bucket, "w", data)).unwrap();

    let out = Arc::new(Mutex::new(Vec::new()));
    let writer = Choppy { out: out.clone(), calls: 0, fail_after: usize::MAX };
    let info = client.block_on(client.download_to_writer(&bucket, "w", writer)).unwrap();
    assert_eq!(info.size, size);
    assert_eq!(sha256(&out.lock().unwrap()), want, "every byte, in order");

    let writer = Choppy { out: Arc::new(Mutex::new(Vec::new())), calls: 0, fail_after: PART as usize };
    let e = client.block_on(client.download_to_writer(&bucket, "w", writer)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LocalIo, "{e}");
    let e = client.block_on(client.download_to_writer(&bucket, "nope", Vec::new())).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
}

/// A caller buffer smaller than the object is refused before any byte is written.
pub fn buffer_too_small(b: &Backend) {
    let client = b.client(|c| c);
    let bucket = b.bucket(&client);
    client.block_on(async {
        client.put(&bucket, "k", pattern(1000, 3)).await.unwrap();
        let mut buf = vec![0u8; 999];
        let e = client.get_into(&bucket, "k", &mut buf).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(buf.iter().all(|&x| x == 0));
    });
}

/// ListObjectsV2 across several pages, and delete.
pub fn list_pages_and_delete(b: &Backend) {
    let client = b.client(|c| c);
    let bucket = b.bucket(&client);
    client.block_on(async {
        for i in 0..23 {
            client.put(&bucket, &format!("p/{i:03}"), vec![i as u8; i]).await.unwrap();
        }
        client.put(&bucket, "other", vec![1]).await.unwrap();
        let mut options = ListOptions::default().prefix("p/").max_keys(10);
        let mut keys = Vec::new();
        let mut pages = 0;
        loop {
            let page = client.list_objects(&bucket, &options).await.unwrap();
            pages += 1;
            assert!(page.objects.len() <= 10);
            keys.extend(page.objects.iter().map(|o| (o.key.clone(), o.size)));
            match page.next_continuation_token {
                Some(t) => options.continuation_token = Some(t),
                None => break,
            }
        }
        assert_eq!(pages, 3);
        let want: Vec<(String, u64)> = (0..23).map(|i| (format!("p/{i:03}"), i as u64)).collect();
        assert_eq!(keys, want);
        assert_eq!(client.list_all(&bucket, None).await.unwrap().len(), 24);
        client.delete_object(&bucket, "other").await.unwrap();
        let e = client.head_object(&bucket, "other").await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert_eq!(client.list_all(&bucket, None).await.unwrap().len(), 23);
    });
}

/// Wrong secret: AccessDenied at once, one request, with the server's S3 code.
pub fn wrong_credentials_fail_fast(b: &Backend) {
    let good = b.client(|c| c);
    let bucket = b.bucket(&good);
    let bad = b.client(|c| {
        c.credentials(gantry::CredentialsSource::Static(gantry::Credentials::new(&b.keys.0, "wrong-secret")))
    });
    bad.block_on(async {
        let e = bad.get_into(&bucket, "k", &mut [0u8; 1]).await.unwrap_err();
        assert_eq!((e.kind(), e.http_status()), (ErrorKind::AccessDenied, Some(403)), "{e}");
        assert!(e.s3_code().is_some(), "the S3 error code is kept: {e}");
        let e = bad.put(&bucket, "k", vec![1u8; 10]).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::AccessDenied);
    });
    assert_eq!(bad.metrics().requests, 2, "403 is never retried");
}

/// Dropping a writer mid-upload, or aborting it, leaves no multipart upload behind.
pub fn cancelled_upload_leaves_nothing(b: &Backend) {
    let client = b.client(|c| c);
    let bucket = b.bucket(&client);
    let data = pattern(3 * PART as usize, 9);
    client.block_on(async {
        let mut up = client.upload(&bucket, "aborted");
        up.write(&data).await.unwrap();
        up.abort().await.unwrap();
        let mut up = client.upload(&bucket, "dropped");
        up.write(&data).await.unwrap();
        drop(up);
    });
    // The drop path aborts in the background: poll briefly.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let left = leftover_uploads(&client, &bucket);
        if left == 0 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{left} multipart uploads left behind");
        std::thread::sleep(Duration::from_millis(100));
    }
    let objects = client.block_on(client.list_all(&bucket, None)).unwrap();
    assert!(objects.is_empty(), "no object may appear: {objects:?}");
}

/// Multipart uploads still open in `bucket`, as the server lists them (every backend
/// implements ListMultipartUploads).
fn leftover_uploads(client: &gantry::Client, bucket: &str) -> usize {
    client.block_on(client.list_multipart_uploads(bucket, None)).unwrap().len()
}

/// Signed payloads (every body hashed) round-trip through a verifying server. That the
/// hashes are really sent (not `UNSIGNED-PAYLOAD`) is checked on the wire by
/// `signed_payloads_hash_every_body_sent` in `tests/faults.rs`: a server that ignores the
/// header would pass this round trip either way.
pub fn signed_payloads(b: &Backend) {
    let client = b.client(|c| c.payload_signing(gantry::PayloadSigning::Signed));
    let bucket = b.bucket(&client);
    let data = pattern((2 * PART + 5) as usize, 77);
    client.block_on(async {
        client.put(&bucket, "signed", data.clone()).await.unwrap();
        let mut buf = vec![0u8; data.len()];
        client.get_into(&bucket, "signed", &mut buf).await.unwrap();
        assert_eq!(sha256(&buf), sha256(&data));
    });
}

/// A slow stream reader holds the download back (backpressure): the bytes fetched never run
/// more than the read window (plus the part in hand) ahead of what was read.
pub fn stream_backpressure(b: &Backend) {
    // Without verification: its unranged first GET receives a little past the first part.
    let client =
        b.client(|c| c.read_window_bytes(2 * PART).checksums(gantry::Checksums::default().verify_downloads(false)));
    let bucket = b.bucket(&client);
    let data = pattern(12 * PART as usize, 5);
    client.block_on(async {
        client.put(&bucket, "big", data.clone()).await.unwrap();
        let start = client.metrics().bytes_downloaded;
        let mut s = client.get_stream(&bucket, "big").await.unwrap();
        let first = s.next_chunk().await.unwrap().unwrap();
        std::thread::sleep(Duration::from_millis(500));
        let fetched = client.metrics().bytes_downloaded - start;
        assert!(fetched <= 2 * PART, "read {} bytes but {fetched} were fetched", first.len());
        let mut got = first.to_vec();
        while let Some(c) = s.next_chunk().await {
            got.extend_from_slice(&c.unwrap());
        }
        assert_eq!(sha256(&got), sha256(&data));
    });
}

/// Byte ranges into caller memory: inside one part, across parts, cut at the end, past the end.
pub fn ranged_reads(b: &Backend) {
    let client = b.client(|c| c);
    let bucket = b.bucket(&client);
    let size = 3 * PART + 17;
    let data = pattern(size as usize, 31);
    client.block_on(async {
        client.put(&bucket, "r", data.clone()).await.unwrap();
        for (start, end) in
            [(0, 1), (5, 100), (PART - 3, PART + 3), (7, 3 * PART), (PART, size), (size - 5, size + 100)]
        {
            let mut buf = vec![0u8; (end - start) as usize];
            let info = client.get_range_into(&bucket, "r", start..end, &mut buf).await.unwrap();
            assert_eq!(info.size, size);
            let got = (end.min(size) - start) as usize;
            assert!(buf[..got] == data[start as usize..start as usize + got], "range {start}..{end}");
        }
        let mut buf = vec![0u8; 10];
        let e = client.get_range_into(&bucket, "r", size..size + 10, &mut buf).await.unwrap_err();
        assert_eq!(e.http_status(), Some(416), "{e}");
        let e = client.get_range_into(&bucket, "r", 0..11, &mut buf).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
    });
}

/// One request shape for every GET (`GetOptions`): the caller's If-Match and If-None-Match
/// as the server judges them (412 / 304), a range with a part size of its own, a stream and a
/// file with options, and HeadObject under the same conditions.
pub fn get_options(b: &Backend) {
    use gantry::GetOptions;
    let client = b.client(|c| c);
    let bucket = b.bucket(&client);
    let size = 2 * PART + 5;
    let data = pattern(size as usize, 41);
    client.block_on(async {
        let etag = client.put(&bucket, "o", data.clone()).await.unwrap().etag.unwrap();
        let mut buf = vec![0u8; size as usize];
        let info = client.get_into_with(&bucket, "o", &GetOptions::new().if_match(&etag), &mut buf).await.unwrap();
        assert_eq!(info.etag.as_deref(), Some(etag.as_str()));
        assert!(buf == data);
        let other = "\"0123456789abcdef0123456789abcdef\"";
        let e = client.get_into_with(&bucket, "o", &GetOptions::new().if_match(other), &mut buf).await.unwrap_err();
        assert_eq!((e.kind(), e.http_status()), (ErrorKind::PreconditionFailed, Some(412)), "{e}");
        assert!(!e.is_retryable());
        let e = client.get_stream_with(&bucket, "o", &GetOptions::new().if_none_match(&etag)).await.unwrap_err();
        assert_eq!((e.kind(), e.http_status()), (ErrorKind::NotModified, Some(304)), "{e}");
        let e = client.head_object_with(&bucket, "o", &GetOptions::new().if_match(other)).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::PreconditionFailed, "{e}");
        let head = client.head_object_with(&bucket, "o", &GetOptions::new().if_match(&etag)).await.unwrap();
        assert_eq!(head.size, size);
        // A range in 1 MiB parts: the requests follow the caller's part size.
        let before = client.metrics().requests;
        let opts = GetOptions::new().range(MIB..4 * MIB + 3).part_size_bytes(MIB);
        let mut part = vec![0u8; 3 * MIB as usize + 3];
        client.get_into_with(&bucket, "o", &opts, &mut part).await.unwrap();
        assert!(part == data[MIB as usize..4 * MIB as usize + 3]);
        assert_eq!(client.metrics().requests - before, 4, "three 1 MiB parts and the 3-byte tail");
        // A file with options: the range, written at the start of the file.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("range.bin");
        let opts = GetOptions::new().range(7..PART + 9).checksum(gantry::DownloadChecksum::Skip);
        client.download_to_file_with(&bucket, "o", &opts, &path).await.unwrap();
        assert!(std::fs::read(&path).unwrap() == data[7..(PART + 9) as usize]);
    });
}

/// Every checksum algorithm and transport round-trips (the store accepts what we send), and a
/// whole-object download is verified against the checksum the store returns.
pub fn checksum_modes(b: &Backend) {
    use gantry::{ChecksumAlgorithm, ChecksumUpload, Checksums};
    let small = pattern((PART / 2) as usize, 31);
    let big = pattern((2 * PART + PART / 2) as usize, 32);
    for algorithm in [ChecksumAlgorithm::Crc64Nvme, ChecksumAlgorithm::Crc32c] {
        for upload in [ChecksumUpload::Header, ChecksumUpload::Trailer, ChecksumUpload::None] {
            let client = b.client(|c| {
                c.checksums(Checksums::default().algorithm(algorithm).upload(upload).verify_downloads(true))
            });
            let bucket = b.bucket(&client);
            let what = format!("{} {algorithm:?} {upload:?}", b.name);
            client.block_on(async {
                client.put(&bucket, "small", small.clone()).await.unwrap_or_else(|e| panic!("{what}: {e}"));
                client.put(&bucket, "big", big.clone()).await.unwrap_or_else(|e| panic!("{what}: {e}"));
                let mut w = client.upload(&bucket, "stream");
                w.write(&big).await.unwrap();
                w.complete().await.unwrap_or_else(|e| panic!("{what}: {e}"));
                let before = client.metrics().checksums_verified;
                let mut buf = vec![0u8; small.len()];
                client.get_into(&bucket, "small", &mut buf).await.unwrap();
                assert_eq!(sha256(&buf), sha256(&small), "{what}");
                if upload != ChecksumUpload::None {
                    assert_eq!(
                        client.metrics().checksums_verified,
                        before + 1,
                        "{what}: the whole-object GET is verified"
                    );
                }
                for key in ["big", "stream"] {
                    let mut buf = vec![0u8; big.len()];
                    client.get_into(&bucket, key, &mut buf).await.unwrap();
                    assert_eq!(sha256(&buf), sha256(&big), "{what} {key}");
                }
            });
            assert_eq!(client.metrics().checksum_failures, 0, "{what}");
        }
    }
}

/// Server-side copies: one CopyObject below the threshold, UploadPartCopy parts above it, with
/// awkward keys on both sides; bytes and content type arrive, nothing is left open, and a
/// missing source is NotFound.
pub fn server_side_copy(b: &Backend) {
    let client = b.client(|c| c.copy_threshold_bytes(PART).copy_part_size_bytes(PART));
    let bucket = b.bucket(&client);
    let other = b.bucket(&client);
    client.block_on(async {
        let small = pattern(1000, 1);
        let typed = gantry::PutOptions::new().content_type("text/x-small");
        client.put_with(&bucket, "small src", small.clone(), &typed).await.unwrap();
        let out = client.copy_object(&bucket, "small src", &other, "copies/small+1").await.unwrap();
        assert_eq!((out.size, out.parts), (1000, 1));
        let mut got = vec![0u8; 1000];
        client.get_into(&other, "copies/small+1", &mut got).await.unwrap();
        assert_eq!(sha256(&got), sha256(&small));
        assert_eq!(
            client.head_object(&other, "copies/small+1").await.unwrap().content_type.as_deref(),
            Some("text/x-small")
        );

        let big = pattern((2 * PART + 3) as usize, 2);
        let src = "dir/a b+c%ü?.bin";
        let typed = gantry::PutOptions::new().content_type("application/x-big");
        client.put_with(&bucket, src, big.clone(), &typed).await.unwrap();
        let out = client.copy_object(&bucket, src, &bucket, "copy of/big & more").await.unwrap();
        assert_eq!((out.size, out.parts), (2 * PART + 3, 3));
        let head = client.head_object(&bucket, "copy of/big & more").await.unwrap();
        assert_eq!(head.size, 2 * PART + 3);
        assert_eq!(head.content_type.as_deref(), Some("application/x-big"), "a multipart copy keeps the type");
        let mut got = vec![0u8; big.len()];
        client.get_into(&bucket, "copy of/big & more", &mut got).await.unwrap();
        assert_eq!(sha256(&got), sha256(&big));
        assert!(client.list_multipart_uploads(&bucket, None).await.unwrap().is_empty());

        let e = client.copy_object(&bucket, "no such source", &bucket, "x").await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
        assert!(client.head_object(&bucket, "x").await.is_err());
    });
}

/// DeleteObjects across two batches (over 1,000 keys), awkward keys included; a missing key
/// counts as deleted.
pub fn batch_delete(b: &Backend) {
    let client = b.client(|c| c.max_connections(32));
    let bucket = b.bucket(&client);
    client.block_on(async {
        let mut keys: Vec<String> = (0..1200).map(|i| format!("d/{i:04}")).collect();
        keys.extend(["d/sp ace", "d/a&b<c>\"'", "d/ünï+%"].map(String::from));
        let puts = keys.iter().map(|k| client.put(&bucket, k, vec![1u8; 3]));
        futures::future::try_join_all(puts).await.unwrap();
        client.put(&bucket, "keep", vec![2u8]).await.unwrap();
        let mut asked = keys.clone();
        asked.push("d/never-existed".into());
        let out = client.delete_objects(&bucket, asked).await.unwrap();
        assert!(out.errors.is_empty(), "{:?}", out.errors);
        assert_eq!(out.deleted, 1204);
        let left: Vec<String> = client.list_all(&bucket, None).await.unwrap().into_iter().map(|o| o.key).collect();
        assert_eq!(left, ["keep"]);
        assert_eq!(client.delete_objects(&bucket, Vec::<String>::new()).await.unwrap().deleted, 0);
    });
}
