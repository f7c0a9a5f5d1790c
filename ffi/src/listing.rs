//! ListObjectsV2 pages and the metrics snapshot.

use std::ffi::{c_char, CString};

use crate::client::{client_arg, gantry_client};
use crate::error::{gantry_error, gantry_result};
use crate::guard::{run, str_arg, Failure};

/// One page of ListObjectsV2. Owned by the caller; free with `gantry_list_page_free`. Strings
/// returned by its accessors live as long as the page.
#[derive(Debug)]
pub struct gantry_list_page {
    keys: Vec<CString>,
    sizes: Vec<u64>,
    next: Option<CString>,
}

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
    run(out_err, || {
        // SAFETY: per the contract above.
        let (client, bucket) = unsafe { (client_arg(client)?, str_arg(bucket, "bucket")?) };
        let optional = |p: *const c_char, what| -> Result<Option<String>, Failure> {
            // SAFETY: NULL or NUL-terminated per the contract.
            Ok(if p.is_null() { None } else { Some(unsafe { str_arg(p, what) }?.to_string()) })
        };
        if out_page.is_null() {
            return Err(Failure::Null("out_page"));
        }
        let options = gantry::ListOptions {
            prefix: optional(prefix, "prefix")?,
            continuation_token: optional(continuation_token, "continuation_token")?,
            max_keys: (max_keys > 0).then_some(max_keys),
            ..Default::default()
        };
        let page = client.block_on(client.list_objects(bucket, &options))?;
        let cstr = |s: &str| CString::new(s).map_err(|_| Failure::Invalid("a key contains NUL".into()));
        let out = gantry_list_page {
            keys: page.objects.iter().map(|o| cstr(&o.key)).collect::<Result<_, _>>()?,
            sizes: page.objects.iter().map(|o| o.size).collect(),
            next: page.next_continuation_token.as_deref().map(cstr).transpose()?,
        };
        // SAFETY: checked non-NULL; the caller owns the page.
        unsafe { *out_page = Box::into_raw(Box::new(out)) };
        Ok(())
    })
}

/// Number of objects in the page (0 for NULL).
///
/// # Safety
/// `page` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn gantry_list_page_count(page: *const gantry_list_page) -> usize {
    // SAFETY: NULL or live per the contract.
    unsafe { page.as_ref() }.map_or(0, |p| p.keys.len())
}

/// Key of object `i`, or NULL when `i` is out of range.
///
/// # Safety
/// `page` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn gantry_list_page_key(page: *const gantry_list_page, i: usize) -> *const c_char {
    // SAFETY: NULL or live per the contract.
    unsafe { page.as_ref() }.and_then(|p| p.keys.get(i)).map_or(std::ptr::null(), |k| k.as_ptr())
}

/// Size of object `i` in bytes (0 when `i` is out of range).
///
/// # Safety
/// `page` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn gantry_list_page_size(page: *const gantry_list_page, i: usize) -> u64 {
    // SAFETY: NULL or live per the contract.
    unsafe { page.as_ref() }.and_then(|p| p.sizes.get(i).copied()).unwrap_or(0)
}

/// The token for the next page, or NULL when this is the last page.
///
/// # Safety
/// `page` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn gantry_list_page_next_token(page: *const gantry_list_page) -> *const c_char {
    // SAFETY: NULL or live per the contract.
    unsafe { page.as_ref() }.and_then(|p| p.next.as_ref()).map_or(std::ptr::null(), |t| t.as_ptr())
}

/// Frees a page. NULL is allowed.
///
/// # Safety
/// `page` is NULL or a page not yet freed.
#[no_mangle]
pub unsafe extern "C" fn gantry_list_page_free(page: *mut gantry_list_page) {
    if !page.is_null() {
        // SAFETY: came from Box::into_raw in gantry_list_objects; freed once.
        drop(unsafe { Box::from_raw(page) });
    }
}
