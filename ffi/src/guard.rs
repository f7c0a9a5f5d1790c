//! The one wrapper every export goes through: no panic crosses the boundary, failures become
//! a result code plus an optional error object.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::error::{gantry_error, gantry_result};

/// Why a call failed.
pub(crate) enum Failure {
    Null(&'static str),
    Invalid(String),
    State(&'static str),
    Forked,
    Engine(gantry::Error),
    /// An error object made elsewhere (the outcome of a request a blocking call waited for).
    Error(gantry_error),
}

impl From<gantry::Error> for Failure {
    fn from(e: gantry::Error) -> Self {
        Failure::Engine(e)
    }
}

impl Failure {
    /// The error object a failure becomes at the boundary.
    pub(crate) fn into_error(self) -> gantry_error {
        match self {
            Failure::Null(what) => {
                gantry_error::simple(gantry_result::GANTRY_RESULT_NULL_PARAMETER, &format!("{what} must not be NULL"))
            }
            Failure::Invalid(msg) => gantry_error::simple(gantry_result::GANTRY_RESULT_INVALID_ARGUMENT, &msg),
            Failure::State(msg) => gantry_error::simple(gantry_result::GANTRY_RESULT_INVALID_STATE, msg),
            Failure::Forked => gantry_error::simple(
                gantry_result::GANTRY_RESULT_FORKED,
                "this client was created in another process (before fork()); create a new client in this process",
            ),
            Failure::Engine(e) => gantry_error::from_engine(&e),
            Failure::Error(e) => e,
        }
    }
}

/// The error a caught panic becomes.
pub(crate) fn panic_error() -> gantry_error {
    gantry_error::simple(gantry_result::GANTRY_RESULT_PANIC, "gantry panicked (a bug; please report it)")
}

/// Runs `f`, mapping its failure or panic to a result code and, when `out_err` is not NULL,
/// an error object written there.
pub(crate) fn run(out_err: *mut *mut gantry_error, f: impl FnOnce() -> Result<(), Failure>) -> gantry_result {
    let err = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => return gantry_result::GANTRY_RESULT_OK,
        Ok(Err(failure)) => failure.into_error(),
        Err(_) => panic_error(),
    };
    let code = err.result();
    if !out_err.is_null() {
        // SAFETY: the caller passes NULL or a writable pointer; it owns the new error.
        unsafe { *out_err = Box::into_raw(Box::new(err)) };
    }
    code
}

thread_local! {
    /// Set while a caller callback runs that must not make blocking gantry calls: why not.
    static NO_BLOCKING: std::cell::Cell<Option<&'static str>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with blocking gantry calls refused on this thread for the reason `why`.
fn refusing_blocking<T>(why: &'static str, f: impl FnOnce() -> T) -> T {
    struct Reset(Option<&'static str>);
    impl Drop for Reset {
        fn drop(&mut self) {
            NO_BLOCKING.with(|c| c.set(self.0));
        }
    }
    let _reset = Reset(NO_BLOCKING.with(|c| c.replace(Some(why))));
    f()
}

/// Runs a caller callback on a worker thread, marked so that blocking calls made from it fail
/// (a blocked worker could starve the very transfer being waited for).
pub(crate) fn in_worker_callback<T>(f: impl FnOnce() -> T) -> T {
    refusing_blocking(
        "blocking gantry calls are not allowed in callbacks of *_start requests (they run on the \
         client's worker threads); start another request instead",
        f,
    )
}

/// Runs a credentials callback, marked so that blocking calls made from it fail: on the client
/// it serves they would wait for the very credentials the callback is fetching (a deadlock).
pub(crate) fn in_credentials_callback<T>(f: impl FnOnce() -> T) -> T {
    refusing_blocking(
        "blocking gantry calls are not allowed in a credentials callback (a request of the client \
         it serves would wait for the credentials being fetched: a deadlock)",
        f,
    )
}

/// Fails when called from a callback that must not block: the check every blocking call makes.
pub(crate) fn may_block() -> Result<(), Failure> {
    match NO_BLOCKING.with(|c| c.get()) {
        Some(why) => Err(Failure::State(why)),
        None => Ok(()),
    }
}

/// Borrows a NUL-terminated UTF-8 string argument.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string that outlives the call.
pub(crate) unsafe fn str_arg<'a>(p: *const std::ffi::c_char, what: &'static str) -> Result<&'a str, Failure> {
    if p.is_null() {
        return Err(Failure::Null(what));
    }
    // SAFETY: non-NULL and NUL-terminated per the caller's contract.
    unsafe { std::ffi::CStr::from_ptr(p) }.to_str().map_err(|_| Failure::Invalid(format!("{what} is not UTF-8")))
}
