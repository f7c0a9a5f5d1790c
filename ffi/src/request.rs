//! Asynchronous GET with callbacks: `gantry_get_async`, `gantry_request_wait`,
//! `gantry_request_cancel`, `gantry_request_free`.
//!
//! Each request runs on a thread of its own ("gantry-request"), which drives the in-order
//! download stream and calls the callbacks: so the callbacks of one request run on one thread,
//! in order, never concurrently, and a slow body callback slows the download (the stream's
//! read window fills and no further parts are fetched: backpressure).

use std::ffi::{c_char, c_void};
use std::sync::{Arc, Condvar, Mutex};

use futures::channel::oneshot;
use futures::future::{select, Either};

use crate::client::{client_arg, gantry_client};
use crate::error::{gantry_error, gantry_result};
use crate::guard::{run, str_arg, Failure};

/// Receives the object's bytes in order. `data` is lent for the duration of the call only
/// (it points into the engine's network buffer: copy what you keep). `offset` is the position
/// of `data[0]` in the object. Return 0 to continue, non-zero to cancel the request.
pub type gantry_body_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, data: *const u8, len: usize, offset: u64) -> i32>;

/// Called exactly once when the request ends, with its result and, on failure, the error
/// (lent for the call; do not free it). Called before `gantry_request_wait` returns.
pub type gantry_done_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, result: gantry_result, err: *const gantry_error)>;

/// An asynchronous request. Create with `gantry_get_async`; free with `gantry_request_free`.
/// `gantry_request_wait` and `gantry_request_cancel` may be called from any thread, several
/// times, also after the request ended.
#[derive(Debug)]
pub struct gantry_request {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

#[derive(Debug, Default)]
struct Shared {
    outcome: Mutex<Option<(gantry_result, Option<Box<gantry_error>>)>>,
    ended: Condvar,
    cancel: Mutex<Option<oneshot::Sender<()>>>,
}

struct Callbacks {
    body: gantry_body_fn,
    done: gantry_done_fn,
    user_data: *mut c_void,
}

// SAFETY: the caller promises (header docs) that user_data may be used from the request's
// thread; the pointer itself is only passed back to the caller's callbacks.
unsafe impl Send for Callbacks {}

/// Starts downloading bucket/key in order, calling `body` for each chunk and `done` at the
/// end, on the request's own thread. Both callbacks may be NULL. Do not call blocking gantry
/// functions on the same client from the callbacks, and never free the request from them.
///
/// # Safety
/// `client` is live and outlives the request; strings are NUL-terminated; `user_data` stays
/// valid until `done` was called (or `gantry_request_free` returned).
#[no_mangle]
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
    run(out_err, || {
        // SAFETY: per the contract above.
        let (client, bucket, key) = unsafe { (client_arg(client)?, str_arg(bucket, "bucket")?, str_arg(key, "key")?) };
        if out_request.is_null() {
            return Err(Failure::Null("out_request"));
        }
        let (client, bucket, key) = (client.clone(), bucket.to_string(), key.to_string());
        let (cancel_tx, cancel_rx) = oneshot::channel();
        let shared = Arc::new(Shared { cancel: Mutex::new(Some(cancel_tx)), ..Default::default() });
        let callbacks = Callbacks { body, done, user_data };
        let state = shared.clone();
        let thread = std::thread::Builder::new()
            .name("gantry-request".into())
            .spawn(move || {
                let callbacks = callbacks;
                let result = client.block_on(drive(&client, &bucket, &key, &callbacks, cancel_rx));
                let (code, err) = match result {
                    Ok(()) => (gantry_result::GANTRY_RESULT_OK, None),
                    Err(e) => {
                        let e = Box::new(e);
                        (e.result(), Some(e))
                    }
                };
                if let Some(done) = callbacks.done {
                    let p = err.as_deref().map_or(std::ptr::null(), |e| e as *const gantry_error);
                    // SAFETY: the caller's callback with its own user_data; err lives until after the call.
                    unsafe { done(callbacks.user_data, code, p) };
                }
                *state.outcome.lock().expect("outcome lock") = Some((code, err));
                state.ended.notify_all();
            })
            .map_err(|e| Failure::Invalid(format!("cannot start the request thread: {e}")))?;
        let request = Box::new(gantry_request { shared, thread: Some(thread) });
        // SAFETY: checked non-NULL; the caller owns the request.
        unsafe { *out_request = Box::into_raw(request) };
        Ok(())
    })
}

async fn drive(
    client: &gantry::Client,
    bucket: &str,
    key: &str,
    callbacks: &Callbacks,
    mut cancel: oneshot::Receiver<()>,
) -> Result<(), gantry_error> {
    let cancelled = || gantry_error::simple(gantry_result::GANTRY_RESULT_CANCELLED, "the request was cancelled");
    let open = std::pin::pin!(client.get_stream(bucket, key));
    let mut stream = match select(open, &mut cancel).await {
        Either::Left((Ok(s), _)) => s,
        Either::Left((Err(e), _)) => return Err(gantry_error::from_engine(&e)),
        Either::Right(_) => return Err(cancelled()),
    };
    let mut offset = 0u64;
    loop {
        // Checked before every chunk: when chunks are already buffered, `select` below would
        // always find the chunk ready first and a cancel would never win.
        if matches!(cancel.try_recv(), Ok(Some(())) | Err(_)) {
            return Err(cancelled());
        }
        let next = std::pin::pin!(stream.next_chunk());
        let chunk = match select(next, &mut cancel).await {
            Either::Left((Some(Ok(chunk)), _)) => chunk,
            Either::Left((Some(Err(e)), _)) => return Err(gantry_error::from_engine(&e)),
            Either::Left((None, _)) => return Ok(()),
            Either::Right(_) => return Err(cancelled()),
        };
        if let Some(body) = callbacks.body {
            // SAFETY: the caller's callback; data is valid for the call (chunk outlives it).
            let stop = unsafe { body(callbacks.user_data, chunk.as_ptr(), chunk.len(), offset) };
            if stop != 0 {
                return Err(cancelled());
            }
        }
        offset += chunk.len() as u64;
    }
}

/// Blocks until the request ends; returns its result (and error, if `out_err` is not NULL).
/// The done callback has returned by then. Not allowed from the request's own callbacks.
///
/// # Safety
/// `request` is live.
#[no_mangle]
pub unsafe extern "C" fn gantry_request_wait(
    request: *const gantry_request,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    // SAFETY: the caller passes NULL or a live request.
    let Some(req) = (unsafe { request.as_ref() }) else {
        return run(out_err, || Err(Failure::Null("request")));
    };
    let mut outcome = req.shared.outcome.lock().expect("outcome lock");
    while outcome.is_none() {
        outcome = req.shared.ended.wait(outcome).expect("outcome lock");
    }
    let (code, err) = outcome.as_ref().expect("set");
    if let (Some(e), false) = (err, out_err.is_null()) {
        // SAFETY: writable per contract; the caller owns the copy.
        unsafe { *out_err = Box::into_raw(Box::new(e.duplicate())) };
    }
    *code
}

/// Asks the request to stop: in-flight parts are dropped and the request ends with
/// GANTRY_RESULT_CANCELLED (unless it already ended). Returns at once; safe from any thread,
/// including the request's callbacks, and harmless after the request ended.
///
/// # Safety
/// `request` is live.
#[no_mangle]
pub unsafe extern "C" fn gantry_request_cancel(request: *const gantry_request) -> gantry_result {
    // SAFETY: the caller passes NULL or a live request.
    let Some(req) = (unsafe { request.as_ref() }) else {
        return gantry_result::GANTRY_RESULT_NULL_PARAMETER;
    };
    if let Some(tx) = req.shared.cancel.lock().expect("cancel lock").take() {
        let _ = tx.send(());
    }
    gantry_result::GANTRY_RESULT_OK
}

/// Cancels the request if it is still running, waits for it to end (its done callback has
/// returned), and frees it. NULL is allowed. Never call it from the request's callbacks.
///
/// # Safety
/// `request` is NULL or a request not yet freed.
#[no_mangle]
pub unsafe extern "C" fn gantry_request_free(request: *mut gantry_request) {
    if request.is_null() {
        return;
    }
    // SAFETY: came from Box::into_raw in gantry_get_async; freed once.
    let mut req = unsafe { Box::from_raw(request) };
    if let Some(tx) = req.shared.cancel.lock().expect("cancel lock").take() {
        let _ = tx.send(());
    }
    if let Some(t) = req.thread.take() {
        let _ = t.join();
    }
}
