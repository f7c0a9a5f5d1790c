//! In-memory buckets, objects and multipart uploads.
//!
//! Objects are immutable `Arc<Object>` values holding their bytes as `Bytes`, so a GET clones a
//! pointer under the lock and streams zero-copy slices without holding it.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;

use crate::checksum::{crc64, ChecksumAlgo};

/// A raw checksum value (big-endian for CRCs).
pub(crate) type Value = Vec<u8>;

/// One stored object version.
#[derive(Debug)]
pub(crate) struct Object {
    pub data: Bytes,
    /// Quoted ETag, unique per stored version.
    pub etag: String,
    pub last_modified: SystemTime,
    /// The object's checksums as GET returns them. Full-object values: CRC64NVME first, then
    /// the upload's own algorithm when it was a different one. Composite ones: the
    /// algorithm's value over the part checksums (sent with a `-N` suffix).
    pub checksums: Vec<(ChecksumAlgo, Value)>,
    /// Whether [`Object::checksums`] are composite (`COMPOSITE`) or of the bytes (`FULL_OBJECT`).
    pub composite: bool,
    /// The upload parts of a multipart object (empty for a single PUT), as
    /// GetObjectAttributes lists them.
    pub parts: Vec<PartMeta>,
}

/// The checksum an object inserted with [`crate::FaultServer::insert_object_with`] has.
#[derive(Debug, Clone)]
pub struct ObjectChecksum {
    /// The one algorithm S3 keeps for the object (the upload's).
    pub algorithm: ChecksumAlgo,
    /// `None`: a single PUT (a full-object checksum). `Some`: a multipart upload with parts
    /// of these sizes, each with its checksum.
    pub part_sizes: Option<Vec<usize>>,
    /// For a multipart upload: the object's checksum is composite (the checksum of the part
    /// checksums, `-N`), what S3 stores for SHA1/SHA256 and by default for CRC32/CRC32C;
    /// otherwise it is of the bytes (`FULL_OBJECT`).
    pub composite: bool,
}

impl ObjectChecksum {
    /// A single PUT with `algorithm`.
    pub fn single(algorithm: ChecksumAlgo) -> Self {
        ObjectChecksum { algorithm, part_sizes: None, composite: false }
    }

    /// A multipart upload with parts of `sizes` and a `composite` or full-object checksum.
    pub fn multipart(algorithm: ChecksumAlgo, sizes: Vec<usize>, composite: bool) -> Self {
        ObjectChecksum { algorithm, part_sizes: Some(sizes), composite }
    }
}

/// One part of a multipart object: its size and its checksums (those the upload sent).
#[derive(Debug, Clone)]
pub(crate) struct PartMeta {
    pub size: u64,
    pub checksums: Vec<(ChecksumAlgo, Value)>,
}

/// An object's bytes and checksums, computed before taking the store lock.
pub(crate) struct Draft {
    data: Bytes,
    checksums: Vec<(ChecksumAlgo, Value)>,
    composite: bool,
    parts: Vec<PartMeta>,
    crc64: u64,
}

impl Draft {
    /// Computes CRC64NVME (S3 does for every new object) plus `extra` if given.
    pub(crate) fn new(data: Bytes, extra: Option<ChecksumAlgo>) -> Draft {
        let full = ChecksumAlgo::Crc64Nvme.compute(&data);
        let crc64 = crc64(&data);
        let mut checksums = vec![(ChecksumAlgo::Crc64Nvme, full)];
        if let Some(a) = extra.filter(|a| *a != ChecksumAlgo::Crc64Nvme) {
            checksums.push((a, a.compute(&data)));
        }
        Draft { data, checksums, composite: false, parts: Vec::new(), crc64 }
    }

    /// Uses an already verified/known checksum instead of recomputing it.
    pub(crate) fn with_known(data: Bytes, known: Option<(ChecksumAlgo, Value)>) -> Draft {
        match known {
            Some((ChecksumAlgo::Crc64Nvme, v)) => {
                let crc64 = v.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b));
                Draft {
                    data,
                    checksums: vec![(ChecksumAlgo::Crc64Nvme, v)],
                    composite: false,
                    parts: Vec::new(),
                    crc64,
                }
            }
            Some((a, v)) => {
                let mut d = Draft::new(data, None);
                d.checksums.push((a, v));
                d
            }
            None => Draft::new(data, None),
        }
    }

    /// Exactly the given checksums, of the given kind, with these parts (see
    /// [`crate::ObjectChecksum`]).
    pub(crate) fn exact(
        data: Bytes,
        checksums: Vec<(ChecksumAlgo, Value)>,
        composite: bool,
        parts: Vec<PartMeta>,
    ) -> Draft {
        let crc64 = crc64(&data);
        Draft { data, checksums, composite, parts, crc64 }
    }

    /// Records the upload parts of a multipart object.
    pub(crate) fn with_parts(mut self, parts: Vec<PartMeta>) -> Draft {
        self.parts = parts;
        self
    }
}

/// One uploaded part.
#[derive(Debug, Clone)]
pub(crate) struct Part {
    pub data: Bytes,
    pub etag: String,
}

/// An open multipart upload.
#[derive(Debug)]
pub(crate) struct Upload {
    pub bucket: String,
    pub key: String,
    pub initiated: SystemTime,
    pub algorithm: Option<ChecksumAlgo>,
    pub checksum_type: Option<String>,
    pub parts: BTreeMap<u32, Part>,
}

struct Bucket {
    objects: BTreeMap<String, Arc<Object>>,
    created: SystemTime,
}

/// Error codes the store reports (S3 error `Code` values).
pub(crate) type Code = &'static str;

/// Where a listing resumes: after a key, or after a whole common prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Marker {
    Key(String),
    Prefix(String),
}

/// One page of a listing.
pub(crate) struct Page {
    pub objects: Vec<(String, Arc<Object>)>,
    pub prefixes: Vec<String>,
    pub next: Option<Marker>,
}

/// All buckets and uploads.
#[derive(Default)]
pub(crate) struct Store {
    buckets: BTreeMap<String, Bucket>,
    uploads: BTreeMap<String, Upload>,
    version: u64,
    upload_seq: u64,
}

impl Store {
    fn next_version(&mut self) -> u64 {
        self.version += 1;
        self.version
    }

    /// Creates a bucket; false if it existed.
    pub(crate) fn create_bucket(&mut self, name: &str) -> bool {
        if self.buckets.contains_key(name) {
            return false;
        }
        self.buckets.insert(name.to_string(), Bucket { objects: BTreeMap::new(), created: SystemTime::now() });
        true
    }

    pub(crate) fn has_bucket(&self, name: &str) -> bool {
        self.buckets.contains_key(name)
    }

    /// (name, creation time) of every bucket.
    pub(crate) fn buckets(&self) -> Vec<(String, SystemTime)> {
        self.buckets.iter().map(|(n, b)| (n.clone(), b.created)).collect()
    }

    pub(crate) fn delete_bucket(&mut self, name: &str) -> Result<(), Code> {
        let b = self.buckets.get(name).ok_or("NoSuchBucket")?;
        if !b.objects.is_empty() || self.uploads.values().any(|u| u.bucket == name) {
            return Err("BucketNotEmpty");
        }
        self.buckets.remove(name);
        Ok(())
    }

    /// Stores an object (creating the bucket when `create` is set); `parts` makes a multipart
    /// style `"...-N"` ETag.
    pub(crate) fn put(
        &mut self,
        bucket: &str,
        key: &str,
        draft: Draft,
        parts: Option<usize>,
        create: bool,
    ) -> Result<Arc<Object>, Code> {
        if create {
            self.create_bucket(bucket);
        }
        let version = self.next_version();
        let b = self.buckets.get_mut(bucket).ok_or("NoSuchBucket")?;
        let etag = match parts {
            Some(n) => format!("\"{:016x}{version:016x}-{n}\"", draft.crc64),
            None => format!("\"{:016x}{version:016x}\"", draft.crc64),
        };
        let obj = Arc::new(Object {
            data: draft.data,
            etag,
            last_modified: SystemTime::now(),
            checksums: draft.checksums,
            composite: draft.composite,
            parts: draft.parts,
        });
        b.objects.insert(key.to_string(), obj.clone());
        Ok(obj)
    }

    /// Flips one stored byte at `offset`, keeping the ETag and checksums: bit rot at rest.
    pub(crate) fn corrupt(&mut self, bucket: &str, key: &str, offset: usize) -> Result<(), Code> {
        let b = self.buckets.get_mut(bucket).ok_or("NoSuchBucket")?;
        let obj = b.objects.get_mut(key).ok_or("NoSuchKey")?;
        let mut data = obj.data.to_vec();
        if let Some(byte) = data.get_mut(offset) {
            *byte ^= 0x01;
        }
        *obj = Arc::new(Object {
            data: Bytes::from(data),
            etag: obj.etag.clone(),
            last_modified: obj.last_modified,
            checksums: obj.checksums.clone(),
            composite: obj.composite,
            parts: obj.parts.clone(),
        });
        Ok(())
    }

    pub(crate) fn get(&self, bucket: &str, key: &str) -> Result<Arc<Object>, Code> {
        let b = self.buckets.get(bucket).ok_or("NoSuchBucket")?;
        b.objects.get(key).cloned().ok_or("NoSuchKey")
    }

    /// Deletes a key; deleting a missing key succeeds (like S3).
    pub(crate) fn delete(&mut self, bucket: &str, key: &str) -> Result<(), Code> {
        let b = self.buckets.get_mut(bucket).ok_or("NoSuchBucket")?;
        b.objects.remove(key);
        Ok(())
    }

    /// One page of keys under `prefix` after `marker`, grouping by `delimiter`.
    pub(crate) fn list(
        &self,
        bucket: &str,
        prefix: &str,
        delimiter: Option<&str>,
        marker: Option<&Marker>,
        max_keys: usize,
    ) -> Result<Page, Code> {
        let b = self.buckets.get(bucket).ok_or("NoSuchBucket")?;
        let lower = match marker {
            Some(Marker::Key(k) | Marker::Prefix(k)) if k.as_str() >= prefix => Bound::Excluded(k.clone()),
            _ => Bound::Included(prefix.to_string()),
        };
        let mut page = Page { objects: Vec::new(), prefixes: Vec::new(), next: None };
        let mut count = 0usize;
        let mut last: Option<Marker> = None;
        for (key, obj) in b.objects.range((lower, Bound::Unbounded)) {
            if !key.starts_with(prefix) {
                break;
            }
            if let Some(Marker::Prefix(p)) = marker {
                if key.starts_with(p.as_str()) {
                    continue;
                }
            }
            let group = delimiter.filter(|d| !d.is_empty()).and_then(|d| {
                let rest = &key[prefix.len()..];
                rest.find(d).map(|i| key[..prefix.len() + i + d.len()].to_string())
            });
            if let Some(g) = &group {
                if page.prefixes.last() == Some(g) {
                    continue;
                }
            }
            if count == max_keys {
                page.next = last;
                return Ok(page);
            }
            count += 1;
            match group {
                Some(g) => {
                    last = Some(Marker::Prefix(g.clone()));
                    page.prefixes.push(g);
                }
                None => {
                    last = Some(Marker::Key(key.clone()));
                    page.objects.push((key.clone(), obj.clone()));
                }
            }
        }
        Ok(page)
    }

    pub(crate) fn create_upload(
        &mut self,
        bucket: &str,
        key: &str,
        algorithm: Option<ChecksumAlgo>,
        checksum_type: Option<String>,
    ) -> Result<String, Code> {
        if !self.has_bucket(bucket) {
            return Err("NoSuchBucket");
        }
        self.upload_seq += 1;
        let id = format!("gf-{:08}-{:016x}", self.upload_seq, crc64(key.as_bytes()));
        let upload = Upload {
            bucket: bucket.to_string(),
            key: key.to_string(),
            initiated: SystemTime::now(),
            algorithm,
            checksum_type,
            parts: BTreeMap::new(),
        };
        self.uploads.insert(id.clone(), upload);
        Ok(id)
    }

    /// The upload `id` if it belongs to bucket/key.
    pub(crate) fn upload(&self, bucket: &str, key: &str, id: &str) -> Result<&Upload, Code> {
        if !self.has_bucket(bucket) {
            return Err("NoSuchBucket");
        }
        self.uploads.get(id).filter(|u| u.bucket == bucket && u.key == key).ok_or("NoSuchUpload")
    }

    /// Stores a part (replacing an earlier one with the same number) and returns its ETag.
    pub(crate) fn put_part(
        &mut self,
        bucket: &str,
        key: &str,
        id: &str,
        number: u32,
        data: Bytes,
        crc64: u64,
    ) -> Result<String, Code> {
        self.upload(bucket, key, id)?;
        let version = self.next_version();
        let etag = format!("\"{crc64:016x}{version:016x}\"");
        let upload = self.uploads.get_mut(id).ok_or("NoSuchUpload")?;
        upload.parts.insert(number, Part { data, etag: etag.clone() });
        Ok(etag)
    }

    pub(crate) fn remove_upload(&mut self, bucket: &str, key: &str, id: &str) -> Result<Upload, Code> {
        self.upload(bucket, key, id)?;
        self.uploads.remove(id).ok_or("NoSuchUpload")
    }

    /// The bucket's open uploads under `prefix` as (key, upload id, upload), sorted by key.
    pub(crate) fn list_uploads(&self, bucket: &str, prefix: &str) -> Result<Vec<(String, String, &Upload)>, Code> {
        if !self.has_bucket(bucket) {
            return Err("NoSuchBucket");
        }
        let mut v: Vec<_> = self
            .uploads
            .iter()
            .filter(|(_, u)| u.bucket == bucket && u.key.starts_with(prefix))
            .map(|(id, u)| (u.key.clone(), id.clone(), u))
            .collect();
        v.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        Ok(v)
    }

    pub(crate) fn open_uploads(&self, bucket: &str) -> usize {
        self.uploads.values().filter(|u| u.bucket == bucket).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store_with(keys: &[&str]) -> Store {
        let mut s = Store::default();
        s.create_bucket("b");
        for k in keys {
            s.put("b", k, Draft::new(Bytes::from_static(b"x"), None), None, false).unwrap();
        }
        s
    }

    fn names(p: &Page) -> Vec<String> {
        p.objects.iter().map(|(k, _)| k.clone()).chain(p.prefixes.iter().cloned()).collect()
    }

    #[test]
    fn list_pages_and_prefixes() {
        let s = store_with(&["a/1", "a/2", "b", "c/x/1", "c/y", "d"]);
        let p = s.list("b", "", None, None, 4).unwrap();
        assert_eq!(names(&p), ["a/1", "a/2", "b", "c/x/1"]);
        let p2 = s.list("b", "", None, p.next.as_ref(), 4).unwrap();
        assert_eq!(names(&p2), ["c/y", "d"]);
        assert!(p2.next.is_none());

        let p = s.list("b", "", Some("/"), None, 2).unwrap();
        assert_eq!(names(&p), ["b", "a/"]);
        assert_eq!(p.next, Some(Marker::Key("b".into())));
        let p = s.list("b", "", Some("/"), p.next.as_ref(), 2).unwrap();
        assert_eq!(names(&p), ["d", "c/"]);
        assert!(p.next.is_none());

        let p = s.list("b", "c/", Some("/"), None, 1).unwrap();
        assert_eq!(names(&p), ["c/x/"]);
        let p = s.list("b", "c/", Some("/"), p.next.as_ref(), 1).unwrap();
        assert_eq!(names(&p), ["c/y"]);
        assert!(p.next.is_none());
    }

    #[test]
    fn etag_changes_on_overwrite() {
        let mut s = store_with(&[]);
        let a = s.put("b", "k", Draft::new(Bytes::from_static(b"same"), None), None, false).unwrap();
        let b = s.put("b", "k", Draft::new(Bytes::from_static(b"same"), None), None, false).unwrap();
        assert_ne!(a.etag, b.etag);
        assert!(a.etag.starts_with('"') && a.etag.ends_with('"') && a.etag.len() == 34);
    }
}
