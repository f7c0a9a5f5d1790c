//! `gantry_result` codes and the `gantry_error` object.

use std::ffi::{c_char, CString};

use gantry::ErrorKind;

use crate::handle::{borrow, Boxed};

/// Result of every call. Numbers are stable: new codes are only ever appended, and a retired
/// number is never reused.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum gantry_result {
    /// Success.
    GANTRY_RESULT_OK = 0,
    /// A required pointer argument was NULL.
    GANTRY_RESULT_NULL_PARAMETER = 1,
    /// An argument or configuration value is invalid (also: a caller buffer too small).
    GANTRY_RESULT_INVALID_ARGUMENT = 2,
    /// The bucket or key does not exist (HTTP 404).
    GANTRY_RESULT_NOT_FOUND = 3,
    /// Access denied or bad credentials (HTTP 403).
    GANTRY_RESULT_ACCESS_DENIED = 4,
    /// The object changed during the download (ETag mismatch, 412).
    GANTRY_RESULT_OBJECT_CHANGED = 5,
    /// Throttled by the server (503 SlowDown) after all retries.
    GANTRY_RESULT_THROTTLED = 6,
    /// Server error (5xx) after all retries.
    GANTRY_RESULT_SERVER_ERROR = 7,
    /// Other 4xx answer.
    GANTRY_RESULT_CLIENT_ERROR = 8,
    /// Connection could not be made or broke (after all retries).
    GANTRY_RESULT_NETWORK = 9,
    /// A timeout expired (after all retries).
    GANTRY_RESULT_TIMEOUT = 10,
    /// The server broke the protocol (after all retries).
    GANTRY_RESULT_PROTOCOL = 11,
    /// No usable credentials.
    GANTRY_RESULT_CREDENTIALS = 12,
    /// A local file could not be read or written.
    GANTRY_RESULT_LOCAL_IO = 13,
    /// The transfer was cancelled.
    GANTRY_RESULT_CANCELLED = 14,
    /// The client was created in another process (before fork()); make a new one.
    GANTRY_RESULT_FORKED = 15,
    /// A bug: the library panicked. The handle stays valid; please report it.
    GANTRY_RESULT_PANIC = 16,
    /// A bug in the engine other than a panic.
    GANTRY_RESULT_INTERNAL = 17,
    /// The handle is in a state where this call is not allowed (e.g. a finished upload).
    GANTRY_RESULT_INVALID_STATE = 18,
    /// The bytes did not match their checksum after every retry (or the server rejected an
    /// upload's checksum). No corrupted byte was reported as a success.
    GANTRY_RESULT_CHECKSUM_MISMATCH = 19,
    /// The object's ETag is not the one given as `if_match` in `gantry_get_options` (HTTP
    /// 412): not the version the caller expected. Final.
    GANTRY_RESULT_PRECONDITION_FAILED = 20,
    /// The object still has the ETag given as `if_none_match` in `gantry_get_options` (HTTP
    /// 304): the caller's copy is current. Final; nothing was written.
    GANTRY_RESULT_NOT_MODIFIED = 21,
    /// An append's offset is not the object's size (`InvalidWriteOffset`, HTTP 400): another
    /// writer appended meanwhile. Final: read the size again (HEAD) and append there.
    GANTRY_RESULT_WRONG_WRITE_OFFSET = 22,
}

/// Details of a failed call: message, HTTP status, S3 error code and request id.
/// Owned by the caller; free with `gantry_error_free`.
#[derive(Debug)]
pub struct gantry_error {
    result: gantry_result,
    message: CString,
    http_status: u16,
    s3_code: Option<CString>,
    request_id: Option<CString>,
    retryable: bool,
}

/// A C string of `s`, NULs replaced (never fails, never panics).
fn cstring(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).unwrap_or_default()
}

impl gantry_error {
    pub(crate) fn from_engine(e: &gantry::Error) -> gantry_error {
        let result = match e.kind() {
            ErrorKind::NotFound => gantry_result::GANTRY_RESULT_NOT_FOUND,
            ErrorKind::AccessDenied => gantry_result::GANTRY_RESULT_ACCESS_DENIED,
            ErrorKind::ObjectChanged => gantry_result::GANTRY_RESULT_OBJECT_CHANGED,
            ErrorKind::PreconditionFailed => gantry_result::GANTRY_RESULT_PRECONDITION_FAILED,
            ErrorKind::NotModified => gantry_result::GANTRY_RESULT_NOT_MODIFIED,
            ErrorKind::WrongWriteOffset => gantry_result::GANTRY_RESULT_WRONG_WRITE_OFFSET,
            ErrorKind::ChecksumMismatch => gantry_result::GANTRY_RESULT_CHECKSUM_MISMATCH,
            ErrorKind::Throttled => gantry_result::GANTRY_RESULT_THROTTLED,
            ErrorKind::ServerError => gantry_result::GANTRY_RESULT_SERVER_ERROR,
            ErrorKind::ClientError => gantry_result::GANTRY_RESULT_CLIENT_ERROR,
            ErrorKind::Connect | ErrorKind::Transport => gantry_result::GANTRY_RESULT_NETWORK,
            ErrorKind::Timeout => gantry_result::GANTRY_RESULT_TIMEOUT,
            ErrorKind::Protocol => gantry_result::GANTRY_RESULT_PROTOCOL,
            ErrorKind::Credentials => gantry_result::GANTRY_RESULT_CREDENTIALS,
            ErrorKind::InvalidInput => gantry_result::GANTRY_RESULT_INVALID_ARGUMENT,
            ErrorKind::LocalIo => gantry_result::GANTRY_RESULT_LOCAL_IO,
            ErrorKind::Cancelled => gantry_result::GANTRY_RESULT_CANCELLED,
            _ => gantry_result::GANTRY_RESULT_INTERNAL,
        };
        gantry_error {
            result,
            message: cstring(&e.to_string()),
            http_status: e.http_status().unwrap_or(0),
            s3_code: e.s3_code().map(cstring),
            request_id: e.request_id().map(cstring),
            retryable: e.is_retryable(),
        }
    }

    pub(crate) fn simple(result: gantry_result, message: &str) -> gantry_error {
        gantry_error {
            result,
            message: cstring(message),
            http_status: 0,
            s3_code: None,
            request_id: None,
            retryable: false,
        }
    }

    /// A copy for a second reader (errors handed out are owned and freed by the caller).
    pub(crate) fn duplicate(&self) -> gantry_error {
        gantry_error {
            result: self.result,
            message: self.message.clone(),
            http_status: self.http_status,
            s3_code: self.s3_code.clone(),
            request_id: self.request_id.clone(),
            retryable: self.retryable,
        }
    }

    pub(crate) fn result(&self) -> gantry_result {
        self.result
    }

    pub(crate) fn message(&self) -> std::borrow::Cow<'_, str> {
        self.message.to_string_lossy()
    }
}

impl Boxed for gantry_error {}

/// The result code this error was returned with; GANTRY_RESULT_NULL_PARAMETER for NULL,
/// GANTRY_RESULT_PANIC on a panic.
///
/// # Safety
/// `err` is NULL or a live error from this library.
#[no_mangle]
pub unsafe extern "C" fn gantry_error_result(err: *const gantry_error) -> gantry_result {
    ffi_fn!(fallback(gantry_result::GANTRY_RESULT_PANIC), || {
        // SAFETY: the caller passes NULL or a live error.
        Ok(unsafe { err.as_ref() }.map_or(gantry_result::GANTRY_RESULT_NULL_PARAMETER, |e| e.result))
    })
}

/// The message (never NULL for a live error; "" for NULL or on a panic). Valid until the
/// error is freed.
///
/// # Safety
/// `err` is NULL or a live error from this library.
#[no_mangle]
pub unsafe extern "C" fn gantry_error_message(err: *const gantry_error) -> *const c_char {
    ffi_fn!(fallback(c"".as_ptr()), || {
        // SAFETY: the caller passes NULL or a live error.
        Ok(unsafe { borrow(err, "err") }?.message.as_ptr())
    })
}

/// The HTTP status of the server's answer, or 0 when there was none (also for NULL or on a
/// panic).
///
/// # Safety
/// `err` is NULL or a live error from this library.
#[no_mangle]
pub unsafe extern "C" fn gantry_error_http_status(err: *const gantry_error) -> u16 {
    ffi_fn!(fallback(0), || {
        // SAFETY: the caller passes NULL or a live error.
        Ok(unsafe { borrow(err, "err") }?.http_status)
    })
}

/// The S3 error code (e.g. "NoSuchKey", "SlowDown"), or NULL (also for NULL or on a panic).
/// Valid until the error is freed.
///
/// # Safety
/// `err` is NULL or a live error from this library.
#[no_mangle]
pub unsafe extern "C" fn gantry_error_s3_code(err: *const gantry_error) -> *const c_char {
    ffi_fn!(fallback(std::ptr::null()), || {
        // SAFETY: the caller passes NULL or a live error.
        Ok(unsafe { borrow(err, "err") }?.s3_code.as_ref().map_or(std::ptr::null(), |s| s.as_ptr()))
    })
}

/// The server's request id, or NULL (also for NULL or on a panic). Valid until the error is
/// freed.
///
/// # Safety
/// `err` is NULL or a live error from this library.
#[no_mangle]
pub unsafe extern "C" fn gantry_error_request_id(err: *const gantry_error) -> *const c_char {
    ffi_fn!(fallback(std::ptr::null()), || {
        // SAFETY: the caller passes NULL or a live error.
        Ok(unsafe { borrow(err, "err") }?.request_id.as_ref().map_or(std::ptr::null(), |s| s.as_ptr()))
    })
}

/// Whether retrying the same call may succeed (1) or not (0; also for NULL or on a panic).
///
/// # Safety
/// `err` is NULL or a live error from this library.
#[no_mangle]
pub unsafe extern "C" fn gantry_error_retryable(err: *const gantry_error) -> bool {
    ffi_fn!(fallback(false), || {
        // SAFETY: the caller passes NULL or a live error.
        Ok(unsafe { borrow(err, "err") }?.retryable)
    })
}

/// Frees an error. NULL is allowed. Freeing twice is undefined behaviour. Any thread; never
/// the error lent to a done callback. On a panic (a bug) the error is leaked.
///
/// # Safety
/// `err` is NULL or an error from this library not yet freed.
#[no_mangle]
pub unsafe extern "C" fn gantry_error_free(err: *mut gantry_error) {
    ffi_fn!(fallback(()), || {
        // SAFETY: NULL or an error handed out once by this library, freed once.
        drop(unsafe { gantry_error::from_raw(err) });
        Ok(())
    })
}
