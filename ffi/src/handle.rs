//! Ownership of the opaque handles, stated once.
//!
//! Every handle the caller owns is **Box-owned**: the library makes it with `Box::into_raw`
//! and gives the caller the only pointer; the caller frees it exactly once with its `_free`
//! (or `_release`) function, which turns it back with `Box::from_raw`. No handle is
//! reference-counted across the boundary; what several parties share (a client's runtime, a
//! request's outcome, a chunk's bytes) is an `Arc` (or `Bytes`) *inside* the box, so freeing
//! the handle only drops the caller's reference. Lent objects are never owned by the caller.
//!
//! Per handle: made by; owned how; freed with; whether it may be freed from a callback or
//! another thread.
//!
//! - `gantry_config`: `gantry_config_new`; Box; `gantry_config_free`; from any thread with no
//!   other call on it running, not from its own credentials callback.
//! - `gantry_client`: `gantry_client_new`; Box around `gantry::Client` (an `Arc`: running
//!   requests hold clones of it); `gantry_client_free`, which never blocks; from any thread
//!   once no other thread uses the handle, not from a callback of its own requests.
//! - `gantry_error`: every call with `out_err`, and `gantry_request_wait`; Box;
//!   `gantry_error_free`; any thread. The error lent to a done callback is not the caller's:
//!   never free it.
//! - `gantry_request`: the `*_start` calls and `gantry_get_async`; Box around an `Arc` of the
//!   state the running task shares; `gantry_request_free`, which cancels and waits for the end;
//!   any thread. From a callback where blocking is refused, or from the request's own
//!   callback, it cancels and lets go without waiting (the request ends on its own).
//! - `gantry_upload`: `gantry_upload_new`; Box (its cancel signal is an `Arc` shared with
//!   `gantry_upload_cancel` only); `gantry_upload_free`, which never blocks (an unfinished
//!   upload is aborted in the background); any thread with no other call on it running.
//! - `gantry_list_page`: `gantry_list_objects`; Box; `gantry_list_page_free`; any thread.
//! - `gantry_chunk`: lent to a chunk callback for the call; owned when made by
//!   `gantry_chunk_retain`: Box around `Bytes` (a reference to the engine's network buffer);
//!   `gantry_chunk_release` (never on a lent chunk); any thread, callbacks included.
//! - `gantry_credentials_out`: lent to a credentials callback for the call; never owned or
//!   freed by the caller.
//!
//! Strings returned by accessors are owned by the handle they come from and valid until it is
//! freed; strings passed in are borrowed for the call.

use crate::guard::Failure;

/// A handle the caller owns through a `Box` (see the module documentation).
pub(crate) trait Boxed: Sized {
    /// Hands a new handle to the caller.
    fn into_raw(self) -> *mut Self {
        Box::into_raw(Box::new(self))
    }

    /// Takes back a handle the caller frees; `None` for NULL.
    ///
    /// # Safety
    /// `p` is NULL or came from [`Boxed::into_raw`] and was not taken back yet.
    unsafe fn from_raw(p: *mut Self) -> Option<Box<Self>> {
        // SAFETY: per the contract above, a non-NULL p is a live box given up once.
        (!p.is_null()).then(|| unsafe { Box::from_raw(p) })
    }
}

/// Borrows a handle argument: `Failure::Null(what)` when NULL.
///
/// # Safety
/// `p` is NULL or points to a live `T` that outlives `'a`.
pub(crate) unsafe fn borrow<'a, T>(p: *const T, what: &'static str) -> Result<&'a T, Failure> {
    // SAFETY: forwarded contract.
    unsafe { p.as_ref() }.ok_or(Failure::Null(what))
}

/// Borrows a handle argument mutably: `Failure::Null(what)` when NULL.
///
/// # Safety
/// `p` is NULL or points to a live `T` nobody else uses during `'a`.
pub(crate) unsafe fn borrow_mut<'a, T>(p: *mut T, what: &'static str) -> Result<&'a mut T, Failure> {
    // SAFETY: forwarded contract.
    unsafe { p.as_mut() }.ok_or(Failure::Null(what))
}
