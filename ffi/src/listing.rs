//! ListObjectsV2 pages and the metrics snapshot.

use std::ffi::{c_char, CString};

use crate::client::{client_arg, gantry_client};
use crate::error::{gantry_error, gantry_result};
use crate::guard::{out_arg, str_arg, Failure};
use crate::handle::{borrow, Boxed};

/// One page of ListObjectsV2. The caller owns it (Box-owned) and frees it once with
/// `gantry_list_page_free`, from any thread. Strings returned by its accessors live as long as
/// the page. Read-only: safe to read from several threads.
#[derive(Debug)]
pub struct gantry_list_page {
    keys: Vec<CString>,
    sizes: Vec<u64>,
    next: Option<CString>,
}

impl Boxed for gantry_list_page {}

/// Lists one page of keys in `bucket`. `prefix` and `continuation_token` may be NULL;
/// `max_keys` 0 means the server's default (1,000). Pass the previous page's
/// `gantry_list_page_next_token` to continue; it is NULL on the last page.
///
/// # Safety
/// `client` is live; `bucket` is NUL-terminated; `prefix` and `continuation_token` are NULL or
/// NUL-terminated; `out_page` is writable.
#[no_mangle]
pub unsafe extern "C" fn gantry_list_objects(
    client: *const gantry_client,
    bucket: *const c_char,
    prefix: *const c_char,
    continuation_token: *const c_char,
    max_keys: u32,
    out_page: *mut *mut gantry_list_page,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    ffi_fn!(blocking(out_err), || {
        // SAFETY: per the contract above.
        let (client, bucket) = unsafe { (client_arg(client)?, str_arg(bucket, "bucket")?) };
        let optional = |p: *const c_char, what| -> Result<Option<String>, Failure> {
            // SAFETY: NULL or NUL-terminated per the contract.
            Ok(if p.is_null() { None } else { Some(unsafe { str_arg(p, what) }?.to_string()) })
        };
        let out_page = out_arg(out_page, "out_page")?;
        let mut options = gantry::ListOptions::new();
        options.prefix = optional(prefix, "prefix")?;
        options.continuation_token = optional(continuation_token, "continuation_token")?;
        options.max_keys = (max_keys > 0).then_some(max_keys);
        let page = client.block_on(client.list_objects(bucket, &options))?;
        let cstr = |s: &str| CString::new(s).map_err(|_| Failure::Invalid("a key contains NUL".into()));
        let out = gantry_list_page {
            keys: page.objects.iter().map(|o| cstr(&o.key)).collect::<Result<_, _>>()?,
            sizes: page.objects.iter().map(|o| o.size).collect(),
            next: page.next_continuation_token.as_deref().map(cstr).transpose()?,
        };
        // SAFETY: checked non-NULL, writable per the contract; the caller owns the page.
        unsafe { *out_page = out.into_raw() };
        Ok(())
    })
}

/// Number of objects in the page (0 for NULL or on a panic).
///
/// # Safety
/// `page` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn gantry_list_page_count(page: *const gantry_list_page) -> usize {
    ffi_fn!(fallback(0), || {
        // SAFETY: NULL or live per the contract.
        Ok(unsafe { borrow(page, "page") }?.keys.len())
    })
}

/// Key of object `i`, or NULL when `i` is out of range (also for NULL or on a panic).
///
/// # Safety
/// `page` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn gantry_list_page_key(page: *const gantry_list_page, i: usize) -> *const c_char {
    ffi_fn!(fallback(std::ptr::null()), || {
        // SAFETY: NULL or live per the contract.
        Ok(unsafe { borrow(page, "page") }?.keys.get(i).map_or(std::ptr::null(), |k| k.as_ptr()))
    })
}

/// Size of object `i` in bytes (0 when `i` is out of range; also for NULL or on a panic).
///
/// # Safety
/// `page` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn gantry_list_page_size(page: *const gantry_list_page, i: usize) -> u64 {
    ffi_fn!(fallback(0), || {
        // SAFETY: NULL or live per the contract.
        Ok(unsafe { borrow(page, "page") }?.sizes.get(i).copied().unwrap_or(0))
    })
}

/// The token for the next page, or NULL when this is the last page (also for NULL or on a
/// panic).
///
/// # Safety
/// `page` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn gantry_list_page_next_token(page: *const gantry_list_page) -> *const c_char {
    ffi_fn!(fallback(std::ptr::null()), || {
        // SAFETY: NULL or live per the contract.
        Ok(unsafe { borrow(page, "page") }?.next.as_ref().map_or(std::ptr::null(), |t| t.as_ptr()))
    })
}

/// Frees a page. NULL is allowed. On a panic (a bug) the page is leaked.
///
/// # Safety
/// `page` is NULL or a page not yet freed.
#[no_mangle]
pub unsafe extern "C" fn gantry_list_page_free(page: *mut gantry_list_page) {
    ffi_fn!(fallback(()), || {
        // SAFETY: NULL or a page handed out once by gantry_list_objects, freed once.
        drop(unsafe { gantry_list_page::from_raw(page) });
        Ok(())
    })
}
