//! Awkward keys: S3 keys are any UTF-8 up to 1,024 bytes, and a store must keep each one a
//! separate object with its exact bytes. A file-system store that turns keys into paths gets
//! this wrong in ways a plain-key test never sees: `a//b`, `a/./b` and `a/b` become one file,
//! `x/../c` is `c`, `../other/f` leaves its bucket, long keys exceed a file name, and a key
//! ending in `/` becomes a directory. These cases check that every key round-trips byte-exact,
//! that a listing returns exactly the keys written, and that keys a path would merge stay two
//! objects.
//!
//! MinIO maps keys to paths too: it refuses `//`, `.` and `..` segments and stores `/leading`
//! as `leading`. Those keys are skipped for MinIO only (see [`departure`], which says what
//! MinIO answers), so the embedded server is still held to S3's behaviour.

use std::collections::BTreeSet;

use gantry::{ListOptions, MIB};

use crate::{pattern, sha256, Backend};

/// The awkward keys every store must keep apart and intact.
pub fn awkward_keys() -> Vec<String> {
    let mut keys: Vec<String> = [
        "a//b",
        "a/./b",
        "a/b",
        "/leading",
        "leading",
        "x/../c",
        "c",
        "../other/f",
        "pct%41",
        "plus+x",
        "sp ace",
        "ü/日本",
        "ctl\u{1}key",
        "trailing/",
        "?q=1&r",
        "#hash",
        "amp&lt;<tag>\"'",
    ]
    .iter()
    .map(|k| k.to_string())
    .collect();
    // 1,024 bytes, S3's limit, with slashes so a path-mapping store also meets long names.
    let mut long = String::new();
    while long.len() < 1024 {
        long.push_str(if long.len() % 100 == 99 { "/" } else { "k" });
    }
    long.truncate(1024);
    keys.push(long);
    keys
}

/// How a backend departs from S3 for a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Departure {
    /// The PUT is refused (checked: it must still be, so a change shows up here).
    Refused(&'static str),
    /// Accepted, but stored as another key: not written, as it would merge with that one.
    Merged(&'static str),
}

/// Keys `backend` is known to handle differently from S3, and what it does instead.
fn departure(backend: &Backend, key: &str) -> Option<Departure> {
    if !backend.name.starts_with("minio") {
        return None;
    }
    // MinIO maps keys to paths. Seen with MinIO 2026-02 (see tests/scripts/minio.sh):
    if key.contains("//") {
        return Some(Departure::Refused("400 XMinioInvalidObjectName: empty path segment"));
    }
    if key.split('/').any(|s| s == "." || s == "..") {
        return Some(Departure::Refused("400 XMinioInvalidResourceName: `.` or `..` segment"));
    }
    if key.starts_with('/') {
        return Some(Departure::Merged("200, but `/leading` is stored and listed as `leading`"));
    }
    None
}

/// Every awkward key round-trips byte-exact, with its own bytes, and the listing of the bucket
/// is exactly the set of keys written.
pub fn awkward_keys_round_trip(b: &Backend) {
    let client = b.client(|c| c);
    let bucket = b.bucket(&client);
    let keys = awkward_keys();
    let mut written = BTreeSet::new();
    client.block_on(async {
        for (i, key) in keys.iter().enumerate() {
            let data = pattern(100 + i, i as u64 + 1);
            match departure(b, key) {
                Some(Departure::Merged(_)) => continue,
                Some(Departure::Refused(why)) => {
                    let put = client.put(&bucket, key, data.clone()).await;
                    assert!(put.is_err(), "{}: {key:?} was expected to be refused ({why})", b.name);
                    continue;
                }
                None => {}
            }
            client.put(&bucket, key, data.clone()).await.unwrap_or_else(|e| panic!("{}: PUT {key:?}: {e}", b.name));
            written.insert(key.clone());
        }
        for (i, key) in keys.iter().enumerate() {
            if !written.contains(key) {
                continue;
            }
            let want = pattern(100 + i, i as u64 + 1);
            let mut buf = vec![0u8; want.len()];
            let info = client.get_into(&bucket, key, &mut buf).await.unwrap_or_else(|e| panic!("GET {key:?}: {e}"));
            assert_eq!(info.size, want.len() as u64, "{}: size of {key:?}", b.name);
            assert_eq!(sha256(&buf), sha256(&want), "{}: bytes of {key:?}", b.name);
            let head = client.head_object(&bucket, key).await.unwrap_or_else(|e| panic!("HEAD {key:?}: {e}"));
            assert_eq!(head.size, want.len() as u64, "{}: HEAD size of {key:?}", b.name);
        }
        let listed: BTreeSet<String> =
            client.list_all(&bucket, None).await.unwrap().into_iter().map(|o| o.key).collect();
        assert_eq!(listed, written, "{}: the listing is exactly the keys written", b.name);
        // Listed in byte order, page by page.
        let mut options = ListOptions::default().max_keys(4);
        let mut paged = Vec::new();
        loop {
            let page = client.list_objects(&bucket, &options).await.unwrap();
            paged.extend(page.objects.into_iter().map(|o| o.key));
            match page.next_continuation_token {
                Some(t) => options.continuation_token = Some(t),
                None => break,
            }
        }
        assert_eq!(paged, written.iter().cloned().collect::<Vec<_>>(), "{}: byte order across pages", b.name);
        for key in &written {
            client.delete_object(&bucket, key).await.unwrap_or_else(|e| panic!("DELETE {key:?}: {e}"));
        }
        assert!(client.list_all(&bucket, None).await.unwrap().is_empty(), "{}: all deleted", b.name);
    });
}

/// Keys a path would merge are two objects: writing one leaves the other's bytes alone, and
/// deleting one leaves the other.
pub fn colliding_keys_stay_apart(b: &Backend) {
    let client = b.client(|c| c);
    let bucket = b.bucket(&client);
    let pairs = [("a/b", "a//b"), ("a/b", "a/./b"), ("leading", "/leading"), ("c", "x/../c"), ("f", "../f")];
    client.block_on(async {
        for (n, (plain, other)) in pairs.into_iter().enumerate() {
            if departure(b, other).is_some() {
                continue;
            }
            let (one, two) = (pattern(64, 2 * n as u64 + 1), pattern(64, 2 * n as u64 + 2));
            client.put(&bucket, plain, one.clone()).await.unwrap();
            client.put(&bucket, other, two.clone()).await.unwrap();
            let mut buf = vec![0u8; 64];
            client.get_into(&bucket, plain, &mut buf).await.unwrap();
            assert_eq!(buf, one, "{}: writing {other:?} changed {plain:?}", b.name);
            client.get_into(&bucket, other, &mut buf).await.unwrap();
            assert_eq!(buf, two, "{}: {other:?}", b.name);
            client.delete_object(&bucket, other).await.unwrap();
            client.get_into(&bucket, plain, &mut buf).await.unwrap_or_else(|e| {
                panic!("{}: deleting {other:?} deleted {plain:?}: {e}", b.name);
            });
            client.delete_object(&bucket, plain).await.unwrap();
        }
    });
}

/// A key that names another bucket's path stays in its own bucket.
pub fn keys_stay_in_their_bucket(b: &Backend) {
    let client = b.client(|c| c);
    let (data, other) = (b.bucket(&client), b.bucket(&client));
    let key = format!("../{other}/f");
    if departure(b, &key).is_some() {
        return;
    }
    client.block_on(async {
        client.put(&data, &key, vec![7u8; 10]).await.unwrap();
        assert!(client.list_all(&other, None).await.unwrap().is_empty(), "{}: {key:?} landed in {other}", b.name);
        let listed: Vec<String> = client.list_all(&data, None).await.unwrap().into_iter().map(|o| o.key).collect();
        assert_eq!(listed, vec![key.clone()], "{}", b.name);
    });
}

/// A multipart upload of an awkward key completes under that key, and an aborted one leaves
/// no upload behind (asked through ListMultipartUploads on every backend).
pub fn awkward_key_multipart(b: &Backend) {
    let client = b.client(|c| c);
    let bucket = b.bucket(&client);
    let key = "mp/sp ace+pct%41/ü";
    let data = pattern((2 * crate::PART + MIB) as usize, 41);
    client.block_on(async {
        let mut up = client.upload(&bucket, key);
        up.write(&data).await.unwrap();
        up.complete().await.unwrap();
        let mut buf = vec![0u8; data.len()];
        client.get_into(&bucket, key, &mut buf).await.unwrap();
        assert_eq!(sha256(&buf), sha256(&data));
        let mut up = client.upload(&bucket, "aborted/ü");
        up.write(&data).await.unwrap();
        assert_eq!(client.list_multipart_uploads(&bucket, None).await.unwrap().len(), 1, "{}", b.name);
        up.abort().await.unwrap();
        assert!(client.list_multipart_uploads(&bucket, None).await.unwrap().is_empty(), "{}", b.name);
        let listed: Vec<String> = client.list_all(&bucket, None).await.unwrap().into_iter().map(|o| o.key).collect();
        assert_eq!(listed, vec![key.to_string()], "{}", b.name);
    });
}
