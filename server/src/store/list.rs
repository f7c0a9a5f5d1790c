//! ListObjectsV2 and ListObjects (v1): keys in byte order, prefix, delimiter (CommonPrefixes),
//! start-after / marker, max-keys, continuation tokens and `encoding-type=url`.
//!
//! File names are hashes, so a listing reads the key back from every object's record and
//! sorts: O(objects in the bucket) per page, which is fine for a test and demo server. Only
//! files named like objects are read, so temporary files and uploads are never listed.
//!
//! `encoding-type=url` matters for keys XML 1.0 cannot carry (`\x01`) and for clients that
//! decode every listed key (botocore asks for it by default and `unquote_plus`es the answer,
//! so a store that ignores it turns `pct%41` into `pctA` and `plus+x` into `plus x`). s3s does
//! not encode, so this module does: `+` for space and `%XX` for every byte but letters,
//! digits and `-_.~/`, as S3 and MinIO answer.
//!
//! Continuation tokens are opaque: the base64 of the last key or common prefix of the page,
//! so the next page starts after it.

use std::time::SystemTime;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result};

use super::checksum::Stored;
use super::record;
use super::{blocking, internal, layout, timestamp, ObjectMeta, Store};

/// What a listing shows of one object.
struct Entry {
    key: String,
    size: u64,
    etag: String,
    modified: SystemTime,
    checksum: Option<Stored>,
}

/// Bytes left as they are in a URL-encoded listing (everything else is `%XX`, space `+`).
const KEEP: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~').remove(b'/');

/// S3's `encoding-type=url` form of a key or prefix.
pub(crate) fn url_encode(s: &str) -> String {
    // `%20` first, then `+`: a literal `+` is already `%2B` at this point.
    utf8_percent_encode(s, KEEP).to_string().replace("%20", "+")
}

/// `url_encode` when the request asked for it.
pub(crate) fn url_encode_if(yes: bool, s: Option<String>) -> Option<String> {
    if yes {
        s.map(|s| url_encode(&s))
    } else {
        s
    }
}

impl Store {
    /// Every object of `bucket` whose key starts with `prefix`, sorted by key bytes.
    async fn entries(&self, bucket: &str, prefix: &str) -> S3Result<Vec<Entry>> {
        let dir = self.bucket_dir(bucket).await?;
        let prefix = prefix.to_owned();
        blocking(move || {
            let mut out = Vec::new();
            for entry in std::fs::read_dir(&dir).map_err(internal)? {
                let entry = entry.map_err(internal)?;
                if !layout::is_object_file_name(&entry.file_name().to_string_lossy()) {
                    continue;
                }
                match record::open::<ObjectMeta>(&entry.path()) {
                    Ok(r) => {
                        if r.meta.key.starts_with(&prefix) {
                            out.push(Entry {
                                size: r.data_len,
                                modified: r.modified,
                                key: r.meta.key,
                                etag: r.meta.etag,
                                checksum: r.meta.checksum,
                            });
                        }
                    }
                    // Deleted since the directory was read: not listed.
                    Err(e) if e.is_not_found() => {}
                    Err(e) => tracing::warn!("skipping {} in a listing: {e}", entry.path().display()),
                }
            }
            out.sort_by(|a, b| a.key.cmp(&b.key));
            Ok(out)
        })
        .await?
    }
}

/// One page: the objects and common prefixes after `after`, at most `max` of them together.
struct Page<'a> {
    objects: Vec<&'a Entry>,
    prefixes: Vec<String>,
    /// The last key or prefix of the page, when more follow.
    next: Option<String>,
}

fn page<'a>(entries: &'a [Entry], prefix: &str, delimiter: Option<&str>, after: Option<&str>, max: usize) -> Page<'a> {
    let mut p = Page { objects: Vec::new(), prefixes: Vec::new(), next: None };
    let mut last: Option<String> = None;
    for e in entries {
        if !e.key.starts_with(prefix) || after.is_some_and(|a| e.key.as_str() <= a) {
            continue;
        }
        let common = delimiter.and_then(|d| {
            let rest = &e.key[prefix.len()..];
            rest.find(d).map(|i| format!("{prefix}{}", &rest[..i + d.len()]))
        });
        // Keys inside a common prefix already given (on this page or, through `after`, on
        // an earlier one) are not listed again.
        if let Some(cp) = &common {
            if last.as_deref() == Some(cp.as_str()) || after == Some(cp.as_str()) {
                continue;
            }
        }
        if p.objects.len() + p.prefixes.len() >= max {
            p.next = last;
            return p;
        }
        match common {
            Some(cp) => {
                last = Some(cp.clone());
                p.prefixes.push(cp);
            }
            None => {
                last = Some(e.key.clone());
                p.objects.push(e);
            }
        }
    }
    p
}

fn object(e: &Entry, enc: bool) -> Object {
    Object {
        key: Some(if enc { url_encode(&e.key) } else { e.key.clone() }),
        size: Some(e.size as i64),
        e_tag: Some(ETag::Strong(e.etag.clone())),
        last_modified: Some(timestamp(e.modified)),
        storage_class: Some(ObjectStorageClass::from_static(ObjectStorageClass::STANDARD)),
        checksum_algorithm: e.checksum.as_ref().map(|c| vec![ChecksumAlgorithm::from(c.algorithm.name().to_string())]),
        checksum_type: e.checksum.as_ref().map(|c| ChecksumType::from(c.kind.name().to_string())),
        ..Default::default()
    }
}

fn max_keys(requested: Option<i32>) -> S3Result<usize> {
    match requested {
        Some(n) if n < 0 => Err(s3_error!(InvalidArgument, "max-keys must not be negative")),
        Some(n) => Ok((n as usize).min(1000)),
        None => Ok(1000),
    }
}

fn wants_url(e: Option<&EncodingType>) -> bool {
    e.is_some_and(|e| e.as_str() == EncodingType::URL)
}

fn common_prefixes(prefixes: Vec<String>, enc: bool) -> Option<Vec<CommonPrefix>> {
    (!prefixes.is_empty())
        .then(|| prefixes.into_iter().map(|p| CommonPrefix { prefix: url_encode_if(enc, Some(p)) }).collect())
}

pub(super) async fn list_objects_v2(
    store: &Store,
    req: S3Request<ListObjectsV2Input>,
) -> S3Result<S3Response<ListObjectsV2Output>> {
    let input = req.input;
    let prefix = input.prefix.clone().unwrap_or_default();
    let delimiter = input.delimiter.clone().filter(|d| !d.is_empty());
    let max = max_keys(input.max_keys)?;
    let token = match &input.continuation_token {
        Some(t) => Some(
            URL_SAFE_NO_PAD
                .decode(t)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .ok_or_else(|| s3_error!(InvalidArgument, "The continuation token provided is incorrect"))?,
        ),
        None => None,
    };
    // The later of start-after and the token (a token always comes from a later page).
    let after = match (token, input.start_after.clone()) {
        (Some(t), Some(s)) => Some(t.max(s)),
        (t, s) => t.or(s),
    };
    let entries = store.entries(&input.bucket, &prefix).await?;
    let p = page(&entries, &prefix, delimiter.as_deref(), after.as_deref(), max);
    let enc = wants_url(input.encoding_type.as_ref());
    let out = ListObjectsV2Output {
        name: Some(input.bucket),
        key_count: Some((p.objects.len() + p.prefixes.len()) as i32),
        max_keys: Some(max as i32),
        is_truncated: Some(p.next.is_some()),
        next_continuation_token: p.next.map(|n| URL_SAFE_NO_PAD.encode(n)),
        contents: Some(p.objects.into_iter().map(|e| object(e, enc)).collect()),
        common_prefixes: common_prefixes(p.prefixes, enc),
        continuation_token: input.continuation_token,
        prefix: url_encode_if(enc, input.prefix),
        delimiter: url_encode_if(enc, input.delimiter),
        start_after: url_encode_if(enc, input.start_after),
        encoding_type: input.encoding_type,
        ..Default::default()
    };
    Ok(S3Response::new(out))
}

pub(super) async fn list_objects(
    store: &Store,
    req: S3Request<ListObjectsInput>,
) -> S3Result<S3Response<ListObjectsOutput>> {
    let input = req.input;
    let prefix = input.prefix.clone().unwrap_or_default();
    let delimiter = input.delimiter.clone().filter(|d| !d.is_empty());
    let max = max_keys(input.max_keys)?;
    let entries = store.entries(&input.bucket, &prefix).await?;
    let p = page(&entries, &prefix, delimiter.as_deref(), input.marker.as_deref(), max);
    let enc = wants_url(input.encoding_type.as_ref());
    let out = ListObjectsOutput {
        name: Some(input.bucket),
        max_keys: Some(max as i32),
        is_truncated: Some(p.next.is_some()),
        next_marker: url_encode_if(enc, p.next),
        contents: Some(p.objects.into_iter().map(|e| object(e, enc)).collect()),
        common_prefixes: common_prefixes(p.prefixes, enc),
        marker: url_encode_if(enc, input.marker),
        prefix: url_encode_if(enc, input.prefix),
        delimiter: url_encode_if(enc, input.delimiter),
        encoding_type: input.encoding_type,
        ..Default::default()
    };
    Ok(S3Response::new(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(keys: &[&str]) -> Vec<Entry> {
        let mut v: Vec<Entry> = keys
            .iter()
            .map(|k| Entry {
                key: k.to_string(),
                size: 0,
                etag: String::new(),
                modified: SystemTime::UNIX_EPOCH,
                checksum: None,
            })
            .collect();
        v.sort_by(|a, b| a.key.cmp(&b.key));
        v
    }

    fn keys(p: &Page<'_>) -> Vec<String> {
        p.objects.iter().map(|e| e.key.clone()).collect()
    }

    #[test]
    fn url_encoding_is_s3s() {
        assert_eq!(url_encode("pct%41"), "pct%2541");
        assert_eq!(url_encode("plus+x"), "plus%2Bx");
        assert_eq!(url_encode("sp ace"), "sp+ace");
        assert_eq!(url_encode("a/b-c_d.e~f"), "a/b-c_d.e~f");
        assert_eq!(url_encode("ctl\u{1}"), "ctl%01");
        assert_eq!(url_encode("ü"), "%C3%BC");
    }

    /// Pages of two over keys and common prefixes never repeat or skip an item.
    #[test]
    fn pages_with_delimiter_resume_after_prefixes() {
        let e = entries(&["a/1", "a/2", "b", "c/1", "c/2/x", "d"]);
        let mut after: Option<String> = None;
        let mut seen = Vec::new();
        loop {
            let p = page(&e, "", Some("/"), after.as_deref(), 2);
            seen.extend(keys(&p));
            seen.extend(p.prefixes.iter().cloned());
            match p.next {
                Some(n) => after = Some(n),
                None => break,
            }
        }
        seen.sort();
        assert_eq!(seen, ["a/", "b", "c/", "d"]);
    }

    #[test]
    fn prefix_start_after_and_byte_order() {
        let e = entries(&["p/b", "p/a", "p/a/x", "q", "p/\u{1}", "p/ü"]);
        let p = page(&e, "p/", Some("/"), None, 1000);
        assert_eq!(keys(&p), ["p/\u{1}", "p/a", "p/b", "p/ü"]);
        assert_eq!(p.prefixes, ["p/a/"]);
        let p = page(&e, "p/", None, Some("p/a/x"), 1000);
        assert_eq!(keys(&p), ["p/b", "p/ü"]);
        let p = page(&e, "p/", None, None, 0);
        assert!(keys(&p).is_empty() && p.next.is_none());
    }
}
