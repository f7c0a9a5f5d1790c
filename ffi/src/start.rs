//! The asynchronous data-path calls (`*_start`): each returns a `gantry_request` at once and
//! runs as a task on the client's workers; the blocking calls in `blocking.rs` are these plus
//! a wait, so both share one implementation.

use std::ffi::{c_char, c_void};
use std::future::{ready, Future};
use std::sync::atomic::Ordering;

use futures::channel::oneshot;

use crate::client::{client_arg, gantry_client};
use crate::error::{gantry_error, gantry_result};
use crate::get::{gantry_get_options, read_options, start_get, Destination};
use crate::guard::{str_arg, Failure};
use crate::request::{gantry_done_fn, gantry_request, start, Runner, Shared};

/// Caller memory a running request writes into or reads from.
#[derive(Clone, Copy)]
pub(crate) struct Region {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the caller keeps the region valid (and, for reads, unchanged) until the request
// ended; the request's future, the only user, is dropped before the request counts as ended.
unsafe impl Send for Region {}

impl Region {
    pub(crate) fn new(ptr: *mut u8, len: usize, what: &'static str) -> Result<Region, Failure> {
        if ptr.is_null() && len > 0 {
            return Err(Failure::Null(what));
        }
        Ok(Region { ptr, len })
    }

    /// # Safety
    /// The region is valid and not used by anyone else while the slice lives.
    pub(crate) unsafe fn slice_mut<'a>(self) -> &'a mut [u8] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: non-NULL (checked in new) and len writable bytes per the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

/// What every call on one object opens with: the client (refused with GANTRY_RESULT_FORKED in
/// a fork child), a clone of it for the request's future, and the bucket and key copied (so the
/// request may outlive the caller's strings).
pub(crate) struct ObjectArgs<'a> {
    pub(crate) client: &'a gantry::Client,
    pub(crate) owned: gantry::Client,
    pub(crate) bucket: String,
    pub(crate) key: String,
}

/// Checks and copies the `client`, `bucket` and `key` arguments of a call on one object.
///
/// # Safety
/// `client` is NULL or a live client; `bucket` and `key` are NULL or NUL-terminated.
pub(crate) unsafe fn object_args<'a>(
    client: *const gantry_client,
    bucket: *const c_char,
    key: *const c_char,
) -> Result<ObjectArgs<'a>, Failure> {
    // SAFETY: forwarded contract.
    let (client, bucket, key) = unsafe { (client_arg(client)?, str_arg(bucket, "bucket")?, str_arg(key, "key")?) };
    Ok(ObjectArgs { client, owned: client.clone(), bucket: bucket.to_string(), key: key.to_string() })
}

/// Starts `op` on the workers with no read window; `op` returns the request's size result.
pub(crate) fn start_op<F>(
    client: &gantry::Client,
    done: gantry_done_fn,
    user_data: *mut c_void,
    out_request: *mut *mut gantry_request,
    op: F,
) -> Result<(), Failure>
where
    F: Future<Output = gantry::Result<u64>> + Send + 'static,
{
    start(client, Runner::Worker, done, user_data, out_request, u64::MAX, move |shared| {
        (record_size(op, shared), ready(()))
    })
}

async fn record_size(
    op: impl Future<Output = gantry::Result<u64>>,
    shared: std::sync::Arc<Shared>,
) -> Result<(), gantry_error> {
    let size = op.await.map_err(|e| gantry_error::from_engine(&e))?;
    shared.size.store(size, Ordering::Release);
    Ok(())
}

/// Deprecated: `gantry_get_start` with a BUFFER destination and NULL options does the same.
///
/// Starts downloading bucket/key into `buf` (`buf_len` bytes) with parallel ranged GETs; the
/// request's size is the object's size. A buffer smaller than the object fails with
/// GANTRY_RESULT_INVALID_ARGUMENT before any byte is written. `buf` must stay valid and
/// untouched by the caller until the request ended (done was called, or wait returned); a
/// cancelled request writes nothing more once it ended. `done` runs on a worker thread.
///
/// # Safety
/// `client` is live and outlives the request; strings are NUL-terminated; `buf` points to
/// `buf_len` writable bytes (may be NULL when `buf_len` is 0); `user_data` as for
/// `gantry_get_stream_start`.
#[no_mangle]
#[deprecated(note = "use gantry_get_start")]
pub unsafe extern "C" fn gantry_get_into_start(
    client: *const gantry_client,
    bucket: *const c_char,
    key: *const c_char,
    buf: *mut u8,
    buf_len: usize,
    done: gantry_done_fn,
    user_data: *mut c_void,
    out_request: *mut *mut gantry_request,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    ffi_fn!(out_err, || {
        // SAFETY: per the contract above.
        let args = unsafe { object_args(client, bucket, key)? };
        let region = Region::new(buf, buf_len, "buf")?;
        start_get(args, gantry::GetOptions::new(), Destination::Buffer(region), done, user_data, out_request)
    })
}

/// Deprecated: `gantry_get_start` with a BUFFER destination and a range in its options does
/// the same.
///
/// Starts downloading `length` bytes of bucket/key from `offset` into `buf` (`buf_len` >=
/// `length`); the request's size is the bytes written (a range past the end of the object is
/// cut there; one starting at or past the end fails with HTTP 416, "InvalidRange"). `buf` is
/// lent as for `gantry_get_into_start`.
///
/// # Safety
/// As for `gantry_get_into_start`; `buf` is not NULL.
#[no_mangle]
#[deprecated(note = "use gantry_get_start")]
pub unsafe extern "C" fn gantry_get_range_into_start(
    client: *const gantry_client,
    bucket: *const c_char,
    key: *const c_char,
    offset: u64,
    length: u64,
    buf: *mut u8,
    buf_len: usize,
    done: gantry_done_fn,
    user_data: *mut c_void,
    out_request: *mut *mut gantry_request,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    ffi_fn!(out_err, || {
        // SAFETY: per the contract above.
        let args = unsafe { object_args(client, bucket, key)? };
        if buf.is_null() || buf_len == 0 {
            return Err(Failure::Null("buf"));
        }
        let region = Region::new(buf, buf_len, "buf")?;
        let end = offset.checked_add(length).ok_or_else(|| Failure::Invalid("offset + length overflows".into()))?;
        let options = gantry::GetOptions::new().range(offset..end);
        start_get(args, options, Destination::Buffer(region), done, user_data, out_request)
    })
}

/// Deprecated: `gantry_get_start` with a FILE destination and NULL options does the same.
///
/// Starts downloading bucket/key into the file at `path` (a temporary file in the same
/// directory, renamed over `path` only on success; an existing device or FIFO such as
/// `/dev/null` is written in order instead); the request's size is the object's size.
///
/// # Safety
/// `client` is live and outlives the request; strings are NUL-terminated (copied).
#[no_mangle]
#[deprecated(note = "use gantry_get_start")]
pub unsafe extern "C" fn gantry_get_to_file_start(
    client: *const gantry_client,
    bucket: *const c_char,
    key: *const c_char,
    path: *const c_char,
    done: gantry_done_fn,
    user_data: *mut c_void,
    out_request: *mut *mut gantry_request,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    ffi_fn!(out_err, || {
        // SAFETY: per the contract above.
        let (args, path) = unsafe { (object_args(client, bucket, key)?, str_arg(path, "path")?.to_string()) };
        start_get(args, gantry::GetOptions::new(), Destination::File(path), done, user_data, out_request)
    })
}

/// Caller memory lent to the engine without a copy. The `Bytes` built on it may be cloned into
/// part requests; when the last clone is dropped, the loan's sender is dropped and the request
/// (which awaits the receiver) may end.
struct Loan {
    region: Region,
    _returned: oneshot::Sender<()>,
}

// SAFETY: see Region; the loan is only read.
unsafe impl Sync for Loan {}

impl AsRef<[u8]> for Loan {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: ptr/len describe caller memory valid and unchanged for the loan's life.
        unsafe { std::slice::from_raw_parts(self.region.ptr, self.region.len) }
    }
}

/// Starts uploading `len` bytes at `data` as bucket/key (PutObject, or multipart above the
/// threshold) without copying them. `data` must stay valid and unchanged until the request
/// ended; it ends only once the library holds no reference to it (also after a failure or a
/// cancel). The request's size is the bytes sent.
///
/// # Safety
/// `client` is live and outlives the request; strings are NUL-terminated; `data` points to
/// `len` readable bytes (may be NULL when `len` is 0) that nobody writes until the end.
#[no_mangle]
pub unsafe extern "C" fn gantry_put_buffer_start(
    client: *const gantry_client,
    bucket: *const c_char,
    key: *const c_char,
    data: *const u8,
    len: usize,
    done: gantry_done_fn,
    user_data: *mut c_void,
    out_request: *mut *mut gantry_request,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    ffi_fn!(out_err, || {
        // SAFETY: per the contract above.
        let args = unsafe { object_args(client, bucket, key)? };
        start_lent_upload(args, data, len, done, user_data, out_request, |c, bucket, key, body| async move {
            Ok(c.put(&bucket, &key, body).await?.size)
        })
    })
}

/// Starts an upload of caller memory lent without a copy (`put_buffer`, `append`): `op`
/// sends `body` and returns the request's size. Connection tasks of cancelled parts may drop
/// their slices a moment after the operation ended, so the request ends only once the
/// sender inside the loan is gone: only then is the caller's memory free again.
fn start_lent_upload<F, Fut>(
    args: ObjectArgs<'_>,
    data: *const u8,
    len: usize,
    done: gantry_done_fn,
    user_data: *mut c_void,
    out_request: *mut *mut gantry_request,
    op: F,
) -> Result<(), Failure>
where
    F: FnOnce(gantry::Client, String, String, bytes::Bytes) -> Fut + Send + 'static,
    Fut: Future<Output = gantry::Result<u64>> + Send + 'static,
{
    let ObjectArgs { client, owned: c, bucket, key } = args;
    let region = Region::new(data.cast_mut(), len, "data")?;
    let (returned_tx, returned_rx) = oneshot::channel();
    let body = match len {
        0 => bytes::Bytes::new(),
        _ => bytes::Bytes::from_owner(Loan { region, _returned: returned_tx }),
    };
    start(client, Runner::Worker, done, user_data, out_request, u64::MAX, move |shared| {
        (record_size(op(c, bucket, key, body), shared), async move {
            let _ = returned_rx.await;
        })
    })
}

/// Starts appending `len` bytes at `data` to bucket/key in a directory bucket (S3 Express One
/// Zone) at `offset`, which must be the object's current size (0 creates it); one request, no
/// copy. The request's size is the object's size after the append (the next offset). A stale
/// offset ends it with GANTRY_RESULT_WRONG_WRITE_OFFSET; a general-purpose bucket with
/// GANTRY_RESULT_CLIENT_ERROR (HTTP 501). `data` must stay valid and unchanged until the
/// request ended; `done` (may be NULL) runs once on a worker thread.
///
/// # Safety
/// As for `gantry_put_buffer_start`.
#[no_mangle]
pub unsafe extern "C" fn gantry_append_start(
    client: *const gantry_client,
    bucket: *const c_char,
    key: *const c_char,
    offset: u64,
    data: *const u8,
    len: usize,
    done: gantry_done_fn,
    user_data: *mut c_void,
    out_request: *mut *mut gantry_request,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    ffi_fn!(out_err, || {
        // SAFETY: per the contract above.
        let args = unsafe { object_args(client, bucket, key)? };
        start_lent_upload(args, data, len, done, user_data, out_request, move |c, bucket, key, body| async move {
            Ok(c.append(&bucket, &key, offset, body).await?.size)
        })
    })
}

/// Starts uploading the file at `path` as bucket/key, reading parts in parallel; the
/// request's size is the bytes sent.
///
/// # Safety
/// `client` is live and outlives the request; strings are NUL-terminated (copied).
#[no_mangle]
pub unsafe extern "C" fn gantry_put_file_start(
    client: *const gantry_client,
    bucket: *const c_char,
    key: *const c_char,
    path: *const c_char,
    done: gantry_done_fn,
    user_data: *mut c_void,
    out_request: *mut *mut gantry_request,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    ffi_fn!(out_err, || {
        // SAFETY: per the contract above.
        let (ObjectArgs { client, owned: c, bucket, key }, path) =
            unsafe { (object_args(client, bucket, key)?, str_arg(path, "path")?.to_string()) };
        start_op(client, done, user_data, out_request, async move { Ok(c.put_file(&bucket, &key, &path).await?.size) })
    })
}

/// Starts a HeadObject; the request's size is the object's size.
///
/// # Safety
/// `client` is live and outlives the request; strings are NUL-terminated (copied).
#[no_mangle]
pub unsafe extern "C" fn gantry_head_object_start(
    client: *const gantry_client,
    bucket: *const c_char,
    key: *const c_char,
    done: gantry_done_fn,
    user_data: *mut c_void,
    out_request: *mut *mut gantry_request,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    ffi_fn!(out_err, || {
        // SAFETY: per the contract above.
        let args = unsafe { object_args(client, bucket, key)? };
        start_head(args, gantry::GetOptions::new(), done, user_data, out_request)
    })
}

/// Starts a HeadObject with the conditions and version of `options` (NULL: as
/// `gantry_head_object_start`); the request's size is the object's size. `version_id` heads
/// that version; `if_match` that does not match ends the request with
/// GANTRY_RESULT_PRECONDITION_FAILED (HTTP 412), `if_none_match` that matches with
/// GANTRY_RESULT_NOT_MODIFIED (HTTP 304). A HEAD reads no bytes, so a range or a part size
/// is refused with GANTRY_RESULT_INVALID_ARGUMENT (rather than ignored); `checksum` is
/// ignored. `done` (may be NULL) runs once on a worker thread. `options` is read during the
/// call only (strings copied).
///
/// # Safety
/// As for `gantry_head_object_start`; `options` is NULL or points to `options->struct_size`
/// readable bytes.
#[no_mangle]
pub unsafe extern "C" fn gantry_head_object_with_start(
    client: *const gantry_client,
    bucket: *const c_char,
    key: *const c_char,
    options: *const gantry_get_options,
    done: gantry_done_fn,
    user_data: *mut c_void,
    out_request: *mut *mut gantry_request,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    ffi_fn!(out_err, || {
        // SAFETY: per the contract above.
        let (args, options) = unsafe { (object_args(client, bucket, key)?, read_options(options)?) };
        if options.range.is_some() || options.part_size_bytes.is_some() {
            return Err(Failure::Invalid("a HEAD reads no bytes: options must not set a range or a part size".into()));
        }
        start_head(args, options, done, user_data, out_request)
    })
}

/// The one path of both HEAD calls.
fn start_head(
    args: ObjectArgs<'_>,
    options: gantry::GetOptions,
    done: gantry_done_fn,
    user_data: *mut c_void,
    out_request: *mut *mut gantry_request,
) -> Result<(), Failure> {
    let ObjectArgs { client, owned: c, bucket, key } = args;
    start_op(client, done, user_data, out_request, async move {
        Ok(c.head_object_with(&bucket, &key, &options).await?.size)
    })
}

/// Starts a DeleteObject (size 0).
///
/// # Safety
/// `client` is live and outlives the request; strings are NUL-terminated (copied).
#[no_mangle]
pub unsafe extern "C" fn gantry_delete_object_start(
    client: *const gantry_client,
    bucket: *const c_char,
    key: *const c_char,
    done: gantry_done_fn,
    user_data: *mut c_void,
    out_request: *mut *mut gantry_request,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    ffi_fn!(out_err, || {
        // SAFETY: per the contract above.
        let ObjectArgs { client, owned: c, bucket, key } = unsafe { object_args(client, bucket, key)? };
        start_op(client, done, user_data, out_request, async move {
            c.delete_object(&bucket, &key).await?;
            Ok(0)
        })
    })
}
