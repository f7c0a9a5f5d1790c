//! The C ABI of gantry: opaque handles, `gantry_result` codes, an error object with the S3
//! metadata, blocking transfers and a streaming upload. `include/gantry.h` is generated from
//! this crate by cbindgen; its banner states the threading, ownership and fork rules.
//!
//! Every export goes through `ffi_fn!` (`macros.rs`): panics never cross the boundary (they
//! become `GANTRY_RESULT_PANIC` or the export's documented fallback value), NULL arguments
//! become `GANTRY_RESULT_NULL_PARAMETER` or the fallback, and calls that can block check that
//! blocking is allowed first. Who owns each handle, and how it is freed: `handle.rs`.

#![allow(non_camel_case_types)]
#![deny(clippy::undocumented_unsafe_blocks)]

#[macro_use]
mod macros;

mod blocking;
mod client;
mod config;
mod credentials;
mod error;
mod get;
mod guard;
mod handle;
mod listing;
mod metrics;
mod request;
mod server_side;
mod start;
mod stream;
mod upload;

pub use blocking::*;
pub use client::*;
pub use config::*;
pub use credentials::*;
pub use error::*;
pub use get::*;
pub use listing::*;
pub use metrics::*;
pub use request::*;
pub use server_side::*;
pub use start::*;
pub use stream::*;
pub use upload::*;

/// Major version: changes when the ABI breaks.
pub const GANTRY_VERSION_MAJOR: u32 = 0;
/// Minor version: grows when functions or result codes are added (compatible).
pub const GANTRY_VERSION_MINOR: u32 = 4;
/// Patch version: fixes only.
pub const GANTRY_VERSION_PATCH: u32 = 0;

/// The library version as "MAJOR.MINOR.PATCH" (static storage, never free it; "" on a
/// panic). Compare it with the GANTRY_VERSION_* macros to detect a header/library mismatch.
#[no_mangle]
pub extern "C" fn gantry_version() -> *const std::ffi::c_char {
    ffi_fn!(fallback(c"".as_ptr()), || {
        static VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
        Ok(VERSION.as_ptr().cast())
    })
}

#[cfg(test)]
mod append_tests;
#[cfg(test)]
mod boundary_tests;

#[cfg(test)]
mod tests {
    #[test]
    fn version_matches_the_macros() {
        // SAFETY: gantry_version returns a static NUL-terminated string.
        let v = unsafe { std::ffi::CStr::from_ptr(super::gantry_version()) }.to_str().unwrap();
        assert_eq!(
            v,
            format!("{}.{}.{}", super::GANTRY_VERSION_MAJOR, super::GANTRY_VERSION_MINOR, super::GANTRY_VERSION_PATCH)
        );
    }
}
