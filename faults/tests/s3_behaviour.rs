//! S3 semantics of the fault server: objects, ranges, conditionals, checksums, aws-chunked,
//! multipart and listings.

mod common;

use bytes::Bytes;
use common::{data, send, xml_field, xml_fields, End};
use gantry_faults::{ChecksumAlgo, FaultServer, Op};

#[tokio::test]
async fn put_then_get_full_ranged_and_head() {
    let s = FaultServer::start();
    let a = s.addr();
    assert_eq!(send(a, "PUT", "/bkt", &[], b"").await.ok().status, Some(200));
    let body = data(1 << 20, 1);
    let put = send(a, "PUT", "/bkt/dir/a%20b.bin", &[], &body).await.ok();
    assert_eq!(put.status, Some(200));
    assert_eq!(put.header("etag").map(str::to_string), s.object_etag("bkt", "dir/a b.bin"));
    assert!(put.header("x-amz-request-id").is_some());
    assert_eq!(put.header("server"), Some("gantry-faults"));
    assert_eq!(s.object("bkt", "dir/a b.bin").as_deref(), Some(&body[..]));

    let get = send(a, "GET", "/bkt/dir/a%20b.bin", &[], b"").await.ok();
    assert_eq!(get.status, Some(200));
    assert_eq!(get.body, body);
    assert_eq!(get.header("accept-ranges"), Some("bytes"));
    assert_eq!(get.header("content-type"), Some("application/octet-stream"));
    assert!(get.header("last-modified").is_some_and(|v| v.ends_with(" GMT")));
    assert!(get.header("content-range").is_none());

    let r = send(a, "GET", "/bkt/dir/a%20b.bin", &[("Range", "bytes=100-199")], b"").await.ok();
    assert_eq!(r.status, Some(206));
    assert_eq!(r.header("content-range"), Some("bytes 100-199/1048576"));
    assert_eq!(r.body, &body[100..200]);
    let r = send(a, "GET", "/bkt/dir/a%20b.bin", &[("Range", "bytes=1048000-")], b"").await.ok();
    assert_eq!(r.body, &body[1_048_000..]);
    assert_eq!(r.header("content-range"), Some("bytes 1048000-1048575/1048576"));
    let r = send(a, "GET", "/bkt/dir/a%20b.bin", &[("Range", "bytes=-10")], b"").await.ok();
    assert_eq!(r.body, &body[body.len() - 10..]);
    let r = send(a, "GET", "/bkt/dir/a%20b.bin", &[("Range", "bytes=1048570-99999999")], b"").await.ok();
    assert_eq!(r.body, &body[1_048_570..]);

    let h = send(a, "HEAD", "/bkt/dir/a%20b.bin", &[], b"").await.ok();
    assert_eq!(h.status, Some(200));
    assert_eq!(h.content_length(), Some(1 << 20));
    assert_eq!(h.header("etag"), get.header("etag"));

    // An overwrite changes the ETag even for identical bytes.
    let put2 = send(a, "PUT", "/bkt/dir/a%20b.bin", &[], &body).await.ok();
    assert_ne!(put2.header("etag"), put.header("etag"));

    assert_eq!(send(a, "DELETE", "/bkt/dir/a%20b.bin", &[], b"").await.ok().status, Some(204));
    assert!(s.object("bkt", "dir/a b.bin").is_none());
    assert_eq!(s.request_count(Op::GetObject), 5);
    assert_eq!(s.request_count(Op::PutObject), 2);
    assert_eq!(s.request_count(Op::CreateBucket), 1);
    let recs = s.requests();
    assert_eq!(recs[2].op, Op::GetObject);
    assert_eq!(recs[2].key.as_deref(), Some("dir/a b.bin"));
    assert_eq!(recs[3].range, Some((100, Some(199))));
    assert_eq!(recs[4].range, Some((1_048_000, None)));
    assert_eq!(recs[5].range, Some((1_048_566, Some(1_048_575))));
    assert!(recs.iter().all(|r| r.headers.iter().all(|(n, _)| n != "authorization")));
    assert!(recs[0].headers.iter().any(|(n, _)| n == "host"));
}

#[tokio::test]
async fn range_errors_and_missing_things() {
    let s = FaultServer::start();
    let a = s.addr();
    s.insert_object("b", "empty", Bytes::new());
    s.insert_object("b", "ten", Bytes::from_static(b"0123456789"));

    let r = send(a, "GET", "/b/empty", &[], b"").await.ok();
    assert_eq!((r.status, r.body.len()), (Some(200), 0));
    for range in ["bytes=0-", "bytes=0-0", "bytes=-5"] {
        let r = send(a, "GET", "/b/empty", &[("Range", range)], b"").await.ok();
        assert_eq!(r.status, Some(416), "{range}");
        assert_eq!(r.header("content-range"), Some("bytes */0"));
        assert_eq!(xml_field(&r.text(), "Code").as_deref(), Some("InvalidRange"));
        assert_eq!(r.header("content-type"), Some("application/xml"));
        assert_eq!(xml_field(&r.text(), "RequestId").as_deref(), r.header("x-amz-request-id"));
    }
    let r = send(a, "GET", "/b/ten", &[("Range", "bytes=10-20")], b"").await.ok();
    assert_eq!(r.status, Some(416));
    assert_eq!(r.header("content-range"), Some("bytes */10"));

    let r = send(a, "GET", "/b/nope", &[], b"").await.ok();
    assert_eq!(r.status, Some(404));
    assert_eq!(xml_field(&r.text(), "Code").as_deref(), Some("NoSuchKey"));
    let r = send(a, "GET", "/nobucket/x", &[], b"").await.ok();
    assert_eq!(xml_field(&r.text(), "Code").as_deref(), Some("NoSuchBucket"));
    let r = send(a, "HEAD", "/b/nope", &[], b"").await.ok();
    assert_eq!((r.status, r.body.len()), (Some(404), 0));
    let r = send(a, "PUT", "/nobucket/x", &[], b"abc").await.ok();
    assert_eq!(xml_field(&r.text(), "Code").as_deref(), Some("NoSuchBucket"));
    let r = send(a, "GET", "/b/ten?tagging", &[], b"").await.ok();
    assert_eq!(r.status, Some(501));

    // If-Match.
    let etag = s.object_etag("b", "ten").unwrap();
    let r = send(a, "GET", "/b/ten", &[("If-Match", "\"0000\"")], b"").await.ok();
    assert_eq!(r.status, Some(412));
    assert_eq!(xml_field(&r.text(), "Code").as_deref(), Some("PreconditionFailed"));
    let r = send(a, "GET", "/b/ten", &[("If-Match", &etag), ("Range", "bytes=2-3")], b"").await.ok();
    assert_eq!((r.status, r.body.as_slice()), (Some(206), &b"23"[..]));
    let r = send(a, "GET", "/b/ten", &[("If-Match", etag.trim_matches('"'))], b"").await.ok();
    assert_eq!(r.status, Some(200));
}

#[tokio::test]
async fn checksum_headers_only_on_whole_object_with_mode() {
    let s = FaultServer::start();
    let a = s.addr();
    s.create_bucket("b");
    let body = data(300_000, 2);
    let c32c = ChecksumAlgo::Crc32c.encoded(&body);
    let c64 = ChecksumAlgo::Crc64Nvme.encoded(&body);
    let put = send(a, "PUT", "/b/k", &[("x-amz-checksum-crc32c", &c32c)], &body).await.ok();
    assert_eq!(put.status, Some(200));
    assert_eq!(put.header("x-amz-checksum-crc32c"), Some(c32c.as_str()));

    let mode = ("x-amz-checksum-mode", "ENABLED");
    let g = send(a, "GET", "/b/k", &[mode], b"").await.ok();
    assert_eq!(g.header("x-amz-checksum-crc32c"), Some(c32c.as_str()));
    assert_eq!(g.header("x-amz-checksum-crc64nvme"), Some(c64.as_str()));
    assert_eq!(g.header("x-amz-checksum-type"), Some("FULL_OBJECT"));
    assert!(g.header("x-amz-checksum-crc32").is_none());
    let whole = send(a, "GET", "/b/k", &[mode, ("Range", "bytes=0-299999")], b"").await.ok();
    assert_eq!(whole.status, Some(206));
    assert_eq!(whole.header("x-amz-checksum-crc64nvme"), Some(c64.as_str()));
    let part = send(a, "GET", "/b/k", &[mode, ("Range", "bytes=0-1000")], b"").await.ok();
    assert!(part.headers.iter().all(|(n, _)| !n.starts_with("x-amz-checksum")));
    let no_mode = send(a, "GET", "/b/k", &[], b"").await.ok();
    assert!(no_mode.headers.iter().all(|(n, _)| !n.starts_with("x-amz-checksum")));
    let head = send(a, "HEAD", "/b/k", &[mode], b"").await.ok();
    assert_eq!(head.header("x-amz-checksum-crc64nvme"), Some(c64.as_str()));

    // An object inserted without an algorithm still has CRC64NVME (S3 computes it).
    s.insert_object("b", "plain", Bytes::from(body.clone()));
    let g = send(a, "GET", "/b/plain", &[mode], b"").await.ok();
    assert_eq!(g.header("x-amz-checksum-crc64nvme"), Some(c64.as_str()));
    assert!(g.header("x-amz-checksum-crc32c").is_none());

    // Wrong checksum: BadDigest, nothing stored.
    let wrong = ChecksumAlgo::Crc32.encoded(b"something else");
    let r = send(a, "PUT", "/b/bad", &[("x-amz-checksum-crc32", &wrong)], &body).await.ok();
    assert_eq!(r.status, Some(400));
    assert_eq!(xml_field(&r.text(), "Code").as_deref(), Some("BadDigest"));
    assert!(s.object("b", "bad").is_none());
    let r = send(a, "PUT", "/b/bad", &[("x-amz-checksum-crc64nvme", "!!notbase64")], &body).await.ok();
    assert_eq!(xml_field(&r.text(), "Code").as_deref(), Some("InvalidRequest"));
    let r = send(a, "PUT", "/b/bad", &[("x-amz-checksum-crc32c", &c32c), ("x-amz-checksum-crc64nvme", &c64)], &body)
        .await
        .ok();
    assert_eq!(xml_field(&r.text(), "Code").as_deref(), Some("InvalidRequest"));
    assert!(s.object("b", "bad").is_none());
}

fn aws_chunked(payload: &[u8], chunk: usize, trailer: Option<(&str, &str)>) -> Vec<u8> {
    let mut out = Vec::new();
    for c in payload.chunks(chunk) {
        out.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
        out.extend_from_slice(c);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n");
    if let Some((n, v)) = trailer {
        out.extend_from_slice(format!("{n}:{v}\r\n").as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out
}

#[tokio::test]
async fn aws_chunked_trailer_upload() {
    let s = FaultServer::start();
    let a = s.addr();
    s.create_bucket("b");
    let payload = data(200_000, 3);
    let sum = ChecksumAlgo::Crc64Nvme.encoded(&payload);
    let len = payload.len().to_string();
    let hdrs = [
        ("Content-Encoding", "aws-chunked"),
        ("x-amz-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER"),
        ("x-amz-decoded-content-length", len.as_str()),
        ("x-amz-trailer", "x-amz-checksum-crc64nvme"),
    ];
    let body = aws_chunked(&payload, 65_536, Some(("x-amz-checksum-crc64nvme", &sum)));
    let r = send(a, "PUT", "/b/chunked", &hdrs, &body).await.ok();
    assert_eq!(r.status, Some(200), "{}", r.text());
    assert_eq!(r.header("x-amz-checksum-crc64nvme"), Some(sum.as_str()));
    assert_eq!(s.object("b", "chunked").as_deref(), Some(&payload[..]));

    // Wrong trailer value -> BadDigest, nothing stored.
    let bad = aws_chunked(&payload, 65_536, Some(("x-amz-checksum-crc64nvme", &ChecksumAlgo::Crc64Nvme.encoded(b"x"))));
    let r = send(a, "PUT", "/b/bad", &hdrs, &bad).await.ok();
    assert_eq!(xml_field(&r.text(), "Code").as_deref(), Some("BadDigest"));
    assert!(s.object("b", "bad").is_none());

    // Declared trailer missing / decoded length wrong.
    let r = send(a, "PUT", "/b/bad", &hdrs, &aws_chunked(&payload, 65_536, None)).await.ok();
    assert_eq!(r.status, Some(400));
    let mut short = hdrs;
    short[2] = ("x-amz-decoded-content-length", "199999");
    let r = send(a, "PUT", "/b/bad", &short, &body).await.ok();
    assert_eq!(xml_field(&r.text(), "Code").as_deref(), Some("IncompleteBody"));
    assert!(s.object("b", "bad").is_none());

    s.set_reject_trailers(true);
    let r = send(a, "PUT", "/b/rejected", &hdrs, &body).await.ok();
    assert_eq!(r.status, Some(501));
    assert_eq!(xml_field(&r.text(), "Code").as_deref(), Some("NotImplemented"));
    assert!(s.object("b", "rejected").is_none());
    // Plain uploads still work.
    assert_eq!(send(a, "PUT", "/b/plain", &[], b"abc").await.ok().status, Some(200));
}

#[tokio::test]
async fn multipart_lifecycle() {
    let s = FaultServer::start();
    let a = s.addr();
    s.create_bucket("b");
    let create = |key: &'static str| async move {
        let r = send(
            a,
            "POST",
            &format!("/b/{key}?uploads"),
            &[("x-amz-checksum-algorithm", "CRC32C"), ("x-amz-checksum-type", "FULL_OBJECT")],
            b"",
        )
        .await
        .ok();
        assert_eq!(r.status, Some(200));
        assert_eq!(xml_field(&r.text(), "Key").as_deref(), Some(key));
        assert_eq!(r.header("x-amz-checksum-algorithm"), Some("CRC32C"));
        xml_field(&r.text(), "UploadId").unwrap()
    };
    let id = create("big").await;
    assert_eq!(s.open_multipart_uploads("b"), 1);
    let p1 = data(5 * 1024 * 1024, 4);
    let p2 = data(1000, 5);
    let mut etags = Vec::new();
    for (n, p) in [(1, &p1), (2, &p2)] {
        let sum = ChecksumAlgo::Crc32c.encoded(p);
        let r = send(a, "PUT", &format!("/b/big?partNumber={n}&uploadId={id}"), &[("x-amz-checksum-crc32c", &sum)], p)
            .await
            .ok();
        assert_eq!(r.status, Some(200));
        assert_eq!(r.header("x-amz-checksum-crc32c"), Some(sum.as_str()));
        etags.push(r.header("etag").unwrap().to_string());
    }
    let r = send(a, "PUT", "/b/big?partNumber=3&uploadId=nope", &[], b"x").await.ok();
    assert_eq!((r.status, xml_field(&r.text(), "Code").as_deref()), (Some(404), Some("NoSuchUpload")));
    let wrong_algo = ChecksumAlgo::Crc32.encoded(b"x");
    let r =
        send(a, "PUT", &format!("/b/big?partNumber=3&uploadId={id}"), &[("x-amz-checksum-crc32", &wrong_algo)], b"x")
            .await
            .ok();
    assert_eq!(xml_field(&r.text(), "Code").as_deref(), Some("InvalidRequest"));

    let list = send(a, "GET", "/b?uploads", &[], b"").await.ok();
    assert_eq!(xml_fields(&list.text(), "UploadId"), vec![id.clone()]);
    assert_eq!(xml_field(&list.text(), "IsTruncated").as_deref(), Some("false"));
    assert_eq!(s.request_count(Op::ListMultipartUploads), 1);

    let doc = |parts: &[(u32, &str)]| {
        let mut d = String::from(r#"<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">"#);
        for (n, e) in parts {
            d.push_str(&format!("<Part><PartNumber>{n}</PartNumber><ETag>{e}</ETag></Part>"));
        }
        d.push_str("</CompleteMultipartUpload>");
        d
    };
    let path = format!("/b/big?uploadId={id}");
    let r = send(a, "POST", &path, &[], doc(&[(2, &etags[1]), (1, &etags[0])]).as_bytes()).await.ok();
    assert_eq!(xml_field(&r.text(), "Code").as_deref(), Some("InvalidPartOrder"));
    let r = send(a, "POST", &path, &[], doc(&[(1, "\"beef\""), (2, &etags[1])]).as_bytes()).await.ok();
    assert_eq!(xml_field(&r.text(), "Code").as_deref(), Some("InvalidPart"));
    let mut whole = p1.clone();
    whole.extend_from_slice(&p2);
    let wrong_full = ChecksumAlgo::Crc32c.encoded(b"nope");
    let r = send(
        a,
        "POST",
        &path,
        &[("x-amz-checksum-crc32c", &wrong_full)],
        doc(&[(1, &etags[0]), (2, &etags[1])]).as_bytes(),
    )
    .await
    .ok();
    assert_eq!(xml_field(&r.text(), "Code").as_deref(), Some("BadDigest"));
    assert_eq!(s.open_multipart_uploads("b"), 1);

    let full = ChecksumAlgo::Crc32c.encoded(&whole);
    let with_sums = format!(
        "<CompleteMultipartUpload><Part><ETag>{}</ETag><PartNumber>1</PartNumber><ChecksumCRC32C>{}</ChecksumCRC32C></Part>\
         <Part><PartNumber>2</PartNumber><ETag>{}</ETag></Part></CompleteMultipartUpload>",
        etags[0].replace('"', "&quot;"),
        ChecksumAlgo::Crc32c.encoded(&p1),
        etags[1]
    );
    let r = send(a, "POST", &path, &[("x-amz-checksum-crc32c", &full)], with_sums.as_bytes()).await.ok();
    assert_eq!(r.status, Some(200), "{}", r.text());
    let etag = xml_field(&r.text(), "ETag").unwrap().replace("&quot;", "\"");
    assert!(etag.ends_with("-2\""), "{etag}");
    assert_eq!(Some(etag), s.object_etag("b", "big"));
    assert_eq!(xml_field(&r.text(), "ChecksumCRC32C"), Some(full.clone()));
    assert_eq!(s.object("b", "big").as_deref(), Some(&whole[..]));
    assert_eq!(s.open_multipart_uploads("b"), 0);
    let g = send(a, "GET", "/b/big", &[("x-amz-checksum-mode", "ENABLED")], b"").await.ok();
    assert_eq!(g.body, whole);
    assert_eq!(g.header("x-amz-checksum-crc32c"), Some(full.as_str()));
    assert_eq!(g.header("x-amz-checksum-crc64nvme"), Some(ChecksumAlgo::Crc64Nvme.encoded(&whole).as_str()));
    let r = send(a, "POST", &path, &[], doc(&[(1, &etags[0])]).as_bytes()).await.ok();
    assert_eq!(xml_field(&r.text(), "Code").as_deref(), Some("NoSuchUpload"));

    // Too-small non-last part.
    let id2 = create("small").await;
    let mut e2 = Vec::new();
    for n in 1..=2 {
        let r = send(a, "PUT", &format!("/b/small?partNumber={n}&uploadId={id2}"), &[], b"tiny").await.ok();
        e2.push(r.header("etag").unwrap().to_string());
    }
    let r = send(a, "POST", &format!("/b/small?uploadId={id2}"), &[], doc(&[(1, &e2[0]), (2, &e2[1])]).as_bytes())
        .await
        .ok();
    assert_eq!(xml_field(&r.text(), "Code").as_deref(), Some("EntityTooSmall"));
    let r = send(a, "POST", &format!("/b/small?uploadId={id2}"), &[], b"<not xml").await.ok();
    assert_eq!(xml_field(&r.text(), "Code").as_deref(), Some("MalformedXML"));

    // Abort.
    assert_eq!(send(a, "DELETE", &format!("/b/small?uploadId={id2}"), &[], b"").await.ok().status, Some(204));
    assert_eq!(s.open_multipart_uploads("b"), 0);
    let r = send(a, "DELETE", &format!("/b/small?uploadId={id2}"), &[], b"").await.ok();
    assert_eq!((r.status, xml_field(&r.text(), "Code").as_deref()), (Some(404), Some("NoSuchUpload")));
    assert_eq!(s.request_count(Op::AbortMultipartUpload), 2);
    assert_eq!(s.request_count(Op::CreateMultipartUpload), 2);
    assert_eq!(s.request_count(Op::CompleteMultipartUpload), 7);
    let parts: Vec<_> = s.requests().iter().filter(|r| r.op == Op::UploadPart).map(|r| r.part_number).collect();
    assert_eq!(parts, [Some(1), Some(2), Some(3), Some(3), Some(1), Some(2)]);
}

#[tokio::test]
async fn list_objects_v2_pages() {
    let s = FaultServer::start();
    let a = s.addr();
    for k in ["a/1", "a/2", "b", "c/x", "d", "e f"] {
        s.insert_object("b", k, Bytes::from_static(b"12345"));
    }
    let mut keys = Vec::new();
    let mut token: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut path = "/b?list-type=2&max-keys=2".to_string();
        if let Some(t) = &token {
            path.push_str(&format!("&continuation-token={t}"));
        }
        let r = send(a, "GET", &path, &[], b"").await.ok();
        let t = r.text();
        pages += 1;
        assert_eq!(xml_field(&t, "KeyCount").as_deref(), Some("2"));
        keys.extend(xml_fields(&t, "Key"));
        assert!(xml_fields(&t, "Size").iter().all(|s| s == "5"));
        assert_eq!(xml_fields(&t, "ETag").len(), 2);
        assert_eq!(xml_fields(&t, "LastModified").len(), 2);
        match xml_field(&t, "NextContinuationToken") {
            Some(n) => {
                assert_eq!(xml_field(&t, "IsTruncated").as_deref(), Some("true"));
                token = Some(n);
            }
            None => {
                assert_eq!(xml_field(&t, "IsTruncated").as_deref(), Some("false"));
                break;
            }
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(keys, ["a/1", "a/2", "b", "c/x", "d", "e f"]);
    let r = send(a, "GET", "/b?list-type=2&prefix=a%2F", &[], b"").await.ok();
    assert_eq!(xml_fields(&r.text(), "Key"), ["a/1", "a/2"]);
    let r = send(a, "GET", "/b?list-type=2&delimiter=%2F", &[], b"").await.ok();
    assert_eq!(xml_fields(&r.text(), "Key"), ["b", "d", "e f"]);
    assert_eq!(xml_fields(&r.text(), "Prefix"), ["", "a/", "c/"]);
    let r = send(a, "GET", "/nobucket?list-type=2", &[], b"").await.ok();
    assert_eq!(xml_field(&r.text(), "Code").as_deref(), Some("NoSuchBucket"));
    assert_eq!(s.request_count(Op::ListObjectsV2), 6);
}

#[tokio::test]
async fn keep_alive_and_connection_accounting() {
    let s = FaultServer::start();
    s.insert_object("b", "k", Bytes::from_static(b"hello"));
    let mut c = common::Conn::open(s.addr()).await;
    for _ in 0..3 {
        assert_eq!(c.request("GET", "/b/k", &[], b"").await.ok().body, b"hello");
    }
    assert_eq!(s.connections_accepted(), 1);
    assert_eq!(s.connections_open(), 1);
    drop(c);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while s.connections_open() != 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(s.connections_open(), 0);

    // Dropping the server closes open connections.
    let mut c = common::Conn::open(s.addr()).await;
    assert_eq!(c.request("GET", "/b/k", &[], b"").await.ok().status, Some(200));
    s.reset_log();
    assert_eq!(s.connections_accepted(), 0);
    assert!(s.requests().is_empty());
    drop(s);
    let r = c.request("GET", "/b/k", &[], b"").await;
    assert_ne!(r.end, End::Complete);
    assert!(r.status.is_none());
}

#[tokio::test]
async fn bucket_level_extras() {
    let s = FaultServer::start();
    let a = s.addr();
    s.insert_object("b", "x", Bytes::from_static(b"1"));
    s.insert_object("b", "y/z", Bytes::from_static(b"2"));
    assert_eq!(send(a, "HEAD", "/b", &[], b"").await.ok().status, Some(200));
    assert_eq!(send(a, "HEAD", "/nope", &[], b"").await.ok().status, Some(404));
    let r = send(a, "GET", "/", &[], b"").await.ok();
    assert_eq!(xml_fields(&r.text(), "Name"), ["b"]);
    let r = send(a, "GET", "/b?location", &[], b"").await.ok();
    assert!(r.text().contains("LocationConstraint"));
    let r = send(a, "DELETE", "/b", &[], b"").await.ok();
    assert_eq!((r.status, xml_field(&r.text(), "Code").as_deref()), (Some(409), Some("BucketNotEmpty")));
    let del = b"<Delete><Object><Key>x</Key></Object><Object><Key>y/z</Key></Object></Delete>";
    let r = send(a, "POST", "/b?delete", &[], del).await.ok();
    assert_eq!(xml_fields(&r.text(), "Key"), ["x", "y/z"]);
    assert!(s.object("b", "x").is_none() && s.object("b", "y/z").is_none());
    assert_eq!(send(a, "DELETE", "/b", &[], b"").await.ok().status, Some(204));
    assert_eq!(send(a, "GET", "/b?versioning", &[], b"").await.ok().status, Some(501));
    // The POST ?delete above is counted as its own operation, not as Other.
    assert_eq!(s.request_count(Op::DeleteObjects), 1);
    assert_eq!(s.request_count(Op::Other), 7);
    let te = send(a, "PUT", "/b2", &[], b"").await.ok();
    assert_eq!(te.status, Some(200));
    let r = send(a, "PUT", "/b2/k", &[("Transfer-Encoding", "chunked"), ("Content-Length", "0")], b"0\r\n\r\n").await;
    assert_eq!(r.status, Some(501));
}

/// Objects stored as S3 holds them after each kind of upload: one algorithm, full-object or
/// composite (`<b64>-N`, `COMPOSITE`); GET `?partNumber=N` answers the part with its own
/// checksum; GetObjectAttributes lists parts page by page, ETag unquoted; corrupt_object
/// damages the bytes but not the checksum; set_reject_attributes answers 501.
#[tokio::test]
async fn stored_checksums_parts_and_attributes() {
    use gantry_faults::ObjectChecksum;
    let s = FaultServer::start();
    let a = s.addr();
    let body = data(30_000, 7);
    let sizes = vec![10_000, 10_000, 10_000];
    let mode = ("x-amz-checksum-mode", "ENABLED");
    for algo in ChecksumAlgo::ALL {
        s.insert_object_with("b", "single", Bytes::from(body.clone()), &ObjectChecksum::single(algo));
        let g = send(a, "GET", "/b/single", &[mode], b"").await.ok();
        assert_eq!(g.header(algo.header()), Some(algo.encoded(&body).as_str()), "{algo:?}");
        assert_eq!(g.header("x-amz-checksum-type"), Some("FULL_OBJECT"));
        let others = ChecksumAlgo::ALL.into_iter().filter(|o| *o != algo);
        assert!(others.clone().all(|o| g.header(o.header()).is_none()), "{algo:?}: one algorithm only");

        let parts = ObjectChecksum::multipart(algo, sizes.clone(), true);
        s.insert_object_with("b", "multi", Bytes::from(body.clone()), &parts);
        let part_sums: Vec<Vec<u8>> = body.chunks(10_000).map(|p| algo.compute(p)).collect();
        let g = send(a, "GET", "/b/multi", &[mode], b"").await.ok();
        assert_eq!(g.header(algo.header()), Some(algo.composite(&part_sums).as_str()), "{algo:?}");
        assert_eq!(g.header("x-amz-checksum-type"), Some("COMPOSITE"));
        assert!(s.object_etag("b", "multi").unwrap().ends_with("-3\""));

        let p = send(a, "GET", "/b/multi?partNumber=2", &[mode], b"").await.ok();
        assert_eq!(p.status, Some(206));
        assert_eq!(p.body, &body[10_000..20_000]);
        assert_eq!(p.header("content-range"), Some("bytes 10000-19999/30000"));
        assert_eq!(p.header("x-amz-mp-parts-count"), Some("3"));
        assert_eq!(p.header(algo.header()), Some(algo.encoded(&body[10_000..20_000]).as_str()));
        let p = send(a, "GET", "/b/multi?partNumber=4", &[], b"").await.ok();
        assert_eq!(p.status, Some(416));

        let attrs = [("x-amz-object-attributes", "ETag,Checksum,ObjectParts,ObjectSize"), ("x-amz-max-parts", "2")];
        let r = send(a, "GET", "/b/multi?attributes", &attrs, b"").await.ok();
        assert_eq!(r.status, Some(200));
        let doc = r.text();
        let etag = s.object_etag("b", "multi").unwrap();
        assert_eq!(xml_field(&doc, "ETag").as_deref(), Some(etag.trim_matches('"')));
        assert_eq!(xml_field(&doc, "ChecksumType").as_deref(), Some("COMPOSITE"));
        assert_eq!(xml_field(&doc, "IsTruncated").as_deref(), Some("true"));
        assert_eq!(xml_field(&doc, "NextPartNumberMarker").as_deref(), Some("2"));
        assert_eq!(xml_field(&doc, "PartsCount").as_deref(), Some("3"));
        assert_eq!(xml_fields(&doc, "Size"), ["10000", "10000"]);
        assert_eq!(xml_field(&doc, "ObjectSize").as_deref(), Some("30000"));
        let element = format!("Checksum{}", algo.name());
        let listed = xml_fields(&doc, &element);
        assert_eq!(listed[0], algo.composite(&part_sums), "{algo:?}: the object's value first");
        assert_eq!(&listed[1..], [algo.encode(&part_sums[0]), algo.encode(&part_sums[1])]);
        let more = [attrs[0], attrs[1], ("x-amz-part-number-marker", "2")];
        let doc = send(a, "GET", "/b/multi?attributes", &more, b"").await.ok().text();
        assert_eq!(xml_field(&doc, "IsTruncated").as_deref(), Some("false"));
        assert_eq!(xml_fields(&doc, "PartNumber"), ["3"]);
    }

    s.corrupt_object("b", "single", 5);
    let g = send(a, "GET", "/b/single", &[mode], b"").await.ok();
    assert_ne!(g.body, body, "the stored bytes are damaged");
    let algo = ChecksumAlgo::Sha256;
    assert_eq!(g.header(algo.header()), Some(algo.encoded(&body).as_str()), "the checksum is not");

    s.set_reject_attributes(true);
    let r = send(a, "GET", "/b/multi?attributes", &[("x-amz-object-attributes", "ObjectParts")], b"").await.ok();
    assert_eq!((r.status, xml_field(&r.text(), "Code").as_deref()), (Some(501), Some("NotImplemented")));
    assert_eq!(s.request_count(Op::Other), 11);
}
