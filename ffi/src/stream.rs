//! In-order streaming GETs with callbacks: `gantry_get_async` (its own thread, callbacks may
//! block) and `gantry_get_stream_start` / `gantry_get_stream_with_start` (on the workers, a
//! read window the caller opens, and chunks the caller may keep past the callback with
//! `gantry_chunk_retain`).

use std::ffi::{c_char, c_void};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;

use crate::client::gantry_client;
use crate::error::{gantry_error, gantry_result};
use crate::get::{gantry_get_options, read_options};
use crate::guard::{in_worker_callback, Failure};
use crate::handle::{borrow, Boxed};
use crate::request::{cancelled, gantry_done_fn, gantry_request, start, Runner, Shared, UserData};
use crate::start::{object_args, ObjectArgs};

/// Receives the object's bytes in order. `data` is lent for the duration of the call only
/// (it points into the engine's network buffer: copy what you keep). `offset` is the position
/// of `data[0]` in the object. Return 0 to continue, non-zero to cancel the request.
pub type gantry_body_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, data: *const u8, len: usize, offset: u64) -> i32>;

/// Receives a stream's bytes in order (`gantry_get_stream_start`). `data`/`len` are lent until
/// the call returns, unless the callback keeps them with `gantry_chunk_retain(chunk)`: then
/// they stay valid until `gantry_chunk_release`. `offset` is the position of `data[0]` in the
/// object. Runs on a client worker thread: return quickly, never block. Return 0 to continue,
/// non-zero to cancel the request.
pub type gantry_chunk_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        data: *const u8,
        len: usize,
        offset: u64,
        chunk: *const gantry_chunk,
    ) -> i32,
>;

/// A piece of a downloaded object in the engine's network buffer. Lent to a chunk callback
/// for the call (never free a lent chunk); `gantry_chunk_retain` makes an owned reference
/// (Box-owned, holding a reference to the buffer) the caller releases once with
/// `gantry_chunk_release`, from any thread, callbacks included. Retained chunks hold their
/// memory: open the read window only as far as you are willing to hold.
#[derive(Debug)]
pub struct gantry_chunk {
    data: Bytes,
}

impl Boxed for gantry_chunk {}

/// Makes an owned reference to a lent chunk: its bytes (the `data` pointer the callback got)
/// stay valid until `gantry_chunk_release`. Returns NULL when `chunk` is NULL (also on a
/// panic). No copy.
///
/// # Safety
/// `chunk` is NULL or the chunk lent to a running chunk callback (or a retained chunk).
#[no_mangle]
pub unsafe extern "C" fn gantry_chunk_retain(chunk: *const gantry_chunk) -> *mut gantry_chunk {
    ffi_fn!(fallback(std::ptr::null_mut()), || {
        // SAFETY: the caller passes NULL or a live chunk.
        let lent = unsafe { borrow(chunk, "chunk") }?;
        Ok(gantry_chunk { data: lent.data.clone() }.into_raw())
    })
}

/// Releases a retained chunk (NULL is allowed). Any thread; never on a lent chunk. On a
/// panic (a bug) the chunk is leaked.
///
/// # Safety
/// `chunk` is NULL or came from `gantry_chunk_retain` and was not released yet.
#[no_mangle]
pub unsafe extern "C" fn gantry_chunk_release(chunk: *mut gantry_chunk) {
    ffi_fn!(fallback(()), || {
        // SAFETY: NULL or a chunk handed out once by gantry_chunk_retain, released once.
        drop(unsafe { gantry_chunk::from_raw(chunk) });
        Ok(())
    })
}

/// Deprecated (a thread per request): use `gantry_get_stream_start`, whose chunk callback
/// gets the same in-order bytes on the client's workers, with a read window for
/// backpressure.
///
/// Starts downloading bucket/key in order, calling `body` for each chunk and `done` at the
/// end, on the request's own thread. Both callbacks may be NULL. Do not call blocking gantry
/// functions on the same client from the callbacks. On this request, `gantry_request_wait`
/// from them fails with GANTRY_RESULT_INVALID_STATE and `gantry_request_free` cancels and
/// frees without waiting (either would otherwise wait for itself).
/// The callbacks may block: the download then waits (the client's `read_window` bounds what
/// is buffered meanwhile). For many concurrent streams prefer `gantry_get_stream_start`,
/// which costs no thread.
///
/// # Safety
/// `client` is live and outlives the request; strings are NUL-terminated; `user_data` stays
/// valid until `done` was called (or `gantry_request_free` returned).
#[no_mangle]
#[deprecated(note = "use gantry_get_stream_start: it runs on the client's workers, not a thread per request")]
pub unsafe extern "C" fn gantry_get_async(
    client: *const gantry_client,
    bucket: *const c_char,
    key: *const c_char,
    body: gantry_body_fn,
    done: gantry_done_fn,
    user_data: *mut c_void,
    out_request: *mut *mut gantry_request,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    ffi_fn!(out_err, || {
        // SAFETY: per the contract above.
        let ObjectArgs { client, owned: c, bucket, key } = unsafe { object_args(client, bucket, key)? };
        let user = UserData(user_data);
        start(client, Runner::Thread, done, user_data, out_request, u64::MAX, move |shared| {
            let fut = async move {
                let stream = c.get_stream(&bucket, &key).await.map_err(|e| gantry_error::from_engine(&e))?;
                let user = user;
                deliver(stream, 0, &shared, move |data, offset| match body {
                    // SAFETY: the caller's callback; data is valid for the call (the chunk outlives it).
                    Some(f) => unsafe { f(user.get(), data.as_ptr(), data.len(), offset) },
                    None => 0,
                })
                .await
            };
            (fut, std::future::ready(()))
        })
    })
}

/// Starts an in-order stream of bytes `[offset, offset + length)` of bucket/key (`length`
/// UINT64_MAX: to the end of the object; a range past the end is cut there), fetched with
/// parallel ranged GETs. `chunk` receives the bytes in order and `done` ends the request; both
/// run on a client worker thread (one callback at a time, in order) and must not block or make
/// blocking gantry calls (those fail with GANTRY_RESULT_INVALID_STATE there). The request may
/// start other `*_start` requests, cancel, and open windows from its callbacks.
///
/// Read window: at most `initial_window` bytes are handed to `chunk` before the caller opens
/// more with `gantry_request_open_window` (a chunk is split at the window's edge);
/// UINT64_MAX means no window. While the window is closed no further parts are fetched beyond
/// the client's `read_window`, so memory stays bounded however slowly the caller consumes.
/// `gantry_request_size` gives the bytes delivered. `gantry_get_stream_with_start` is the
/// same with a `gantry_get_options` (conditions, a version, the checksum mode).
///
/// # Safety
/// `client` is live and outlives the request; strings are NUL-terminated; `user_data` stays
/// valid until `done` was called (or `gantry_request_free` returned).
#[no_mangle]
pub unsafe extern "C" fn gantry_get_stream_start(
    client: *const gantry_client,
    bucket: *const c_char,
    key: *const c_char,
    offset: u64,
    length: u64,
    initial_window: u64,
    chunk: gantry_chunk_fn,
    done: gantry_done_fn,
    user_data: *mut c_void,
    out_request: *mut *mut gantry_request,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    ffi_fn!(out_err, || {
        // SAFETY: per the contract above.
        let args = unsafe { object_args(client, bucket, key)? };
        if length == 0 {
            return Err(Failure::Invalid("length must not be 0".into()));
        }
        let mut options = gantry::GetOptions::new();
        if !(offset == 0 && length == u64::MAX) {
            options = options.range(offset..offset.saturating_add(length));
        }
        start_stream(args, options, initial_window, chunk, done, user_data, out_request)
    })
}

/// Starts an in-order stream of what `options` select of bucket/key (NULL options: the whole
/// current object with the client's settings): `gantry_get_stream_start` with the one request
/// shape of `gantry_get_start`. With a range, `chunk`'s offsets start at `range_start` and
/// `range_end` UINT64_MAX reads to the end. `if_match` / `if_none_match` end the request with
/// GANTRY_RESULT_PRECONDITION_FAILED / GANTRY_RESULT_NOT_MODIFIED before any chunk;
/// `version_id` streams that version; `checksum` and `part_size_bytes` apply as for
/// `gantry_get_start`, except that a stream failing verification ends with
/// GANTRY_RESULT_CHECKSUM_MISMATCH without a refetch (the chunks already handed over cannot
/// be taken back). Callbacks, window, threads and ownership: as `gantry_get_stream_start`.
/// `options` is read during the call only (its strings are copied). A bad options struct is
/// GANTRY_RESULT_INVALID_ARGUMENT from the call.
///
/// # Safety
/// As for `gantry_get_stream_start`; `options` is NULL or points to `options->struct_size`
/// readable bytes.
#[no_mangle]
pub unsafe extern "C" fn gantry_get_stream_with_start(
    client: *const gantry_client,
    bucket: *const c_char,
    key: *const c_char,
    options: *const gantry_get_options,
    initial_window: u64,
    chunk: gantry_chunk_fn,
    done: gantry_done_fn,
    user_data: *mut c_void,
    out_request: *mut *mut gantry_request,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    ffi_fn!(out_err, || {
        // SAFETY: per the contract above.
        let (args, options) = unsafe { (object_args(client, bucket, key)?, read_options(options)?) };
        start_stream(args, options, initial_window, chunk, done, user_data, out_request)
    })
}

/// The one path of the worker-run streams: opens `options` of the object as an engine stream
/// and delivers it to `chunk` within the read window.
fn start_stream(
    args: ObjectArgs<'_>,
    options: gantry::GetOptions,
    initial_window: u64,
    chunk: gantry_chunk_fn,
    done: gantry_done_fn,
    user_data: *mut c_void,
    out_request: *mut *mut gantry_request,
) -> Result<(), Failure> {
    let ObjectArgs { client, owned: c, bucket, key } = args;
    let offset = options.range.as_ref().map_or(0, |r| r.start);
    let user = UserData(user_data);
    start(client, Runner::Worker, done, user_data, out_request, initial_window, move |shared| {
        let fut = async move {
            let opened = c.get_stream_with(&bucket, &key, &options).await;
            let stream = opened.map_err(|e| gantry_error::from_engine(&e))?;
            let user = user;
            deliver(stream, offset, &shared, move |data, offset| {
                let Some(f) = chunk else { return 0 };
                let lent = gantry_chunk { data: data.clone() };
                // SAFETY: the caller's callback; data and the lent chunk live through the call.
                in_worker_callback(|| unsafe { f(user.get(), data.as_ptr(), data.len(), offset, &lent) })
            })
            .await
        };
        (fut, std::future::ready(()))
    })
}

/// Hands a stream's chunks in order to `callback` within the request's read window; stops on
/// a cancel (checked before every chunk), a non-zero return, or the end of the stream.
async fn deliver(
    mut stream: gantry::GetStream,
    mut offset: u64,
    shared: &Arc<Shared>,
    mut callback: impl FnMut(&Bytes, u64) -> i32,
) -> Result<(), gantry_error> {
    let mut pending: Option<Bytes> = None;
    loop {
        if shared.is_cancelled() {
            return Err(cancelled());
        }
        let mut data = match pending.take() {
            Some(d) => d,
            None => match stream.next_chunk().await {
                Some(Ok(d)) => d,
                Some(Err(e)) => return Err(gantry_error::from_engine(&e)),
                None => return Ok(()),
            },
        };
        if data.is_empty() {
            continue;
        }
        let open = loop {
            let w = shared.window.load(Ordering::Acquire);
            if w > 0 || shared.is_cancelled() {
                break w;
            }
            shared.window_opened.notified().await;
        };
        if open == 0 {
            return Err(cancelled());
        }
        if open != u64::MAX {
            let n = (data.len() as u64).min(open) as usize;
            if n < data.len() {
                pending = Some(data.split_off(n));
            }
            shared.window.fetch_sub(n as u64, Ordering::AcqRel);
        }
        if callback(&data, offset) != 0 {
            return Err(cancelled());
        }
        offset += data.len() as u64;
        shared.size.store(shared.size.load(Ordering::Relaxed) + data.len() as u64, Ordering::Release);
    }
}
