//! What every export runs inside (through `ffi_fn!`, see `macros.rs`): no panic crosses the
//! boundary, failures become a result code plus an optional error object or a documented
//! fallback value, and calls that can block refuse to in callbacks that must not.

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

/// Drops a caught panic's payload without letting a panic in its destructor escape.
fn discard(payload: Box<dyn std::any::Any + Send>) {
    if let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        std::mem::forget(again);
    }
}

/// The body of every export that returns a `gantry_result` (through `ffi_fn!`): runs `f`
/// inside `catch_unwind`, after the may-block check when `blocking`, and maps its failure or
/// panic to a result code and, when `out_err` is not NULL, an error object written there.
/// Nothing that can panic runs outside the catch.
pub(crate) fn run(
    out_err: *mut *mut gantry_error,
    blocking: bool,
    f: impl FnOnce() -> Result<(), Failure>,
) -> gantry_result {
    let caught = catch_unwind(AssertUnwindSafe(move || {
        test_hook::enter();
        let result = if blocking { may_block().and_then(|()| f()) } else { f() };
        result.err().map(Failure::into_error)
    }));
    let err = match caught {
        Ok(None) => return gantry_result::GANTRY_RESULT_OK,
        Ok(Some(err)) => err,
        Err(payload) => {
            discard(payload);
            test_hook::caught();
            panic_error()
        }
    };
    let code = err.result();
    if !out_err.is_null() {
        // SAFETY: the caller passes NULL or a writable pointer; it owns the new error.
        unsafe { *out_err = Box::into_raw(Box::new(err)) };
    }
    code
}

/// The body of every export that returns something other than a `gantry_result` (through
/// `ffi_fn!`): `f`'s value, or `fallback` when `f` fails (a NULL argument) or panics.
pub(crate) fn value<T>(fallback: T, f: impl FnOnce() -> Result<T, Failure>) -> T {
    let caught = catch_unwind(AssertUnwindSafe(move || {
        test_hook::enter();
        f().ok()
    }));
    match caught {
        Ok(Some(v)) => v,
        Ok(None) => fallback,
        Err(payload) => {
            discard(payload);
            test_hook::caught();
            fallback
        }
    }
}

/// A test-only way to make the next export on this thread panic inside its boundary, and to
/// count the panics the boundary caught: proves every export goes through `ffi_fn!`.
#[cfg(test)]
pub(crate) mod test_hook {
    use std::cell::Cell;

    thread_local! {
        static ARMED: Cell<bool> = const { Cell::new(false) };
        static CAUGHT: Cell<u32> = const { Cell::new(0) };
    }

    /// Makes the next export called on this thread panic as its body starts.
    pub(crate) fn panic_in_next_export() {
        ARMED.with(|a| a.set(true));
    }

    /// Whether the armed panic is still waiting (no export consumed it).
    pub(crate) fn armed() -> bool {
        ARMED.with(|a| a.get())
    }

    /// Panics caught by the boundary on this thread so far.
    pub(crate) fn caught_panics() -> u32 {
        CAUGHT.with(|c| c.get())
    }

    pub(super) fn enter() {
        if ARMED.with(|a| a.replace(false)) {
            panic!("panic injected by a test");
        }
    }

    pub(super) fn caught() {
        CAUGHT.with(|c| c.set(c.get() + 1));
    }
}

#[cfg(not(test))]
mod test_hook {
    #[inline(always)]
    pub(super) fn enter() {}
    #[inline(always)]
    pub(super) fn caught() {}
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

/// Checks an out-parameter: `Failure::Null(what)` when NULL.
pub(crate) fn out_arg<T>(p: *mut T, what: &'static str) -> Result<*mut T, Failure> {
    if p.is_null() {
        return Err(Failure::Null(what));
    }
    Ok(p)
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
