//! The blocking calls: each data call is its `*_start` call plus a wait (one implementation):
//! the work runs on the client's worker threads while the calling thread sleeps. Blocking
//! calls fail with GANTRY_RESULT_INVALID_STATE in callbacks of `*_start` requests.

use std::ffi::c_char;
use std::ptr::null_mut;

use crate::client::{client_arg, gantry_client};
use crate::error::{gantry_error, gantry_result};
use crate::get::gantry_get_options;
use crate::guard::{str_arg, Failure};
use crate::handle::Boxed;
use crate::request::gantry_request;
use crate::start::*;

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
    ffi_fn!(blocking(out_err), || {
        #[allow(deprecated)] // the blocking call stays its start twin plus a wait
        // SAFETY: the arguments are forwarded under the same contract; the call waits.
        let size = unsafe {
            wait_for(|req, err| gantry_get_into_start(client, bucket, key, buf, buf_len, None, null_mut(), req, err))
        }?;
        write_out(out_size, size);
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
    ffi_fn!(blocking(out_err), || {
        #[allow(deprecated)] // the blocking call stays its start twin plus a wait
        // SAFETY: the arguments are forwarded under the same contract; the call waits.
        let written = unsafe {
            wait_for(|req, err| {
                gantry_get_range_into_start(
                    client,
                    bucket,
                    key,
                    offset,
                    length,
                    buf,
                    buf_len,
                    None,
                    null_mut(),
                    req,
                    err,
                )
            })
        }?;
        write_out(out_written, written);
        Ok(())
    })
}

/// Downloads bucket/key into the file at `path` (positional writes into a temporary file in the
/// same directory, renamed over `path` only on success). An existing device or FIFO such as
/// `/dev/null` is opened and written in order instead of being replaced.
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
    ffi_fn!(blocking(out_err), || {
        #[allow(deprecated)] // the blocking call stays its start twin plus a wait
        // SAFETY: the arguments are forwarded under the same contract; the call waits.
        let size = unsafe {
            wait_for(|req, err| gantry_get_to_file_start(client, bucket, key, path, None, null_mut(), req, err))
        }?;
        write_out(out_size, size);
        Ok(())
    })
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
    ffi_fn!(blocking(out_err), || {
        // SAFETY: the arguments are forwarded under the same contract; the call waits.
        unsafe {
            wait_for(|req, err| gantry_put_buffer_start(client, bucket, key, data, len, None, null_mut(), req, err))
        }?;
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
    ffi_fn!(blocking(out_err), || {
        // SAFETY: the arguments are forwarded under the same contract; the call waits.
        unsafe { wait_for(|req, err| gantry_put_file_start(client, bucket, key, path, None, null_mut(), req, err)) }?;
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
    ffi_fn!(blocking(out_err), || {
        // SAFETY: the arguments are forwarded under the same contract; the call waits.
        let size =
            unsafe { wait_for(|req, err| gantry_head_object_start(client, bucket, key, None, null_mut(), req, err)) }?;
        write_out(out_size, size);
        Ok(())
    })
}

/// HeadObject with the conditions and version of `options` (NULL: as `gantry_head_object`):
/// `gantry_head_object_with_start` plus a wait. Writes the object's size to `*out_size` (may
/// be NULL). Fails with GANTRY_RESULT_INVALID_STATE in a callback of a `*_start` request.
///
/// # Safety
/// As for `gantry_head_object_with_start`.
#[no_mangle]
pub unsafe extern "C" fn gantry_head_object_with(
    client: *const gantry_client,
    bucket: *const c_char,
    key: *const c_char,
    options: *const gantry_get_options,
    out_size: *mut u64,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    ffi_fn!(blocking(out_err), || {
        // SAFETY: the arguments are forwarded under the same contract; the call waits.
        let size = unsafe {
            wait_for(|req, err| gantry_head_object_with_start(client, bucket, key, options, None, null_mut(), req, err))
        }?;
        write_out(out_size, size);
        Ok(())
    })
}

/// Appends `len` bytes at `data` to bucket/key at `offset` (a directory bucket; see
/// `gantry_append_start`) and writes the object's new size, the next offset, to `*out_size`
/// (may be NULL). `data` is borrowed for the call.
///
/// # Safety
/// As for `gantry_append_start`.
#[no_mangle]
pub unsafe extern "C" fn gantry_append(
    client: *const gantry_client,
    bucket: *const c_char,
    key: *const c_char,
    offset: u64,
    data: *const u8,
    len: usize,
    out_size: *mut u64,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    ffi_fn!(blocking(out_err), || {
        // SAFETY: the arguments are forwarded under the same contract; the call waits.
        let size = unsafe {
            wait_for(|req, err| gantry_append_start(client, bucket, key, offset, data, len, None, null_mut(), req, err))
        }?;
        write_out(out_size, size);
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
    ffi_fn!(blocking(out_err), || {
        // SAFETY: the arguments are forwarded under the same contract; the call waits.
        unsafe { wait_for(|req, err| gantry_delete_object_start(client, bucket, key, None, null_mut(), req, err)) }?;
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
    ffi_fn!(blocking(out_err), || {
        // SAFETY: per the contract above.
        let (client, bucket) = unsafe { (client_arg(client)?, str_arg(bucket, "bucket")?) };
        client.block_on(client.create_bucket(bucket))?;
        Ok(())
    })
}

/// Runs a `*_start` call and waits for its request: the body of every blocking data call
/// (whose `ffi_fn!` made the may-block check). Returns the request's size result.
///
/// # Safety
/// `start_call` is a `*_start` call whose arguments satisfy its contract for the duration.
pub(crate) unsafe fn wait_for(
    start_call: impl FnOnce(*mut *mut gantry_request, *mut *mut gantry_error) -> gantry_result,
) -> Result<u64, Failure> {
    let mut request: *mut gantry_request = std::ptr::null_mut();
    let mut err: *mut gantry_error = std::ptr::null_mut();
    let taken = |err: *mut gantry_error| {
        // SAFETY: NULL or an error just written by a gantry call, ours to free.
        match unsafe { gantry_error::from_raw(err) } {
            Some(e) => Failure::Error(*e),
            None => Failure::State("a call failed without an error object"),
        }
    };
    if start_call(&mut request, &mut err) != gantry_result::GANTRY_RESULT_OK {
        return Err(taken(err));
    }
    let mut size = 0;
    // SAFETY: request is live until freed here.
    unsafe {
        if crate::request::gantry_request_wait(request, &mut err) == gantry_result::GANTRY_RESULT_OK {
            crate::request::gantry_request_size(request, &mut size, std::ptr::null_mut());
        }
        crate::request::gantry_request_free(request);
    }
    if err.is_null() {
        Ok(size)
    } else {
        Err(taken(err))
    }
}
