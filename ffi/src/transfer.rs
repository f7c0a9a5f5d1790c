//! Blocking transfers and the streaming upload handle.
//!
//! Each blocking call runs on the calling thread until the transfer ends (the network work
//! runs on the client's worker threads). Do not call them from a client callback.

use std::ffi::c_char;

use crate::client::{client_arg, gantry_client};
use crate::error::{gantry_error, gantry_result};
use crate::guard::{run, str_arg, Failure};

fn write_out<T>(out: *mut T, value: T) {
    if !out.is_null() {
        // SAFETY: the caller passes NULL or a writable pointer.
        unsafe { *out = value };
    }
}

/// Downloads bucket/key into `buf` (`buf_len` bytes) with parallel ranged GETs, writing the
/// object's size to `*out_size` (may be NULL). A buffer smaller than the object fails with
/// GANTRY_RESULT_INVALID_ARGUMENT before any byte is written. `buf` is borrowed for the call.
///
/// # Safety
/// `client` is live; `bucket`, `key` are NUL-terminated; `buf` points to `buf_len` writable
/// bytes (may be NULL when `buf_len` is 0).
#[no_mangle]
pub unsafe extern "C" fn gantry_get_into(
    client: *const gantry_client,
    bucket: *const c_char,
    key: *const c_char,
    buf: *mut u8,
    buf_len: usize,
    out_size: *mut u64,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    run(out_err, || {
        // SAFETY: per the contract above.
        let (client, bucket, key) = unsafe { (client_arg(client)?, str_arg(bucket, "bucket")?, str_arg(key, "key")?) };
        let buf: &mut [u8] = match (buf.is_null(), buf_len) {
            (_, 0) => &mut [],
            (true, _) => return Err(Failure::Null("buf")),
            // SAFETY: non-NULL and buf_len writable bytes per the contract.
            (false, n) => unsafe { std::slice::from_raw_parts_mut(buf, n) },
        };
        let info = client.block_on(client.get_into(bucket, key, buf))?;
        write_out(out_size, info.size);
        Ok(())
    })
}

/// Downloads `length` bytes of bucket/key starting at `offset` into `buf` (`buf_len` >=
/// `length`), straight from the network buffers. A range reaching past the end of the object
/// is cut there: `*out_written` (may be NULL) receives the bytes written. A range starting at
/// or past the end fails with GANTRY_RESULT_CLIENT_ERROR (HTTP 416, "InvalidRange").
///
/// # Safety
/// `client` is live; `bucket`, `key` are NUL-terminated; `buf` points to `buf_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn gantry_get_range_into(
    client: *const gantry_client,
    bucket: *const c_char,
    key: *const c_char,
    offset: u64,
    length: u64,
    buf: *mut u8,
    buf_len: usize,
    out_written: *mut u64,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    run(out_err, || {
        // SAFETY: per the contract above.
        let (client, bucket, key) = unsafe { (client_arg(client)?, str_arg(bucket, "bucket")?, str_arg(key, "key")?) };
        if buf.is_null() || buf_len == 0 {
            return Err(Failure::Null("buf"));
        }
        let end = offset.checked_add(length).ok_or_else(|| Failure::Invalid("offset + length overflows".into()))?;
        // SAFETY: non-NULL and buf_len writable bytes per the contract.
        let buf = unsafe { std::slice::from_raw_parts_mut(buf, buf_len) };
        let info = client.block_on(client.get_range_into(bucket, key, offset..end, buf))?;
        write_out(out_written, end.min(info.size) - offset);
        Ok(())
    })
}

/// Downloads bucket/key into the file at `path` (positional writes into a temporary file in the
/// same directory, renamed over `path` only on success).
///
/// # Safety
/// `client` is live; string arguments are NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn gantry_get_to_file(
    client: *const gantry_client,
    bucket: *const c_char,
    key: *const c_char,
    path: *const c_char,
    out_size: *mut u64,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    run(out_err, || {
        // SAFETY: per the contract above.
        let (client, bucket, key, path) =
            unsafe { (client_arg(client)?, str_arg(bucket, "bucket")?, str_arg(key, "key")?, str_arg(path, "path")?) };
        let info = client.block_on(client.download_to_file(bucket, key, path))?;
        write_out(out_size, info.size);
        Ok(())
    })
}

/// Caller memory lent to the engine without a copy. The `Bytes` built on it may be cloned into
/// part requests; when the last clone is dropped, `Loan::drop` signals the waiting call.
struct Loan {
    ptr: *const u8,
    len: usize,
    returned: std::sync::Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>,
}

// SAFETY: the memory is the caller's and stays valid and unchanged until gantry_put_buffer
// returns, which waits for this loan to be dropped; reading it from any thread is then fine.
unsafe impl Send for Loan {}
// SAFETY: as above; the loan is only read.
unsafe impl Sync for Loan {}

impl AsRef<[u8]> for Loan {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: ptr/len describe caller memory valid for the loan's life (see Send above).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for Loan {
    fn drop(&mut self) {
        let (lock, cv) = &*self.returned;
        *lock.lock().expect("loan lock") = true;
        cv.notify_all();
    }
}

/// Uploads `len` bytes at `data` as bucket/key (PutObject, or multipart above the threshold)
/// without copying them: parts are sent straight from `data`. `data` must stay valid and
/// unchanged until the call returns; the call returns only once the library holds no
/// reference to it (also after a failure or a cancelled part).
///
/// # Safety
/// `client` is live; strings are NUL-terminated; `data` points to `len` readable bytes (may
/// be NULL when `len` is 0) that nobody writes during the call.
#[no_mangle]
pub unsafe extern "C" fn gantry_put_buffer(
    client: *const gantry_client,
    bucket: *const c_char,
    key: *const c_char,
    data: *const u8,
    len: usize,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    run(out_err, || {
        // SAFETY: per the contract above.
        let (client, bucket, key) = unsafe { (client_arg(client)?, str_arg(bucket, "bucket")?, str_arg(key, "key")?) };
        if data.is_null() && len > 0 {
            return Err(Failure::Null("data"));
        }
        if len == 0 {
            client.block_on(client.put(bucket, key, bytes::Bytes::new()))?;
            return Ok(());
        }
        let returned = std::sync::Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
        let body = bytes::Bytes::from_owner(Loan { ptr: data, len, returned: returned.clone() });
        let result = client.block_on(client.put(bucket, key, body));
        // Connection tasks of cancelled requests may drop their copy a moment later: wait.
        let (lock, cv) = &*returned;
        let mut done = lock.lock().expect("loan lock");
        while !*done {
            done = cv.wait(done).expect("loan lock");
        }
        result?;
        Ok(())
    })
}

/// Uploads the file at `path` as bucket/key, reading parts in parallel.
///
/// # Safety
/// `client` is live; strings are NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn gantry_put_file(
    client: *const gantry_client,
    bucket: *const c_char,
    key: *const c_char,
    path: *const c_char,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    run(out_err, || {
        // SAFETY: per the contract above.
        let (client, bucket, key, path) =
            unsafe { (client_arg(client)?, str_arg(bucket, "bucket")?, str_arg(key, "key")?, str_arg(path, "path")?) };
        client.block_on(client.put_file(bucket, key, path))?;
        Ok(())
    })
}

/// HeadObject: writes the object's size to `*out_size` (may be NULL).
///
/// # Safety
/// `client` is live; strings are NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn gantry_head_object(
    client: *const gantry_client,
    bucket: *const c_char,
    key: *const c_char,
    out_size: *mut u64,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    run(out_err, || {
        // SAFETY: per the contract above.
        let (client, bucket, key) = unsafe { (client_arg(client)?, str_arg(bucket, "bucket")?, str_arg(key, "key")?) };
        let info = client.block_on(client.head_object(bucket, key))?;
        write_out(out_size, info.size);
        Ok(())
    })
}

/// DeleteObject.
///
/// # Safety
/// `client` is live; strings are NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn gantry_delete_object(
    client: *const gantry_client,
    bucket: *const c_char,
    key: *const c_char,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    run(out_err, || {
        // SAFETY: per the contract above.
        let (client, bucket, key) = unsafe { (client_arg(client)?, str_arg(bucket, "bucket")?, str_arg(key, "key")?) };
        client.block_on(client.delete_object(bucket, key))?;
        Ok(())
    })
}

/// CreateBucket (for S3-compatible stores and tests).
///
/// # Safety
/// `client` is live; `bucket` is NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn gantry_create_bucket(
    client: *const gantry_client,
    bucket: *const c_char,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    run(out_err, || {
        // SAFETY: per the contract above.
        let (client, bucket) = unsafe { (client_arg(client)?, str_arg(bucket, "bucket")?) };
        client.block_on(client.create_bucket(bucket))?;
        Ok(())
    })
}

/// A streaming upload of unknown length (checkpoints). Not thread-safe: serialize calls.
/// End it with `gantry_upload_complete` or `gantry_upload_abort`, then free it with
/// `gantry_upload_free`; freeing an upload that was neither completed nor aborted aborts it
/// (no multipart parts are left on the server).
#[derive(Debug)]
pub struct gantry_upload {
    upload: Option<gantry::Upload>,
    client: gantry::Client,
}

/// Starts a streaming upload to bucket/key.
///
/// # Safety
/// `client` is live; strings are NUL-terminated; `out_upload` is writable.
#[no_mangle]
pub unsafe extern "C" fn gantry_upload_new(
    client: *const gantry_client,
    bucket: *const c_char,
    key: *const c_char,
    out_upload: *mut *mut gantry_upload,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    run(out_err, || {
        // SAFETY: per the contract above.
        let (client, bucket, key) = unsafe { (client_arg(client)?, str_arg(bucket, "bucket")?, str_arg(key, "key")?) };
        if out_upload.is_null() {
            return Err(Failure::Null("out_upload"));
        }
        let upload = Box::new(gantry_upload { upload: Some(client.upload(bucket, key)), client: client.clone() });
        // SAFETY: checked non-NULL; the caller owns the upload.
        unsafe { *out_upload = Box::into_raw(upload) };
        Ok(())
    })
}

/// Appends `len` bytes (copied; `data` may be reused on return). Blocks while the memory
/// limit is reached (backpressure) and uploads full parts in the background.
///
/// # Safety
/// `upload` is live; `data` points to `len` readable bytes (may be NULL when `len` is 0).
#[no_mangle]
pub unsafe extern "C" fn gantry_upload_write(
    upload: *mut gantry_upload,
    data: *const u8,
    len: usize,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    run(out_err, || {
        // SAFETY: the caller passes NULL or a live upload it does not use concurrently.
        let up = unsafe { upload.as_mut() }.ok_or(Failure::Null("upload"))?;
        let data: &[u8] = match (data.is_null(), len) {
            (_, 0) => &[],
            (true, _) => return Err(Failure::Null("data")),
            // SAFETY: non-NULL and len readable bytes per the contract.
            (false, n) => unsafe { std::slice::from_raw_parts(data, n) },
        };
        let client = &up.client;
        let inner = up.upload.as_mut().ok_or(Failure::State("the upload was already completed or aborted"))?;
        client.block_on(inner.write(data))?;
        Ok(())
    })
}

/// Ends an upload with `finish` (complete or abort); the upload is finished afterwards either way.
///
/// # Safety
/// `upload` is NULL or a live upload not used concurrently.
unsafe fn end_upload(
    upload: *mut gantry_upload,
    out_err: *mut *mut gantry_error,
    finish: impl FnOnce(&gantry::Client, gantry::Upload) -> gantry::Result<()>,
) -> gantry_result {
    run(out_err, || {
        // SAFETY: the caller passes NULL or a live upload it does not use concurrently.
        let up = unsafe { upload.as_mut() }.ok_or(Failure::Null("upload"))?;
        let inner = up.upload.take().ok_or(Failure::State("the upload was already completed or aborted"))?;
        finish(&up.client, inner)?;
        Ok(())
    })
}

/// Uploads what is left and completes the object. On failure the upload is aborted. Either
/// way the upload is finished: only `gantry_upload_free` is allowed afterwards.
///
/// # Safety
/// `upload` is live.
#[no_mangle]
pub unsafe extern "C" fn gantry_upload_complete(
    upload: *mut gantry_upload,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    // SAFETY: forwarded contract.
    unsafe { end_upload(upload, out_err, |client, inner| client.block_on(inner.complete()).map(|_| ())) }
}

/// Discards the upload (AbortMultipartUpload if parts were sent) and waits for that.
///
/// # Safety
/// `upload` is live.
#[no_mangle]
pub unsafe extern "C" fn gantry_upload_abort(
    upload: *mut gantry_upload,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    // SAFETY: forwarded contract.
    unsafe { end_upload(upload, out_err, |client, inner| client.block_on(inner.abort())) }
}

/// Frees an upload; an unfinished one is aborted in the background. NULL is allowed.
///
/// # Safety
/// `upload` is NULL or an upload not yet freed.
#[no_mangle]
pub unsafe extern "C" fn gantry_upload_free(upload: *mut gantry_upload) {
    if !upload.is_null() {
        // SAFETY: came from Box::into_raw in gantry_upload_new; freed once.
        drop(unsafe { Box::from_raw(upload) });
    }
}
