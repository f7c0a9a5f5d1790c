//! `gantry_upload`: a streaming upload of unknown length, written piece by piece (copied or
//! lent without a copy), cancellable from any thread.

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use crate::client::gantry_client;
use crate::error::{gantry_error, gantry_result};
use crate::guard::{out_arg, Failure};
use crate::handle::{borrow, Boxed};
use crate::start::{object_args, ObjectArgs};

/// A streaming upload of unknown length (checkpoints). Not thread-safe: serialize calls,
/// except `gantry_upload_cancel`, which any thread may call at any time.
/// End it with `gantry_upload_complete` or `gantry_upload_abort`. The caller owns it
/// (Box-owned) and frees it once with `gantry_upload_free`, from any thread with no other
/// call on it running (callbacks included: free never blocks); freeing an upload that was
/// neither completed nor aborted aborts it (no multipart parts are left on the server).
#[derive(Debug)]
pub struct gantry_upload {
    upload: std::sync::Mutex<Option<gantry::Upload>>,
    client: gantry::Client,
    cancel: Arc<UploadCancel>,
}

impl Boxed for gantry_upload {}

/// The cancel signal of a streaming upload, shared with `gantry_upload_cancel`.
#[derive(Debug, Default)]
struct UploadCancel {
    asked: std::sync::atomic::AtomicBool,
    wake: tokio::sync::Notify,
}

impl UploadCancel {
    fn is_set(&self) -> bool {
        self.asked.load(std::sync::atomic::Ordering::Acquire)
    }

    async fn wait(&self) {
        while !self.is_set() {
            self.wake.notified().await;
        }
    }
}

fn upload_cancelled() -> Failure {
    Failure::Error(gantry_error::simple(
        gantry_result::GANTRY_RESULT_CANCELLED,
        "the upload was cancelled (and aborted)",
    ))
}

impl gantry_upload {
    /// Runs `op` on the unfinished upload; a cancel (before or during `op`) drops `op`, aborts
    /// the upload, and fails the call with GANTRY_RESULT_CANCELLED. `finish` takes the upload
    /// out (complete and abort), after which every call but free fails. Blocks: its callers
    /// are `blocking` exports, whose `ffi_fn!` made the may-block check.
    fn drive<T>(
        &self,
        finish: bool,
        op: impl for<'a> FnOnce(&'a mut Option<gantry::Upload>) -> futures::future::BoxFuture<'a, gantry::Result<T>>,
    ) -> Result<T, Failure> {
        let mut slot = self.upload.lock().map_err(|_| Failure::State("the upload is poisoned by an earlier panic"))?;
        if slot.is_none() {
            return Err(if self.cancel.is_set() {
                upload_cancelled()
            } else {
                Failure::State("the upload was already completed or aborted")
            });
        }
        if !self.cancel.is_set() {
            let outcome = self.client.block_on(async {
                let work = std::pin::pin!(op(&mut slot));
                match futures::future::select(work, std::pin::pin!(self.cancel.wait())).await {
                    futures::future::Either::Left((r, _)) => Some(r),
                    futures::future::Either::Right(_) => None,
                }
            });
            if let Some(result) = outcome {
                if finish {
                    *slot = None;
                }
                return Ok(result?);
            }
        }
        if let Some(upload) = slot.take() {
            // The cancel's own abort: its failure is not the caller's news, the cancel is.
            let _ = self.client.block_on(upload.abort());
        }
        Err(upload_cancelled())
    }
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
    ffi_fn!(out_err, || {
        // SAFETY: per the contract above.
        let ObjectArgs { client, owned, bucket, key } = unsafe { object_args(client, bucket, key)? };
        let out_upload = out_arg(out_upload, "out_upload")?;
        let upload = gantry_upload {
            upload: std::sync::Mutex::new(Some(client.upload(&bucket, &key))),
            client: owned,
            cancel: Arc::default(),
        };
        // SAFETY: checked non-NULL, writable per the contract; the caller owns the upload.
        unsafe { *out_upload = upload.into_raw() };
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
    ffi_fn!(blocking(out_err), || {
        // SAFETY: the caller passes NULL or a live upload.
        let up = unsafe { borrow(upload, "upload")? };
        let data: &[u8] = match (data.is_null(), len) {
            (_, 0) => &[],
            (true, _) => return Err(Failure::Null("data")),
            // SAFETY: non-NULL and len readable bytes per the contract.
            (false, n) => unsafe { std::slice::from_raw_parts(data, n) },
        };
        up.drive(false, |slot| Box::pin(slot.as_mut().expect("checked unfinished").write(data)))
    })
}

/// Gives back memory lent to `gantry_upload_write_owned`: `data` is the pointer that was
/// passed in. Called exactly once per call, on any thread (often a worker, possibly before
/// the write call returned); it must not block.
pub type gantry_release_fn = Option<unsafe extern "C" fn(user_data: *mut c_void, data: *const u8)>;

/// Caller memory handed to the upload until `release` says it is free again.
struct Lent {
    data: *const u8,
    len: usize,
    release: gantry_release_fn,
    user_data: *mut c_void,
}

// SAFETY: the caller keeps `data` valid and unchanged until `release` is called, from any
// thread (header contract); user_data is only handed back to `release`.
unsafe impl Send for Lent {}
// SAFETY: as above; the memory is only read.
unsafe impl Sync for Lent {}

impl AsRef<[u8]> for Lent {
    fn as_ref(&self) -> &[u8] {
        match self.len {
            0 => &[],
            // SAFETY: valid until release (see Send above); non-NULL checked before use.
            n => unsafe { std::slice::from_raw_parts(self.data, n) },
        }
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        if let Some(release) = self.release {
            // SAFETY: the caller's callback with its own user_data and pointer.
            unsafe { release(self.user_data, self.data) };
        }
    }
}

/// Appends `len` bytes at `data` without copying them (zero-copy checkpoints): whole parts are
/// sent straight from `data`, odd ends are copied into the part buffer. The memory must stay
/// valid and unchanged until `release(release_user_data, data)` is called, which happens
/// exactly once whatever the outcome, including on failure and when this call rejects its
/// arguments, refuses to block (in a callback) or panics (release may be NULL when the
/// caller needs no signal). Blocks like `gantry_upload_write`.
///
/// # Safety
/// `upload` is live; `data` points to `len` readable bytes (may be NULL when `len` is 0).
#[no_mangle]
pub unsafe extern "C" fn gantry_upload_write_owned(
    upload: *mut gantry_upload,
    data: *const u8,
    len: usize,
    release: gantry_release_fn,
    release_user_data: *mut c_void,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    // Built before the boundary (a struct literal cannot panic) and moved into it, so that
    // `release` runs whichever way the call ends, a refusal or a panic included.
    let lent = Lent { data, len, release, user_data: release_user_data };
    ffi_fn!(blocking(out_err), move || {
        // SAFETY: the caller passes NULL or a live upload.
        let up = unsafe { borrow(upload, "upload")? };
        if data.is_null() && len > 0 {
            return Err(Failure::Null("data"));
        }
        let bytes = bytes::Bytes::from_owner(lent);
        up.drive(false, move |slot| Box::pin(slot.as_mut().expect("checked unfinished").write_bytes(bytes)))
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
    ffi_fn!(blocking(out_err), || {
        // SAFETY: the caller passes NULL or a live upload.
        let up = unsafe { borrow(upload, "upload")? };
        up.drive(true, |slot| {
            let inner = slot.take().expect("checked unfinished");
            Box::pin(async move { inner.complete().await.map(|_| ()) })
        })
    })
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
    ffi_fn!(blocking(out_err), || {
        // SAFETY: the caller passes NULL or a live upload.
        let up = unsafe { borrow(upload, "upload")? };
        up.drive(true, |slot| Box::pin(slot.take().expect("checked unfinished").abort()))
    })
}

/// Cancels the upload from any thread, also while another thread is inside a write or
/// complete: that call (or the next) drops its work, aborts the multipart upload, and fails
/// with GANTRY_RESULT_CANCELLED; every later call but free fails the same way. Returns at
/// once; harmless after the upload ended. (The way to tie an upload to a Go context or a
/// C++ stop token.) GANTRY_RESULT_NULL_PARAMETER for NULL, GANTRY_RESULT_PANIC on a panic.
///
/// # Safety
/// `upload` is live (not yet freed).
#[no_mangle]
pub unsafe extern "C" fn gantry_upload_cancel(upload: *const gantry_upload) -> gantry_result {
    ffi_fn!(std::ptr::null_mut(), || {
        // SAFETY: the caller passes NULL or a live upload.
        let up = unsafe { borrow(upload, "upload")? };
        up.cancel.asked.store(true, std::sync::atomic::Ordering::Release);
        up.cancel.wake.notify_one();
        Ok(())
    })
}

/// Frees an upload; an unfinished one is aborted in the background (it never blocks). NULL
/// is allowed. On a panic (a bug) the upload is leaked.
///
/// # Safety
/// `upload` is NULL or an upload not yet freed, with no call on it running.
#[no_mangle]
pub unsafe extern "C" fn gantry_upload_free(upload: *mut gantry_upload) {
    ffi_fn!(fallback(()), || {
        // SAFETY: NULL or an upload handed out once by gantry_upload_new, freed once.
        drop(unsafe { gantry_upload::from_raw(upload) });
        Ok(())
    })
}
