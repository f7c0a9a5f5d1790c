//! Single objects: PutObject, GetObject, HeadObject, DeleteObject(s), CopyObject and
//! GetObjectAttributes.
//!
//! A PUT streams into a temporary file while hashing (MD5 for the ETag, the checksum the
//! client claimed or CRC64NVME), checks the claims, then renames the file over the object. A
//! GET opens the object's one file and answers from it alone: the description and the bytes
//! come from the same open file, so they always belong together even if a PUT replaces the
//! object meanwhile.

use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result};

use super::checksum::{self, claimed_fields, set_checksum_fields, Algorithm, Kind, Stored};
use super::record::{Record, TempFile};
use super::{blocking, body, internal, layout, no_such_key, open_keyed, timestamp, Headers, ObjectMeta, Store};

impl Store {
    /// The record of `bucket/key`: `NoSuchBucket`, `NoSuchKey`, or the open object.
    pub(super) async fn open_object(&self, bucket: &str, key: &str) -> S3Result<Record<ObjectMeta>> {
        let dir = self.bucket_dir(bucket).await?;
        open_keyed(dir.join(layout::object_file_name(key)), key, no_such_key).await
    }

    /// A temporary file in `bucket` (`NoSuchBucket` when it is gone).
    pub(super) async fn temp_file(&self, bucket: &str) -> S3Result<TempFile> {
        let path = self.layout.temp(bucket).ok_or_else(super::no_such_bucket)?;
        blocking(move || match TempFile::create(path) {
            Ok(t) => Ok(t),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(super::no_such_bucket()),
            Err(e) => Err(internal(e)),
        })
        .await?
    }

    /// Commits `temp` as `bucket/key` with `meta`.
    pub(super) async fn commit_object(&self, temp: TempFile, bucket: &str, meta: ObjectMeta) -> S3Result<()> {
        let dest = self.layout.object(bucket, &meta.key).ok_or_else(super::no_such_bucket)?;
        blocking(move || match temp.commit(&meta, &dest) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(super::no_such_bucket()),
            Err(e) => Err(internal(e)),
        })
        .await?
    }

    /// The ETag of `bucket/key` if it exists (for conditional writes).
    pub(super) async fn current_etag(&self, bucket: &str, key: &str) -> S3Result<Option<String>> {
        match self.open_object(bucket, key).await {
            Ok(r) => Ok(Some(r.meta.etag)),
            Err(e) if *e.code() == s3s::S3ErrorCode::NoSuchKey => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// `If-None-Match: *` and `If-Match` on a write, against the object as it is now.
pub(super) fn check_write_conditions(
    current: Option<&str>,
    if_match: Option<&ETagCondition>,
    if_none_match: Option<&ETagCondition>,
) -> S3Result<()> {
    let failed = || s3_error!(PreconditionFailed, "At least one of the pre-conditions you specified did not hold");
    if let Some(cond) = if_none_match {
        let hit = match (cond, current) {
            (_, None) => false,
            (ETagCondition::Any, Some(_)) => true,
            (ETagCondition::ETag(e), Some(c)) => e.value() == c,
        };
        if hit {
            return Err(failed());
        }
    }
    if let Some(cond) = if_match {
        let ok = match (cond, current) {
            (_, None) => false,
            (ETagCondition::Any, Some(_)) => true,
            (ETagCondition::ETag(e), Some(c)) => e.value() == c,
        };
        if !ok {
            return Err(failed());
        }
    }
    Ok(())
}

/// The one checksum algorithm a request uses: claimed in a header, announced for the
/// trailer, or named by `x-amz-sdk-checksum-algorithm`; two different ones are refused.
pub(super) fn request_algorithm(
    claimed: &[(Algorithm, String)],
    headers: &http::HeaderMap,
    sdk: Option<&ChecksumAlgorithm>,
) -> S3Result<Option<Algorithm>> {
    let mut found: Vec<Algorithm> = claimed.iter().map(|c| c.0).collect();
    found.extend(checksum::trailer_algorithm(headers));
    if let Some(sdk) = sdk {
        found.push(
            Algorithm::from_name(sdk.as_str())
                .ok_or_else(|| s3_error!(InvalidRequest, "unknown checksum algorithm {}", sdk.as_str()))?,
        );
    }
    found.dedup();
    match found.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(*one)),
        _ => Err(s3_error!(InvalidRequest, "Expecting a single x-amz-checksum- header")),
    }
}

/// The checksum values a body's trailer carried (after the body was read).
pub(super) fn trailer_claims(trailers: Option<&s3s::TrailingHeaders>) -> S3Result<Vec<(Algorithm, String)>> {
    match trailers.and_then(|t| t.take()) {
        Some(h) => checksum::claimed_in_trailers(&h),
        None => Ok(Vec::new()),
    }
}

pub(super) async fn put_object(store: &Store, req: S3Request<PutObjectInput>) -> S3Result<S3Response<PutObjectOutput>> {
    let input = req.input;
    store.bucket_dir(&input.bucket).await?;
    if input.if_match.is_some() || input.if_none_match.is_some() {
        let current = store.current_etag(&input.bucket, &input.key).await?;
        check_write_conditions(current.as_deref(), input.if_match.as_ref(), input.if_none_match.as_ref())?;
    }
    let claimed = claimed_fields!(input);
    let algorithm =
        request_algorithm(&claimed, &req.headers, input.checksum_algorithm.as_ref())?.unwrap_or(Algorithm::Crc64Nvme);
    let body = input.body.ok_or_else(|| s3_error!(IncompleteBody, "no body"))?;
    let temp = store.temp_file(&input.bucket).await?;
    let file = temp.file().try_clone().map_err(internal)?;
    let (sums, _len) = body::receive(body, file, &[algorithm]).await?;
    checksum::verify(&claimed, &sums)?;
    checksum::verify(&trailer_claims(req.trailing_headers.as_ref())?, &sums)?;
    checksum::verify_content_md5(input.content_md5.as_deref(), &sums)?;
    let stored =
        Stored { algorithm, kind: Kind::FullObject, value: checksum::encode(sums.get(algorithm).expect("computed")) };
    let meta = ObjectMeta {
        key: input.key,
        etag: sums.md5_hex(),
        headers: Headers::new(
            input.content_type,
            input.content_encoding,
            input.content_disposition,
            input.content_language,
            input.cache_control,
            input.metadata,
        ),
        checksum: Some(stored.clone()),
        parts: Vec::new(),
    };
    let etag = meta.etag.clone();
    store.commit_object(temp, &input.bucket, meta).await?;
    let mut out = PutObjectOutput { e_tag: Some(ETag::Strong(etag)), ..Default::default() };
    set_checksum_fields!(out, stored.to_dto());
    out.checksum_type = Some(ChecksumType::from(Kind::FullObject.name().to_string()));
    Ok(S3Response::new(out))
}

/// What part of an object a GET or HEAD answers with.
struct View {
    start: u64,
    len: u64,
    content_range: Option<String>,
    checksum: Option<Checksum>,
    parts_count: Option<i32>,
}

/// Resolves `Range` / `partNumber` against an object of `size` bytes. The stored checksum is
/// answered (when asked for) for the whole object, a part's own checksum for `partNumber`,
/// none for a range, as S3 does.
fn view(meta: &ObjectMeta, size: u64, range: Option<Range>, part_number: Option<i32>, mode: bool) -> S3Result<View> {
    let range_of = |start: u64, len: u64| Some(format!("bytes {}-{}/{}", start, start + len - 1, size));
    match (range, part_number) {
        (Some(_), Some(_)) => {
            Err(s3_error!(InvalidRequest, "Cannot specify both Range header and partNumber query parameter"))
        }
        (None, None) => Ok(View {
            start: 0,
            len: size,
            content_range: None,
            checksum: meta.checksum.as_ref().filter(|_| mode).map(Stored::to_dto),
            parts_count: None,
        }),
        (Some(range), None) => {
            let r = range.check(size).map_err(|_| s3_error!(InvalidRange, "The requested range is not satisfiable"))?;
            Ok(View {
                start: r.start,
                len: r.end - r.start,
                content_range: range_of(r.start, r.end - r.start),
                checksum: None,
                parts_count: None,
            })
        }
        (None, Some(n)) => {
            let not_satisfiable = || {
                let code = s3s::S3ErrorCode::from_bytes(b"InvalidPartNumber").expect("any name is a code");
                let mut e = s3s::S3Error::with_message(code, "The requested partnumber is not satisfiable");
                e.set_status_code(http::StatusCode::RANGE_NOT_SATISFIABLE);
                e
            };
            if meta.parts.is_empty() {
                if n != 1 {
                    return Err(not_satisfiable());
                }
                return Ok(View {
                    start: 0,
                    len: size,
                    content_range: (size > 0).then(|| range_of(0, size)).flatten(),
                    checksum: meta.checksum.as_ref().filter(|_| mode).map(Stored::to_dto),
                    parts_count: None,
                });
            }
            let idx =
                usize::try_from(n).ok().filter(|i| (1..=meta.parts.len()).contains(i)).ok_or_else(not_satisfiable)?;
            let start: u64 = meta.parts[..idx - 1].iter().map(|p| p.size).sum();
            let part = &meta.parts[idx - 1];
            let checksum = match (&meta.checksum, &part.checksum) {
                (Some(s), Some(v)) if mode => {
                    let mut c = Stored { algorithm: s.algorithm, kind: s.kind, value: v.clone() }.to_dto();
                    c.checksum_type = None;
                    Some(c)
                }
                _ => None,
            };
            Ok(View {
                start,
                len: part.size,
                content_range: (part.size > 0).then(|| range_of(start, part.size)).flatten(),
                checksum,
                parts_count: Some(meta.parts.len() as i32),
            })
        }
    }
}

fn checksum_mode(mode: Option<&ChecksumMode>) -> bool {
    mode.is_some_and(|m| m.as_str().eq_ignore_ascii_case(ChecksumMode::ENABLED))
}

/// 412 for a failed `If-Match`, 304 for a matching `If-None-Match`.
fn check_read_conditions(
    etag: &str,
    if_match: Option<&ETagCondition>,
    if_none_match: Option<&ETagCondition>,
) -> S3Result<()> {
    if let Some(ETagCondition::ETag(want)) = if_match {
        if want.value() != etag {
            return Err(s3_error!(PreconditionFailed, "At least one of the pre-conditions you specified did not hold"));
        }
    }
    let none_hit = match if_none_match {
        Some(ETagCondition::Any) => true,
        Some(ETagCondition::ETag(e)) => e.value() == etag,
        None => false,
    };
    if none_hit {
        return Err(s3_error!(NotModified));
    }
    Ok(())
}

/// The answer GET and HEAD share (s3s has one DTO per operation, with the same fields): the
/// object's headers for the bytes `v` selects, and its checksum when asked for.
macro_rules! object_answer {
    ($ty:ident, $rec:expr, $v:expr) => {{
        let (rec, v) = (&$rec, $v);
        let h = &rec.meta.headers;
        let mut out = $ty {
            content_length: Some(v.len as i64),
            content_range: v.content_range,
            accept_ranges: Some("bytes".into()),
            e_tag: Some(ETag::Strong(rec.meta.etag.clone())),
            last_modified: Some(timestamp(rec.modified)),
            content_type: h.content_type.clone(),
            content_encoding: h.content_encoding.clone(),
            content_disposition: h.content_disposition.clone(),
            content_language: h.content_language.clone(),
            cache_control: h.cache_control.clone(),
            metadata: h.metadata(),
            parts_count: v.parts_count,
            ..Default::default()
        };
        if let Some(c) = v.checksum {
            out.checksum_type = c.checksum_type.clone();
            set_checksum_fields!(out, c);
        }
        out
    }};
}

pub(super) async fn get_object(store: &Store, req: S3Request<GetObjectInput>) -> S3Result<S3Response<GetObjectOutput>> {
    let input = req.input;
    let rec = store.open_object(&input.bucket, &input.key).await?;
    check_read_conditions(&rec.meta.etag, input.if_match.as_ref(), input.if_none_match.as_ref())?;
    let v = view(&rec.meta, rec.data_len, input.range, input.part_number, checksum_mode(input.checksum_mode.as_ref()))?;
    let (start, len) = (v.start, v.len);
    let mut out = object_answer!(GetObjectOutput, rec, v);
    out.body = Some(body::send(rec.file, start, len));
    Ok(S3Response::new(out))
}

pub(super) async fn head_object(
    store: &Store,
    req: S3Request<HeadObjectInput>,
) -> S3Result<S3Response<HeadObjectOutput>> {
    let input = req.input;
    let rec = store.open_object(&input.bucket, &input.key).await?;
    check_read_conditions(&rec.meta.etag, input.if_match.as_ref(), input.if_none_match.as_ref())?;
    let v = view(&rec.meta, rec.data_len, input.range, input.part_number, checksum_mode(input.checksum_mode.as_ref()))?;
    Ok(S3Response::new(object_answer!(HeadObjectOutput, rec, v)))
}

/// Removes `key`'s file; a missing key is not an error (S3 answers 204 either way).
async fn remove(store: &Store, bucket: &str, key: &str) -> S3Result<()> {
    let path = store.layout.object(bucket, key).ok_or_else(super::no_such_bucket)?;
    match tokio::fs::remove_file(&path).await {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(internal(e)),
    }
}

pub(super) async fn delete_object(
    store: &Store,
    req: S3Request<DeleteObjectInput>,
) -> S3Result<S3Response<DeleteObjectOutput>> {
    let input = req.input;
    store.bucket_dir(&input.bucket).await?;
    remove(store, &input.bucket, &input.key).await?;
    Ok(S3Response::new(DeleteObjectOutput::default()))
}

pub(super) async fn delete_objects(
    store: &Store,
    req: S3Request<DeleteObjectsInput>,
) -> S3Result<S3Response<DeleteObjectsOutput>> {
    let input = req.input;
    store.bucket_dir(&input.bucket).await?;
    let quiet = input.delete.quiet.unwrap_or(false);
    let (mut deleted, mut errors) = (Vec::new(), Vec::new());
    for object in input.delete.objects {
        match remove(store, &input.bucket, &object.key).await {
            Ok(()) if quiet => {}
            Ok(()) => deleted.push(DeletedObject { key: Some(object.key), ..Default::default() }),
            Err(e) => errors.push(Error {
                key: Some(object.key),
                code: Some(e.code().as_str().to_string()),
                message: e.message().map(str::to_string),
                ..Default::default()
            }),
        }
    }
    let out = DeleteObjectsOutput {
        deleted: (!deleted.is_empty()).then_some(deleted),
        errors: (!errors.is_empty()).then_some(errors),
        ..Default::default()
    };
    Ok(S3Response::new(out))
}

/// The source object of a copy.
pub(super) fn copy_source(source: &CopySource) -> S3Result<(&str, &str)> {
    match source {
        CopySource::Bucket { bucket, key, .. } => Ok((bucket, key)),
        _ => Err(s3_error!(NotImplemented, "only bucket copy sources are supported")),
    }
}

/// `x-amz-copy-source-if-match` / `-if-none-match` against the source's ETag.
pub(super) fn check_copy_conditions(
    etag: &str,
    if_match: Option<&ETagCondition>,
    if_none_match: Option<&ETagCondition>,
) -> S3Result<()> {
    check_read_conditions(etag, if_match, None)?;
    match if_none_match {
        Some(ETagCondition::Any) => Err(s3_error!(PreconditionFailed)),
        Some(ETagCondition::ETag(e)) if e.value() == etag => Err(s3_error!(PreconditionFailed)),
        _ => Ok(()),
    }
}

pub(super) async fn copy_object(
    store: &Store,
    req: S3Request<CopyObjectInput>,
) -> S3Result<S3Response<CopyObjectOutput>> {
    let input = req.input;
    let (src_bucket, src_key) = copy_source(&input.copy_source)?;
    let src = store.open_object(src_bucket, src_key).await?;
    check_copy_conditions(
        &src.meta.etag,
        input.copy_source_if_match.as_ref(),
        input.copy_source_if_none_match.as_ref(),
    )?;
    store.bucket_dir(&input.bucket).await?;
    let algorithm = match &input.checksum_algorithm {
        Some(a) => {
            Algorithm::from_name(a.as_str()).ok_or_else(|| s3_error!(InvalidRequest, "unknown checksum algorithm"))?
        }
        None => src.meta.checksum.as_ref().map_or(Algorithm::Crc64Nvme, |c| c.algorithm),
    };
    let replace = input.metadata_directive.as_ref().is_some_and(|d| d.as_str() == MetadataDirective::REPLACE);
    let headers = if replace {
        Headers::new(
            input.content_type,
            input.content_encoding,
            input.content_disposition,
            input.content_language,
            input.cache_control,
            input.metadata,
        )
    } else {
        src.meta.headers.clone()
    };
    let temp = store.temp_file(&input.bucket).await?;
    // The copy is a new single-part object: its ETag is the MD5 of its bytes and its checksum
    // covers them (FULL_OBJECT), whatever the source was.
    let (temp, sums) = blocking(move || {
        let sums = body::copy_hashed(&src.file, 0, src.data_len, temp.file(), &[algorithm]);
        sums.map(|s| (temp, s))
    })
    .await?
    .map_err(internal)?;
    let stored =
        Stored { algorithm, kind: Kind::FullObject, value: checksum::encode(sums.get(algorithm).expect("computed")) };
    let meta =
        ObjectMeta { key: input.key, etag: sums.md5_hex(), headers, checksum: Some(stored.clone()), parts: Vec::new() };
    let etag = meta.etag.clone();
    store.commit_object(temp, &input.bucket, meta).await?;
    let mut result = CopyObjectResult {
        e_tag: Some(ETag::Strong(etag)),
        last_modified: Some(timestamp(std::time::SystemTime::now())),
        checksum_type: Some(ChecksumType::from(Kind::FullObject.name().to_string())),
        ..Default::default()
    };
    set_checksum_fields!(result, stored.to_dto());
    Ok(S3Response::new(CopyObjectOutput { copy_object_result: Some(result), ..Default::default() }))
}

pub(super) async fn get_object_attributes(
    store: &Store,
    req: S3Request<GetObjectAttributesInput>,
) -> S3Result<S3Response<GetObjectAttributesOutput>> {
    let input = req.input;
    let rec = store.open_object(&input.bucket, &input.key).await?;
    // One header may carry them all, comma-separated (`x-amz-object-attributes: ETag,Checksum`).
    let wants = |name: &str| {
        input.object_attributes.iter().flat_map(|a| a.as_str().split(',')).any(|a| a.trim().eq_ignore_ascii_case(name))
    };
    let meta = &rec.meta;
    let mut out = GetObjectAttributesOutput { last_modified: Some(timestamp(rec.modified)), ..Default::default() };
    if wants(ObjectAttributes::ETAG) {
        out.e_tag = Some(ETag::Strong(meta.etag.clone()));
    }
    if wants(ObjectAttributes::OBJECT_SIZE) {
        out.object_size = Some(rec.data_len as i64);
    }
    if wants(ObjectAttributes::STORAGE_CLASS) {
        out.storage_class = Some(StorageClass::from_static(StorageClass::STANDARD));
    }
    if wants(ObjectAttributes::CHECKSUM) {
        out.checksum = meta.checksum.as_ref().map(Stored::to_dto);
    }
    if wants(ObjectAttributes::OBJECT_PARTS) && !meta.parts.is_empty() {
        let marker = input.part_number_marker.unwrap_or(0);
        let max = input.max_parts.unwrap_or(1000).clamp(0, 1000) as usize;
        let after: Vec<_> = meta.parts.iter().filter(|p| p.number > marker).collect();
        let page: Vec<ObjectPart> = after
            .iter()
            .take(max)
            .map(|p| {
                let mut part =
                    ObjectPart { part_number: Some(p.number), size: Some(p.size as i64), ..Default::default() };
                if let (Some(s), Some(v)) = (&meta.checksum, &p.checksum) {
                    let c = Stored { algorithm: s.algorithm, kind: s.kind, value: v.clone() }.to_dto();
                    set_checksum_fields!(part, c);
                }
                part
            })
            .collect();
        let truncated = after.len() > page.len();
        out.object_parts = Some(GetObjectAttributesParts {
            total_parts_count: Some(meta.parts.len() as i32),
            part_number_marker: Some(marker),
            next_part_number_marker: page.last().and_then(|p| p.part_number),
            max_parts: Some(max as i32),
            is_truncated: Some(truncated),
            parts: Some(page),
        });
    }
    Ok(S3Response::new(out))
}
