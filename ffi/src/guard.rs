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
}

impl From<gantry::Error> for Failure {
    fn from(e: gantry::Error) -> Self {
        Failure::Engine(e)
    }
}

/// Runs `f`, mapping its failure or panic to a result code and, when `out_err` is not NULL,
/// an error object written there.
pub(crate) fn run(out_err: *mut *mut gantry_error, f: impl FnOnce() -> Result<(), Failure>) -> gantry_result {
    let err = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => return gantry_result::GANTRY_RESULT_OK,
        Ok(Err(Failure::Null(what))) => {
            gantry_error::simple(gantry_result::GANTRY_RESULT_NULL_PARAMETER, &format!("{what} must not be NULL"))
        }
        Ok(Err(Failure::Invalid(msg))) => gantry_error::simple(gantry_result::GANTRY_RESULT_INVALID_ARGUMENT, &msg),
        Ok(Err(Failure::State(msg))) => gantry_error::simple(gantry_result::GANTRY_RESULT_INVALID_STATE, msg),
        Ok(Err(Failure::Forked)) => gantry_error::simple(
            gantry_result::GANTRY_RESULT_FORKED,
            "this client was created in another process (before fork()); create a new client in this process",
        ),
        Ok(Err(Failure::Engine(e))) => gantry_error::from_engine(&e),
        Err(_) => gantry_error::simple(gantry_result::GANTRY_RESULT_PANIC, "gantry panicked (a bug; please report it)"),
    };
    let code = err.result();
    if !out_err.is_null() {
        // SAFETY: the caller passes NULL or a writable pointer; it owns the new error.
        unsafe { *out_err = Box::into_raw(Box::new(err)) };
    }
    code
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
