//! `ffi_fn!`: the panic boundary every export goes through.
//!
//! Each `#[no_mangle] extern "C" fn` has exactly one statement, an `ffi_fn!`. The macro runs
//! its body inside `catch_unwind` (a panic never unwinds into C, which would abort the host
//! process) and turns what the body returns into what C sees:
//!
//! - `ffi_fn!(out_err, || { ... })`: the export returns `gantry_result`. A `Failure` (a NULL
//!   argument is `Failure::Null`) becomes its code and, when `out_err` is not NULL, an owned
//!   `gantry_error`; a panic becomes `GANTRY_RESULT_PANIC` (and its error). Exports without an
//!   `out_err` parameter pass `std::ptr::null_mut()`.
//! - `ffi_fn!(blocking(out_err), || { ... })`: the same, for a call that can block: it first
//!   makes the may-block check ([`crate::guard::may_block`]), so in a callback that must not
//!   block it fails with `GANTRY_RESULT_INVALID_STATE` before doing anything.
//! - `ffi_fn!(fallback(VALUE), || { ... })`: the export returns something else (an accessor's
//!   value, `()` for a free function). Any `Failure` (a NULL argument) or panic returns
//!   `VALUE`, the fallback its header documentation states.
//!
//! NULL checks happen through the borrowing helpers of `handle.rs` and `guard.rs`, which
//! return `Failure::Null` with the argument's name; the macro is what maps that to
//! `GANTRY_RESULT_NULL_PARAMETER` or the fallback.
//!
//! Why a macro inside the body plus two generic functions ([`crate::guard::run`] and
//! [`crate::guard::value`]), rather than one macro around the whole `fn` as in hyper's
//! `ffi_fn!`: cbindgen reads this crate's source without expanding macros, so an export
//! defined by a macro would vanish from `include/gantry.h` (hyper expands with a nightly
//! compiler to generate its header; we pin a stable cbindgen). Inside the body the signature
//! and its documentation stay plain Rust. The generic functions hold the logic and give the
//! closure its `Result` type (so `?` works in every body); the type system checks the choice
//! (the `out_err` forms only fit a `gantry_result` export). The macro is the one spelling of
//! the boundary, with its `blocking` and `fallback` words visible at each export, and its
//! arguments are plain expressions, so rustfmt formats the bodies.

/// See the module documentation.
macro_rules! ffi_fn {
    (blocking($out_err:expr), $body:expr $(,)?) => {
        $crate::guard::run($out_err, true, $body)
    };
    (fallback($fallback:expr), $body:expr $(,)?) => {
        $crate::guard::value($fallback, $body)
    };
    ($out_err:expr, $body:expr $(,)?) => {
        $crate::guard::run($out_err, false, $body)
    };
}
