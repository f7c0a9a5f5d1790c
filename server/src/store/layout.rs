//! Where everything lives under the root, and nothing else: the one place that turns bucket
//! names, keys and upload ids into paths.
//!
//! ```text
//! ROOT/BUCKET/                      a bucket: any directory with a valid bucket name
//! ROOT/BUCKET/<64 hex>              one object: the file is named by SHA-256(key)
//! ROOT/BUCKET/.tmp-<32 hex>         a write in progress (renamed over the object when done)
//! ROOT/BUCKET/.uploads/<32 hex>/    one multipart upload: `upload` (its record), `part-N`
//! ```
//!
//! Why a hash and not the key as a path: a path is not a key. `a//b`, `a/./b` and `a/b` are one
//! path, `x/../c` is `c`, `../other/f` is in another bucket, a key ending in `/` is a
//! directory, and a 1,024-byte key (S3's limit) is longer than a file name may be. The hash of
//! the key's bytes names exactly one file for every key and never leaves the bucket's
//! directory; the key itself is kept inside the file (see [`super::record`]), so listing
//! reads it back and a GET checks it. Dot-names cannot be hashes, so temporary files and
//! uploads never show up as objects; nor can they be buckets (a bucket name starts with a
//! letter or digit).

use std::path::{Path, PathBuf};

use s3s::crypto::{Checksum as _, Sha256};

/// The directory entry name of a multipart upload's home inside a bucket.
pub(crate) const UPLOADS_DIR: &str = ".uploads";
/// The record of an upload, inside its directory.
const UPLOAD_RECORD: &str = "upload";
/// Temporary files start with this (and are removed at start-up).
pub(crate) const TEMP_PREFIX: &str = ".tmp-";

/// Paths under one root. Every method validates what it is given, so a bad name is an error
/// rather than a path somewhere else.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    root: PathBuf,
}

impl Layout {
    pub(crate) fn new(root: PathBuf) -> Self {
        Layout { root }
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// `ROOT/BUCKET`, if `bucket` is a valid S3 bucket name.
    pub(crate) fn bucket(&self, bucket: &str) -> Option<PathBuf> {
        valid_bucket_name(bucket).then(|| self.root.join(bucket))
    }

    /// The file of `key` in `bucket` (which may not exist).
    pub(crate) fn object(&self, bucket: &str, key: &str) -> Option<PathBuf> {
        Some(self.bucket(bucket)?.join(object_file_name(key)))
    }

    /// A fresh temporary file name in `bucket`'s directory (same file system as the objects,
    /// so the final rename is atomic).
    pub(crate) fn temp(&self, bucket: &str) -> Option<PathBuf> {
        Some(self.bucket(bucket)?.join(format!("{TEMP_PREFIX}{:032x}", rand::random::<u128>())))
    }

    /// The directory holding `bucket`'s multipart uploads.
    pub(crate) fn uploads(&self, bucket: &str) -> Option<PathBuf> {
        Some(self.bucket(bucket)?.join(UPLOADS_DIR))
    }

    /// The directory of one upload, if `upload_id` has the form we hand out.
    pub(crate) fn upload(&self, bucket: &str, upload_id: &str) -> Option<PathBuf> {
        valid_upload_id(upload_id).then_some(())?;
        Some(self.uploads(bucket)?.join(upload_id))
    }

    /// The record (key, metadata, checksum settings) of an upload.
    pub(crate) fn upload_record(&self, bucket: &str, upload_id: &str) -> Option<PathBuf> {
        Some(self.upload(bucket, upload_id)?.join(UPLOAD_RECORD))
    }

    /// Part `number` (1..=10,000) of an upload.
    pub(crate) fn part(&self, bucket: &str, upload_id: &str, number: i32) -> Option<PathBuf> {
        (1..=10_000).contains(&number).then_some(())?;
        Some(self.upload(bucket, upload_id)?.join(format!("part-{number}")))
    }
}

/// A new upload id: 128 random bits in hex.
pub(crate) fn new_upload_id() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// The part number a part file's name stands for.
pub(crate) fn part_number(file_name: &str) -> Option<i32> {
    let n: i32 = file_name.strip_prefix("part-")?.parse().ok()?;
    (1..=10_000).contains(&n).then_some(n)
}

/// The file name of an object: lowercase hex SHA-256 of the key's bytes.
pub(crate) fn object_file_name(key: &str) -> String {
    hex::encode(Sha256::checksum(key.as_bytes()))
}

/// Whether a directory entry can be an object (64 lowercase hex digits).
pub(crate) fn is_object_file_name(name: &str) -> bool {
    name.len() == 64 && name.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn valid_upload_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// S3's general-purpose bucket naming rules (3–63 characters of lowercase letters, digits,
/// `.` and `-`, starting and ending with a letter or digit, no `..`). s3s checks names in the
/// request path already; this keeps the layout safe on its own (never `.`, `..`, `/` or a
/// dot-name of ours).
pub(crate) fn valid_bucket_name(name: &str) -> bool {
    let b = name.as_bytes();
    let edge = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    (3..=63).contains(&b.len())
        && edge(b[0])
        && edge(b[b.len() - 1])
        && b.iter().all(|&c| edge(c) || c == b'.' || c == b'-')
        && !name.contains("..")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Layout {
        Layout::new(PathBuf::from("/srv/root"))
    }

    /// Keys a path would merge, or that a path would take out of the bucket, each get a file
    /// of their own, directly in the bucket's directory.
    #[test]
    fn every_key_is_one_file_in_its_bucket() {
        let keys = [
            "a//b",
            "a/./b",
            "a/b",
            "/leading",
            "leading",
            "x/../c",
            "c",
            "../other/f",
            "trailing/",
            "trailing",
            ".",
            "..",
            "",
            "ü/日本",
            "ctl\u{1}",
            "nul\0",
        ];
        let mut seen = std::collections::HashSet::new();
        for key in keys {
            let path = layout().object("data", key).unwrap();
            assert_eq!(path.parent(), Some(Path::new("/srv/root/data")), "{key:?} left the bucket");
            let name = path.file_name().unwrap().to_str().unwrap();
            assert!(is_object_file_name(name), "{key:?} -> {name}");
            assert!(seen.insert(path.clone()), "{key:?} shares a file with another key");
        }
    }

    /// A 1,024-byte key (S3's limit) still names a 64-byte file.
    #[test]
    fn long_keys_have_short_names() {
        let key = "k/".repeat(512);
        let name = object_file_name(&key);
        assert_eq!(name.len(), 64);
        assert_ne!(name, object_file_name(&key[..1023]));
    }

    /// The hash is of the key's bytes, stable across runs (objects written by one server
    /// version are found by the next).
    #[test]
    fn names_are_stable() {
        assert_eq!(object_file_name(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(object_file_name("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    /// Bucket names that could be paths elsewhere (or our own dot-names) are refused.
    #[test]
    fn bucket_names_cannot_escape() {
        for bad in ["..", ".", "a/b", "../x", ".uploads", ".tmp-1", "ab", "UPPER", "a..b", "-ab", "ab-", ""] {
            assert!(layout().bucket(bad).is_none(), "{bad:?}");
            assert!(layout().object(bad, "k").is_none(), "{bad:?}");
        }
        for good in ["abc", "data", "gantry-1-2-3", "a.b.c", "0ab"] {
            assert_eq!(layout().bucket(good), Some(PathBuf::from("/srv/root").join(good)));
        }
    }

    /// Upload ids and part numbers must have our form: no `../` through them either.
    #[test]
    fn upload_paths_are_checked() {
        let id = new_upload_id();
        assert!(layout().upload("data", &id).unwrap().starts_with("/srv/root/data/.uploads"));
        assert!(layout().upload("data", "../../etc").is_none());
        assert!(layout().upload("data", &id.to_uppercase()).is_none());
        assert!(layout().part("data", &id, 0).is_none());
        assert!(layout().part("data", &id, 10_001).is_none());
        assert_eq!(layout().part("data", &id, 7).unwrap().file_name().unwrap(), "part-7");
        assert_eq!(part_number("part-7"), Some(7));
        assert_eq!(part_number("part-x"), None);
        assert!(!is_object_file_name(&format!("{TEMP_PREFIX}{id}")));
        assert!(!is_object_file_name(UPLOADS_DIR));
    }
}
