//! Multipart uploads: Create, UploadPart(Copy), ListParts, Complete, Abort and
//! ListMultipartUploads.
//!
//! An upload is a directory `BUCKET/.uploads/ID/` holding its record (key, headers, checksum
//! algorithm and type) and one record file per part (`part-N`: the bytes, then size, MD5 and
//! checksum). Parts are written like objects, through a temporary file and a rename, so many
//! parts of one upload, or two uploads of one part number, can arrive at once: the last
//! rename wins. Complete checks the listed parts (ETags, order, checksums), concatenates them
//! with the kernel's copy into a temporary object file, and renames that into place; the ETag
//! and the checksum come from what the parts stored, so no byte is hashed twice.
//!
//! Parts smaller than S3's 5 MiB minimum are accepted (S3 refuses all but the last with
//! `EntityTooSmall`) so that tests can use small parts.

use std::path::PathBuf;

use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result};
use serde::{Deserialize, Serialize};

use super::checksum::{self, claimed_fields, set_checksum_fields, Algorithm, Kind, Stored};
use super::list::url_encode_if;
use super::object::{check_copy_conditions, check_write_conditions, copy_source, request_algorithm, trailer_claims};
use super::record::{self, Record, TempFile};
use super::{
    blocking, body, internal, layout, no_such_upload, open_keyed, timestamp, Headers, ObjectMeta, PartMeta, Store,
};

/// The record of an upload (its file holds no data, only this).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct UploadMeta {
    key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    algorithm: Option<Algorithm>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kind: Option<Kind>,
    #[serde(default, flatten)]
    headers: Headers,
}

impl UploadMeta {
    /// The algorithm parts are hashed with: the upload's, or CRC64NVME (the FULL_OBJECT
    /// checksum S3 gives objects uploaded without one).
    fn part_algorithm(&self) -> Algorithm {
        self.algorithm.unwrap_or(Algorithm::Crc64Nvme)
    }

    fn checksum_type(&self) -> Option<ChecksumType> {
        self.algorithm.map(|a| ChecksumType::from(self.kind.unwrap_or(a.default_kind()).name().to_string()))
    }
}

impl Store {
    /// The open record of upload `id` of `bucket/key`, or `NoSuchBucket` / `NoSuchUpload`.
    async fn open_upload(&self, bucket: &str, key: &str, id: &str) -> S3Result<Record<UploadMeta>> {
        self.bucket_dir(bucket).await?;
        let path = self.layout.upload_record(bucket, id).ok_or_else(no_such_upload)?;
        open_keyed(path, key, no_such_upload).await
    }

    /// Renames `temp` to `dest` inside an upload (`NoSuchUpload` when it was aborted meanwhile).
    async fn commit_in_upload<M: Serialize + Send + 'static>(
        &self,
        temp: TempFile,
        meta: M,
        dest: PathBuf,
    ) -> S3Result<()> {
        blocking(move || match temp.commit(&meta, &dest) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(no_such_upload()),
            Err(e) => Err(internal(e)),
        })
        .await?
    }

    /// Every part file of an upload, by part number.
    async fn read_parts(&self, bucket: &str, id: &str) -> S3Result<Vec<Record<PartMeta>>> {
        let dir = self.layout.upload(bucket, id).ok_or_else(no_such_upload)?;
        blocking(move || {
            let mut parts = Vec::new();
            let entries = match std::fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(no_such_upload()),
                Err(e) => return Err(internal(e)),
            };
            for entry in entries {
                let entry = entry.map_err(internal)?;
                let name = entry.file_name();
                if layout::part_number(&name.to_string_lossy()).is_none() {
                    continue;
                }
                match record::open::<PartMeta>(&entry.path()) {
                    Ok(r) => parts.push(r),
                    Err(e) if e.is_not_found() => {}
                    Err(e) => return Err(internal(e)),
                }
            }
            parts.sort_by_key(|p| p.meta.number);
            Ok(parts)
        })
        .await?
    }
}

pub(super) async fn create_multipart_upload(
    store: &Store,
    req: S3Request<CreateMultipartUploadInput>,
) -> S3Result<S3Response<CreateMultipartUploadOutput>> {
    let input = req.input;
    store.bucket_dir(&input.bucket).await?;
    let algorithm = input
        .checksum_algorithm
        .as_ref()
        .map(|a| {
            Algorithm::from_name(a.as_str()).ok_or_else(|| s3_error!(InvalidRequest, "unknown checksum algorithm"))
        })
        .transpose()?;
    let kind = input.checksum_type.as_ref().map(Kind::from_dto).transpose()?;
    match (algorithm, kind) {
        (None, Some(_)) => {
            return Err(s3_error!(InvalidRequest, "The x-amz-checksum-type header requires x-amz-checksum-algorithm"));
        }
        (Some(a @ (Algorithm::Sha1 | Algorithm::Sha256)), Some(Kind::FullObject))
        | (Some(a @ Algorithm::Crc64Nvme), Some(Kind::Composite)) => {
            return Err(s3_error!(
                InvalidRequest,
                "The {} checksum algorithm does not support this checksum type",
                a.name()
            ));
        }
        _ => {}
    }
    let meta = UploadMeta {
        key: input.key.clone(),
        algorithm,
        kind: algorithm.map(|a| kind.unwrap_or(a.default_kind())),
        headers: Headers::new(
            input.content_type,
            input.content_encoding,
            input.content_disposition,
            input.content_language,
            input.cache_control,
            input.metadata,
        ),
    };
    let id = layout::new_upload_id();
    let dir = store.layout.upload(&input.bucket, &id).ok_or_else(super::no_such_bucket)?;
    tokio::fs::create_dir_all(&dir).await.map_err(internal)?;
    let temp = store.temp_file(&input.bucket).await?;
    let checksum_type = meta.checksum_type();
    store.commit_in_upload(temp, meta, store.layout.upload_record(&input.bucket, &id).expect("valid id")).await?;
    let out = CreateMultipartUploadOutput {
        bucket: Some(input.bucket),
        key: Some(input.key),
        upload_id: Some(id),
        checksum_algorithm: input.checksum_algorithm,
        checksum_type,
        ..Default::default()
    };
    Ok(S3Response::new(out))
}

fn part_path(store: &Store, bucket: &str, id: &str, number: i32) -> S3Result<PathBuf> {
    store
        .layout
        .part(bucket, id, number)
        .ok_or_else(|| s3_error!(InvalidArgument, "Part number must be an integer between 1 and 10000, inclusive"))
}

/// The checksum of a part as answered: in the upload's algorithm, if it has one.
fn part_checksum(upload: &UploadMeta, part: &PartMeta) -> Option<Checksum> {
    let (algorithm, value) = (upload.algorithm?, part.checksum.clone()?);
    let mut c = Stored { algorithm, kind: Kind::FullObject, value }.to_dto();
    c.checksum_type = None;
    Some(c)
}

pub(super) async fn upload_part(
    store: &Store,
    req: S3Request<UploadPartInput>,
) -> S3Result<S3Response<UploadPartOutput>> {
    let input = req.input;
    let upload = store.open_upload(&input.bucket, &input.key, &input.upload_id).await?.meta;
    let dest = part_path(store, &input.bucket, &input.upload_id, input.part_number)?;
    let claimed = claimed_fields!(input);
    let algorithm = upload.part_algorithm();
    if let Some(a) = request_algorithm(&claimed, &req.headers, input.checksum_algorithm.as_ref())? {
        if upload.algorithm.is_some_and(|u| u != a) || (upload.algorithm.is_none() && a != algorithm) {
            return Err(s3_error!(
                InvalidRequest,
                "Checksum Type mismatch occurred, expected checksum Type: {}, actual checksum Type: {}",
                upload.algorithm.map_or("null", Algorithm::name),
                a.name()
            ));
        }
    }
    let body = input.body.ok_or_else(|| s3_error!(IncompleteBody, "no body"))?;
    let temp = store.temp_file(&input.bucket).await?;
    let file = temp.file().try_clone().map_err(internal)?;
    let (sums, size) = body::receive(body, file, &[algorithm]).await?;
    checksum::verify(&claimed, &sums)?;
    checksum::verify(&trailer_claims(req.trailing_headers.as_ref())?, &sums)?;
    checksum::verify_content_md5(input.content_md5.as_deref(), &sums)?;
    let part = PartMeta {
        number: input.part_number,
        size,
        md5: sums.md5_hex(),
        checksum: sums.get(algorithm).map(checksum::encode),
    };
    let mut out = UploadPartOutput { e_tag: Some(ETag::Strong(part.md5.clone())), ..Default::default() };
    if let Some(c) = part_checksum(&upload, &part) {
        set_checksum_fields!(out, c);
    }
    store.commit_in_upload(temp, part, dest).await?;
    Ok(S3Response::new(out))
}

/// `bytes=FIRST-LAST` of a source of `size` bytes.
fn copy_range(range: Option<&str>, size: u64) -> S3Result<(u64, u64)> {
    let Some(range) = range else { return Ok((0, size)) };
    let bad = || s3_error!(InvalidArgument, "The x-amz-copy-source-range value must be of the form bytes=first-last");
    let (first, last) = range.strip_prefix("bytes=").and_then(|r| r.split_once('-')).ok_or_else(bad)?;
    let (first, last): (u64, u64) = (first.parse().map_err(|_| bad())?, last.parse().map_err(|_| bad())?);
    if first > last || last >= size {
        return Err(s3_error!(InvalidRange, "The requested range is not satisfiable"));
    }
    Ok((first, last - first + 1))
}

pub(super) async fn upload_part_copy(
    store: &Store,
    req: S3Request<UploadPartCopyInput>,
) -> S3Result<S3Response<UploadPartCopyOutput>> {
    let input = req.input;
    let upload = store.open_upload(&input.bucket, &input.key, &input.upload_id).await?.meta;
    let dest = part_path(store, &input.bucket, &input.upload_id, input.part_number)?;
    let (src_bucket, src_key) = copy_source(&input.copy_source)?;
    let src = store.open_object(src_bucket, src_key).await?;
    check_copy_conditions(
        &src.meta.etag,
        input.copy_source_if_match.as_ref(),
        input.copy_source_if_none_match.as_ref(),
    )?;
    let (start, len) = copy_range(input.copy_source_range.as_deref(), src.data_len)?;
    let algorithm = upload.part_algorithm();
    let temp = store.temp_file(&input.bucket).await?;
    let (temp, sums) = blocking(move || {
        let sums = body::copy_hashed(&src.file, start, len, temp.file(), &[algorithm]);
        sums.map(|s| (temp, s))
    })
    .await?
    .map_err(internal)?;
    let part = PartMeta {
        number: input.part_number,
        size: len,
        md5: sums.md5_hex(),
        checksum: sums.get(algorithm).map(checksum::encode),
    };
    let mut result = CopyPartResult {
        e_tag: Some(ETag::Strong(part.md5.clone())),
        last_modified: Some(timestamp(std::time::SystemTime::now())),
        ..Default::default()
    };
    if let Some(c) = part_checksum(&upload, &part) {
        set_checksum_fields!(result, c);
    }
    store.commit_in_upload(temp, part, dest).await?;
    Ok(S3Response::new(UploadPartCopyOutput { copy_part_result: Some(result), ..Default::default() }))
}

pub(super) async fn list_parts(store: &Store, req: S3Request<ListPartsInput>) -> S3Result<S3Response<ListPartsOutput>> {
    let input = req.input;
    let upload = store.open_upload(&input.bucket, &input.key, &input.upload_id).await?.meta;
    let marker = input.part_number_marker.unwrap_or(0);
    let max = input.max_parts.unwrap_or(1000).clamp(0, 1000) as usize;
    let all = store.read_parts(&input.bucket, &input.upload_id).await?;
    let after: Vec<_> = all.into_iter().filter(|p| p.meta.number > marker).collect();
    let truncated = after.len() > max;
    let parts: Vec<Part> = after
        .iter()
        .take(max)
        .map(|p| {
            let mut part = Part {
                part_number: Some(p.meta.number),
                size: Some(p.meta.size as i64),
                e_tag: Some(ETag::Strong(p.meta.md5.clone())),
                last_modified: Some(timestamp(p.modified)),
                ..Default::default()
            };
            if let Some(c) = part_checksum(&upload, &p.meta) {
                set_checksum_fields!(part, c);
            }
            part
        })
        .collect();
    let out = ListPartsOutput {
        bucket: Some(input.bucket),
        key: Some(input.key),
        upload_id: Some(input.upload_id),
        part_number_marker: Some(marker),
        next_part_number_marker: parts.last().and_then(|p| p.part_number),
        max_parts: Some(max as i32),
        is_truncated: Some(truncated),
        parts: Some(parts),
        checksum_algorithm: upload.algorithm.map(|a| ChecksumAlgorithm::from(a.name().to_string())),
        checksum_type: upload.checksum_type(),
        storage_class: Some(StorageClass::from_static(StorageClass::STANDARD)),
        ..Default::default()
    };
    Ok(S3Response::new(out))
}

fn invalid_part(number: i32, why: &str) -> s3s::S3Error {
    s3_error!(
        InvalidPart,
        "One or more of the specified parts could not be found or did not match (part {number}: {why})."
    )
}

pub(super) async fn complete_multipart_upload(
    store: &Store,
    req: S3Request<CompleteMultipartUploadInput>,
) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
    let input = req.input;
    let upload = store.open_upload(&input.bucket, &input.key, &input.upload_id).await?.meta;
    let listed = input.multipart_upload.and_then(|m| m.parts).unwrap_or_default();
    if listed.is_empty() {
        return Err(s3_error!(MalformedXML, "You must specify at least one part"));
    }
    let numbers: Vec<i32> = listed.iter().map(|p| p.part_number.unwrap_or(0)).collect();
    if numbers.windows(2).any(|w| w[0] >= w[1]) {
        return Err(s3_error!(InvalidPartOrder, "The list of parts was not in ascending order."));
    }
    let stored_parts = store.read_parts(&input.bucket, &input.upload_id).await?;
    let algorithm = upload.part_algorithm();
    let mut chosen: Vec<Record<PartMeta>> = Vec::with_capacity(listed.len());
    let mut stored_parts = stored_parts.into_iter().peekable();
    for part in &listed {
        let n = part.part_number.unwrap_or(0);
        while stored_parts.peek().is_some_and(|p| p.meta.number < n) {
            stored_parts.next();
        }
        let rec = match stored_parts.next() {
            Some(p) if p.meta.number == n => p,
            _ => return Err(invalid_part(n, "not uploaded")),
        };
        if let Some(etag) = &part.e_tag {
            if etag.value().trim_matches('"') != rec.meta.md5 {
                return Err(invalid_part(n, "ETag differs"));
            }
        }
        for (a, value) in claimed_fields!(part) {
            if a != algorithm || upload.algorithm.is_none() || rec.meta.checksum.as_deref() != Some(value.as_str()) {
                return Err(invalid_part(n, &format!("{} differs", a.name())));
            }
        }
        chosen.push(rec);
    }
    let current = if input.if_match.is_some() || input.if_none_match.is_some() {
        store.current_etag(&input.bucket, &input.key).await?
    } else {
        None
    };
    check_write_conditions(current.as_deref(), input.if_match.as_ref(), input.if_none_match.as_ref())?;

    let total: u64 = chosen.iter().map(|p| p.meta.size).sum();
    if let Some(size) = input.mpu_object_size {
        if u64::try_from(size).ok() != Some(total) {
            return Err(s3_error!(
                InvalidRequest,
                "x-amz-mp-object-size {size} is not the size of the parts ({total})"
            ));
        }
    }
    let md5s: Vec<[u8; 16]> = chosen
        .iter()
        .map(|p| hex::decode(&p.meta.md5).ok().and_then(|v| v.try_into().ok()).ok_or_else(|| internal("bad part MD5")))
        .collect::<Result<_, _>>()?;
    let etag = checksum::multipart_etag(&md5s);
    let raw: Vec<Vec<u8>> = chosen
        .iter()
        .map(|p| {
            p.meta
                .checksum
                .as_deref()
                .map(|v| checksum::decode(algorithm, v))
                .unwrap_or_else(|| Err(internal("part without checksum")))
        })
        .collect::<Result<_, _>>()?;
    let kind = upload.kind.unwrap_or(Kind::FullObject);
    let value = match kind {
        Kind::FullObject => {
            let parts: Vec<(Vec<u8>, u64)> = raw.iter().cloned().zip(chosen.iter().map(|p| p.meta.size)).collect();
            checksum::encode(
                &checksum::combine_crcs(algorithm, &parts).ok_or_else(|| internal("FULL_OBJECT without a CRC"))?,
            )
        }
        Kind::Composite => checksum::composite(algorithm, &raw),
    };
    let stored = Stored { algorithm, kind, value };
    // What the client claims for the whole object must be what the parts add up to.
    if let Some(t) = &input.checksum_type {
        if upload.algorithm.is_none() || Kind::from_dto(t)? != kind {
            return Err(s3_error!(InvalidRequest, "The upload was not created with checksum type {}", t.as_str()));
        }
    }
    for (a, claimed) in claimed_fields!(input) {
        if a != algorithm {
            return Err(s3_error!(
                InvalidRequest,
                "The upload was not created with the {} checksum algorithm",
                a.name()
            ));
        }
        let matches = match kind {
            Kind::FullObject => claimed.trim() == stored.value,
            // Clients send a composite value with or without its `-N`.
            Kind::Composite => stored.value.split('-').next() == claimed.trim().split('-').next(),
        };
        if !matches {
            return Err(s3_error!(BadDigest, "The {} you specified did not match the calculated checksum.", a.name()));
        }
    }

    let parts_meta: Vec<PartMeta> = chosen.iter().map(|p| p.meta.clone()).collect();
    let temp = store.temp_file(&input.bucket).await?;
    let temp = blocking(move || {
        for p in &chosen {
            record::copy_range(&p.file, 0, p.data_len, temp.file())?;
        }
        Ok::<_, std::io::Error>(temp)
    })
    .await?
    .map_err(internal)?;
    let meta = ObjectMeta {
        key: input.key.clone(),
        etag: etag.clone(),
        headers: upload.headers.clone(),
        checksum: Some(stored.clone()),
        parts: parts_meta,
    };
    store.commit_object(temp, &input.bucket, meta).await?;
    if let Some(dir) = store.layout.upload(&input.bucket, &input.upload_id) {
        if let Err(e) = tokio::fs::remove_dir_all(&dir).await {
            tracing::warn!("removing completed upload {}: {e}", dir.display());
        }
    }
    let mut out = CompleteMultipartUploadOutput {
        bucket: Some(input.bucket),
        key: Some(input.key),
        e_tag: Some(ETag::Strong(etag)),
        checksum_type: Some(ChecksumType::from(kind.name().to_string())),
        ..Default::default()
    };
    set_checksum_fields!(out, stored.to_dto());
    Ok(S3Response::new(out))
}

pub(super) async fn abort_multipart_upload(
    store: &Store,
    req: S3Request<AbortMultipartUploadInput>,
) -> S3Result<S3Response<AbortMultipartUploadOutput>> {
    let input = req.input;
    store.open_upload(&input.bucket, &input.key, &input.upload_id).await?;
    let dir = store.layout.upload(&input.bucket, &input.upload_id).ok_or_else(no_such_upload)?;
    match tokio::fs::remove_dir_all(&dir).await {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(no_such_upload()),
        Err(e) => return Err(internal(e)),
    }
    Ok(S3Response::new(AbortMultipartUploadOutput::default()))
}

/// One in-progress upload, for listing.
struct Listed {
    key: String,
    id: String,
    initiated: std::time::SystemTime,
    meta: UploadMeta,
}

pub(super) async fn list_multipart_uploads(
    store: &Store,
    req: S3Request<ListMultipartUploadsInput>,
) -> S3Result<S3Response<ListMultipartUploadsOutput>> {
    let input = req.input;
    store.bucket_dir(&input.bucket).await?;
    let dir = store.layout.uploads(&input.bucket).ok_or_else(super::no_such_bucket)?;
    let mut uploads: Vec<Listed> = blocking(move || {
        let mut out = Vec::new();
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(internal(e)),
        };
        for entry in entries {
            let entry = entry.map_err(internal)?;
            let id = entry.file_name().to_string_lossy().into_owned();
            // An upload being created or removed has no readable record: not listed.
            if let Ok(r) = record::open::<UploadMeta>(&entry.path().join("upload")) {
                out.push(Listed { key: r.meta.key.clone(), id, initiated: r.modified, meta: r.meta });
            }
        }
        Ok(out)
    })
    .await??;
    let prefix = input.prefix.clone().unwrap_or_default();
    uploads.retain(|u| u.key.starts_with(&prefix));
    uploads.sort_by(|a, b| (&a.key, a.initiated, &a.id).cmp(&(&b.key, b.initiated, &b.id)));
    // Resume after (key-marker, upload-id-marker), or after every upload of key-marker.
    if let Some(km) = &input.key_marker {
        let cut = match &input.upload_id_marker {
            Some(im) => match uploads.iter().position(|u| &u.key == km && &u.id == im) {
                Some(i) => i + 1,
                None => uploads.iter().position(|u| u.key > *km).unwrap_or(uploads.len()),
            },
            None => uploads.iter().position(|u| u.key > *km).unwrap_or(uploads.len()),
        };
        uploads.drain(..cut);
    }
    let max = input.max_uploads.unwrap_or(1000).clamp(0, 1000) as usize;
    let delimiter = input.delimiter.clone().filter(|d| !d.is_empty());
    let (mut page, mut prefixes): (Vec<&Listed>, Vec<String>) = (Vec::new(), Vec::new());
    let mut truncated = false;
    for u in &uploads {
        let common = delimiter.as_deref().and_then(|d| {
            let rest = &u.key[prefix.len()..];
            rest.find(d).map(|i| format!("{prefix}{}", &rest[..i + d.len()]))
        });
        if let Some(cp) = &common {
            if prefixes.last() == Some(cp) {
                continue;
            }
        }
        if page.len() + prefixes.len() >= max {
            truncated = true;
            break;
        }
        match common {
            Some(cp) => prefixes.push(cp),
            None => page.push(u),
        }
    }
    let enc = input.encoding_type.as_ref().is_some_and(|e| e.as_str() == EncodingType::URL);
    let next = truncated.then(|| page.last().map(|u| (u.key.clone(), u.id.clone()))).flatten();
    let out = ListMultipartUploadsOutput {
        bucket: Some(input.bucket),
        prefix: url_encode_if(enc, input.prefix),
        delimiter: url_encode_if(enc, input.delimiter),
        key_marker: url_encode_if(enc, input.key_marker),
        upload_id_marker: input.upload_id_marker,
        next_key_marker: url_encode_if(enc, next.as_ref().map(|n| n.0.clone())),
        next_upload_id_marker: next.map(|n| n.1),
        max_uploads: Some(max as i32),
        is_truncated: Some(truncated),
        encoding_type: input.encoding_type,
        common_prefixes: (!prefixes.is_empty())
            .then(|| prefixes.into_iter().map(|p| CommonPrefix { prefix: url_encode_if(enc, Some(p)) }).collect()),
        uploads: Some(
            page.into_iter()
                .map(|u| MultipartUpload {
                    key: url_encode_if(enc, Some(u.key.clone())),
                    upload_id: Some(u.id.clone()),
                    initiated: Some(timestamp(u.initiated)),
                    storage_class: Some(StorageClass::from_static(StorageClass::STANDARD)),
                    checksum_algorithm: u.meta.algorithm.map(|a| ChecksumAlgorithm::from(a.name().to_string())),
                    checksum_type: u.meta.checksum_type(),
                    ..Default::default()
                })
                .collect(),
        ),
        ..Default::default()
    };
    Ok(S3Response::new(out))
}

impl super::KeyedMeta for UploadMeta {
    fn key(&self) -> &str {
        &self.key
    }
}
